"""What the scheduler did to a thread, for tests that measure wall time.

A wall-clock bound on a shared 2-core machine measures the other processes as much as the code
under test: the unit tier runs at idle priority beside two realtime lanes, and a thread that is
ready to run can wait 100 ms for a CPU. Linux counts that wait per thread
(``/proc/<tid>/schedstat``: time on a CPU, time runnable but waiting for one, in ns), so a test
can take out the time it was kept waiting and still bound what the code itself did (a sleep that
overslept, a read that blocked). The time on a CPU advances at scheduler ticks, so it is coarse
over a few milliseconds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ThreadTimes:
    """A thread's scheduler figures [s]: totals at one moment (:func:`thread_times`), or what a
    ``with scheduled()`` block took (``known`` False, zeros: the kernel does not say)."""

    on_cpu: float = 0.0
    waiting: float = 0.0
    known: bool = True


def thread_times(pid: int | None = None) -> ThreadTimes | None:
    """The calling thread's (``pid``: that process's main thread's) time on a CPU and time waiting
    for one so far; None where the kernel does not say (no schedstat, or one that counts nothing: a
    thread that has run has time on a CPU). Linux keeps the figures of an exited, unreaped process."""
    path = Path("/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat")
    try:
        on_cpu, waiting = (int(field) for field in path.read_text().split()[:2])
    except (OSError, ValueError):
        return None
    if on_cpu <= 0:
        return None
    return ThreadTimes(on_cpu * 1e-9, waiting * 1e-9)


@contextmanager
def scheduled() -> Iterator[ThreadTimes]:
    """What the scheduler did to this thread inside the block, filled in when it ends (``known``
    False and zeros where the kernel does not say: the caller keeps its plain wall-clock bound)."""
    spent = ThreadTimes(known=False)
    before = thread_times()
    try:
        yield spent
    finally:
        after = thread_times()
        if before is not None and after is not None:
            spent.on_cpu, spent.waiting = after.on_cpu - before.on_cpu, after.waiting - before.waiting
            spent.known = True
