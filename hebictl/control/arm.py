"""The Arm: one robot model, one hardware backend, a trajectory and plugins, stepped by update/send.

API mirrors ``hebi.arm.Arm`` (``update``, ``send``, ``set_goal``, ``cancel_goal``, ``at_goal``,
``goal_progress``, ``pending_command``, ``last_feedback``) so HEBI users feel at home; on top of
it the arm owns its safety state (:mod:`hebictl.control.safety`): faults in the loop end in a
hold or a stop within the same cycle instead of an exception, and no stop drops a brakeless arm
unless ``release`` is asked for explicitly.

The arm's motion state lives in one :class:`~hebictl.control.supervisor.Supervisor`: the mode as a
value that owns its data (:mod:`hebictl.control.modes`: follow, jog, brake, hold, damp, gravcomp,
release), the latch level (running, hold, stopped), the latched stop and the stop pending after a
brake, changed only through its transition table. Every mode starts from the MEASURED state
(:mod:`hebictl.control.modes.start`): the last command is kept (no step) only for a joint whose
modules were executing it and which is within ``STALE_RAD`` of it; otherwise (the M-stop was
pressed, a module was gone, the arm was released or damped, an obstacle held it) the joint starts
where it is. A new trajectory and every brake start from the measured velocity. See
``docs/supervisor.md``.

This module is the public facade and the cycle. Per cycle: ``update()`` reads feedback, checks it
(M-stop, limits, the execution monitors), asks the current mode for its command
(:mod:`hebictl.control.modes.command`, which dispatches to each mode value's own law in
:mod:`hebictl.control.modes`), runs the plugins, and filters the command (clamped to the limits,
the position rate-limited to the rated speed: :mod:`hebictl.control.motion`); ``send()`` writes it
(and plugins' extra modules). The modes' laws see the arm only through a
:class:`~hebictl.control.modes.context.ModeContext`.
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
from hebictl.control.cycle_clock import CycleClock
from hebictl.control.extra_modules import ExtraModules
from hebictl.control.goal import Goal
from hebictl.control.handover import retime
from hebictl.control.lifetime import KEEPALIVE_PERIOD, CommandLifetime
from hebictl.control.loads import Loads
from hebictl.control.modes import Braking, Follow, Holding, Jogging, MotionMode
from hebictl.control.modes.command import BLIND_LEAD as BLIND_LEAD
from hebictl.control.modes.command import blind_command, finish, latched_command, position_command, running_efforts
from hebictl.control.modes.context import STALE_RAD, ModeContext
from hebictl.control.modes.context import State as State
from hebictl.control.modes.start import hold_at, reanchor, stop_or_hold, to_brake
from hebictl.control.monitors import MonitorSuite, Payload, goal_status
from hebictl.control.monitors.timing import sample_time
from hebictl.control.motion import RateLimiter, recovery_range, shrink_recovery
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
#: what :meth:`Arm.react` accepts (the monitors' reactions: :class:`Reaction`'s values)
REACTIONS = tuple(r.value for r in Reaction)
#: samples taken before a control gap ran out (delivered after it) skipped in a row at most
#: (:meth:`Arm._taken_before_the_gap`)
STALE_SKIPS = 3


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
        self.watchdog_timeout = float(watchdog_timeout)
        self.missed_feedback_limit = int(missed_feedback_limit)
        self._missed = 0
        self._stale_skips = 0  # samples from before a control gap ran out, skipped in a row
        hz = backend.feedback_frequency
        self.feedback_timeout = float(feedback_timeout if feedback_timeout is not None
                                      else (2.0 / hz if hz > 0 else 0.1))
        self.events = EventLog(start=clock.now())  # log lines count from the arm's start
        #: the whole motion state: mode value, latch level and latch, pending stop (see supervisor.py)
        self.supervisor = Supervisor(Mode.HOLD)
        self.pending_command = Command.empty(self.dof)
        self.last_feedback = Feedback.empty(self.dof)
        self._fbk = Feedback.empty(self.dof)
        hz0 = backend.feedback_frequency
        #: this cycle's time and length, the loop's nominal period, the last fresh sample (:mod:`.cycle_clock`)
        self.cycle = CycleClock(clock.now(), 1.0 / hz0 if hz0 > 0 else 0.01)
        #: the pending and the delivered command's ages against the modules' lifetime (:mod:`.lifetime`)
        self.lifetime = CommandLifetime(float(getattr(backend, "command_lifetime", 0.0) or 0.0))
        self.brake_planner = BrakePlanner(model, self.limits)
        self._firmware_limit = False  # a module's firmware limit was acting at the last feedback
        self.module_safety: Any = None  # the modules' own safety settings, when the config gives them
        self._input_frames = np.empty((model.frame_count("input"), 4, 4))
        self._input_frames_valid = False
        self.plugins: list[ArmPlugin] = []
        #: the gravity vector, the declared payload and the unknown load's feed-forward (:mod:`.loads`)
        self.loads = Loads(model, self.plugins, measured=bool(getattr(backend, "measures_effort", True)))
        #: what the modes' laws see of the arm (:mod:`hebictl.control.modes.context`): the command filter
        #: whose last command every mode starts from, the samples' velocities judged for plausibility (a
        #: brake starts only from a plausible one), the stop damping, this cycle's reference state
        self.mode_context = ModeContext(
            model=model, limits=self.limits, safety=self.safety,
            damping=self.safety.damping if self.safety.damping is not None else default_damping(self.limits),
            planner=self.brake_planner, loads=self.loads, cycle=self.cycle,
            rate=RateLimiter(self.limits.velocity_max, self.limits),
            velocities=PlausibleVelocity(self.dof, self.limits.velocity_max, self._max_acceleration, STALE_RAD),
            supervisor=self.supervisor, command=self.pending_command, feedback=self.last_feedback,
            plugins=self.plugins, record=self._record, payload_estimate=lambda: self.monitors.payload_estimate)
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

    def _max_acceleration(self, q: FloatArray) -> FloatArray:
        """:meth:`BrakePlanner.max_acceleration` at ``q`` under the arm's gravity (cached by
        :class:`~hebictl.control.plausible.PlausibleVelocity`)."""
        return self.brake_planner.max_acceleration(q, self.loads.gravity_vector())

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
        ctx = self.mode_context
        p = ctx.anchor(apply=False)
        last = ctx.rate.last
        commanded = self.pending_command.velocity
        kept = ctx.live() and self.supervisor.resync is Resync.NONE
        kept_joints = np.isfinite(last) & (p == last) & np.isfinite(commanded) if kept else np.zeros(self.dof, bool)
        v = ctx.measured_velocity(self.cycle.now)
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
        self.mode_context.anchor()  # the joints the trajectory starts at their measured position start there
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
            to_brake(self.mode_context, self.cycle.now)
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
            stop_or_hold(self.mode_context, self.clock.now())

    def hold(self, position: ArrayLike | None = None, *, reason: EventKind | str = EventKind.HOLD,
             detail: str = "operator hold") -> None:
        """Hold ``position``, or (default) brake from the measured velocity within the rated
        deceleration and hold where the arm comes to rest. Not latched: a new goal leaves HOLD."""
        if self.supervisor.level is ArmState.STOPPED:
            return
        self.supervisor.set_level(Level.HOLD)
        if position is None:
            stop_or_hold(self.mode_context, self.clock.now(), measured=self.supervisor.mode is _GRAVCOMP)
        else:
            hold_at(self.mode_context, np.asarray(position, dtype=np.float64))
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
        sup, ctx = self.supervisor, self.mode_context
        sup.set_level(Level.STOP, Latch(str(EventKind(reason).value), detail, b))
        if b is StopBehaviour.HOLD:
            if sup.mode is _BRAKE:
                to_brake(ctx, now, measured)
                sup.brake_then(None)  # the stricter stop: the brake ends in a hold
            elif sup.mode is _DAMP or sup.mode is _RELEASE or sup.mode is _GRAVCOMP or sup.mode is _FOLLOW \
                    or sup.mode is _JOG or ctx.moving():
                live = sup.mode is _HOLDING or sup.mode is _FOLLOW or sup.mode is _JOG
                stop_or_hold(ctx, now, measured or not live)
            else:  # a still hold: where its command is now
                hold_at(ctx, measured=measured)
        else:
            trigger = Trigger.DAMP if b is StopBehaviour.DAMP else Trigger.RELEASE
            if sup.mode is _BRAKE or (ctx.moving() and sup.mode is not _DAMP and sup.mode is not _RELEASE):
                to_brake(ctx, now, measured)
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
            stop_or_hold(self.mode_context, self.clock.now(), measured=measured)
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
                stop_or_hold(self.mode_context, self.clock.now(), measured=True)
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
                to_brake(self.mode_context, self.clock.now(), measured=True)
        elif self.cycle.have_feedback:
            stop_or_hold(self.mode_context, self.clock.now(), measured=stale)
        else:
            self._fire(Trigger.HOLD_AT, Holding())
        if self.cycle.fresh():
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

    @property
    def trajectory_state(self) -> State | None:
        """This cycle's reference state (position, velocity, acceleration) of a trajectory or brake ramp
        (None in the other modes): what the mode's law commands, for plugins and the recorder."""
        return self.mode_context.reference

    @trajectory_state.setter
    def trajectory_state(self, state: State | None) -> None:
        self.mode_context.reference = state

    # ------------------------------------------------------------------ per-cycle command
    def _latched_command(self, now: float, feedback_ok: bool) -> None:
        """What the latched stop commands this cycle (see :meth:`stop`): the stop's mode
        (:func:`~hebictl.control.modes.command.latched_command`), no plugins but the mirror."""
        ctx = self.mode_context
        if not latched_command(ctx, now, feedback_ok):
            return  # a release commands nothing
        self._mirror_command()
        finish(ctx, self.last_feedback.position)

    def _mirror_command(self) -> None:
        """Run the plugins that only mirror the arm's own command (``runs_while_stopped``: a double
        shoulder's second module) on a cycle that runs no others and commands fresh efforts: a latched
        stop's or a blind hold's or brake's (a late sample's carried-on goal keeps the last efforts, which
        the mirror halved already, and its last command: at most ``missed_feedback_limit`` cycles). Not
        run on the blind cycles, the mirror module kept the last command before the feedback froze (x7:
        52 mrad and 0.55 rad/s from the primary's blind brake, at the full effort on the primary) until the
        watchdog's stop synced it, and the shoulder swung at up to 0.14 rad/s in the hold after that."""
        for plugin in self.plugins:
            if plugin.runs_while_stopped:
                plugin.update(self, self.cycle.dt)

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
        if self._taken_before_the_gap(fb, now):
            return False
        self._missed = 0
        # position is what every plugin and the hold need; velocity may legitimately be NaN
        # (hebi's imitation group echoes an uncommanded velocity as NaN)
        if not math.isfinite(fb.position.sum()):
            return self._on_nonfinite_position(fb, now)
        # swap buffers instead of copying: the next read refills the older one
        self._fbk, self.last_feedback = self.last_feedback, fb
        self.mode_context.feedback = fb
        self.cycle.sampled(now)
        self._input_frames_valid = False
        self.cycle.tick(now)
        # each velocity at its own sample's time: what could change between two samples is judged over the
        # time between them, not between their arrivals (a sample stamped before a stall that arrived after
        # it, then the next: 5 ms apart as read, 800 ms as measured; the fall between them was implausible)
        self.mode_context.velocities.push(sample_time(fb, now)[0], fb.velocity)
        joint = self._check_sample(fb, now)
        if self.supervisor.level is _STOPPED:
            self._latched_command(now, feedback_ok=True)
            return True
        if joint >= 0 and self.supervisor.level is _RUNNING:
            self._position_limit(fb, joint, now)
        return self._command(fb, now)

    def _taken_before_the_gap(self, fb: Feedback, now: float) -> bool:
        """A new sample that arrives after a control gap but was taken before the modules' command ran
        out (a stall between the sample and its delivery: the whole process stopped inside a read, a
        buffered sample) shows the arm before it fell. Nothing is judged, computed or sent from it (the
        cycle's command counts as old as the sample, so :meth:`send` refuses it); the next sample, taken
        after the fall, names the gap and anchors the hold where the arm is. Anchored on the old one, the
        hold drove the fallen arm back up: 334 mm (x6) and 260 mm (r6) after a 0.8 s stall on the sim.
        At most :data:`STALE_SKIPS` samples in a row (a module clock that disagrees with the arm's cannot
        keep the arm from being commanded)."""
        last, lifetime = self.lifetime.last_command_time, self.lifetime.lifetime
        if last is None or now - last <= lifetime or self._stale_skips >= STALE_SKIPS:
            self._stale_skips = 0
            return False
        taken, _ = sample_time(fb, now)
        if taken >= last + lifetime:  # taken after the command ran out: it shows the fall
            self._stale_skips = 0
            return False
        self._stale_skips += 1
        self.lifetime.computed(taken)
        return True

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
        stop_or_hold(self.mode_context, now, measured=True)
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
            blind_command(self.mode_context, now)
            self._mirror_command()  # as on a cycle without feedback (x7's NaN row: still 0.455 s without it)
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
            reanchor(self.mode_context, now)
            if pressed:
                sup.resync = Resync.ALL
        for f in self.monitors.after_read(self, fb, now):  # execution monitors, every fresh sample
            if "let_go_kg" in f.values:  # the estimated load is gone: its feed-forward goes with it
                self.loads.feedforward.let_go()
            self.react(f.kind, f.detail, f.reaction)
        self.loads.follow(self.monitors.payload_estimate, self.cycle.dt, self.mode_context.hold_target(), fb.position)
        if sup.recovery is not None:
            m = sup.motion  # a ramp's way out is kept
            sup.recovery = shrink_recovery(sup.recovery, lim, fb.position,
                                           m.ramp.target if isinstance(m, Braking) else self.mode_context.rate.last)
            if sup.recovery is not None:
                joint = lim.position_violation(fb.position, sup.recovery)
        return joint

    def _command(self, fb: Feedback, now: float) -> bool:
        """The running arm's command: the mode's position and velocity, the plugins' efforts, the
        declared payload, then the mode's efforts (the unknown payload, the brake ramp's feed-forward and
        the damping of a stop: :func:`~hebictl.control.modes.command.running_efforts`), filtered."""
        ctx = self.mode_context
        cmd = self.pending_command
        position_command(ctx, now, cmd)
        cmd.effort.fill(0.0)
        ok = self._run_plugins(fb, now)
        self.loads.declared_efforts(fb.position, cmd)
        running_efforts(ctx, fb)
        finish(ctx, fb.position)
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
                jog.step(self.mode_context, fb, now)
                jog = None
            ok = plugin.update(self, self.cycle.dt) and ok
        if jog is not None:
            jog.step(self.mode_context, fb, now)
        return ok

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
                finish(self.mode_context, self.last_feedback.position)
            return False
        sup.resync = max(sup.resync, Resync.JOINTS)
        if sup.level is _RUNNING and self.cycle.have_feedback:
            self.hold(reason=EventKind.FEEDBACK_LOST,  # brake from the commanded state
                      detail=f"no fresh feedback for {self._missed} cycles")
        if self.cycle.have_feedback or self.mode_context.hold_target() is not None:
            blind_command(self.mode_context, now)
            self._mirror_command()
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
