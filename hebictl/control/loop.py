"""Fixed-rate control loop with absolute deadlines and loop statistics.

Deadlines are ``t0 + k * period`` rather than "sleep one period after the work", so the rate
does not drift with the work's duration. A cycle that overruns its deadline is not made up by
bursting: the loop skips to the next deadline in the future and counts the missed cycles.
Statistics (period p50/p99/max, overruns) are reported once per ``report_every`` seconds through a
callback (the CLI shows them; tests read them), never per overrun, so a struggling loop is not
slowed further by its own logging.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hebictl.hardware.clock import Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopStats:
    """Statistics over one reporting window; periods and work times in seconds."""

    cycles: int
    period_p50: float
    period_p99: float
    period_max: float
    work_p50: float
    work_p99: float
    overruns: int          # cycles whose work ended after the next deadline
    missed_cycles: int     # deadlines skipped because of overruns
    window: float          # s

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items()}


class _Window:
    """Preallocated ring of samples for one reporting window."""

    def __init__(self, capacity: int) -> None:
        self.periods = np.empty(capacity)
        self.works = np.empty(capacity)
        self.n = 0
        self.overruns = 0
        self.missed = 0

    def add(self, period: float, work: float) -> None:
        if self.n < self.periods.shape[0]:
            self.periods[self.n] = period
            self.works[self.n] = work
            self.n += 1

    def stats(self, window: float) -> LoopStats:
        p = self.periods[: self.n]
        w = self.works[: self.n]
        if self.n == 0:
            nan = math.nan
            return LoopStats(0, nan, nan, nan, nan, nan, self.overruns, self.missed, window)
        return LoopStats(self.n, float(np.median(p)), float(np.percentile(p, 99)), float(p.max()),
                         float(np.median(w)), float(np.percentile(w, 99)), self.overruns, self.missed, window)

    def reset(self) -> None:
        self.n = self.overruns = self.missed = 0


class FixedRateLoop:
    """Calls ``step()`` every ``1/rate_hz`` seconds on ``clock`` until it returns False or ``stop()``."""

    def __init__(self, step: Callable[[], bool | None], rate_hz: float, clock: Clock, *,
                 report: Callable[[LoopStats], None] | None = None, report_every: float = 1.0,
                 paced_by_step: bool = False) -> None:
        """``paced_by_step``: ``step`` itself blocks until the next cycle (e.g. a backend's
        blocking feedback read, as hebi-py's Arm runs); the loop then only measures, and a cycle
        longer than 1.5 periods counts as an overrun."""
        if not rate_hz > 0:
            raise ValueError(f"rate_hz must be > 0, got {rate_hz}")
        self.step = step
        self.period = 1.0 / rate_hz
        self.clock = clock
        self.report = report
        self.report_every = report_every
        self.paced_by_step = paced_by_step
        self._running = False
        self._window = _Window(int(rate_hz * report_every * 2) + 16)
        self.total = _Window(0)  # counts only
        self.last_stats: LoopStats | None = None
        self.cycles = 0

    def stop(self) -> None:
        self._running = False

    def run(self, duration: float | None = None) -> LoopStats:
        """Run for ``duration`` seconds (None = until stopped); returns the last window's stats."""
        clock = self.clock
        period = self.period
        self._running = True
        t0 = clock.now()
        end = math.inf if duration is None else t0 + duration
        k = 0
        deadline = t0
        last_start = math.nan
        window_start = t0
        while self._running:
            if not self.paced_by_step:
                clock.sleep_until(deadline)
            start = clock.now()
            if start >= end:
                break
            result = self.step()
            done = clock.now()
            measured = start - last_start
            if not math.isnan(measured):
                self._window.add(measured, done - start)
            last_start = start
            self.cycles += 1
            k += 1
            if self.paced_by_step:
                if measured > 1.5 * period:
                    self._count_overrun(0)
            else:
                deadline = t0 + k * period
                if done > deadline:
                    # skip every deadline already in the past instead of running them back to back
                    skip = math.floor((done - deadline) / period) + 1 if done - deadline >= period else 0
                    k += skip
                    deadline = t0 + k * period
                    self._count_overrun(skip)
            if done - window_start >= self.report_every:
                self._flush(done - window_start)
                window_start = done
            if result is False:
                break
        if self._window.n:
            self._flush(clock.now() - window_start)
        self._running = False
        return self.last_stats or self._window.stats(0.0)

    def _count_overrun(self, skipped: int) -> None:
        self._window.overruns += 1
        self.total.overruns += 1
        self._window.missed += skipped
        self.total.missed += skipped

    def _flush(self, window: float) -> None:
        self.last_stats = self._window.stats(window)
        self._window.reset()
        if self.report is not None:
            self.report(self.last_stats)
