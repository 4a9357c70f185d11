"""Tracking error: the measured position too far from the command, for the commanded speed.

Why the bound grows with speed: a module's position loop lags its command by roughly a fixed
time, so the error a healthy joint shows is proportional to its speed; a fixed bound would be
either blind at rest or tripped by every fast move. Compared against the command sent in the
previous cycle (the one the sample can show).

Why the bound also grows with the sample's timing (:mod:`.timing`): after a late cycle the modules
held a command that was ``late`` seconds stale, and a sample ``age`` seconds old shows the arm
where it was then; either puts a healthy joint up to |qd_cmd| x (late + age) behind the command
it is compared with. A sample no newer than the last judged one is not judged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.monitors.timing import SampleClock
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Feedback

__all__ = ["TrackingMonitor"]


class TrackingMonitor(Monitor):
    """``tracking_error``: |q - q_cmd| > ``base_error`` + ``error_per_speed`` x |qd_cmd| [rad] on a
    joint is an event; for ``sustain_time`` [s] the reaction (default ``hold``, from the measured
    state)."""

    kind = EventKind.TRACKING_ERROR

    def __init__(self, settings: dict[str, Any], clock: SampleClock) -> None:
        super().__init__(settings)
        self.clock = clock
        self.over = 0.0        # [s] the bound has been exceeded for this long
        self.reported = False  # the event of this episode was recorded
        self.reacted = False

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        cmd = arm.pending_command  # still last cycle's: the command the sample can show
        if arm.state is ArmState.STOPPED:
            self.over, self.reported, self.reacted = 0.0, False, False
            return None
        timing = self.clock.timing
        if not timing.known:
            return None  # an older sample than the last judged one (or the first): its command is unknown
        s = self.settings
        j, err, bound = kernels.worst_excess(fb.position, cmd.position, cmd.velocity, s["base_error"],
                                             s["error_per_speed"] + timing.late + timing.age)
        if j < 0 or not err > bound:
            self.over, self.reported, self.reacted = 0.0, False, False
            return None
        self.over += dt
        detail = (f"joint {j} ({arm.model.joint_names[j]}): {err:.3f} rad from its command "
                  f"(bound {bound:.3f} rad at {abs(float(np.nan_to_num(cmd.velocity[j]))):.2f} rad/s)")
        if not self.reported:
            self.reported = True
            return self.finding(detail, "event", joint=j, error=err, bound=bound)
        if not self.reacted and self.over >= s["sustain_time"]:
            self.reacted = True
            return self.finding(f"{detail} for {self.over:.2f} s", joint=j, error=err, bound=bound,
                                duration_s=self.over)
        return None
