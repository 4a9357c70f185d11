"""The silence rule of the bridge thread (hebictl/teleop/silence.py, ``--bridge thread``), the one the
bridge process is held to (its exact figures: tests/teleop/test_bridge_port.py).

In simulated time (a real ArmRunner on the mock backend, stepped by hand; the test beats the watch
as the bridge's event loop does): a bridge thread heard and then silent for SILENCE_LIMIT_S of the
arm's clock is a lost link in the first cycle after the limit (``teleop_link_lost`` naming the
thread: brake, hold, mode idle); one that beats every REPORT_PERIOD_S is never judged; nothing is
judged before its first beat or once it was asked to stop.

Plumbing, with a real wedge (a message handler that blocks the bridge's event loop; a real
mosquitto, the arm on a paced clock): the lost link is recorded while the loop is still blocked,
before anything of the exit; once the loop runs again the server's run ends with a TeleopError that
says so, and the arm holds. Every wait is for an event with a hang guard only.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.errors import TeleopError
from hebictl.hardware.clock import SimClock
from hebictl.teleop.bridge import MqttBridge
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.silence import REPORT_PERIOD_S, SILENCE_LIMIT_S, ThreadWatch
from tests._support.ordering import HANG, PatientClient, wait_until
from tests._support.paced import paced_servers
from tests._support.paths import KIT6_CONFIG as KIT6
from tests._support.teleop import ARM_ID, HOME, run, step_until

RATE = 200.0
DT = 1.0 / RATE


@pytest.fixture
def watched():
    """(runner, clock, the bridge thread's watch attached as the runner's port)."""
    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    runner = ArmRunner(arm, rate_hz=RATE)
    watch = ThreadWatch(runner)
    runner.port = watch
    yield runner, clock, watch
    arm.close()



def test_a_bridge_thread_heard_then_silent_for_the_limit_is_a_lost_link(watched):
    runner, clock, watch = watched
    runner.step()
    step_until(runner, clock, 3 * SILENCE_LIMIT_S)   # no beat yet (the loop is starting): no judgement
    assert not watch.lost.is_set()
    watch.beat("hebictl-teleop")
    heard = clock.now()
    runner.step()                                       # its poll, at ``heard``, sees the beat
    lost_at = step_until(runner, clock, 10 * SILENCE_LIMIT_S, stop=watch.lost.is_set)
    silent = lost_at - heard
    print(f"\nsilent bridge thread: lost link after {silent:.3f} s of the arm's clock (limit {SILENCE_LIMIT_S} s, "
          f"cycle {DT * 1e3:.0f} ms): {watch.lost_detail}")
    assert watch.lost.is_set() and watch.wedged
    assert SILENCE_LIMIT_S < silent <= SILENCE_LIMIT_S + DT + 1e-9
    assert watch.lost_detail.startswith("the MQTT bridge thread (hebictl-teleop) did not run"), watch.lost_detail
    runner.step()                                       # the lost link is applied: brake, hold, mode idle
    events = runner.arm.events.events
    lost = [e for e in events if e.kind.value == "teleop_link_lost"]
    assert len(lost) == 1 and lost[0].detail.startswith(watch.lost_detail)
    assert "release" not in [e.kind.value for e in events] and runner.mode == "idle"
    step_until(runner, clock, 3 * SILENCE_LIMIT_S)     # judged once: no second loss
    assert len([e for e in runner.arm.events.events if e.kind.value == "teleop_link_lost"]) == 1


def test_a_bridge_thread_that_beats_every_report_period_is_never_silent(watched):
    runner, clock, watch = watched
    runner.step()
    for _ in range(50):                                 # 10 s of beats, REPORT_PERIOD_S apart
        watch.beat()
        step_until(runner, clock, REPORT_PERIOD_S)
    assert not watch.lost.is_set() and not watch.wedged


def test_a_bridge_thread_asked_to_stop_is_not_judged(watched):
    """The bridge's teardown (publishing offline, disconnecting) and the shutdown hold after it may
    keep its loop from beating: that is no lost link."""
    runner, clock, watch = watched
    runner.step()
    watch.beat()
    runner.step()
    watch.expect_end()
    step_until(runner, clock, 5 * SILENCE_LIMIT_S)
    assert not watch.lost.is_set() and not watch.wedged


def test_the_server_watches_a_bridge_thread_and_not_a_bridge_process():
    """``TeleopServer(bridge="thread")`` attaches the watch as the runner's port and hands it to the
    bridge, which beats it (the bridge process's own link, BridgePort, is the same rule)."""
    from hebictl.teleop.connection import BrokerSettings
    from hebictl.teleop.server import TeleopServer

    arm = Arm.from_config(KIT6, backend="mock", clock=SimClock())
    try:
        server = TeleopServer(arm, BrokerSettings("127.0.0.1", 1), "w1", bridge="thread")
        assert isinstance(server.bridge, MqttBridge) and isinstance(server.runner.port, ThreadWatch)
        assert server.bridge.watch is server.runner.port
    finally:
        arm.close()


@pytest.mark.broker
def test_a_wedged_bridge_thread_is_a_lost_link_before_the_server_exits(broker):
    """A handler that blocks the bridge thread's event loop (a real wedge, in a real bridge): after
    SILENCE_LIMIT_S of the arm's clock the arm brakes and holds (``teleop_link_lost`` naming the
    thread, mode idle) while the loop is still blocked; once it runs again the bridge stops and the
    server's run ends with a TeleopError that says so, the lost link recorded before the exit's
    events. Order only (the limit, exactly: the simulated-time tests above)."""
    release = threading.Event()
    blocked = threading.Event()
    with paced_servers() as make:
        server = make(broker.url, bridge="thread", silence_limit=SILENCE_LIMIT_S)
        bridge = server.bridge
        assert isinstance(bridge, MqttBridge) and bridge.watch is server.runner.port
        handle = bridge.handle

        async def wedging_handle(topic, payload, *, retain=False):
            if topic.endswith("/cmd/stop"):
                blocked.set()
                release.wait(HANG)          # blocks the event loop: no beat, no e-stop, nothing
            await handle(topic, payload, retain=retain)

        bridge.handle = wedging_handle     # type: ignore[method-assign]

        async def go():
            async with PatientClient(broker.url, ARM_ID, name="op") as c:
                await c.wait_status(lambda s: s["status"] == "online")
                assert (await c.mode("position")).accepted
                assert (await c.joint_goal(list(np.add(HOME, 0.3)), duration=3.0)).accepted
                await c.send("stop", wait=False)

        try:
            run(go(), timeout=4 * HANG)
            wait_until(blocked.is_set, "the bridge's handler to block")
            wait_until(lambda: any(e.kind.value == "teleop_link_lost" for e in server.arm.events.events),
                       "a teleop_link_lost event while the bridge thread is blocked")
            assert not release.is_set() and server.runner.running   # found while the loop was still blocked
            event = next(e for e in server.arm.events.events if e.kind.value == "teleop_link_lost")
            assert "the MQTT bridge thread (hebictl-teleop) did not run" in event.detail, event.detail
        finally:
            release.set()
        wait_until(lambda: not server.runner.running, "the server's run to end once the loop ran again")
        with pytest.raises(TeleopError, match="did not run"):
            server.stop_background(HANG)
    kinds = [e.kind.value for e in server.arm.events.events]
    i = kinds.index("teleop_link_lost")
    # the lost link is the stop on record, not the exit's (the arm was stopped already when run() ended)
    assert not {"teleop_shutdown", "interrupt", "terminate"} & set(kinds[:i]), kinds
    assert "release" not in kinds[i:], kinds
    assert server.runner.mode == "idle" and server.runner.snapshot.state == "stopped"
    assert server.arm.mode.value == "hold" and not server.runner.snapshot.braking
    print(f"\n[bridge thread] a blocked handler -> {event.kind.value}: {event.detail}; events after it: {kinds[i:]}")

