"""Per-joint contact thresholds from a config, as Franka's users set collision thresholds per joint
(``user_data.safety.monitors.contact.thresholds``): the values reach the contact monitor, one
number is every joint's, and bad input is a ConfigError naming the file and the key."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.errors import ConfigError
from hebictl.hardware import SimClock
from tests._support.paths import REPO_ROOT

KEY = "user_data.safety.monitors.contact.thresholds"


def x6_with(tmp_path, monitors: str):
    """The bundled x6 config with ``monitors`` (YAML under user_data.safety.monitors) added."""
    src = (REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml").read_text(encoding="utf-8")
    src = src.replace('hrdf: "../hrdf_kits/', f'hrdf: "{REPO_ROOT}/hrdf_kits/')
    src = src.replace('default: "gains/', f'default: "{REPO_ROOT}/configs/gains/')
    assert "  safety:\n" in src
    src = src.replace("  safety:\n", "  safety:\n    monitors:\n" + monitors, 1)
    path = tmp_path / "x6.cfg.yaml"
    path.write_text(src, encoding="utf-8")
    return path


def test_thresholds_per_joint_reach_the_monitor(tmp_path, hebi):
    path = x6_with(tmp_path, "      contact: {thresholds: [3.0, 6.0, 3.0, 1.0, 1.0, 0.8]}\n")
    hebi.config.load_config(str(path))  # hebi-py keeps user_data as written
    arm = Arm.from_config(load_config(path), clock=SimClock())
    with arm:
        np.testing.assert_array_equal(arm.monitors.contact.threshold, [3.0, 6.0, 3.0, 1.0, 1.0, 0.8])


def test_one_threshold_is_every_joints(tmp_path):
    arm = Arm.from_config(load_config(x6_with(tmp_path, "      contact: {thresholds: 2.5}\n")), clock=SimClock())
    with arm:
        np.testing.assert_array_equal(arm.monitors.contact.threshold, np.full(6, 2.5))


@pytest.mark.parametrize(("value", "message"), [
    ("[3.0, 6.0, 3.0]", "6 numbers"),
    ("[3.0, 6.0, 3.0, 1.0, 1.0, .nan]", "finite number > 0"),
    ("[3.0, 6.0, 3.0, 1.0, 1.0, .inf]", "finite number > 0"),
    ("[3.0, 6.0, 0.0, 1.0, 1.0, 1.0]", "finite number > 0"),
    ("[3.0, 6.0, -1.0, 1.0, 1.0, 1.0]", "finite number > 0"),
    ("[3.0, six, 3.0, 1.0, 1.0, 1.0]", "6 numbers"),
    ("[]", "6 numbers"),
    ("true", "6 numbers"),
])
def test_bad_thresholds_are_config_errors_naming_the_key(tmp_path, value, message):
    path = x6_with(tmp_path, f"      contact: {{thresholds: {value}}}\n")
    with pytest.raises(ConfigError) as info:
        Arm.from_config(load_config(path), clock=SimClock())
    err = info.value
    assert err.key == KEY and str(path) in str(err) and message in err.message, str(err)
