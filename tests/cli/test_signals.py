"""Stop signals with stdout/stderr gone (``2>&1 | head -1``): the arm stops, the process ends, files are written.

Real processes on the mock and the MuJoCo sim backends; for teleop a real mosquitto on a free
loopback port. The pipe is the process's only stdout and stderr; the test reads one line and
closes its end, as ``head -1`` does, so every later write of the process fails with EPIPE.

Order, not durations: the processes run on ``--paced-clock`` (a loaded machine stretches their
simulated time instead of stopping the arm with a control gap), and the test waits for events,
with hang guards only: the signal handlers in place, then the arm moving in the run's live MCAP
recording (read while it is written), then the stop event in it. Hold lengths are read from the
recording's own clock. Beside them, SIGSTOP: of the whole run (a stall), and of teleop's bridge
process (``--bridge-silence``: a silent bridge is a lost link after that much of the arm's clock).
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

from tests._support.extras import extra_missing
from tests._support.teleop import PLUMBING_SILENCE_FLAGS

REPO = Path(__file__).resolve().parents[2]
GOAL = [0.6] * 6   # from the start (zeros on mock and sim) in 6 s: the signal comes while the arm moves
MOVING = 0.05      # [rad/s]: a joint this fast is moving (reached ~0.9 s into the goal; peak 0.19 rad/s)
HANG = 120.0       # [s] hang guard of every wait
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


def _live(record: Path) -> tuple[float, list[str]]:
    """(the arm's speed in the last /joint_states [rad/s], the /events texts) of the run's MCAP recording
    so far, read while it is written (a valid MCAP at every moment; (0, []) before it exists)."""
    from hebictl.recording.reader import iter_messages

    speed, events = 0.0, []
    if record.exists():
        for topic, _, msg in iter_messages(record, {"/joint_states", "/events"}):
            if topic == "/events":
                events.append(msg.message)
            else:
                speed = max(abs(j.velocity) for j in msg.joints)
    return speed, events


def _wait(what, why: str, alive=lambda: True) -> None:
    """Poll ``what()`` until true; ``alive()`` false or HANG seconds (a hang guard) fail with ``why``."""
    deadline = time.monotonic() + HANG
    while not what():
        assert alive(), f"exited while waiting for {why}"
        assert time.monotonic() < deadline, f"no {why} within {HANG} s"
        time.sleep(0.1)


def _stopped_by(kind: str):
    """A predicate on the live recording: the ``kind`` stop is in its events and the arm is at standstill."""
    def check(record: Path) -> bool:
        speed, events = _live(record)
        return any(e.startswith(f"{kind} -> stopped") for e in events) and speed < MOVING
    return check


def _spawn_run(backend: str, record: Path, *extra: str, closed: bool = False) -> subprocess.Popen:
    """``hebictl run`` moving to GOAL, returned once its handlers are in place and the arm is seen moving."""
    pytest.importorskip("mcap", reason=extra_missing("mcap"))
    pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))
    out = {"preexec_fn": _close_stdout_and_stderr} if closed else \
        {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", "--backend", backend, "--no-home",
                             "--goal", *map(str, GOAL), "--goal-time", "6", "--hold", "inf", "--record", str(record),
                             "--paced-clock", *extra], cwd=REPO, env=_env(), **out)
    try:
        _wait(lambda: _handles_sigterm(proc.pid) and _live(record)[0] > MOVING, "the run loop moving the arm",
              lambda: proc.poll() is None)
    except BaseException:
        proc.kill()
        proc.wait(10)
        print(proc.stdout.read().decode()[-2000:] if proc.stdout else proc.returncode)
        raise
    return proc


def _assert_stopped_midway(record: Path, kind: str) -> list[tuple[float, str]]:
    """The recording is complete; the arm moved, the ``kind`` stop (and no other) braked it to standstill
    short of the goal. Returns the recording's events, (time on the run's clock [s], text)."""
    from hebictl.recording.reader import load_recorder

    rec, logged = load_recorder(record)
    events = [(e.time, e.text) for e in logged]
    stops = [text for _, text in events if " -> stopped" in text]
    # one stop, or with a rest pose the park refused (tests/control/test_park.py) a second one of the same kind
    assert 1 <= len(stops) <= 2 and all(s.startswith(f"{kind} -> stopped") for s in stops), events
    assert events[-1][1].startswith("recording closed: "), events  # closed, not cut short
    pos, vel = rec.series("position"), rec.series("velocity")
    assert np.abs(pos[-1] - GOAL).max() > 0.05, "the arm went on to the goal instead of stopping"
    assert np.abs(vel).max() > MOVING, "the arm never moved: nothing was tested"
    print(f"moving at {np.abs(vel).max():.2f} rad/s before the signal; at the end |v| "
          f"{np.abs(vel[-1]).max():.4f} rad/s, stopped {np.abs(pos[-1] - GOAL).max():.3f} rad short of the goal")
    assert np.abs(vel[-1]).max() < MOVING
    return events


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_piped_to_head_stops_on_ctrl_c_twice_and_writes_its_recording(backend, tmp_path):
    """`hebictl run ... 2>&1 | head -1`, Ctrl-C, head takes the stop notice and exits, Ctrl-C again:
    exit 0 (an operator's stop), the --record file written, the arm stopped before the goal.
    (``--rt-priority 0``: otherwise the first line is the real-time grant said at start.)"""
    record = tmp_path / "run.mcap"
    proc = _spawn_run(backend, record, "--rt-priority", "0")
    try:
        proc.send_signal(signal.SIGINT)
        first = proc.stdout.readline().decode()
        proc.stdout.close()  # head -1 has its line and exits
        assert first.startswith("stopping: holding the arm"), first
        _wait(lambda: _stopped_by("interrupt")(record), "the interrupt stop and standstill in the recording",
              lambda: proc.poll() is None)  # the first Ctrl-C holds the braked arm until a second one
        proc.send_signal(signal.SIGINT)
        assert proc.wait(HANG) == 0
    finally:
        proc.kill()
        proc.wait(10)
    _assert_stopped_midway(record, "interrupt")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_with_its_output_gone_exits_on_one_signal(backend, tmp_path):
    """Output closed before the signal: the stop notice cannot be shown, so nobody can be asked for a
    second Ctrl-C; the arm brakes, holds for UNATTENDED_HOLD_S (1 s, on the run's clock: from the stop
    event to the recording's close), and the process exits with its recording."""
    from hebictl.cli.run_cmd import UNATTENDED_HOLD_S

    record = tmp_path / "run.mcap"
    proc = _spawn_run(backend, record)
    try:
        proc.stdout.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(HANG) == 0
    finally:
        proc.kill()
        proc.wait(10)
    events = _assert_stopped_midway(record, "interrupt")
    stop = next(t for t, text in events if text.startswith("interrupt -> stopped"))
    held = events[-1][0] - stop
    print(f"held {held:.3f} s on the run's clock from the stop to the recording's close")
    assert held >= UNATTENDED_HOLD_S


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
def test_run_started_without_stdout_and_stderr_exits_on_one_signal(tmp_path):
    """`hebictl run ... >&- 2>&-` (no descriptors at all: sys.stdout is None): it runs, one SIGTERM
    stops the arm, the bounded hold ends and the recording is written; exit 0."""
    record = tmp_path / "run.mcap"
    proc = _spawn_run("mock", record, closed=True)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HANG) == 0
    finally:
        proc.kill()
        proc.wait(10)
    _assert_stopped_midway(record, "terminate")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("backend", BACKENDS)
def test_run_mid_goal_exits_after_one_sigterm(backend, tmp_path):
    """A service manager's stop: one SIGTERM to a run moving to its goal (--hold inf, no --stop-hold).
    The arm brakes to standstill short of the goal, holds, and the process exits 0 by itself with
    its summary and recording (it used to hold until a second signal, then SIGKILL). The bundled
    config has a rest pose, but this run starts at the backends' zeros, outstretched through the
    table plane of the collision model, so the park's path check refuses it: the summary and the
    event say so and the arm holds where it braked (the park itself: tests/control/test_park.py). With
    ``--stop-hold 5`` it holds without trying to park. Order only: the stop notice, then the
    summary's terminate event; the timing is tested in simulated time (tests/control/test_park.py,
    tests/cli/test_run_cmd.py)."""
    for extra in ((), ("--stop-hold", "5")):
        record = tmp_path / f"run{len(extra)}.mcap"
        proc = _spawn_run(backend, record, *extra)
        try:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=HANG)  # a hang guard; the hold is 5 s
        finally:
            proc.kill()
            proc.wait(10)
        text = out.decode()
        assert proc.returncode == 0, text[-2000:]
        if extra:
            notice = text.index("stopping: holding the arm; for 5 s, then exiting")
        else:
            notice = text.index("SIGTERM: braking, then parking at user_data.rest_position")
            assert "park (SIGTERM): not parked (the rest pose was refused: collision: table and" in text, text[-2000:]
            assert "SIGTERM: not parking: the rest pose was refused: collision" in text, text[-2000:]
        assert notice < text.index("done after") < text.index("terminate -> stopped"), text[-2000:]
        _assert_stopped_midway(record, "terminate")


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
                             broker.url, *PLUMBING_SILENCE_FLAGS, "--arm-id", "pipe1", "--paced-clock", *extra],
                            cwd=REPO, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        first = proc.stdout.readline().decode()
        proc.stdout.close()
        assert first.startswith("hebictl teleop: "), first
        online = asyncio.run(_status(broker.url, "pipe1", lambda s: s["status"] == "online"
                                     and s.get("cycles", 0) > 0, HANG))
        assert online["state"] == "running"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(HANG) == 0
    finally:
        proc.kill()
        proc.wait(10)
    final = asyncio.run(_status(broker.url, "pipe1", lambda s: True, HANG))
    # the retained offline status says offline and nothing live (docs/teleop.md); the last event is the
    # interrupt, which left the arm stopped under the hold behaviour
    assert final["status"] == "offline" and final["state"] == "offline", final
    event = final["last_event"]
    assert event["kind"] == "interrupt" and event["state"] == "stopped" and "[hold]" in event["detail"], final


