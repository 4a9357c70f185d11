"""``hebictl log recover``: a complete file from whatever a cut file holds, checked with the ``mcap``
package's readers; and the cause of issue 34 shown on today's files without their tail.

A real recording (mock arm, SimClock) is cut at many offsets: at every record boundary and inside
each record type (its opcode, its length, its body). The references are the file's own TLV record
boundaries and the complete file's summary, written by the ``mcap`` package's writer.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))
pytest.importorskip("mcap", reason=extra_missing("mcap"))

from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.records import Attachment
from mcap.stream_reader import StreamReader

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.errors import RecordingError
from hebictl.hardware.clock import SimClock
from hebictl.recording.recover import recover
from hebictl.recording.writer import McapRecorder
from tests.recording.helpers import chunk_ends

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"


@pytest.fixture(scope="module")
def complete(tmp_path_factory) -> Path:
    """A closed recording with several chunks."""
    out = tmp_path_factory.mktemp("rec") / "run.mcap"
    clock = SimClock()
    arm = Arm.from_config(load_config(CONFIG), backend="mock", clock=clock)
    rec = McapRecorder(out, arm, config_path=CONFIG, flush_interval=0.005)
    for i in range(200):
        arm.update()
        arm.send()
        rec.sample()
        clock.sleep_until(clock.now() + 0.005)
        if i % 25 == 0:
            time.sleep(0.03)
    arm.close()
    rec.close()
    return out


def _records(blob: bytes) -> list[tuple[int, int, int]]:
    """(start, end, opcode) of each top-level record up to the data section's end (the TLV walk)."""
    out, pos = [], 8
    while pos < len(blob):
        op, n = blob[pos], struct.unpack_from("<Q", blob, pos + 1)[0]
        out.append((pos, pos + 9 + n, op))
        if op == 0x0F:  # Data End: the summary follows
            break
        pos += 9 + n
    return out




