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
from tests.conftest import REPO_ROOT

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


def _with_monitors(tmp_path, text: str, plugins: str = ""):
    """The bundled x6 config with ``text`` added under user_data.safety (and ``plugins`` entries)."""
    src = (REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml").read_text(encoding="utf-8")
    src = src.replace('hrdf: "../hrdf_kits/', f'hrdf: "{REPO_ROOT}/hrdf_kits/')
    src = src.replace('default: "gains/', f'default: "{REPO_ROOT}/configs/gains/')
    src = src.replace("  safety:\n", "  safety:\n" + text, 1)
    if plugins:
        src = src.replace("plugins:\n", "plugins:\n" + plugins, 1)
    path = tmp_path / "x6.cfg.yaml"
    path.write_text(src, encoding="utf-8")
    return path


def test_monitor_settings_override_defaults_and_stay_loadable_by_hebi(tmp_path, hebi):
    """user_data.safety.monitors: given keys override MONITOR_DEFAULTS, the rest stay; hebi-py
    still loads the config (it keeps user_data as written)."""
    path = _with_monitors(tmp_path, "    monitors:\n      contact: {reaction: damp, threshold_fraction: 0.08}\n"
                                    "      tracking_error: {sustain_time: 1.0}\n")
    hebi.config.load_config(str(path))
    cfg = load_config(path)
    s = safety_from(load_model(cfg.hrdf), cfg.user_data, cfg.path, cfg.plugins)
    assert s.monitors["contact"]["reaction"] == "damp" and s.monitors["contact"]["threshold_fraction"] == 0.08
    assert s.monitors["contact"]["threshold_min"] == 0.5 and s.monitors["tracking_error"]["sustain_time"] == 1.0
    arm = Arm.from_config(cfg, clock=SimClock())
    with arm:
        assert arm.monitors.contact.reaction == "damp"


def test_overtorque_fault_monitor_plugin_sets_the_contact_floor(tmp_path, hebi):
    """A hebi-py 2.16 OvertorqueFaultMonitor entry: its base_torque_error_limit [N·m] becomes the
    contact threshold floor (hebi-py reads the same key from the same config)."""
    path = _with_monitors(tmp_path, "", "  - {type: OvertorqueFaultMonitor, name: otm, base_torque_error_limit: 4.5}\n")
    hebi.config.load_config(str(path))
    cfg = load_config(path)
    s = safety_from(load_model(cfg.hrdf), cfg.user_data, cfg.path, cfg.plugins)
    assert s.monitors["contact"]["threshold_min"] == 4.5


@pytest.mark.parametrize(("text", "key", "message"), [
    ("    monitors:\n      contakt: {}\n", "user_data.safety.monitors.contakt", "unknown monitor"),
    ("    monitors:\n      contact: {treshold_min: 1}\n", "user_data.safety.monitors.contact.treshold_min",
     "unknown key"),
    ("    monitors:\n      contact: {reaction: explode}\n", "user_data.safety.monitors.contact.reaction", "one of"),
    ("    monitors:\n      imu_implausible: {max_angle: -1}\n", "user_data.safety.monitors.imu_implausible.max_angle",
     ">= 0"),
    ("    monitors: [contact]\n", "user_data.safety.monitors", "mapping"),
])
def test_bad_monitor_settings_are_config_errors_naming_the_key(tmp_path, text, key, message):
    path = _with_monitors(tmp_path, text)
    cfg = load_config(path)
    with pytest.raises(ConfigError, match=message) as exc:
        safety_from(load_model(cfg.hrdf), cfg.user_data, cfg.path, cfg.plugins)
    assert exc.value.key == key
