"""The two clocks teleop reads, injected like the arm's :class:`~hebictl.hardware.clock.Clock`.

Teleop needs two kinds of time and must not mix them up:

* **wall time** [s since the Unix epoch]: the only time two machines share, so it is what goes on
  the wire (``ts`` of every command and payload) and what the freshness check compares;
* **monotonic time** [s, arbitrary origin]: everything measured on this machine alone (state
  publishing schedule, ack coalescing windows, rate limits), immune to NTP steps.

The arm thread's own timing (jog ``ttl``, braking) runs on the arm's injected clock
(``arm.clock.now()``), as the rest of the control loop does. Nothing in ``hebictl.teleop`` calls
:func:`time.time` or :func:`time.monotonic` directly: tests inject a :class:`TeleopClock` whose
functions they control.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TeleopClock:
    """``wall()`` [s since epoch] and ``monotonic()`` [s]; the defaults read the system clocks."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic


#: the system's clocks: what ``hebictl teleop`` and ``teleop-send`` use
SYSTEM_CLOCK = TeleopClock()
