"""Fixed-rate control loop with absolute deadlines and loop statistics that mean one thing each.

A cycle's time splits into two parts, reported separately:

* **wait**: time blocked on the backend's feedback read (:class:`WaitMeter`). The modules send
  feedback on their own clock; waiting for it is the loop being paced, not the controller being slow.
* **work**: the rest of the cycle, the controller's own computation (model, trajectory, safety
  checks, sending the command).

and two kinds of lateness are counted:

* a **deadline miss**: a cycle that ended after the next cycle's deadline (paced by the feedback
  read: a period longer than 1.5 periods), whatever the cause;
* an **overrun**: a deadline miss of the controller's own making, a cycle whose *work* alone took
  longer than one period. On an idle machine a healthy controller has none.

Two pacing modes. By default the loop sleeps to absolute deadlines ``t0 + k * period`` (the rate
does not drift with the work's duration; a late cycle is not made up by bursting: the loop skips to
the next deadline in the future and counts the skipped ones). With ``paced_by_step`` the step
itself blocks until the next cycle, as ``hebi.arm`` runs when the backend's read waits for the
next feedback sample; the loop then only measures. Sleeping to a deadline *and then* waiting for
feedback would make a cycle late or not depending on the phase of two clocks, so a controller that
reads a blocking backend at its feedback rate is paced by the read.

With a ``realtime`` request (:mod:`hebictl.control.realtime`) the thread that runs the loop asks
for SCHED_FIFO, locked memory and a CPU before the first cycle, and the garbage collector is kept
out of the cycles: frozen after set-up, collected only in a cycle's slack time.

Statistics are reported once per ``report_every`` seconds through a callback (the CLI shows them;
tests read them), never per miss, so a struggling loop is not slowed further by its own logging.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebictl.control.realtime import CycleGc, RealtimeGrant, RealtimeRequest, grant, lock_memory, release
from hebictl.hardware.clock import Clock

log = logging.getLogger(__name__)

#: paced by the step: a period longer than (1 + this) nominal periods is a deadline miss
LATE_FRACTION = 0.5


@dataclass(frozen=True)
class LoopStats:
    """Statistics over one reporting window; times in seconds."""

    cycles: int
    period_p50: float
    period_p99: float
    period_max: float
    work_p50: float        # the controller's own work per cycle (waiting for feedback excluded)
    work_p99: float
    overruns: int          # cycles whose own work took longer than one period
    missed_cycles: int     # deadlines skipped (no cycle ran for them)
    window: float          # s
    wait_p50: float = 0.0  # time blocked on the feedback read per cycle
    wait_p99: float = 0.0
    deadline_misses: int = 0  # cycles that started late, whatever the cause (overruns included)

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items()}


class WaitMeter:
    """Time a loop's step spends blocked in a call, typically the backend's feedback read.

    ``backend.read = meter.wrap(backend.read)``: every call adds its duration (on ``clock``) to
    :attr:`pending`, which the loop takes once per cycle (:meth:`take`)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.pending = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        clock = self.clock

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = clock.now()
            try:
                return fn(*args, **kwargs)
            finally:
                self.pending += clock.now() - t

        return timed

    def take(self) -> float:
        waited, self.pending = self.pending, 0.0
        return waited


class _Window:
    """Preallocated ring of samples for one reporting window."""

    def __init__(self, capacity: int) -> None:
        self.periods = np.empty(capacity)
        self.works = np.empty(capacity)
        self.waits = np.empty(capacity)
        self.n = 0
        self.overruns = 0
        self.missed = 0
        self.late = 0

    def add(self, period: float, work: float, wait: float) -> None:
        if self.n < self.periods.shape[0]:
            self.periods[self.n] = period
            self.works[self.n] = work
            self.waits[self.n] = wait
            self.n += 1

    def stats(self, window: float) -> LoopStats:
        if self.n == 0:
            nan = math.nan
            return LoopStats(0, nan, nan, nan, nan, nan, self.overruns, self.missed, window, nan, nan, self.late)
        p, w, q = self.periods[: self.n], self.works[: self.n], self.waits[: self.n]
        return LoopStats(self.n, float(np.median(p)), float(np.percentile(p, 99)), float(p.max()),
                         float(np.median(w)), float(np.percentile(w, 99)), self.overruns, self.missed, window,
                         float(np.median(q)), float(np.percentile(q, 99)), self.late)

    def reset(self) -> None:
        self.n = self.overruns = self.missed = self.late = 0


