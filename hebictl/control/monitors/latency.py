"""Late feedback: the age of each sample, measured and kept for the arm's use.

Why: a stop or a hold computed from a sample 20-50 ms old starts from where the arm was, not
where it is; at speed that is centimetres. The age is ``rx_time - max(time)`` (Feedback's
convention: both on the backend's clock); backends whose sample times are on another clock
(an age beyond 1000 s, or negative) are not judged. ``MonitorSuite.feedback_age`` keeps the last
age so braking can extrapolate the measured position by velocity x age.
"""

from __future__ import annotations

import math
from typing import Any

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.hardware.base import Feedback

__all__ = ["LatencyMonitor"]


#: [s] on-time feedback for this long ends a late episode (the next late sample is a new event):
#: an overloaded loop whose samples are late every few cycles is one event, not hundreds
REARM_S = 1.0


class LatencyMonitor(Monitor):
    """``feedback_late``: sample age > ``max_age`` [s]; one event per episode."""

    kind = EventKind.FEEDBACK_LATE

    def __init__(self, settings: dict[str, Any], feedback_frequency: float) -> None:
        super().__init__(settings)
        self.limit = settings["max_age"]
        self.age = 0.0
        self.late = False
        self.on_time = 0.0  # [s] of on-time feedback since the last late sample

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        age = fb.rx_time - fb.time[0]  # one module's stamp: a group's samples share one moment
        if not (math.isfinite(age) and 0.0 <= age < 1000.0):
            self.age = 0.0
            return None
        self.age = age
        if age <= self.limit:
            self.on_time += dt
            if self.on_time >= REARM_S:
                self.late = False
            return None
        self.on_time = 0.0
        if self.late:
            return None
        self.late = True
        return self.finding(f"feedback is {age * 1e3:.1f} ms old (bound {self.limit * 1e3:.1f} ms)", age_s=age)
