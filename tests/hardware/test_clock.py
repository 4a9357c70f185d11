"""hebictl.hardware.clock: PacedClock runs simulated time no faster than real time and stretches it
when the caller is late (it never skips simulated time).

Its claim is about real time, so these read the wall clock; every such assertion is a lower bound
(``not before``): a loaded machine can only make a sleep return later, never fail one of them."""

from __future__ import annotations

import math
import time

import pytest

from hebictl.errors import ClockError
from hebictl.hardware.clock import PacedClock


def test_paced_clock_waits_for_real_time():
    start = time.perf_counter()  # before the clock's anchor: no pause between the two can shorten it
    clock = PacedClock(0.0)
    clock.sleep_until(0.05)
    assert clock.now() == 0.05
    assert time.perf_counter() - start >= 0.05 - 1e-6  # time.sleep's ns rounding


def test_paced_clock_stretches_instead_of_skipping_when_late():
    clock = PacedClock(0.0)
    time.sleep(0.1)  # the caller is late by 0.1 s
    start = time.perf_counter()  # before the anchor moves: no pause after it can shorten the step
    clock.sleep_until(0.01)
    assert clock.now() == 0.01  # no jump to the wall time
    clock.sleep_until(0.03)  # the anchor moved: the next step is paced again (0.02 s), not free
    assert time.perf_counter() - start >= 0.02 - 1e-6
    clock.sleep_until(0.02)  # the past leaves time unchanged
    assert clock.now() == 0.03


def test_paced_clock_starts_on_the_wall_clock():
    before = time.perf_counter()
    clock = PacedClock()
    assert before <= clock.now() <= time.perf_counter()


def test_paced_clock_rejects_non_finite_times():
    with pytest.raises(ClockError):
        PacedClock().sleep_until(math.inf)
