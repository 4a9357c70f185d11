"""The MQTT bridge in a child process (``TeleopServer(bridge="process")``, ``hebictl teleop``'s
default): plumbing and ordering through a real mosquitto, the arm on the mock backend on a paced
clock (tests/_support/paced.py). No wall-clock claim: every wait is for an event with a hang guard;
the figures under a flood are benchmarks/teleop.py's.

What is shown: a jog moves the arm; the e-stop engages and holds the arm where it was; only the
account that engaged it releases it; acks come back through the arm process; with a Mobile IO app
(``hebictl teleop --app``) ``cmd/input`` samples are checked in the child and move the arm in mode
``app``, a bad one refused with the input schema's reason and counted in the app's status; SIGKILL of the bridge
process is a lost link (the arm brakes and holds, the event names the bridge process) and the
server's run ends with an error, as a failed bridge thread does. SIGTERM of ``hebictl teleop`` (the
parent), and ``--bridge-silence``, are in tests/cli/test_signals.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import numpy as np
import pytest

from hebictl.errors import TeleopError
from hebictl.teleop.bridge_process import BridgeProcess
from hebictl.teleop.silence import SILENCE_LIMIT_S
from tests._support.accounts import OPERATOR2, accounts_broker, compile_doc_plugin
from tests._support.ordering import HANG, PatientClient, until, wait_until
from tests._support.paced import paced_servers
from tests._support.teleop import ARM_ID, ARM_USER, HOME, OPERATOR, run

pytest.importorskip("aiomqtt")
pytestmark = pytest.mark.broker


def _client(url: str, name: str = "op") -> PatientClient:
    return PatientClient(url, ARM_ID, name=name)


def test_jog_moves_the_arm_and_estop_holds_it(broker):
    """A jog through the bridge process moves joint 1 the way it was asked; the e-stop then stops it
    (latched, mode idle) and the arm holds: the position it commands stays where it came to rest."""
    with paced_servers() as make:
        server = make(broker.url, bridge="process")
        assert isinstance(server.bridge, BridgeProcess) and server.bridge.pid != os.getpid()

        async def go():
            async with _client(broker.url) as c:
                st = await c.wait_status(lambda s: s["status"] == "online")
                assert st["mode"] == "idle"
                ack = await c.mode("jog")
                assert ack.accepted, ack  # an ack the arm thread made, back through the bridge process
                await c.wait_status(lambda s: s["mode"] == "jog")
                start = np.array(server.runner.snapshot.position)
                velocity = [0.3, 0.0, 0.0, 0.0, 0.0, 0.0]
                while abs(server.runner.snapshot.position[0] - start[0]) < 0.02:
                    await c.jog(velocity, ttl=0.5, wait=False)
                    await asyncio.sleep(0.02)
                moved = np.array(server.runner.snapshot.position) - start
                assert moved[0] > 0.02 and np.abs(moved[1:]).max() < 1e-6, moved
                assert (await c.estop(True)).accepted
                st = await c.wait_status(lambda s: s["estop"] and s["state"] == "stopped")
                assert st["mode"] == "idle"
                await until(lambda: not server.runner.snapshot.braking and server.arm.mode.value == "hold",
                            "the brake to end in a hold")
                rest = np.array(server.runner.snapshot.command_position)
                # jog samples after the e-stop move nothing: a goal sent after them is refused for the e-stop
                for _ in range(5):
                    await c.jog(velocity, ttl=0.5, wait=False)
                assert (await c.joint_goal(HOME)).reason == "estop_engaged"
                np.testing.assert_allclose(server.runner.snapshot.command_position, rest, atol=1e-12)
                assert server.arm.mode.value == "hold"
                assert (await c.estop(False)).accepted
                await c.wait_status(lambda s: not s["estop"])

        run(go(), timeout=4 * HANG)
        print(f"\n[bridge process] jogged joint 1 and held it at {server.runner.snapshot.position[0]:.4f} rad "
              f"after the e-stop; link messages to the bridge dropped: {server.bridge.port.dropped}")


def test_estop_release_needs_the_owning_account(tmp_path):
    """Accounts (the broker plugin of docs/teleop.md) through the bridge process: another operator's
    release is refused ``estop_owner`` and leaves the e-stop engaged; the account that engaged it
    releases it."""
    plugin = compile_doc_plugin(tmp_path)
    with accounts_broker(tmp_path / "b", [plugin]) as b, paced_servers() as make:
        make(b.url, username=ARM_USER[0], password=ARM_USER[1], bridge="process")

        async def go():
            async with _account(b.port, OPERATOR) as op, _account(b.port, OPERATOR2) as op2:
                await op.wait_status(lambda s: s["status"] == "online")
                assert (await op.estop(True)).accepted
                await op.wait_status(lambda s: s["estop"] is True)
                ack = await op2.estop(False)
                assert not ack.accepted and ack.reason == "estop_owner" and OPERATOR[0] in ack.detail, ack
                assert (await op2.mode("position")).reason == "estop_engaged"  # still engaged after the refusal
                assert (await op.estop(False)).accepted
                await op.wait_status(lambda s: s["estop"] is False)

        run(go(), timeout=4 * HANG)


def test_cmd_input_moves_the_arm_in_mode_app_through_the_bridge_process(broker):
    """``hebictl teleop --app jog`` with the bridge process (the default): the jog app's joystick (A8
    full forward) streamed on ``cmd/input`` through the broker moves the end effector along +x. The
    samples are validated in the child and reach the app in the arm's process over the link: a
    sample that fails the input schema is refused there with the schema's reason (``out_of_range``)
    and counted in the app's status, as with the bridge thread; the description carries
    ``mobile_io``. On a loaded machine a gap in the stream pauses the app (stale input holds): B1
    re-arms it, as HEBI's flow asks of the operator (tests/inputs/apps/test_jog.py, exactly)."""
    with paced_servers() as make:
        server = make(broker.url, bridge="process", app="jog")
        assert isinstance(server.bridge, BridgeProcess) and server.bridge.pid != os.getpid()
        model = server.arm.model

        def ee() -> np.ndarray:
            return np.asarray(model.end_effector(np.array(server.runner.snapshot.position))[:3, 3])

        async def go():
            async with _client(broker.url) as c:
                await c.wait_status(lambda s: s["status"] == "online")
                description = await c.wait_for(lambda n, b: n == "description")   # republished every 5 s
                assert description["mobile_io"]["app"] == "jog", description.get("mobile_io")
                assert (await c.mode("app")).accepted
                await c.wait_status(lambda s: s["mode"] == "app" and s["app"]["running"])
                start = ee()
                forward = [0.0] * 7 + [1.0]                      # A8: the right joystick forward (+x)
                b1 = 0
                states: list[str] = []
                while ee()[0] - start[0] < 0.02:
                    state = server.runner.snapshot.app["state"]
                    if not states or states[-1] != state:
                        states.append(state)
                    b1 = 1 - b1 if state in ("paused", "disconnected") else 0   # B1 down, up: re-arm, home
                    await c.send("input", {"buttons": [b1] + [0] * 7, "axes": forward}, wait=False)
                    await asyncio.sleep(0.02)
                moved = ee() - start
                assert moved[0] > 0.02, moved
                ack = await c.send("input", {"buttons": [2] + [0] * 7, "axes": [0.0] * 8})
                assert ack is not None and not ack.accepted and ack.reason == "out_of_range", ack
                st = await c.wait_status(lambda s: s["app"]["input_dropped"].get("out_of_range", 0) >= 1)
                assert st["app"]["input_accepted"] > 0 and st["mode"] == "app", st["app"]
                return moved, states, st["app"]

        moved, states, app = run(go(), timeout=4 * HANG)
        print(f"\n[bridge process, --app jog] cmd/input moved the end effector by {np.round(moved * 1e3, 1)} mm; "
              f"app states {' -> '.join(states)}; inputs accepted {app['input_accepted']}, dropped "
              f"{app['input_dropped']}; link messages to the bridge dropped: {server.bridge.port.dropped}")


