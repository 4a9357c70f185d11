"""The Arm: one robot model, one hardware backend, a trajectory and plugins, stepped by update/send.

API mirrors ``hebi.arm.Arm`` (``update``, ``send``, ``set_goal``, ``cancel_goal``, ``at_goal``,
``goal_progress``, ``pending_command``, ``last_feedback``) so HEBI users feel at home; on top of
it the arm owns its safety state (:mod:`hebictl.control.safety`): faults in the loop end in a
hold or a stop within the same cycle instead of an exception, and no stop drops a brakeless arm
unless ``release`` is asked for explicitly.

Per cycle: ``update()`` reads feedback, checks it, samples the trajectory (or the brake ramp),
runs the plugins, clamps the command to the limits and rate-limits the position command to the
rated speed (:mod:`hebictl.control.motion`); ``send()`` writes it (and plugins' extra modules).
Goals are admitted by :mod:`hebictl.control.admission`; configs are assembled by
:mod:`hebictl.control.assembly`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control import cycle_kernels
from hebictl.control.admission import plan
from hebictl.control.assembly import ExtraModules, assemble
from hebictl.control.braking import BrakePlanner, firmware_limit_side
from hebictl.control.goal import Goal
from hebictl.control.monitors import MonitorSuite, Payload, goal_status
from hebictl.control.monitors.payload import payload_efforts
from hebictl.control.motion import Brake, RateLimiter, shrink_recovery
from hebictl.control.plugins import ArmPlugin, DoubledJointMirror, GravityCompensationEffort
from hebictl.control.safety import ArmState, EventKind, EventLog, Limits, StopBehaviour
from hebictl.control.settings import SafetySettings, default_damping, limits_from
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Backend, Command, Feedback

if TYPE_CHECKING:
    from hebictl.config import RobotConfig
    from hebictl.hardware.clock import Clock
    from hebictl.model.robot import RobotModel
    from hebictl.trajectory import Trajectory

__all__ = ["Arm", "EventKind", "StopBehaviour"]

log = logging.getLogger(__name__)
# Enum member lookups go through a descriptor on every access; the hot path compares against these.
_RUNNING, _HOLD, _STOPPED = ArmState.RUNNING, ArmState.HOLD, ArmState.STOPPED
#: plugins that keep running while the arm is stopped (they only mirror the arm's command)
_RUN_WHEN_STOPPED = (DoubledJointMirror,)


class Arm:
    """A controlled arm. Build with :meth:`from_config` or directly from a model and a backend."""

    def __init__(self, model: RobotModel, backend: Backend, *, clock: Clock,
                 plugins: Sequence[ArmPlugin] = (), limits: Limits | None = None,
                 watchdog_timeout: float = 0.25, feedback_timeout: float | None = None,
                 missed_feedback_limit: int = 2, idle: str = "hold", safety: SafetySettings | None = None,
                 extra_modules: ExtraModules | None = None, backend_name: str = "mock",
                 backend_options: dict[str, Any] | None = None, user_data: dict[str, Any] | None = None) -> None:
        """``watchdog_timeout`` [s]: no fresh feedback for this long stops the arm (default: hold).
        ``feedback_timeout`` [s]: how long ``update`` waits for feedback (default 2 periods).
        ``missed_feedback_limit``: consecutive cycles without fresh feedback tolerated (the last
        command is repeated) before the arm holds.
        ``idle``: what the arm commands with no goal: ``"hold"`` the last position (default), or
        ``"gravcomp"``: no position/velocity, only plugin efforts (hand-guiding, like hebi.arm).
        ``safety``: stop behaviour, at_goal tolerances, damping (:mod:`hebictl.control.settings`)."""
        if model.nq != model.nv:
            raise ConfigError("the Arm controls 1-DoF joints only (the model has ball or free joints)")
        if backend.size != model.dof:
            raise ConfigError(f"backend has {backend.size} modules, the model {model.dof} joints", key="names")
        self.model = model
        self.backend = backend
        self.clock = clock
        self.dof = model.dof
        self.user_data = dict(user_data or {})
        self.extra_modules = extra_modules or ExtraModules(backend_name, backend, clock, self.user_data,
                                                           dict(backend_options or {}))
        self.limits = limits or limits_from(model, {})
        self.safety = safety or SafetySettings()
        self._damping = self.safety.damping if self.safety.damping is not None else default_damping(self.limits)
        self.watchdog_timeout = float(watchdog_timeout)
        self.missed_feedback_limit = int(missed_feedback_limit)
        self._missed = 0
        hz = backend.feedback_frequency
        self.feedback_timeout = float(feedback_timeout if feedback_timeout is not None
                                      else (2.0 / hz if hz > 0 else 0.1))
        self.events = EventLog(start=clock.now())  # log lines count from the arm's start
        self.state = ArmState.RUNNING
        self.pending_command = Command.empty(self.dof)
        self.last_feedback = Feedback.empty(self.dof)
        self._fbk = Feedback.empty(self.dof)
        self._have_feedback = False
        self._last_seq = -1
        self._last_fresh_time = clock.now()
        self._last_time = clock.now()
        self._dt = 0.0
        self._trajectory: Trajectory | None = None
        self.trajectory_state: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._hold_position: FloatArray | None = None
        self._brake: Brake | None = None
        self._stop_behaviour: StopBehaviour | None = None
        self._rate = RateLimiter(self.limits.velocity_max, self.limits)
        self.brake_planner = BrakePlanner(model, self.limits)
        self._firmware_limit = False  # a module's firmware limit was acting at the last feedback
        # range a joint switched on outside its limits may move in, shrinking to them (None: all inside)
        self._recovery: tuple[FloatArray, FloatArray] | None = None
        self.module_safety: Any = None  # the modules' own safety settings, when the config gives them
        self._input_frames = np.empty((model.frame_count("input"), 4, 4))
        self._input_frames_valid = False
        self.idle = "hold"
        self.set_idle(idle)
        self.plugins: list[ArmPlugin] = []
        for p in plugins:
            self.add_plugin(p)
        cycle_kernels.load(model, self.dof)  # numba loads the cycle's kernels now, not in the first cycle
        # --- execution monitors (hebictl.control.monitors; hook: update() and send(), reactions: react())
        #: a payload the gravity model includes (set_payload), else None
        self.payload: Payload | None = None
        self.monitors = MonitorSuite(model, self.limits, feedback_frequency=hz,
                                     command_lifetime=float(getattr(backend, "command_lifetime", 0.0) or 0.0),
                                     settings=self.safety.monitors, plugins=self.plugins)
        # --- end execution monitors

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, config: RobotConfig | str | Path, backend: str = "mock", *,
                    clock: Clock | None = None, model: RobotModel | None = None,
                    gains: str | None = "default", **backend_options: Any) -> Arm:
        """Build the arm a robot-config YAML describes, on any registered backend (``mock``,
        ``hebi``, ``hebi-imitation``, ``sim``, ...); gains ``gains`` (a key of the config's gains)
        are sent. See :func:`hebictl.control.assembly.assemble`."""
        from hebictl.hardware.clock import MonotonicClock

        clock = clock or MonotonicClock()
        parts = assemble(config, backend, clock=clock, model=model, gains=gains, **backend_options)
        try:
            arm = cls(parts.model, parts.backend, clock=clock, plugins=parts.plugins, limits=parts.limits,
                      safety=parts.safety, extra_modules=parts.extra_modules, user_data=parts.user_data)
            arm.module_safety = parts.module_safety
            return arm
        except Exception:
            parts.backend.close()
            raise

    def add_plugin(self, plugin: ArmPlugin) -> None:
        plugin.on_associated(self)
        self.plugins.append(plugin)

    def plugin(self, name_or_type: str) -> ArmPlugin | None:
        """The plugin with this name, else the first of this type name."""
        for p in self.plugins:
            if p.name == name_or_type:
                return p
        return next((p for p in self.plugins if p.type_name == name_or_type), None)

    def open_extra_modules(self, names: Sequence[str], families: Sequence[str], *,
                           joints: Sequence[int] = (), signs: Sequence[float] = ()) -> Backend:
        """Open more modules on this arm's backend type (e.g. a double shoulder's mirror), driving
        arm joints ``joints`` with ``signs`` where the backend models shared joints (the sim)."""
        return self.extra_modules.open(names, families, joints, signs)

    def close(self) -> None:
        for p in self.plugins:
            p.close()
        self.backend.close()

    def __enter__(self) -> Arm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ goals
    @property
    def trajectory(self) -> Trajectory | None:
        return self._trajectory

    def _commanded_state(self, t: float) -> tuple[FloatArray, FloatArray]:
        """Where the command is now: the trajectory, the brake, else the last command/feedback."""
        if self._trajectory is not None:
            p, v, _ = self._trajectory.get_state(t)
            return p.copy(), v.copy()
        if self._brake is not None and t < self._brake.end_time:  # an ended brake may since have been
            p, v, _ = self._brake.state(t)                       # overridden by a plugin (a jog)
            return p, v
        cmd, fb = self.pending_command, self.last_feedback
        pos = np.where(np.isfinite(cmd.position), cmd.position, fb.position)
        if self._hold_position is not None:
            pos = np.where(np.isfinite(pos), pos, self._hold_position)
        vel = np.where(np.isfinite(cmd.velocity) & np.isfinite(cmd.position), cmd.velocity, 0.0)
        return pos.copy(), vel

    def current_state(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Where a new goal starts: the trajectory's (or brake's) state now, else the last command."""
        if self._trajectory is not None:
            return self._trajectory.get_state(self._last_time)
        if self._brake is not None and self._last_time < self._brake.end_time:
            return self._brake.state(self._last_time)
        fb = self.last_feedback
        pos = fb.position_command if np.all(np.isfinite(fb.position_command)) else fb.position
        if self._hold_position is not None:
            pos = self._hold_position
        if np.all(np.isfinite(self._rate.last)):
            pos = self._rate.last  # what was last commanded, after rate limiting
        vel = fb.velocity_command if np.all(np.isfinite(fb.velocity_command)) else fb.velocity
        if self.state is not ArmState.RUNNING or not np.all(np.isfinite(vel)):
            vel = np.zeros(self.dof)
        return pos.copy(), vel.copy(), np.zeros(self.dof)

    def set_goal(self, goal: Goal) -> None:
        """Follow ``goal`` from the current state, if the arm can (:mod:`hebictl.control.admission`).

        Raises CommandRejected (``too_fast``, ``too_strong``, ``out_of_limits`` as
        :class:`~hebictl.errors.LimitViolation`, ...) naming the joint; rejected while stopped
        or without feedback."""
        if self.state is ArmState.STOPPED:
            raise CommandRejected("stopped", "the arm is stopped; clear_fault() first")
        if not self._have_feedback:
            raise CommandRejected("no_feedback", "no feedback received yet; call update() first")
        if goal.dof != self.dof:
            raise CommandRejected("wrong_length", f"goal has {goal.dof} joints, the arm {self.dof}")
        start = self.current_state()
        self._trajectory = plan(goal, self._last_time, start, self.limits, self.model)
        lim = self.limits
        fb = self.last_feedback.position
        lo, hi = np.minimum(start[0], fb), np.maximum(start[0], fb)
        outside = (lo < lim.position_min) | (hi > lim.position_max)
        self._recovery = ((np.minimum(lim.position_min, lo), np.maximum(lim.position_max, hi))
                          if outside.any() else None)
        self._hold_position = None
        self._brake = None
        if self.state is ArmState.HOLD:
            self._enter(ArmState.RUNNING, EventKind.GOAL, "new goal accepted; leaving hold")

    def cancel_goal(self) -> None:
        """Drop the goal and brake to a hold (hebi-py drops to no command; holding is the safer
        default for a controller that may be carrying a load)."""
        if self._trajectory is not None and self.idle == "hold":
            self._start_brake(self._last_time)
        self._trajectory = None

    @property
    def goal_progress(self) -> float:
        """The trajectory's time fraction, 0..1 (1 once its time is up, reached or not)."""
        traj = self._trajectory
        if traj is None:
            return 0.0
        if traj.duration <= 0.0:
            return 1.0
        return float(min(max(self._last_time - traj.start_time, 0.0), traj.duration) / traj.duration)

    @property
    def at_goal(self) -> bool:
        """True once the trajectory has ended AND every measured position is within
        ``safety.at_goal_position_tolerance`` of the goal AND every joint is slower than
        ``safety.at_goal_velocity_tolerance`` (a NaN velocity reading is not checked)."""
        traj = self._trajectory
        if traj is None or self.state is not _RUNNING or self._last_time < traj.end_time:
            return False
        fb = self.last_feedback
        err = np.abs(fb.position - traj.positions[:, -1])
        if not bool(np.all(err <= self.safety.at_goal_position_tolerance)):
            return False
        speed = np.abs(fb.velocity)
        return not bool(np.any(speed > self.safety.at_goal_velocity_tolerance))

    # ------------------------------------------------------------------ safety actions
    def _enter(self, state: ArmState, kind: EventKind | str, detail: str) -> None:
        self.state = state
        self.events.record(self.clock.now(), kind, state, detail)

    def _start_brake(self, t: float) -> None:
        """Brake from the commanded state at ``t`` (the trajectory, a running brake or the last
        command; a moving joint from its fresh measured position, as its tracking lag would make the
        hold ring) at the deceleration the actuators can deliver (:mod:`hebictl.control.braking`)."""
        p, v = self._commanded_state(t)
        age = t - self._last_fresh_time
        if self._have_feedback and 0.0 <= age <= 0.05:
            est = self.last_feedback.position + v * age
            p = np.where((np.abs(v) > self.safety.at_goal_velocity_tolerance) & np.isfinite(est), est, p)
        lim = self.limits
        amax = self.brake_planner.deceleration(p, self._gravity_vector())
        self._brake = Brake(t, p, v, amax, lim.velocity_max, lim.position_min, lim.position_max)
        self._hold_position = self._brake.target

    @property
    def braking(self) -> bool:
        """True while a brake ramp (stop, hold or cancel) is still decelerating."""
        return self._brake is not None and bool(self._last_time < self._brake.end_time)

    def hold(self, position: ArrayLike | None = None, *, reason: EventKind | str = EventKind.HOLD,
             detail: str = "operator hold") -> None:
        """Hold ``position``, or (default) brake within the rated deceleration and hold where the
        command comes to rest. Not latched: a new goal leaves HOLD."""
        if self.state is ArmState.STOPPED:
            return
        if position is None:
            self._start_brake(self.clock.now())
        else:
            self._hold_position = np.array(position, dtype=np.float64)
            self._brake = None
        self._trajectory = None
        self._enter(ArmState.HOLD, reason, detail)

    @property
    def default_stop_behaviour(self) -> StopBehaviour:
        """What :meth:`stop` does without ``behaviour`` (config ``user_data.safety.stop_behaviour``)."""
        return self.safety.stop_behaviour

    @property
    def stop_behaviour(self) -> StopBehaviour | None:
        """The behaviour in force while STOPPED, else None."""
        return self._stop_behaviour if self.state is ArmState.STOPPED else None

    def stop(self, reason: EventKind | str = EventKind.ESTOP, detail: str = "stop requested", *,
             behaviour: StopBehaviour | str | None = None) -> None:
        """Latched stop (until :meth:`clear_fault`) doing ``behaviour`` (default: the config's, hold).

        ``hold``: brake to standstill within the rated deceleration, then hold the position under
        gravity compensation, also when feedback is lost. ``damp``: gravity compensation plus
        joint damping, no position target. ``release``: command nothing; a brakeless arm falls.
        """
        b = self.safety.stop_behaviour if behaviour is None else StopBehaviour(behaviour)
        now = self.clock.now()
        if b is StopBehaviour.HOLD:
            if not (self.state is ArmState.STOPPED and self._stop_behaviour is StopBehaviour.HOLD
                    and self._brake is not None):
                self._start_brake(now)
        else:
            self._brake = None
            self._hold_position = None
            if b is StopBehaviour.RELEASE:
                log.warning("arm released: commanding nothing. X- and R-series modules have no brakes: "
                            "the arm will fall unless it is supported")
        self._trajectory = None
        self._stop_behaviour = b
        self._enter(ArmState.STOPPED, reason, f"{detail} [{b.value}]")

    # --- execution monitors: reactions, payload, status (hebictl.control.monitors) -----------------
    def react(self, kind: EventKind | str, detail: str, reaction: str) -> None:
        """Act on a monitor's finding: ``event`` records it; ``hold`` brakes then holds;
        ``stop`` is a latched stop that holds, ``damp`` one that damps. Holds and stops start from
        the measured state (position advanced by velocity x feedback age, measured velocity), so a
        hold after a contact or a control gap stays where the arm is instead of driving back to
        (or through) the stale command."""
        stopped = self.state is ArmState.STOPPED
        if reaction == "event" or (stopped and (reaction == "hold" or self._stop_behaviour is StopBehaviour.HOLD)):
            # recorded only; a latched stop that holds already is kept (the stricter stop stays)
            self.events.record(self.clock.now(), kind, self.state, detail)
            return
        if reaction == "damp":
            self.stop(kind, detail, behaviour="damp")
            return
        if reaction == "hold":
            self.hold(reason=kind, detail=detail)
        elif reaction == "stop":
            self.stop(kind, detail, behaviour="hold")
        else:
            raise ValueError(f"unknown reaction {reaction!r}")
        fb = self.last_feedback
        fresh = self.clock.now() - self._last_fresh_time <= 2.0 / max(self.backend.feedback_frequency, 1.0)
        if fresh and self._have_feedback and np.all(np.isfinite(fb.position)):
            now = self.clock.now()
            v = np.nan_to_num(fb.velocity)
            p = fb.position + v * min(self.monitors.feedback_age, 0.1)
            lim = self.limits
            amax = self.brake_planner.deceleration(p, self._gravity_vector())
            self._brake = Brake(now, p, v, amax, lim.velocity_max, lim.position_min, lim.position_max)
            self._hold_position = self._brake.target
            self._rate.reset()

    def set_payload(self, mass: float, com: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Include an end-effector payload of ``mass`` [kg] at ``com`` [m, end-effector frame] in the
        gravity model (hold, stops, the monitors), as HEBI users declare end-effector payloads;
        ``mass=0`` removes it. ``arm.payload_estimate['mass_kg']`` is what the monitor measured."""
        m = float(mass)
        if not (math.isfinite(m) and m >= 0.0):
            raise ConfigError(f"payload mass must be finite and >= 0 kg, got {mass!r}", key="payload")
        c = np.asarray(com, dtype=np.float64)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ConfigError(f"payload com must be 3 finite numbers [m], got {com!r}", key="payload")
        self.payload = Payload(m, c) if m > 0.0 else None

    @property
    def payload_estimate(self) -> dict[str, Any] | None:
        """The model-mismatch monitor's last estimate at rest: ``mass_kg`` (total end-effector
        payload), ``extra_mass_kg`` (not in the model), ``applied_mass_kg``; None before one."""
        return self.monitors.payload_estimate

    @property
    def goal_status(self) -> str:
        """Why the arm is or is not at its goal (``reached``, ``moving``, ``not reached: ...``)."""
        return goal_status(self)

    @property
    def commands_delivered(self) -> bool:
        """False while the modules are not taking the commands sent (``command_lost``)."""
        return self.monitors.commands_delivered
    # --- end execution monitors ----------------------------------------------------------------

    def inverse_kinematics(self, target: Any = None, seed: ArrayLike | None = None, **kwargs: Any) -> Any:
        """:meth:`RobotModel.inverse_kinematics` within this arm's joint limits (the config's and
        the model's), so a Cartesian goal never asks for a position a joint goal would be refused."""
        kwargs.setdefault("limits", (self.limits.position_min, self.limits.position_max))
        return self.model.inverse_kinematics(target, seed, **kwargs)

    def set_joint_limits(self, minimum: ArrayLike, maximum: ArrayLike) -> None:
        """Position limits [rad or m] for goals, commands and feedback checks (like hebi.arm)."""
        lo = np.broadcast_to(np.asarray(minimum, dtype=np.float64), (self.dof,)).copy()
        hi = np.broadcast_to(np.asarray(maximum, dtype=np.float64), (self.dof,)).copy()
        if np.any(lo > hi):
            raise ConfigError("joint limits: a minimum is above its maximum", key="joint_limits")
        self.limits.position_min, self.limits.position_max = lo, hi
        self.limits.refresh()

    def set_idle(self, idle: str) -> None:
        """Choose what to command without a goal: ``"hold"`` or ``"gravcomp"`` (hand-guiding)."""
        if idle not in ("hold", "gravcomp"):
            raise ConfigError(f"idle must be 'hold' or 'gravcomp', got {idle!r}", key="idle")
        self.idle = idle
        if idle == "gravcomp":
            self._hold_position = None
            self._brake = None
        elif self._have_feedback and self._trajectory is None and self._hold_position is None:
            self._hold_position = self.last_feedback.position.copy()

    def clear_fault(self) -> None:
        """Leave HOLD/STOPPED: hold the current feedback position in RUNNING state (the rate
        limiter moves the command there at no more than the rated speed)."""
        if self.state is ArmState.RUNNING:
            return
        self._hold_position = self.last_feedback.position.copy() if self._have_feedback else None
        self._trajectory = None
        self._brake = None
        self._stop_behaviour = None
        self._enter(ArmState.RUNNING, EventKind.CLEARED, "fault cleared; holding current position")

    @property
    def m_stopped(self) -> bool:
        """True while a module reports its M-stop pressed (``hebi.arm.Arm.m_stopped``)."""
        return bool(np.any(self.last_feedback.mstop == 1.0))  # a plain bool: it goes into JSON

    @property
    def dt(self) -> float:
        return self._dt

    def input_frames(self) -> FloatArray:
        """FK 'input' frames at the current feedback (computed once per cycle, on demand)."""
        if not self._input_frames_valid:
            self.model.forward_kinematics_into(self.last_feedback.position, "input", self._input_frames)
            self._input_frames_valid = True
        return self._input_frames

    def _gravity_vector(self) -> FloatArray:
        grav = next((p for p in self.plugins if isinstance(p, GravityCompensationEffort)), None)
        return grav.gravity if grav is not None else self.model.gravity

    def _gravity_efforts(self, q: FloatArray) -> FloatArray:
        g = self._gravity_vector()
        if not np.all(np.isfinite(q)):
            return np.full(self.dof, np.nan)
        out = self.model.gravity_compensation(q, g)
        if self.payload is not None:  # execution monitors: a payload set with set_payload
            out += payload_efforts(self.model, q, self.payload, g)
        return out

    def _hold_target(self, now: float) -> tuple[FloatArray, FloatArray]:
        if self._brake is not None:
            p, v, a = self._brake.state(now)
            self.trajectory_state = (p, v, a) if now < self._brake.end_time else None
            return p, v
        self.trajectory_state = None
        hold = self._hold_position if self._hold_position is not None else self.last_feedback.position
        return hold, np.zeros(self.dof)

    def _finish(self, fb_position: FloatArray) -> None:
        """Clamp the command to the limits, rate-limit the position to the rated speed and brake
        it before a position limit (it reaches the limit at rest, within the rated deceleration)."""
        cmd = self.pending_command
        recovering = self._recovery if self._trajectory is not None else None
        self._rate.clamp_and_apply(cmd.position, cmd.velocity, cmd.effort, self._dt, fb_position, recovering)

    def _hold_command(self, now: float) -> None:
        """Hold command valid without feedback: position, zero velocity, model gravity there."""
        cmd = self.pending_command
        p, v = self._hold_target(now)
        cmd.position[:] = p
        cmd.velocity[:] = v
        cmd.effort[:] = self._gravity_efforts(p)
        if self.trajectory_state is not None:  # braking: feed the deceleration forward
            cmd.effort += self.brake_planner.brake_effort(*self.trajectory_state)
        self._finish(self.last_feedback.position)

    def _stopped_command(self, now: float, feedback_ok: bool) -> None:
        """What the latched stop commands this cycle (see :meth:`stop`)."""
        cmd = self.pending_command
        b = self._stop_behaviour
        fb = self.last_feedback
        if b is StopBehaviour.RELEASE or b is None:
            cmd.clear()
            self._rate.reset()
            return
        if b is StopBehaviour.HOLD:
            p, v = self._hold_target(now)
            cmd.position[:] = p
            cmd.velocity[:] = v
            cmd.effort[:] = self._gravity_efforts(fb.position if feedback_ok else p)
            if self.trajectory_state is not None:  # braking: feed the deceleration forward (no plugins run)
                cmd.effort += self.brake_planner.missing_effort(self.trajectory_state, ())
            if feedback_ok:  # damp the joints' ringing after the brake (same damping as 'damp')
                cmd.effort -= self._damping * np.nan_to_num(fb.velocity - v)
        else:  # DAMP: gravity + damping at the feedback; without feedback the modules' velocity loop damps
            self.trajectory_state = None
            cmd.position.fill(math.nan)
            if feedback_ok:
                cmd.velocity.fill(math.nan)
                cmd.effort[:] = self._gravity_efforts(fb.position) - self._damping * np.nan_to_num(fb.velocity)
            else:
                cmd.velocity.fill(0.0)
                cmd.effort[:] = self._gravity_efforts(self._last_good_position())
        for plugin in self.plugins:
            if isinstance(plugin, _RUN_WHEN_STOPPED):
                plugin.update(self, self._dt)
        self._finish(fb.position)

    def update(self) -> bool:
        """Read feedback and compute the pending command. False when no usable feedback came."""
        fb = self._fbk
        try:
            fresh = self.backend.read(fb, self.feedback_timeout)
        except HardwareError as exc:
            fresh = False
            if self.state is not _STOPPED:  # brakes from the commanded state now (dt stays a period)
                self.stop(EventKind.HARDWARE_ERROR, str(exc))
        now = self.clock.now()
        if fresh and fb.sequence == self._last_seq:
            fresh = False
        if not fresh:
            return self._on_missing_feedback(now)
        self._last_seq = fb.sequence
        self._missed = 0
        # position is what every plugin and the hold need; velocity may legitimately be NaN
        # (hebi's imitation group echoes an uncommanded velocity as NaN)
        if not math.isfinite(fb.position.sum()):
            self._dt = max(now - self._last_time, 0.0)
            self._last_time = now
            bad = int(np.argmax(~np.isfinite(fb.position)))
            if self.state is _RUNNING:
                self.hold(reason=EventKind.FEEDBACK_NAN,  # brake from the commanded state
                          detail=f"NaN/inf feedback from module {bad} ({self.backend.names[bad]})")
            if self.state is _HOLD:
                self._hold_command(now)
            else:
                self._stopped_command(now, feedback_ok=False)
            return False
        # swap buffers instead of copying: the next read refills the older one
        self._fbk, self.last_feedback = self.last_feedback, fb
        if not self._have_feedback and self.idle == "hold" and self._hold_position is None:
            self._hold_position = fb.position.copy()  # first feedback: hold where the arm is
        self._have_feedback = True
        self._last_fresh_time = now
        self._input_frames_valid = False
        self._dt = max(now - self._last_time, 0.0)
        self._last_time = now

        lim = self.limits  # M-stop, firmware limit and position limit in one compiled call
        pressed, acting, joint = cycle_kernels.feedback_faults(fb.position, lim.position_min, lim.position_max,
                                                               lim.position_tolerance, lim._bounded, fb.mstop,
                                                               fb.position_limit_state)
        if pressed and self.state is not _STOPPED:
            self.stop(EventKind.MSTOP, "a module's M-stop is pressed")
        if acting >= 0 or self._firmware_limit:
            self._check_firmware_limit(fb, acting)
        # --- execution monitors: one call per fresh sample, before the command is computed
        for finding in self.monitors.after_read(self, fb, now):
            self.react(finding.kind, finding.detail, finding.reaction)
        # --- end execution monitors
        if self.state is _STOPPED:
            self._stopped_command(now, feedback_ok=True)
            return True
        if self._recovery is not None:
            self._recovery = shrink_recovery(self._recovery, self.limits, fb.position)
            joint = self.limits.position_violation(fb.position, self._recovery)
        if joint >= 0 and self.state is _RUNNING:
            clamped = np.clip(fb.position, self.limits.position_min, self.limits.position_max)
            self.hold(clamped, reason=EventKind.POSITION_LIMIT,
                      detail=f"joint {joint} ({self.model.joint_names[joint]}) at {fb.position[joint]:.4f} "
                             f"beyond [{self.limits.position_min[joint]:.4f}, {self.limits.position_max[joint]:.4f}]")

        cmd = self.pending_command
        if self.state is _HOLD or (self._trajectory is None and self._hold_position is not None):
            p, v = self._hold_target(now)
            cmd.position[:] = p
            cmd.velocity[:] = v
        elif self._trajectory is not None:
            p, v, a = self._trajectory.get_state(now)
            self.trajectory_state = (p, v, a)
            cmd.position[:] = p
            cmd.velocity[:] = v
        else:
            self.trajectory_state = None
            cmd.position.fill(math.nan)
            cmd.velocity.fill(math.nan)
        cmd.effort.fill(0.0)
        ok = True
        for plugin in self.plugins:
            ok = plugin.update(self, self._dt) and ok
        if self.payload is not None and np.all(np.isfinite(cmd.position)):  # execution monitors: set_payload
            cmd.effort += payload_efforts(self.model, fb.position, self.payload, self._gravity_vector())
        if self._brake is not None and self._trajectory is None:  # a hold that braked: as the hold stop
            if self.trajectory_state is not None:  # feed the ramp forward (what plugins did not)
                cmd.effort += self.brake_planner.missing_effort(self.trajectory_state, self.plugins)
            cmd.effort -= self._damping * np.nan_to_num(fb.velocity - cmd.velocity)  # damp the ringing
        self._finish(fb.position)
        return ok

    def _check_firmware_limit(self, fb: Feedback, acting: int) -> None:
        """Record (once per episode) a module's own position limit acting, and brake to a hold:
        the module no longer follows the command on that joint (``acting``: see :func:`firmware_limit_side`)."""
        limit = firmware_limit_side(acting)
        was, self._firmware_limit = self._firmware_limit, limit is not None
        if limit is None or was:
            return
        j, side = limit
        detail = (f"module {j} ({self.backend.names[j]}): its firmware {side} position limit is acting "
                  f"(limit state {fb.position_limit_state[j]:.0f}) at {fb.position[j]:.4f}")
        if self.state is _RUNNING:
            self.hold(reason=EventKind.FIRMWARE_LIMIT, detail=detail)
        else:
            self.events.record(self.clock.now(), EventKind.FIRMWARE_LIMIT, self.state, detail)

    def _last_good_position(self) -> FloatArray:
        if self._hold_position is not None:
            return self._hold_position
        if self._trajectory is not None:
            return self._trajectory.get_state(self._last_time)[0]
        return self.last_feedback.position.copy() if self._have_feedback else np.zeros(self.dof)

    def _on_missing_feedback(self, now: float) -> bool:
        self._dt = max(now - self._last_time, 0.0)
        self._last_time = now
        if self.state is _STOPPED:
            self._stopped_command(now, feedback_ok=False)
            return False
        if now - self._last_fresh_time > self.watchdog_timeout:
            self.stop(EventKind.WATCHDOG, f"no fresh feedback for {now - self._last_fresh_time:.3f} s "
                                          f"(> {self.watchdog_timeout:.3f} s)")
            self._stopped_command(now, feedback_ok=False)
            return False
        self._missed += 1
        if self._missed <= self.missed_feedback_limit and self.state is _RUNNING:
            # one late sample is not a fault: keep the command moving along the trajectory (a
            # position frozen while the arm moves would brake it through its position loop)
            if self._trajectory is not None:
                cmd = self.pending_command
                cmd.position[:], cmd.velocity[:], _ = self._trajectory.get_state(now)
                self._finish(self.last_feedback.position)
            return False
        if self.state is _RUNNING and self._have_feedback:
            self.hold(reason=EventKind.FEEDBACK_LOST,  # brake from the commanded state
                      detail=f"no fresh feedback for {self._missed} cycles")
        if self._have_feedback or self._hold_position is not None:
            self._hold_command(now)
        return False

    def send(self) -> bool:
        """Write the pending command to the modules (and plugins' extra modules)."""
        self.monitors.before_send(self.pending_command)  # execution monitors: mark it for the echo check
        try:
            ok = self.backend.write(self.pending_command)
        except HardwareError as exc:
            if self.state is not _STOPPED:
                self.stop(EventKind.HARDWARE_ERROR, str(exc))
            ok = False
        written = ok
        for plugin in self.plugins:
            ok = plugin.send(self) and ok
        # --- execution monitors: delivery of this command (the arm's modules and the mirror)
        for finding in self.monitors.after_send(self, written, self.pending_command):
            self.react(finding.kind, finding.detail, finding.reaction)
        # --- end execution monitors
        return ok
