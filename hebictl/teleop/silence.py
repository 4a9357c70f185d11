"""The silence rule both MQTT bridges are held to, judged by the arm thread on the arm's clock.

A bridge that is alive but wedged (a stopped or hung bridge process; a bridge thread whose asyncio
loop is blocked, e.g. by a handler stuck in a call) delivers nothing, not even an e-stop, and ending
nothing either it would never be noticed as a lost broker is. So every bridge reports every
:data:`REPORT_PERIOD_S` from its start (the bridge process: its counters over the link; the bridge
thread: a heartbeat task on its event loop), and :class:`LinkWatch`, read by the arm thread at the
start of every cycle, judges: once heard, :data:`SILENCE_LIMIT_S` of the arm's clock without a
report is a lost link (``teleop_link_lost``, naming the bridge): the arm brakes and holds, and the
bridge's ``run()`` ends with a :class:`~hebictl.errors.TeleopError` (the process is killed; the
thread's loop raises it as soon as it runs again). Before the first report (the bridge starting) and
once the bridge was asked to stop (:meth:`LinkWatch.expect_end`), nothing is judged.

:class:`~hebictl.teleop.bridge_port.BridgePort` (the bridge process's link) is a :class:`LinkWatch`
whose reports are the messages it reads; :class:`ThreadWatch` is the bridge thread's, whose reports
are :meth:`ThreadWatch.beat` calls.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hebictl.teleop.runner import ArmRunner

log = logging.getLogger(__name__)

#: [s] how often a bridge reports from its start (the process: its counters; the thread: a heartbeat)
REPORT_PERIOD_S = 0.2
#: [s] on the arm's clock: this long without a report, once the bridge has been heard, is a bridge that
#: is alive but wedged (stopped, hung, its loop blocked): no e-stop could reach the arm, which brakes and
#: holds as for a lost broker. Ten reports: a starved but running bridge is not a hold (under the 4k msg/s
#: flood beside the standard load the bridge process dropped no link message, benchmarks/teleop.py)
SILENCE_LIMIT_S = 2.0


class LinkWatch:
    """The arm thread's watch over one bridge: the silence rule and the lost link.

    ``runner``: the arm's :class:`~hebictl.teleop.runner.ArmRunner` (its clock, its ``link_lost``);
    ``name``: the bridge as the lost-link detail names it."""

    def __init__(self, runner: ArmRunner, name: str, *, limit: float = SILENCE_LIMIT_S) -> None:
        self.runner = runner
        self.name = name
        self.limit = limit
        #: set once the link is lost; the detail in :attr:`lost_detail`
        self.lost = threading.Event()
        self.lost_detail = ""
        #: set by :meth:`expect_end`: the bridge was asked to stop, its end or silence is no lost link
        self.ending = False
        #: the link was lost because the bridge, alive, fell silent (:attr:`limit`)
        self.wedged = False
        self._losing = threading.Lock()
        self._heard: float | None = None   # when the bridge last reported (arm's clock); None: not yet

    def expect_end(self) -> None:
        """The bridge was asked to stop (thread-safe): its end is then no lost link."""
        self.ending = True

    def judge_silence(self, heard: bool) -> None:
        """Once per cycle (arm thread): ``heard``, whether the bridge reported since the last call. A
        bridge heard before and silent for longer than the limit is wedged: a lost link."""
        now = self.runner.clock.now()
        if heard or self._heard is None:
            self._heard = now if heard else None
            return
        silent = now - self._heard
        if silent > self.limit and not self.ending and not self.lost.is_set():
            self.wedged = True
            self.lose(f"{self.name} {self.silence_detail(silent)}")

    def silence_detail(self, silent: float) -> str:
        """What the lost-link detail says after the name, ``silent`` [s] into the silence."""
        return f"sent nothing for {silent:.1f} s (it reports every {REPORT_PERIOD_S:g} s): it is stopped or hung"

    def lose(self, detail: str, arrival: int | None = None) -> bool:
        """The link is lost (thread-safe, once: False if it was already): the arm brakes and holds at
        its next cycle (``arrival``: the runner's order of it, see :meth:`ArmRunner.link_lost`)."""
        with self._losing:
            if self.lost.is_set():
                return False
            self.lost_detail = detail
            self.lost.set()
        log.error("%s: the arm brakes and holds", detail)
        self.runner.link_lost(detail, arrival=arrival)
        return True


class ThreadWatch(LinkWatch):
    """The bridge thread's (``--bridge thread``) :class:`LinkWatch`, attached as ``runner.port``:
    the bridge's heartbeat task calls :meth:`beat` every :data:`REPORT_PERIOD_S` on its event loop
    (:meth:`~hebictl.teleop.bridge.MqttBridge.run`), the arm thread's :meth:`poll` sees whether the
    count moved. Nothing else passes here: that bridge calls the runner's thread-safe API itself."""

    def __init__(self, runner: ArmRunner, name: str = "the MQTT bridge thread", *,
                 limit: float = SILENCE_LIMIT_S) -> None:
        super().__init__(runner, name, limit=limit)
        self.beats = 0   # written by the bridge's loop only; an int's increment is atomic under the GIL
        self._seen = 0

    def beat(self, thread: str | None = None) -> None:
        """The bridge's loop ran (its thread; ``thread``: that thread's name, kept for the detail)."""
        if thread is not None and self.beats == 0:
            self.name = f"the MQTT bridge thread ({thread})"
        self.beats += 1

    def silence_detail(self, silent: float) -> str:
        return (f"did not run for {silent:.1f} s (its event loop beats every {REPORT_PERIOD_S:g} s): it is "
                "blocked or hung")

    def poll(self) -> None:
        """Cycle start (arm thread): judge the heartbeat; never raises, never waits."""
        if self.lost.is_set():
            return
        beats = self.beats
        heard = beats != self._seen
        self._seen = beats
        self.judge_silence(heard)

    def flush(self) -> None:
        """Cycle end: nothing to send (the thread bridge reads the snapshot and gets acks itself)."""
