"""The arm thread's end of the link to the bridge process (hebictl/teleop/bridge_port.py), in
simulated time: a real ArmRunner on the mock backend, stepped by hand, and real socket pairs whose
other ends the test writes as the bridge process would.

What is shown, exactly: a bridge that has been heard and then sends nothing for SILENCE_LIMIT_S of
the arm's clock (stopped or hung: no e-stop could reach the arm) is a lost link in the first cycle
after the limit; one that reports every 0.2 s is never judged silent; before the bridge's first
message (its start) nothing is judged. The end-to-end case (SIGSTOP of the real child) is in
tests/teleop/test_bridge_process.py. ``cmd/input`` of ``hebictl teleop --app`` checked in the bridge
process (the app's own check) and sent over the link reaches the app as a sample it took in itself:
counted, stamped on the arm's clock, recorded for replay; the drops counted by reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.inputs.teleop_app import TeleopApp
from hebictl.teleop.bridge_port import BridgePort
from hebictl.teleop.link import Channel, socket_pair
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import Envelope, ModeCommand
from hebictl.teleop.silence import SILENCE_LIMIT_S
from tests._support.paths import KIT6_CONFIG as KIT6
from tests._support.teleop import step_until

RATE = 200.0
DT = 1.0 / RATE


@pytest.fixture
def linked():
    """(runner, clock, port, the bridge's end of the command channel)."""
    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    runner = ArmRunner(arm, rate_hz=RATE)
    arm_priority, bridge_priority = socket_pair()
    arm_commands, bridge_commands = socket_pair()
    port = BridgePort(runner, Channel(arm_priority), Channel(arm_commands), state_rate_hz=50.0)
    runner.port = port
    yield runner, clock, port, Channel(bridge_commands)
    for s in (bridge_priority, bridge_commands):
        s.close()
    port.priority.close()
    port.commands.close()
    arm.close()



def test_a_bridge_heard_then_silent_for_the_limit_is_a_lost_link(linked):
    runner, clock, port, bridge = linked
    runner.step()
    step_until(runner, clock, 3 * SILENCE_LIMIT_S)   # not heard yet (the child is starting): no judgement
    assert not port.lost.is_set()
    assert bridge.send(("bridge_stats", {"received": 0}))
    heard = clock.now()
    runner.step()                                       # its poll, at ``heard``, reads the report
    lost_at = step_until(runner, clock, 10 * SILENCE_LIMIT_S, stop=port.lost.is_set)
    silent = lost_at - heard
    print(f"\nsilent bridge: lost link after {silent:.3f} s of the arm's clock (limit {SILENCE_LIMIT_S} s, "
          f"cycle {DT * 1e3:.0f} ms): {port.lost_detail}")
    assert port.lost.is_set() and port.wedged
    assert SILENCE_LIMIT_S < silent <= SILENCE_LIMIT_S + DT + 1e-9
    assert "sent nothing" in port.lost_detail
    runner.step()                                       # the lost link is applied: brake, hold, mode idle
    kinds = [e.kind.value for e in runner.arm.events.events]
    assert "teleop_link_lost" in kinds and "release" not in kinds
    assert runner.mode == "idle"


def test_a_bridge_that_reports_every_0_2_s_is_never_silent(linked):
    runner, clock, port, bridge = linked
    runner.step()
    for _ in range(50):                                 # 10 s of reports, 0.2 s apart
        assert bridge.send(("bridge_stats", {"received": 0}))
        step_until(runner, clock, 0.2)
    assert not port.lost.is_set() and not port.wedged
    assert port.bridge_stats == {"received": 0}


def test_input_samples_checked_in_the_bridge_process_reach_the_app_and_its_recording(tmp_path):
    """What the bridge process's input check (the app's own, :meth:`TeleopApp.input_check`) accepted
    arrives over the link as a sample the app took in: counted as accepted, stamped when the arm
    thread read it (another clock's stamp is not used), polled by the app one per cycle and recorded
    on the input channel, replayable; what the check dropped is counted by its reason."""
    pytest.importorskip("mcap")
    from hebictl.inputs.recording import INPUT
    from hebictl.inputs.sources import recorded_samples
    from hebictl.recording.writer import McapRecorder

    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    app = TeleopApp(arm, "gravcomp")
    runner = ArmRunner(arm, rate_hz=RATE, app=app)
    arm_priority, bridge_priority = socket_pair()
    arm_commands, bridge_commands = socket_pair()
    runner.port = BridgePort(runner, Channel(arm_priority), Channel(arm_commands), state_rate_hz=50.0)
    bridge = Channel(bridge_commands)
    check = app.input_check()                       # made here, run in the bridge process

    def offer(buttons: list[int], seq: int) -> None:
        payload = json.dumps({"seq": seq, "ts": 0.0, "client": "op", "buttons": buttons, "axes": [0.0] * 8})
        sample, reason, detail = check(payload, 1e6)   # the child's receipt stamp, on a clock not the arm's
        assert bridge.send(("input", sample, 1e6) if sample is not None else ("input_dropped", reason, detail))

    out = tmp_path / "session.mcap"
    sent = []
    with McapRecorder(out, arm, teleop=True, extra_topics=(INPUT,)) as rec:
        runner.recorder = rec
        app.record_to(rec)
        runner.step()
        runner.submit("mode", ModeCommand(Envelope(1, 0.0, "op"), "app"))
        runner.step()
        assert runner.mode == "app"
        for k in range(10):
            buttons = [0, 1 if k % 4 < 2 else 0, 0, 0, 0, 0, 0, 0]
            offer(buttons, 10 + k)
            sent.append(buttons)
            runner.step()
        offer([2] + [0] * 7, 100)                    # fails the input schema
        offer([0] * 8, 5)                            # not above the sender's last seq
        runner.step()
        status = runner.snapshot.app
    for s in (bridge_priority, bridge_commands):
        s.close()
    runner.port.priority.close()
    runner.port.commands.close()
    arm.close()
    assert status["input_accepted"] == 10 and status["input_dropped"] == {"out_of_range": 1, "stale_seq": 1}
    replay = recorded_samples(out)
    assert [list(s.buttons) for s in replay] == sent
    t_run = np.array([s.t for s in replay])              # the arm's clock from the app's start: one per cycle
    assert t_run[0] >= 0.0 and np.allclose(np.diff(t_run), DT), t_run
    print(f"\ninput over the link: {status['input_accepted']} accepted, dropped {status['input_dropped']}; "
          f"{len(replay)} recorded, {np.diff(t_run).mean() * 1e3:.0f} ms apart on the arm's clock")
