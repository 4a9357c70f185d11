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
and nothing more is read.

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

if TYPE_CHECKING:
    from hebictl.teleop.messages import Ack
    from hebictl.teleop.runner import ArmRunner

log = logging.getLogger(__name__)

#: messages read per cycle on the priority and on the command channel (the rest wait a cycle)
PRIORITY_PER_CYCLE = 16
COMMANDS_PER_CYCLE = 32
#: [s] on the arm's clock: the bridge reports its counters every 0.2 s from its start, so this long
#: without any message from it, once it has been heard, is a bridge that is alive but wedged (stopped,
#: hung): no e-stop could reach the arm, which brakes and holds as for a lost broker. Ten reports: a
#: starved but running child is not a hold (under the 4k msg/s flood beside the standard load it
#: dropped no link message, benchmarks/teleop.py)
SILENCE_LIMIT_S = 2.0


class BridgePort:
    """Attach with ``runner.port = BridgePort(runner, ...)`` before the runner starts.

    ``priority`` and ``commands`` are this process's ends of the two socket pairs; ``state_rate_hz``
    [Hz] of snapshots; ``shared_clock``: the bridge's ``received`` stamps are on the arm's clock (a
    :class:`~hebictl.hardware.clock.MonotonicClock`: ``time.perf_counter`` is system-wide on Linux);
    otherwise (a paced or simulated clock) a jog sample or lease message counts as received when this
    thread reads it. ``name`` goes into the lost-link detail (the bridge process's pid)."""

    def __init__(self, runner: ArmRunner, priority: Channel, commands: Channel, *, state_rate_hz: float = 50.0,
                 shared_clock: bool = False, name: str = "the MQTT bridge process") -> None:
        self.runner = runner
        self.priority = priority
        self.commands = commands
        self.state_period = 1.0 / state_rate_hz
        self.shared_clock = shared_clock
        self.name = name
        #: set while the bridge reports a broker connection (any thread may wait on it)
        self.connected = threading.Event()
        #: set once the link is lost (the bridge process ended); the detail in :attr:`lost_detail`
        self.lost = threading.Event()
        self._losing = threading.Lock()
        self.lost_detail = ""
        #: set by :meth:`expect_end`: the bridge was asked to stop, its end is no lost link
        self.ending = False
        #: the link was lost because the bridge, alive, fell silent (:data:`SILENCE_LIMIT_S`)
        self.wedged = False
        #: the bridge's counters as it last reported them (every 0.2 s, and as it stops)
        self.bridge_stats: dict[str, int] = {}
        #: whether the broker runs the account plugin, as the bridge last reported (None: not known yet)
        self.account_tags: bool | None = None
        self._acks: list[Ack] = []
        self._heard: float | None = None   # when the bridge last sent anything (arm's clock); None: not yet
        self._next_snapshot = -math.inf
        self._key: tuple[Any, ...] | None = None
        self._last_arrival = 0
        self._handlers: dict[str, Callable[..., None]] = {
            "estop": self._estop, "link_lost": self._link_lost, "fleet": self._fleet, "submit": self._submit,
            "jog": self._jog, "note_error": self._note_error, "record_ack": self._record_ack,
            "connected": self._connected, "bridge_stats": self._bridge_stats}
        runner.on_result = self._acks.append

    @property
    def dropped(self) -> int:
        """Messages to the bridge dropped because its socket was full."""
        return self.commands.dropped

    def expect_end(self) -> None:
        """The bridge was asked to stop (thread-safe): its end is then no lost link."""
        self.ending = True

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
        self._judge_silence(heard)

    def _judge_silence(self, heard: bool) -> None:
        """A bridge heard before and silent for SILENCE_LIMIT_S is wedged: a lost link."""
        now = self.runner.clock.now()
        if heard or self._heard is None:
            self._heard = now if heard else None
            return
        silent = now - self._heard
        if silent > SILENCE_LIMIT_S and not self.ending:
            self.wedged = True
            self.lose(f"{self.name} sent nothing for {silent:.1f} s (it reports every 0.2 s): it is stopped "
                       "or hung")

    def _apply(self, message: tuple[Any, ...]) -> None:
        handler = self._handlers.get(message[0])
        if handler is None:
            log.warning("ignored a message of unknown kind %r from the bridge process", message[0])
            return
        handler(*message[1:])

    def lose(self, detail: str) -> None:
        """The link is lost (thread-safe, once): the arm brakes and holds at its next cycle. The arm
        thread calls it from :meth:`poll`; the parent's event loop too when it sees the child exit, so
        the lost link is queued before the shutdown that follows it, whichever notices first."""
        with self._losing:
            if self.lost.is_set():
                return
            self.lost_detail = detail
            self.lost.set()
        self.connected.clear()
        log.error("%s: the arm brakes and holds", detail)
        self.runner.link_lost(detail, arrival=self._last_arrival + 1)

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
