"""``kill -9`` of a recording process at random moments: every file it leaves opens in the ``mcap``
package's own readers, lost at most 1 s, and ``hebictl log recover`` gives each a summary (issue 34).

Real processes: ``hebictl run --record`` on the sim and the mock backend, and ``hebictl teleop
--record DIR`` against a real mosquitto, rotating its files every 1.2 s so kills land around a
rotation too. Each file is read the way Foxglove's library does, ``make_reader(f).iter_messages()``,
and with ``mcap.stream_reader.StreamReader``; neither may raise. Both commands run on
``MonotonicClock`` (``time.perf_counter``, the system's monotonic clock, the one this test reads),
so the kill time is on the recording's own clock: the loss is the kill time minus the last
``/joint_states`` time in the file. The writer commits every 0.5 s; the 1 s bar leaves the rest for
its lag, so the test is measured with the machine to itself (EXCLUSIVE_MODULES). Every file found
while the process runs is also read live: a recording is valid at every moment, not only after it.
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
from tests._support.quiet import machine_to_ourselves

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording
pytest.importorskip("mcap", reason=extra_missing("mcap"))

from mcap.reader import make_reader
from mcap.records import Footer
from mcap.stream_reader import StreamReader

MAX_LOSS = 1.0  # s: the writer commits every 0.5 s; the rest is its lag on a loaded machine
SEED = int(os.environ.get("HEBICTL_CRASH_SEED", "34"))
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def _joint_states(path: Path) -> list[int]:
    """Log times [ns] of /joint_states, read with make_reader (raises if the file does not open)."""
    with path.open("rb") as f:
        return [m.log_time for _, ch, m in make_reader(f).iter_messages(log_time_order=False)
                if ch.topic == "/joint_states"]


def _recorded_seconds(folder: Path, min_files: int) -> float:
    """How much run the newest file holds so far (0 before there are ``min_files``). The file is
    read while it is written: a read can race a commit (the seeking reader takes the end's footer,
    then reads from the start), so a failed read is tried once more, and must work then."""
    files = sorted(folder.glob("*.mcap"))
    if len(files) < min_files:
        return 0.0
    try:
        times = _joint_states(files[-1])
    except Exception:
        times = _joint_states(files[-1])
    return (times[-1] - times[0]) * 1e-9 if times else 0.0


def _kill_after(cmd: list[str], folder: Path, seconds: float, extra: float, min_files: int = 1) -> float:
    """Start ``cmd``, SIGKILL it ``extra`` s after its newest file holds ``seconds`` of run; the kill time."""
    with machine_to_ourselves():
        proc = subprocess.Popen(cmd, cwd=tempfile.gettempdir(), env=ENV, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 180
            while _recorded_seconds(folder, min_files) < seconds:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                if time.monotonic() > deadline:
                    pytest.fail(f"nothing recorded in 180 s: {cmd}")
                time.sleep(0.3)
            time.sleep(extra)
            killed_at = time.perf_counter()
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    return killed_at


def _check(folder: Path, killed_at: float, label: str) -> None:
    """Every file opens in both readers; the newest lost <= MAX_LOSS; each recovers with a summary."""
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
        times = _joint_states(path)
        last = max([last, *times])
        fixed = path.with_name(f"{path.stem}.recovered")
        result = recover(path, fixed)
        with fixed.open("rb") as f:
            reader = make_reader(f)
            summary = reader.get_summary()
            assert summary is not None and summary.statistics is not None
            assert summary.statistics.message_count == streamed == result.messages
            assert sum(1 for _ in reader.iter_messages()) == streamed
    loss = killed_at - last * 1e-9
    print(f"{label}: SIGKILL; {len(files)} file(s) open in make_reader and StreamReader, each recovered with a "
          f"summary; the last {loss:.3f} s before the kill lost (limit {MAX_LOSS} s)")
    assert 0 <= loss <= MAX_LOSS


@pytest.mark.parametrize("backend,runs", [("sim", 1), ("mock", 2)])
def test_sigkill_of_hebictl_run_leaves_files_the_mcap_readers_open(tmp_path, backend, runs):
    rng = random.Random(f"{SEED}-{backend}")
    if backend == "sim":
        pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
    for i in range(runs):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        seconds, extra = rng.uniform(1.0, 3.0), rng.uniform(0.0, 0.5)
        killed_at = _kill_after([sys.executable, "-m", "hebictl", "run", "--backend", backend, "--record",
                                 str(folder / "run.mcap"), "--hold", "inf", "--quiet"], folder, seconds, extra)
        _check(folder, killed_at, f"hebictl run --backend {backend} (seed {SEED}, kill {seconds + extra:.2f} s in)")


@pytest.mark.broker
def test_sigkill_of_hebictl_teleop_around_rotations(broker, tmp_path):
    """``teleop --record DIR`` rotating every 1.2 s: a kill lands in a file of a series, after
    rotations; every file of the series opens and recovers."""
    rng = random.Random(f"{SEED}-teleop")
    folder = tmp_path / "sessions"
    seconds, extra = rng.uniform(0.2, 1.0), rng.uniform(0.0, 0.5)
    killed_at = _kill_after([sys.executable, "-m", "hebictl", "teleop", "--broker", broker.url, "--arm-id", "crash1",
                             "--rate", "200", "--record", str(folder), "--record-rotate-min", "0.02"],
                            folder, seconds, extra, min_files=2)
    files = sorted(folder.glob("*.mcap"))
    assert all(p.name.startswith("teleop-crash1-") for p in files), files
    assert len(files) >= 2
    _check(folder, killed_at, f"hebictl teleop --record (seed {SEED}, {len(files)} files)")
