"""tools/watch_tier.py, the watchdog ``tools/dev test`` puts on the parallel tiers: a run that stops
reporting tests is reported (every process of its group, and the Python stacks of its pytest
processes) and ended, or resumed if it was only stopped; a run that keeps reporting is left alone.

The watched "runs" are real process groups (``start_new_session``) of Python processes that set up
their heartbeat and stack dump through ``tests/_support/watch.py``, as the suite's own processes do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WATCH = REPO / "tools" / "watch_tier.py"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the watchdog reads /proc")

#: a stand-in for a pytest run: sets up tests/_support/watch.py, beats every 50 ms for BEAT_FOR seconds,
#: then sits in a function the stacks must name (or exits, with EXIT_AFTER)
RUN = """
import os, signal, sys, time
from types import SimpleNamespace
from tests._support import watch
watch.configure()
def interrupted(*_):
    print("interrupted", flush=True)
    sys.exit(3)
signal.signal(signal.SIGINT, interrupted)
end = time.monotonic() + float(os.environ["BEAT_FOR"])
while time.monotonic() < end:
    watch.beat(SimpleNamespace(when="call", failed=False))
    time.sleep(0.05)
if os.environ.get("EXIT_AFTER"):
    sys.exit(0)
def a_test_that_never_returns():
    time.sleep(120)
a_test_that_never_returns()
"""


@contextlib.contextmanager
def _running(tmp_path: Path, beat_for: float, exit_after: bool) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """A stand-in run in a process group of its own, killed (and reaped) when the block ends."""
    beat, stacks = tmp_path / "beat", tmp_path / "stacks"
    stacks.mkdir()
    env = {**os.environ, "HEBICTL_TEST_HEARTBEAT": str(beat), "HEBICTL_TEST_STACKS": str(stacks),
           "BEAT_FOR": str(beat_for), "EXIT_AFTER": "1" if exit_after else "", "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-c", RUN], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        yield run, beat, stacks
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait(10)


def _watch(run: subprocess.Popen[str], beat: Path, stacks: Path, stall: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(WATCH), "--pid", str(run.pid), "--beat", str(beat), "--stacks",
                           str(stacks), "--stall", str(stall), "--grace", "5", "--poll", "0.1"],
                          capture_output=True, text=True, timeout=60)


def _state_in_report(report: str, pid: int) -> str:
    """The state letter the report gives process ``pid`` (its row: PID PPID PGID ST ...)."""
    row = next(line for line in report.splitlines() if line.split()[:1] == [str(pid)])
    return row.split()[3]


@pytest.mark.timeout(60)
def test_a_run_that_keeps_reporting_is_left_alone(tmp_path: Path) -> None:
    with _running(tmp_path, beat_for=3.0, exit_after=True) as (run, beat, stacks):
        done = _watch(run, beat, stacks, stall=1.0)   # 3 s of beats 50 ms apart against a 1 s stall
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert run.wait(10) == 0


@pytest.mark.timeout(60)
def test_a_stalled_run_is_reported_with_its_stacks_and_interrupted(tmp_path: Path) -> None:
    with _running(tmp_path, beat_for=0.5, exit_after=False) as (run, beat, stacks):
        t0 = time.monotonic()
        done = _watch(run, beat, stacks, stall=1.5)
        took = time.monotonic() - t0
        assert done.returncode == 1, done.stderr
        report = done.stderr
        assert "no test reported for" in report and f"process group {run.pid}" in report
        assert _state_in_report(report, run.pid) == "S", report   # sleeping, not stopped: nothing to resume
        assert "a_test_that_never_returns" in report, report   # its Python stack, from faulthandler
        assert "stopping the run" in report
        assert run.wait(10) == 3 and run.stdout is not None and "interrupted" in run.stdout.read()   # SIGINT first
        print(f"stall noticed and the run interrupted after {took:.1f} s (1.5 s stall + 2 s for the stacks)")
        assert took < 30


@pytest.mark.timeout(60)
def test_a_stopped_run_is_resumed_once_and_then_finishes(tmp_path: Path) -> None:
    with _running(tmp_path, beat_for=4.0, exit_after=True) as (run, beat, stacks):
        time.sleep(0.3)
        os.killpg(run.pid, signal.SIGSTOP)   # what a pause nobody lifted would leave
        done = _watch(run, beat, stacks, stall=1.0)
        assert done.returncode == 0, done.stderr
        assert "were stopped" in done.stderr and "SIGCONT" in done.stderr
        assert _state_in_report(done.stderr, run.pid) == "T", done.stderr
        assert run.wait(10) == 0   # it went on beating, and ended by itself


def test_it_refuses_to_watch_its_own_process_group(tmp_path: Path) -> None:
    """Interrupting the group would interrupt the watchdog and whoever started it."""
    done = subprocess.run([sys.executable, str(WATCH), "--pid", str(os.getpid()), "--beat", str(tmp_path / "b"),
                           "--group-wait", "0.5"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "own process group" in done.stderr


def test_normal_priority_lifts_every_thread_of_an_idle_priority_run(tmp_path: Path) -> None:
    """What tools/dev asks once the realtime lanes are done: SCHED_IDLE at nice 19 -> SCHED_OTHER at 0."""
    if not hasattr(os, "SCHED_IDLE") or os.geteuid() != 0:
        pytest.skip("needs SCHED_IDLE and root (lowering a nice value needs root, as in tools/dev's CI)")
    code = ("import os, threading, time; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); os.nice(19); "
            "threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); time.sleep(30)")
    run = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        def policies() -> set[tuple[int, int]]:   # (policy, nice) of every thread, from /proc stat
            out = set()
            for task in Path(f"/proc/{run.pid}/task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                out.add((int(fields[38]), int(fields[16])))
            return out

        deadline = time.monotonic() + 10
        while policies() != {(os.SCHED_IDLE, 19)} or len(list(Path(f"/proc/{run.pid}/task").iterdir())) < 2:
            assert time.monotonic() < deadline, policies()
            time.sleep(0.02)
        done = subprocess.run([sys.executable, str(WATCH), "--normal-priority", "--pid", str(run.pid)],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert policies() == {(os.SCHED_OTHER, 0)}
    finally:
        run.kill()
        run.wait(10)