def _cuts(records: list[tuple[int, int, int]]) -> list[int]:
    """At a record's start, inside its opcode/length, inside its body, and one byte short: in every
    record of a kind the file has few of, and in the first three, the last three and every eighth of
    the kinds it has hundreds of (chunks, message indexes). Every record of every kind was 2,939 cuts
    and 190 s of a loaded suite; these are the same positions in each kind of record, about one in six."""
    by_kind: dict[int, list[tuple[int, int]]] = {}
    for start, end, op in records[1:]:
        by_kind.setdefault(op, []).append((start, end))
    cuts = set()
    for spans in by_kind.values():
        for k, (start, end) in enumerate(spans):
            if k < 3 or k >= len(spans) - 3 or k % 8 == 0:
                cuts.update({start, start + 1, start + 5, (start + end) // 2, end - 1})
    return sorted(c for c in cuts if c > records[0][1])


def test_the_cause_a_file_without_a_footer_fails_in_make_reader(complete):
    """Issue 34's failure, on today's records: a file cut right after a complete record (what a
    SIGKILL left before) has no footer, and make_reader reads its last 37 bytes as one: no record
    boundary of a real recording opens. With hebictl's tail (Data End, a footer without summary,
    magic) appended, every one does."""
    from hebictl.recording.mcapfile import TAIL

    blob = complete.read_bytes()
    ends = [end for _, end, op in _records(blob)[1:-1]]
    failed, errors = 0, set()
    for end in ends:
        try:
            with io.BytesIO(blob[:end]) as f:
                list(make_reader(f).iter_messages())
        except McapError as exc:
            failed += 1
            errors.add(type(exc).__name__)
        with io.BytesIO(blob[:end] + TAIL) as f:
            list(make_reader(f).iter_messages())  # never raises
    print(f"cut at each of {len(ends)} record boundaries without a footer: {failed} fail in make_reader "
          f"({', '.join(sorted(errors))}); with the tail, none")
    assert failed == len(ends)


def test_recover_a_file_cut_anywhere(complete, tmp_path):
    """Cut inside every record type: the stream reader yields every record before the cut, and
    recover writes a file with a summary holding exactly the messages of the chunks before it."""
    blob = complete.read_bytes()
    records = _records(blob)
    chunks = chunk_ends(blob)
    kinds = {op for *_, op in records}
    assert {0x01, 0x0C, 0x09, 0x06, 0x07} <= kinds  # header, metadata, attachments, chunks, message indexes
    cuts = _cuts(records)
    for i, cut in enumerate(cuts):
        src = tmp_path / f"cut{i}.mcap"
        src.write_bytes(blob[:cut])
        complete_records = sum(end <= cut and op < 0x80 for _, end, op in records)  # padding is skipped
        n = 0
        with src.open("rb") as f, pytest.raises((McapError, struct.error)):
            for _ in StreamReader(f, emit_chunks=True).records:
                n += 1
        assert n == complete_records, f"cut at {cut}: {n} records read, {complete_records} complete"
        out = tmp_path / f"fixed{i}.mcap"
        result = recover(src, out)
        expected = sum(m for end, m in chunks if end <= cut)
        with out.open("rb") as f:
            reader = make_reader(f)
            summary = reader.get_summary()
            assert summary is not None and summary.statistics is not None
            assert summary.statistics.message_count == result.messages == expected, f"cut at {cut}"
            assert len(summary.chunk_indexes) >= (expected > 0)
            assert sum(1 for _ in reader.iter_messages()) == expected
            attachments = {a.name for a in reader.iter_attachments()}
        attached = {name for start, end, op in records if op == 0x09 and end <= cut
                    for name in [_attachment_name(blob[start:end])]}
        assert attachments == attached
    print(f"{len(cuts)} cuts recovered, each to the last complete chunk before it")


def _attachment_name(record: bytes) -> str:
    with io.BytesIO(b"\x89MCAP0\r\n" + record) as f:
        rec = next(StreamReader(f).records)
    assert isinstance(rec, Attachment)
    return rec.name


def test_recover_keeps_everything_of_a_complete_file_and_its_mode(complete, tmp_path):
    out = tmp_path / "copy.mcap"
    os.chmod(complete, 0o640)
    try:
        result = recover(complete, out)
    finally:
        os.chmod(complete, 0o600)
    with complete.open("rb") as f, out.open("rb") as g:
        a, b = make_reader(f), make_reader(g)
        assert [(c.topic, m.log_time, m.data) for _, c, m in a.iter_messages()] == \
            [(c.topic, m.log_time, m.data) for _, c, m in b.iter_messages()]
        assert {x.name: x.data for x in a.iter_attachments()} == {x.name: x.data for x in b.iter_attachments()}
        meta = {m.name: m.metadata for m in b.iter_metadata()}
    assert "closed normally" in result.ended and meta["hebictl.recovered"]["source"] == "run.mcap"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


@pytest.mark.parametrize("content", [b"", b"not an mcap file at all", b"\x89MCAP0\r\n\x01" + b"\xff" * 8])
def test_recover_refuses_what_is_not_mcap_and_writes_nothing(tmp_path, content):
    src = tmp_path / "bad.mcap"
    src.write_bytes(content)
    with pytest.raises(RecordingError, match="not an MCAP file"):
        recover(src, tmp_path / "out.mcap")
    assert not (tmp_path / "out.mcap").exists()


def test_recover_reads_only_regular_files_and_never_overwrites(complete, tmp_path):
    with pytest.raises(RecordingError, match="not a regular file"):
        recover(Path("/dev/zero"), tmp_path / "z.mcap")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RecordingError, match="not a regular file"):
        recover(fifo, tmp_path / "f.mcap")
    (tmp_path / "taken.mcap").write_bytes(b"keep")
    with pytest.raises(RecordingError, match="exists"):
        recover(complete, tmp_path / "taken.mcap")
    assert (tmp_path / "taken.mcap").read_bytes() == b"keep"
    with pytest.raises(RecordingError, match="overwrite the input"):
        recover(complete, complete)


def test_a_chunk_claiming_a_huge_size_stops_the_read_not_the_machine(complete, tmp_path):
    """A hostile chunk header (uncompressed size 2**60) is where reading stops, without allocating it."""
    blob = bytearray(complete.read_bytes())
    start, end, _ = next(r for r in _records(bytes(blob)) if r[2] == 0x06)
    struct.pack_into("<Q", blob, start + 9 + 16, 1 << 60)  # after message start/end times
    src = tmp_path / "bomb.mcap"
    src.write_bytes(bytes(blob[:end]))
    result = recover(src, tmp_path / "out.mcap")
    assert result.messages == 0 and "claims" in result.ended


def test_log_recover_and_info_from_the_command_line(complete, tmp_path):
    blob = complete.read_bytes()
    cut = _records(blob)[-3][1] + 100  # inside a late record
    src = tmp_path / "crashed.mcap"
    src.write_bytes(blob[:cut])
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}

    def hebictl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True,
                              timeout=120, env=env, cwd=tmp_path)

    info = hebictl("log", "info", str(src))
    assert info.returncode == 0, info.stderr
    assert "cut short" in info.stdout and "hebictl log recover" in info.stdout, info.stdout
    r = hebictl("log", "recover", str(src), "-o", str(tmp_path / "fixed.mcap"))
    assert r.returncode == 0, r.stderr
    assert "messages on" in r.stdout and "s of recording" in r.stdout and "cut short at byte" in r.stdout, r.stdout
    print(r.stdout)
    info = hebictl("log", "info", str(tmp_path / "fixed.mcap"))
    assert "complete (recovered" in info.stdout, info.stdout
    again = hebictl("log", "recover", str(src), "-o", str(tmp_path / "fixed.mcap"))
    assert again.returncode != 0 and again.stderr.startswith("hebictl: error:") and "Traceback" not in again.stderr
    bad = hebictl("log", "recover", "/dev/zero")
    assert bad.returncode != 0 and "not a regular file" in bad.stderr and "Traceback" not in bad.stderr
