"""hebictl.limits: regular files only, bounded reads, references kept inside allowed folders."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import pytest

from hebictl import limits as L  # noqa: N812
from hebictl.errors import ConfigError, FormatError
from tests._support.work import thread_reads


def test_defaults_are_positive_and_documented() -> None:
    lim = L.ReaderLimits()
    for f in dataclasses.fields(lim):
        assert getattr(lim, f.name) >= 1
    # every field carries a #: comment in the source, which Sphinx and readers use
    source = Path(L.__file__).read_text()
    for f in dataclasses.fields(lim):
        assert f"    {f.name}: int" in source
        before = source.split(f"    {f.name}: int")[0].rstrip().splitlines()[-1]
        assert before.strip().startswith("#:"), f.name


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_limits_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="max_file_bytes"):
        L.ReaderLimits(max_file_bytes=bad)  # type: ignore[arg-type]


def test_read_regular_file_reads_small_file(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(b"hello")
    assert L.read_regular_file(p) == b"hello"


def test_dev_zero_refused_without_reading() -> None:
    """Refused by what it is, before a read: this thread makes no read system call (counted by the
    kernel, /proc/thread-self/io; an endless device read in bounded chunks would make ~64 of 1 MiB)."""
    with thread_reads() as read, pytest.raises(FormatError, match="character device") as info:
        L.read_regular_file("/dev/zero")
    assert info.value.file == "/dev/zero"
    if read.known:
        assert (read.calls, read.bytes) == (0, 0)


def test_directory_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="directory"):
        L.read_regular_file(tmp_path)


def test_a_head_is_read_alone_and_the_size_still_checked(tmp_path: Path) -> None:
    """``head``: the first bytes of a file (what a format sniff needs) without reading the rest; a file
    over the size limit is still refused."""
    p = tmp_path / "big.xml"
    p.write_bytes(b"<robot>" + b"x" * (1 << 20))
    assert L.read_regular_file(p, head=7) == b"<robot>"
    L.read_regular_file(p, head=7)
    with thread_reads() as read:
        L.read_regular_file(p, head=4096)
    if read.known:
        assert read.bytes == 4096
    with pytest.raises(FormatError, match=r"ReaderLimits\.max_file_bytes"):
        L.read_regular_file(p, L.ReaderLimits(max_file_bytes=100), head=7)


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def run() -> None:
        try:
            L.read_regular_file(fifo)
        except BaseException as exc:
            result.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5.0)
    assert not t.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], FormatError) and "FIFO" in str(result[0])


def test_oversize_file_refused_with_limit_name(tmp_path: Path) -> None:
    p = tmp_path / "big.xml"
    p.write_bytes(b"x" * 101)
    with pytest.raises(FormatError, match=r"ReaderLimits\.max_file_bytes"):
        L.read_regular_file(p, L.ReaderLimits(max_file_bytes=100))
    assert L.read_regular_file(p, L.ReaderLimits(max_file_bytes=101)) == b"x" * 101


def test_error_names_referencing_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as info:
        L.read_regular_file("/dev/zero", file=tmp_path / "model.sdf", line=12, what="included file")
    assert info.value.file == str(tmp_path / "model.sdf") and info.value.line == 12
    assert "/dev/zero" in info.value.message


def test_missing_file_and_config_error_class(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        L.read_regular_file(tmp_path / "nope.yaml", error=ConfigError)


@pytest.mark.parametrize("path", ["a\0b", "x" * 300, "/".join(["d"] * 3000)])
def test_bad_path_text_refused_before_the_file_system(path: str) -> None:
    with pytest.raises(FormatError) as info:
        L.read_regular_file(path)
    assert "NUL" in str(info.value) or "limit" in str(info.value)
    assert len(str(info.value)) < 600  # a 6 kB path is not echoed back in full


def test_enametoolong_from_the_os_is_a_format_error(tmp_path: Path) -> None:
    # within our PATH_MAX check, but a component the file system refuses
    lim = L.ReaderLimits(max_name_length=10_000, max_path_length=100_000)
    with pytest.raises(FormatError, match="name too long"):
        L.read_regular_file(tmp_path / ("n" * 5000), lim)


def test_safe_exists_and_is_file() -> None:
    assert not L.exists("n" * 5000) and not L.is_regular_file("a\0b")
    assert L.exists("/") and not L.is_regular_file("/")


def test_resolve_inside_model_folder(tmp_path: Path) -> None:
    (tmp_path / "meshes").mkdir()
    assert L.resolve_reference("meshes/a.stl", tmp_path) == (tmp_path / "meshes" / "a.stl").resolve()
    assert L.resolve_reference("meshes/../b.stl", tmp_path) == (tmp_path / "b.stl").resolve()


@pytest.mark.parametrize("ref, rule", [("../../../etc/passwd", "'..' must not leave"),
                                       ("/etc/passwd", "absolute paths"), ("/dev/zero", "absolute paths")])
def test_escape_refused_with_file_line_and_rule(tmp_path: Path, ref: str, rule: str) -> None:
    with pytest.raises(FormatError) as info, L.reading(confine=True):
        L.resolve_reference(ref, tmp_path, file=tmp_path / "m.urdf", line=7)
    assert rule in info.value.message and "allowed_roots" in info.value.message
    assert info.value.file == str(tmp_path / "m.urdf") and info.value.line == 7


def test_references_follow_dotdot_unless_confined(tmp_path: Path) -> None:
    """By default a reference resolves as the format's reference library resolves it ('..' included,
    as in the HRDF spec's '../robot_parts/left_arm.hrdf'); confinement is opt-in, inherited by nested loads."""
    model = tmp_path / "rosie" / "config" / "hrdf"
    model.mkdir(parents=True)
    target = "../../../arms/config/hrdf/A-2085-06.hrdf"
    assert L.resolve_reference(target, model) == (tmp_path / "arms/config/hrdf/A-2085-06.hrdf").resolve()
    assert not L.confined()
    # an included file's reading() cannot lift its includer's confinement
    with L.reading(confine=True), L.reading(roots=[tmp_path / "x"]):
        assert L.confined()
        with pytest.raises(FormatError, match=r"confine=True: '\.\.' must not leave"):
            L.resolve_reference(target, model)
    assert L.resolve_reference(target, model, confine=False).name == "A-2085-06.hrdf"


