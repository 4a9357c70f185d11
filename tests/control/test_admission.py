"""Goal admission (hebictl.control.admission) against hebi-py's trajectories and dense sampling."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.admission import plan
from hebictl.control.goal import Goal
from hebictl.control.settings import limits_from
from hebictl.errors import CommandRejected, LimitViolation
from hebictl.formats import load_model
from tests._support.paths import REPO_ROOT

HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
REST = (HOME, np.zeros(6), np.zeros(6))


@pytest.fixture(scope="module")
def model():
    return load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")


@pytest.fixture
def limits(model):
    return limits_from(model, {"joint_limits": {"position_min": -3.0, "position_max": 3.0}})


def test_too_fast_names_joint_need_and_rating_like_hebi_py(hebi, model, limits):
    """The speed reported as needed is hebi-py's own trajectory's peak speed for the same waypoints."""
    target = HOME + np.array([1.0, 0, 0, 0, 0, 0])
    with pytest.raises(CommandRejected) as exc:
        plan(Goal(6).add_waypoint(t=0.2, position=target), 0.0, REST, limits, model)
    assert exc.value.reason == "too_fast" and "joint 0 (J1_base)" in exc.value.detail
    ref = hebi.trajectory.create_trajectory([0.0, 0.2], np.column_stack([HOME, target]),
                                            np.zeros((6, 2)), np.zeros((6, 2)))
    peak = max(abs(ref.get_state(t)[1][0]) for t in np.linspace(0, 0.2, 2001))
    assert f"needs {peak:.3f} rad/s" in exc.value.detail
    assert f"allowed {limits.velocity_max[0]:.3f} rad/s" in exc.value.detail


def test_untimed_goal_is_timed_within_every_limit(model, limits):
    goal = Goal(6).add_waypoint(position=HOME + np.array([2.5, -0.5, 0.4, 0.7, 2.0, -2.0]))
    goal.add_waypoint(position=HOME)
    traj = plan(goal, 1.0, REST, limits, model)
    t = np.linspace(traj.start_time, traj.end_time, 4001)
    p, v, a = traj.get_states(t)
    assert np.all(np.abs(v).max(axis=0) <= limits.velocity_max * (1 + 1e-6))
    assert np.all(np.abs(a).max(axis=0) <= limits.acceleration_max * (1 + 1e-6))
    assert np.all(np.abs(model.inverse_dynamics(p, v, a)).max(axis=0) <= limits.effort_max)
    assert traj.start_time == 1.0


def test_effort_beyond_rating_is_too_strong(model, limits):
    """A timed goal the speed/acceleration limits allow but the (lowered) effort rating does not."""
    limits.effort_max[1] = 1.0  # the shoulder cannot even hold the arm up
    with pytest.raises(CommandRejected) as exc:
        plan(Goal(6).add_waypoint(t=3.0, position=HOME + 0.1), 0.0, REST, limits, model)
    assert exc.value.reason == "too_strong" and "J2_shoulder" in exc.value.detail and "N·m" in exc.value.detail


def test_waypoint_and_overshoot_outside_limits_are_limit_violations(model, limits):
    with pytest.raises(LimitViolation) as exc:
        plan(Goal(6).add_waypoint(position=HOME + np.array([3.5, 0, 0, 0, 0, 0])), 0.0, REST, limits, model)
    assert exc.value.joint == "J1_base" and exc.value.limit == 3.0 and exc.value.value == pytest.approx(3.5)
    # a waypoint inside the limits passed with a velocity carries the trajectory past the limit
    goal = Goal(6).add_waypoint(t=2.0, position=np.array([2.95, 1.2, 1.8, 2.2, -1.57, 0.0]),
                                velocity=np.array([1.0, 0, 0, 0, 0, 0]))
    goal.add_waypoint(t=4.0, position=np.array([2.95, 1.2, 1.8, 2.2, -1.57, 0.0]))
    with pytest.raises(LimitViolation) as exc:
        plan(goal, 0.0, REST, limits, model)
    assert exc.value.joint == "J1_base" and exc.value.value > 3.0
