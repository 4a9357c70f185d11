"""What the scheduler did to the calling thread, for tests that measure wall time.

A wall-clock bound on a shared 2-core machine measures the other processes as much as the code
under test: the unit tier runs at idle priority beside two realtime lanes, and a thread that is
ready to run can wait 100 ms for a CPU. Linux counts that wait per thread
(``/proc/thread-self/schedstat``: time on a CPU, time runnable but waiting for one, in ns), so a
test can take out the time it was kept waiting and still bound what the code itself did (a sleep
that overslept, a read that blocked)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")


@dataclass(frozen=True)
class ThreadTimes:
    """The calling thread's scheduler totals [s] at one moment."""

    on_cpu: float
    waiting: float

    def __sub__(self, earlier: ThreadTimes) -> ThreadTimes:
        return ThreadTimes(self.on_cpu - earlier.on_cpu, self.waiting - earlier.waiting)


def thread_times() -> ThreadTimes | None:
    """This thread's time on a CPU and time waiting for one so far; None where the kernel does not
    say (no schedstat, or one that counts nothing: a thread that reads it has run, so zero time on a
    CPU means the kernel keeps no such figures; the caller keeps its plain wall-clock bound)."""
    try:
        on_cpu, waiting = (int(field) for field in SCHEDSTAT.read_text().split()[:2])
    except (OSError, ValueError):
        return None
    if on_cpu <= 0:
        return None
    return ThreadTimes(on_cpu * 1e-9, waiting * 1e-9)
