"""hebictl.control.plausible: which velocity reading a brake may start from, judged by hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.plausible import HISTORY, NOISE_FRACTION, VelocityHistory

RATED = np.array([2.0, 4.0])
AMAX = np.array([100.0, 100.0])  # rad/s²: 0.5 rad/s per 5 ms sample
DT = 0.005


def history(*samples: tuple[float, float]) -> VelocityHistory:
    h = VelocityHistory(2, RATED)
    for k, v in enumerate(samples):
        h.push(k * DT, np.array(v))
    return h


def test_a_lone_transient_on_a_still_arm_is_implausible_and_replaced_by_the_earlier_samples():
    h = history((0.0, 0.0), (0.01, 0.0), (0.0, 0.0), (1.8, 0.0))  # joint 0 reads 0.9x rated out of rest
    got = h.judge(np.array([1.8, 0.0]), 3 * DT, AMAX, np.zeros(2), DT)
    # allowed: 100 x 0.005 + 0.05 x 2 = 0.6 rad/s; the median of 0, 0.01, 0 is 0
    assert got.implausible.tolist() == [True, False]
    assert got.allowed[0] == pytest.approx(0.5 + NOISE_FRACTION * 2.0)
    assert got.velocity.tolist() == [0.0, 0.0]
    assert "joint 0 (a) read +1.800" in got.describe(["a", "b"])


def test_what_the_actuator_can_do_what_was_commanded_and_any_slowing_are_taken():
    h = history((1.0, 0.0), (1.0, 0.0), (1.5, 0.0))  # +0.5 rad/s in 5 ms: within 0.6
    assert not h.judge(np.array([1.5, 0.0]), 2 * DT, AMAX, np.zeros(2), DT).implausible.any()
    h = history((0.0, 0.0), (0.0, 3.0))  # the command asked for 3 rad/s (the mock follows it exactly)
    assert not h.judge(np.array([0.0, 3.0]), DT, AMAX, np.array([0.0, 3.0]), DT).implausible.any()
    h = history((2.0, -3.0), (0.0, 0.0))  # stopped by an obstacle faster than the actuator could: taken
    got = h.judge(np.array([0.0, 0.0]), DT, AMAX, np.zeros(2), DT)
    assert not got.implausible.any() and got.velocity.tolist() == [0.0, 0.0]


def test_a_jump_after_a_long_gap_is_plausible_and_the_first_sample_is_judged_against_the_command():
    h = history((0.0, 0.0))
    h.push(0.2, np.array([1.9, 0.0]))  # 0.2 s later: 100 x 0.2 = 20 rad/s possible (it fell)
    assert not h.judge(np.array([1.9, 0.0]), 0.2, AMAX, np.zeros(2), DT).implausible.any()
    first = VelocityHistory(2, RATED)
    first.push(0.0, np.array([1.9, np.nan]))  # no earlier sample: the command (0) a period before
    got = first.judge(np.array([1.9, np.nan]), 0.0, AMAX, np.zeros(2), DT)
    assert got.implausible.tolist() == [True, False] and got.velocity[0] == 0.0 and np.isnan(got.velocity[1])


def test_the_ring_keeps_the_last_samples_only():
    h = history(*[(float(k), 0.0) for k in range(HISTORY + 3)])
    assert h.count == HISTORY + 3 and sorted(h.velocities[:, 0]) == [float(k) for k in range(3, HISTORY + 3)]
