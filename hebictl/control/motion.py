"""Motion shaping applied to every command: the per-cycle rate limiter and the brake ramp.

:class:`RateLimiter`: after everything else has written the position command (trajectory,
hold, jog plugin, stop), each joint's command moves at most ``velocity_max * dt`` from the
previous cycle's. A joint that was not commanded (NaN) starts again from its measured position,
so a feedback jump, a cleared fault or a new hold never produces a step. With position limits
(and their rated deceleration ``a``) it also brakes the command before a limit: a joint at
distance ``d`` from the limit it moves toward is commanded no faster than ``sqrt(2 a d)``, so a
jog or any other command reaches the limit at rest instead of being cut off at full speed there.

:class:`Brake`: from the commanded state (p0, v0), every joint's velocity falls smoothly to zero
(``v = v0 (1 - 3s² + 2s³)``, s = t/T: the deceleration starts and ends at zero, so the joints'
position loops are not kicked into ringing), peaking at no more than its rated deceleration; all
joints reach rest at the same moment T (so the arm stops along the path it was on), then stay at
the stopping point ``p0 + v0 T / 2``.
"""

from __future__ import annotations

import math

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control import cycle_kernels
from hebictl.control.safety import Limits

#: a command approaches a limit at this fraction of the rated deceleration: it carries no effort
#: feed-forward, so the modules follow it on their position error alone (which is the overshoot)
APPROACH_FRACTION = 0.3
_APPROACH = 2.0 * APPROACH_FRACTION  # the kernel brakes toward a limit at sqrt(_APPROACH * a * distance)


class RateLimiter:
    """Limits the position command's change per cycle to the rated speed (see module docstring).

    The arithmetic is one compiled pass over the joints (:func:`~hebictl.control.cycle_kernels.limit_command`).
    """

    def __init__(self, velocity_max: FloatArray, limits: Limits | None = None) -> None:
        self.velocity_max = np.where(np.isfinite(velocity_max), velocity_max, np.inf)
        n = self.velocity_max.shape
        self.limits = limits
        self.last = np.full(n, np.nan)
        self.limited = np.zeros(n, dtype=bool)
        self._unbounded = np.full(n, np.inf)
        self._no_effort = np.empty(n)

    def reset(self) -> None:
        """Forget the previous command: the next one starts from the measured position."""
        self.last.fill(np.nan)

    def apply(self, position: FloatArray, velocity: FloatArray, dt: float, measured: FloatArray,
              bounds: tuple[FloatArray, FloatArray] | None = None) -> bool:
        """Limit ``position`` in place (NaN entries pass); True if any joint was limited.

        A limited joint's velocity command is set to the speed it is actually moved at. ``bounds``
        replaces the position limits (a joint being moved back inside them).
        """
        return self._limit(position, velocity, self._no_effort, dt, measured, bounds, clamp=False)

    def clamp_and_apply(self, position: FloatArray, velocity: FloatArray, effort: FloatArray, dt: float,
                        measured: FloatArray, bounds: tuple[FloatArray, FloatArray] | None = None) -> bool:
        """:meth:`Limits.clamp_command <hebictl.control.safety.Limits.clamp_command>` (positions to
        ``bounds`` when given), then :meth:`apply`, in one pass: what the arm does to every command."""
        return self._limit(position, velocity, effort, dt, measured, bounds, clamp=True)

    def _limit(self, position: FloatArray, velocity: FloatArray, effort: FloatArray, dt: float,
               measured: FloatArray, bounds: tuple[FloatArray, FloatArray] | None, clamp: bool) -> bool:
        lim = self.limits
        if lim is None:  # rate limit only: nothing to clamp to or approach
            lo = hi = vlim = elim = acc = self._unbounded
            clamp = bounded = False
        else:
            lo, hi = bounds if bounds is not None else (lim.position_min, lim.position_max)
            vlim, elim, acc = lim.velocity_max, lim.effort_max, lim.acceleration_max
            bounded = lim.bounded or (clamp and bounds is not None)
        return cycle_kernels.limit_command(position, velocity, effort, self.last, measured, float(dt), clamp,
                                           bounded, lo, hi, vlim, elim, self.velocity_max, acc, _APPROACH,
                                           self.limited)


