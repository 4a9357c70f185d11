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
