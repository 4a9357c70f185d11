"""A recording killed at any moment opens in the ``mcap`` package's own readers (issue 34).

A SIGKILL keeps every byte a ``write`` handed the kernel and loses the rest; it can end a write
between two pages, never inside one. So the files a kill can leave are exactly: every write the
recorder made applied in order, the last one possibly cut at a page boundary. These tests log
every write of a real recording (mock arm, SimClock, many small flushes, a rotation) and rebuild
each of those files, cut at every 512-byte boundary (finer than a page), then open each with
``mcap.reader.make_reader(...).iter_messages()`` and ``mcap.stream_reader.StreamReader``.
References are independent of hebictl: the complete file's own summary, written by the ``mcap``
package's writer (its chunk indexes say which messages lie before a given offset).
"""

from __future__ import annotations

import io
import os
import stat
import time
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))
pytest.importorskip("mcap", reason=extra_missing("mcap"))

from mcap.reader import make_reader
from mcap.records import Footer
from mcap.stream_reader import StreamReader

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.errors import RecordingError
from hebictl.hardware.clock import SimClock
from hebictl.recording import mcapfile
from hebictl.recording.mcapfile import TAIL, McapFile, parse_mode
from hebictl.recording.writer import McapRecorder, session_path
from tests.recording.helpers import chunk_ends

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
CUT = 512  # bytes: every sector boundary (a SIGKILL cuts at page boundaries, multiples of it)


def _record(tmp_path: Path, monkeypatch, cycles: int = 240, **options) -> tuple[McapRecorder, dict]:
    """A mock-arm recording with a flush every few cycles; every write of it logged per file."""
    writes: dict[int, list[tuple[bytes, int]]] = defaultdict(list)
    real = mcapfile.pwrite_all

    def logged(fd: int, data: bytes, offset: int) -> None:
        writes[os.fstat(fd).st_ino].append((bytes(data), offset))
        real(fd, data, offset)

    monkeypatch.setattr(mcapfile, "pwrite_all", logged)
    clock = SimClock()
    arm = Arm.from_config(load_config(CONFIG), backend="mock", clock=clock)
    rec = McapRecorder(tmp_path / "run.mcap", arm, config_path=CONFIG, flush_interval=0.005, **options)
    for i in range(cycles):
        arm.update()
        arm.send()
        rec.sample()
        clock.sleep_until(clock.now() + 0.005)
        if i % 20 == 0:  # the writer thread commits what it has (a hang guard, not a timing claim)
            before, deadline = sum(map(len, writes.values())), time.monotonic() + 60
            while (rec.written < rec.cycles or sum(map(len, writes.values())) == before) \
                    and time.monotonic() < deadline:
                time.sleep(0.005)
    arm.close()
    rec.close()
    return rec, writes


