"""Work counted instead of timed: how much a call did, in units a loaded machine cannot change.

A wall-clock bound ("refused within 1 s") measures the other processes on the machine as much as
the code; under ``pytest -n auto`` on two cores it fails for reasons that have nothing to do with
the claim. The claims such bounds stood for are about work: a hostile file is refused without
expanding its aliases, a device is refused without reading it. These count that work exactly:

* :func:`python_calls`: the Python function calls (and calls into C functions) a call makes, from
  :func:`sys.setprofile` on this thread; a pathological input (an alias bomb expanded, a 1 MiB
  file parsed in pure Python) takes millions, a refusal a few hundred;
* :func:`thread_reads`: the ``read`` system calls and bytes this thread made inside a block, from
  Linux's per-thread I/O accounting (``/proc/thread-self/io``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

#: Linux's I/O accounting of the calling thread (absent elsewhere: :func:`thread_reads` says so)
THREAD_IO = Path("/proc/thread-self/io")


def python_calls(fn: Callable[[], Any]) -> tuple[int, BaseException | None]:
    """(calls made, the exception raised or None) by ``fn()`` on this thread: each Python function
    entered and each C function called from Python counts one."""
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    except Exception as exc:  # the refusal is the point of most callers: returned for them to check
        return count, exc
    finally:
        sys.setprofile(previous)
    return count, None


@dataclass
class Reads:
    """What a ``with thread_reads()`` block read: system calls and bytes (filled in at its end;
    ``known`` False where the kernel does not count them per thread: the caller skips its check)."""

    calls: int = 0
    bytes: int = 0
    known: bool = True


def _io() -> tuple[int, int]:
    fields = dict(line.split(": ") for line in THREAD_IO.read_text().splitlines())
    return int(fields["syscr"]), int(fields["rchar"])


@contextmanager
def thread_reads() -> Iterator[Reads]:
    """The ``read`` calls and bytes of this thread inside the block, less this helper's own reads of
    its figures (measured first: the figures are taken before the read that returns them counts).
    Call the code under test once before (a first call may import modules, which reads files)."""
    got = Reads(known=THREAD_IO.exists())
    if not got.known:
        yield got
        return
    first, second = _io(), _io()
    own = (second[0] - first[0], second[1] - first[1])  # one reading of the figures
    start = _io()
    try:
        yield got
    finally:
        end = _io()
        got.calls, got.bytes = end[0] - start[0] - own[0], max(0, end[1] - start[1] - own[1])
