"""``hebictl teleop-send`` against a running arm, and ``hebictl teleop`` as a real process.

Plumbing and ordering only (an ack after a command, an offline status after a signal, an exit after
the second Ctrl-C): the arms run on a paced clock, so a loaded machine does not stop them
(``control_gap``), and every wait is for an event with a hang guard (:data:`HANG_S`)."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from hebictl.cli import main, teleop_cmd
from hebictl.teleop.client import TeleopClient
from tests._support.teleop import ARM_ID, HANG_S, HOME, StderrLines, paced_servers, run, spawn_teleop

pytestmark = pytest.mark.broker


@pytest.fixture
def paced_server():
    """Teleop servers on paced-clock mock arms (tests/_support/teleop.py), stopped at the end."""
    with paced_servers() as make:
        yield make


def _send(url: str, *args: str) -> list[str]:
    return ["teleop-send", "--broker", url, "--arm-id", ARM_ID, "--client", "cli", "--timeout", str(HANG_S), *args]


def test_teleop_send_commands_and_exit_codes(broker, paced_server, capsys, monkeypatch):
    """Each teleop-send action prints its ack as JSON; exit 0 when accepted, 1 when rejected.

    A jog's summary counts what the arm answered: where every sample is refused the CLI returns
    once the refusals cover them all, so the quiet period after which it takes silence for
    acceptance is made a hang guard here (a loaded machine may answer later than its 0.5 s)."""
    server = paced_server(broker.url)
    cases = [
        (["mode", "position"], 0, ""),
        (["joint-goal", "--positions", "0", "1.2"], 1, "wrong_length"),
        (["joint-goal", "--positions", *map(str, HOME), "--duration", "0.3"], 0, ""),
        (["cartesian-goal", "--position", "5", "0", "0"], 1, "ik_failed"),
        (["gripper", "--action", "close"], 0, ""),
        (["stop"], 0, ""),
        (["estop", "--engaged", "true"], 0, ""),
        (["mode", "jog"], 1, "estop_engaged"),
        (["estop", "--engaged", "false"], 0, ""),
        (["mode", "jog"], 0, ""),
        (["jog", "--velocity", "0.2", "0", "0", "0", "0", "0", "--for", "0.2", "--rate", "50"], 0, ""),
        (["mode", "position"], 0, ""),
        (["jog", "--velocity", "0.2", "0", "0", "0", "0", "0", "--for", "0.1", "--rate", "50"], 1, "wrong_mode"),
    ]
    for args, code, reason in cases:
        with monkeypatch.context() as patch:
            if args[0] == "jog" and code == 1:
                patch.setattr(teleop_cmd, "JOG_ACK_QUIET_S", HANG_S)
            assert main(_send(broker.url, *args)) == code, args
        out = capsys.readouterr().out.strip()
        if args[0] == "jog":  # one line per rejection ack, then a summary ack of the stream
            lines = [json.loads(line) for line in out.splitlines()]
            summary = lines[-1]
            # how many samples the stream holds depends on the wall clock (--for at --rate): at least the release
            assert summary["topic"] == "jog" and summary["samples"] >= 1, summary
            assert summary["rejected"] == sum(1 + a.get("coalesced", 0) for a in lines[:-1])
            assert all(a["reason"] == "wrong_mode" for a in lines[:-1])
            assert summary["rejected"] == (summary["samples"] if code == 1 else 0), summary
        if reason is not None:
            ack = json.loads(out.splitlines()[-1])
            assert ack["reason"] == reason and ack["accepted"] == (code == 0) and ack["client"] == "cli", (args, ack)
    assert main(_send(broker.url, "status")) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["status"] == "online" and status["gripper"]["action"] == "close"
    assert status["gripper"]["position"] == 0.0
    assert server.runner.snapshot.gripper.client == "cli"


def test_teleop_send_errors_are_one_line(broker, capsys):
    """No arm listening, or a bad URL: a one-line error and exit code 2, no traceback."""
    assert main(_send(broker.url, "--timeout", "0.3", "stop")) == 2
    assert "no answer from arm" in capsys.readouterr().err
    assert main(["teleop-send", "--broker", "http://x", "stop"]) == 2
    assert "mqtt://" in capsys.readouterr().err


def _spawn(url: str, arm_id: str, *extra: str) -> subprocess.Popen:
    return spawn_teleop(url, "--arm-id", arm_id, *extra)


def test_teleop_process_serves_and_leaves_offline_status(broker, spawned):
    """`hebictl teleop` serves commands; killed hard, the broker publishes its last will (offline);
    stopped with SIGTERM it publishes offline itself, brakes and holds (never releases) and exits 0."""

    async def online_and_goal(arm_id: str) -> None:
        async with TeleopClient(broker.url, arm_id, name="op") as c:
            await c.wait_status(lambda s: s["status"] == "online" and s.get("cycles", 0) > 0, timeout=HANG_S)
            assert (await c.mode("position", timeout=HANG_S)).accepted
            # the process's mock starts at zeros: HOME needs >= 1.25 s at the joints' rated speed
            assert (await c.joint_goal(HOME, duration=0.2, timeout=HANG_S)).reason == "too_fast"
            assert (await c.joint_goal(HOME, duration=1.5, timeout=HANG_S)).accepted
            await c.wait_status(lambda s: s["at_goal"], timeout=HANG_S)

    async def status_of(arm_id: str) -> dict:
        async with TeleopClient(broker.url, arm_id, name="watch") as c:
            return await c.wait_status(lambda s: s["status"] == "offline", timeout=HANG_S)

    proc = _spawn(broker.url, "proc1")
    spawned.append(proc)
    run(online_and_goal("proc1"), timeout=HANG_S)
    proc.send_signal(signal.SIGKILL)
    proc.wait(HANG_S)
    will = run(status_of("proc1"), timeout=HANG_S)
    # the will is the offline notice registered at connect: nothing in it looks live
    assert will["state"] == "offline" and "mode" not in will and len(will["session"]) == 16

    proc = _spawn(broker.url, "proc2", "--stop-hold", "0.5")
    spawned.append(proc)
    err = StderrLines(proc)
    run(online_and_goal("proc2"), timeout=HANG_S)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(HANG_S) == 0, err.text()[-2000:]
    clean = run(status_of("proc2"), timeout=HANG_S)
    assert clean["state"] == "offline" and "mode" not in clean and "bridge" in clean
    text = err.text()
    assert "SIGTERM: stopping teleop" in text and "release" not in text.lower(), text[-2000:]


def test_teleop_ctrl_c_holds_until_a_second_ctrl_c(broker, spawned):
    """The first Ctrl-C disconnects and holds the arm with no end (the process stays); the second one
    exits 0. Ordering, not a quiet period: after the first Ctrl-C the process has said it holds until
    a second one and the bridge has gone offline (the arm thread is then in its hold), and it is still
    running; that an endless hold lasts until ``end_hold`` is shown in simulated time
    (tests/teleop/test_runner.py::test_an_endless_shutdown_hold_lasts_until_end_hold)."""
    proc = _spawn(broker.url, "proc3")
    spawned.append(proc)
    err = StderrLines(proc)

    async def watch(arm_id: str, status: str) -> dict:
        async with TeleopClient(broker.url, arm_id, name="op") as c:
            return await c.wait_status(lambda s: s["status"] == status and (status == "offline"
                                                                            or s.get("cycles", 0) > 0), timeout=HANG_S)

    run(watch("proc3", "online"), timeout=HANG_S)
    proc.send_signal(signal.SIGINT)
    said = err.wait_for("Ctrl-C: stopping teleop")
    assert "Ctrl-C again to exit" in said, said   # the endless hold (a bounded one names its seconds)
    run(watch("proc3", "offline"), timeout=HANG_S)
    assert proc.poll() is None, err.text()[-2000:]   # offline, and still holding the arm
    proc.send_signal(signal.SIGINT)
    assert proc.wait(HANG_S) == 0, err.text()[-2000:]
    text = err.text()
    assert "Ctrl-C: stopping teleop" in text and "Ctrl-C again: exiting" in text, text[-2000:]


def test_teleop_account_tags_on_refuses_untagged_commands(broker, spawned):
    """``--account-tags on`` says the broker runs the plugin of docs/teleop.md: on this anonymous broker
    without it every command arrives untagged and is refused ``untagged``, except an e-stop engage
    (never refused); ``--estop-supervisor`` is taken."""

    async def go():
        async with TeleopClient(broker.url, "tags", name="op") as c:
            await c.wait_status(lambda s: s["status"] == "online" and s.get("cycles", 0) > 0, timeout=HANG_S)
            return await c.mode("position", timeout=HANG_S), await c.estop(True, timeout=HANG_S)

    spawned.append(_spawn(broker.url, "tags", "--account-tags", "on", "--estop-supervisor", "boss"))
    mode, engage = run(go(), timeout=HANG_S)
    assert not mode.accepted and mode.reason == "untagged", mode
    assert engage.accepted, engage
