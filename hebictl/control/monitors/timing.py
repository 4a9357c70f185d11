"""When each sample was taken, and whether the monitors may judge it: :class:`SampleClock`.

Why the sample's own time and not the loop's: the momentum observer integrates the joints'
dynamics between two samples, the tracking check compares a sample with the command in force
when it was taken. On a busy PC neither interval is the nominal period: a cycle that runs 40 ms
late reads a sample 40 ms after the previous one, and a sample that arrives 20 ms late shows the
arm as it was 20 ms earlier, older than the sample before it. Judged on the loop's clock (5 ms
apart), the first looks like a momentum jump and the second like one backwards: a "force" of tens
of N·m that nothing exerted (236 spurious contact stops in 360 s of motion on a loaded 2-core
machine, issue 29). So every sample carries its timing: the interval since the previous judged
sample on the backend's own timestamps (``Feedback.time``; the arm's clock where the backend gives
none), how much of it is beyond the nominal check period, and its age on arrival. A sample no newer
than the last judged one (a delayed or repeated packet) is not judged at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hebictl.hardware.base import Feedback

__all__ = ["SampleClock", "SampleTiming"]


@dataclass
class SampleTiming:
    """One sample's timing, as the monitors judge it (all in seconds)."""

    #: since the previous judged sample, on the samples' own timestamps (0 for the first)
    interval: float = 0.0
    #: the part of ``interval`` beyond the nominal check period: a late cycle or a dropped sample
    late: float = 0.0
    #: the sample's age when it arrived (``rx_time - time``; 0 where the clocks cannot tell)
    age: float = 0.0
    #: the sample is newer than the last judged one and its interval is known
    known: bool = False
    #: the sample's own time [s, the backend's clock]
    time: float = math.nan


def sample_time(fb: Feedback, now: float) -> tuple[float, float]:
    """(the sample's own time, its age) [s, the arm's clock] of ``fb`` received at ``now``: its stamp
    (one module's: a group's samples share one moment), or ``now`` and age 0 where it has none or one
    on another clock (an age outside 0..1000 s)."""
    t = float(fb.time[0])
    age = fb.rx_time - t
    if not (math.isfinite(age) and 0.0 <= age < 1000.0):  # stamped on another clock (or not at all)
        age = 0.0
    if not math.isfinite(t):  # no timestamp: the arm's own time of reading stands in
        t = now
    return t, age


class SampleClock:
    """Timestamps of the samples the monitors judge (see the module docstring).

    ``nominal`` [s]: the check period the thresholds were set for (the feedback period, or the
    suite's check period where that is longer)."""

    def __init__(self, nominal: float) -> None:
        self.nominal = float(nominal)
        self.last: float | None = None     # [s] the last judged sample's own time
        self.timing = SampleTiming()

    def restart(self) -> None:
        """Forget the previous sample (the next one starts afresh: not judged against an old one)."""
        self.last = None

    def stamp(self, fb: Feedback, now: float) -> SampleTiming:
        """The timing of ``fb``, received at ``now`` [s, the arm's clock], against the last judged
        sample (:meth:`commit` makes it the last judged one)."""
        t, age = sample_time(fb, now)
        tm = self.timing
        tm.time, tm.age = t, age
        h = t - self.last if self.last is not None else 0.0
        if self.last is None or not h > 1e-9:  # the first, or no newer than the last judged sample
            tm.interval, tm.late, tm.known = 0.0, 0.0, False
            return tm
        tm.interval, tm.late, tm.known = h, max(0.0, h - 1.5 * self.nominal), True
        return tm

    def commit(self, timing: SampleTiming) -> None:
        """The sample ``timing`` belongs to is judged: the next interval starts at it."""
        if timing.known or self.last is None:
            self.last = timing.time