def _cmdline(pid: int) -> str:
    """A process's command line ("" once it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


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
    pytest.importorskip("mcap", reason=extra_missing("mcap"))
    pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))
    record = tmp_path / "run.mcap"
    line = (f"{sys.executable} -m hebictl run --backend mock --no-home --goal {' '.join(map(str, GOAL))} "
            f"--goal-time 6 --hold inf --paced-clock --record {record} 2>&1 | head -1")
    shell = subprocess.Popen(["sh", "-c", line], cwd=REPO, env=_env(), start_new_session=True,
                             stdout=subprocess.PIPE)
    found: list[int] = []

    def started() -> bool:
        # looked up on every poll: the first child seen may be the shell's fork before its exec
        found[:] = [k for k in _children(shell.pid) if "python" in _cmdline(k)]
        return bool(found) and _handles_sigterm(found[0]) and _live(record)[0] > MOVING

    try:
        _wait(started, "hebictl run moving the arm", lambda: shell.poll() is None)
        hebictl = found[0]
        os.killpg(shell.pid, signal.SIGINT)
        _wait(lambda: _stopped_by("interrupt")(record) or not Path(f"/proc/{hebictl}").exists(),
              "the interrupt stop in the recording")
        with contextlib.suppress(ProcessLookupError):  # head gone, hebictl may have ended its bounded hold
            os.killpg(shell.pid, signal.SIGINT)
        shell.wait(HANG)
        _wait(lambda: not Path(f"/proc/{hebictl}").exists(), "hebictl run's exit")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait(10)
    _assert_stopped_midway(record, "interrupt")


@pytest.mark.broker
def test_teleop_reports_its_real_time_grant_and_exits_after_one_sigterm(broker):
    """`hebictl teleop` says what its arm thread was granted, in one line at start and in the status
    topic's ``realtime`` object (SCHED_FIFO 80 where permitted: this suite runs as root); one SIGTERM
    brakes, parks or holds for the bounded time and exits 0 by itself (no second signal), the retained status
    offline with the 'terminate' stop as its last event."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--backend", "mock", "--broker",
                             broker.url, *PLUMBING_SILENCE_FLAGS, "--arm-id", "term1", "--rt-priority", "80",
                             "--paced-clock"], cwd=REPO,
                            env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        online = asyncio.run(_status(broker.url, "term1", lambda s: s["status"] == "online"
                                     and s.get("cycles", 0) > 0, HANG))
        rt = online["realtime"]
        print(rt)
        if os.geteuid() == 0:
            assert rt == {"policy": "SCHED_FIFO", "priority": 80, "requested_priority": 80, "memory_locked": True,
                          "cpu": None, "complete": True}, rt
        else:
            assert rt["requested_priority"] == 80 and rt["policy"] in ("SCHED_FIFO", "SCHED_OTHER")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=HANG)  # a hang guard; the hold is 5 s
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    assert proc.returncode == 0, text[-2000:]
    assert "hebictl teleop: real-time: " in text, text
    # the bundled config has a rest pose: the shutdown parks there (tests/teleop/test_runner.py), or, as
    # here from the mock's zeros (outstretched through the collision model's table plane), falls back
    # to the 5 s hold, the path check having refused it
    assert "SIGTERM: stopping teleop; the arm brakes, then parks at user_data.rest_position (at most 60 s" \
        in text, text
    final = asyncio.run(_status(broker.url, "term1", lambda s: True, HANG))
    assert final["status"] == "offline", final
    event = final["last_event"]
    assert event["kind"] == "terminate" and event["state"] == "stopped" and "[hold]" in event["detail"], final


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.skipif(__import__("importlib.util").util.find_spec("mujoco") is None,
                    reason="needs the sim extra (mujoco)")
