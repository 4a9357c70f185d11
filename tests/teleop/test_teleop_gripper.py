"""cmd/gripper moves a gripper: a config with user_data.has_gripper, on the mock backend, through mosquitto.

The broker tests wait for statuses (hang guards only) on a paced-clock arm, whose gripper moves in
the arm's simulated time; the sim-backend test steps the runner on a SimClock."""

from __future__ import annotations

import pytest

from hebictl.teleop.client import TeleopClient
from tests._support.teleop import ARM_ID, HANG_S, KIT6_GRIPPER, paced_servers, run

pytestmark = pytest.mark.broker


@pytest.fixture
def paced_server():
    """Teleop servers on paced-clock mock arms (tests/_support/teleop.py), stopped at the end."""
    with paced_servers() as make:
        yield make


def test_gripper_closes_and_opens_and_reports_its_state(broker, paced_server):
    server = paced_server(broker.url, config=KIT6_GRIPPER)
    assert server.runner.gripper is not None

    async def go():
        async with TeleopClient(broker.url, ARM_ID, name="op") as c:
            st = await c.wait_status(lambda s: s["gripper"] is not None and s["gripper"]["hardware"]
                                     and s["gripper"]["measured_opening"] is not None, timeout=HANG_S)
            assert st["gripper"]["measured_opening"] == pytest.approx(1.0)
            ack = await c.gripper(action="close", timeout=HANG_S)
            assert ack.accepted and "gripper to 0" in ack.detail
            closed = await c.wait_status(lambda s: s["gripper"]["measured_opening"] is not None
                                         and s["gripper"]["measured_opening"] < 0.01, timeout=HANG_S)
            ack = await c.gripper(position=0.6, timeout=HANG_S)
            assert ack.accepted
            # an effort blend: 0.6·(+1) + 0.4·(-5) = -1.4 N·m, the spring balances it part-way open
            half = await c.wait_status(lambda s: s["gripper"]["measured_opening"] > 0.3, timeout=HANG_S)
            assert (await c.gripper(action="open", timeout=HANG_S)).accepted
            opened = await c.wait_status(lambda s: s["gripper"]["measured_opening"] > 0.99, timeout=HANG_S)
            return closed["gripper"], half["gripper"], opened["gripper"]

    closed, half, opened = run(go(), timeout=HANG_S)
    assert closed["action"] == "close" and closed["effort"] == -5.0 and closed["client"] == "op"
    assert half["position"] == 0.6 and half["effort"] == pytest.approx(-1.4)
    assert opened["action"] == "open" and opened["effort"] == 1.0 and opened["measured_position"] > -0.02


def test_gripper_keeps_its_grip_through_an_estop(broker, paced_server):
    """An e-stop holds the arm and must not drop what the gripper holds: its effort stays commanded."""
    server = paced_server(broker.url, config=KIT6_GRIPPER)

    async def go():
        async with TeleopClient(broker.url, ARM_ID, name="op") as c:
            assert (await c.gripper(action="close", timeout=HANG_S)).accepted
            await c.wait_status(lambda s: (s["gripper"] or {}).get("measured_opening") is not None
                                and s["gripper"]["measured_opening"] < 0.01, timeout=HANG_S)
            assert (await c.estop(True, timeout=HANG_S)).accepted
            st = await c.wait_status(lambda s: s["estop"], timeout=HANG_S)
            assert (await c.gripper(action="open", timeout=HANG_S)).reason == "estop_engaged"
            return st

    st = run(go(), timeout=HANG_S)
    assert st["gripper"]["effort"] == -5.0
    assert server.runner.gripper.status().measured_opening < 0.01


def test_gripper_moves_on_the_sim_backend():
    """On the physics sim the arm's gripper is the simulated spool too: cmd/gripper closes it while
    the MuJoCo arm keeps running (runner stepped by hand on a SimClock, no broker needed)."""
    pytest.importorskip("mujoco", reason="the sim backend needs MuJoCo (the sim extra)")
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.gripper import attach_gripper
    from hebictl.hardware.clock import SimClock
    from hebictl.teleop.runner import ArmRunner
    from hebictl.teleop.schema import Envelope, GripperCommand

    cfg = load_config(KIT6_GRIPPER)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock)
    try:
        assert attach_gripper(arm, cfg, "sim") is not None
        runner = ArmRunner(arm)
        acks = []
        runner.on_result = acks.append
        for _ in range(10):
            runner.step()
        runner.submit("gripper", GripperCommand(Envelope(1, 0.0, "op"), 0.0, "close"))
        while clock.now() < 1.6:
            runner.step()
        g = runner.snapshot.gripper
        assert acks[-1].accepted and g.hardware and g.measured_opening == pytest.approx(0.0, abs=1e-9)
        assert runner.snapshot.state == "running"
    finally:
        arm.close()
