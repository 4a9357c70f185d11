"""Idle gravity compensation (hand-guiding) with an end-effector load the model does not know, on
the sim, every bundled config (issue 29, item 6a). Target: sinking is a ``gravcomp_sinking`` event
and the arm brakes to a hold where it is; the drop is then bounded. For contrast the drop with the
monitor off (reaction ``event``: hand-guiding goes on) is printed and must be larger. Reference:
the sim's true joint state through the model's forward kinematics."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.safety import ArmState, EventKind
from tests.control.monitors.rig import CONFIGS, Trace, sim_arm

pytest.importorskip("mujoco")


def _drop(config: str, mass: float, reaction: str = "hold") -> tuple[float, float, object]:
    """[m] the end effector's largest drop along gravity in 5 s of idle gravity compensation, its
    speed along gravity at the end [m/s], and the arm."""
    arm, clock, home = sim_arm(config, payload={"mass": mass} if mass else None, settle=0)
    if reaction != "hold":
        arm.monitors.gravcomp.reaction = reaction
    arm.set_idle("gravcomp")
    tr = Trace()
    tr.run(arm, clock, 5.0)
    t, _, _, ee, _ = tr.arrays()
    arm.close()
    down = arm.model.gravity / np.linalg.norm(arm.model.gravity)
    depth = (ee - ee[0]) @ down
    speed = float((depth[-1] - depth[-11]) / (t[-1] - t[-11]))
    return float(depth.max()), speed, arm


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("mass", [0.5, 1.0])
def test_gravcomp_that_sinks_is_held(config, mass):
    drop, speed, arm = _drop(config, mass)
    free, free_speed, _ = _drop(config, mass, reaction="event")
    ev = [e for e in arm.events.events if e.kind is EventKind.GRAVCOMP_SINKING]
    print(f"\n{config} idle gravcomp, {mass} kg unknown: dropped {drop * 1e3:.0f} mm in 5 s, {speed * 1e3:.0f} mm/s at "
          f"the end (monitor off: {free * 1e3:.0f} mm, {free_speed * 1e3:.0f} mm/s); "
          f"{ev[0].detail if ev else 'no event'}")
    assert len(ev) == 1 and "holding where the arm is" in ev[0].detail
    assert arm.state is ArmState.HOLD
    assert drop < 0.12 and drop < 0.5 * free
    assert abs(speed) < 0.005


@pytest.mark.parametrize("config", CONFIGS)
def test_gravcomp_without_a_load_is_left_alone(config):
    drop, speed, arm = _drop(config, 0.0)
    print(f"\n{config} idle gravcomp, no load: moved {drop * 1e3:.2f} mm in 5 s")
    assert EventKind.GRAVCOMP_SINKING not in arm.events.kinds()
    assert arm.state is ArmState.RUNNING and arm.idle == "gravcomp"
    assert drop < 0.002
