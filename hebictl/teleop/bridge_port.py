"""The arm thread's end of the link to the bridge process (``hebictl teleop --bridge process``).

With the bridge in a process of its own, the control process has no other busy Python thread: the
arm thread itself reads what the bridge sent, inside its cycle (:meth:`BridgePort.poll`, called by
:meth:`~hebictl.teleop.runner.ArmRunner.step` before anything else), without waiting and at most a
bounded number of messages per cycle, the priority channel first (e-stop, lost link, fleet lease),
then the command channel; and it writes the snapshot (at the state rate, at once when the mode, the
e-stop or the arm's state changed, and always before an ack, so that a client that reads the status
after an ack sees its effect) and the cycle's acks, dropping and counting what does not fit
(:class:`~hebictl.teleop.link.Channel`).

The bridge process ending for any reason (a crash, SIGKILL, a broken pipe) is a lost link: the arm
brakes and holds (``teleop_link_lost``, the detail names the bridge process) as for a lost broker,
and nothing more is read. So is the bridge process alive but silent (stopped, hung): the silence rule
of :mod:`~hebictl.teleop.silence`, shared with the bridge thread (a :class:`BridgePort` is its
:class:`~hebictl.teleop.silence.LinkWatch`; every message read is a report).

Order: the bridge numbers what it hands over (one counter for both channels), and the runner queues
each command and e-stop with that number, so a release read after an engage on the other channel
still counts as sent before it (:meth:`~hebictl.teleop.runner.ArmRunner.submit`'s ``arrival``).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hebictl.teleop.link import Channel
from hebictl.teleop.silence import SILENCE_LIMIT_S, LinkWatch

if TYPE_CHECKING:
    from hebictl.teleop.messages import Ack
    from hebictl.teleop.runner import ArmRunner

log = logging.getLogger(__name__)

#: messages read per cycle on the priority and on the command channel (the rest wait a cycle)
PRIORITY_PER_CYCLE = 16
COMMANDS_PER_CYCLE = 32


class BridgePort(LinkWatch):
    """Attach with ``runner.port = BridgePort(runner, ...)`` before the runner starts.

    ``priority`` and ``commands`` are this process's ends of the two socket pairs; ``state_rate_hz``
    [Hz] of snapshots; ``shared_clock``: the bridge's ``received`` stamps are on the arm's clock (a
    :class:`~hebictl.hardware.clock.MonotonicClock`: ``time.perf_counter`` is system-wide on Linux);
    otherwise (a paced or simulated clock) a jog sample or lease message counts as received when this
    thread reads it. ``name`` goes into the lost-link detail (the bridge process's pid)."""

    def __init__(self, runner: ArmRunner, priority: Channel, commands: Channel, *, state_rate_hz: float = 50.0,
                 shared_clock: bool = False, name: str = "the MQTT bridge process",
                 silence_limit: float = SILENCE_LIMIT_S) -> None:
        super().__init__(runner, name, limit=silence_limit)
        self.priority = priority
        self.commands = commands
        self.state_period = 1.0 / state_rate_hz
        self.shared_clock = shared_clock
        #: set while the bridge reports a broker connection (any thread may wait on it)
        self.connected = threading.Event()
        #: the bridge's counters as it last reported them (every 0.2 s, and as it stops)
        self.bridge_stats: dict[str, int] = {}
        #: whether the broker runs the account plugin, as the bridge last reported (None: not known yet)
        self.account_tags: bool | None = None
        self._acks: list[Ack] = []
        self._next_snapshot = -math.inf
        self._key: tuple[Any, ...] | None = None
        self._last_arrival = 0
        self._handlers: dict[str, Callable[..., None]] = {
            "estop": self._estop, "link_lost": self._link_lost, "fleet": self._fleet, "submit": self._submit,
            "jog": self._jog, "note_error": self._note_error, "record_ack": self._record_ack,
            "connected": self._connected, "bridge_stats": self._bridge_stats, "input": self._input,
            "input_dropped": self._input_dropped}
        runner.on_result = self._acks.append

    @property
    def dropped(self) -> int:
        """Messages to the bridge dropped because its socket was full."""
        return self.commands.dropped

    # ------------------------------------------------------------------ inbound (cycle start)
    def poll(self) -> None:
        """Read what the bridge sent (bounded, priority first); never raises, never waits."""
        if self.lost.is_set():
            return
        heard = False
        try:
            for message in self.priority.receive(PRIORITY_PER_CYCLE):
                heard = True
                self._apply(message)
            for message in self.commands.receive(COMMANDS_PER_CYCLE):
                heard = True
                self._apply(message)
        except Exception as exc:  # an unreadable message: the link is not to be trusted any more
            log.exception("could not read the bridge process's messages")
            self.lose(f"{self.name} sent an unreadable message ({type(exc).__name__}: {exc})")
            return
        if self.priority.closed or self.commands.closed:
            if self.ending:
                self.lost.set()
                log.info("%s ended as asked", self.name)
            else:
                self.lose(f"{self.name} ended")
            return
        self.judge_silence(heard)  # heard nothing for SILENCE_LIMIT_S: wedged (hebictl.teleop.silence)

    def _apply(self, message: tuple[Any, ...]) -> None:
        handler = self._handlers.get(message[0])
        if handler is None:
            log.warning("ignored a message of unknown kind %r from the bridge process", message[0])
            return
        handler(*message[1:])

    def lose(self, detail: str, arrival: int | None = None) -> bool:
        """The link is lost (thread-safe, once): the arm brakes and holds at its next cycle. The arm
        thread calls it from :meth:`poll`; the parent's event loop too when it sees the child exit, so
        the lost link is queued before the shutdown that follows it, whichever notices first. Ordered
        after everything the bridge handed over so far."""
        if not super().lose(detail, self._last_arrival + 1 if arrival is None else arrival):
            return False
        self.connected.clear()
        return True

    def _received(self, stamp: float | None) -> float:
        return stamp if self.shared_clock and stamp is not None else self.runner.clock.now()

    def _arrival(self, arrival: int) -> int:
        self._last_arrival = max(self._last_arrival, arrival)
        return arrival

    def _estop(self, arrival: int, command: Any, detail: str) -> None:
        self.runner.engage_estop(command, detail, arrival=self._arrival(arrival))

    def _link_lost(self, arrival: int, detail: str) -> None:
        self.runner.link_lost(detail, arrival=self._arrival(arrival))

    def _fleet(self, topic: str, payload: bytes | str, retained: bool, received: float | None) -> None:
        fleet = self.runner.fleet
        if fleet is not None:
            fleet.on_message(topic, payload, self._received(received), retained=retained)

    def _submit(self, arrival: int, topic: str, command: Any) -> None:
        self.runner.submit(topic, command, arrival=self._arrival(arrival))

    def _jog(self, command: Any, received: float | None) -> None:
        self.runner.offer_jog(command, self._received(received))

    def _input(self, sample: Any, received: float | None) -> None:
        app = self.runner.app
        if app is not None:
            app.take(sample, self._received(received))

    def _input_dropped(self, reason: str, detail: str) -> None:
        app = self.runner.app
        if app is not None:
            app.refuse(reason, detail)

    def _note_error(self, reason: str, detail: str) -> None:
        self.runner.note_error(reason, detail)

    def _record_ack(self, ack: Ack) -> None:
        recorder = self.runner.recorder
        if recorder is not None:
            recorder.ack(ack)

    def _connected(self, up: bool, account_tags: bool | None) -> None:
        self.account_tags = account_tags
        if up:
            self.connected.set()
        else:
            self.connected.clear()

    def _bridge_stats(self, stats: dict[str, int]) -> None:
        self.bridge_stats = stats

    # ------------------------------------------------------------------ outbound (cycle end)
    def flush(self) -> None:
        """Send the snapshot when due (and before any ack), then this cycle's acks; never waits."""
        acks = self._acks
        if self.lost.is_set():
            acks.clear()
            return
        try:
            snap = self.runner.snapshot
            key = (snap.state, snap.mode, snap.estop, snap.arm_mode, snap.fleet)
            now = self.runner.clock.now()
            if acks or key != self._key or now >= self._next_snapshot:
                fleet = self.runner.fleet
                if self.commands.send(("snapshot", snap, None if fleet is None else fleet.status(now))):
                    self._key = key
                    self._next_snapshot = now + self.state_period
            for ack in acks:
                self.commands.send(("ack", ack))
        except Exception:  # never let the link take the arm thread down
            log.exception("could not send to the bridge process")
        finally:
            acks.clear()
