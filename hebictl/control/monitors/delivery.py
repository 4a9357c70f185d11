"""Command delivery: the modules must be taking the commands the arm sends.

Why the echo: a module reports the command it holds (``position_command``, ``velocity_command``,
``effort_command``). A failed write, an echo that matches none of the last commands sent (they
are lost on the way; a delayed sample may show an older one, so a few are kept), or a NaN echo
where a value was sent (the command expired) means the modules are not being commanded, whatever
the arm computes. Echo checks start once the backend has echoed a sent command (a backend that
never echoes is not judged by it); failed writes count from the start. A sample no newer than the
last one judged (feedback that starts arriving later: the sim repeats the older moment) is not
judged: its echo would look stuck (13-16 spurious ``command_lost`` stops in 60 s of a busy-PC run
with 5-50 ms feedback delays).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Command, Feedback

__all__ = ["CommandDeliveryMonitor", "EchoCheck"]

#: commands kept for comparing with the echo (delayed feedback shows older ones)
RING = 64
#: good echoes in a row after which a lost episode is over (a new loss is a new event)
RECOVERED = 10


class EchoCheck:
    """The last commands sent to a group and the bad observations in a row (shared with :mod:`.mirror`).

    Why a mark: a held arm is sent the same command every cycle, so an echo stuck at an old command
    would look delivered until the command lifetime ran out. :meth:`mark` adds a small offset to the
    effort of the joints whose position is commanded when the command repeats the previous one,
    ``MARKS`` distinct values of alternating sign (at most ±0.0013 N·m, ``MARK`` apart in size; the
    alternation leaves no net torque and the position loop holds against the rest), so consecutive
    commands always differ and an echo that stops advancing is seen within a few cycles. Commands
    that change anyway, and effort-only commands (gravity compensation, 'damp': a mark there would
    be an uncompensated torque, 4 mm of drift in 2 s on the sim), are sent as computed; for those a
    stuck echo shows when the command lifetime runs out (the echo turns NaN). Marking the velocity
    instead moved the mock's held position by 1e-7 rad, which exact tests of a hold see."""

    #: [N·m] step between effort marks, and how many distinct marks (more than RING commands kept)
    MARK = 2e-5
    MARKS = 2 * RING

    def __init__(self, n: int, tol: float) -> None:
        self.ring = np.full((RING, 3, n), np.nan)
        self.count = 0
        self.head = -1
        self.sent_total = 0
        self.matched = -1            # sent_total index of the command the echo last showed
        self.tol_abs = np.array([tol, tol, 0.25 * self.MARK])  # rad, rad/s, N·m
        self.tol_rel = np.array([1e-6, 1e-6, 1e-6])
        self.echo_seen = False
        self.bad = 0                 # bad observations in a row (failed writes, wrong or stuck echoes)
        self.good = 0                # good echoes in a row since the last bad observation
        self.why = ""
        self.write_failed = False
        self._k = 0
        self._prev = np.full((3, n), np.nan)  # the last command before its mark
        self._marked = False

    def mark(self, cmd: Command) -> None:
        k = self._k
        self._k = kernels.mark_repeat(cmd.position, cmd.velocity, cmd.effort, self._prev, k, self.MARK,
                                      self.MARKS, self.tol_abs, self.tol_rel)
        self._marked = self._k != k

    def unmark(self, cmd: Command) -> None:
        """Take the mark off the arm's pending command again (only the wire carries it)."""
        if self._marked:
            np.copyto(cmd.effort, self._prev[2])
            self._marked = False

    def sent(self, cmd: Command, ok: bool) -> None:
        self.head = (self.head + 1) % RING
        kernels.store(self.ring[self.head], cmd.position, cmd.velocity, cmd.effort)
        self.count = min(self.count + 1, RING)
        self.sent_total += 1
        self.write_failed = not ok
        if not ok:
            self.bad += 1
            self.good = 0
            self.why = "the write failed"

    def echoed(self, fb: Feedback) -> None:
        if self.count == 0:
            return
        age = kernels.echo_status(fb.position_command, fb.velocity_command, fb.effort_command, self.ring,
                                  self.count, self.head, self.tol_abs, self.tol_rel)
        if age >= 0:
            matched = self.sent_total - age
            # stuck: the echo shows the same command as at the previous sample although newer ones
            # were sent (a delayed echo jumps back once, then advances again)
            stuck = self.echo_seen and matched == self.matched and age > 0
            self.matched = matched
            self.echo_seen = True
            if not stuck:
                if not self.write_failed:
                    self.bad = 0
                    self.good += 1
                return
            self.bad += 1
            self.good = 0
            self.why = f"the echo stays at a command sent {age} cycles ago"
            return
        if not self.echo_seen:
            return
        self.bad += 1
        self.good = 0
        self.why = "the echo is NaN (no command held)" if age == -2 else "the echo differs from every command sent"


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
        self.last_sample: float | None = None  # [s] the last judged sample's own time

    def before_send(self, cmd: Command) -> None:
        """Mark the command about to be written (see :class:`EchoCheck`)."""
        self.check.mark(cmd)

    @property
    def delivered(self) -> bool:
        return not self.lost

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        t = float(fb.time[0])
        if math.isfinite(t):
            if self.last_sample is not None and t <= self.last_sample:
                # no newer than the last sample judged (feedback arriving later than before): it shows an
                # older command than that one did, which is neither stuck nor lost
                return self._judge(arm, now)
            self.last_sample = t
        self.check.echoed(fb)
        return self._judge(arm, now)

    def after_send(self, arm: Any, ok: bool, cmd: Command) -> Finding | None:
        self.check.sent(cmd, ok)
        self.check.unmark(cmd)
        return self._judge(arm, arm.clock.now())

    def _judge(self, arm: Any, now: float) -> Finding | None:
        c = self.check
        if c.bad <= self.settings["tolerated_failures"]:
            if c.good >= RECOVERED:
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
