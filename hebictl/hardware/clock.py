"""Clocks that backends and control loops share, so tests can run faster than real time.

A backend never calls :func:`time.time` or :func:`time.sleep` itself: it asks the injected
:class:`Clock`. With :class:`MonotonicClock` that is wall time; with :class:`SimClock` time only
moves when someone sleeps (or advances it), which makes a mock robot fully deterministic and lets a
10 s trajectory be checked in milliseconds.
"""

from __future__ import annotations

import math
import time
from typing import Protocol, runtime_checkable

from hebictl.errors import ClockError

__all__ = ["Clock", "MonotonicClock", "PacedClock", "SimClock"]


@runtime_checkable
class Clock(Protocol):
    """Source of time for a control loop and its backend."""

    def now(self) -> float:
        """Current time [s]; monotonic, arbitrary origin."""
        ...

    def sleep_until(self, t: float) -> None:
        """Return once ``now() >= t`` (immediately when ``t`` is already past) [s]."""
        ...


class MonotonicClock:
    """Wall-clock time from :func:`time.perf_counter`; sleeps with :func:`time.sleep`.

    ``spin_s`` is how long before the deadline to stop sleeping and poll instead: the OS wakes a
    sleeping thread up to ~100 µs late, which a 1 kHz loop notices. The default 0 never spins,
    because the machines this runs on are shared and a spinning thread steals a core.
    """

    __slots__ = ("spin_s",)

    def __init__(self, spin_s: float = 0.0) -> None:
        if not (math.isfinite(spin_s) and spin_s >= 0.0):
            raise ClockError(f"MonotonicClock spin_s must be finite and >= 0, got {spin_s!r}")
        self.spin_s = spin_s

    def now(self) -> float:
        """Seconds since an arbitrary origin (``time.perf_counter``)."""
        return time.perf_counter()

    def sleep_until(self, t: float) -> None:
        """Sleep until ``t`` [s], polling only for the last ``spin_s`` seconds."""
        remaining = t - time.perf_counter()
        if remaining > self.spin_s:
            time.sleep(remaining - self.spin_s)
        while time.perf_counter() < t:
            pass

    def __repr__(self) -> str:
        return f"MonotonicClock(spin_s={self.spin_s})"


class SimClock:
    """Manually advanced time: ``sleep_until`` jumps straight to the deadline.

    Nothing runs in the background, so every reading of a backend driven by this clock is a pure
    function of the calls made so far.
    """

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ClockError(f"SimClock start time must be finite, got {start!r}")
        self._now = float(start)

    def now(self) -> float:
        """Current simulated time [s]."""
        return self._now

    def sleep_until(self, t: float) -> None:
        """Jump to ``t`` [s] if it is in the future; a past ``t`` leaves time unchanged."""
        if not math.isfinite(t):
            raise ClockError(f"SimClock cannot sleep until non-finite time {t!r}")
        if t > self._now:
            self._now = float(t)

    def advance(self, dt: float) -> None:
        """Move time forward by ``dt`` >= 0 [s]."""
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ClockError(f"SimClock can only advance by a finite dt >= 0, got {dt!r}")
        self._now += dt

    def __repr__(self) -> str:
        return f"SimClock(now={self._now})"


class PacedClock(SimClock):
    """Simulated time that runs no faster than real time, and slower when the process is late.

    ``sleep_until(t)`` waits (really) until as much wall time has passed as simulated time, then
    jumps to ``t``. A process that falls behind (a loaded machine) does not make the loop late on
    the simulated arm: simulated time stretches instead (the anchor moves), so physics, brake
    ramps and stop measurements stay those of an on-time loop. For sim runs that must meet the
    real world on the way (a broker, an operator) and still be judged on the arm's own timing.
    ``start`` defaults to ``time.perf_counter()`` now, so its times line up with
    :class:`MonotonicClock`'s until the process is first late. ``now()`` may be read from other
    threads (a float read)."""

    __slots__ = ("_sim0", "_wall0")

    def __init__(self, start: float | None = None) -> None:
        wall = time.perf_counter()
        super().__init__(wall if start is None else start)
        self._wall0 = wall
        self._sim0 = self._now

    def sleep_until(self, t: float) -> None:
        """Wait until wall time has caught up with ``t`` (see the class docstring), then jump to ``t``."""
        if not math.isfinite(t):
            raise ClockError(f"PacedClock cannot sleep until non-finite time {t!r}")
        if t <= self._now:
            return
        remaining = self._wall0 + (t - self._sim0) - time.perf_counter()
        if remaining > 0.0:
            time.sleep(remaining)
        else:  # late: stretch simulated time rather than skip it
            self._wall0 -= remaining
        self._now = float(t)

    def __repr__(self) -> str:
        return f"PacedClock(now={self._now})"
