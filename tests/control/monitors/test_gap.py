"""Control gaps on the sim, every bundled config: the controller stalls 0.1, 0.5 and 1 s in the
middle of a move (the clock runs on, physics follows it). Targets (issue 18): a stall longer
than the command lifetime is a latched ``control_gap`` naming its length with the positions
before and after; afterwards the arm holds where it is (no move back to the pre-gap target) and
no command step exceeds rated speed x dt. The figures are printed."""

from __future__ import annotations

import numpy as np
import pytest

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
        step = np.abs(np.diff(cmd, axis=0)) / (arm.limits.velocity_max * dt[:, None])
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
