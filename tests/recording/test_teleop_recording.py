"""A teleop session recorded to MCAP: the arm's cycles, the MQTT commands and their acks.

Real parts: mosquitto on a free loopback port, aiomqtt clients, the Arm on the mock backend looping
in its own thread (on a paced clock, so a loaded machine stretches its time instead of stopping it).
Read back with the ``mcap`` package's reader. Waits are for statuses, acks and the process's exit,
with hang guards only.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from importlib.util import find_spec

import numpy as np
import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording

from hebictl.recording import schemas
from hebictl.recording.writer import McapRecorder
from hebictl.teleop.client import TeleopClient
from tests._support.paths import KIT6_CONFIG, KIT6_HOME, REPO_ROOT
from tests._support.teleop import HANG_S, PLUMBING_MAX_AGE, PLUMBING_SILENCE_FLAGS, paced_kit6_arm, teleop_server

from .helpers import Readback

pytestmark = pytest.mark.broker

#: a hang guard for a whole session of eight waits, each guarded by HANG_S (one CI run on a loaded machine
#: took longer than one HANG_S for all of them)
SESSION_HANG_S = 4 * HANG_S

CONFIG = KIT6_CONFIG
HOME = list(KIT6_HOME)


async def _session(url: str, arm_id: str) -> None:
    async with TeleopClient(url, arm_id, name="op") as c:
        await c.wait_status(lambda s: s["status"] == "online", timeout=HANG_S)
        assert (await c.mode("position", timeout=HANG_S)).accepted
        assert (await c.joint_goal(list(np.add(HOME, 0.1)), timeout=HANG_S)).accepted  # segment time from the limits
        await c.wait_status(lambda s: s["at_goal"], timeout=HANG_S)
        bad = await c.joint_goal([0.0, 1.0], timeout=HANG_S)  # wrong length: refused
        assert bad is not None and not bad.accepted
        assert (await c.estop(True, timeout=HANG_S)).accepted
        assert not (await c.mode("position", timeout=HANG_S)).accepted  # e-stop latched


def test_teleop_session_records_cycles_commands_and_acks(broker, tmp_path):
    arm = paced_kit6_arm(rate_hz=250.0)
    server = teleop_server(arm, broker.url, "rec1", rate_hz=250.0, max_age=PLUMBING_MAX_AGE)
    rec = McapRecorder(tmp_path / "session.mcap", arm, config_path=CONFIG, teleop=True)
    server.runner.recorder = rec
    server.start_background(HANG_S)
    try:
        asyncio.run(asyncio.wait_for(_session(broker.url, "rec1"), SESSION_HANG_S))
    finally:
        server.stop_background(HANG_S)
        arm.close()
    summary = rec.close()
    run = Readback(tmp_path / "session.mcap")
    run.check_topics()
    assert run.declared == {t.name for t in schemas.TOPICS}
    assert len(run.messages["/joint_states"]) == server.runner.snapshot.cycle == summary.cycles
    commands = [m for _, m in run.messages["/teleop/commands"]]
    acks = [m for _, m in run.messages["/teleop/acks"]]
    # what reached the arm thread, in order (the wrong-length goal is refused by the bridge's schema check)
    assert [c["topic"] for c in commands] == ["mode", "joint_goal", "estop", "mode"], commands
    assert all(c["client"] == "op" and isinstance(c["seq"], int) for c in commands)
    assert commands[0]["body"] == {"mode": "position"} and commands[2]["body"] == {"engaged": True}
    # every ack, the bridge's refusal included
    assert [(a["topic"], a["accepted"], a["reason"]) for a in acks] == [
        ("mode", True, ""), ("joint_goal", True, ""), ("joint_goal", False, "wrong_length"), ("estop", True, ""),
        ("mode", False, "estop_engaged")], acks
    modes = [m["teleop_mode"] for _, m in run.messages["/supervisor/mode"]]
    assert modes[0] == "idle" and "position" in modes
    print(f"teleop session: {summary.cycles} cycles, {len(commands)} commands, {len(acks)} acks, "
          f"{len(run.messages['/events'])} event lines")


def test_teleop_process_records_a_session_file(broker, tmp_path):
    """`hebictl teleop --record DIR --foxglove` as a real process: one file for the session, closed on
    exit, and the live view announced on loopback."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--broker", broker.url, "--arm-id", "rec2",
                             *PLUMBING_SILENCE_FLAGS,
                             "--rate", "200", "--stop-hold", "0.1", "--paced-clock", "--max-age", str(PLUMBING_MAX_AGE),
                             "--record", str(tmp_path / "sessions"),
                             *(["--foxglove", "--foxglove-port", "0"] if find_spec("websockets") else [])],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        asyncio.run(asyncio.wait_for(_session(broker.url, "rec2"), SESSION_HANG_S))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(HANG_S) == 0, proc.stderr.read().decode()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(HANG_S)
    err = proc.stderr.read().decode()
    files = sorted((tmp_path / "sessions").glob("teleop-*.mcap"))
    assert len(files) == 1 and "recorded" in err, (files, err[-2000:])
    assert not find_spec("websockets") or "Foxglove live view on ws://127.0.0.1:" in err, err[-2000:]
    run = Readback(files[0])
    run.check_topics()
    assert run.metadata[schemas.RUN_METADATA]["arm_id"] == "rec2"
    assert any(not m["accepted"] for _, m in run.messages["/teleop/acks"])
