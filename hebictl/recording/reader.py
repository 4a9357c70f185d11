"""Reading a hebictl MCAP recording back: ``hebictl log info`` and ``hebictl plot RUN.mcap``.

The file is read as a stream of records, not through its footer's index, so a recording cut
short (the process killed, the disk full) reads as far as its last complete chunk, as Foxglove
reads it; :attr:`Run.complete` says whether the footer was there.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mcap.exceptions import McapError
from mcap.records import Attachment, Channel, Footer, Message, Metadata, Schema
from mcap.stream_reader import StreamReader
from mcap_protobuf.decoder import DecoderFactory

from hebictl.control.recorder import Recorder
from hebictl.errors import RecordingError
from hebictl.recording import schemas


@dataclass
class Event:
    """One line of ``/events``: a safety event or a note of the recorder."""

    time: float    # s, the recorded clock
    level: str
    source: str
    text: str


@dataclass
class Run:
    """Everything in one recording that ``log info`` and ``plot`` use."""

    path: Path
    complete: bool                                  # the footer was written (closed normally)
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


def _records(path: Path) -> Iterator[Any]:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with f:
        yield from StreamReader(f, record_size_limit=1 << 30).records


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
    try:
        for rec in _records(Path(path)):
            if isinstance(rec, Schema | Channel):
                dec.add(rec)
            elif isinstance(rec, Message):
                topic = dec.channels[rec.channel_id].topic
                if topics is None or topic in topics:
                    yield topic, rec.log_time, dec.decode(rec)
    except _TRUNCATED:
        return  # a file cut short ends at its last complete record


#: what the stream reader raises where a file was cut short (or is not MCAP at all)
_TRUNCATED = (McapError, EOFError, ValueError, struct.error)

_LEVELS = {0: "UNKNOWN", 1: "DEBUG", 2: "INFO", 3: "WARNING", 4: "ERROR", 5: "FATAL"}


def read_run(path: str | Path) -> Run:
    """Topics, counts, times, metadata, attachments and events of a recording (one pass)."""
    path = Path(path)
    run = Run(path, complete=False)
    dec = _Decoder()
    n = 0
    try:
        for rec in _records(path):
            n += 1
            if isinstance(rec, Schema | Channel):
                dec.add(rec)
                if isinstance(rec, Channel):
                    schema = dec.schemas.get(rec.schema_id)
                    run.schema_of[rec.topic] = schema.name if schema is not None else ""
            elif isinstance(rec, Message):
                topic = dec.channels[rec.channel_id].topic
                run.counts[topic] += 1
                run.first.setdefault(topic, rec.log_time)
                run.last[topic] = rec.log_time
                if topic == schemas.EVENTS.name:
                    m = dec.decode(rec)
                    run.events.append(Event(rec.log_time * 1e-9, _LEVELS.get(m.level, str(m.level)), m.name,
                                            m.message))
            elif isinstance(rec, Metadata):
                run.metadata[rec.name] = dict(rec.metadata)
            elif isinstance(rec, Attachment):
                run.attachments[rec.name] = bytes(rec.data)
            elif isinstance(rec, Footer):
                run.complete = True
    except _TRUNCATED as exc:
        if n == 0:
            raise RecordingError(f"{path}: not an MCAP file ({exc})") from exc
        run.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if n == 0:
        raise RecordingError(f"{path}: not an MCAP file (empty)")
    return run


def load_recorder(path: str | Path) -> tuple[Recorder, list[Event]]:
    """The joint series of a recording as a :class:`Recorder` (what ``hebictl plot`` draws), and its events."""
    path = Path(path)
    run = read_run(path)
    meta = run.metadata.get(schemas.RUN_METADATA, {})
    names: tuple[str, ...] = tuple(json.loads(meta["joint_names"])) if "joint_names" in meta else ()
    measured: dict[int, tuple[list[float], list[float], list[float]]] = {}
    commanded: dict[int, tuple[list[float], list[float], list[float]]] = {}
    for topic, t_ns, msg in iter_messages(path, {schemas.JOINT_STATES.name, schemas.JOINT_COMMANDS.name}):
        series = measured if topic == schemas.JOINT_STATES.name else commanded
        if not names:
            names = tuple(j.name for j in msg.joints)
        series[t_ns] = ([j.position for j in msg.joints], [j.velocity for j in msg.joints],
                        [j.effort for j in msg.joints])
    times = sorted(set(measured) & set(commanded))
    if not times:
        raise RecordingError(f"{path}: no joint states recorded")
    rec = Recorder(len(names), names, chunk=len(times))
    for t in times:
        fp, fv, fe = (np.asarray(x) for x in measured[t])
        cp, cv, ce = (np.asarray(x) for x in commanded[t])
        rec.record(t * 1e-9, cp, fp, cv, fv, ce, fe)
    return rec, run.events
