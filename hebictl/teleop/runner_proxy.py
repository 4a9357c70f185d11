"""The arm as the bridge process sees it: :class:`RunnerProxy` has the surface of
:class:`~hebictl.teleop.runner.ArmRunner` that :class:`~hebictl.teleop.bridge.MqttBridge` uses, and
hands everything over the link (:mod:`~hebictl.teleop.link`) to the arm process.

What the bridge reads of the arm comes from there too: the newest snapshot (with the fleet lease's
status), sent by the arm thread at the state rate and at every change of mode, e-stop or state; the
acks of what it answered. The bridge's checks before anything is queued (limits, reach at rated
speed, IK and collision) need only the model: :class:`ArmModel` (the model, its limits, its collision
world), rebuilt in this process from what the arm process sent at start-up; no hardware is opened
here.

Order: one counter numbers every command, e-stop and link loss this process hands over (they travel
on two channels, :class:`~hebictl.teleop.bridge_port.BridgePort` queues them with their numbers).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hebictl.hardware.clock import MonotonicClock
from hebictl.teleop.link import Channel, encode

if TYPE_CHECKING:
    from hebictl.control.safety import Limits
    from hebictl.model.robot import RobotModel
    from hebictl.teleop.messages import Ack
    from hebictl.teleop.schema import EstopCommand, JogCommand, TeleopCommand
    from hebictl.teleop.snapshot import ArmSnapshot

log = logging.getLogger(__name__)


class Outbox:
    """Messages from the bridge's event loop to the arm process, in order: sent at once when the
    socket has room, else kept and sent as it drains (``loop.add_writer``); more than ``limit``
    kept are dropped and counted (:attr:`dropped`). Never waits."""

    def __init__(self, channel: Channel, limit: int) -> None:
        self.channel = channel
        self.limit = limit
        self.dropped = 0
        self._pending: deque[bytes] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def put(self, message: tuple[Any, ...]) -> None:
        data = encode(message)
        if not self._pending and self.channel.try_send(data):
            return
        if self.channel.closed or len(self._pending) >= self.limit or self._loop is None:
            self.dropped += 1
            return
        self._pending.append(data)
        if len(self._pending) == 1:
            self._loop.add_writer(self.channel.fileno(), self._drain)

    def _drain(self) -> None:
        pending = self._pending
        while pending and self.channel.try_send(pending[0]):
            pending.popleft()
        if self.channel.closed:
            self.dropped += len(pending)
            pending.clear()
        if not pending and self._loop is not None:
            self._loop.remove_writer(self.channel.fileno())


class ArmModel:
    """What the bridge reads of ``runner.arm``: the model and its limits (and ``dof``)."""

    def __init__(self, model: RobotModel, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self.dof = len(model.joint_names)


class FleetProxy:
    """The fleet lease as the bridge sees it: its messages go to the arm process (priority channel),
    its status is the one sent with the newest snapshot."""

    def __init__(self, priority: Outbox) -> None:
        self._priority = priority
        self.last_status: dict[str, Any] | None = None

    def on_message(self, topic: str, payload: bytes | str, now: float, *, retained: bool = False) -> None:
        self._priority.put(("fleet", topic, payload, retained, now))

    def status(self, now: float) -> dict[str, Any] | None:
        return self.last_status


class RecorderProxy:
    """The arm process's recorder as the bridge sees it: the refusals made here are recorded there."""

    def __init__(self, commands: Outbox) -> None:
        self._commands = commands

    def ack(self, ack: Ack) -> None:
        self._commands.put(("record_ack", ack))