def test_symlink_escape_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc")
    with pytest.raises(FormatError, match="outside the allowed folders"):
        L.resolve_reference("link/passwd", tmp_path, confine=True)


def test_allowed_roots_argument_and_context(tmp_path: Path) -> None:
    model, shared = tmp_path / "model", tmp_path / "shared"
    model.mkdir()
    shared.mkdir()
    assert L.resolve_reference("../shared/x.stl", model, [shared]) == shared.resolve() / "x.stl"
    with pytest.raises(FormatError):
        L.resolve_reference("../shared/x.stl", model, confine=True)
    with L.reading(roots=[shared], confine=True):
        assert L.resolve_reference(str(shared / "x.stl"), model) == shared.resolve() / "x.stl"
        with L.reading(roots=[tmp_path / "other"]):  # nested loads keep the outer roots
            assert shared.resolve() in L.allowed_roots()
    assert L.allowed_roots() == ()


def test_reading_sets_limits_per_call_and_default_restores() -> None:
    small = L.ReaderLimits(max_elements=5)
    with L.reading(small):
        assert L.current() is small
        with L.reading():
            assert L.current() is small
    assert L.current() == L.ReaderLimits()
    previous = L.set_default_limits(small)
    try:
        assert L.current() is small
    finally:
        L.set_default_limits(previous)
    assert L.current() == L.ReaderLimits()


@pytest.mark.parametrize("value, match", [(1e300, "exceeds the limit"), (float("nan"), "whole number"),
                                          (float("inf"), "whole number"), (2.5, "whole number"),
                                          (-1, "negative"), (10**400, "exceeds the limit")])
def test_check_count(value: float, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        L.check_count(value, "max_flexcomp_count", "flexcomp count", "f.xml", 3)


def test_check_count_passes_valid() -> None:
    assert L.check_count(12.0, "max_replicate_count", "count") == 12
