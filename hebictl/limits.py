"""Bounds on what hebictl reads: one place for every reader and config limit, and the safe file access.

Robot descriptions and configs come from strangers, so every reader is bounded: a file is read
only if it is a regular file below a size limit (``/dev/zero`` or a FIFO cannot be read forever),
and counts that drive allocations (elements, includes, mesh vertices, replicate and flexcomp
counts, formula nesting, YAML depth and aliases) are checked before the allocation happens.
File references resolve as the format's reference library resolves them (``..`` included: the
HRDF spec itself gives ``../robot_parts/left_arm.hrdf`` as an example, and HEBI's Rosie kit and
MuJoCo's treadmill model use such paths); confining them to the model's folder tree plus the
folders the caller lists (``allowed_roots``) is an opt-in for untrusted files (``confine=True``
in :func:`hebictl.load_model`, ``--confine`` on the command line). Going past a limit is a
:class:`~hebictl.errors.FormatError` (or :class:`~hebictl.errors.ConfigError` for configs)
naming the file, the line and the limit, so a user with a legitimately huge model knows which
field of :class:`ReaderLimits` to raise.

Limits apply per call (``load_model(path, limits=ReaderLimits(max_mesh_vertices=...))``) or
globally (:func:`set_default_limits`). Readers do not take them as arguments through every
helper: :func:`reading` makes them the active ones for the duration of a load (a context
variable, so concurrent loads in other threads keep their own), and :func:`current` returns them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import errno
import math
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hebictl.errors import ConfigError, FormatError

_MIB = 1024 * 1024


@dataclass(frozen=True)
class ReaderLimits:
    """Every bound a reader enforces; the defaults fit any robot we know of with a wide margin.

    Sizes are in bytes, counts are totals per load (not per element). Raise one with
    ``dataclasses.replace(current(), max_mesh_faces=...)`` or a new instance passed as
    ``limits=`` to :func:`hebictl.load_model`.
    """

    #: Robot description file (HRDF, URDF, SDF, MJCF, ...): the largest MuJoCo benchmark is 1.7 MB.
    max_file_bytes: int = 64 * _MIB
    #: Mesh file (STL, OBJ, MSH, ...): high-resolution scans stay below this; parsing stays within ~1 GiB.
    max_mesh_file_bytes: int = 128 * _MIB
    #: Nested includes (include inside an included file ...).
    max_include_depth: int = 32
    #: Included files in one load, all levels together.
    max_include_count: int = 500
    #: XML element nesting; libxml2 itself stops at 256 without its "huge" option.
    max_xml_depth: int = 256
    #: XML elements in one file, and in an MJCF body tree after replicate/attach expansion (the
    #: largest model we know, MuJoCo's 100_humanoids benchmark, has 9,000).
    max_elements: int = 50_000
    #: Parenthesis/operator nesting in an HRDF formula (recursive-descent parser stack).
    max_formula_depth: int = 64
    #: Characters of one formula.
    max_formula_length: int = 4096
    #: Vertices of one mesh.
    max_mesh_vertices: int = 2_000_000
    #: Faces (triangles) of one mesh.
    max_mesh_faces: int = 4_000_000
    #: Copies made by one MJCF ``<replicate>`` (nested replicates multiply).
    max_replicate_count: int = 100_000
    #: Points/elements of one MJCF ``<flexcomp>`` grid (product of its ``count``).
    max_flexcomp_count: int = 1_000_000
    #: Elements of an HRDF chain (includes expanded); real arms have tens.
    max_bodies: int = 20_000
    #: Robot config / directives YAML file: 40 times the largest real one (HEBI's and Drake's are < 4 KiB),
    #: and small enough that a file at the limit parses in about 0.1 s (a 1 MiB one took ~1 s with
    #: libyaml and 25 s in pure Python), so an oversized file is refused at once by its size.
    max_yaml_bytes: int = 128 * 1024
    #: YAML nesting (mappings and sequences inside each other).
    max_yaml_depth: int = 64
    #: Nodes a YAML document may produce through aliases (``*a``); an alias bomb exceeds it at once.
    max_yaml_alias_nodes: int = 10_000
    #: Length of a path as written in a file or config (PATH_MAX on Linux).
    max_path_length: int = 4096
    #: Length of one path component (NAME_MAX on Linux).
    max_name_length: int = 255

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ReaderLimits.{f.name} must be a positive integer, got {value!r}")


_default = ReaderLimits()


@dataclass(frozen=True)
class _Active:
    limits: ReaderLimits
    roots: tuple[Path, ...]
    confine: bool


_active: contextvars.ContextVar[_Active | None] = contextvars.ContextVar("hebictl_reader_limits", default=None)


def set_default_limits(limits: ReaderLimits) -> ReaderLimits:
    """Make ``limits`` the process-wide default; returns the previous default (to restore it)."""
    global _default
    if not isinstance(limits, ReaderLimits):
        raise TypeError(f"expected ReaderLimits, got {type(limits).__name__}")
    previous, _default = _default, limits
    return previous


def default_limits() -> ReaderLimits:
    """The process-wide default limits (what a load without ``limits=`` uses)."""
    return _default


def current() -> ReaderLimits:
    """The limits of the load in progress, else the process-wide default."""
    active = _active.get()
    return active.limits if active is not None else _default


def confined() -> bool:
    """Whether the load in progress confines file references to :func:`allowed_roots` (opt-in)."""
    active = _active.get()
    return active.confine if active is not None else False


def allowed_roots() -> tuple[Path, ...]:
    """Folders file references may resolve under during the load in progress (resolved paths)."""
    active = _active.get()
    return active.roots if active is not None else ()


@contextlib.contextmanager
def reading(limits: ReaderLimits | None = None, roots: Iterable[str | os.PathLike[str]] = (), *,
            confine: bool = False) -> Iterator[ReaderLimits]:
    """Make ``limits`` and ``roots`` the active ones while a model loads.

    ``roots`` adds to the roots of an enclosing :func:`reading` (an included file keeps its
    includer's permissions); limits default to the enclosing ones, else the global default.
    ``confine=True`` makes references outside the roots an error; an enclosing confined load
    stays confined (an included file cannot lift its includer's confinement).
    """
    outer = _active.get()
    chosen = limits or (outer.limits if outer is not None else _default)
    if not isinstance(chosen, ReaderLimits):
        raise TypeError(f"limits must be ReaderLimits, got {type(chosen).__name__}")
    new_roots = list(outer.roots if outer is not None else ())
    for r in roots:
        real = Path(os.path.realpath(check_path_text(r, chosen, FormatError, what="allowed root")))
        if real not in new_roots:
            new_roots.append(real)
    token = _active.set(_Active(chosen, tuple(new_roots), confine or (outer is not None and outer.confine)))
    try:
        yield chosen
    finally:
        _active.reset(token)


def model_folder(path: str | os.PathLike[str] | None, *,
                 is_dir: bool = False) -> contextlib.AbstractContextManager[ReaderLimits]:
    """:func:`reading` with the folder of the model file ``path`` (or the folder ``path``) as a root.

    Each reader's ``load_<fmt>`` enters it, so references from included files in subfolders
    may point back anywhere in the top model's folder tree, as when loaded via ``load_model``.
    """
    if path is None:
        return reading()
    text = check_path_text(path, what="model path")
    return reading(roots=[text if is_dir else os.path.dirname(os.path.realpath(text))])


# --------------------------------------------------------------------------- errors


ErrorClass = type[FormatError] | type[ConfigError]


def _error(error: ErrorClass, message: str, file: str | os.PathLike[str] | None, line: int | None
           ) -> FormatError | ConfigError:
    return error(message, file=file, line=line)


def exceeded(what: str, value: int | float, limit_name: str, file: str | os.PathLike[str] | None = None,
             line: int | None = None, error: ErrorClass = FormatError) -> FormatError | ConfigError:
    """The error for a count past its limit (returned, for the caller to ``raise``)."""
    limit = getattr(current(), limit_name)
    shown = f"{value:.6g}" if isinstance(value, float) else str(value)
    return _error(error, f"{what} ({shown}) exceeds the limit ReaderLimits.{limit_name}={limit}", file, line)


def check_count(value: int | float, limit_name: str, what: str, file: str | os.PathLike[str] | None = None,
                line: int | None = None, error: ErrorClass = FormatError) -> int:
    """``value`` as an int if it is a finite count within ``limit_name``, else the error.

    Accepts floats (MJCF writes counts as numbers) but refuses NaN, infinities and fractions, so
    ``int()`` on the result can neither overflow nor truncate silently.
    """
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _error(error, f"{what} must be a whole number, got {value!r}", file, line)
    if value < 0:
        raise _error(error, f"{what} must not be negative, got {value:.6g}", file, line)
    if value > getattr(current(), limit_name):
        raise exceeded(what, value, limit_name, file, line, error)
    return int(value)


# --------------------------------------------------------------------------- paths


def check_path_text(path: str | os.PathLike[str], limits: ReaderLimits | None = None,
                    error: ErrorClass = FormatError, *, file: str | os.PathLike[str] | None = None,
                    line: int | None = None, what: str = "path") -> str:
    """The path as text, checked before any system call sees it.

    NUL bytes make ``os`` functions raise ``ValueError``; names past PATH_MAX/NAME_MAX raise
    ``OSError(ENAMETOOLONG)`` from ``Path.exists()``. Both become ``error`` naming ``file`` (the
    file that holds the reference) or the path itself.
    """
    limits = limits or current()
    try:
        text = os.fspath(path)
    except TypeError:
        raise _error(error, f"{what} must be a string, got {type(path).__name__}", file, line) from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    where = file if file is not None else (text if len(text) <= 200 and "\0" not in text else None)
    if "\0" in text:
        raise _error(error, f"{what} contains a NUL byte", where, line)
    if len(text) > limits.max_path_length:
        raise _error(error, f"{what} is {len(text)} characters long, over the limit "
                     f"ReaderLimits.max_path_length={limits.max_path_length}", where, line)
    for part in text.replace("\\", "/").split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > limits.max_name_length:
            raise _error(error, f"{what} has a {len(part)}-character component, over the limit "
                         f"ReaderLimits.max_name_length={limits.max_name_length}", where, line)
    return text


def _shorten(text: str, width: int = 120) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def resolve_reference(ref: str | os.PathLike[str], base_dir: str | os.PathLike[str],
                      roots: Sequence[str | os.PathLike[str]] | None = None, *,
                      file: str | os.PathLike[str] | None = None, line: int | None = None,
                      what: str = "file reference", error: ErrorClass = FormatError,
                      confine: bool | None = None) -> Path:
    """Resolve a file reference written in a model (relative to ``base_dir``), as its reference library does.

    Relative paths, ``..`` included, are joined to ``base_dir`` and symlinks followed (a format
    whose spec forbids absolute paths, as HRDF does, refuses them before calling this). Only a
    confined load (``confine=True`` here or in the active :func:`reading`) checks where the
    target lands: under ``base_dir``, the active :func:`allowed_roots` or ``roots``, so that
    ``../`` chains and absolute paths in an untrusted file cannot make it read ``/etc`` or
    ``/proc``. What protects every load, confined or not, is elsewhere: only regular files are
    read, within size, count and depth limits, and no error quotes a file's content. The result
    need not exist (callers report a missing file their own way). Errors name ``file`` and
    ``line`` (the referencing element) and the rule broken.
    """
    limits = current()
    text = check_path_text(ref, limits, error, file=file, line=line, what=what)
    if not text:
        raise _error(error, f"{what} is empty", file, line)
    base_text = check_path_text(base_dir, limits, error, file=file, line=line, what="base folder")
    base = Path(os.path.realpath(base_text))
    try:
        target = Path(os.path.realpath(os.path.join(base, text)))
    except (OSError, ValueError) as exc:  # pragma: no cover - realpath is non-strict
        raise _error(error, f"{what} {_shorten(text)!r} cannot be resolved: {exc}", file, line) from None
    if not (confined() if confine is None else confine):
        return target
    allowed = [base, *allowed_roots()]
    allowed.extend(Path(os.path.realpath(check_path_text(r, limits, error, file=file, line=line,
                                                          what="allowed root"))) for r in roots or ())
    if any(target == r or target.is_relative_to(r) for r in allowed):
        return target
    rule = ("absolute paths must lie inside the model's folder" if os.path.isabs(text)
            else "'..' must not leave the model's folder")
    raise _error(error, f"{what} {_shorten(text)!r} resolves to {_shorten(str(target))}, outside the "
                 f"allowed folders (confine=True: {rule}; pass allowed_roots=[...] or --allow-root DIR "
                 "to permit it)", file, line)


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """``Path.is_file()`` that returns False instead of raising (ENAMETOOLONG, NUL, ELOOP, EACCES)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def exists(path: str | os.PathLike[str]) -> bool:
    """``Path.exists()`` that returns False instead of raising (ENAMETOOLONG, NUL, ELOOP, EACCES)."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


_KIND = {stat.S_ISDIR: "a directory", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
         stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}


def read_regular_file(path: str | os.PathLike[str], limits: ReaderLimits | None = None, what: str = "file", *,
                      max_bytes: int | None = None, error: ErrorClass = FormatError,
                      file: str | os.PathLike[str] | None = None, line: int | None = None,
                      head: int | None = None) -> bytes:
    """The bytes of a regular file no larger than ``max_bytes`` (default ``limits.max_file_bytes``).

    Devices, FIFOs, sockets and directories are refused before a byte is read (the FIFO is
    opened non-blocking so a missing writer cannot hang the load); at most ``max_bytes + 1``
    bytes are read, so a file that grows while read, or a lying ``st_size``, cannot exhaust
    memory. Every failure is ``error`` naming ``file``/``line`` (the referencing element) when
    given, else the path. ``head``: return only the file's first ``head`` bytes, reading no more
    (enough to tell a format by its first element: a file refused elsewhere by its size is not read
    whole to say what it is); the file's size is still checked against the limit.
    """
    limits = limits or current()
    cap = limits.max_file_bytes if max_bytes is None else max_bytes
    text = check_path_text(path, limits, error, file=file, line=line, what=what)
    where = file if file is not None else text
    shown = "" if file is None else f" {_shorten(text)}"
    try:
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        reason = "name too long" if exc.errno == errno.ENAMETOOLONG else (exc.strerror or str(exc))
        raise _error(error, f"cannot read {what}{shown}: {reason}", where, line) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KIND.items() if test(st.st_mode)), "not a regular file")
            raise _error(error, f"{what}{shown} is {kind}; only regular files are read", where, line)
        if st.st_size > cap:
            raise _error(error, f"{what}{shown} is {st.st_size} bytes, over the limit of {cap} bytes "
                         f"(ReaderLimits.{_limit_name(cap, limits)})", where, line)
        chunks: list[bytes] = []
        total = 0
        wanted = cap + 1 if head is None else min(head, cap + 1)
        while total < wanted:
            chunk = os.read(fd, min(wanted - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:
            raise _error(error, f"{what}{shown} is over the limit of {cap} bytes "
                         f"(ReaderLimits.{_limit_name(cap, limits)})", where, line)
        return b"".join(chunks)
    except OSError as exc:
        raise _error(error, f"cannot read {what}{shown}: {exc.strerror or exc}", where, line) from None
    finally:
        os.close(fd)


def _limit_name(cap: int, limits: ReaderLimits) -> str:
    for name in ("max_file_bytes", "max_mesh_file_bytes", "max_yaml_bytes"):
        if getattr(limits, name) == cap:
            return name
    return "max_file_bytes"


__all__ = [
    "ReaderLimits", "allowed_roots", "check_count", "check_path_text", "confined", "current", "default_limits",
    "exceeded", "exists", "is_regular_file", "model_folder", "read_regular_file", "reading", "resolve_reference",
    "set_default_limits",
]
