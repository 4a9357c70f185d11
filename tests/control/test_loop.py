"""Fixed-rate loop: absolute deadlines, skipping (not bursting) after overruns, windowed stats."""

from __future__ import annotations

import itertools
import math

import pytest

from hebictl.control.loop import FixedRateLoop, WaitMeter
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


def _grid_read(clock, hz, phase=0.0, late=None):
    """A backend's blocking read: waits for the next sample on a ``hz`` grid offset by ``phase`` [s]
    (``late(k)``: extra delay of sample k), as the mock and hebi-py's get_next_feedback block."""
    state = {"k": 0}

    def read():
        now = clock.now()
        k = max(math.floor((now - phase) * hz + 1e-9) + 1, state["k"] + 1)
        state["k"] = k
        clock.advance(max(phase + k / hz + (late(k) if late else 0.0) - now, 0.0))

    return read


def test_paced_loop_lets_the_step_set_the_rate():
    """paced_by_step: no sleeping by the loop; the step's blocking read sets the period. Feedback that
    comes slower (4 ms instead of 2 ms) makes cycles late (deadline misses), not overruns: the wait is
    reported as waiting, the controller's work stays small."""
    clock = SimClock()
    meter = WaitMeter(clock)
    read = meter.wrap(lambda: clock.advance(0.0019 if clock.now() < 0.5 else 0.0039))

    def step():
        read()
        clock.advance(0.0001)  # the controller's own work

    loop = FixedRateLoop(step, 500.0, clock, paced_by_step=True, wait=meter)
    stats = loop.run(duration=1.0)
    assert loop.cycles == 250 + 125
    assert loop.total.late == 124, "the periods between the 125 slow cycles (4 ms > 1.5 x 2 ms)"
    assert loop.total.overruns == 0 and loop.total.missed == 124
    assert stats.period_max == pytest.approx(0.004)
    assert stats.work_p99 == pytest.approx(0.0001, abs=1e-9) and stats.wait_p99 == pytest.approx(0.0039)


def test_the_controllers_own_long_cycle_is_an_overrun():
    """Paced by a 1 kHz feedback read: one cycle whose work takes 2.5 ms is one overrun and one deadline
    miss; two feedback samples went by unused (missed cycles); a late sample is a miss but no overrun."""
    clock = SimClock()
    meter = WaitMeter(clock)
    read = meter.wrap(_grid_read(clock, 1000.0, late=lambda k: 0.0013 if k == 30 else 0.0))
    n = [0]

    def step():
        read()
        n[0] += 1
        clock.advance(0.0025 if n[0] == 10 else 0.0001)

    loop = FixedRateLoop(step, 1000.0, clock, paced_by_step=True, wait=meter)
    loop.run(duration=0.1)
    assert loop.total.overruns == 1
    assert loop.total.late == 2, "the long cycle, and the cycle that waited for the late sample"
    assert loop.total.missed == 2 + 1


def test_the_phase_of_two_clocks_is_not_an_overrun():
    """The old failure: a loop sleeping to its own deadlines, then blocking on a feedback read whose grid
    is 4.9 ms out of phase at 200 Hz. Each cycle waits almost a period for feedback; that is waiting, not
    the controller's work: 0 overruns, whatever the phase (before, nearly every cycle counted as one)."""
    for phase in (0.0001, 0.0025, 0.0049):
        clock = SimClock()
        meter = WaitMeter(clock)
        read = meter.wrap(_grid_read(clock, 200.0, phase=phase))

        def step(read=read, clock=clock):
            read()
            clock.advance(0.0002)

        loop = FixedRateLoop(step, 200.0, clock, wait=meter)
        stats = loop.run(duration=2.0)
        assert loop.total.overruns == 0, phase
        assert stats.work_p99 == pytest.approx(0.0002)
        assert stats.period_p50 == pytest.approx(0.005)
