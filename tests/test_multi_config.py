"""hebictl.multi_config: the multi-arm config (several robot configs in one world frame) and its errors."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.errors import ConfigError
from hebictl.multi_config import is_multi_arm_config, load_multi_arm_config, rpy_matrix
from tests._support.paths import CONFIGS_DIR

EXAMPLE = CONFIGS_DIR / "two-x-series-6dof.multi.yaml"
X6 = (CONFIGS_DIR / "x-series-6dof.cfg.yaml").as_posix()


def test_the_bundled_example_places_two_6dof_arms_0_6_m_apart_with_their_own_modules():
    cfg = load_multi_arm_config(EXAMPLE)
    assert [a.name for a in cfg.arms] == ["left", "right"]
    left, right = cfg.arms
    assert np.linalg.norm(left.base[:3, 3] - right.base[:3, 3]) == pytest.approx(0.6)
    assert left.config.names == right.config.names and len(left.config.names) == 6
    assert set(left.config.families) == {"Left-Arm"} and set(right.config.families) == {"Right-Arm"}
    assert left.config.hrdf is not None and left.config.hrdf.name == "x-series-6dof.hrdf"
    assert cfg.arm_clearance == pytest.approx(0.02)
    assert is_multi_arm_config(EXAMPLE) and not is_multi_arm_config(X6)


def test_rpy_matches_scipy_extrinsic_xyz():
    from scipy.spatial.transform import Rotation

    for rpy in ([0.1, -0.4, 2.0], [3.0, 0.2, -1.0], [0, 0, np.pi / 2]):
        assert np.allclose(rpy_matrix(rpy), Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-12)


def _write(tmp_path, text):
    p = tmp_path / "cell.multi.yaml"
    p.write_text(text)
    return p


GOOD_ARM = f"  - {{name: a, config: {X6}, base: {{xyz: [0, 0.3, 0]}}, families: [A]}}\n"


@pytest.mark.parametrize(("body", "line", "key", "words"), [
    ("multi_arm: 1\narms:\n" + GOOD_ARM + "armz: 3\n", 4, "armz", "unknown key (did you mean 'arms'?)"),
    ("multi_arm: 2\narms:\n" + GOOD_ARM, 1, "multi_arm", "unknown version"),
    ("arms:\n" + GOOD_ARM, None, "multi_arm", "required key is missing"),
    ("multi_arm: 1\narms: []\n", 2, "arms", "non-empty list"),
    ("multi_arm: 1\narms:\n" + GOOD_ARM + GOOD_ARM.replace("[A]", "[B]"), 4, "arms[1].name", "used twice"),
    ("multi_arm: 1\narms:\n" + GOOD_ARM + GOOD_ARM.replace("name: a", "name: b"), 4, "arms[1].families",
     "module A/J1_base is in arm 'a' and in arm 'b'"),
    ("multi_arm: 1\narms:\n  - {name: a, config: nowhere.cfg.yaml}\n", 3, "arms[0].config", "file not found"),
    ("multi_arm: 1\narms:\n  - name: a\n    config: " + X6 + "\n    base: {xyz: [0, 1e9, 0]}\n", 5,
     "arms[0].base.xyz[1]", "within ±20 m"),
    ("multi_arm: 1\narms:\n  - name: a\n    config: " + X6 + "\n    base: {xyz: [0, 0]}\n", 5,
     "arms[0].base.xyz", "3 numbers"),
    ("multi_arm: 1\narms:\n  - name: a\n    config: " + X6 + "\n    base: {pos: [0, 0, 0]}\n", 5,
     "arms[0].base.pos", "unknown key"),
    ("multi_arm: 1\narms:\n  - {name: 'a b', config: " + X6 + "}\n", 3, "arms[0].name", "A-Z a-z 0-9"),
    ("multi_arm: 1\narm_clearance: -1\narms:\n" + GOOD_ARM, 2, "arm_clearance", "[0, 0.5]"),
    ("multi_arm: 1\narms:\n  - {name: a, config: " + X6 + ", families: [A, B]}\n", 3, "arms[0].families",
     "2 families for the robot config's 6 names"),
])
def test_bad_input_names_file_line_and_key(tmp_path, body, line, key, words):
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_multi_arm_config(path)
    err = info.value
    assert err.file == str(path) and err.key == key and err.line == line, str(err)
    assert words in err.message, err.message


def test_a_bad_robot_config_is_reported_with_its_own_file_and_the_arm(tmp_path):
    robot = tmp_path / "arm.cfg.yaml"
    hrdf = CONFIGS_DIR.parent / "hrdf_kits" / "x-series-6dof.hrdf"
    robot.write_text(f"version: 1.1\nfamilies: [A]\nnames: [J1]\nhrdf: {hrdf}\n"
                     "plugins:\n  - type: GravityCompensationEfort\n")
    path = _write(tmp_path, f"multi_arm: 1\narms:\n  - {{name: a, config: {robot.name}}}\n")
    with pytest.raises(ConfigError) as info:
        load_multi_arm_config(path)
    text = str(info.value)
    assert info.value.key == "arms[0].config" and info.value.line == 3
    assert f"{robot}:6 [plugins[0].type]" in text and "GravityCompensationEffort" in text, text


def test_the_yaml_reader_bounds_apply(tmp_path):
    path = _write(tmp_path, "multi_arm: 1\narms: &a [*a]\n")
    with pytest.raises(ConfigError):
        load_multi_arm_config(path)


# ---------------------------------------------------------------- a mobile base (a velocity group)
BASE_EXAMPLE = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
GOOD_BASE = "base:\n  name: base\n  families: [Rosie]\n  names: [W1, W2, W3]\n  actuator: T8-3\n"


def test_the_bundled_mobile_manipulator_has_an_omni_base_of_three_t8_3_wheels():
    cfg = load_multi_arm_config(BASE_EXAMPLE)
    base = cfg.base
    assert base is not None and [a.name for a in cfg.arms] == ["arm"]
    assert base.names == ("W1", "W2", "W3") and base.families == ("Rosie",) * 3 and base.actuator == "T8-3"
    assert base.rated_speed == pytest.approx(11.519, abs=1e-3) and base.rated_effort == pytest.approx(8.0)
    assert np.allclose(base.max_velocity, 9.6) and np.allclose(base.max_acceleration, 19.2)
    assert base.command_ttl == pytest.approx(0.25) and base.gains is None
    assert load_multi_arm_config(EXAMPLE).base is None


def test_a_base_defaults_to_its_actuators_rated_speed_and_a_half_second_stop(tmp_path):
    from hebictl.multi_config import DEFAULT_COMMAND_TTL, DEFAULT_STOP_TIME

    cfg = load_multi_arm_config(_write(tmp_path, "multi_arm: 1\narms:\n" + GOOD_ARM +
                                       GOOD_BASE.replace("T8-3", "x8-9")))
    base = cfg.base
    assert base is not None and base.actuator == "X8-9"   # HRDF's spelling, matched as HRDF does
    assert np.allclose(base.max_velocity, base.rated_speed) and base.rated_speed == pytest.approx(4.084, abs=1e-3)
    assert np.allclose(base.max_acceleration, base.rated_speed / DEFAULT_STOP_TIME)
    assert base.command_ttl == DEFAULT_COMMAND_TTL


def test_a_base_takes_hebi_gains_xml_relative_to_the_file(tmp_path):
    gains = "<group_gains><control_strategy>4</control_strategy><velocity><kp>0.03</kp></velocity></group_gains>"
    (tmp_path / "wheels.xml").write_text(gains)
    cfg = load_multi_arm_config(_write(tmp_path, "multi_arm: 1\narms:\n" + GOOD_ARM + GOOD_BASE +
                                       "  gains: wheels.xml\n"))
    assert cfg.base is not None and cfg.base.gains is not None and cfg.base.gains.control_strategy == (4,)


@pytest.mark.parametrize(("extra", "line", "key", "words"), [
    ("  max_velocity: 12\n", 9, "base.max_velocity", "over the actuator's rated 11.52 rad/s"),
    ("  max_velocity: [1, 2]\n", 9, "base.max_velocity", "2 values for 3 wheels"),
    ("  max_acceleration: -3\n", 9, "base.max_acceleration", "positive finite"),
    ("  max_acceleration: .nan\n", 9, "base.max_acceleration", "positive finite"),
    ("  command_ttl: 5\n", 9, "base.command_ttl", "[0.005, 1]"),
    ("  max_velocty: 3\n", 9, "base.max_velocty", "unknown key (did you mean 'max_velocity'?)"),
    ("  gains: nowhere.xml\n", 9, "base.gains", "file not found"),
])
def test_bad_base_input_names_file_line_and_key(tmp_path, extra, line, key, words):
    path = _write(tmp_path, "multi_arm: 1\narms:\n" + GOOD_ARM + GOOD_BASE + extra)
    with pytest.raises(ConfigError) as info:
        load_multi_arm_config(path)
    err = info.value
    assert err.file == str(path) and err.key == key and err.line == line, str(err)
    assert words in err.message, err.message


@pytest.mark.parametrize(("base", "key", "words"), [
    (GOOD_BASE.replace("T8-3", "T8-33"), "base.actuator", "unknown actuator type"),
    (GOOD_BASE.replace("  actuator: T8-3\n", ""), "base.actuator", "required key is missing"),
    (GOOD_BASE.replace("name: base", "name: a"), "base.name", "an arm's name too"),
    (GOOD_BASE.replace("[Rosie]", "[Rosie, Rosie]"), "base.families", "2 families for 3 names"),
    (GOOD_BASE.replace("[W1, W2, W3]", "[W1, W1]"), "base.names", "named twice"),
    (GOOD_BASE.replace("[Rosie]", "[A]").replace("[W1, W2, W3]", "[W1, J1_base]"), "base.names",
     "module A/J1_base is in arm 'a' and in the base"),
    (GOOD_BASE.replace("[W1, W2, W3]", "[" + ", ".join(f"W{i}" for i in range(9)) + "]"), "base.names",
     "at most 8"),
    ("base: [W1]\n", "base", "must be a mapping"),
])
def test_a_bad_base_is_refused_by_key(tmp_path, base, key, words):
    path = _write(tmp_path, "multi_arm: 1\narms:\n" + GOOD_ARM + base)
    with pytest.raises(ConfigError) as info:
        load_multi_arm_config(path)
    assert info.value.key == key and info.value.line is not None, str(info.value)
    assert words in info.value.message, info.value.message
