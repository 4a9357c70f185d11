"""Reading a hebictl MCAP recording back: ``hebictl log info`` and ``hebictl plot RUN.mcap``.

The file is read as a stream of records, not through its footer's index, so a recording cut
short (the process killed, the disk full) reads as far as its last complete record;
:attr:`Run.complete` says whether it was closed with its summary, and :attr:`Run.error` where
reading stopped if it stopped early.

The reader is bounded, because a recording is a file someone hands you: only regular files (not
a FIFO or a device that never ends), no record longer than the file, no chunk that decompresses
to more than :data:`MAX_CHUNK` bytes, and each chunk's CRC checked. Where the file stops making
sense, reading stops there, and says why (:class:`Scan`).
"""

from __future__ import annotations

import json
import os
import stat
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zstandard
from google.protobuf.message import DecodeError
from mcap.exceptions import McapError
from mcap.records import Attachment, Channel, Chunk, Footer, Message, Metadata, Schema
from mcap.stream_reader import StreamReader, breakup_chunk
from mcap_protobuf.decoder import DecoderFactory

from hebictl.control.recorder import Recorder
from hebictl.errors import RecordingError
from hebictl.recording import schemas


@dataclass
class Event:
    """One line of ``/events`` (a safety event or a note of the recorder); in a multi-arm recording
    also of an arm's ``/NAME/events`` and of ``/group/events``."""

    time: float    # s, the recorded clock
    level: str
    source: str
    text: str
    topic: str = schemas.EVENTS.name

    @property
    def arm(self) -> str:
        """The arm of a multi-arm recording's event (``/left/events``: left; ``group``; "" for /events)."""
        return self.topic[1:-len(schemas.EVENTS.name)] if self.topic != schemas.EVENTS.name else ""


#: the most one chunk may decompress to (hebictl writes 1 MiB chunks; a hostile file may claim any size)
MAX_CHUNK = 256 << 20
#: metadata record ``hebictl log recover`` adds to the files it writes
RECOVERED_METADATA = "hebictl.recovered"


@dataclass
class Scan:
    """How a pass over a file went: where its last complete record ends, and why it stopped there."""

    path: Path
    size: int = 0
    good_end: int = 0          # byte offset after the last complete record read
    footer: Footer | None = None
    error: str = ""            # why reading stopped before a footer ("" if it reached one)

    @property
    def complete(self) -> bool:
        """Closed normally: a footer that points to a summary (hebictl's unfinished files end in
        a footer without one)."""
        return self.footer is not None and self.footer.summary_start != 0


@dataclass
class Run:
    """Everything in one recording that ``log info`` and ``plot`` use."""

    path: Path
    complete: bool                                  # closed with its summary and footer
    counts: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)   # topic -> first log time [ns]
    last: dict[str, int] = field(default_factory=dict)
    schema_of: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    attachments: dict[str, bytes] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    error: str = ""                                 # why reading stopped early, if it did

    @property
    def start(self) -> float:
        return min(self.first.values()) * 1e-9 if self.first else 0.0

    @property
    def duration(self) -> float:
        return (max(self.last.values()) - min(self.first.values())) * 1e-9 if self.first else 0.0


#: what a file that stops making sense raises in the mcap package (and zstandard/lz4 under it)
_BAD = (McapError, EOFError, ValueError, struct.error, KeyError, RuntimeError, MemoryError)


