"""Motion shaping applied to every command: the per-cycle rate limiter and the brake ramp.

:class:`RateLimiter`: after everything else has written the position command (trajectory,
hold, jog plugin, stop), each joint's command moves at most ``velocity_max * dt`` from the
previous cycle's. A joint that was not commanded (NaN) starts again from its measured position,
so a feedback jump, a cleared fault or a new hold never produces a step. With position limits
(and their rated deceleration ``a``) it also brakes the command before a limit: a joint at
distance ``d`` from the limit it moves toward is commanded no faster than ``sqrt(2 a d)``, so a
jog or any other command reaches the limit at rest instead of being cut off at full speed there.

:class:`Brake`: from the commanded state (p0, v0), every joint decelerates at a constant rate, then
over the ramp's last ``k v0 / a`` the deceleration falls linearly to zero (the end taper); all joints
reach rest at the same moment ``T = (1 + k/2) max |v0_i| / a_i`` (so the arm stops along the path it
was on, and the joint that sets ``T`` brakes at exactly its planned deceleration ``a_i``, the others
below theirs), then stay at the stopping point, ``v0² / (2a) (1 + k²/12)`` on. With ``|dv/dt| <= a``
the speed is at least ``v0 - a t``, so no profile travels less than ``v0² / (2 a)``: any smoothing
travels further, and at the start (where the arm is fast, ``k`` of the distance) far more than at the
end (``k²/12``). The end taper is 0.2 for a ramp the arm follows, 0.6 while it carries a load the model
does not know and 1.0 for a ramp from the measured state, chosen from measurements on the sim
(``benchmarks/brake_profile.py``; docs/supervisor.md, "The brake ramp"): ending the deceleration at
once left the arm moving where it does not follow the ramp, and the hold rang. The smoothstep it
replaces (``v0 (1 - 3s² + 2s³)``, peak ``a``) travelled 1.5x ``v0² / (2a)`` in 1.5x the time.
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
    """A synchronised constant-deceleration stop from (p0, v0) at ``t0`` (see module docstring).

    ``acceleration_max``: the deceleration each joint may brake at (the planned one); a joint
    without a finite positive one does not limit the ramp's length. ``hold`` [s]: how long the
    modules hold each command (the control period): the acceleration :meth:`state` gives is the
    ramp's mean over that time, so the effort fed forward for a cycle carries the ramp's velocity
    change within it and no more. At the ramp's end, and for a ramp shorter than a cycle (from a still
    arm: r6's read 2 µs long), the whole deceleration held for a 5 ms period kicked the arm (r6's
    wrist, 1.6 mm at the end effector after a stop from rest)."""

    #: the deceleration falls linearly to zero over the last TAPER x (v0 / a) of the ramp
    TAPER = 0.2
    #: the taper of a ramp carrying a load the model does not know (its estimate is fed forward as a point
    #: mass, which the arm does not follow exactly) and of a ramp from the measured state (the modules were
    #: not following the command: a monitor's stop, a module back, an M-stop release, a control gap)
    TAPER_LOAD = 0.6
    TAPER_CHASE = 1.0

    @classmethod
    def taper_for(cls, chase: bool, carrying: bool) -> float:
        """The end taper of a ramp from the measured state (``chase``), or carrying an estimated unknown
        load (``carrying``), else of a ramp the arm follows."""
        return cls.TAPER_CHASE if chase else cls.TAPER_LOAD if carrying else cls.TAPER

    def __init__(self, t0: float, p0: FloatArray, v0: FloatArray, acceleration_max: FloatArray,
                 velocity_max: FloatArray, position_min: FloatArray, position_max: FloatArray, *,
                 hold: float = 0.0, taper: float | None = None) -> None:
        v = np.nan_to_num(np.asarray(v0, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        v = np.clip(v, -velocity_max, velocity_max)
        amax = np.where(np.isfinite(acceleration_max) & (acceleration_max > 0), acceleration_max, np.inf)
        times = np.abs(v) / amax
        #: [rad/s²] the deceleration each joint was planned with (its bound)
        self.deceleration = amax
        self.t0 = float(t0)
        self.hold = float(hold) if math.isfinite(hold) and hold > 0.0 else 0.0
        t_const = float(times.max()) if times.size else 0.0
        k = self.TAPER if taper is None else float(taper)
        #: the end taper's length over the constant-deceleration time v0 / a
        self.taper_fraction = k
        self.taper = k * t_const
        self.duration = t_const + 0.5 * self.taper
        self.p0 = np.array(p0, dtype=np.float64)
        self.v0 = v if self.duration > 0.0 else np.zeros_like(v)
        self.rate = self.v0 / t_const if t_const > 0.0 else np.zeros_like(v)  # per joint [rad/s²]
        self.target = np.clip(self.p0 + self.v0 * t_const * (0.5 + k * k / 24.0), position_min, position_max)

    @property
    def end_time(self) -> float:
        return self.t0 + self.duration

    def _fraction(self, tau: float) -> tuple[float, float, float]:
        """(distance / (v0 T_const), speed / v0, acceleration / rate) at ``tau`` into the ramp."""
        tc = self.duration - 0.5 * self.taper
        tb = self.taper
        t1 = self.duration - tb
        if tau <= t1:
            return (tau - 0.5 * tau * tau / tc) / tc, 1.0 - tau / tc, -1.0
        d1 = (t1 - 0.5 * t1 * t1 / tc) / tc
        sg = tau - t1
        dist = (0.5 * tb * sg - 0.5 * sg * sg + sg ** 3 / (6.0 * tb)) / (tc * tc)
        speed = (0.5 * tb - sg + 0.5 * sg * sg / tb) / tc
        return d1 + dist, speed, -(1.0 - sg / tb)

    def speed_fraction(self, t: float) -> float:
        """Every joint's commanded speed at ``t`` [s] over its speed at the start (the joints are
        synchronised: one profile), 1 before the ramp, 0 after it."""
        if self.duration <= 0.0 or not math.isfinite(t):
            return 0.0
        tau = min(max(t - self.t0, 0.0), self.duration)
        return self._fraction(tau)[1]

    def state(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Commanded (position, velocity, acceleration) at time ``t`` [s]."""
        tau = t - self.t0
        if tau >= self.duration or self.duration <= 0.0 or not math.isfinite(tau):
            return self.target.copy(), np.zeros_like(self.p0), np.zeros_like(self.p0)
        tau = max(tau, 0.0)
        d, g, a = self._fraction(tau)
        if self.hold > 0.0:  # the mean over the cycle the modules hold the command for
            after = self._fraction(tau + self.hold)[1] if tau + self.hold < self.duration else 0.0
            a = (after - g) / self.hold * (self.duration - 0.5 * self.taper)
        tc = self.duration - 0.5 * self.taper
        return self.p0 + self.v0 * tc * d, self.v0 * g, self.rate * a
