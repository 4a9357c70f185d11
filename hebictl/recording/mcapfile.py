"""An MCAP file that the standard readers open at every moment, whenever the process is killed.

Why not just append: the ``mcap`` package's seeking reader (``mcap.reader.make_reader`` on a
file, what Foxglove's libraries do too) first reads the last 37 bytes as a Footer record. A file
cut short after a perfectly complete record has no footer there, so the reader takes a message
index's timestamp for a record header and raises at once ("unknown (opcode 0) record has length
17582971479845240832"), and the stream reader raises at the end of it. A crashed recording has to
end in a footer, like a closed one.

So the file always ends in a *tail*: a Data End record, a Footer with ``summary_start`` 0 (the
MCAP way of saying "no summary: read me from the start") and the magic. Both readers then read it
to its last record without an error. Each flush (:meth:`McapFile.commit`) moves the tail
forward, in an order where the file is valid after every system call, and after any page of
every write (a SIGKILL can end a ``write`` between two pages, never inside one):

1. the new tail's footer is written at the new end (37 bytes, inside one 512-byte block: one
   page, so all or nothing). The file is then: old records, old tail, a hole, a footer. Readers
   stop at the old tail, as before.
2. the new records are written into the hole. Readers still stop at the old tail.
3. (closing only) the real footer, pointing to the summary just written, replaces that footer
   (padding before the Data End puts the whole summary past the old tail, so it is all there).
4. the first 50 bytes of the new records overwrite the old tail (inside one block, so atomic):
   now readers read the new records, up to the new tail.

A padding record (opcode 0x80, from the range MCAP leaves to applications, skipped by every
reader) keeps each tail inside one block. Nothing is preallocated: the file never holds a
zero-filled tail, and each chunk is whole, its length prefix included, before it counts.

The file is created under a random hidden name and published with ``link``, which never follows
a symlink and never replaces a file: a recording never overwrites anything, and a name never
shows a file without its header. Folders hebictl creates get ``dir_mode`` (0700), files ``mode``
(0600), set with ``fchmod`` whatever the umask.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import secrets
import stat
from itertools import chain, count
from pathlib import Path
from typing import Any

from mcap.data_stream import RecordBuilder
from mcap.records import DataEnd, Footer
from mcap.writer import Writer

from hebictl.errors import RecordingError

MAGIC = b"\x89MCAP0\r\n"
BLOCK = 512            # the tail never straddles one: inside a page (SIGKILL) and a sector
PADDING_OPCODE = 0x80  # MCAP: "0x80-0xFF are reserved for application extensions"
FOOTER_BYTES = 37      # Footer record (29) + magic (8): what the seeking reader reads first


def _tail() -> bytes:
    b = RecordBuilder()
    DataEnd(data_section_crc=0).write(b)
    Footer(summary_start=0, summary_offset_start=0, summary_crc=0).write(b)
    return b.end() + MAGIC


#: Data End + a footer that says "no summary" + magic: how every unfinished recording ends
TAIL = _tail()
OPEN_FOOTER = TAIL[-FOOTER_BYTES:]


def padding_record(size: int) -> bytes:
    """A record of exactly ``size`` bytes (>= 9) that readers skip."""
    return bytes([PADDING_OPCODE]) + (size - 9).to_bytes(8, "little") + bytes(size - 9)


def padding_for(pos: int, group: int, least: int = 0) -> int:
    """Bytes of padding (0, or one record of >= 9) to put at ``pos`` so that the ``group`` bytes
    after it sit inside one block, and at least ``least`` bytes."""
    return next(p for p in chain([0], count(9)) if p >= least and (pos + p) % BLOCK + group <= BLOCK)


class Capture:
    """What mcap's :class:`~mcap.writer.Writer` writes to: the bytes since the last commit, and
    the file offset they start at (the writer's indexes are offsets)."""

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self.data = bytearray()

    def write(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def tell(self) -> int:
        return self.base + len(self.data)

    def flush(self) -> None:
        """Nothing: bytes reach the file at :meth:`McapFile.commit`."""

    def take(self) -> bytes:
        out = bytes(self.data)
        self.base += len(out)
        self.data.clear()
        return out


def parse_mode(text: str) -> int:
    """``--record-mode``: an octal file mode of read/write bits (0600, 0640, 0644), owner read-write."""
    try:
        mode = int(text, 8)
    except ValueError:
        raise RecordingError(f"--record-mode {text!r}: not an octal mode (like 0600 or 0640)") from None
    if mode & ~0o666 or mode & 0o600 != 0o600:
        raise RecordingError(f"--record-mode {text}: only read/write bits (at most 0666), and the owner's "
                             "read and write (0600) included")
    return mode


def folder_mode(mode: int) -> int:
    """The folders for files of ``mode``: searchable by whoever may read (0600 -> 0700, 0640 -> 0750)."""
    return mode | 0o100 | ((mode & 0o044) >> 2)


def pwrite_all(fd: int, data: bytes, offset: int) -> None:
    """Write all of ``data`` at ``offset``. Every write to a recording goes through here (the one
    place to look at them: tests/recording/test_mcapfile.py rebuilds each file a kill can leave)."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view, offset = view[n:], offset + n


def make_folders(folder: Path, mode: int) -> None:
    """Create ``folder`` and any missing parent with ``mode`` exactly (Path.mkdir gives parents the
    umask's mode); folders that exist are left as they are."""
    missing = []
    p = folder
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, mode)
        except FileExistsError:
            continue  # made meanwhile: not ours to change
        fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


class ExclusiveFile:
    """A new file that never replaces a name and never follows a symlink: made under a random hidden
    name (``O_CREAT | O_EXCL | O_NOFOLLOW``, ``mode`` set with ``fchmod``) in a folder opened once, and
    given its name with ``link`` only when its first bytes are in (:meth:`_publish`). Raises
    :class:`RecordingError` when the file cannot be made (the name exists or is a symlink, the folder
    is not writable). :class:`McapFile` grows on it; :func:`write_new` writes a whole file at once."""

    def __init__(self, path: str | Path, mode: int = 0o600) -> None:
        self.path = Path(path)
        self.mode = mode
        self.published = False
        folder = self.path.parent
        try:
            make_folders(folder, folder_mode(mode))
            self._dir = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from exc
        self._fd = -1
        self._tmp: str | None = f".{self.path.name}.{secrets.token_hex(6)}.tmp"
        try:
            self._refuse_existing()
            self._fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                               mode, dir_fd=self._dir)
            os.fchmod(self._fd, mode)
        except OSError as exc:
            self.close()
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from exc
        except RecordingError:
            self.close()
            raise

    def _refuse_existing(self) -> None:
        try:
            st = os.stat(self.path.name, dir_fd=self._dir, follow_symlinks=False)
        except FileNotFoundError:
            return
        what = "is a symbolic link (a recording never follows one)" if stat.S_ISLNK(st.st_mode) else \
            "exists (a recording never overwrites a file: give another name or remove it)"
        raise RecordingError(f"cannot record to {self.path}: it {what}")

    def _publish(self, first: bytes) -> None:
        """Write the file's start under its hidden name, then give it its name (never replacing one)."""
        assert self._tmp is not None
        pwrite_all(self._fd, first, 0)
        try:
            os.link(self._tmp, self.path.name, src_dir_fd=self._dir, dst_dir_fd=self._dir, follow_symlinks=False)
        except FileExistsError:
            raise RecordingError(f"cannot record to {self.path}: it appeared while the recording started "
                                 "(a recording never overwrites a file)") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            self._publish_without_link(first)
        os.unlink(self._tmp, dir_fd=self._dir)
        self._tmp = None
        self.published = True

    def _publish_without_link(self, first: bytes) -> None:
        """A filesystem without hard links (FAT): the name is created exclusively and written at once."""
        assert self._tmp is not None
        fd = os.open(self.path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     self.mode, dir_fd=self._dir)
        os.fchmod(fd, self.mode)
        pwrite_all(fd, first, 0)
        os.close(self._fd)
        self._fd = fd

    def close(self) -> None:
        """Close without finishing (the file stays as its last commit left it); idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._tmp is not None and self._dir >= 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp, dir_fd=self._dir)
            self._tmp = None
        if self._dir >= 0:
            os.close(self._dir)
            self._dir = -1


def write_new(file: ExclusiveFile, data: bytes) -> None:
    """The whole of ``data`` into ``file`` (made before the run, so that a name taken fails before
    anything moved), synced, then named and closed: a ``.npz`` recording (``hebictl run --record``)."""
    try:
        file._publish(data)
        os.fdatasync(file._fd)
    except OSError as exc:
        raise RecordingError(f"cannot record to {file.path}: {exc.strerror or exc}") from exc
    finally:
        file.close()


class McapFile(ExclusiveFile):
    """One recording file, published at its first :meth:`commit` and complete at :meth:`finish`.

    ``stream`` is what to hand to :class:`mcap.writer.Writer`. Raises :class:`RecordingError` when
    the file cannot be made (it exists, is a symlink, the folder is not writable).
    """

    def __init__(self, path: str | Path, mode: int = 0o600) -> None:
        super().__init__(path, mode)
        self.stream = Capture()
        self._tail_at = -1   # offset of the tail once published

    def size(self) -> int:
        """Bytes of records so far (the writer's offset), the uncommitted ones included."""
        return self.stream.tell()

    # ------------------------------------------------------------------ writing
    def commit(self) -> None:
        """Put what the writer wrote since the last commit into the file, followed by the tail."""
        body = self.stream.take()
        if self.published and not body:
            return
        if not self.published:
            pad = padding_for(len(body), len(TAIL))
            self._publish(body + (padding_record(pad) if pad else b"") + TAIL)
            self._tail_at = len(body) + pad
            self.stream.base = self._tail_at
            return
        pad = padding_for(self._tail_at + len(body), len(TAIL), least=max(0, FOOTER_BYTES - len(body)))
        unit = body + (padding_record(pad) if pad else b"") + TAIL
        self._place(unit)
        self._tail_at += len(body) + pad
        self.stream.base = self._tail_at

    def finish(self, writer: Writer) -> None:
        """``writer.finish()`` (summary, footer) into the file, then sync and close it: it is then a
        complete MCAP with its summary. The writer's last chunk must be committed already."""
        self.commit()
        if not self.published:
            raise RecordingError(f"{self.path}: finish before the first commit")
        memo: dict[int, Any] = {}
        trial = copy.deepcopy(writer, memo)  # the summary's length, to pad before it so its footer sits in a block
        trial.finish()
        end = len(memo[id(self.stream)].data)
        # at least len(TAIL) - 13 bytes of padding before the Data End (13 bytes): the summary then
        # starts beyond the old tail, so it is whole (step 2) before its footer points to it (step 3)
        pad = padding_for(self._tail_at + end - FOOTER_BYTES, FOOTER_BYTES,
                          least=max(len(TAIL) - 13, len(TAIL) + FOOTER_BYTES - end))
        if pad:
            self.stream.write(padding_record(pad))
        writer.finish()
        unit = self.stream.take()
        if unit[-8:] != MAGIC or len(unit) != pad + end:
            raise RecordingError(f"{self.path}: the MCAP writer's summary is not what it announced")
        self._place(unit)
        self._tail_at = -1
        os.fdatasync(self._fd)
        self.close()

    def _place(self, unit: bytes) -> None:
        """Replace the tail at ``_tail_at`` by ``unit`` (which ends in a footer and magic), in the
        order of the module docstring."""
        fd, at, n = self._fd, self._tail_at, len(unit)
        pwrite_all(fd, OPEN_FOOTER, at + n - FOOTER_BYTES)                    # 1. the new end
        if n - FOOTER_BYTES > len(TAIL):
            pwrite_all(fd, unit[len(TAIL):n - FOOTER_BYTES], at + len(TAIL))  # 2. the records, unseen
        if unit[-FOOTER_BYTES:] != OPEN_FOOTER:
            pwrite_all(fd, unit[-FOOTER_BYTES:], at + n - FOOTER_BYTES)       # 3. the summary's footer
        pwrite_all(fd, unit[:len(TAIL)], at)                                  # 4. the commit