def test_a_multi_arm_run_parks_every_arm_after_one_sigterm(tmp_path):
    """``hebictl run two-x-series-6dof.multi.yaml --backend sim --hold inf``: once both arms are home
    (seen in the live recording), one SIGTERM: the notice names both arms, every arm parks at its
    rest pose and the process exits 0 by itself, its summary with each arm's park line and the loop
    thread's real-time line. Order only; the park's figures are measured in simulated time
    (tests/cli/test_run_multi.py)."""
    pytest.importorskip("mcap", reason=extra_missing("mcap"))
    pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))
    from hebictl.config import load_config
    from hebictl.recording.reader import iter_messages

    home = np.array(load_config(REPO / "configs" / "x-series-6dof.cfg.yaml").user_data["home_position"])
    record = tmp_path / "run.mcap"

    def both_home() -> bool:
        last = {}
        if record.exists():
            for topic, _, msg in iter_messages(record, {"/left/joint_states", "/right/joint_states"}):
                last[topic] = np.array([j.position for j in msg.joints])
        return len(last) == 2 and all(float(np.abs(q - home).max()) < 0.01 for q in last.values())

    cell = REPO / "configs" / "two-x-series-6dof.multi.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", str(cell), "--backend", "sim", "--hold", "inf",
                             "--record", str(record), "--paced-clock"],
                            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _handles_sigterm(proc.pid) and both_home(), "both arms home", lambda: proc.poll() is None)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=HANG)   # a hang guard; the park is bounded at 60 s of the run's time
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    print(text[-3000:])
    assert proc.returncode == 0, text[-2000:]
    notice = text.index("SIGTERM: braking every arm, then parking left, right at user_data.rest_position")
    assert notice < text.index("done after"), text[-2000:]
    for name in ("left", "right"):
        assert f"  {name} park (SIGTERM): parked at the rest pose, measured" in text, text[-2000:]
    assert "real-time: " in text and "waiting for feedback (every arm's read)" in text