def _account(port: int, account: tuple[str, str]) -> PatientClient:
    return PatientClient(f"mqtt://127.0.0.1:{port}", ARM_ID, name=f"{account[0]}:console", username=account[0],
                         password=account[1])


def _moving_through_the_bridge_process(make, url: str):
    """A server with the bridge in a child process and its arm moving to a goal sent through it:
    (server, the child's pid)."""
    server = make(url, bridge="process", silence_limit=SILENCE_LIMIT_S)

    async def go():
        async with _client(url) as c:
            assert (await c.mode("position")).accepted
            assert (await c.joint_goal(list(np.add(HOME, 0.3)), duration=3.0)).accepted
            await c.wait_for(lambda n, b: n == "joints" and abs(b["position"][0] - HOME[0]) > 0.01)

    run(go(), timeout=4 * HANG)
    pid = server.bridge.pid
    assert pid is not None
    return server, pid


def test_sigkill_of_the_bridge_process_is_a_lost_link(broker):
    """SIGKILL of the bridge process: the arm brakes and holds (event ``teleop_link_lost`` naming the
    bridge process, mode idle), and the server's run ends with a TeleopError that says so."""
    with paced_servers() as make:
        server, pid = _moving_through_the_bridge_process(make, broker.url)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + HANG
        while not [e for e in server.arm.events.events if e.kind.value == "teleop_link_lost"]:
            assert time.monotonic() < deadline, "no teleop_link_lost event after SIGKILL of the bridge process"
            time.sleep(0.01)
        event = next(e for e in server.arm.events.events if e.kind.value == "teleop_link_lost")
        assert f"pid {pid}" in event.detail and "ended" in event.detail, event.detail
        # the server's run ends as with a failed bridge thread: the arm brakes, holds and the loop ends
        with pytest.raises(TeleopError, match=f"pid {pid}.*signal 9"):
            server.stop_background(HANG)
        assert server.runner.mode == "idle" and server.runner.snapshot.state == "stopped"
        assert server.arm.mode.value == "hold" and not server.runner.snapshot.braking
        assert np.isfinite(server.arm.pending_command.position).all()
        kinds = [e.kind.value for e in server.arm.events.events]
        assert "release" not in kinds[kinds.index("teleop_link_lost"):], kinds
        print(f"\n[bridge process] SIGKILL -> {event.kind.value}: {event.detail}; events after it: "
              f"{kinds[kinds.index('teleop_link_lost'):]}")