class AppProxy:
    """The Mobile IO app (``hebictl teleop --app``) as the bridge sees it: ``cmd/input`` payloads that
    passed the bridge's command checks are validated here by the app's own check (``check``, from
    :meth:`~hebictl.teleop.runner.AppDriver.input_check`: the input schema, each sender's order),
    and the accepted sample or the drop goes to the arm process on the command channel (bounded,
    dropped and counted when full, as every message there), where the arm thread hands it to the app."""

    def __init__(self, check: Callable[[bytes | bytearray | str, float], tuple[Any, str, str]], commands: Outbox,
                 clock: MonotonicClock) -> None:
        self._check = check
        self._commands = commands
        self._clock = clock

    def offer(self, payload: bytes | bytearray | str) -> tuple[bool, str, str]:
        received = self._clock.now()
        sample, reason, detail = self._check(payload, received)
        if sample is None:
            self._commands.put(("input_dropped", reason, detail))
            return False, reason, detail
        self._commands.put(("input", sample, received))
        return True, "", ""


class RunnerProxy:
    """Stands in for the :class:`~hebictl.teleop.runner.ArmRunner` in the bridge process.

    ``snapshot``: the arm's state when the process started; ``fleet`` / ``recorder``: whether the
    arm process has a fleet lease / a recorder; ``max_goal_duration`` [s] as the runner's;
    ``app_check``: the Mobile IO app's input check (:class:`AppProxy`), None without an app."""

    def __init__(self, priority: Outbox, commands: Outbox, arm: ArmModel, snapshot: ArmSnapshot, *,
                 max_goal_duration: float, fleet: bool = False, recorder: bool = False,
                 app_check: Callable[[bytes | bytearray | str, float], tuple[Any, str, str]] | None = None) -> None:
        self.priority = priority
        self.commands = commands
        self.arm = arm
        self.snapshot = snapshot
        self.max_goal_duration = max_goal_duration
        # the arm's MonotonicClock (time.perf_counter, system-wide on Linux): a stamp taken here means
        # the same in the arm process (which reads its own clock instead when it runs on another one)
        self.clock = MonotonicClock()
        self.app = None if app_check is None else AppProxy(app_check, commands, self.clock)
        self.fleet = FleetProxy(priority) if fleet else None
        self.recorder = RecorderProxy(commands) if recorder else None
        self.on_result: Callable[[Ack], None] | None = None
        self._arrivals = itertools.count(1)

    # ------------------------------------------------------------------ what the bridge reads
    @property
    def mode(self) -> str:
        return self.snapshot.mode

    @property
    def estop_latched(self) -> bool:
        return self.snapshot.estop

    # ------------------------------------------------------------------ what the bridge hands over
    def submit(self, topic: str, command: TeleopCommand) -> None:
        self.commands.put(("submit", next(self._arrivals), topic, command))

    def offer_jog(self, command: JogCommand, received: float) -> None:
        self.commands.put(("jog", command, received))

    def engage_estop(self, command: EstopCommand | None, detail: str = "") -> None:
        self.priority.put(("estop", next(self._arrivals), command, detail))

    def link_lost(self, detail: str) -> None:
        self.priority.put(("link_lost", next(self._arrivals), detail))

    def note_error(self, reason: str, detail: str) -> None:
        self.commands.put(("note_error", reason, detail))

    def connected(self, up: bool, account_tags: bool | None) -> None:
        """Tell the arm process whether the bridge has a broker connection (and whether the broker
        runs the account plugin, as far as the bridge knows)."""
        self.commands.put(("connected", up, account_tags))

    def bridge_stats(self, stats: dict[str, int]) -> None:
        """Hand the bridge's counters (those of ``state/status``) to the arm process."""
        self.commands.put(("bridge_stats", stats))

    # ------------------------------------------------------------------ what the arm sent
    def receive(self, message: tuple[Any, ...]) -> None:
        """One message from the arm process: a snapshot (with the fleet status) or an ack."""
        if message[0] == "snapshot":
            self.snapshot = message[1]
            if self.fleet is not None:
                self.fleet.last_status = message[2]
        elif message[0] == "ack":
            callback = self.on_result
            if callback is not None:
                callback(message[1])
        else:
            log.warning("ignored a message of unknown kind %r from the arm process", message[0])
