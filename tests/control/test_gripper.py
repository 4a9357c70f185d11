"""The kit gripper: effort blend against hebi-py's own ``hebi.arm.Gripper``, config settings, opening
on each backend, and driving it through an Arm (mock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.gripper import Gripper, GripperPlugin, GripperSettings, attach_gripper, open_gripper
from hebictl.errors import ConfigError
from hebictl.hardware.clock import SimClock
from hebictl.hardware.gripper import SimulatedGripper

REPO = Path(__file__).resolve().parents[2]
GRIPPER_CFG = REPO / "tests" / "teleop" / "data" / "x-series-6dof-gripper.cfg.yaml"
KIT6 = REPO / "configs" / "x-series-6dof.cfg.yaml"


@pytest.mark.parametrize("opening", [0.0, 0.25, 0.5, 1.0])
def test_effort_matches_hebi_arm_gripper(hebi, opening):
    """hebi.arm.Gripper(group, close, open).update(s) commands s·close + (1-s)·open; hebictl's
    opening is 1 - s (0 closed .. 1 open), so both must command the same effort."""
    group = hebi.util.create_imitation_group(1)
    ref = hebi.arm.Gripper(group, -5.0, 1.0)
    assert ref.update(1.0 - opening)
    clock = SimClock()
    g = Gripper(SimulatedGripper(clock=clock), GripperSettings(open_effort=1.0, close_effort=-5.0))
    g.set_opening(opening)
    assert g.status().effort == pytest.approx(float(ref.command.effort[0]), abs=1e-12)
    g.close()
    ref.close()
    assert g.status().effort == pytest.approx(float(ref.command.effort[0]), abs=1e-12)


def test_settings_from_config_and_hebi_loads_the_config(hebi):
    cfg = load_config(GRIPPER_CFG)
    s = GripperSettings.from_config(cfg)
    assert s is not None and (s.name, s.family, s.open_effort, s.close_effort) == ("gripperSpool", "Arm", 1.0, -5.0)
    assert s.gains is not None and s.gains.name == "gripper-spool.xml"
    assert GripperSettings.from_config(load_config(KIT6)) is None
    assert hebi.config.load_config(str(GRIPPER_CFG)).user_data["has_gripper"] is True


def test_bad_opening_and_bad_effort_are_refused():
    g = Gripper(SimulatedGripper(clock=SimClock()), GripperSettings())
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            g.set_opening(bad)
    cfg = load_config(GRIPPER_CFG)
    cfg.user_data["gripper_close_effort"] = float("inf")
    with pytest.raises(ConfigError, match="gripper_close_effort"):
        GripperSettings.from_config(cfg)


@pytest.mark.parametrize("backend", ["mock", "sim"])
def test_mock_and_sim_get_a_simulated_spool(backend):
    g = open_gripper(load_config(GRIPPER_CFG), backend, clock=SimClock())
    assert g is not None and isinstance(g.backend, SimulatedGripper)
    assert g.backend.names == ("gripperSpool",) and g.backend.command_lifetime == 0.25
    g.release()


def test_hebi_imitation_opens_a_module(hebi):
    """On hebi-imitation the gripper is its own one-module group, as in hebi-py's kit examples."""
    g = open_gripper(load_config(GRIPPER_CFG), "hebi-imitation", clock=SimClock())
    assert g is not None and not isinstance(g.backend, SimulatedGripper) and g.backend.size == 1
    g.close()
    assert g.send()
    g.release()


def test_arm_drives_the_gripper_closed_and_open():
    """Attached to an arm, the gripper is read and commanded every cycle: -5 N·m closes the spool
    to its end stop within about a second, +1 N·m opens it again within about two."""
    clock = SimClock()
    cfg = load_config(GRIPPER_CFG)
    arm = Arm.from_config(cfg, backend="mock", clock=clock)
    try:
        g = attach_gripper(arm, cfg, "mock")
        assert g is not None and attach_gripper(arm, cfg, "mock") is g       # once
        assert isinstance(arm.plugin("Gripper"), GripperPlugin)

        def run(seconds: float) -> None:
            for _ in range(int(seconds / 0.005)):
                clock.advance(0.005)
                arm.update()
                arm.send()

        run(0.1)
        assert g.status().measured_opening == pytest.approx(1.0)
        g.close()
        run(1.2)
        assert g.status().measured_opening == pytest.approx(0.0, abs=1e-9)
        g.open()
        run(0.3)
        assert 0.0 < g.status().measured_opening < 1.0
        run(2.5)
        assert g.status().measured_opening == pytest.approx(1.0, abs=1e-9)
    finally:
        arm.close()
    with pytest.raises(Exception, match="closed"):
        g.backend.write(g._cmd)