@pytest.mark.broker
@pytest.mark.parametrize("backend", BACKENDS)
def test_teleop_sigterm_stops_the_arm_then_the_bridge_process(backend, broker):
    """`hebictl teleop` runs its MQTT bridge in a child process (the default, ``--bridge process``):
    one SIGTERM to the parent brakes the arm and parks or holds it, the child publishes the offline
    status with that stop and is gone, and the parent exits 0 by itself."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--backend", backend, "--broker",
                             broker.url, *PLUMBING_SILENCE_FLAGS, "--arm-id", "split1", "--paced-clock", "--bridge",
                             "process"], cwd=REPO,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        online = asyncio.run(_status(broker.url, "split1", lambda s: s["status"] == "online"
                                     and s.get("cycles", 0) > 0, HANG))
        assert online["state"] == "running"
        bridges = [k for k in _children(proc.pid) if "hebictl.teleop.bridge_process" in _cmdline(k)]
        assert len(bridges) == 1, [_cmdline(k) for k in _children(proc.pid)]
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=HANG)
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    assert proc.returncode == 0, text[-2000:]
    assert not Path(f"/proc/{bridges[0]}").exists() or "hebictl.teleop.bridge_process" not in _cmdline(bridges[0])
    final = asyncio.run(_status(broker.url, "split1", lambda s: True, HANG))
    assert final["status"] == "offline", final
    event = final["last_event"]
    assert event["kind"] == "terminate" and event["state"] == "stopped" and "[hold]" in event["detail"], final
    print(f"\n[{backend}] SIGTERM: bridge process {bridges[0]} gone, offline status with {event['kind']}: "
          f"{event['detail']}")


@pytest.mark.broker
def test_teleop_bridge_silence_sets_the_limit_of_a_stopped_bridge_process(broker):
    """``--bridge-silence 1``: the bridge process stopped (SIGSTOP: alive, silent) is a lost link after
    1 s of the arm's clock, not the default 2 s: the event says so, the arm holds, and the unattended
    teleop (``--stop-hold 0``) exits with the bridge's error. The limit is read on the arm's paced clock
    (judged every cycle), so its figure is exact to a cycle; the wall clock is only a hang guard."""
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--backend", "mock", "--broker",
                             broker.url, "--arm-id", "silent1", "--paced-clock", "--bridge-silence", "1",
                             "--stop-hold", "0"], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        asyncio.run(_status(broker.url, "silent1", lambda s: s["status"] == "online" and s.get("cycles", 0) > 0,
                            HANG))
        bridges = [k for k in _children(proc.pid) if "hebictl.teleop.bridge_process" in _cmdline(k)]
        assert len(bridges) == 1, [_cmdline(k) for k in _children(proc.pid)]
        os.kill(bridges[0], signal.SIGSTOP)
        out, _ = proc.communicate(timeout=HANG)
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    lost = [line for line in text.splitlines() if "teleop_link_lost -> stopped" in line]
    assert proc.returncode == 2 and len(lost) == 1, text[-2000:]
    assert f"the MQTT bridge process (pid {bridges[0]}) sent nothing for 1.0 s" in lost[0], lost[0]
    assert "hebictl: error: the MQTT bridge process" in text, text[-2000:]
    print(f"\n--bridge-silence 1: {lost[0].split('WARNING ')[-1]}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
def test_a_sigstopped_run_names_the_gap_and_holds_the_fallen_arm_where_it_is(tmp_path):
    """The whole process stopped (SIGSTOP, as a busy robot PC or a debugger can) for 0.8 s mid-goal, on
    the sim and the wall clock: the modules' commands expire and the arm falls; on SIGCONT the next read
    names the stall (a latched ``control_gap`` of at least 800 ms, not a ``feedback_implausible``
    stop), and the unattended run then parks or holds and exits by itself (status 1, a safety stop)
    with its recording, the arm still. Plumbing and order only: what the brake then does is physics on
    a loaded wall clock, printed here (cycles whose command is 10 mrad behind a joint, along the way it
    fell, while it moves back faster than 0.05 rad/s: 0 in 5 of 5 runs beside an idle machine, 2-5
    cycles of the x6 elbow in 3 of 4 beside three busy processes, where late cycles start the brake
    during the elbow's rebound); the claims are tests/control/test_arm_stalls_sim.py's, exact in
    simulated time (the stall's length is whatever the kernel gave; the timing of the gap rule is
    tests/control/monitors/test_gap.py's)."""
    pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
    pytest.importorskip("mcap", reason=extra_missing("mcap"))
    from hebictl.recording.reader import load_recorder

    record = tmp_path / "run.mcap"
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", "--backend", "sim", "--no-home",
                             "--goal", *map(str, GOAL), "--goal-time", "6", "--hold", "inf", "--record", str(record)],
                            cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _handles_sigterm(proc.pid) and _live(record)[0] > MOVING, "the run loop moving the arm",
              lambda: proc.poll() is None)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.8)   # the stall itself (its length is measured by the run, not asserted here)
        proc.send_signal(signal.SIGCONT)
        _wait(lambda: any(e.startswith("control_gap -> stopped") for e in _live(record)[1]),
              "the control_gap stop in the recording", lambda: proc.poll() is None)
        out, _ = proc.communicate(timeout=HANG)   # unattended: it parks or holds, then exits by itself
    finally:
        proc.kill()
        proc.wait(10)
    text = out.decode()
    assert proc.returncode == 1, text[-2000:]   # a safety stop's exit status
    # the first stop names the stall: the gap, or (SIGSTOP between the sample and its delivery) the
    # sample's age; the recording has the control_gap either way (below)
    assert ("the arm stopped (control_gap: control gap of" in text
            or "the arm stopped (feedback_late: feedback is" in text), text[-2000:]
    assert "feedback_implausible -> stopped" not in text, text[-2000:]   # a fall over 0.8 s is possible
    rec, logged = load_recorder(record)
    events = [(e.time, e.text) for e in logged]
    gap_t, gap = next((t, s) for t, s in events if s.startswith("control_gap -> stopped"))
    length_ms = float(gap.split("control gap of ")[1].split(" ms")[0])
    assert length_ms >= 800.0, gap
    assert events[-1][1].startswith("recording closed: "), events
    t = rec.times
    after = t >= gap_t - 1e-9
    q, c, v = rec.series("position")[after], rec.series("position_command")[after], rec.series("velocity")[after]
    # the way each joint fell: from the last sample before the stall to the first one after it (a velocity
    # reading is no direction here: the first sample after the stall may be one taken before it)
    pre = rec.series("position")[t < gap_t - length_ms / 1e3 + 0.002]
    way = np.sign(q[0] - pre[-1])
    pulled = ((c - q) * way < -0.01) & (v * way < -0.05)
    print(f"\n{gap}\nafter it: {len(q)} samples, fastest joint {np.abs(v[0]).max():.2f} rad/s at the first; "
          f"cycles pulling a joint back {pulled.sum(axis=0).tolist()}; at the end |v| {np.abs(v[-1]).max():.4f} rad/s")
    if pulled.any():   # the rows around the first pulled cycle (printed: a figure, not asserted, see above)
        k = int(np.flatnonzero(pulled.any(axis=1))[0])
        tt = t[after]
        for i in range(max(0, k - 2), min(len(q), k + 3)):
            print(f"t={tt[i] - gap_t:+.4f} q={np.round(q[i], 3)} cmd={np.round(c[i], 3)} v={np.round(v[i], 2)}")
    assert np.abs(v[-1]).max() < MOVING
