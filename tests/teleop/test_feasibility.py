"""Goal feasibility at rated speed, against closed-form references.

A rest-to-rest minimum-jerk move of distance d in time T peaks at 15/8 · d/T (velocity of
10s³ - 15s⁴ + 6s⁵ at s = 1/2): the classic result (Flash & Hogan 1985), independent of the code.
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.safety import Limits
from hebictl.errors import CommandRejected
from hebictl.teleop.feasibility import check_reach, check_trajectory
from hebictl.trajectory import create_trajectory

VMAX = np.array([2.0, 4.0])


def _limits(lo=-np.inf, hi=np.inf) -> Limits:
    return Limits(np.full(2, lo, dtype=float), np.full(2, hi, dtype=float), VMAX.copy(), np.full(2, 10.0))


def _move(d: float, T: float, joint: int = 0):
    q1 = np.zeros(2)
    q1[joint] = d
    return create_trajectory([0.0, T], np.column_stack([np.zeros(2), q1]))


@pytest.mark.parametrize("joint", [0, 1])
def test_peak_speed_threshold_is_the_min_jerk_15_8_ratio(joint):
    d = 1.0
    T_min = 15.0 / 8.0 * d / VMAX[joint]
    check_trajectory(_move(d, T_min * 1.001, joint), _limits(), max_duration=600.0)
    with pytest.raises(CommandRejected) as err:
        check_trajectory(_move(d, T_min * 0.99, joint), _limits(), max_duration=600.0)
    assert err.value.reason == "too_fast" and f"joint {joint}" in err.value.detail


def test_huge_finite_goal_is_too_fast_or_not_finite():
    with pytest.raises(CommandRejected) as err:
        check_trajectory(_move(1e200, 1.0), _limits(), max_duration=600.0)
    assert err.value.reason in ("too_fast", "not_finite")


def test_overshoot_between_waypoints_leaves_the_limits():
    # through 0.9 with a large velocity at the waypoint: the spline passes beyond 1.0
    traj = create_trajectory([0.0, 1.0, 2.0], np.array([[0.0, 0.9, 0.0], [0.0, 0.0, 0.0]]),
                             velocities=np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0]]))
    lim = _limits(-1.0, 1.0)
    lim.velocity_max[:] = 10.0  # speed is not the point here
    assert traj.position_range()[1][0] > 1.03          # hebictl's exact extremum, checked vs hebi-py elsewhere
    with pytest.raises(CommandRejected) as err:
        check_trajectory(traj, lim, max_duration=600.0)
    assert err.value.reason == "out_of_limits"


def test_too_long_is_refused():
    with pytest.raises(CommandRejected) as err:
        check_trajectory(_move(1.0, 700.0), _limits(), max_duration=600.0)
    assert err.value.reason == "too_far"


def test_reach_uses_average_speed_and_path_length():
    lim = _limits()
    start = np.zeros(2)
    check_reach(start, (1.0,), (np.array([2.0, 4.0]),), lim, max_duration=600.0)      # exactly rated on average
    with pytest.raises(CommandRejected) as err:
        check_reach(start, (1.0,), (np.array([2.01, 0.0]),), lim, max_duration=600.0)
    assert err.value.reason == "too_fast"
    # untimed: 1e6 rad at 2 rad/s takes 5e5 s > 600 s; a back-and-forth path counts both ways
    with pytest.raises(CommandRejected) as err:
        check_reach(start, (None,), (np.array([1e6, 0.0]),), lim, max_duration=600.0)
    assert err.value.reason == "too_far"
    check_reach(start, (None, None), (np.array([600.0, 0.0]), np.array([0.0, 0.0])), lim, max_duration=600.0)
    with pytest.raises(CommandRejected):
        check_reach(start, (None, None), (np.array([601.0, 0.0]), np.array([0.0, 0.0])), lim, max_duration=600.0)
    # no usable start (no feedback yet): left to the arm thread
    check_reach(np.full(2, np.nan), (1.0,), (np.array([1e9, 0.0]),), lim, max_duration=600.0)


@pytest.mark.parametrize(("name", "least"), [("x-series-5dof", 20), ("x-series-7dof-double-shoulder", 25),
                                             ("x-series-6dof", 25), ("r-series-6dof", 25)])
def test_teleop_ik_stays_in_the_config_limits_and_off_the_table(name, least):
    """Targets reached by 30 random collision-free poses inside the config's limits: solve_cartesian
    (what the bridge runs for cartesian_goal) finds most from home, always inside those limits and
    within 1 mm; a target 10 cm below the table is refused with reason 'collision' naming the bodies."""
    from hebictl.collision.attach import attach_from_config
    from hebictl.config import load_config
    from hebictl.control.settings import limits_from
    from hebictl.formats import load_model
    from hebictl.teleop.feasibility import solve_cartesian
    from tests.conftest import REPO_ROOT

    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    model = load_model(cfg.hrdf)
    world = attach_from_config(model, cfg.user_data, cfg.path)
    lim = limits_from(model, cfg.user_data, cfg.path)
    home = np.array(cfg.user_data["home_position"], float)
    rng = np.random.default_rng(5)
    solved = tried = 0
    while tried < 30:
        q = lim.position_min + (lim.position_max - lim.position_min) * rng.random(model.dof)
        if world.collision(q) is not None:
            continue
        tried += 1
        target = model.end_effector(q)[:3, 3]
        try:
            sol = solve_cartesian(model, lim, target, home)
        except CommandRejected as exc:
            assert exc.reason in ("ik_failed", "collision")
            continue
        assert np.all((sol >= lim.position_min - 1e-9) & (sol <= lim.position_max + 1e-9))
        assert np.linalg.norm(model.end_effector(sol)[:3, 3] - target) < 1e-3
        solved += 1
    print(f"{name}: {solved} of 30 reachable targets solved inside the config's limits")
    assert solved >= least
    with pytest.raises(CommandRejected) as exc:
        solve_cartesian(model, lim, np.array([0.4, 0.0, -0.1]), home)
    assert exc.value.reason == "collision" and "table" in exc.value.detail
