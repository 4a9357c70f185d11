"""``hebictl log recover CRASHED.mcap -o FIXED.mcap``: a complete MCAP from whatever a file holds.

A recording whose process was killed opens in every MCAP reader (hebictl's writer keeps it valid,
:mod:`hebictl.recording.mcapfile`), but it has no summary: no chunk index, no statistics, no
attachment index, so a reader must read all of it to find anything, and tools that need the
summary (seeking in Foxglove, ``mcap info``) have little to show. This copies every complete
record (schemas, channels, messages, attachments, metadata) into a new file written by the
``mcap`` package's writer, which adds the summary and footer, and says what it kept.

The source is read with hebictl's bounded reader (:func:`hebictl.recording.reader.scan_records`):
it stops cleanly at its footer or at the first incomplete or garbled record, whatever wrote the
file (another tool, a full disk, an older hebictl). The output is created exclusively like a
recording (never over a file, never through a symlink) with the source's read/write bits (a
recording shared with ``--record-mode`` stays shared), and is removed again if the copy fails.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from mcap.records import Attachment, Channel, Header, Message, Metadata, Schema
from mcap.writer import CompressionType, Writer

from hebictl.errors import RecordingError
from hebictl.recording.mcapfile import McapFile
from hebictl.recording.reader import RECOVERED_METADATA, Scan, scan_records
from hebictl.version import __version__

COMMIT_BYTES = 8 << 20  # the output is committed every few MiB: a large source never sits in memory


@dataclass
class Recovery:
    """What ``recover`` copied."""

    source: Path
    output: Path
    messages: int = 0
    topics: set[str] = field(default_factory=set)
    first_ns: int | None = None
    last_ns: int | None = None
    attachments: int = 0
    metadata: int = 0
    skipped: int = 0         # messages on a channel never declared (not copyable)
    ended: str = ""          # how the source ended

    @property
    def span(self) -> float:
        """Seconds between the first and last message recovered (log time)."""
        return (self.last_ns - self.first_ns) * 1e-9 if self.first_ns is not None and self.last_ns is not None \
            else 0.0


class _Copy:
    """The id maps and counts of one copy (the writer numbers schemas and channels itself)."""

    def __init__(self, writer: Writer, out: McapFile, result: Recovery) -> None:
        self.writer, self.out, self.result = writer, out, result
        self.schemas: dict[int, int] = {0: 0}
        self.channels: dict[int, int] = {}
        self.topic: dict[int, str] = {}

    def add(self, rec: object) -> None:
        w, r = self.writer, self.result
        if isinstance(rec, Schema) and rec.id not in self.schemas:
            self.schemas[rec.id] = w.register_schema(rec.name, rec.encoding, rec.data)
        elif isinstance(rec, Channel) and rec.id not in self.channels and rec.schema_id in self.schemas:
            self.channels[rec.id] = w.register_channel(rec.topic, rec.message_encoding,
                                                       self.schemas[rec.schema_id], dict(rec.metadata))
            self.topic[rec.id] = rec.topic
        elif isinstance(rec, Message):
            if rec.channel_id not in self.channels:
                r.skipped += 1
                return
            w.add_message(self.channels[rec.channel_id], log_time=rec.log_time, data=rec.data,
                          publish_time=rec.publish_time, sequence=rec.sequence)
            r.messages += 1
            r.topics.add(self.topic[rec.channel_id])
            r.first_ns = rec.log_time if r.first_ns is None else min(r.first_ns, rec.log_time)
            r.last_ns = rec.log_time if r.last_ns is None else max(r.last_ns, rec.log_time)
        elif isinstance(rec, Attachment):
            w.add_attachment(rec.create_time, rec.log_time, rec.name, rec.media_type, rec.data)
            r.attachments += 1
        elif isinstance(rec, Metadata) and rec.name != RECOVERED_METADATA:
            w.add_metadata(rec.name, dict(rec.metadata))
            r.metadata += 1
        if len(self.out.stream.data) > COMMIT_BYTES:
            w.flush()
            self.out.commit()


def recover(source: str | Path, output: str | Path) -> Recovery:
    """Copy every complete record of ``source`` into ``output`` (a new file), with a summary."""
    source, output = Path(source), Path(output)
    if output.exists() and os.path.samefile(source, output):
        raise RecordingError(f"{output}: the output would overwrite the input")
    scan = Scan(source)
    records = scan_records(source, scan)
    first = next(records, None)  # a file that is not MCAP fails here, before any output exists
    if not isinstance(first, Header):
        raise RecordingError(f"{source}: not an MCAP file (no header record)")
    mode = stat.S_IMODE(os.stat(source).st_mode) & 0o666 | 0o600
    out = McapFile(output, mode)
    result = Recovery(source, output)
    try:
        writer = Writer(cast(IO[bytes], out.stream), chunk_size=1 << 20, compression=CompressionType.ZSTD)
        writer.start(profile=first.profile, library=first.library)
        copy = _Copy(writer, out, result)
        for rec in records:
            copy.add(rec)
        result.ended = _ending(scan)
        writer.add_metadata(RECOVERED_METADATA, {
            "source": source.name, "source_bytes": str(scan.size), "read_bytes": str(scan.good_end),
            "messages": str(result.messages), "source_ended": result.ended, "hebictl_version": __version__})
        writer.flush()
        out.finish(writer)
    except BaseException:
        published = out.published
        out.close()
        if published:
            with contextlib.suppress(OSError):
                output.unlink()
        raise
    return result


def _ending(scan: Scan) -> str:
    if scan.complete:
        return "closed normally (it had its summary already)"
    if scan.footer is not None:
        return "cut short cleanly: every record up to the kill was complete"
    rest = scan.size - scan.good_end
    return (f"cut short at byte {scan.good_end} of {scan.size}: the {rest} bytes after it are not a complete "
            f"record ({scan.error or 'end of file'})")