def recovery_range(limits: Limits, low: FloatArray, high: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """The recovery range of joints between ``low`` and ``high`` (per joint) outside their limits:
    the limits widened to take them in; None when every joint is inside (NaN counts as inside)."""
    if not bool(np.any((low < limits.position_min) | (high > limits.position_max))):
        return None
    return np.minimum(limits.position_min, low), np.maximum(limits.position_max, high)


def shrink_recovery(recovery: tuple[FloatArray, FloatArray], limits: Limits, position: FloatArray,
                    command: FloatArray | None = None) -> tuple[FloatArray, FloatArray] | None:
    """Narrow a recovery range (joints switched on outside their limits may move back in) to what
    the joints have reached; None once all are inside the limits.

    ``command``: the last position command, kept inside the range too. A joint held outside its
    limits that swings back inward (e.g. braked after an M-stop release) would otherwise drag the
    range's edge, and the clamp with it, along: the hold's command followed the arm inward and
    nothing held it (x6's base drifted 0.4 rad at 1 rad/s after a MotorOff release)."""
    lo, hi = recovery
    low, high = position, position
    if command is not None:
        ok = np.isfinite(command)
        low = np.where(ok, np.minimum(position, command), position)
        high = np.where(ok, np.maximum(position, command), position)
    np.maximum(lo, np.minimum(limits.position_min, low), out=lo)
    np.minimum(hi, np.maximum(limits.position_max, high), out=hi)
    if np.all(lo >= limits.position_min) and np.all(hi <= limits.position_max):
        return None
    return lo, hi


class Brake:
    """A synchronised smooth stop from (p0, v0) at ``t0`` (see module docstring)."""

    #: peak deceleration of the smooth profile = PEAK * v0 / T
    PEAK = 1.5

    def __init__(self, t0: float, p0: FloatArray, v0: FloatArray, acceleration_max: FloatArray,
                 velocity_max: FloatArray, position_min: FloatArray, position_max: FloatArray) -> None:
        v = np.nan_to_num(np.asarray(v0, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        v = np.clip(v, -velocity_max, velocity_max)
        amax = np.where(np.isfinite(acceleration_max) & (acceleration_max > 0), acceleration_max, np.inf)
        times = self.PEAK * np.abs(v) / amax
        self.t0 = float(t0)
        self.duration = float(times.max()) if times.size else 0.0
        self.p0 = np.array(p0, dtype=np.float64)
        self.v0 = v if self.duration > 0.0 else np.zeros_like(v)
        self.target = np.clip(self.p0 + 0.5 * self.v0 * self.duration, position_min, position_max)

    @property
    def end_time(self) -> float:
        return self.t0 + self.duration

    def speed_fraction(self, t: float) -> float:
        """Every joint's commanded speed at ``t`` [s] over its speed at the start (the joints are
        synchronised: one profile), 1 before the ramp, 0 after it."""
        if self.duration <= 0.0 or not math.isfinite(t):
            return 0.0
        s = min(max((t - self.t0) / self.duration, 0.0), 1.0)
        return 1.0 - 3.0 * s * s + 2.0 * s ** 3

    def state(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Commanded (position, velocity, acceleration) at time ``t`` [s]."""
        tau = t - self.t0
        if tau >= self.duration or self.duration <= 0.0 or not math.isfinite(tau):
            return self.target.copy(), np.zeros_like(self.p0), np.zeros_like(self.p0)
        T = self.duration
        s = max(tau, 0.0) / T
        p = self.p0 + self.v0 * T * (s - s ** 3 + 0.5 * s ** 4)
        v = self.v0 * (1.0 - 3.0 * s * s + 2.0 * s ** 3)
        a = self.v0 * (-6.0 * s + 6.0 * s * s) / T
        return p, v, a
