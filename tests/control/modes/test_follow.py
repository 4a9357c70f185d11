"""Follow's resume after a late cycle (hebictl/control/modes/follow.py), exact on a known trajectory.

The rows: a cycle on time changes nothing; an arm the modules held at the last command resumes one
period past it, from rest, its pace rising at RESUME_ACCELERATION x the rated acceleration; an arm
that kept up (or went further) is not shifted; an arm behind the last command is not pulled back to
it. The physics of it (a stall on the sim, every bundled config) is in tests/control/test_arm_stalls_sim.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.modes.follow import RESUME_ACCELERATION, Follow
from hebictl.hardware.base import Command
from hebictl.trajectory import create_trajectory

PERIOD = 0.005
ACC = np.array([4.0, 8.0])   # [rad/s^2] rated accelerations


def follow() -> tuple[Follow, Command]:
    """Two joints, 0 -> (1.0, -0.5) rad in 2 s, commanded every period up to t = 1.0 s."""
    f = Follow(create_trajectory([0.0, 2.0], np.array([[0.0, 1.0], [0.0, -0.5]])))
    cmd = Command(np.zeros(2))
    t = 0.0
    while t < 1.0 - 1e-12:
        f.command(t, cmd)
        t += PERIOD
    f.command(1.0, cmd)
    return f, cmd


def test_an_arm_held_at_the_last_command_resumes_from_rest_one_period_past_it():
    f, cmd = follow()
    plan = f.trajectory
    held = plan.get_state(1.0)[0]
    shift = f.resume(1.2, held, np.zeros(2), PERIOD, ACC)
    assert shift == pytest.approx(0.2 - PERIOD, abs=1e-12)
    assert f.delay == pytest.approx(shift) and f.pace == 0.0
    p, v, _ = f.command(1.2, cmd)
    np.testing.assert_allclose(p, plan.get_state(1.0 + PERIOD)[0], atol=1e-12)
    np.testing.assert_array_equal(v, 0.0)   # from rest: the arm was not moving
    # the pace rises so that the slowest joint to get back to its planned speed does it at the fraction
    planned = plan.get_state(1.0 + PERIOD)[1]
    ramp = float(np.max(np.abs(planned) / (RESUME_ACCELERATION * ACC)))
    assert f.pace_rate == pytest.approx(1.0 / ramp)
    p2, v2, _ = f.command(1.2 + PERIOD, cmd)
    assert f.pace == pytest.approx(PERIOD / ramp)
    assert np.all(np.abs(v2) <= RESUME_ACCELERATION * ACC * PERIOD + 1e-12)
    # the path's time advanced by the mean pace over the period, not by the period
    t_path = 1.0 + PERIOD + 0.5 * f.pace * PERIOD
    np.testing.assert_allclose(p2, plan.get_state(t_path)[0], atol=1e-12)
    t = 1.2 + PERIOD
    while f.pace < 1.0:
        t += PERIOD
        f.command(t, cmd)
    assert t - 1.2 == pytest.approx(ramp, abs=PERIOD)
    # from then on the plan's own speed, delayed by the stall and the ramp's lost time
    t += PERIOD
    _, v3, _ = f.command(t, cmd)
    np.testing.assert_allclose(v3, plan.get_state(t - f.delay)[1], atol=1e-12)


def test_an_arm_that_kept_up_is_not_shifted_nor_sent_ahead():
    f, _ = follow()
    plan = f.trajectory
    p, v, _ = plan.get_state(1.2)
    assert f.resume(1.2, p, v, PERIOD, ACC) == 0.0 and f.pace == pytest.approx(1.0)
    f2, _ = follow()
    ahead = plan.get_state(1.3)[0]   # the modules went on past the clock's point: never ahead of the clock
    assert f2.resume(1.2, ahead, v, PERIOD, ACC) == 0.0


def test_an_arm_behind_the_last_command_is_not_pulled_back_to_it():
    f, _ = follow()
    behind = f.trajectory.get_state(0.9)[0]
    assert f.resume(1.2, behind, np.zeros(2), PERIOD, ACC) == pytest.approx(0.2 - PERIOD, abs=1e-12)


def test_a_cycle_on_time_changes_nothing():
    """position_command resumes only after a cycle over 1.5 periods; on time it is the plan at the clock."""
    f, cmd = follow()
    p, _, _ = f.command(1.0 + PERIOD, cmd)
    np.testing.assert_allclose(p, f.trajectory.get_state(1.0 + PERIOD)[0])
    assert f.delay == 0.0 and f.pace == 1.0
