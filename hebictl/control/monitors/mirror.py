"""Double shoulder: the mirror module (``DoubledJointMirror``) must take its commands too.

Why its own monitor: the mirror module carries half of the shoulder's load; if it stops taking
commands the other module is overloaded and the shoulder sags, while the arm's own modules all
answer. The mirror's writes (which :class:`~hebictl.control.plugins.DoubledJointMirror` never
lets raise) and its command echo are checked like the arm's (:class:`.delivery.EchoCheck`); its
measured effort is the joint's other half for the momentum observer.

Why its efforts are kept with their timestamps: the mirror is a group of its own, read beside the
arm's, and the two need not arrive equally late. The observer adds the mirror's effort to the
arm module's *taken at the same moment* (:meth:`MirrorMonitor.effort_at`): on the sim, with the
arm's feedback 30 ms late and the mirror's on time, the sum of the arm's old effort and the
mirror's new one read a braking shoulder as a 3.4 N·m push.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.delivery import RECOVERED, EchoCheck
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.errors import HardwareError
from hebictl.hardware.base import Command, Feedback

__all__ = ["HISTORY", "MirrorMonitor"]

#: mirror samples kept for matching the arm's: 64 periods (320 ms at 200 Hz) of feedback delay
HISTORY = 64


class MirrorMonitor(Monitor):
    """``mirror_lost``: more than ``tolerated_failures`` bad writes or echoes of the mirror in a row."""

    kind = EventKind.MIRROR_LOST

    def __init__(self, settings: dict[str, Any], plugin: Any) -> None:
        super().__init__(settings)
        self.plugin = plugin
        self.check = EchoCheck(1, settings["echo_tolerance"])
        self.fb = Feedback.empty(1)
        self.lost = False
        self.joint_effort = math.nan  # [N·m] the mirror's effort on its joint, arm sign
        self.times = np.full(HISTORY, np.nan)    # [s] the mirror's last sample times (its own stamps)
        self.efforts = np.full(HISTORY, np.nan)  # [N·m] and its efforts then, arm sign
        self.head = 0

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        p = self.plugin
        if p.backend is None:
            return None
        try:
            fresh = p.backend.read(self.fb, 0.0)
        except HardwareError as exc:
            self.joint_effort = math.nan
            self.check.bad += 1
            self.check.why = f"its feedback failed: {exc}"
            return self._judge(arm)
        if fresh:
            self.joint_effort = p.sign * float(self.fb.effort[0])
            self.head = (self.head + 1) % HISTORY
            self.times[self.head] = float(self.fb.time[0])
            self.efforts[self.head] = self.joint_effort
            self.check.echoed(self.fb)
        return self._judge(arm)

    def effort_at(self, t: float, tolerance: float) -> float:
        """[N·m] the mirror's effort in its sample nearest to ``t`` [s, the samples' clock], NaN if
        none is within ``tolerance`` [s] (its samples are older or newer than the arm's)."""
        d = np.abs(self.times - t)
        if not np.any(d <= tolerance):  # (NaN entries: never sampled)
            return math.nan
        return float(self.efforts[int(np.nanargmin(d))])

    def before_send(self) -> None:
        self.check.mark(self.plugin.command)

    def after_send(self, arm: Any, ok: bool, cmd: Command) -> Finding | None:
        p = self.plugin
        self.check.sent(p.command, p.last_send_ok)
        self.check.unmark(p.command)
        if not p.last_send_ok and p.last_error:
            self.check.why = p.last_error
        return self._judge(arm)

    def _judge(self, arm: Any) -> Finding | None:
        c = self.check
        if c.bad <= self.settings["tolerated_failures"]:
            if c.good >= RECOVERED:
                self.lost = False
            return None
        if self.lost:
            return None
        self.lost = True
        return self.finding(f"double shoulder: mirror module {self.plugin.module!r} is not taking its commands: "
                            f"{c.why} ({c.bad} bad writes or echoes in a row)", cycles=c.bad, cause=c.why)