class FixedRateLoop:
    """Calls ``step()`` every ``1/rate_hz`` seconds on ``clock`` until it returns False or ``stop()``."""

    def __init__(self, step: Callable[[], bool | None], rate_hz: float, clock: Clock, *,
                 report: Callable[[LoopStats], None] | None = None, report_every: float = 1.0,
                 paced_by_step: bool = False, wait: WaitMeter | None = None,
                 realtime: RealtimeRequest | None = None,
                 on_grant: Callable[[RealtimeGrant], None] | None = None) -> None:
        """``paced_by_step``: ``step`` itself blocks until the next cycle (e.g. a backend's
        blocking feedback read, as hebi-py's Arm runs); the loop then only measures.
        ``wait``: the meter the step's feedback read is wrapped with; its time is reported as
        waiting, not as the controller's work.
        ``realtime``: scheduling the loop thread asks for when :meth:`run` starts
        (:mod:`hebictl.control.realtime`; None: none, and the garbage collector left alone);
        what it got is :attr:`grant`, also handed to ``on_grant`` before the first cycle."""
        if not rate_hz > 0:
            raise ValueError(f"rate_hz must be > 0, got {rate_hz}")
        self.step = step
        self.period = 1.0 / rate_hz
        self.clock = clock
        self.report = report
        self.report_every = report_every
        self.paced_by_step = paced_by_step
        self.wait = wait
        self.realtime = realtime
        self.on_grant = on_grant
        #: what the loop thread was granted (None before :meth:`run`, or without ``realtime``)
        self.grant: RealtimeGrant | None = None
        self.gc: CycleGc | None = None
        self._memory: tuple[bool, str | None] | None = None  # lock_memory()'s answer, once prepared
        self._running = False
        self._window = _Window(int(rate_hz * report_every * 2) + 16)
        self.total = _Window(0)  # counts only
        self.last_stats: LoopStats | None = None
        self.cycles = 0

    def stop(self) -> None:
        self._running = False

    def prepare(self) -> None:
        """The slow part of the ``realtime`` set-up, ahead of the loop: lock the memory and freeze
        the heap built so far (together 0.4 s or more for the sim). A caller whose backend must be
        commanded soon after its last read calls this before that read (``hebictl run``: before
        its moves are planned); :meth:`run` does it otherwise. Undone by :meth:`release`."""
        if self.realtime is None or self._memory is not None:
            return
        self._memory = lock_memory(self.realtime)
        CycleGc.prefreeze()

    def release(self) -> None:
        """Undo :meth:`prepare` and the grant (idempotent; :meth:`run` calls it when it ends);
        :attr:`grant` stays, to be reported."""
        if self.gc is not None:
            self.gc.end()
        memory, self._memory = self._memory, None
        if memory is None:
            return
        if self.grant is not None:
            release(self.grant)
        elif memory[0]:
            release(RealtimeGrant(self.realtime or RealtimeRequest(), memory_locked=True))
        gc.unfreeze()

    def run(self, duration: float | None = None) -> LoopStats:
        """Run for ``duration`` seconds (None = until stopped); returns the last window's stats.

        With ``realtime``, the calling thread is granted what it asks for first (SCHED_FIFO and
        affinity are per thread: threads it starts later inherit them), and released to normal
        scheduling when the loop ends."""
        if self.realtime is None:
            return self._cycles(duration)
        self.prepare()
        self.grant = grant(self.realtime, self._memory)
        self.gc = CycleGc(self.period)
        if self.on_grant is not None:
            self.on_grant(self.grant)
        self.gc.begin()
        try:
            return self._cycles(duration)
        finally:
            self.release()

    def _cycles(self, duration: float | None) -> LoopStats:
        clock = self.clock
        self._running = True
        t0 = clock.now()
        end = math.inf if duration is None else t0 + duration
        self._k = 0
        self._t0 = t0
        self._deadline = t0
        last_start = math.nan
        window_start = t0
        if self.wait is not None:
            self.wait.take()
        while self._running:
            if not self.paced_by_step:
                clock.sleep_until(self._deadline)
            start = clock.now()
            if start >= end:
                break
            result = self.step()
            done = clock.now()
            measured = start - last_start
            self._measure(measured, start, done)
            last_start = start
            if done - window_start >= self.report_every:
                self._flush(done - window_start)
                window_start = done
            if result is False:
                break
            if self.gc is not None:  # in the slack before the next cycle, never inside one
                self.gc.slack((start + self.period if self.paced_by_step else self._deadline) - clock.now())
        if self._window.n:
            self._flush(clock.now() - window_start)
        self._running = False
        return self.last_stats or self._window.stats(0.0)

    def _measure(self, measured: float, start: float, done: float) -> None:
        """Count one cycle: its period, work and wait, whether it was late or overran, and the
        deadlines skipped after it (the next deadline moves past them)."""
        period = self.period
        waited = self.wait.take() if self.wait is not None else 0.0
        work = max(done - start - waited, 0.0)
        if not math.isnan(measured):
            self._window.add(measured, work, waited)
        self.cycles += 1
        self._k += 1
        overrun = work > period * (1.0 + 1e-9)  # not by the rounding of a clock's sum
        if self.paced_by_step:
            # paced: a late cycle shows as a long period (an overrun's shows at the next cycle)
            late = measured > period + LATE_FRACTION * period
            skipped = max(round(measured / period) - 1, 0) if late else 0
        else:
            deadline = self._t0 + self._k * period
            late = done > deadline  # ended after the next cycle should have started
            # skip every deadline already in the past instead of running them back to back
            skipped = math.floor((done - deadline) / period) + 1 if late and done - deadline >= period else 0
            self._k += skipped
            self._deadline = self._t0 + self._k * period
        self._count(late=late, overrun=overrun, skipped=skipped)

    def _count(self, *, late: bool, overrun: bool, skipped: int) -> None:
        for w in (self._window, self.total):
            w.late += late
            w.overruns += overrun
            w.missed += skipped

    def _flush(self, window: float) -> None:
        self.last_stats = self._window.stats(window)
        self._window.reset()
        if self.report is not None:
            self.report(self.last_stats)
