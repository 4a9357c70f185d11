"""Writing to stdout/stderr from commands that drive an arm: a failed write is never an error.

``hebictl run ... 2>&1 | head -1`` closes the pipe after one line; ``2>&-`` starts the process
without a stderr at all. A command that is braking an arm must not die of ``BrokenPipeError``
half-way through its stop, nor leave its recording unwritten. :func:`say` writes one line and
reports whether it arrived; once a stream has failed it is pointed at ``/dev/null`` so later
writes (rich, logging, the interpreter's final flush) pass silently instead of raising again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

#: streams that are gone (closed at start, or their reader went away): nothing written there arrives
GONE: set[str] = set()


def arms_count(n: int) -> str:
    """"1 arm", "2 arms": a multi-arm config may hold one arm (beside a mobile base)."""
    return f"{n} arm{'' if n == 1 else 's'}"


def ensure_streams() -> None:
    """A process started with stdout or stderr closed (``2>&-``) has ``sys.stderr is None``: give it
    /dev/null, so every later write (ours, rich's, logging's) just disappears, and remember it is gone."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
            GONE.add(name)


def say(message: str, *, err: bool = True) -> bool:
    """Print ``message`` to stderr (or stdout); True if it was written, False if the stream is gone."""
    name = "stderr" if err else "stdout"
    stream: TextIO | None = getattr(sys, name)
    if stream is None or name in GONE:
        return False
    try:
        print(message, file=stream, flush=True)
    except (OSError, ValueError):
        silence(name)
        return False
    return True


def silence(name: str) -> None:
    """Point ``sys.<name>`` (``stdout`` or ``stderr``) at /dev/null after its reader went away."""
    GONE.add(name)
    stream: TextIO | None = getattr(sys, name)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        fileno = stream.fileno() if stream is not None else None
    except (OSError, ValueError):
        fileno = None
    if fileno is not None:
        os.dup2(devnull, fileno)  # the pending buffer now flushes into /dev/null
        os.close(devnull)
        return
    setattr(sys, name, open(devnull, "w", closefd=True))  # noqa: SIM115 - lives as long as the process


@contextlib.contextmanager
def tolerant(name: str = "stdout") -> Iterator[None]:
    """Run a block of output (a summary, a table) and swallow a failed write: the stream is silenced."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
            raise
        silence(name)
    except ValueError as exc:
        if "closed file" not in str(exc):
            raise
        silence(name)


def console(**options: Any) -> Any:
    """A rich Console that, when its reader goes away, goes quiet instead of ``SystemExit(1)``
    (rich's default): the command still writes its files and returns its own exit code."""
    from rich.console import Console

    class _Quiet(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            silence("stderr" if self.stderr else "stdout")

    return _Quiet(**options)


def loop_line(s: Any, rate: float) -> str:
    """One second of the control loop's statistics (:class:`hebictl.control.loop.LoopStats`) on one
    line, for the live status of ``run`` (one arm or several)."""
    return (f"{rate:.0f} Hz: period p50 {s.period_p50 * 1e3:.3f} ms, max {s.period_max * 1e3:.3f} ms; "
            f"work p99 {s.work_p99 * 1e3:.3f} ms; waiting for feedback p50 {s.wait_p50 * 1e3:.3f} ms; "
            f"deadline misses {s.deadline_misses}, overruns {s.overruns}")


def grant_notice(args: Any) -> Any:
    """A control loop's ``on_grant`` for ``hebictl run`` (one arm or several): on the loop thread,
    before its first cycle, says what the thread was granted (``hebictl run: real-time: ...``) unless
    ``--quiet`` or real-time is off (the summary repeats it)."""
    def granted(grant: Any) -> None:
        if not getattr(args, "quiet", False) and not grant.requested.off:
            say(f"hebictl run: {grant.line()}")
    return granted

