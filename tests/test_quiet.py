"""Pausing the idle-priority tiers while a latency is measured (tests/_support/quiet.py): the group
named by HEBICTL_TEST_PAUSE_PGID is stopped inside the block and running again after it, also when
the block fails; without the variable, or once the group is gone, nothing happens."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._support import quiet
from tests._support.paths import TESTS_DIR


def _state(pid: int) -> str:
    """The process state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _until(pred, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_group_is_stopped_inside_the_block_and_resumed_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in for the parallel tiers: a process group of its own (a parent and its child). On TERM
    # the parent reaps its child before it exits, so the group is gone once the parent is: a child
    # orphaned by SIGKILL would stay a zombie member of the group until PID 1 reaps it, which in a
    # container may be never.
    code = ("import signal, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "signal.signal(signal.SIGTERM, lambda *_: (child.wait(), sys.exit(0)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    group = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE,
                             text=True)
    assert group.stdout is not None and group.stdout.readline() == "ready\n"
    try:
        monkeypatch.setenv(quiet.PAUSE_ENV, str(group.pid))
        with pytest.raises(RuntimeError), quiet.machine_to_ourselves() as paused:
            assert paused
            assert _until(lambda: _state(group.pid) == "T"), _state(group.pid)
            raise RuntimeError("a failed measurement")
        assert _until(lambda: _state(group.pid) != "T"), "still stopped after the block"
        monkeypatch.delenv(quiet.PAUSE_ENV)
        with quiet.machine_to_ourselves() as paused:   # a plain pytest run: nothing to pause
            assert not paused and _state(group.pid) != "T"
    finally:
        os.killpg(group.pid, signal.SIGCONT)
        os.killpg(group.pid, signal.SIGTERM)
        try:
            group.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(group.pid, signal.SIGKILL)
            group.wait(10)
    assert _until(lambda: not _group_alive(group.pid)), "the stand-in group outlived its leader"
    monkeypatch.setenv(quiet.PAUSE_ENV, str(group.pid))   # the tiers are done: nothing to pause, no error
    with quiet.machine_to_ourselves() as paused:
        assert not paused


def test_every_timed_panel_test_exists() -> None:
    """A renamed timed test would lose its pause silently (and measure beside the parallel tiers)."""
    tree = ast.parse((TESTS_DIR / "panel" / "test_panel_e2e.py").read_text(encoding="utf-8"))
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    timed = next(ast.literal_eval(n.value.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "TIMED" for t in n.targets))
    assert timed and timed <= names, timed - names
