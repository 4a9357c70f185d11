"""Stop signals with stdout/stderr gone (``2>&1 | head -1``): the arm stops, the process ends, files are written.

Real processes on the mock and the MuJoCo sim backends; for teleop a real mosquitto on a free
loopback port. The pipe is the process's only stdout and stderr; the test reads one line and
closes its end, as ``head -1`` does, so every later write of the process fails with EPIPE.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hebictl.control.recorder import Recorder

REPO = Path(__file__).resolve().parents[2]
GOAL = [0.6] * 6   # from the start (zeros on mock and sim) in 4 s: the arm is moving when the signal comes
BACKENDS = ["mock", pytest.param("sim", marks=pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("mujoco") is None, reason="needs the sim extra (mujoco)"))]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"}


def _handles_sigterm(pid: int) -> bool:
    """True once the process catches SIGTERM: its signal handlers (installed with the loop) are in place."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def _close_stdout_and_stderr() -> None:
    """In the child before exec: start without stdout and stderr at all (``>&- 2>&-``)."""
    os.close(1)
    os.close(2)


def _spawn_run(backend: str, record: Path, *extra: str, closed: bool = False) -> subprocess.Popen:
    out = {"preexec_fn": _close_stdout_and_stderr} if closed else \
        {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", "--backend", backend, "--no-home",
                             "--goal", *map(str, GOAL), "--goal-time", "4", "--hold", "inf", "--record", str(record),
                             *extra], cwd=REPO, env=_env(), **out)
    deadline = time.monotonic() + 120
    while not _handles_sigterm(proc.pid):
        assert proc.poll() is None, proc.stdout.read().decode()[-2000:] if proc.stdout else proc.returncode
        assert time.monotonic() < deadline, "run loop did not start"
        time.sleep(0.05)
    time.sleep(1.0)  # the goal is under way
    return proc


def _assert_stopped_midway(record: Path) -> None:
    """The recording exists, and the arm braked to standstill short of the goal (it was moving)."""
    rec = Recorder.load(record)
    pos, vel = rec.series("position"), rec.series("velocity")
    assert np.abs(pos[-1] - GOAL).max() > 0.05, "the arm went on to the goal instead of stopping"
    assert np.abs(vel).max() > 0.05, "the arm never moved: nothing was tested"
    print(f"moving at {np.abs(vel).max():.2f} rad/s before the signal; at the end |v| "
          f"{np.abs(vel[-1]).max():.4f} rad/s, stopped {np.abs(pos[-1] - GOAL).max():.3f} rad short of the goal")
    assert np.abs(vel[-1]).max() < 0.05


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_piped_to_head_stops_on_ctrl_c_twice_and_writes_its_recording(backend, tmp_path):
    """`hebictl run ... 2>&1 | head -1`, Ctrl-C, head takes the stop notice and exits, Ctrl-C again:
    exit 0 (an operator's stop), the --record file written, the arm stopped before the goal.
    (``--rt-priority 0``: otherwise the first line is the real-time grant said at start.)"""
    record = tmp_path / "run.npz"
    proc = _spawn_run(backend, record, "--rt-priority", "0")
    try:
        proc.send_signal(signal.SIGINT)
        first = proc.stdout.readline().decode()
        proc.stdout.close()  # head -1 has its line and exits
        assert first.startswith("stopping: holding the arm"), first
        time.sleep(0.5)
        assert proc.poll() is None, "the first Ctrl-C holds the arm until a second one"
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        print(f"exited {time.monotonic() - t:.2f} s after the second Ctrl-C")
    finally:
        proc.kill()
        proc.wait(10)
    _assert_stopped_midway(record)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_with_its_output_gone_exits_on_one_signal(backend, tmp_path):
    """Output closed before the signal: the stop notice cannot be shown, so nobody can be asked for a
    second Ctrl-C; the arm brakes, holds for UNATTENDED_HOLD_S (1 s), and the process exits with its recording."""
    record = tmp_path / "run.npz"
    proc = _spawn_run(backend, record)
    try:
        proc.stdout.close()
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        took = time.monotonic() - t
        print(f"exited {took:.2f} s after one Ctrl-C")
        assert took >= 1.0  # the bounded hold was kept
    finally:
        proc.kill()
        proc.wait(10)
    _assert_stopped_midway(record)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
def test_run_started_without_stdout_and_stderr_exits_on_one_signal(tmp_path):
    """`hebictl run ... >&- 2>&-` (no descriptors at all: sys.stdout is None): it runs, one SIGTERM
    stops the arm, the bounded hold ends and the recording is written; exit 0."""
    record = tmp_path / "run.npz"
    proc = _spawn_run("mock", record, closed=True)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait(10)
    _assert_stopped_midway(record)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_mid_goal_exits_after_one_sigterm(backend, tmp_path):
    """A service manager's stop: one SIGTERM to a run moving to its goal (--hold inf, no --stop-hold).
    The arm brakes to standstill short of the goal, holds, and the process exits 0 by itself with
    its summary and recording (it used to hold until a second signal, then SIGKILL). Order only:
    the stop notice, then the summary's terminate event; the hold's length is tested in simulated
    time (tests/cli/test_run_cmd.py)."""
    record = tmp_path / "run.npz"
    proc = _spawn_run(backend, record)
    try:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)  # a hang guard; the hold is 5 s
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    assert proc.returncode == 0, text[-2000:]
    notice = text.index("stopping: holding the arm; for 5 s, then exiting")
    assert notice < text.index("done after") < text.index("terminate -> stopped"), text[-2000:]
    _assert_stopped_midway(record)