def open_regular(path: Path) -> Any:
    """``path`` opened for reading if it is a regular file (symlinks to one are fine), else a
    :class:`RecordingError`; a FIFO does not block the open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RecordingError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def scan_records(path: str | Path, scan: Scan | None = None) -> Iterator[Any]:
    """Every record of the file in order, chunks opened (their CRC checked), up to the first
    footer or the first record that is incomplete or makes no sense; ``scan`` says which."""
    path = Path(path)
    scan = scan if scan is not None else Scan(path)
    with open_regular(path) as f:
        scan.size = os.fstat(f.fileno()).st_size
        reader = StreamReader(f, emit_chunks=True, validate_crcs=True, record_size_limit=max(scan.size, 1))
        try:
            for rec in reader.records:
                if isinstance(rec, Chunk):
                    if rec.uncompressed_size > MAX_CHUNK:
                        raise ValueError(f"a chunk claims {rec.uncompressed_size} bytes uncompressed "
                                         f"(more than {MAX_CHUNK})")
                    inner = breakup_chunk(rec, validate_crc=True)
                    scan.good_end = f.tell()
                    yield from inner
                    continue
                if isinstance(rec, Footer):
                    scan.footer = rec
                scan.good_end = f.tell()
                yield rec
        except _BAD as exc:
            scan.error = _why(exc)
            if scan.good_end == 0:
                raise RecordingError(f"{path}: not an MCAP file ({scan.error})") from exc
        except zstandard.ZstdError as exc:
            scan.error = f"a chunk does not decompress: {exc}"
        if scan.good_end == 0:
            raise RecordingError(f"{path}: not an MCAP file (empty)")


def _why(exc: BaseException) -> str:
    if isinstance(exc, struct.error | EOFError) or (isinstance(exc, McapError) and not str(exc)):
        return "the file ends inside a record"
    return f"{type(exc).__name__}: {exc}"


def _records(path: Path, scan: Scan | None = None) -> Iterator[Any]:
    yield from scan_records(path, scan)


class _Decoder:
    """Protobuf (through mcap-protobuf-support) and JSON messages, per channel."""

    def __init__(self) -> None:
        self.schemas: dict[int, Schema] = {}
        self.channels: dict[int, Channel] = {}
        self._proto = DecoderFactory()
        self._fns: dict[int, Any] = {}

    def add(self, record: Any) -> None:
        if isinstance(record, Schema):
            self.schemas[record.id] = record
        elif isinstance(record, Channel):
            self.channels[record.id] = record

    def decode(self, msg: Message) -> Any:
        fn = self._fns.get(msg.channel_id)
        if fn is None:
            ch = self.channels[msg.channel_id]
            if ch.message_encoding == "json":
                fn = json.loads
            else:
                fn = self._proto.decoder_for(ch.message_encoding, self.schemas[ch.schema_id])
                if fn is None:
                    raise RecordingError(f"no decoder for {ch.topic} ({ch.message_encoding})")
            self._fns[msg.channel_id] = fn
        return fn(msg.data)


def iter_messages(path: str | Path, topics: set[str] | None = None) -> Iterator[tuple[str, int, Any]]:
    """(topic, log time [ns], decoded message) of every message, in file order; stops quietly at
    the end of a truncated file."""
    dec = _Decoder()
    for rec in _records(Path(path)):  # a file cut short ends at its last complete record
        if isinstance(rec, Schema | Channel):
            dec.add(rec)
        elif isinstance(rec, Message) and rec.channel_id in dec.channels:
            topic = dec.channels[rec.channel_id].topic
            if topics is None or topic in topics:
                yield topic, rec.log_time, dec.decode(rec)

_LEVELS = {0: "UNKNOWN", 1: "DEBUG", 2: "INFO", 3: "WARNING", 4: "ERROR", 5: "FATAL"}


def read_run(path: str | Path) -> Run:
    """Topics, counts, times, metadata, attachments and events of a recording (one pass)."""
    path = Path(path)
    run = Run(path, complete=False)
    dec = _Decoder()
    scan = Scan(path)
    for rec in _records(path, scan):
        if isinstance(rec, Schema | Channel):
            dec.add(rec)
            if isinstance(rec, Channel):
                schema = dec.schemas.get(rec.schema_id)
                run.schema_of[rec.topic] = schema.name if schema is not None else ""
        elif isinstance(rec, Message) and rec.channel_id in dec.channels:
            topic = dec.channels[rec.channel_id].topic
            run.counts[topic] += 1
            run.first.setdefault(topic, rec.log_time)
            run.last[topic] = rec.log_time
            if topic.endswith(schemas.EVENTS.name) and run.schema_of.get(topic) == "foxglove.Log":
                run.events.append(_event(dec, rec, topic))
        elif isinstance(rec, Metadata):
            run.metadata[rec.name] = dict(rec.metadata)
        elif isinstance(rec, Attachment):
            run.attachments[rec.name] = bytes(rec.data)
    run.complete = scan.complete
    run.error = scan.error
    return run


def _event(dec: _Decoder, rec: Message, topic: str) -> Event:
    try:
        m = dec.decode(rec)
    except (DecodeError, RecordingError, ValueError) as exc:
        return Event(rec.log_time * 1e-9, "UNKNOWN", "", f"(an {topic} line that does not decode: {exc})", topic)
    return Event(rec.log_time * 1e-9, _LEVELS.get(m.level, str(m.level)), m.name, m.message, topic)


def recorded_arms(run: Run) -> list[str]:
    """The arms of a multi-arm recording (metadata ``arms``), in the config's order; [] for one arm."""
    meta = run.metadata.get(schemas.RUN_METADATA, {})
    try:
        arms = json.loads(meta.get("arms", "[]"))
    except ValueError:
        return []
    return [a for a in arms if isinstance(a, str)] if isinstance(arms, list) else []


def load_recorder(path: str | Path, arm: str | None = None, run: Run | None = None) -> tuple[Recorder, list[Event]]:
    """The joint series of a recording as a :class:`Recorder` (what ``hebictl plot`` draws), and its
    events; ``arm``: that arm's series of a multi-arm recording (``/ARM/joint_states``), and the
    events of that arm, of the group and of the recorder. ``run``: :func:`read_run`'s answer, if read."""
    path = Path(path)
    run = run if run is not None else read_run(path)
    meta = run.metadata.get(schemas.RUN_METADATA, {})
    prefix = f"/{arm}" if arm is not None else ""
    names: tuple[str, ...] = _joint_names(meta, arm)
    states, commands = prefix + schemas.JOINT_STATES.name, prefix + schemas.JOINT_COMMANDS.name
    measured: dict[int, tuple[list[float], list[float], list[float]]] = {}
    commanded: dict[int, tuple[list[float], list[float], list[float]]] = {}
    for topic, t_ns, msg in iter_messages(path, {states, commands}):
        series = measured if topic == states else commanded
        if not names:
            names = tuple(j.name for j in msg.joints)
        series[t_ns] = ([j.position for j in msg.joints], [j.velocity for j in msg.joints],
                        [j.effort for j in msg.joints])
    times = sorted(set(measured) & set(commanded))
    if not times:
        raise RecordingError(f"{path}: no joint states recorded{f' for arm {arm}' if arm else ''}")
    rec = Recorder(len(names), names, chunk=len(times))
    for t in times:
        fp, fv, fe = (np.asarray(x) for x in measured[t])
        cp, cv, ce = (np.asarray(x) for x in commanded[t])
        rec.record(t * 1e-9, cp, fp, cv, fv, ce, fe)
    events = run.events if arm is None else [e for e in run.events if e.arm in ("", "group", arm)]
    return rec, events


def _joint_names(meta: dict[str, str], arm: str | None) -> tuple[str, ...]:
    try:
        if arm is None:
            return tuple(json.loads(meta["joint_names"])) if "joint_names" in meta else ()
        return tuple(json.loads(meta.get("arm_joint_names", "{}")).get(arm, ()))
    except (ValueError, AttributeError, TypeError):
        return ()
