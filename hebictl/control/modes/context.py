"""What the modes' laws see of the arm: :class:`ModeContext`, a narrow view built once by the Arm.

A mode's law (the brake ramp's sampling and end, the hold's anchoring, the jog's step, the cycle's
questions to the mode in :mod:`hebictl.control.modes.command`) reads the measured state and writes
the command through this view, never through the whole :class:`~hebictl.control.arm.Arm`: the
model, the limits and safety settings, the braking physics, the loads, the cycle's clock, the
command filter (whose last command every mode starts from), the plausible velocities, the
supervisor (the motion state), the command buffer, the plugins (their declared capabilities only)
and two callables (record an event; the monitors' payload estimate).

The Arm keeps :attr:`feedback` the last fresh sample (it swaps its read buffers each cycle);
:attr:`reference` is this cycle's reference sample of the mode's law, what ``Arm.trajectory_state``
reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.modes.follow import Follow
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.kinds import Mode, Resync, Trigger
from hebictl.control.motion import recovery_range
from hebictl.control.safety import EventKind

if TYPE_CHECKING:
    from hebictl.control.braking import BrakePlanner
    from hebictl.control.cycle_clock import CycleClock
    from hebictl.control.loads import Loads
    from hebictl.control.modes import MotionMode
    from hebictl.control.motion import RateLimiter
    from hebictl.control.plausible import PlausibleVelocity
    from hebictl.control.plugins import ArmPlugin
    from hebictl.control.safety import Limits
    from hebictl.control.settings import SafetySettings
    from hebictl.control.supervisor import Supervisor
    from hebictl.hardware.base import Command, Feedback
    from hebictl.model.robot import RobotModel

__all__ = ["STALE_RAD", "ModeContext", "State"]

#: [rad or m] a joint whose last command is further than this from its measured position was not
#: following it (a stale command): a new mode starts that joint from the measured position. Above
#: the tracking lag at rated speed (~20 mrad on the bundled kits) and a hold's sag under 1 kg.
STALE_RAD = 0.1
State = tuple[FloatArray, FloatArray, FloatArray]
# Enum member lookups go through a descriptor on every access; the hot path compares against these.
_FOLLOW, _JOG, _BRAKE, _HOLDING = Mode.FOLLOW, Mode.JOG, Mode.BRAKE, Mode.HOLD


class ModeContext:
    """The part of an arm the modes' laws read and write (see the module docstring)."""

    __slots__ = ("command", "cycle", "damping", "dof", "feedback", "limits", "loads", "model", "payload_estimate",
                 "planner", "plugins", "rate", "record", "reference", "safety", "supervisor", "velocities")

    def __init__(self, *, model: RobotModel, limits: Limits, safety: SafetySettings, damping: FloatArray | float,
                 planner: BrakePlanner, loads: Loads, cycle: CycleClock, rate: RateLimiter,
                 velocities: PlausibleVelocity, supervisor: Supervisor, command: Command, feedback: Feedback,
                 plugins: list[ArmPlugin], record: Callable[[EventKind | str, str], None],
                 payload_estimate: Callable[[], dict[str, Any] | None]) -> None:
        self.model = model
        self.dof = model.dof
        self.limits = limits
        self.safety = safety
        #: the stop damping gain (a brake's, a damped hold's and jog's, the damp stop's)
        self.damping = damping
        self.planner = planner
        self.loads = loads
        self.cycle = cycle
        #: the command filter (rated speed, limit approach) and the last command every mode starts from
        self.rate = rate
        self.velocities = velocities
        self.supervisor = supervisor
        #: the command buffer the cycle writes (the Arm's ``pending_command``)
        self.command = command
        #: the last fresh sample (the Arm's ``last_feedback``)
        self.feedback = feedback
        self.plugins = plugins
        self.record = record
        self.payload_estimate = payload_estimate
        #: this cycle's reference state (position, velocity, acceleration) of a trajectory or brake ramp
        self.reference: State | None = None

    def fire(self, trigger: Trigger, value: MotionMode | None = None) -> None:
        self.supervisor.fire(trigger, value)

    def hold_target(self) -> FloatArray | None:
        """The current hold's target (None: not holding, or not anchored yet)."""
        m = self.supervisor.motion
        return m.target if isinstance(m, Holding) else None

    def fresh(self) -> bool:
        """The last feedback is from this cycle or the one before (within 50 ms)."""
        return self.cycle.fresh()

    def speed(self) -> float:
        """The fastest joint's measured speed / its at-goal tolerance (>1: moving); 0 without feedback."""
        if not self.cycle.have_feedback:
            return 0.0
        v = np.nan_to_num(self.feedback.velocity)
        return float(np.max(np.abs(v))) / self.safety.at_goal_velocity_tolerance if v.size else 0.0

    def moving(self) -> bool:
        return self.supervisor.mode is _FOLLOW or self.supervisor.mode is _BRAKE or self.speed() > 1.0

    def live(self) -> bool:
        """The modules are executing the position command (following, jogging, braking or holding; no M-stop
        since): a brake may start from it, however far the arm lags, without a step."""
        mode = self.supervisor.mode
        return self.supervisor.resync is not Resync.ALL and (mode is _FOLLOW or mode is _BRAKE or mode is _HOLDING
                                                             or mode is _JOG)

    def measured_velocity(self, now: float, cap: float = 1.0) -> FloatArray:
        """The measured velocity (a NaN reading, or no sample within the last 50 ms: the last commanded
        velocity, which the modules are following), within ``cap`` x the rated speed. A sample a few
        cycles old is a better guess than the command: near its rated speed an arm does not reach the
        commanded speed (its motors run out of voltage; r6's base moved 3.37 rad/s under a 3.70 rad/s
        command), and a brake ramp from the command's speed left it 30-45 mrad behind, ringing."""
        m = self.supervisor.motion
        cmd_v = (m.velocity(now) if isinstance(m, Follow)  # the command now
                 else np.nan_to_num(self.command.velocity))
        fresh = self.cycle.fresh(now)
        if fresh:
            reading = self.plausible_velocity()
            v = np.where(np.isfinite(reading), reading, cmd_v)
        else:
            v = cmd_v
        vmax = self.limits.velocity_max if cap == 1.0 else cap * self.limits.velocity_max
        return np.clip(v, -vmax, vmax)

    def plausible_velocity(self) -> FloatArray:
        """The last sample's velocity where the actuators can have reached it, else the earlier
        samples' (:mod:`hebictl.control.plausible`); an implausible reading is a
        ``feedback_implausible`` event, once per sample."""
        fb = self.feedback
        c = self.cycle
        judged, new = self.velocities.judge(c.sequence, fb.position, fb.velocity, self.velocities.history.latest_time,
                                            self.command.velocity, c.nominal)
        if new and bool(judged.implausible.any()):
            self.record(EventKind.FEEDBACK_IMPLAUSIBLE, judged.describe(self.model.joint_names))
        return judged.velocity

    def anchor(self, measured: bool = False, command: FloatArray | None = None, *, apply: bool = True) -> FloatArray:
        """Where a new mode starts, per joint: the last command where the modules were executing it
        and the joint is within ``STALE_RAD`` of it (no step), else the measured position (and the
        rate limiter starts that joint there: a command that lands on the arm moves nothing).
        ``measured``: every joint from the measured position; ``command``: the command to keep
        instead of the last one (a brake's stopping point); ``apply=False``: only compute it."""
        last = self.rate.last
        cand = last if command is None else command
        if not self.cycle.have_feedback:
            target = self.hold_target()
            return np.where(np.isfinite(last), last, target if target is not None else 0.0)
        if not self.fresh():  # old feedback is not where the arm is: keep the command (re-anchored
            return np.where(np.isfinite(cand), cand, self.feedback.position)  # on the next fresh sample)
        meas = self.feedback.position
        if not np.all(np.isfinite(meas)):
            meas = np.where(np.isfinite(meas), meas, last)
        keep = np.isfinite(cand) & (np.abs(cand - meas) <= STALE_RAD)
        if measured:
            keep[:] = False
        p = np.where(keep, cand, meas)
        if apply:
            np.copyto(last, p, where=~keep & np.isfinite(p))
            self.allow_outside(p)
        return p

    def allow_outside(self, p: FloatArray) -> None:
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

    def last_good_position(self) -> FloatArray:
        """The last command where it is finite, else the hold target, else the last sample (zeros before one)."""
        last = self.rate.last
        if np.all(np.isfinite(last)):
            return last.copy()
        target = self.hold_target()
        if target is not None:
            return target
        return self.feedback.position.copy() if self.cycle.have_feedback else np.zeros(self.dof)
