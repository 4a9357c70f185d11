"""``kill -9`` of a recording process at random moments: every file it leaves opens in the ``mcap``
package's own readers and holds every message committed before the kill, and ``hebictl log
recover`` gives each a summary (issue 34).

Real processes: ``hebictl run --record`` on the sim and the mock backend, and ``hebictl teleop
--record DIR`` against a real mosquitto, rotating its files every 1.2 s so kills land around a
rotation too. Each file is read the way Foxglove's library does, ``make_reader(f).iter_messages()``,
and with ``mcap.stream_reader.StreamReader``; neither may raise. Every file found while the process
runs is also read live: a recording is valid at every moment, not only after it. Right before the
kill the test reads what each file holds (what was committed by then); after it, each file must
hold all of that, in order: the kill lost nothing committed.

How much a kill loses is the commit cadence: every 0.5 s of the recording's own clock, tested
exactly in simulated time (tests/recording/test_mcapfile.py::test_commits_follow_the_recordings_own_clock).
Here, on the wall clock, the loss (the kill time minus the file's last ``/joint_states`` time; both
commands run on ``MonotonicClock``, the clock this test reads) is printed, and only its sign is
checked: nothing in a file is timed after the kill. ``--stop-hold inf``: a safety stop a loaded
machine may cause (a control gap) holds the arm, recording, until the kill, instead of exiting.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests._support.extras import extra_missing
from tests._support.teleop import PLUMBING_SILENCE_FLAGS

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording
pytest.importorskip("mcap", reason=extra_missing("mcap"))

from mcap.reader import make_reader
from mcap.records import Footer
from mcap.stream_reader import StreamReader

SEED = int(os.environ.get("HEBICTL_CRASH_SEED", "34"))
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def _joint_states(path: Path, topic: str = "/joint_states") -> list[int]:
    """Log times [ns] of ``topic`` (/joint_states; a multi-arm run's /NAME/joint_states), read with
    make_reader (raises if the file does not open)."""
    with path.open("rb") as f:
        return [m.log_time for _, ch, m in make_reader(f).iter_messages(log_time_order=False)
                if ch.topic == topic]


def _live_joint_states(path: Path, topic: str = "/joint_states") -> list[int]:
    """:func:`_joint_states` of a file being written: a read can race a commit (the seeking reader
    takes the end's footer, then reads from the start), so a failed read is tried once more, and
    must work then."""
    try:
        return _joint_states(path, topic)
    except Exception:
        return _joint_states(path, topic)


def _recorded_seconds(folder: Path, min_files: int, topic: str = "/joint_states") -> float:
    """How much run the newest file holds so far (0 before there are ``min_files``)."""
    files = sorted(folder.glob("*.mcap"))
    if len(files) < min_files:
        return 0.0
    times = _live_joint_states(files[-1], topic)
    return (times[-1] - times[0]) * 1e-9 if times else 0.0


def _kill_after(cmd: list[str], folder: Path, seconds: float, extra: float,
                min_files: int = 1, topic: str = "/joint_states") -> tuple[float, dict[Path, list[int]]]:
    """Start ``cmd``, SIGKILL it about ``extra`` s after its newest file holds ``seconds`` of run:
    (the kill time, the /joint_states times each file held right before the kill)."""
    proc = subprocess.Popen(cmd, cwd=tempfile.gettempdir(), env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180  # a hang guard
        while _recorded_seconds(folder, min_files, topic) < seconds:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            if time.monotonic() > deadline:
                pytest.fail(f"nothing recorded in 180 s: {cmd}")
            time.sleep(0.3)
        time.sleep(extra)  # a random moment, not a wait for anything
        committed = {path: _live_joint_states(path, topic) for path in sorted(folder.glob("*.mcap"))}
        killed_at = time.perf_counter()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the process ended before the kill: nothing was tested"
    return killed_at, committed


def _check(folder: Path, killed_at: float, committed: dict[Path, list[int]], label: str,
           topic: str = "/joint_states") -> None:
    """Every file opens in both readers and holds what it held before the kill; each recovers with a summary."""
    from hebictl.recording.recover import recover

    files = sorted(folder.glob("*.mcap"))
    assert files
    last = 0
    for path in files:
        with path.open("rb") as f:
            records = list(StreamReader(f).records)  # never raises
        assert isinstance(records[-1], Footer)
        with path.open("rb") as f:
            streamed = sum(1 for _ in make_reader(f).iter_messages(log_time_order=False))
        times = _joint_states(path, topic)
        before = committed.get(path, [])
        assert times[:len(before)] == before, f"{path.name}: messages committed before the kill are gone"
        last = max([last, *times])
        fixed = path.with_name(f"{path.stem}.recovered")
        result = recover(path, fixed)
        with fixed.open("rb") as f:
            reader = make_reader(f)
            summary = reader.get_summary()
            assert summary is not None and summary.statistics is not None
            assert summary.statistics.message_count == streamed == result.messages
            assert sum(1 for _ in reader.iter_messages()) == streamed
    assert committed and set(committed) <= set(files)
    loss = killed_at - last * 1e-9
    kept = sum(len(v) for v in committed.values())
    print(f"{label}: SIGKILL; {len(files)} file(s) open in make_reader and StreamReader, each recovered with a "
          f"summary and holding the {kept} joint states read before the kill; the last {loss:.3f} s before the "
          f"kill (wall clock) lost")
    assert loss >= 0  # nothing timed after the kill


@pytest.mark.parametrize("backend,runs", [("sim", 1), ("mock", 2)])
def test_sigkill_of_hebictl_run_leaves_files_the_mcap_readers_open(tmp_path, backend, runs):
    rng = random.Random(f"{SEED}-{backend}")
    if backend == "sim":
        pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
    for i in range(runs):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        seconds, extra = rng.uniform(1.0, 3.0), rng.uniform(0.0, 0.5)
        killed_at, committed = _kill_after([sys.executable, "-m", "hebictl", "run", "--backend", backend, "--record",
                                            str(folder / "run.mcap"), "--hold", "inf", "--stop-hold", "inf",
                                            "--quiet"], folder, seconds,
                                           extra)
        _check(folder, killed_at, committed,
               f"hebictl run --backend {backend} (seed {SEED}, kill {seconds + extra:.2f} s in)")


def test_sigkill_of_a_multi_arm_run_leaves_one_file_every_arm_readable(tmp_path):
    """``hebictl run ARMS.multi.yaml --record``: the same McapFile, so the same guarantee; each arm's
    joint states committed before the kill are there, as many for one arm as for the other."""
    from tests._support.paths import CONFIGS_DIR

    rng = random.Random(f"{SEED}-multi")
    seconds, extra = rng.uniform(1.0, 3.0), rng.uniform(0.0, 0.5)
    cmd = [sys.executable, "-m", "hebictl", "run", str(CONFIGS_DIR / "two-x-series-6dof.multi.yaml"), "--backend",
           "mock", "--record", str(tmp_path / "run.mcap"), "--hold", "inf", "--stop-hold", "inf", "--quiet"]
    killed_at, committed = _kill_after(cmd, tmp_path, seconds, extra, topic="/right/joint_states")
    label = f"hebictl run two-x-series-6dof.multi.yaml --backend mock (seed {SEED}, kill {seconds + extra:.2f} s in)"
    _check(tmp_path, killed_at, committed, label, topic="/right/joint_states")
    left, right = (_joint_states(tmp_path / "run.mcap", f"/{arm}/joint_states") for arm in ("left", "right"))
    assert left == right, "a cycle holds every arm's joint states, or none"


@pytest.mark.broker
def test_sigkill_of_hebictl_teleop_around_rotations(broker, tmp_path):
    """``teleop --record DIR`` rotating every 1.2 s: a kill lands in a file of a series, after
    rotations; every file of the series opens and recovers."""
    rng = random.Random(f"{SEED}-teleop")
    folder = tmp_path / "sessions"
    seconds, extra = rng.uniform(0.2, 1.0), rng.uniform(0.0, 0.5)
    killed_at, committed = _kill_after([sys.executable, "-m", "hebictl", "teleop", "--broker", broker.url,
                                        "--arm-id", "crash1", "--rate", "200", *PLUMBING_SILENCE_FLAGS,
                                        "--record", str(folder),
                                        "--record-rotate-min", "0.02"], folder, seconds, extra, min_files=2)
    files = sorted(folder.glob("*.mcap"))
    assert all(p.name.startswith("teleop-crash1-") for p in files), files
    assert len(files) >= 2
    _check(folder, killed_at, committed, f"hebictl teleop --record (seed {SEED}, {len(files)} files)")