def _states(log: list[tuple[bytes, int]], cuts: bool = True):
    """Every file a kill can leave: after each write, and inside each at every CUT boundary. The
    first write goes to the hidden name, linked once written: it is seen whole or not at all."""
    disk = bytearray()

    def apply(data: bytes, offset: int) -> bytes:
        out = bytearray(disk)
        if len(out) < offset:
            out.extend(bytes(offset - len(out)))  # a hole reads as zeros
        out[offset:offset + len(data)] = data
        return bytes(out)

    for i, (data, offset) in enumerate(log):
        first = (offset // CUT + 1) * CUT
        for cut in range(first, offset + len(data), CUT) if i and cuts else ():
            yield apply(data[:cut - offset], offset)
        disk[:] = apply(data, offset)
        yield bytes(disk)


def _messages(blob: bytes) -> list[tuple[str, int, int]]:
    with io.BytesIO(blob) as f:
        return [(ch.topic, m.log_time, m.sequence) for _, ch, m in make_reader(f).iter_messages(log_time_order=False)]




def _check_every_kill(path: Path, log: list[tuple[bytes, int]]) -> tuple[int, int]:
    final = path.read_bytes()
    reference = _messages(final)
    ends = chunk_ends(final)
    states = clean = 0
    last = 0
    for blob in _states(log):
        states += 1
        got = _messages(blob)  # make_reader: the seeking reader, falling back to a linear read
        assert got == reference[:len(got)], "a crashed file reads other messages than the complete one"
        assert len(got) >= last, "a later moment reads fewer messages: committed data was lost"
        last = len(got)
        with io.BytesIO(blob) as f:
            records = list(StreamReader(f).records)  # never raises: it ends in a footer
            whole = f.tell() == len(blob)
        assert isinstance(records[-1], Footer)
        if whole:  # a commit is complete (read to the file's end): every chunk before the tail is read
            clean += 1
            tail = len(blob) - len(TAIL)
            assert len(got) == sum(n for end, n in ends if end <= tail)
    assert last == len(reference)
    return states, clean


def test_a_kill_at_any_write_or_page_leaves_a_file_the_mcap_readers_read(tmp_path, monkeypatch):
    rec, writes = _record(tmp_path, monkeypatch)
    (path,) = rec.files
    states, clean = _check_every_kill(path, writes[path.stat().st_ino])
    print(f"{states} files a kill could leave ({clean} right after a commit), each read by make_reader and "
          f"StreamReader to the last committed message, none raising")
    assert clean >= 5


def test_commits_follow_the_recordings_own_clock(tmp_path, monkeypatch):
    """The loss bound in simulated time: a SimClock arm run as fast as the machine goes (simulated
    time far ahead of the wall clock the writer also commits on), flush_interval 0.5 s. Each commit
    may add at most 0.5 s of the recording's clock plus one period, so a kill at any moment loses
    at most that of what the writer had written (plus what it had not yet taken from its buffer)."""
    writes: dict[int, list[tuple[bytes, int]]] = defaultdict(list)
    real = mcapfile.pwrite_all

    def logged(fd: int, data: bytes, offset: int) -> None:
        writes[os.fstat(fd).st_ino].append((bytes(data), offset))
        real(fd, data, offset)

    monkeypatch.setattr(mcapfile, "pwrite_all", logged)
    clock, period = SimClock(), 0.005
    arm = Arm.from_config(load_config(CONFIG), backend="mock", clock=clock)
    rec = McapRecorder(tmp_path / "run.mcap", arm, capacity=1 << 16)
    for _ in range(1200):  # 6 s of simulated time, no pause
        arm.update()
        arm.send()
        rec.sample()
        clock.sleep_until(clock.now() + period)
    arm.close()
    summary = rec.close()
    assert summary.dropped == 0
    (path,) = rec.files
    committed = []  # latest log time in the file after each complete commit
    for blob in _states(writes[path.stat().st_ino], cuts=False):
        with io.BytesIO(blob) as f:
            list(StreamReader(f).records)
            whole = f.tell() == len(blob)
        times = [m.log_time for _, _, m in make_reader(io.BytesIO(blob)).iter_messages(log_time_order=False)]
        if whole and times:
            committed.append(max(times) * 1e-9)
    steps = [b - a for a, b in pairwise(committed)]
    print(f"{len(committed)} commits over {committed[-1] - committed[0]:.2f} s of simulated time; the largest "
          f"step {max(steps):.4f} s (bound 0.5 + {period} s)")
    assert committed[0] == 0.0  # a new file commits its first cycle at once: a file killed early shows the arm
    assert committed[-1] - committed[0] > 5.0 and max(steps) <= 0.5 + period + 1e-9


def test_a_kill_during_rotation_leaves_both_files_readable(tmp_path, monkeypatch):
    """rotate_seconds: the old file is finished (summary) and the next one started; every moment
    of both is a readable file."""
    rec, writes = _record(tmp_path, monkeypatch, cycles=300, rotate_seconds=0.05)
    assert len(rec.files) >= 2
    for path in rec.files:
        states, _ = _check_every_kill(path, writes[path.stat().st_ino])
        with path.open("rb") as f:
            assert make_reader(f).get_summary() is not None  # each closed file has its summary
        print(f"{path.name}: {states} kill points checked")


def test_every_padding_case_of_a_commit_and_a_finish(tmp_path, monkeypatch):
    """The tail's place in its 512-byte block decides the padding: commits and finishes of files
    whose tails land at 74 different offsets in a block, every kill point of each read back."""
    from typing import IO, cast

    from mcap.writer import Writer

    real = mcapfile.pwrite_all
    checked = 0
    for extra in range(0, 512, 7):
        log: list[tuple[bytes, int]] = []

        def logged(fd: int, data: bytes, offset: int, log=log) -> None:
            log.append((bytes(data), offset))
            real(fd, data, offset)

        monkeypatch.setattr(mcapfile, "pwrite_all", logged)
        path = tmp_path / f"f{extra}.mcap"
        f = McapFile(path)
        w = Writer(cast(IO[bytes], f.stream))
        w.start()
        channel = w.register_channel("/t", "json", w.register_schema("t", "jsonschema", b"{}"))
        for k in range(3):
            w.add_message(channel, log_time=k, data=b"x" * (extra + 13 * k), publish_time=k)
            w.flush()
            f.commit()
        w.flush()
        f.finish(w)
        checked += _check_every_kill(path, log)[0]
        with path.open("rb") as g:
            summary = make_reader(g).get_summary()
        assert summary is not None and summary.statistics is not None and summary.statistics.message_count == 3
    print(f"{checked} kill points of 74 files, each tail at another place in its block")


def test_a_file_appears_whole_under_its_name(tmp_path, monkeypatch):
    """The start (header, metadata, the URDF and config attachments) is written under a hidden name
    and linked: the name never shows a file without them, and no hidden file is left."""
    rec, writes = _record(tmp_path, monkeypatch, cycles=10)
    (path,) = rec.files
    first, offset = writes[path.stat().st_ino][0]
    assert offset == 0 and first.endswith(TAIL)
    with io.BytesIO(first) as f:
        assert {a.name for a in make_reader(f).iter_attachments()} == {"robot.urdf", "robot.cfg.yaml"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mcap"]


def test_files_are_0600_in_folders_made_0700_and_a_mode_shares_them(tmp_path):
    arm = Arm.from_config(load_config(CONFIG), backend="mock", clock=SimClock())
    old = os.umask(0)  # the modes are set, not left to the umask
    try:
        McapRecorder(tmp_path / "a" / "b" / "run.mcap", arm).close()
        McapRecorder(tmp_path / "s" / "run.mcap", arm, mode=parse_mode("0640")).close()
    finally:
        os.umask(old)
        arm.close()
    modes = {p: stat.S_IMODE(os.stat(tmp_path / p).st_mode) for p in ("a", "a/b", "a/b/run.mcap", "s", "s/run.mcap")}
    print({k: oct(v) for k, v in modes.items()})
    assert modes == {"a": 0o700, "a/b": 0o700, "a/b/run.mcap": 0o600, "s": 0o750, "s/run.mcap": 0o640}


@pytest.mark.parametrize("text", ["0644x", "0755", "0400", "4600", "-1"])
def test_a_mode_that_is_not_read_write_bits_is_refused(text):
    with pytest.raises(RecordingError, match="--record-mode"):
        parse_mode(text)


def test_a_planted_symlink_is_refused_and_its_target_untouched(tmp_path):
    """Issue 33: a recording never follows a symlink and never overwrites a file, even at a name
    it can predict (the teleop session's)."""
    target = tmp_path / "precious"
    target.write_bytes(b"root's file")
    os.chmod(target, 0o600)
    folder = tmp_path / "shared"
    folder.mkdir()
    clock = lambda: 1_700_000_000.0  # noqa: E731  # the name the attacker predicted
    name = session_path(folder, clock=clock, arm_id="arm1")
    assert name.name == "teleop-arm1-20231114-221320.mcap"
    name.symlink_to(target)
    arm = Arm.from_config(load_config(CONFIG), backend="mock", clock=SimClock())
    try:
        with pytest.raises(RecordingError, match="symbolic link"):
            McapRecorder(name, arm)
        (folder / "old.mcap").write_bytes(b"an earlier run")
        with pytest.raises(RecordingError, match="exists"):
            McapRecorder(folder / "old.mcap", arm)
    finally:
        arm.close()
    assert target.read_bytes() == b"root's file" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (folder / "old.mcap").read_bytes() == b"an earlier run"
    assert sorted(p.name for p in folder.iterdir()) == ["old.mcap", name.name]  # no hidden file left


def test_a_symlink_that_appears_after_the_check_is_not_followed(tmp_path):
    """The check before creating is not what protects: publishing is a link(), which fails on any
    existing name. A symlink planted between the two is refused the same way."""
    target = tmp_path / "precious"
    target.write_bytes(b"x")
    f = McapFile(tmp_path / "run.mcap")
    (tmp_path / "run.mcap").symlink_to(target)
    f.stream.write(mcapfile.MAGIC)
    with pytest.raises(RecordingError, match="appeared"):
        f.commit()
    f.close()
    assert target.read_bytes() == b"x" and (tmp_path / "run.mcap").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious", "run.mcap"]


def test_arm_ids_cannot_make_a_path():
    assert session_path("d", clock=lambda: 0.0, arm_id="../../etc/x").name == "teleop-_.._etc_x-19700101-000000.mcap"
    assert session_path("d", clock=lambda: 0.0).name == "teleop-19700101-000000.mcap"