# ---------------------------------------------------------------------------------------- teleop
async def _status(url: str, arm_id: str, predicate, timeout: float) -> dict:
    from hebictl.teleop.client import TeleopClient

    async with TeleopClient(url, arm_id, name="watch") as c:
        return await c.wait_status(predicate, timeout=timeout)


@pytest.mark.broker
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("extra", [(), ("--stop-hold", "inf")], ids=["default", "stop-hold-inf"])
def test_teleop_piped_to_head_stops_the_arm_and_exits_on_one_sigint(backend, extra, broker):
    """`hebictl teleop ... 2>&1 | head -1`, then one SIGINT: the arm stops (the retained status is
    offline with the arm stopped, by the interrupt, holding), and the process exits 0."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--backend", backend, "--broker",
                             broker.url, "--arm-id", "pipe1", *extra], cwd=REPO, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        first = proc.stdout.readline().decode()
        proc.stdout.close()
        assert first.startswith("hebictl teleop: "), first
        online = asyncio.run(_status(broker.url, "pipe1", lambda s: s["status"] == "online"
                                     and s.get("cycles", 0) > 0, 60.0))
        assert online["state"] == "running"
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        print(f"teleop on {backend} exited {time.monotonic() - t:.2f} s after one SIGINT")
    finally:
        proc.kill()
        proc.wait(10)
    final = asyncio.run(_status(broker.url, "pipe1", lambda s: True, 10.0))
    # the retained offline status says offline and nothing live (docs/teleop.md); the last event is the
    # interrupt, which left the arm stopped under the hold behaviour
    assert final["status"] == "offline" and final["state"] == "offline", final
    event = final["last_event"]
    assert event["kind"] == "interrupt" and event["state"] == "stopped" and "[hold]" in event["detail"], final


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        kids += [int(k) for k in text]
    return kids


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
                    reason="needs Linux /proc children lists")
def test_run_in_a_shell_pipeline_to_head_and_ctrl_c_from_the_terminal(tmp_path):
    """The literal case: `sh -c 'hebictl run ... 2>&1 | head -1'` in its own process group, Ctrl-C from the
    terminal (SIGINT to the whole group: head dies of it, the pipe closes), then Ctrl-C again: hebictl
    exits 0 and its --record file is written."""
    record = tmp_path / "run.npz"
    line = (f"{sys.executable} -m hebictl run --backend mock --no-home --goal {' '.join(map(str, GOAL))} "
            f"--goal-time 4 --hold inf --record {record} 2>&1 | head -1")
    shell = subprocess.Popen(["sh", "-c", line], cwd=REPO, env=_env(), start_new_session=True,
                             stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        hebictl = None
        while hebictl is None or not _handles_sigterm(hebictl):
            assert time.monotonic() < deadline and shell.poll() is None, "hebictl run did not start"
            pythons = [k for k in _children(shell.pid) if "python" in Path(f"/proc/{k}/cmdline").read_text()]
            hebictl = pythons[0] if pythons else None
            time.sleep(0.05)
        time.sleep(1.0)
        os.killpg(shell.pid, signal.SIGINT)
        time.sleep(1.0)
        assert Path(f"/proc/{hebictl}").exists(), "the first Ctrl-C holds the arm"
        os.killpg(shell.pid, signal.SIGINT)
        shell.wait(30)
        end = time.monotonic() + 30
        while Path(f"/proc/{hebictl}").exists() and time.monotonic() < end:
            time.sleep(0.05)
        assert not Path(f"/proc/{hebictl}").exists(), "hebictl run is still alive"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(10)
    _assert_stopped_midway(record)


@pytest.mark.broker
def test_teleop_reports_its_real_time_grant_and_exits_after_one_sigterm(broker):
    """`hebictl teleop` says what its arm thread was granted, in one line at start and in the status
    topic's ``realtime`` object (SCHED_FIFO 80 where permitted: this suite runs as root); one SIGTERM
    brakes, holds for the bounded time and exits 0 by itself (no second signal), the retained status
    offline with the 'terminate' stop as its last event."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--backend", "mock", "--broker",
                             broker.url, "--arm-id", "term1", "--rt-priority", "80"], cwd=REPO, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        online = asyncio.run(_status(broker.url, "term1", lambda s: s["status"] == "online"
                                     and s.get("cycles", 0) > 0, 60.0))
        rt = online["realtime"]
        print(rt)
        if os.geteuid() == 0:
            assert rt == {"policy": "SCHED_FIFO", "priority": 80, "requested_priority": 80, "memory_locked": True,
                          "cpu": None, "complete": True}, rt
        else:
            assert rt["requested_priority"] == 80 and rt["policy"] in ("SCHED_FIFO", "SCHED_OTHER")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)  # a hang guard; the hold is 5 s
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    assert proc.returncode == 0, text[-2000:]
    assert "hebictl teleop: real-time: " in text, text
    assert "SIGTERM: stopping teleop; the arm brakes and holds under gravity compensation (for 5 s, then exits" \
        in text, text
    final = asyncio.run(_status(broker.url, "term1", lambda s: True, 10.0))
    assert final["status"] == "offline", final
    event = final["last_event"]
    assert event["kind"] == "terminate" and event["state"] == "stopped" and "[hold]" in event["detail"], final
