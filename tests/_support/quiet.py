"""The machine to ourselves while a latency is measured: pause the idle-priority tiers beside us.

``tools/dev test`` runs the ``exclusive`` tests (the panel's browser rig) once the realtime lanes are
done, while the unit and reference tiers may still be running at idle CPU priority in their own
process group, whose id it passes in ``HEBICTL_TEST_PAUSE_PGID``. The rig's functional checks run
beside them, but a measurement of its latency bounds (an e-stop within 200 ms with 300 sessions
open, a jog's p99) is made with that group stopped (SIGSTOP) and resumed (SIGCONT) afterwards: even
at idle priority, two workers beside Chromium put 134-155 ms outliers on a 200 ms bound. The parallel
tiers hold no wall-clock bound (that is what puts a test in them), so a pause costs them only its
length. ``tools/dev`` resumes the group again when the exclusive run ends, whatever happened to it.
Without the variable (a plain pytest run), nothing is paused.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

#: the variable naming the process group of the parallel tiers (set by tools/dev test)
PAUSE_ENV = "HEBICTL_TEST_PAUSE_PGID"


def _signal_group(sig: signal.Signals) -> bool:
    value = os.environ.get(PAUSE_ENV, "")
    if not value.isdigit() or int(value) <= 1:
        return False
    try:
        os.killpg(int(value), sig)
    except (ProcessLookupError, PermissionError):  # the tiers are done (or not ours): nothing to pause
        return False
    return True


@contextlib.contextmanager
def machine_to_ourselves() -> Iterator[bool]:
    """Pause the parallel tiers for the ``with`` block; yields whether there was anything to pause."""
    paused = _signal_group(signal.SIGSTOP)
    try:
        yield paused
    finally:
        if paused:
            _signal_group(signal.SIGCONT)


__all__ = ["PAUSE_ENV", "machine_to_ourselves"]
