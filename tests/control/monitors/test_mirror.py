"""Double shoulder (configs/x-series-7dof-double-shoulder.cfg.yaml) on the sim: the mirror module
stops taking its commands (its own ``ignore_commands``), or its group fails (``disconnect``: its
writes raise HardwareError). Target (issue 18): a ``mirror_lost`` event within the command
lifetime; the error never propagates out of ``Arm.send()``; the arm's own modules keep theirs."""

from __future__ import annotations

import pytest

from hebictl.control.safety import EventKind
from tests.control.monitors.rig import Trace, first_event, sim_arm

pytest.importorskip("mujoco")


@pytest.mark.parametrize("fault", ["ignore_commands", "disconnect"])
def test_mirror_not_taking_commands_is_an_event_and_never_raises(fault):
    arm, clock, home = sim_arm("x-series-7dof-double-shoulder")
    with arm:
        mirror = arm.plugin("DoubledJointMirror")
        t0 = clock.now()
        if fault == "ignore_commands":
            mirror.backend.faults.ignore_commands()
        else:
            mirror.backend.faults.disconnect(0)
        for _ in range(60):
            arm.update()
            arm.send()  # never raises
        t = first_event(arm, EventKind.MIRROR_LOST)
        print(f"\nmirror {fault}: mirror_lost {(t - t0) * 1e3:.0f} ms after the fault; arm state {arm.state.value}; "
              f"arm modules delivered: {arm.commands_delivered}")
        assert t is not None and t - t0 < arm.backend.command_lifetime
        assert arm.commands_delivered
        assert [e.kind for e in arm.events.events].count(EventKind.MIRROR_LOST) == 1
        if fault == "disconnect":
            assert "stopped responding" in mirror.last_error


def test_healthy_mirror_has_no_event_and_carries_half_the_shoulder():
    arm, clock, home = sim_arm("x-series-7dof-double-shoulder")
    with arm:
        Trace().run(arm, clock, 0.5)
        mon = arm.monitors.mirror
        j = arm.plugin("DoubledJointMirror").index
        print(f"\nmirror effort {mon.joint_effort:.2f} N·m, arm module {arm.last_feedback.effort[j]:.2f} N·m")
        assert EventKind.MIRROR_LOST not in arm.events.kinds()
        assert mon.joint_effort == pytest.approx(arm.last_feedback.effort[j], rel=0.05)
