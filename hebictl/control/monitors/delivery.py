"""Command delivery: the modules must be taking the commands the arm sends.

Why the echo: a module reports the command it holds (``position_command``, ``velocity_command``,
``effort_command``). A failed write, an echo that matches none of the last commands sent (they
are lost on the way; a delayed sample may show an older one, so a few are kept), or a NaN echo
where a value was sent (the command expired) means the modules are not being commanded, whatever
the arm computes. Echo checks start once the backend has echoed a sent command (a backend that
never echoes is not judged by it); failed writes count from the start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Command, Feedback

__all__ = ["CommandDeliveryMonitor", "EchoCheck"]

#: commands kept for comparing with the echo (delayed feedback shows older ones)
RING = 16


class EchoCheck:
    """The last commands sent to a group and the bad cycles in a row (shared with :mod:`.mirror`)."""

    def __init__(self, n: int, tol: float) -> None:
        self.ring = np.full((RING, 3, n), np.nan)
        self.count = 0
        self.head = -1
        self.tol = float(tol)
        self.echo_seen = False
        self.bad = 0             # bad observations in a row (failed writes, wrong echoes)
        self.why = ""
        self.write_failed = False

    def sent(self, cmd: Command, ok: bool) -> None:
        self.head = (self.head + 1) % RING
        row = self.ring[self.head]
        row[0], row[1], row[2] = cmd.position, cmd.velocity, cmd.effort
        self.count = min(self.count + 1, RING)
        self.write_failed = not ok
        if not ok:
            self.bad += 1
            self.why = "the write failed"

    def echoed(self, fb: Feedback) -> None:
        if self.count == 0:
            return
        status = kernels.echo_status(fb.position_command, fb.velocity_command, fb.effort_command, self.ring,
                                     self.count, self.head, self.tol)
        if status == 0:
            self.echo_seen = True
            if not self.write_failed:
                self.bad = 0
            return
        if not self.echo_seen:
            return
        self.bad += 1
        self.why = "the echo is NaN (no command held)" if status == 2 else "the echo differs from every command sent"


class CommandDeliveryMonitor(Monitor):
    """``command_lost``: more than ``tolerated_failures`` bad cycles in a row (failed write, or an
    echo matching none of the commands sent within ``echo_tolerance``). Reaction (default
    ``stop``): a latched stop that keeps sending the hold, so the state says ``stopped``, never
    ``hold``, while the modules are not commanded; ``arm.commands_delivered`` says so too."""

    kind = EventKind.COMMAND_LOST

    def __init__(self, settings: dict[str, Any], n: int) -> None:
        super().__init__(settings)
        self.check = EchoCheck(n, settings["echo_tolerance"])
        self.lost = False
        self.since: float | None = None

    @property
    def delivered(self) -> bool:
        return not self.lost

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        self.check.echoed(fb)
        return self._judge(arm, now)

    def after_send(self, arm: Any, ok: bool, cmd: Command) -> Finding | None:
        self.check.sent(cmd, ok)
        return self._judge(arm, arm.clock.now())

    def _judge(self, arm: Any, now: float) -> Finding | None:
        c = self.check
        if c.bad <= self.settings["tolerated_failures"]:
            if c.bad == 0:
                self.lost = False
                self.since = None
            return None
        if self.since is None:
            self.since = now
        if self.lost and arm.state is ArmState.STOPPED:
            return None  # reported; re-reported if the arm leaves the stop while still not commanded
        self.lost = True
        return self.finding(f"commands are not reaching the modules: {c.why} ({c.bad} bad writes or echoes in a row)",
                            cycles=c.bad, cause=c.why)
