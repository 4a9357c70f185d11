"""IMU plausibility on the sim, every bundled config: the base module's IMU reports an
orientation 90° or 180° off (its frame turned about x, as a module mounted wrong would). Target
(issue 18): an ``imu_implausible`` event, the configured gravity used, the end effector still
(< 5 mm over 1 s from the start). For contrast the same with the check disabled (bound raised to
π) is printed: the wrong gravity then moves the arm. Reference: the sim's true joint state."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.safety import EventKind
from tests.control.monitors.rig import CONFIGS, Trace, sim_arm

pytest.importorskip("mujoco")


def _turn_imu(degrees: float):
    half = np.radians(degrees) / 2.0
    turn = np.array([np.cos(half), np.sin(half), 0.0, 0.0])  # about x

    def apply(arm) -> None:
        w1, x1, y1, z1 = arm.backend.scene.imu_offset[0]
        w2, x2, y2, z2 = turn
        arm.backend.scene.imu_offset[0] = (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                                           w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    return apply


def _ee_travel(config: str, degrees: float, check: bool) -> tuple[float, object]:
    def start(arm) -> None:
        if not check:
            arm.monitors.imu.settings["max_angle"] = np.pi
        _turn_imu(degrees)(arm)
    arm, clock, home = sim_arm(config, settle=0, before_start=start)
    tr = Trace()
    tr.run(arm, clock, 1.0)
    ee = tr.arrays()[3]
    arm.close()
    return float(np.linalg.norm(ee - ee[0], axis=1).max()), arm


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("degrees", [90.0, 180.0])
def test_wrong_imu_is_an_event_and_configured_gravity_holds_the_arm(config, degrees):
    travel, arm = _ee_travel(config, degrees, check=True)
    unchecked, _ = _ee_travel(config, degrees, check=False)
    ev = [e for e in arm.events.events if e.kind is EventKind.IMU_IMPLAUSIBLE]
    print(f"\n{config} IMU {degrees:.0f}° off: end effector moved {travel * 1e3:.1f} mm in 1 s "
          f"(without the check: {unchecked * 1e3:.0f} mm); {ev[0].detail if ev else 'no event'}")
    assert len(ev) == 1 and f"{degrees:.1f}°" in ev[0].detail
    assert not arm.plugin("GravityCompensationEffort").use_imu
    assert travel < 0.005 < unchecked
