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
from hebictl.control.safety import Limits

_FMAX = np.fmax.reduce  # max ignoring NaN
#: a command approaches a limit at this fraction of the rated deceleration: it carries no effort
#: feed-forward, so the modules follow it on their position error alone (which is the overshoot)
APPROACH_FRACTION = 0.3


class RateLimiter:
    """Limits the position command's change per cycle to the rated speed (see module docstring)."""

    def __init__(self, velocity_max: FloatArray, limits: Limits | None = None) -> None:
        self.velocity_max = np.where(np.isfinite(velocity_max), velocity_max, np.inf)
        n = self.velocity_max.shape
        self.limits = limits
        self.last = np.full(n, np.nan)
        self.limited = np.zeros(n, dtype=bool)
        # preallocated work buffers: this runs every cycle of a 1 kHz loop
        self._step = np.empty(n)
        self._delta = np.empty(n)
        self._abs = np.empty(n)
        self._up, self._down, self._hi, self._lo = (np.empty(n) for _ in range(4))
        self._two_a_key: bytes | None = None
        self._two_a_value = np.empty(n)

    def reset(self) -> None:
        """Forget the previous command: the next one starts from the measured position."""
        self.last.fill(np.nan)

    def apply(self, position: FloatArray, velocity: FloatArray, dt: float, measured: FloatArray,
              bounds: tuple[FloatArray, FloatArray] | None = None) -> bool:
        """Limit ``position`` in place (NaN entries pass); True if any joint was limited.

        A limited joint's velocity command is set to the speed it is actually moved at. ``bounds``
        replaces the position limits (a joint being moved back inside them).
        """
        last = self.last
        if math.isnan(last.sum()):
            fresh = np.isnan(last)
            last[fresh] = measured[fresh]
            still = np.isnan(last)
            last[still] = position[still]  # no measurement either: accept the command as it is
        if dt <= 0.0:  # no time has passed: the command cannot move (its velocity stays as given)
            np.copyto(position, last, where=np.isfinite(position))
            return False
        lim = self.limits
        if lim is not None and lim._bounded:
            self._approach(position, velocity, dt, bounds or (lim.position_min, lim.position_max), lim)
        step, delta, mag, limited = self._step, self._delta, self._abs, self.limited
        np.multiply(self.velocity_max, max(dt, 0.0), out=step)
        np.subtract(position, last, out=delta)
        np.absolute(delta, out=mag)
        np.subtract(mag, step, out=mag)
        if not _FMAX(mag) > 0.0:  # the usual case, checked in one reduction (NaN: not commanded)
            np.copyto(last, position)  # (``limited`` is only updated when this returns True)
            return False
        np.greater(mag, 0.0, out=limited)
        sign = np.sign(delta[limited])
        position[limited] = last[limited] + sign * step[limited]
        velocity[limited] = sign * self.velocity_max[limited]
        np.copyto(last, position)
        return True


    def _approach(self, position: FloatArray, velocity: FloatArray, dt: float,
                  bounds: tuple[FloatArray, FloatArray], lim: Limits) -> None:
        """Brake toward a limit: speed toward it at most ``sqrt(2 a d)`` (see the module docstring).

        In-place on preallocated buffers: this runs every cycle, and the temporaries of the plain
        numpy expression cost about 30 µs per cycle."""
        last = self.last
        two_a = self._two_a(lim.acceleration_max)
        up, down, hi, lo = self._up, self._down, self._hi, self._lo
        np.subtract(bounds[1], last, out=up)
        np.subtract(last, bounds[0], out=down)
        for gap in (up, down):  # allowed speed toward each bound
            np.maximum(gap, 0.0, out=gap)
            np.multiply(gap, two_a, out=gap)
            np.sqrt(gap, out=gap)
        if math.isnan(up.sum() + down.sum()):  # no previous command and no measurement: nothing to brake from
            up[np.isnan(up)] = np.inf
            down[np.isnan(down)] = np.inf
        np.multiply(up, dt, out=hi)
        np.add(hi, last, out=hi)
        np.multiply(down, dt, out=lo)
        np.subtract(last, lo, out=lo)
        np.minimum(position, hi, out=position)
        np.maximum(position, lo, out=position)
        np.minimum(velocity, up, out=velocity)
        np.negative(down, out=down)
        np.maximum(velocity, down, out=velocity)

    def _two_a(self, acceleration_max: FloatArray) -> FloatArray:
        """``2 * APPROACH_FRACTION * a`` per joint (unbounded: 1e9 rad/s²), recomputed when ``a`` changes."""
        key = acceleration_max.tobytes()
        if key != self._two_a_key:
            a = np.where(np.isfinite(acceleration_max), acceleration_max, 1e9)
            self._two_a_value = 2.0 * APPROACH_FRACTION * a
            self._two_a_key = key
        return self._two_a_value


def shrink_recovery(recovery: tuple[FloatArray, FloatArray], limits: Limits,
                    position: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """Narrow a recovery range (joints switched on outside their limits may move back in) to what
    the joints have reached; None once all are inside the limits."""
    lo, hi = recovery
    np.maximum(lo, np.minimum(limits.position_min, position), out=lo)
    np.minimum(hi, np.maximum(limits.position_max, position), out=hi)
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
