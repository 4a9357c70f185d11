"""The Arm: one robot model, one hardware backend, a trajectory and plugins, stepped by update/send.

API mirrors ``hebi.arm.Arm`` (``update``, ``send``, ``set_goal``, ``cancel_goal``, ``at_goal``,
``goal_progress``, ``pending_command``, ``last_feedback``) so HEBI users feel at home; on top of
it the arm owns its safety state (:mod:`hebictl.control.safety`): faults in the loop end in a
hold or a stop within the same cycle instead of an exception, and no stop drops a brakeless arm
unless ``release`` is asked for explicitly.

The arm's motion state lives in one :class:`~hebictl.control.supervisor.Supervisor`: the mode as a
value that owns its data (:mod:`hebictl.control.modes`: follow, jog, brake, hold, damp, gravcomp,
release), the latch level (running, hold, stopped), the latched stop and the stop pending after a
brake, changed only through its transition table. What this module adds is where each mode starts:
from the MEASURED state.
The last command is kept (no step) only for a joint whose modules were executing it and which is
within ``STALE_RAD`` of it; otherwise (the M-stop was pressed, a module was gone, the arm was
released or damped, an obstacle held it) the joint starts where it is. A new trajectory and every
brake start from the measured velocity. See ``docs/supervisor.md``.

Per cycle: ``update()`` reads feedback, checks it, samples the trajectory (or the brake ramp),
runs the plugins, clamps the command to the limits and rate-limits the position command to the
rated speed (:mod:`hebictl.control.motion`); ``send()`` writes it (and plugins' extra modules).
Goals are admitted by :mod:`hebictl.control.admission`; configs are assembled by
:mod:`hebictl.wiring.assembly`, the layer above control (:meth:`Arm.from_config` forwards there).
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
from hebictl.control.braking import BrakePlanner
from hebictl.control.cycle_clock import FRESH_S, CycleClock
from hebictl.control.extra_modules import ExtraModules
from hebictl.control.goal import Goal
from hebictl.control.handover import retime
from hebictl.control.lifetime import KEEPALIVE_PERIOD, CommandLifetime
from hebictl.control.loads import Loads
from hebictl.control.modes import LAG_MIN_RAD, Braking, Damp, Follow, Holding, Jogging, MotionMode, Release
from hebictl.control.monitors import MonitorSuite, Payload, goal_status
from hebictl.control.motion import Brake, RateLimiter, recovery_range, shrink_recovery
from hebictl.control.payload_feedforward import PayloadFeedForward
from hebictl.control.plausible import PlausibleVelocity
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import ArmState, EventKind, EventLog, Limits, Reaction, StopBehaviour
from hebictl.control.settings import SafetySettings, default_damping, limits_from
from hebictl.control.supervisor import IdleBehaviour, Latch, Level, Mode, Resync, Supervisor, Trigger
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Backend, Command, Feedback

if TYPE_CHECKING:
    from hebictl.config import RobotConfig
    from hebictl.hardware.clock import Clock
    from hebictl.model.robot import RobotModel
    from hebictl.trajectory import Trajectory

__all__ = ["KEEPALIVE_PERIOD", "REACTIONS", "STALE_RAD", "Arm", "EventKind", "IdleBehaviour", "Mode", "Reaction",
           "StopBehaviour"]

log = logging.getLogger(__name__)
# Enum member lookups go through a descriptor on every access; the hot path compares against these.
_RUNNING, _HOLD, _STOPPED = ArmState.RUNNING, ArmState.HOLD, ArmState.STOPPED
_FOLLOW, _JOG, _BRAKE, _HOLDING, _DAMP, _GRAVCOMP, _RELEASE = (Mode.FOLLOW, Mode.JOG, Mode.BRAKE, Mode.HOLD, Mode.DAMP,
                                                               Mode.GRAVCOMP, Mode.RELEASE)
#: [rad or m] a joint whose last command is further than this from its measured position was not
#: following it (a stale command): a new mode starts that joint from the measured position. Above
#: the tracking lag at rated speed (~20 mrad on the bundled kits) and a hold's sag under 1 kg.
STALE_RAD = 0.1
#: [cycles] a blind brake ramp is commanded this far ahead of the cycle's time (x the blind cycle's
#: length, at least the nominal period): the middle of the time the modules hold each command for
#: (see :meth:`Arm._position_command`)
BLIND_LEAD = 0.5
State = tuple[FloatArray, FloatArray, FloatArray]
#: what :meth:`Arm.react` accepts (the monitors' reactions: :class:`Reaction`'s values)
REACTIONS = tuple(r.value for r in Reaction)


class Arm:
    """A controlled arm. Build with :meth:`from_config` or directly from a model and a backend."""

    def __init__(self, model: RobotModel, backend: Backend, *, clock: Clock,
                 plugins: Sequence[ArmPlugin] = (), limits: Limits | None = None,
                 watchdog_timeout: float = 0.25, feedback_timeout: float | None = None,
                 missed_feedback_limit: int = 2, idle: IdleBehaviour | str = "hold",
                 safety: SafetySettings | None = None,
                 extra_modules: ExtraModules | None = None, backend_name: str = "mock",
                 backend_options: dict[str, Any] | None = None, user_data: dict[str, Any] | None = None) -> None:
        """``watchdog_timeout`` [s]: no fresh feedback for this long stops the arm (default: hold).
        ``feedback_timeout`` [s]: how long ``update`` waits for feedback (default 2 periods).
        ``missed_feedback_limit``: consecutive cycles without fresh feedback tolerated (the command
        keeps following the trajectory) before the arm brakes along the ramp and then holds.
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
        #: the whole motion state: mode value, latch level and latch, pending stop (see supervisor.py)
        self.supervisor = Supervisor(Mode.HOLD)
        self.pending_command = Command.empty(self.dof)
        self.last_feedback = Feedback.empty(self.dof)
        self._fbk = Feedback.empty(self.dof)
        #: this cycle's reference state (position, velocity, acceleration) of a trajectory or brake ramp
        self.trajectory_state: tuple[FloatArray, FloatArray, FloatArray] | None = None
        hz0 = backend.feedback_frequency
        #: this cycle's time and length, the loop's nominal period, the last fresh sample (:mod:`.cycle_clock`)
        self.cycle = CycleClock(clock.now(), 1.0 / hz0 if hz0 > 0 else 0.01)
        #: the pending and the delivered command's ages against the modules' lifetime (:mod:`.lifetime`)
        self.lifetime = CommandLifetime(float(getattr(backend, "command_lifetime", 0.0) or 0.0))
        # the last samples' velocities: a brake starts only from a plausible one (hebictl.control.plausible)
        self._velocities = PlausibleVelocity(self.dof, self.limits.velocity_max, self._max_acceleration, STALE_RAD)
        self._rate = RateLimiter(self.limits.velocity_max, self.limits)
        self.brake_planner = BrakePlanner(model, self.limits)
        self._firmware_limit = False  # a module's firmware limit was acting at the last feedback
        self.module_safety: Any = None  # the modules' own safety settings, when the config gives them
        self._input_frames = np.empty((model.frame_count("input"), 4, 4))
        self._input_frames_valid = False
        self.plugins: list[ArmPlugin] = []
        #: the gravity vector, the declared payload and the unknown load's feed-forward (:mod:`.loads`)
        self.loads = Loads(model, self.plugins, measured=bool(getattr(backend, "measures_effort", True)))
        self.set_idle(idle)
        for p in plugins:
            self.add_plugin(p)
        cycle_kernels.load(model, self.dof)  # numba loads the cycle's kernels now, not in the first cycle
        #: execution monitors (:mod:`hebictl.control.monitors`): findings every cycle, answered by :meth:`react`
        self.monitors: MonitorSuite = MonitorSuite(
            model, self.limits, feedback_frequency=hz0,
            command_lifetime=float(getattr(backend, "command_lifetime", 0.0) or 0.0),
            settings=self.safety.monitors, plugins=self.plugins,
            measures_effort=bool(getattr(backend, "measures_effort", True)))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, config: RobotConfig | str | Path, backend: str = "mock", *,
                    clock: Clock | None = None, model: RobotModel | None = None,
                    gains: str | None = "default", **backend_options: Any) -> Arm:
        """Build the arm a robot-config YAML describes, on any registered backend (``mock``,
        ``hebi``, ``hebi-imitation``, ``sim``, ...); gains ``gains`` (a key of the config's gains)
        are sent. See :func:`hebictl.wiring.assembly.assemble`.

        The wiring layer sits above control; this classmethod forwards to it with a lazy import,
        the single upward edge the layer table allows (docs/architecture.md, "Layers")."""
        from hebictl.wiring.assembly import arm_from_config

        return arm_from_config(cls, config, backend, clock=clock, model=model, gains=gains, **backend_options)

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

    # ------------------------------------------------------------------ mode
    @property
    def state(self) -> ArmState:
        """The latch level: RUNNING, HOLD (a goal leaves it) or STOPPED (until :meth:`clear_fault`)."""
        return self.supervisor.level

    @property
    def mode(self) -> Mode:
        """What the arm commands now: follow, jog, brake, hold, damp, gravcomp or release."""
        return self.supervisor.mode

    @property
    def latch(self) -> Latch | None:
        """The latched stop (cause, detail, requested behaviour) while STOPPED, else None."""
        return self.supervisor.latch

    @property
    def idle(self) -> IdleBehaviour:
        """What the arm commands with no goal (:meth:`set_idle`); compares equal to ``"hold"`` or ``"gravcomp"``."""
        return self.supervisor.idle

    def _fire(self, trigger: Trigger, value: MotionMode | None = None) -> None:
        self.supervisor.fire(trigger, value)

    def _braking(self) -> Braking | None:
        m = self.supervisor.motion
        return m if isinstance(m, Braking) else None

    def _hold_target(self) -> FloatArray | None:
        """The current hold's target (None: not holding, or not anchored yet)."""
        m = self.supervisor.motion
        return m.target if isinstance(m, Holding) else None

    def _speed(self) -> float:
        """The fastest joint's measured speed / its at-goal tolerance (>1: moving); 0 without feedback."""
        if not self.cycle.have_feedback:
            return 0.0
        v = np.nan_to_num(self.last_feedback.velocity)
        return float(np.max(np.abs(v))) / self.safety.at_goal_velocity_tolerance if v.size else 0.0

    def _moving(self) -> bool:
        return self.supervisor.mode is _FOLLOW or self.supervisor.mode is _BRAKE or self._speed() > 1.0

    def _anchor(self, measured: bool = False, command: FloatArray | None = None, *, apply: bool = True) -> FloatArray:
        """Where a new mode starts, per joint: the last command where the modules were executing it
        and the joint is within ``STALE_RAD`` of it (no step), else the measured position (and the
        rate limiter starts that joint there: a command that lands on the arm moves nothing).
        ``measured``: every joint from the measured position; ``command``: the command to keep
        instead of the last one (a brake's stopping point); ``apply=False``: only compute it."""
        last = self._rate.last
        cand = last if command is None else command
        if not self.cycle.have_feedback:
            target = self._hold_target()
            return np.where(np.isfinite(last), last, target if target is not None else 0.0)
        if not self._fresh():  # old feedback is not where the arm is: keep the command (re-anchored
            return np.where(np.isfinite(cand), cand, self.last_feedback.position)  # on the next fresh sample)
        meas = self.last_feedback.position
        if not np.all(np.isfinite(meas)):
            meas = np.where(np.isfinite(meas), meas, last)
        keep = np.isfinite(cand) & (np.abs(cand - meas) <= STALE_RAD)
        if measured:
            keep[:] = False
        p = np.where(keep, cand, meas)
        if apply:
            np.copyto(last, p, where=~keep & np.isfinite(p))
            self._allow_outside(p)
        return p

    def _allow_outside(self, p: FloatArray) -> None:
        """A joint anchored beyond its limits (it fell or was pushed there while nothing commanded it)
        is held where it is, not swept back at the rated speed: the recovery range (as for a goal
        from outside the limits) includes it, and shrinks as the joint comes back."""
        wider = recovery_range(self.limits, p, p)
        if wider is None:
            return
        recovery = self.supervisor.recovery
        if recovery is not None:
            wider = (np.minimum(wider[0], recovery[0]), np.maximum(wider[1], recovery[1]))
        self.supervisor.recovery = wider

    def _fresh(self) -> bool:
        """The last feedback is from this cycle or the one before (within 50 ms)."""
        return self.cycle.fresh()

    def _measured_velocity(self, now: float, cap: float = 1.0) -> FloatArray:
        """The measured velocity (a NaN reading, or no sample within the last 50 ms: the last commanded
        velocity, which the modules are following), within ``cap`` x the rated speed. A sample a few
        cycles old is a better guess than the command: near its rated speed an arm does not reach the
        commanded speed (its motors run out of voltage; r6's base moved 3.37 rad/s under a 3.70 rad/s
        command), and a brake ramp from the command's speed left it 30-45 mrad behind, ringing."""
        m = self.supervisor.motion
        if isinstance(m, Follow):  # the command now
            cmd_v = m.trajectory.get_state(now)[1].copy()
        else:
            cmd_v = np.nan_to_num(self.pending_command.velocity)
        fresh = self.cycle.fresh(now)
        if fresh:
            reading = self._plausible_velocity()
            v = np.where(np.isfinite(reading), reading, cmd_v)
        else:
            v = cmd_v
        vmax = self.limits.velocity_max if cap == 1.0 else cap * self.limits.velocity_max
        return np.clip(v, -vmax, vmax)

    def _plausible_velocity(self) -> FloatArray:
        """The last sample's velocity where the actuators can have reached it, else the earlier
        samples' (:mod:`hebictl.control.plausible`); an implausible reading is a
        ``feedback_implausible`` event, once per sample."""
        fb = self.last_feedback
        c = self.cycle
        judged, new = self._velocities.judge(c.sequence, fb.position, fb.velocity, c.fresh_time,
                                             self.pending_command.velocity, c.nominal)
        if new and bool(judged.implausible.any()):
            self._record(EventKind.FEEDBACK_IMPLAUSIBLE, judged.describe(self.model.joint_names))
        return judged.velocity

    def _max_acceleration(self, q: FloatArray) -> FloatArray:
        """:meth:`BrakePlanner.max_acceleration` at ``q`` under the arm's gravity (cached by
        :class:`~hebictl.control.plausible.PlausibleVelocity`)."""
        return self.brake_planner.max_acceleration(q, self.loads.gravity_vector())

    def _new_brake(self, now: float, p: FloatArray, chase: bool = False, again: Braking | None = None) -> Braking:
        """The brake ramp from ``p`` and the measured velocity, at the deceleration the actuators
        can deliver with the effort the modules measure (:mod:`hebictl.control.braking`).
        ``chase``: started from the measured state by a monitor (see :meth:`Braking.stopping_point`);
        ``again``: the brake from the measured state that ended with the arm still moving."""
        ff = self.loads.feedforward
        if ff.measured:
            ff.retarget(self.monitors.payload_estimate)
        self.brake_planner.set_payload_mass(ff.mass)
        v = self._measured_velocity(now)
        overrun = again.overrun if again is not None else False
        if chase:  # started from the measured state: the modules were not following the command (a module came
            # back, an M-stop was released, the loop stalled, a monitor reacted); the effort they measure as
            # they take it up again is a transient (saturated at an M-stop release), not a load: the model's
            # gravity and the estimated unknown load count instead
            if again is None:  # the arm runs faster than the ramp may start from (the rated speed): it fell or
                # was flung without a command; it is stopped with the effort it has, not the rated deceleration
                # that shapes commanded motion, and may brake again at the ramp's end
                fast = self._measured_velocity(now, math.inf)
                overrun = bool(np.any(np.abs(fast) > np.abs(v) + 1e-9))
            amax = self.brake_planner.deceleration(p, self.loads.gravity_vector(), None, rated=not overrun)
        else:
            amax = self.brake_planner.deceleration(p, self.loads.gravity_vector(),
                                                   self.last_feedback.effort if self.cycle.have_feedback else None)
        lo, hi = self._ramp_bounds(now, p, v, amax, chase)
        # the arm does not follow a ramp from the measured state, or with a load the model does not know, exactly:
        # its deceleration ends more gently (docs/supervisor.md, "The brake ramp")
        ramp = Brake(now, p, v, amax, self.limits.velocity_max, lo, hi, hold=self.cycle.nominal,
                     taper=Brake.taper_for(chase, self.brake_planner.payload_mass != 0.0))
        return Braking(ramp, chase=chase, overrun=overrun, rebrakes=again.rebrakes + 1 if again is not None else 0)

    def _ramp_bounds(self, now: float, p: FloatArray, v: FloatArray, amax: FloatArray,
                     chase: bool) -> tuple[FloatArray, FloatArray]:
        """The positions a brake ramp from ``p`` may end in: the limits, or the recovery range of a
        brake from the measured state that takes in the ramp's stopping point of a joint outside them.

        A joint outside its limits (it fell or swung there while nothing commanded it, e.g. an M-stop
        with MotorOff) still moving outward is braked along its way, not pulled back to the limit by a
        ramp clipped there (x6's base, 6 rad past its limit at 1.5 rad/s: 124 mrad of position error
        and a 1.1 rad/s swing back)."""
        lim = self.limits
        lo, hi = lim.position_min, lim.position_max
        if not chase or self.supervisor.recovery is None:
            return lo, hi
        outside = (p < lo) | (p > hi)
        if bool(np.any(outside)):
            free = Brake(now, p, v, amax, lim.velocity_max, np.full(self.dof, -np.inf), np.full(self.dof, np.inf))
            self._allow_outside(np.where(outside, free.target, p))
        recovery = self.supervisor.recovery
        return recovery if recovery is not None else (lo, hi)

    def _live(self) -> bool:
        """The modules are executing the position command (following, jogging, braking or holding; no M-stop
        since): a brake may start from it, however far the arm lags, without a step."""
        mode = self.supervisor.mode
        return self.supervisor.resync is not Resync.ALL and (mode is _FOLLOW or mode is _BRAKE or mode is _HOLDING
                                                             or mode is _JOG)

    def _brake_start(self, now: float) -> FloatArray:
        """Where a brake from a live command starts: a moving joint from its measured position (the
        position loop's tracking lag would otherwise keep pushing it on and the hold would ring), a
        still joint from its last command (its sag under load). The rate limiter carries the command
        onto the ramp, at most rated speed x dt per cycle, the velocity command staying the ramp's (the
        measured one: :meth:`_finish`). Landing the command on the arm in one cycle stepped 1.21x rated
        on r6 (its base trails its command by 41 mrad at 0.8x rated, two rated steps) when the brake
        started inside a cycle (a NaN reading, a module gone)."""
        last = self._rate.last
        p = np.where(np.isfinite(last), last, self.last_feedback.position)
        age = now - self.cycle.fresh_time
        if not self.cycle.fresh(now):
            return p
        v = self._measured_velocity(now)
        est = self.last_feedback.position + v * age
        moving = (np.abs(v) > self.safety.at_goal_velocity_tolerance) & (np.abs(est - p) > LAG_MIN_RAD)
        if self.brake_planner.payload_mass != 0.0:  # the load is fed forward: no joint needs its sag
            moving = np.abs(est - p) > LAG_MIN_RAD
        np.copyto(p, est, where=moving)
        return p  # the rate limiter carries the command there

    def _to_brake(self, now: float, measured: bool = False) -> None:
        """Brake from the measured velocity (a running brake is kept: never restarted or dropped, only
        started again from the measured state when ``measured``)."""
        if self.supervisor.mode is _BRAKE:
            if measured:
                self.supervisor.restart_brake(self._new_brake(now, self._anchor(True), chase=True))
            return
        self.brake_planner.set_payload_mass(self.loads.feedforward.mass)  # the ramp plans with the load
        start = self._brake_start(now) if self._live() and not measured else self._anchor(measured)
        self._fire(Trigger.BRAKE, self._new_brake(now, start, chase=measured))

    def _hold_at(self, position: FloatArray | None = None, measured: bool = False) -> None:
        """Hold ``position``, else where the arm is (:meth:`_anchor`)."""
        target = np.array(position, dtype=np.float64) if position is not None else self._anchor(measured)
        self._fire(Trigger.HOLD_AT, Holding(target))

    def _stop_or_hold(self, now: float, measured: bool = False) -> None:
        """Brake if the arm moves, else hold where it is."""
        if self._moving():
            self._to_brake(now, measured)
        else:
            self._hold_at(measured=measured)

    def _record(self, kind: EventKind | str, detail: str) -> None:
        self.events.record(self.clock.now(), kind, self.supervisor.level, detail)

    # ------------------------------------------------------------------ goals
    @property
    def trajectory(self) -> Trajectory | None:
        """The goal's trajectory while the arm follows it, else None."""
        m = self.supervisor.motion
        return m.trajectory if isinstance(m, Follow) else None

    def current_state(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Where a new goal starts, as hebi-py's ``set_goal`` does: the commanded state where the
        modules follow the command, else the measured one.

        Per joint: where the last command is kept (:meth:`_anchor`: the modules execute it and the
        joint is within ``STALE_RAD`` of it), its position and velocity (a hold's zero, a goal's, a
        jog's or a brake ramp's) and, following a goal, its acceleration; elsewhere the measured
        position and velocity (zero below the at-goal tolerance: a still arm's noise). A goal set
        again every input sample (HEBI's AR pattern) so goes on at the speed it had: restarted from
        rest (the measured velocity zeroed below 0.05 rad/s), the end effector lagged a 2 cm figure
        eight by 29-73 mm."""
        p = self._anchor(apply=False)
        last = self._rate.last
        commanded = self.pending_command.velocity
        kept = self._live() and self.supervisor.resync is Resync.NONE
        kept_joints = np.isfinite(last) & (p == last) & np.isfinite(commanded) if kept else np.zeros(self.dof, bool)
        v = self._measured_velocity(self.cycle.now)
        v = np.where(np.abs(v) > self.safety.at_goal_velocity_tolerance, v, 0.0)
        np.copyto(v, commanded, where=kept_joints)
        a = np.zeros(self.dof)
        traj = self.trajectory
        if traj is not None:
            np.copyto(a, traj.get_state(self.cycle.now)[2], where=kept_joints)
        return p.copy(), v, a

    def set_goal(self, goal: Goal, *, admitted: Trajectory | None = None) -> None:
        """Follow ``goal`` from the measured state, if the arm can (:mod:`hebictl.control.admission`).

        ``admitted``: the trajectory admission planned for ``goal`` ahead of this cycle; used,
        shifted to start now, while the arm is at rest at its start (:mod:`hebictl.control.handover`),
        else the goal is admitted again here.

        Raises CommandRejected (``too_fast``, ``too_strong``, ``out_of_limits`` as
        :class:`~hebictl.errors.LimitViolation`, ...) naming the joint; rejected while stopped
        or without feedback."""
        if self.supervisor.level is ArmState.STOPPED:
            raise CommandRejected("stopped", "the arm is stopped; clear_fault() first")
        if not self.cycle.have_feedback:
            raise CommandRejected("no_feedback", "no feedback received yet; call update() first")
        if goal.dof != self.dof:
            raise CommandRejected("wrong_length", f"goal has {goal.dof} joints, the arm {self.dof}")
        start = self.current_state()
        trajectory = retime(admitted, start, self.cycle.now) if admitted is not None else None
        if trajectory is None:
            trajectory = plan(goal, self.cycle.now, start, self.limits, self.model, keepalive=self._keepalive)
        self._anchor()  # the joints the trajectory starts at their measured position start there
        fb = self.last_feedback.position  # a goal from outside the limits may move back in
        self.supervisor.recovery = recovery_range(self.limits, np.minimum(start[0], fb), np.maximum(start[0], fb))
        was_hold = self.supervisor.level is ArmState.HOLD
        self.supervisor.set_level(Level.GOAL)
        self._fire(Trigger.GOAL, Follow(trajectory))
        if was_hold:
            self._record(EventKind.GOAL, "new goal accepted; leaving hold")

    def cancel_goal(self) -> None:
        """Drop the goal and brake to a hold (hebi-py drops to no command; holding is the safer
        default for a controller that may be carrying a load); with idle ``gravcomp``, hand-guiding."""
        if self.supervisor.mode is not _FOLLOW:
            return
        if self.supervisor.idle is IdleBehaviour.HOLD:
            self._to_brake(self.cycle.now)
        else:
            self._fire(Trigger.GRAVCOMP)

    @property
    def goal_progress(self) -> float:
        """The trajectory's time fraction, 0..1 (1 once its time is up, reached or not)."""
        m = self.supervisor.motion
        return m.progress(self.cycle.now) if isinstance(m, Follow) else 0.0

    @property
    def at_goal(self) -> bool:
        """True once the trajectory has ended AND every measured position is within
        ``safety.at_goal_position_tolerance`` of the goal AND every joint is slower than
        ``safety.at_goal_velocity_tolerance`` (a NaN velocity reading is not checked)."""
        m = self.supervisor.motion
        if not isinstance(m, Follow) or self.supervisor.level is not _RUNNING:
            return False
        fb, s = self.last_feedback, self.safety
        return m.reached(self.cycle.now, fb.position, fb.velocity, s.at_goal_position_tolerance,
                         s.at_goal_velocity_tolerance)

    # ------------------------------------------------------------------ safety actions
    @property
    def braking(self) -> bool:
        """True while a brake ramp (stop, hold, cancel or clear) is still decelerating."""
        return self.supervisor.mode is _BRAKE

    @property
    def jogging(self) -> Jogging | None:
        """The running jog (its sample, command and scales) while ``mode`` is ``jog``, else None."""
        m = self.supervisor.motion
        return m if isinstance(m, Jogging) else None

    def start_jog(self, jog: Jogging) -> None:
        """Jog (:class:`~hebictl.control.modes.Jogging`, built from the commanded state): from a hold,
        a goal, a brake or hand-guiding, while running. A hold that damped a brake's ringing goes on
        damping under the jog. Raises CommandRejected while the arm is stopped or held (a hold is left
        with :meth:`clear_fault` first)."""
        sup = self.supervisor
        if sup.level is not _RUNNING:
            raise CommandRejected(sup.level.value, f"the arm is {sup.level.value}; clear_fault() first")
        m = sup.motion
        jog.damps = isinstance(m, Holding) and m.damps
        self._fire(Trigger.JOG, jog)

    def end_jog(self) -> None:
        """End a running jog: brake from its commanded state if the arm moves, else hold where its
        command is (the same as :meth:`hold` without the latch level and the event)."""
        if self.supervisor.mode is _JOG:
            self._stop_or_hold(self.clock.now())

    def hold(self, position: ArrayLike | None = None, *, reason: EventKind | str = EventKind.HOLD,
             detail: str = "operator hold") -> None:
        """Hold ``position``, or (default) brake from the measured velocity within the rated
        deceleration and hold where the arm comes to rest. Not latched: a new goal leaves HOLD."""
        if self.supervisor.level is ArmState.STOPPED:
            return
        self.supervisor.set_level(Level.HOLD)
        if position is None:
            self._stop_or_hold(self.clock.now(), measured=self.supervisor.mode is _GRAVCOMP)
        else:
            self._hold_at(np.asarray(position, dtype=np.float64))
        self.supervisor.check()
        self._record(reason, detail)

    @property
    def default_stop_behaviour(self) -> StopBehaviour:
        """What :meth:`stop` does without ``behaviour`` (config ``user_data.safety.stop_behaviour``)."""
        return self.safety.stop_behaviour

    @property
    def stop_behaviour(self) -> StopBehaviour | None:
        """The behaviour asked for while STOPPED (a damp asked for during a brake starts once the arm
        is still), else None."""
        latch = self.supervisor.latch
        return latch.behaviour if latch is not None else None

    def stop(self, reason: EventKind | str = EventKind.ESTOP, detail: str = "stop requested", *,
             behaviour: StopBehaviour | str | None = None) -> None:
        """Latched stop (until :meth:`clear_fault`) doing ``behaviour`` (default: the config's, hold).

        ``hold``: brake from the measured velocity to standstill within the rated deceleration,
        then hold the position under gravity compensation, also when feedback is lost. ``damp``:
        gravity compensation plus joint damping, no position target. ``release``: command nothing;
        a brakeless arm falls. A moving arm brakes first whatever the behaviour, and a running
        brake is never dropped: a ``damp`` or ``release`` asked for while braking starts once the
        arm is still.
        """
        self._stop(reason, detail, behaviour, measured=False)

    def _stop(self, reason: EventKind | str, detail: str, behaviour: StopBehaviour | str | None, *,
              measured: bool) -> None:
        b = self.safety.stop_behaviour if behaviour is None else StopBehaviour(behaviour)
        now = self.clock.now()
        sup = self.supervisor
        sup.set_level(Level.STOP, Latch(str(EventKind(reason).value), detail, b))
        if b is StopBehaviour.HOLD:
            if sup.mode is _BRAKE:
                self._to_brake(now, measured)
                sup.brake_then(None)  # the stricter stop: the brake ends in a hold
            elif sup.mode is _DAMP or sup.mode is _RELEASE or sup.mode is _GRAVCOMP or sup.mode is _FOLLOW \
                    or sup.mode is _JOG or self._moving():
                live = sup.mode is _HOLDING or sup.mode is _FOLLOW or sup.mode is _JOG
                self._stop_or_hold(now, measured or not live)
            else:  # a still hold: where its command is now
                self._hold_at(measured=measured)
        else:
            trigger = Trigger.DAMP if b is StopBehaviour.DAMP else Trigger.RELEASE
            if sup.mode is _BRAKE or (self._moving() and sup.mode is not _DAMP and sup.mode is not _RELEASE):
                self._to_brake(now, measured)
                sup.brake_then(trigger)  # after the brake, once the arm is still
            else:
                self._fire(trigger)
            if b is StopBehaviour.RELEASE:
                log.warning("arm release asked for: commanding nothing once still. X- and R-series modules "
                            "have no brakes: the arm will fall unless it is supported")
        sup.check()
        self._record(reason, f"{detail} [{b.value}]")

    def react(self, kind: EventKind | str, detail: str, reaction: Reaction | str) -> None:
        """What an execution monitor's finding does (:mod:`hebictl.control.monitors`).

        ``event``: record only. ``hold``: brake from the measured state, then hold at the measured
        standstill (state HOLD). ``stop``: a latched hold stop anchored at the measured state (for
        a contact this is the compliant hold: never the pre-contact command). ``damp``: a latched
        damp stop (braking first if moving).

        "Measured" means a sample from this cycle: a finding after a cycle without fresh feedback
        (``command_lost`` while a module is gone) keeps the command the stop it follows anchored; an
        older sample is behind a moving arm, and re-anchoring to it would step the command back."""
        try:
            r = Reaction(reaction)
        except ValueError:
            raise ConfigError(f"unknown reaction {reaction!r}; choose from {', '.join(REACTIONS)}",
                              key="reaction") from None
        measured = self.cycle.fresh(within=1.5 * self.cycle.nominal)
        if r is Reaction.STOP or r is Reaction.DAMP:
            self._stop(kind, detail, StopBehaviour.HOLD if r is Reaction.STOP else StopBehaviour.DAMP,
                       measured=measured)
            return
        if r is Reaction.HOLD and self.supervisor.level is not ArmState.STOPPED:
            self.supervisor.set_level(Level.HOLD)
            self._stop_or_hold(self.clock.now(), measured=measured)
        self._record(kind, detail)

    def set_payload(self, mass: float, com: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Include an end-effector payload of ``mass`` [kg] at ``com`` [m, end-effector frame] in the
        gravity model (hold, stops, the monitors), as HEBI users declare end-effector payloads;
        ``mass=0`` removes it. ``arm.payload_estimate['mass_kg']`` is what the monitor measured."""
        self.loads.declare(mass, com)

    @property
    def payload(self) -> Payload | None:
        """The payload :meth:`set_payload` declared (in the gravity model), else None."""
        return self.loads.payload

    @property
    def payload_feedforward(self) -> PayloadFeedForward:
        """The unknown end-effector load's feed-forward (:mod:`hebictl.control.payload_feedforward`)."""
        return self.loads.feedforward

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

    def set_idle(self, idle: IdleBehaviour | str) -> None:
        """Choose what to command without a goal: ``"hold"`` or ``"gravcomp"`` (hand-guiding).
        Takes effect at once when the arm is idle (holding, running); a goal or a brake finishes first."""
        sup = self.supervisor
        sup.idle = IdleBehaviour.parse(idle)
        if sup.level is not _RUNNING:
            return
        if sup.idle is IdleBehaviour.GRAVCOMP and sup.mode is _HOLDING:
            self._fire(Trigger.GRAVCOMP)
        elif sup.idle is IdleBehaviour.HOLD and sup.mode is _GRAVCOMP:
            if self.cycle.have_feedback:
                self._stop_or_hold(self.clock.now(), measured=True)
            else:
                self._fire(Trigger.HOLD_AT, Holding())

    def clear_fault(self, detail: str | None = None) -> None:
        """Leave HOLD/STOPPED for RUNNING without moving: a still arm holds where it is; a moving
        one brakes from its measured velocity first (a running brake goes on), then holds.
        ``detail`` words the event (teleop: "jog by X: leaving the hold" after a plain stop)."""
        sup = self.supervisor
        if sup.level is ArmState.RUNNING:
            return
        stale = sup.mode is _DAMP or sup.mode is _RELEASE or sup.resync is not Resync.NONE
        sup.set_level(Level.CLEAR)
        if sup.mode is _BRAKE:
            sup.brake_then(None)
            if stale:
                self._to_brake(self.clock.now(), measured=True)
        elif self.cycle.have_feedback:
            self._stop_or_hold(self.clock.now(), measured=stale)
        else:
            self._fire(Trigger.HOLD_AT, Holding())
        if self._fresh():
            sup.resync = Resync.NONE
        sup.check()
        what = "braking, then holding where the arm stops" if sup.mode is _BRAKE else "holding where the arm is"
        self._record(EventKind.CLEARED, detail if detail is not None else f"fault cleared; {what}")

    @property
    def m_stopped(self) -> bool:
        """True while a module reports its M-stop pressed (``hebi.arm.Arm.m_stopped``)."""
        return bool(np.any(self.last_feedback.mstop == 1.0))  # a plain bool: it goes into JSON

    @property
    def last_command_time(self) -> float | None:
        """[s, arm clock] when the last command the modules got was computed; None before the first
        (:class:`~hebictl.control.lifetime.CommandLifetime`)."""
        return self.lifetime.last_command_time

    @property
    def command_lifetime(self) -> float:
        """[s] the modules' command lifetime: no command older than this is sent (inf: none)."""
        return self.lifetime.lifetime

    @property
    def dt(self) -> float:
        """[s] this cycle's length (between its read and the one before)."""
        return self.cycle.dt

    @property
    def nominal_period(self) -> float:
        """[s] the loop's usual period (an average that ignores gaps): the rate limiter's step bound."""
        return self.cycle.nominal

    def input_frames(self) -> FloatArray:
        """FK 'input' frames at the current feedback (computed once per cycle, on demand)."""
        if not self._input_frames_valid:
            self.model.forward_kinematics_into(self.last_feedback.position, "input", self._input_frames)
            self._input_frames_valid = True
        return self._input_frames

    def gravity_vector(self) -> FloatArray:
        """The gravity the arm weighs under: its first gravity source plugin's (an IMU's), else the model's."""
        return self.loads.gravity_vector()

    # ------------------------------------------------------------------ per-cycle command
    def _brake_step(self, braking: Braking, now: float, lead: float = 0.0) -> State | None:
        """The brake ramp at ``now + lead`` (:meth:`Braking.sample`); once it has ended, brake again
        (:meth:`Braking.may_rebrake`) or hold where the arm stopped (then a pending damp or release, or
        the idle hand-guiding). Returns the ramp's state, None once it has ended."""
        state = braking.sample(now, lead)
        if state is None and braking.may_rebrake(self._speed(), self._fresh()):
            # brake again from where the arm is rather than hold a point it runs past and is pulled back to
            # (from the measured position; the command lands there, a step onto the arm, except after a control
            # gap: then the rate limiter carries it on at most at the rated speed, no step follows a gap)
            latch = self.supervisor.latch
            gap = latch is not None and latch.cause == EventKind.CONTROL_GAP.value
            again = self._new_brake(now, self._anchor(True, apply=not gap), chase=True, again=braking)
            self.supervisor.restart_brake(again)
            state = again.ramp.state(now)
        self.trajectory_state = state
        if state is None:
            self._end_brake(braking)
        return state

    def _end_brake(self, braking: Braking) -> None:
        """The ramp has ended: hold at its stopping point (:meth:`Braking.stopping_point`), then do what
        was pending (a damp or release stop), or the idle hand-guiding."""
        c = self.cycle
        fresh = c.have_feedback and c.now - c.fresh_time <= FRESH_S
        measured = self.last_feedback.position if fresh else None
        target, over = braking.stopping_point(self._rate.last, measured, self.safety.at_goal_velocity_tolerance,
                                              self.brake_planner.payload_mass != 0.0)
        # a joint that lagged the ramp (a payload the model does not know) lands the command on it; after a
        # brake a monitor started from the measured state (a control gap: the limp arm fell, maybe faster than
        # the rated speed the ramp could start from) the rate limiter carries the command on to the arm at
        # most at the rated speed instead (no step above it after a gap)
        if over is not None and measured is not None and not braking.chase:
            np.copyto(self._rate.last, measured, where=over)
        sup = self.supervisor
        pending = sup.pending
        sup.fire(Trigger.STILL, Holding(self._anchor(command=target), after=braking.ramp))
        if pending is not None:
            self._fire(pending)
        elif sup.idle is IdleBehaviour.GRAVCOMP and sup.level is _RUNNING:
            self._fire(Trigger.GRAVCOMP)

    def _reanchor(self, now: float) -> None:
        """A fresh sample after the modules were not following the command (M-stop, a module gone,
        missed feedback): a hold or brake restarts from where the arm is (joints off by more than
        ``STALE_RAD``, or every joint after an M-stop), braking first if it moves: that brake starts
        every joint from the measured state (the joints that kept following went on with the stale
        ramp; keeping their command drove the arm tens of mm once the returned joint had stopped)."""
        sup = self.supervisor
        every = sup.resync is Resync.ALL
        mode = sup.mode
        if (mode is _HOLDING or mode is _BRAKE) and (
                every or not bool(np.all(np.abs(self._rate.last - self.last_feedback.position) <= STALE_RAD))):
            if self._speed() > 1.0:
                braking = self._new_brake(now, self._anchor(True), chase=True)
                if mode is _HOLDING:
                    self._fire(Trigger.BRAKE, braking)
                else:
                    sup.restart_brake(braking)
            else:
                pending = sup.pending
                self._hold_at(measured=every)
                if pending is not None and not self.m_stopped:
                    self._fire(pending)
        sup.resync = Resync.NONE

    def _position_command(self, now: float, cmd: Command, *, blind: bool = False) -> None:
        """Position and velocity of the mode's command (FOLLOW, BRAKE, HOLD; JOG's last); NaN otherwise.

        ``blind`` (no fresh feedback this cycle): a brake ramp is commanded at the middle of the
        period the modules will hold the command for (:data:`BLIND_LEAD` of the cycle ahead: a blind
        cycle waits ``feedback_timeout`` for feedback, so it lasts longer than the nominal period;
        half a nominal period left r6's base ringing at 0.057 rad/s, 9 mm at the end effector). A HEBI
        module holds the last position and velocity it was sent until the next command (no
        interpolation), so a ramp sampled at the cycle's start is on average half a period behind
        the ramp: the position loop pulls back by about kp x v x period / 2 (x6's base at 3.7 rad/s,
        200 Hz: 9 mrad, 0.46 N·m). With feedback the controller's damping term takes that up and
        the hold re-anchors to the measured stop; blind, the arm over-braked and ended 8 mrad short
        of the ramp, a lag the module then closed at up to 0.07 rad/s after the arm had stopped."""
        m = self.supervisor.motion
        if (self.supervisor.resync is Resync.ALL and isinstance(m, Braking | Holding)
                and np.all(np.isfinite(self._rate.last))):
            # M-stop pressed: the modules run their own strategy; the command stays where the arm was
            # last measured (no ramp advances while nothing executes it), so the release moves nothing
            self.trajectory_state = None
            cmd.position[:] = self._rate.last
            cmd.velocity.fill(0.0)
            return
        if isinstance(m, Braking):
            state = self._brake_step(m, now, BLIND_LEAD * max(self.cycle.dt, self.cycle.nominal) if blind else 0.0)
            if state is not None:
                cmd.position[:] = state[0]
                cmd.velocity[:] = state[1]
                return
            m = self.supervisor.motion
        if isinstance(m, Follow):
            self.trajectory_state = m.command(now, cmd)
            return
        self.trajectory_state = None
        if isinstance(m, Holding):
            m.command(self.last_feedback.position, cmd)
        elif isinstance(m, Jogging):  # the jog's last command; its law runs among the plugins (_run_plugins)
            m.placeholder(cmd)
            if blind:
                cmd.velocity.fill(0.0)
        else:
            cmd.position.fill(math.nan)
            cmd.velocity.fill(math.nan)

    def _finish(self, fb_position: FloatArray) -> None:
        """Clamp the command to the limits, rate-limit the position to the rated speed (over at most
        the nominal period: after a gap no step is larger than one cycle's) and brake it before a
        position limit (it reaches the limit at rest, within the rated deceleration)."""
        cmd = self.pending_command
        mode = self.supervisor.mode
        recovering = (self.supervisor.recovery if mode is _FOLLOW or mode is _HOLDING or mode is _BRAKE or mode is _JOG
                      else None)
        if self._rate.clamp_and_apply(cmd.position, cmd.velocity, cmd.effort, self.cycle.rate_dt, fb_position,
                                      recovering) and (mode is _HOLDING or mode is _BRAKE or mode is _JOG):
            # a hold or ramp the command is carried on to (after a brake from the measured state): the
            # position moves at most at the rated speed, the velocity command stays the mode's own (zero,
            # or the ramp's), not the rated speed the limiter moves at (fed forward, that kicked a
            # just-stopped arm: r6's elbow swung 0.6 rad/s after a module's return); a jog's limited joints
            # too, as when the jog ran on top of a hold (kept so: the jog tests' bounds were measured so)
            state = self.trajectory_state if mode is _BRAKE else None
            limited = self._rate.limited
            cmd.velocity[limited] = state[1][limited] if state is not None else 0.0

    def _latched_command(self, now: float, feedback_ok: bool) -> None:
        """What the latched stop commands this cycle (see :meth:`stop`): no plugins but the mirror."""
        cmd = self.pending_command
        if self.supervisor.mode is _BRAKE or self.supervisor.mode is _HOLDING:
            self._position_command(now, cmd, blind=not feedback_ok)
        m = self.supervisor.motion
        if isinstance(m, Release):
            m.command(cmd)
            self._rate.reset()
            self.trajectory_state = None
            return
        fb = self.last_feedback
        if isinstance(m, Damp):  # gravity + damping at the feedback; without feedback the modules' velocity loop damps
            self.trajectory_state = None
            m.command(cmd, self.loads.gravity_efforts(fb.position if feedback_ok else self._last_good_position()),
                      self._damping, fb.velocity if feedback_ok else None)
        else:
            self._latched_position_efforts(cmd, feedback_ok)
        for plugin in self.plugins:
            if plugin.runs_while_stopped:
                plugin.update(self, self.cycle.dt)
        self._finish(fb.position)

    def _latched_position_efforts(self, cmd: Command, feedback_ok: bool) -> None:
        """A latched brake's or hold's efforts: gravity, the ramp's deceleration and the unknown load
        fed forward, the joints' ringing after the brake damped (no plugins run)."""
        fb = self.last_feedback
        q = fb.position if feedback_ok else cmd.position
        cmd.effort[:] = self.loads.gravity_efforts(q)
        if self.trajectory_state is not None:  # braking: feed the deceleration forward (no plugins run)
            cmd.effort += self.brake_planner.missing_effort(self.trajectory_state, ())
        self.loads.feed(q, cmd, self.trajectory_state)  # the unknown load
        if feedback_ok:  # damp the joints' ringing after the brake (same damping as 'damp'; a plausible speed)
            cmd.effort -= self._damping * np.nan_to_num(self._plausible_velocity() - cmd.velocity)

    def _blind_command(self, now: float) -> None:
        """A hold or brake command valid without feedback: position, velocity, model gravity there."""
        cmd = self.pending_command
        self._position_command(now, cmd, blind=True)
        if self.supervisor.mode is _GRAVCOMP:  # hand-guiding without feedback: the hold is safer
            self._fire(Trigger.HOLD_AT, Holding(self._anchor()))
            self._position_command(now, cmd, blind=True)
        cmd.effort[:] = self.loads.gravity_efforts(cmd.position)
        if self.trajectory_state is not None and self.supervisor.mode is _BRAKE:
            cmd.effort += self.brake_planner.brake_effort(*self.trajectory_state)
        if self.supervisor.mode is not _GRAVCOMP:
            self.loads.feed(cmd.position, cmd, self.trajectory_state)  # the unknown load
        self._finish(self.last_feedback.position)

    def update(self) -> bool:
        """Read feedback and compute the pending command. False when no usable feedback came.

        The cycle's checks in their safety order: the read, a fresh and finite sample, the M-stop and
        the limits (:meth:`_check_sample`, with the monitors), then the mode's command
        (:meth:`_command`, or the latched stop's)."""
        fb = self._fbk
        fresh = self._read(fb)
        now = self.clock.now()
        self.lifetime.computed(now)  # the command this cycle computes is as old as this
        if fresh and fb.sequence == self.cycle.sequence:
            fresh = False
        if not fresh:
            return self._on_missing_feedback(now)
        self.cycle.sequence = fb.sequence
        self._missed = 0
        # position is what every plugin and the hold need; velocity may legitimately be NaN
        # (hebi's imitation group echoes an uncommanded velocity as NaN)
        if not math.isfinite(fb.position.sum()):
            return self._on_nonfinite_position(fb, now)
        # swap buffers instead of copying: the next read refills the older one
        self._fbk, self.last_feedback = self.last_feedback, fb
        self.cycle.sampled(now)
        self._input_frames_valid = False
        self.cycle.tick(now)
        self._velocities.push(now, fb.velocity)
        joint = self._check_sample(fb, now)
        if self.supervisor.level is _STOPPED:
            self._latched_command(now, feedback_ok=True)
            return True
        if joint >= 0 and self.supervisor.level is _RUNNING:
            self._position_limit(fb, joint, now)
        return self._command(fb, now)

    def _position_limit(self, fb: Feedback, joint: int, now: float) -> None:
        """A joint beyond its limit: hold at the position clamped into the limits (reached at the rated
        speed). A joint that was already outside them without a command (it fell or swung there: the
        recovery range holds it) and goes on beyond that range is held where it is instead, braking first
        if it moves: clamped, the hold pulled the fallen arm back to its limit (r6, clear_fault() right
        after a MotorOff M-stop release: 651-671 mm)."""
        lim = self.limits
        detail = (f"joint {joint} ({self.model.joint_names[joint]}) at {fb.position[joint]:.4f} "
                  f"beyond [{lim.position_min[joint]:.4f}, {lim.position_max[joint]:.4f}]")
        if self.supervisor.recovery is None:
            self.hold(np.clip(fb.position, lim.position_min, lim.position_max), reason=EventKind.POSITION_LIMIT,
                      detail=detail)
            return
        self.supervisor.set_level(Level.HOLD)
        self._stop_or_hold(now, measured=True)
        self.supervisor.check()
        self._record(EventKind.POSITION_LIMIT, f"{detail}, outside its limits without a command: held where it is")

    def _read(self, fb: Feedback) -> bool:
        """Read the backend into ``fb``; a hardware error stops the arm (braking from the commanded state)."""
        try:
            return bool(self.backend.read(fb, self.feedback_timeout))
        except HardwareError as exc:
            self.supervisor.resync = max(self.supervisor.resync, Resync.JOINTS)
            if self.supervisor.level is not _STOPPED:  # brakes from the commanded state now (dt stays a period)
                self.stop(EventKind.HARDWARE_ERROR, str(exc))
            return False

    def _on_nonfinite_position(self, fb: Feedback, now: float) -> bool:
        """A NaN/inf position reading: hold (braking from the commanded state), commanded blind."""
        self.cycle.tick(now)
        bad = int(np.argmax(~np.isfinite(fb.position)))
        self.supervisor.resync = max(self.supervisor.resync, Resync.JOINTS)
        if self.supervisor.level is _RUNNING:
            self.hold(reason=EventKind.FEEDBACK_NAN,  # brake from the commanded state
                      detail=f"NaN/inf feedback from module {bad} ({self.backend.names[bad]})")
        if self.supervisor.level is _HOLD:
            self._blind_command(now)
        else:
            self._latched_command(now, feedback_ok=False)
        return False

    def _check_sample(self, fb: Feedback, now: float) -> int:
        """The fresh sample's checks: M-stop, firmware and position limits (one compiled call), the
        re-anchoring after the modules were not following, the execution monitors, the unknown load's
        feed-forward and the recovery range. Returns the joint beyond its limits (or range), else -1."""
        sup = self.supervisor
        lim = self.limits
        pressed, limit_joint, limit_upper, joint = cycle_kernels.feedback_faults(
            fb.position, lim.position_min, lim.position_max, lim.position_tolerance, lim.bounded, fb.mstop,
            fb.position_limit_state)
        if pressed:
            if sup.level is not _STOPPED:
                self.stop(EventKind.MSTOP, "a module's M-stop is pressed")
            sup.resync = Resync.ALL  # the modules run their M-stop strategy: the command follows the arm
        if limit_joint >= 0 or self._firmware_limit:
            self._check_firmware_limit(fb, limit_joint, limit_upper)
        if sup.resync is not Resync.NONE:
            self._reanchor(now)
            if pressed:
                sup.resync = Resync.ALL
        for f in self.monitors.after_read(self, fb, now):  # execution monitors, every fresh sample
            self.react(f.kind, f.detail, f.reaction)
        self.loads.follow(self.monitors.payload_estimate, self.cycle.dt, self._hold_target(), fb.position)
        if sup.recovery is not None:
            m = sup.motion  # a ramp's way out is kept
            sup.recovery = shrink_recovery(sup.recovery, lim, fb.position,
                                           m.ramp.target if isinstance(m, Braking) else self._rate.last)
            if sup.recovery is not None:
                joint = lim.position_violation(fb.position, sup.recovery)
        return joint

    def _command(self, fb: Feedback, now: float) -> bool:
        """The running arm's command: the mode's position and velocity, the plugins' efforts, the
        declared and the unknown payload, the brake ramp's feed-forward and the damping of a stop."""
        cmd = self.pending_command
        self._position_command(now, cmd)
        cmd.effort.fill(0.0)
        ok = self._run_plugins(fb, now)
        self.loads.declared_efforts(fb.position, cmd)
        carrying = self.loads.feedforward.mass != 0.0 and math.isfinite(float(cmd.position.sum()))
        if carrying:
            self.loads.feed(fb.position, cmd, self.trajectory_state)  # the unknown load, in every position mode
        m = self.supervisor.motion
        braking = isinstance(m, Braking)
        if braking and self.trajectory_state is not None:  # braking: feed the ramp forward
            cmd.effort += self.brake_planner.missing_effort(self.trajectory_state, self.plugins)  # (not plugins')
        if braking or (isinstance(m, Holding | Jogging) and (m.damps or carrying)):
            # damp the ringing (of the stop; of a load carried in a hold, or a jog on it, as it is taken over),
            # at a speed the arm can have (a transient reading kicked the still arm)
            cmd.effort -= self._damping * np.nan_to_num(self._plausible_velocity() - cmd.velocity)
        self._finish(fb.position)
        return ok

    def _run_plugins(self, fb: Feedback, now: float) -> bool:
        """The plugins' efforts; while jogging, the jog's law runs ahead of the first plugin that
        forwards the finished command to other modules (``forwards_command``: a double shoulder's
        mirror must forward the jog's command, not the one before it: measured on the sim's x7, the
        mirrored shoulder module held the jog's start while the other moved, and the two stopped
        fighting each other 56 mrad behind the command)."""
        ok = True
        m = self.supervisor.motion
        jog = m if isinstance(m, Jogging) else None
        for plugin in self.plugins:
            if jog is not None and plugin.forwards_command:
                self._jog_step(jog, fb, now)
                jog = None
            ok = plugin.update(self, self.cycle.dt) and ok
        if jog is not None:
            self._jog_step(jog, fb, now)
        return ok

    def _jog_step(self, jog: Jogging, fb: Feedback, now: float) -> None:
        """The jog's command (:mod:`hebictl.control.jog_law`), with its acceleration fed forward: the
        rigid-body dynamics at the commanded state, less what the feed-forward plugins added (without
        it the joints lag by their own inertia while speeding up and overshoot after stopping, and the
        end effector leaves its direction), and the unknown load's inertia. A result that is not
        finite is never commanded: the arm holds where it is instead."""
        cmd = self.pending_command
        accel = jog.command(now, self.cycle.dt, self.cycle.nominal, fb.position, fb.velocity, cmd)
        if accel is None:
            cmd.position[:] = fb.position
            cmd.velocity.fill(0.0)
            self._fire(Trigger.HOLD_AT, Holding(fb.position.copy()))
            return
        cmd.effort += self.brake_planner.missing_effort((jog.position, jog.velocity, accel), self.plugins)
        self.loads.feedforward.accelerate(accel)

    def _check_firmware_limit(self, fb: Feedback, joint: int, upper: bool) -> None:
        """Record (once per episode) a module's own position limit acting, and brake to a hold:
        the module no longer follows the command on that joint (``joint`` -1: none acts)."""
        limit = cycle_kernels.firmware_limit_side(joint, upper)
        was, self._firmware_limit = self._firmware_limit, limit is not None
        if limit is None or was:
            return
        j, side = limit
        detail = (f"module {j} ({self.backend.names[j]}): its firmware {side} position limit is acting "
                  f"(limit state {fb.position_limit_state[j]:.0f}) at {fb.position[j]:.4f}")
        if self.supervisor.level is _RUNNING:
            self.hold(reason=EventKind.FIRMWARE_LIMIT, detail=detail)
        else:
            self._record(EventKind.FIRMWARE_LIMIT, detail)

    def _last_good_position(self) -> FloatArray:
        last = self._rate.last
        if np.all(np.isfinite(last)):
            return last.copy()
        target = self._hold_target()
        if target is not None:
            return target
        return self.last_feedback.position.copy() if self.cycle.have_feedback else np.zeros(self.dof)

    def _on_missing_feedback(self, now: float) -> bool:
        self.cycle.tick(now, timeout=self.feedback_timeout)
        sup = self.supervisor
        if sup.level is _STOPPED:
            self._latched_command(now, feedback_ok=False)
            return False
        if now - self.cycle.fresh_time > self.watchdog_timeout:
            self.stop(EventKind.WATCHDOG, f"no fresh feedback for {now - self.cycle.fresh_time:.3f} s "
                                          f"(> {self.watchdog_timeout:.3f} s)")
            self._latched_command(now, feedback_ok=False)
            return False
        self._missed += 1
        if self._missed <= self.missed_feedback_limit and sup.level is _RUNNING:
            # one late sample is not a fault: keep the command moving along the trajectory (a
            # position frozen while the arm moves would brake it through its position loop)
            m = sup.motion
            if isinstance(m, Follow):
                m.command(now, self.pending_command)
                self._finish(self.last_feedback.position)
            return False
        sup.resync = max(sup.resync, Resync.JOINTS)
        if sup.level is _RUNNING and self.cycle.have_feedback:
            self.hold(reason=EventKind.FEEDBACK_LOST,  # brake from the commanded state
                      detail=f"no fresh feedback for {self._missed} cycles")
        if self.cycle.have_feedback or self._hold_target() is not None:
            self._blind_command(now)
        return False

    def _keepalive(self) -> None:
        """Re-send the pending command while a goal's path is being checked (:meth:`set_goal`): a
        check must not let the modules' command run out while it is younger than their lifetime. The
        same command is sent again, so nothing steps; a write error is left for the next :meth:`send`
        to report. Never a command older than the command lifetime (computed before the arm may have
        fallen: re-sent, it drove r6 237 mm back at 4.8x rated), and it does not count as a cycle: a
        check longer than the lifetime is a control gap like any other stall (the next read names it)."""
        now = self.clock.now()
        if not self.lifetime.keepalive_due(now):
            return  # nothing commanded yet (no lifetime to keep), too old to send, or recently enough
        try:
            self.backend.write(self.pending_command)
            self.lifetime.keepalive_at = now
            for plugin in self.plugins:  # e.g. a double shoulder's mirror module
                plugin.send(self)
        except HardwareError:
            return

    def send(self) -> bool:
        """Write the pending command to the modules (and plugins' extra modules), then check that it
        was delivered (:mod:`hebictl.control.monitors`: a failed write or a wrong echo is ``command_lost``).

        A command computed longer than the command lifetime ago (a stall between :meth:`update` and
        here) is not sent: it was computed where the arm was before the modules went limp, and would
        drive the fallen arm back; the next :meth:`update` names the gap (``control_gap``) and anchors
        where the arm is then. Returns False then."""
        computed = self.lifetime.sendable(self.clock.now())
        if computed is None:
            return False
        self.monitors.before_send(self.pending_command)  # marks it for the echo check
        try:
            ok = self.backend.write(self.pending_command)
            self.lifetime.last_command_time = computed  # the answering modules got this cycle's command
        except HardwareError as exc:
            self.supervisor.resync = max(self.supervisor.resync, Resync.JOINTS)
            if self.supervisor.level is not _STOPPED:
                self.stop(EventKind.HARDWARE_ERROR, str(exc))
            ok = False
        written = ok
        for plugin in self.plugins:
            ok = plugin.send(self) and ok
        for f in self.monitors.after_send(self, written, self.pending_command):
            self.react(f.kind, f.detail, f.reaction)
        return ok
