"""Control gap: a cycle that comes later than the modules' command lifetime.

Why a latched fault: during such a gap the modules' last command expired (they went limp or
held, by their strategy) and the arm may have moved; resuming the pre-gap trajectory would drive
it back at whatever speed the rate limiter allows. The event names the gap's length and the
positions before and after; the reaction (default ``stop``) holds where the arm now is.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.hardware.base import Feedback

__all__ = ["ControlGapMonitor"]


class ControlGapMonitor(Monitor):
    """``control_gap``: no command sent for longer than the command lifetime [s] (the previous
    cycle's send, or the keep-alive of a long goal check, to this cycle's feedback)."""

    kind = EventKind.CONTROL_GAP

    def __init__(self, settings: dict[str, Any], command_lifetime: float) -> None:
        super().__init__(settings)
        self.limit = command_lifetime if command_lifetime > 0.0 else math.inf
        self.before: np.ndarray | None = None

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        # the time since the modules last got a command (the previous cycle's send, or the keep-alive
        # of a long goal check), not since the previous fresh sample: a module that stops answering
        # while the loop runs on is a hardware_error/watchdog matter, and the modules that answer
        # got a command every cycle (their lifetime never ran out)
        if arm.last_command_time is None:  # never commanded: no lifetime ran out
            return None
        dt = float(now - arm.last_command_time)
        before = self.before
        if before is None:
            self.before = fb.position.copy()
            return None
        if dt <= self.limit:
            np.copyto(before, fb.position)
            return None
        moved = float(np.max(np.abs(fb.position - before)))
        fmt = np.array2string
        out = self.finding(f"control gap of {dt * 1e3:.0f} ms (> command lifetime {self.limit * 1e3:.0f} ms); "
                           f"joints moved up to {moved:.3f} rad meanwhile (before {fmt(before, precision=3)}, "
                           f"after {fmt(fb.position, precision=3)} rad); holding where the arm is",
                           gap_s=dt, position_before=before.tolist(), position_after=fb.position.tolist(),
                           hold_position=fb.position.copy())
        np.copyto(before, fb.position)
        return out
