"""Mode ``app`` of the teleop arm thread: a Mobile IO app driven by ``cmd/input`` payloads, stepped by
hand on a SimClock (mock arm, no broker): the same guard and app as ``hebictl app``, started afresh
on entering the mode, its gravity compensation given back on leaving it, its counts in the status."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.inputs.teleop_app import TeleopApp
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import Envelope, EstopCommand, ModeCommand
from tests._support.paths import KIT6_CONFIG as KIT6

RATE = 100.0
_seq = iter(range(1, 10**9))


@pytest.fixture
def rig():
    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    app = TeleopApp(arm, "gravcomp")
    runner = ArmRunner(arm, rate_hz=RATE, app=app)
    acks = []
    runner.on_result = acks.append
    runner.step()
    yield runner, arm, app, acks
    arm.close()


def payload(buttons, seq=None) -> bytes:
    return json.dumps({"seq": next(_seq) if seq is None else seq, "ts": 0.0, "client": "op",
                       "buttons": buttons, "axes": [0.0] * 8}).encode()


def run(runner, n, buttons=None):
    for _ in range(n):
        if buttons is not None:
            assert runner.app.offer(payload(buttons))[0]
        runner.step()


def test_gravcomp_app_toggles_the_plugin_and_leaving_the_mode_gives_gravity_compensation_back(rig):
    runner, arm, app, acks = rig
    plugin = arm.plugin("GravityCompensationEffort")
    assert runner.snapshot.app["state"] == "not started" and not runner.snapshot.app["running"]
    runner.submit("mode", ModeCommand(Envelope(next(_seq), 0.0, "op"), "app"))
    run(runner, 2, [0] * 8)
    assert runner.mode == "app" and acks[-1].accepted
    assert runner.snapshot.app["state"] == "gravcomp_on" and runner.snapshot.app["led"] == "blue"
    up, down = [0] * 8, [0, 1, 0, 0, 0, 0, 0, 0]
    run(runner, 3, down)      # toggle down: on (already on)
    run(runner, 3, up)        # toggle up: off -> the plugin is off, the arm hand-guided and limp
    assert runner.snapshot.app["state"] == "gravcomp_off" and plugin.enabled is False
    assert runner.snapshot.app["led"] == "green"
    # a bad payload is dropped and counted by reason; a replayed seq too
    ok, reason, _ = app.offer(json.dumps({"seq": 10**6, "ts": 0.0, "client": "op", "buttons": [2] + [0] * 7,
                                          "axes": [0.0] * 8}))
    assert (ok, reason) == (False, "out_of_range")
    assert app.offer(payload(up, seq=1))[1] == "stale_seq"
    run(runner, 1)
    assert runner.snapshot.app["input_dropped"] == {"out_of_range": 1, "stale_seq": 1}
    # the e-stop while gravity compensation is off: the app ends first, the plugin is on again for the hold
    runner.engage_estop(EstopCommand(Envelope(next(_seq), 0.0, "op"), True))
    run(runner, 5)
    assert runner.mode == "idle" and plugin.enabled is True and not runner.snapshot.app["running"]
    assert runner.snapshot.app["state"] == "gravcomp_off"   # the last state it was in


def test_quitting_a_hand_guided_app_holds_a_finite_position(rig):
    runner, arm, app, acks = rig
    runner.submit("mode", ModeCommand(Envelope(next(_seq), 0.0, "op"), "app"))
    run(runner, 3, [0] * 8)
    run(runner, 3, [1, 0, 0, 0, 0, 0, 0, 0])   # B1: quit (HEBI's layout label ❌)
    run(runner, 20, [0] * 8)
    assert runner.snapshot.app["state"] == "exit"
    assert runner.snapshot.last_error is None, runner.snapshot.last_error
    assert np.all(np.isfinite(arm.pending_command.position))
    assert runner.mode == "app"


@pytest.mark.parametrize("path", ["offer", "take"])
def test_a_quit_tap_that_reaches_the_arm_in_one_burst_still_quits(rig, path):
    # a busy PC: the tap's down and up (and samples around them) land between two cycles, through the
    # thread bridge (offer) or the bridge process's link (take); the app must still see the press
    runner, arm, app, acks = rig
    runner.submit("mode", ModeCommand(Envelope(next(_seq), 0.0, "op"), "app"))
    run(runner, 3, [0] * 8)
    quit_down = [1, 0, 0, 0, 0, 0, 0, 0]
    for buttons in ([0] * 8, quit_down, quit_down, [0] * 8, [0] * 8):
        if path == "offer":
            assert app.offer(payload(buttons))[0]
        else:
            app.take(json_state(buttons), arm.clock.now())
    states = []
    for _ in range(3):
        runner.step()
        states.append(runner.snapshot.app["state"])
    print(f"app state over the 3 cycles after the burst ({path}): {states}")
    assert states[-1] == "exit"
    assert runner.snapshot.app["input_dropped"] == {}


def json_state(buttons):
    from hebictl.inputs.schema import parse_input

    return parse_input(payload(buttons), 0.0)


def test_the_bridge_takes_cmd_input_only_in_mode_app_and_acks_refusals_with_the_sources_reason(rig):
    import asyncio
    import time

    from hebictl.teleop.bridge import MqttBridge
    from hebictl.teleop.connection import BrokerSettings
    from hebictl.teleop.topics import Topics

    runner, arm, app, acks = rig
    bridge = MqttBridge(runner, BrokerSettings("127.0.0.1", 1), "arm1", account_tags=False, reject_ack_period=0.0)
    topic = Topics("arm1").cmd("input")
    seq = iter(range(time.time_ns() // 1000 - 10**6, 10**18))

    def send(buttons) -> None:
        body = {"seq": next(seq), "ts": time.time(), "client": "op", "buttons": buttons, "axes": [0.0] * 8}
        asyncio.run(bridge.handle(topic, json.dumps(body).encode()))

    def refusals() -> list[str]:
        out = []
        while (ack := bridge.acks.get_nowait()) is not None:
            out.append(ack.reason)
        return out

    send([0] * 8)                                   # mode idle: refused, nothing reaches the app
    assert refusals() == ["wrong_mode"] and app.source.accepted == 0
    runner.submit("mode", ModeCommand(Envelope(next(_seq), 0.0, "x"), "app"))
    runner.step()
    send([0] * 8)
    send([0, 2, 0, 0, 0, 0, 0, 0])                 # the body fails the input schema: the source's reason
    assert refusals() == ["out_of_range"]
    assert app.source.accepted == 1 and app.source.counts()[1] == {"out_of_range": 1}
    assert bridge.stats["accepted"] == 1 and bridge.stats["rejected"] == 2
    # without --app, mode app itself is refused at the bridge
    runner.app = None
    asyncio.run(bridge.handle(Topics("arm1").cmd("mode"), json.dumps(
        {"seq": next(seq), "ts": time.time(), "client": "op", "mode": "app"}).encode()))
    assert refusals() == ["no_app"]


def test_a_teleop_app_session_records_its_input_samples_for_replay(tmp_path):
    """``hebictl teleop --app NAME --record DIR``: every cmd/input sample the app took in is on the
    recording's input channel (as ``hebictl app --record`` writes it), in order, with the run's time,
    so ``--input replay:`` reads it back; samples offered outside mode ``app`` are not recorded."""
    pytest.importorskip("mcap")
    from hebictl.inputs.recording import INPUT
    from hebictl.inputs.sources import INPUT_TOPIC, recorded_samples
    from hebictl.recording.reader import read_run
    from hebictl.recording.writer import McapRecorder

    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    app = TeleopApp(arm, "gravcomp")
    runner = ArmRunner(arm, rate_hz=RATE, app=app)
    out = tmp_path / "session.mcap"
    sent = []
    with McapRecorder(out, arm, teleop=True, extra_topics=(INPUT,)) as rec:
        runner.recorder = rec
        app.record_to(rec)
        runner.step()
        assert app.offer(payload([0] * 8))[0]   # before mode app: polled away at the app's start
        runner.submit("mode", ModeCommand(Envelope(next(_seq), 0.0, "op"), "app"))
        runner.step()
        for k in range(20):
            buttons = [0, 1 if k % 4 < 2 else 0, 0, 0, 0, 0, 0, 0]
            assert app.offer(payload(buttons))[0]
            sent.append(buttons)
            runner.step()
        runner.engage_estop(EstopCommand(Envelope(next(_seq), 0.0, "op"), True))
        run(runner, 3)
        assert app.offer(payload([0] * 8))[0]   # after the app ended: not taken in, not recorded
        run(runner, 3)
    arm.close()
    assert read_run(out).counts[INPUT_TOPIC] == len(sent) == 20
    replay = recorded_samples(out)
    assert [list(s.buttons) for s in replay] == sent
    # one sample per cycle, timed on the arm's clock from the app's start
    period = arm.nominal_period
    t_run = np.array([s.t for s in replay])
    assert t_run[0] >= 0.0 and np.allclose(np.diff(t_run), period), (t_run, period)
