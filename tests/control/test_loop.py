"""Fixed-rate loop: absolute deadlines, skipping (not bursting) after overruns, windowed stats."""

from __future__ import annotations

import itertools

import pytest

from hebictl.control.loop import FixedRateLoop
from hebictl.hardware.clock import SimClock


def _loop(work_s, rate=1000.0, report=None):
    clock = SimClock()
    starts: list[float] = []

    def step():
        starts.append(clock.now())
        clock.advance(work_s(len(starts)) if callable(work_s) else work_s)

    return FixedRateLoop(step, rate, clock, report=report), clock, starts


def test_cycles_start_on_absolute_deadlines():
    """With work shorter than the period, cycle k starts exactly at t0 + k/rate (no drift)."""
    loop, _, starts = _loop(0.0003)
    stats = loop.run(duration=0.5)
    assert len(starts) == 500
    assert starts == pytest.approx([k * 0.001 for k in range(500)], abs=1e-12)
    assert stats.overruns == 0 and stats.missed_cycles == 0
    assert stats.period_p99 == pytest.approx(0.001, abs=1e-12)


def test_overrun_skips_to_next_future_deadline_without_bursting():
    """A 3.5-period stall (9 to 12.5 ms) skips the 10, 11 and 12 ms deadlines, resumes on the grid."""
    loop, _, starts = _loop(lambda k: 0.0035 if k == 10 else 0.0001)
    loop.run(duration=0.05)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.001 - 1e-12, "never two cycles closer than one period (no burst)"
    assert starts[10] == pytest.approx(0.013, abs=1e-12), "resumes on the deadline grid"
    assert loop.total.overruns == 1 and loop.total.missed == 3


def test_statistics_are_reported_once_per_window():
    """The report callback fires once per second of loop time, not per cycle or per overrun."""
    reports = []
    loop, _, _ = _loop(lambda k: 0.002 if k % 100 == 0 else 0.0001, report=reports.append)
    loop.run(duration=3.0)
    assert len(reports) in (3, 4)
    assert all(r.overruns >= 9 for r in reports[:3])
    assert reports[0].period_max >= 0.002


def test_step_returning_false_stops_the_loop():
    """A step that returns False ends run() after that cycle."""
    clock = SimClock()
    calls = []
    loop = FixedRateLoop(lambda: calls.append(1) or len(calls) < 5, 100.0, clock)
    loop.run()
    assert len(calls) == 5


def test_rate_must_be_positive():
    """A zero or negative rate is rejected at construction."""
    with pytest.raises(ValueError, match="rate_hz"):
        FixedRateLoop(lambda: None, 0.0, SimClock())


def test_paced_loop_lets_the_step_set_the_rate():
    """paced_by_step: no sleeping by the loop; the step's own blocking sets the period."""
    clock = SimClock()
    loop = FixedRateLoop(lambda: clock.advance(0.002 if clock.now() < 0.5 else 0.004), 500.0, clock,
                         paced_by_step=True)
    stats = loop.run(duration=1.0)
    assert loop.cycles == 250 + 125
    assert loop.total.overruns == 124, "periods between the 125 slow cycles (4 ms > 1.5 x 2 ms)"
    assert stats.period_max == pytest.approx(0.004)
