"""Teleop reads wall and monotonic time only through its injected TeleopClock (issue 10)."""

from __future__ import annotations

import ast
from pathlib import Path

from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.teleop.clock import TeleopClock
from hebictl.teleop.messages import Ack, status_payload
from hebictl.teleop.runner import ArmRunner
from tests._support.paths import KIT6_CONFIG as KIT6
from tests._support.paths import REPO_ROOT as REPO

#: modules allowed to read the system clocks: the clock itself, and the test broker's process start-up
ALLOWED = {"clock.py", "broker.py"}
TIME_FUNCS = {"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns"}


def test_no_direct_clock_reads_in_teleop():
    offenders = []
    for path in sorted((REPO / "hebictl" / "teleop").glob("*.py")):
        if path.name in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in TIME_FUNCS and isinstance(node.value, ast.Name)
                    and node.value.id == "time"):
                offenders.append(f"{path.name}:{node.lineno} time.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "time":
                offenders.append(f"{path.name}:{node.lineno} from time import ...")
    assert not offenders, offenders
    assert Path(REPO / "hebictl" / "cli" / "teleop_cmd.py").read_text().count("time.") == 0


def test_runner_and_payloads_use_the_injected_wall_clock():
    clock = TeleopClock(wall=lambda: 1234.5, monotonic=lambda: 7.0)
    arm = Arm.from_config(KIT6, backend="mock", clock=SimClock())
    try:
        runner = ArmRunner(arm, clock=clock)
        runner.step()
        runner.note_error("test", "x")
        runner.step()
        assert runner.snapshot.wall_time == 1234.5 and runner.snapshot.last_error.time == 1234.5
        assert b'"ts": 1234.5' in status_payload(runner.snapshot, "a", online=True, ts=clock.wall())
        assert b'"ts": 99.0' in Ack(1, "c", "stop", True).to_payload(99.0)
    finally:
        arm.close()
