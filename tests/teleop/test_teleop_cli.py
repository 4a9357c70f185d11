"""``hebictl teleop-send`` against a running arm, and ``hebictl teleop`` as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hebictl.cli import main
from hebictl.teleop.client import TeleopClient
from tests._support.paths import REPO_ROOT as REPO
from tests._support.teleop import ARM_ID, HOME, run

pytestmark = pytest.mark.broker


def _send(url: str, *args: str) -> list[str]:
    return ["teleop-send", "--broker", url, "--arm-id", ARM_ID, "--client", "cli", "--timeout", "3", *args]


def test_teleop_send_commands_and_exit_codes(broker, make_server, capsys):
    """Each teleop-send action prints its ack as JSON; exit 0 when accepted, 1 when rejected."""
    server = make_server(broker.url)
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
        assert main(_send(broker.url, *args)) == code, args
        out = capsys.readouterr().out.strip()
        if args[0] == "jog":  # one line per rejection ack, then a summary ack of the stream
            lines = [json.loads(line) for line in out.splitlines()]
            summary = lines[-1]
            assert summary["topic"] == "jog" and summary["samples"] >= 5, summary
            assert summary["rejected"] == sum(1 + a.get("coalesced", 0) for a in lines[:-1])
            assert all(a["reason"] == "wrong_mode" for a in lines[:-1])
            assert (summary["rejected"] > 0) == (code == 1)
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
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--broker", url, "--arm-id", arm_id,
                             "--rate", "200", "--state-rate", "20", *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_teleop_process_serves_and_leaves_offline_status(broker):
    """`hebictl teleop` serves commands; killed hard, the broker publishes its last will (offline);
    stopped with SIGTERM it publishes offline itself, brakes and holds (never releases) and exits 0."""

    async def online_and_goal(arm_id: str) -> None:
        async with TeleopClient(broker.url, arm_id, name="op") as c:
            await c.wait_status(lambda s: s["status"] == "online" and s.get("cycles", 0) > 0, timeout=30.0)
            assert (await c.mode("position")).accepted
            # the process's mock starts at zeros: HOME needs >= 1.25 s at the joints' rated speed
            assert (await c.joint_goal(HOME, duration=0.2)).reason == "too_fast"
            assert (await c.joint_goal(HOME, duration=1.5)).accepted
            await c.wait_status(lambda s: s["at_goal"], timeout=5.0)

    async def status_of(arm_id: str) -> dict:
        async with TeleopClient(broker.url, arm_id, name="watch") as c:
            return await c.wait_status(lambda s: s["status"] == "offline", timeout=10.0)

    proc = _spawn(broker.url, "proc1")
    try:
        run(online_and_goal("proc1"), timeout=40.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        will = run(status_of("proc1"))
        # the will is the offline notice registered at connect: nothing in it looks live
        assert will["state"] == "offline" and "mode" not in will and len(will["session"]) == 16
    finally:
        proc.kill()
        proc.wait(10)

    proc = _spawn(broker.url, "proc2", "--stop-hold", "0.5")
    try:
        run(online_and_goal("proc2"), timeout=40.0)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() - t < 10
        clean = run(status_of("proc2"))
        assert clean["state"] == "offline" and "mode" not in clean and "bridge" in clean
        err = proc.stderr.read().decode()
        assert "SIGTERM: stopping teleop" in err and "release" not in err.lower(), err[-2000:]
    finally:
        proc.kill()
        proc.wait(10)


def test_teleop_ctrl_c_holds_until_a_second_ctrl_c(broker):
    """The first Ctrl-C disconnects and holds the arm (the process stays); the second one exits 0."""
    proc = _spawn(broker.url, "proc3")

    async def online(arm_id: str) -> None:
        async with TeleopClient(broker.url, arm_id, name="op") as c:
            await c.wait_status(lambda s: s["status"] == "online" and s.get("cycles", 0) > 0, timeout=30.0)

    try:
        run(online("proc3"), timeout=40.0)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.5)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]   # still holding the arm
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0, proc.stderr.read().decode()[-2000:]
        err = proc.stderr.read().decode()
        assert "Ctrl-C: stopping teleop" in err and "Ctrl-C again: exiting" in err, err[-2000:]
    finally:
        proc.kill()
        proc.wait(10)


def test_teleop_account_tags_on_refuses_untagged_commands(broker):
    """``--account-tags on`` says the broker runs the plugin of docs/teleop.md: on this anonymous broker
    without it every command arrives untagged and is refused ``untagged``, except an e-stop engage
    (never refused); ``--estop-supervisor`` is taken."""

    async def go():
        async with TeleopClient(broker.url, "tags", name="op") as c:
            await c.wait_status(lambda s: s["status"] == "online" and s.get("cycles", 0) > 0, timeout=30.0)
            return await c.mode("position"), await c.estop(True)

    proc = _spawn(broker.url, "tags", "--account-tags", "on", "--estop-supervisor", "boss")
    try:
        mode, engage = run(go(), timeout=40.0)
    finally:
        proc.kill()
        proc.wait(10)
    assert not mode.accepted and mode.reason == "untagged", mode
    assert engage.accepted, engage
