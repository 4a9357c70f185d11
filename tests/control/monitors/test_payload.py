"""Model mismatch on the sim, every bundled config: an end-effector payload the model does not
know (0, 0.5, 1 kg simulated). Targets (issue 18): a ``model_mismatch`` event with the estimated
mass (least squares through the end-effector Jacobian; checked against the simulated mass),
``at_goal`` honest with ``goal_status`` saying why, and ``Arm.set_payload`` taking the estimate
into the gravity model so the goal is then reached."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.goal import Goal
from hebictl.control.safety import EventKind
from hebictl.errors import ConfigError
from tests.control.monitors.rig import CONFIGS, Trace, sim_arm

pytest.importorskip("mujoco")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("mass", [0.0, 0.5, 1.0])
def test_unknown_payload_is_estimated_and_can_be_taken_in(config, mass):
    if mass == 0.5 and config != "x-series-6dof":
        pytest.skip("0.5 kg on one config keeps the run short; 0 and 1 kg on every config")
    arm, clock, home = sim_arm(config, payload={"mass": mass} if mass else None)
    with arm:
        Trace().run(arm, clock, 1.0)
        est = arm.payload_estimate
        events = [e for e in arm.events.events if e.kind is EventKind.MODEL_MISMATCH]
        print(f"\n{config} {mass:.1f} kg unknown: estimate {est['mass_kg']:.3f} kg; events {len(events)}")
        assert est is not None and est["mass_kg"] == pytest.approx(mass, abs=0.05 + 0.05 * mass)
        if mass == 0.0:
            assert not events and arm.at_goal is False
            return
        assert events and "kg" in events[0].detail
        arm.set_goal(Goal(arm.dof).add_waypoint(position=home))
        Trace().run(arm, clock, arm.trajectory.duration + 0.5)
        status = arm.goal_status
        print(f"  at home: at_goal={arm.at_goal}, goal_status: {status}")
        if not arm.at_goal:
            assert "model mismatch" in status and "kg" in status
        arm.set_payload(est["mass_kg"])
        Trace().run(arm, clock, 2.0)
        if not arm.at_goal:  # a remaining mismatch is estimated again at rest: take the refined figure
            arm.set_payload(arm.payload_estimate["mass_kg"])
            Trace().run(arm, clock, 2.0)
        err = np.abs(arm.last_feedback.position - home).max()
        print(f"  after set_payload({est['mass_kg']:.2f}): at_goal={arm.at_goal}, max error {err * 1e3:.1f} mrad, "
              f"status: {arm.goal_status}")
        assert arm.at_goal and arm.goal_status == "reached"
        assert EventKind.CONTACT not in arm.events.kinds()


def test_set_payload_rejects_bad_input():
    arm, clock, home = sim_arm("x-series-6dof", settle=2)
    with arm:
        for bad in (-1.0, float("nan")):
            with pytest.raises(ConfigError, match="payload mass"):
                arm.set_payload(bad)
        with pytest.raises(ConfigError, match="com"):
            arm.set_payload(1.0, com=(0.0, 0.1))
        arm.set_payload(0.0)
        assert arm.payload is None


@pytest.mark.parametrize("config", CONFIGS)
def test_a_load_off_the_end_effector_is_fitted_with_its_centre_of_mass(config):
    """1.5 kg simulated 3 cm out along the end effector's z, 1.5 s at home: the mass within 1 %
    (a point-mass fit read 1.47-1.48 kg, x7 1.62 kg) and the centre of mass's part across gravity
    (the part that exerts a moment in this pose) within 2 mm of the simulated one."""
    com = np.array([0.0, 0.0, 0.03])
    arm, clock, home = sim_arm(config, payload={"mass": 1.5, "com": com.tolist()})
    with arm:
        Trace().run(arm, clock, 1.5)
        est = arm.payload_estimate
        q = arm.last_feedback.position
        R = arm.model.end_effector(q)[:3, :3]
        down = arm.monitors.gravity() / np.linalg.norm(arm.monitors.gravity())
        across = np.eye(3) - np.outer(down, down)
        fitted, true = across @ R @ np.asarray(est["com_m"]), across @ R @ com
        print(f"\n{config}: 1.5 kg at 30 mm: estimate {est['extra_mass_kg']:.3f} kg, centre of mass across gravity "
              f"{np.round(fitted * 1000, 1)} mm (simulated {np.round(true * 1000, 1)} mm)")
        assert est["extra_mass_kg"] == pytest.approx(1.5, rel=0.01)
        assert np.linalg.norm(fitted - true) < 2e-3