def test_a_stopped_bridge_process_is_a_lost_link(broker):
    """SIGSTOP of the bridge process (alive, silent: no e-stop could reach the arm): after
    SILENCE_LIMIT_S of the arm's clock without a message (it reports every 0.2 s) the arm brakes and
    holds (``teleop_link_lost``: "sent nothing"), the child is killed and the server's run ends with a
    TeleopError that says so. Order only (the limit, exactly: tests/teleop/test_bridge_port.py)."""
    with paced_servers() as make:
        server, pid = _moving_through_the_bridge_process(make, broker.url)
        os.kill(pid, signal.SIGSTOP)
        stopped_at = server.runner.clock.now()
        try:
            wait_until(lambda: any(e.kind.value == "teleop_link_lost" for e in server.arm.events.events),
                  "a teleop_link_lost event after SIGSTOP of the bridge process")
            event = next(e for e in server.arm.events.events if e.kind.value == "teleop_link_lost")
            assert f"pid {pid}" in event.detail and "sent nothing" in event.detail, event.detail
            with pytest.raises(TeleopError, match="sent nothing"):
                server.stop_background(HANG)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert server.bridge.process is not None and server.bridge.process.poll() is not None   # killed, reaped
        assert server.runner.mode == "idle" and server.runner.snapshot.state == "stopped"
        assert server.arm.mode.value == "hold" and not server.runner.snapshot.braking
        kinds = [e.kind.value for e in server.arm.events.events]
        assert "release" not in kinds[kinds.index("teleop_link_lost"):], kinds
        print(f"\n[bridge process] SIGSTOP -> {event.kind.value} {event.time - stopped_at:.2f} s of the arm's "
              f"clock later: {event.detail}; events after it: {kinds[kinds.index('teleop_link_lost'):]}")
