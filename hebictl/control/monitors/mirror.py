"""Double shoulder: the mirror module (``DoubledJointMirror``) must take its commands too.

Why its own monitor: the mirror module carries half of the shoulder's load; if it stops taking
commands the other module is overloaded and the shoulder sags, while the arm's own modules all
answer. The mirror's writes (which :class:`~hebictl.control.plugins.DoubledJointMirror` never
lets raise) and its command echo are checked like the arm's (:class:`.delivery.EchoCheck`); its
measured effort is the joint's other half for the momentum observer.
"""

from __future__ import annotations

import math
from typing import Any

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.delivery import RECOVERED, EchoCheck
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.errors import HardwareError
from hebictl.hardware.base import Command, Feedback

__all__ = ["MirrorMonitor"]


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
            self.check.echoed(self.fb)
        return self._judge(arm)

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
