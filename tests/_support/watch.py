"""What a pytest run gives ``tools/watch_tier.py`` to tell a stalled run from a slow one.

``tools/dev test`` sets two variables for the parallel tiers:

* ``HEBICTL_TEST_HEARTBEAT``: a file every test report touches (in the xdist controller and in its
  workers alike), so the watchdog knows when the last test finished;
* ``HEBICTL_TEST_STACKS``: a folder where each pytest process registers ``faulthandler`` on SIGUSR1
  into ``<pid>.txt``, so a stalled run's report shows where every process stood.

Without the variables (a plain pytest run) this does nothing.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from pathlib import Path
from typing import IO

import pytest

HEARTBEAT_ENV = "HEBICTL_TEST_HEARTBEAT"
STACKS_ENV = "HEBICTL_TEST_STACKS"

#: the stack file of this process (kept open for faulthandler, which writes to its descriptor)
_stack_file: list[IO[str]] = []


def configure() -> None:
    """Register this process's stack dump on SIGUSR1 (once per process)."""
    folder = os.environ.get(STACKS_ENV, "")
    if not folder or _stack_file or not hasattr(faulthandler, "register"):
        return
    path = Path(folder) / f"{os.getpid()}.txt"
    try:
        handle = path.open("w", encoding="utf-8")
    except OSError:
        return
    _stack_file.append(handle)
    faulthandler.register(signal.SIGUSR1, file=handle, all_threads=True)


def beat(report: pytest.TestReport) -> None:
    """Touch the heartbeat file at the end of each test's call (and at a failed set-up or teardown)."""
    path = os.environ.get(HEARTBEAT_ENV, "")
    if path and (report.when == "call" or report.failed):
        try:
            os.utime(path)
        except FileNotFoundError:
            Path(path).touch()
        except OSError:
            pass


__all__ = ["HEARTBEAT_ENV", "STACKS_ENV", "beat", "configure"]
