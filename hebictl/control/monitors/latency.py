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


class LatencyMonitor(Monitor):
    """``feedback_late``: sample age > ``max_age_periods`` feedback periods; one event per episode."""

    kind = EventKind.FEEDBACK_LATE

    def __init__(self, settings: dict[str, Any], feedback_frequency: float) -> None:
        super().__init__(settings)
        period = 1.0 / feedback_frequency if feedback_frequency > 0 else 0.01
        self.limit = settings["max_age_periods"] * period
        self.age = 0.0
        self.late = False

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        age = fb.rx_time - float(fb.time.max())
        if not (math.isfinite(age) and 0.0 <= age < 1000.0):
            self.age = 0.0
            return None
        self.age = age
        if age <= self.limit:
            self.late = False
            return None
        if self.late:
            return None
        self.late = True
        return self.finding(f"feedback is {age * 1e3:.1f} ms old (bound {self.limit * 1e3:.1f} ms)", age_s=age)
