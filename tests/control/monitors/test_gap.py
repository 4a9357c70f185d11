"""Control gaps on the sim, every bundled config: the controller stalls 0.1, 0.5 and 1 s in the
middle of a move (the clock runs on, physics follows it). Targets (issue 18): a stall longer
than the command lifetime is a latched ``control_gap`` naming its length with the positions
before and after; afterwards the arm holds where it is (no move back to the pre-gap target) and
no command step that asks for motion exceeds rated speed x dt (a step onto the measured position,
landing on an arm that fell ahead of its brake, asks for none). The figures are printed."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.safety_supervisor import CONFIGS as SUP_CONFIGS
from benchmarks.safety_supervisor import SupRig
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState, EventKind
from tests.control.monitors.rig import CONFIGS, Trace, sim_arm

pytest.importorskip("mujoco")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("stall", [0.1, 0.5, 1.0])
def test_stall_is_a_latched_gap_then_hold_where_the_arm_is(config, stall):
    arm, clock, home = sim_arm(config)
    with arm:
        arm.set_goal(Goal(arm.dof).add_waypoint(position=home + np.eye(arm.dof)[0] * 1.5))
        Trace().run(arm, clock, 0.4)
        last_cmd = arm.pending_command.position.copy()
        clock.advance(stall)
        tr = Trace()
        tr.run(arm, clock, 2.5)
        t, cmd, q, ee, _ = tr.arrays()
        gaps = [e for e in arm.events.events if e.kind is EventKind.CONTROL_GAP]
        if stall < arm.backend.command_lifetime:
            assert not gaps
            print(f"\n{config} stall {stall:.1f} s: shorter than the command lifetime, no event")
            return
        assert len(gaps) == 1 and f"{stall * 1e3:.0f} ms" in gaps[0].detail
        assert "before [" in gaps[0].detail and "after [" in gaps[0].detail  # the positions, in the event
        finding = next(f for f in arm.monitors.findings if f.kind is EventKind.CONTROL_GAP)
        assert len(finding.values["position_before"]) == arm.dof == len(finding.values["position_after"])
        assert arm.state is ArmState.STOPPED
        dt = np.diff(t)
        # a step that brings the command closer to the measured position (it lands on an arm that fell
        # ahead of its brake: hebictl.control.modes.brake.Braking.land) commands no motion: left out,
        # as benchmarks/safety_supervisor.step_ratio leaves it out
        toward = np.abs(cmd[1:] - q[1:]) <= np.abs(cmd[:-1] - q[1:]) + 1e-12
        step = np.where(toward, 0.0, np.abs(np.diff(cmd, axis=0)) / (arm.limits.velocity_max * dt[:, None]))
        first = np.abs(cmd[0] - last_cmd)
        late = ee[t > t[-1] - 0.5]
        drift = float(np.linalg.norm(late - late[0], axis=1).max())
        print(f"\n{config} stall {stall:.1f} s: {gaps[0].detail}; command steps after it <= "
              f"{step.max():.2f}x rated speed x dt; first command moved {first.max():.3f} rad from the "
              f"pre-gap one (to the measured position); drift in the last 0.5 s {drift * 1e3:.1f} mm")
        if stall <= 0.5:
            assert step.max() <= 1.0 + 1e-6
            assert drift < 0.005
        # 1 s: the limp arm swings through its joint limits before the controller returns; what the
        # hold does outside the limits is the supervisor's (issue 18 item 1): figures printed only


@pytest.mark.parametrize(("phase", "payload"), [("rest", 0.0), ("move", 1.5)])
@pytest.mark.parametrize("key", list(SUP_CONFIGS))
def test_the_fall_after_a_long_gap_is_a_control_gap_never_a_contact(key, phase, payload):
    """An 800 ms stall (before the read) at rest or mid-goal, with an unknown payload or not: the
    limp arm falls unpowered and the controller comes back to joints at 2.5-5.6x their rated speed.
    That is a latched ``control_gap``; the arm touches nothing (MuJoCo's contact
    force on it stays 0), so no ``contact`` may follow it. It did on x7 and r6: the observer's
    one-interval momentum balance is off by tens of N·m beyond rated speed, and the sim's x7
    shoulder applied one module's torque while both reported theirs. Intervals beyond 1.25x rated
    speed are not judged (commanded motion never gets there); the sim applies both modules'."""
    rig = SupRig(key, payload=payload)
    try:
        arm = rig.arm
        rig.move() if phase == "move" else rig.settle(0.3)
        t0 = rig.clock.now()
        rig.clock.advance(0.8)
        speed, ratio, force = 0.0, 0.0, 0.0
        for _ in range(300):   # 1.5 s after the gap
            rig.cycle()
            speed = max(speed, float(np.max(np.abs(arm.last_feedback.velocity) / rig.vmax)))
            ratio = max(ratio, arm.monitors.contact.ratio)
            force = max(force, arm_contact_force(rig.be))
        kinds = [e.kind for e in arm.events.events if e.time >= t0]
        print(f"\n{key} {phase} {payload:g} kg, 0.8 s gap: up to {speed:.2f}x rated after it, contact residual "
              f"up to {ratio:.2f} of its bound, MuJoCo contact force {force:.1f} N; events "
              f"{[k.value for k in dict.fromkeys(kinds)]}")
        assert force == 0.0
        assert kinds[0] is EventKind.CONTROL_GAP and arm.state is ArmState.STOPPED
        assert EventKind.CONTACT not in kinds
    finally:
        rig.close()


def arm_contact_force(backend) -> float:
    """[N] the largest contact force MuJoCo computes on anything now (the scene has no obstacles)."""
    import mujoco

    m, d = backend.mj_model, backend.mj_data
    f = np.zeros(6)
    worst = 0.0
    for i in range(d.ncon):
        mujoco.mj_contactForce(m, d, i, f)
        worst = max(worst, float(np.linalg.norm(f[:3])))
    return worst
