"""Joint limits and safety settings from a config's user_data (hebictl.control.settings)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.safety import StopBehaviour
from hebictl.control.settings import limits_from, safety_from
from hebictl.errors import ConfigError, LimitViolation
from hebictl.formats import load_model
from hebictl.hardware.clock import SimClock
from tests._support.paths import REPO_ROOT

BUNDLED = sorted((REPO_ROOT / "configs").glob("*.cfg.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_configs_have_finite_limits_around_home_and_load_in_hebi(path, hebi):
    """Every bundled config: hebi-py still loads it; finite limits for every joint; home inside;
    at each shoulder extreme (others at home) the elbow joint stays above the base plane."""
    hebi.config.load_config(str(path))
    cfg = load_config(path)
    model = load_model(cfg.hrdf)
    lim = limits_from(model, cfg.user_data, cfg.path)
    assert np.all(np.isfinite(lim.position_min)) and np.all(np.isfinite(lim.position_max))
    home = np.array(cfg.user_data["home_position"])
    assert np.all((lim.position_min <= home) & (home <= lim.position_max))
    names = model.frame_names("output")
    shoulder = next(j for j, n in enumerate(model.joint_names) if "shoulder" in n.lower())
    elbow = next(j for j, n in enumerate(model.joint_names) if "elbow" in n.lower())
    for extreme in (lim.position_min[shoulder], lim.position_max[shoulder]):
        q = home.copy()
        q[shoulder] = extreme
        z = model.forward_kinematics(q, "output")[names.index(model.joint_names[elbow]), 2, 3]
        if "x-series-5dof" not in path.stem:  # its home pose hangs the gripper below the base plane
            assert z > 0.0


def test_goal_outside_config_limits_is_refused_naming_the_joint():
    arm = Arm.from_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml", clock=SimClock())
    with arm:
        arm.update()
        target = arm.last_feedback.position.copy()
        target[0] = 100.0  # issue 11: a 100 rad joint goal used to be accepted
        with pytest.raises(LimitViolation) as exc:
            arm.set_goal(Goal(6).add_waypoint(position=target))
        assert exc.value.reason == "out_of_limits" and exc.value.joint == "J1_base"
        assert exc.value.limit == pytest.approx(3.14)


def test_safety_settings_and_bad_values():
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    s = safety_from(model, {"safety": {"stop_behaviour": "damp", "at_goal_position_tolerance": 0.02}})
    assert s.stop_behaviour is StopBehaviour.DAMP and s.at_goal_position_tolerance == 0.02
    assert s.at_goal_velocity_tolerance == 0.05  # documented default
    with pytest.raises(ConfigError) as exc:
        safety_from(model, {"safety": {"stop_behaviour": "drop"}})
    assert exc.value.key == "user_data.safety.stop_behaviour"
    with pytest.raises(ConfigError) as exc:
        limits_from(model, {"joint_limits": {"position_min": 1.0, "position_max": 0.0}})
    assert exc.value.key == "user_data.joint_limits"
    with pytest.raises(ConfigError):
        limits_from(model, {"joint_limits": {"position_minimum": 1.0}})
    lim = limits_from(model, {"joint_limits": {"velocity_max": 100.0}})
    np.testing.assert_array_equal(lim.velocity_max, model.max_speeds)  # never above the rating


def test_inverse_kinematics_stays_inside_the_config_limits():
    """A reachable target whose unconstrained solution needs the base beyond a tight limit: the
    arm's IK keeps the base inside (the model alone knows no limits)."""
    arm = Arm.from_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml", clock=SimClock())
    with arm:
        home = np.array(arm.user_data["home_position"])
        q_goal = home + np.array([0.6, 0.1, -0.1, 0, 0, 0])
        target = arm.model.end_effector(q_goal)[:3, 3]
        free = arm.model.inverse_kinematics(target, home)
        assert free.q[0] > 0.3
        arm.set_joint_limits([-3.14, -0.16, -2.69, -3.14, -3.14, -3.14], [0.3, 3.13, 2.12, 3.14, 3.14, 3.14])
        bounded = arm.inverse_kinematics(target, home)
        assert bounded.q[0] <= 0.3 + 1e-9


URDF = """<robot name="two">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="1.0" effort="20" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-0.5" upper="2.0" effort="10" velocity="3"/></joint>
</robot>"""


def test_model_file_limits_apply_and_the_config_can_only_tighten_them(tmp_path):
    path = tmp_path / "two.urdf"
    path.write_text(URDF)
    model = load_model(path)
    lim = limits_from(model, {})
    np.testing.assert_array_equal(lim.position_min, [-1.5, -0.5])
    np.testing.assert_array_equal(lim.position_max, [1.0, 2.0])
    np.testing.assert_array_equal(lim.velocity_max, [2.0, 3.0])
    lim = limits_from(model, {"joint_limits": {"position_min": [-3.0, 0.0], "position_max": [0.5, 3.0]}})
    np.testing.assert_array_equal(lim.position_min, [-1.5, 0.0])
    np.testing.assert_array_equal(lim.position_max, [0.5, 2.0])
