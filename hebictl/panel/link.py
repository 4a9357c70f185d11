"""The panel's MQTT side: one client (MQTT v5) that watches every arm on the broker and sends the
operator's commands, under the panel's own broker account and ACL.

It subscribes to ``hebictl/v1/+/state/#`` and keeps, per arm, the retained status and description
and the latest joints and pose (:class:`ArmView`). Commands get the protocol's envelope (``seq``,
``ts``, ``client``); ``seq`` counts per arm from a start no one can guess (the time in µs less
32 random bits from :mod:`secrets`: never ahead of the arm's clock, which the arm refuses), so a
broker account that reads the acks of one arm learns nothing about the next command to another.
Write access is *detected*, never assumed: MQTT 3.1.1
brokers drop a publish the ACL denies without a word, but MQTT v5 answers a QoS-1 publish with a
PUBACK reason code, and mosquitto answers ``Not authorized`` (0x87). The probe publishes an empty
QoS-1 message on ``hebictl/v1/<arm>/cmd`` itself: covered by the ``cmd/#`` grant of the ACL, yet
not a command topic, so the arm's bridge ignores it (no ack, no error, no statistics). Every QoS-1
command's PUBACK is checked the same way, so an ACL that changes later turns the arm read-only too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from hebictl.control.safety import Limits
from hebictl.errors import ConfigError, StateRejected
from hebictl.panel.events import status_events
from hebictl.tasks import cancel_and_wait
from hebictl.teleop import state_schema
from hebictl.teleop.connection import BrokerSettings
from hebictl.teleop.schema import CommandSchema
from hebictl.teleop.schema import envelope as command_envelope
from hebictl.teleop.topics import COMMAND_QOS, PREFIX, Topics, check_arm_id

log = logging.getLogger(__name__)

#: (arm_id, kind, body) - kind is a state topic name; body the validated JSON object
Listener = Callable[[str, str, dict[str, Any]], None]
#: what sends a refused command again, through the checks of the session that sent it first
#: (:meth:`hebictl.panel.session.Session.resend`)
Resend = Callable[[str, str, dict[str, Any]], Awaitable[None]]

INBOUND_BYTES = 32 * 1024 * 1024      # payload bytes waiting to be handled, all topics together
INBOUND_DESCRIPTION_BYTES = 12 * 1024 * 1024   # ... of which descriptions (the first dropped in a flood)
INBOUND_MESSAGES = 2000               # messages waiting to be handled (one per state topic, and the acks)
#: ... of which the arms' 50 Hz joints and poses (one per arm and topic waits: many arms)
INBOUND_FAST_MESSAGES = 1500
MAX_PACKET = state_schema.MAX_BYTES["description"] + 4096   # MQTT v5 Maximum Packet Size: the broker sends no larger
RESEND_WITHIN = 5.0                   # s: a command refused as out of order later than this is not sent again
DESCRIPTION_PARSE_EVERY = 2.0         # s: at most one new (never seen) description parsed per arm in this time
#: the ack reason of an arm refusing a mode while another arm of its group holds them all (hebictl.teleop.group,
#: not imported here: it pulls in the control loop)
GROUP_HOLD = "group_hold"

def _arm_id_ok(arm_id: str) -> bool:
    try:
        check_arm_id(arm_id)
    except ConfigError:
        return False
    return True


PROBE_ATTEMPTS = 4   # write probes without an answer before the panel is read-only (PanelLink.probe)
STALE_AFTER = 1.0     # s without a valid joints/status message: the arm is shown as stale
INVALID_SHOWN = 5.0   # s an arm stays marked "data invalid" after a dropped message


@dataclass
class ArmView:
    """What the panel knows of one arm, from its state topics, each message validated by
    :mod:`hebictl.teleop.state_schema` first (a message that fails is dropped and counted in
    ``invalid``; the arm is shown as "data invalid" for :data:`INVALID_SHOWN` s).

    The description is used only once it matches the status's ``description_sha256`` (the arm's
    hash of the exact retained payload): a description anyone else published in its place is
    kept aside in ``description_refused`` and never steers Home or the limits. Arms that publish
    no hash (older bridges) get their description unverified (``description_verified`` False)."""

    arm_id: str
    status: dict[str, Any] | None = None
    description: dict[str, Any] | None = None
    joints: dict[str, Any] | None = None
    ee_pose: dict[str, Any] | None = None
    writable: bool | None = None          # None: not probed yet
    events: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=20))
    invalid: int = 0                      # messages dropped by the schema
    group_dropped: int = 0                # statuses whose ``group`` failed its check (dropped, the status kept)
    last_invalid: dict[str, Any] | None = None   # topic, reason, detail, at (monotonic s)
    last_fresh: float | None = None       # monotonic s of the last valid joints/status
    description_verified: bool = False
    description_refused: str | None = None        # why the latest description was not used
    _candidates: collections.OrderedDict[str, dict[str, Any]] = field(default_factory=collections.OrderedDict)
    _latest_sha: str | None = None         # sha256 of the latest description payload received
    _parsed_at: float = -math.inf          # monotonic s of the last new description parsed
    estop_seen_at: float = -math.inf       # monotonic s of the latest status with the e-stop engaged
    #: the latest command this arm refused because another arm of its group holds them all (anyone's:
    #: every client's acks come on the arm's state/ack), while the group is held: topic, detail, ts
    group_refusal: dict[str, Any] | None = None

    def held_description(self, sha256: str) -> dict[str, Any] | None:
        return self._candidates.get(sha256)

    def description_wanted(self, sha256: str, now: float) -> bool:
        """Whether a description payload with this hash is worth parsing, decided *before* it is
        parsed (a 4 MiB description costs tens of ms and a hundred MB to parse): one already held
        is only noted again; one that is not the hash the arm's status announces is refused
        unparsed; a new one at most once every :data:`DESCRIPTION_PARSE_EVERY` s (the arm
        republishes its own every 5 s, so a flood only delays it)."""
        if sha256 in self._candidates:
            return True
        want = (self.status or {}).get("description_sha256")
        if want is not None and sha256 != want:
            self._latest_sha = sha256
            self.description_refused = (f"the description on the broker (sha256 {sha256[:12]}...) is not "
                                        f"the one the arm announces ({want[:12]}...): ignored")
            return False
        if now - self._parsed_at < DESCRIPTION_PARSE_EVERY:
            return False
        self._parsed_at = now
        return True

    def note_status(self, body: dict[str, Any]) -> None:
        """Keep a short history of what changed, in plain words (:mod:`hebictl.panel.events`);
        a new ``session`` (the arm's teleop restarted) starts a fresh history."""
        old = self.status
        if old is not None and body.get("session") and body.get("session") != old.get("session"):
            self.events.clear()
            old = None
        for ev in status_events(old, body):
            self.events.appendleft(ev)
        if body.get("estop"):
            self.estop_seen_at = time.monotonic()   # whoever engaged it: nothing older is sent again
        if not (body.get("group") or {}).get("held"):
            self.group_refusal = None   # the group's hold is over: so is what it refused
        self.status = body
        self._settle_description()

    def note_description(self, body: dict[str, Any], sha256: str) -> None:
        # the arm republishes the same bytes every 5 s: keep the object already held, so the page does
        # not rebuild its sliders and jog buttons for an identical description
        self._candidates.setdefault(sha256, body)
        self._candidates.move_to_end(sha256)
        while len(self._candidates) > 4:
            self._candidates.popitem(last=False)
        self._latest_sha = sha256
        self._settle_description()

    def _settle_description(self) -> None:
        """Use the description whose hash the arm's status announces; without a hash (an older
        arm), the latest one, unverified. A description with another hash is never used."""
        want = (self.status or {}).get("description_sha256")
        if want is None:
            if self._latest_sha is not None:
                self.description = self._candidates[self._latest_sha]
            self.description_verified, self.description_refused = False, None
            return
        if want in self._candidates:
            self.description = self._candidates[want]
            self.description_verified = True
        elif self.description is not None and not self.description_verified:
            self.description_verified = False  # drawn until the announced one arrives, never trusted
        if self._latest_sha is not None and self._latest_sha != want:
            self.description_refused = (f"the description on the broker (sha256 {self._latest_sha[:12]}...) is not "
                                        f"the one the arm announces ({want[:12]}...): ignored")
        else:
            self.description_refused = None

    def note_group_refusal(self, ack: dict[str, Any]) -> None:
        """A ``group_hold`` refusal (a validated ack), shown on the arm's card and banner until its
        group's hold ends."""
        self.group_refusal = {"topic": ack.get("topic"), "detail": ack.get("detail") or "",
                              "ts": ack.get("ts") if ack.get("ts") is not None else time.time()}

    def note_invalid(self, topic: str, exc: StateRejected) -> None:
        self.invalid += 1
        self.last_invalid = {"topic": topic, "reason": exc.reason, "detail": exc.detail, "at": time.monotonic()}

    @property
    def offline(self) -> bool:
        st = self.status or {}
        return st.get("status") == "offline" or st.get("state") == "offline"

    def health(self, now: float) -> dict[str, Any]:
        """What the page shows about the data itself: offline, stale (no valid state for
        :data:`STALE_AFTER` s), data invalid (recently), the description's check."""
        inv = self.last_invalid
        return {"offline": self.offline,
                "stale": not self.offline and (self.last_fresh is None or now - self.last_fresh > STALE_AFTER),
                "age": None if self.last_fresh is None else now - self.last_fresh,
                "invalid": self.invalid, "group_dropped": self.group_dropped,
                "invalid_recent": None if inv is None or now - inv["at"] > INVALID_SHOWN else
                {k: inv[k] for k in ("topic", "reason", "detail")},
                "description_verified": self.description_verified,
                "description_refused": self.description_refused}


FAST_KINDS = frozenset({"joints", "ee_pose"})   # an arm's 50 Hz state topics


def _kind(topic: str) -> str:
    parts = topic.split("/")
    return parts[4] if len(parts) == 5 else ""


#: state topics whose newest message is all the panel needs (an arm's status, joints, pose and
#: description): one waits per topic, a newer one takes its place. Acks are events: each one waits.
LATEST_KINDS = frozenset({"status", "joints", "ee_pose", "description"})


def _make_queue_class() -> type:
    """An inbound queue bounded in messages *and* payload bytes (aiomqtt's is unbounded by
    default, and bounded only in messages otherwise: 4 MiB descriptions at 31/s grew the panel to
    2 GB), in which a state topic's newer message takes the place of the one still waiting
    (:data:`LATEST_KINDS`; counted in ``superseded``). A starved panel then holds at most one
    message per arm and state topic however long it was starved, and never refuses a one-off
    message behind a backlog: a full queue of the arms' statuses and joints once refused a new arm's
    retained status, and an ack with a refusal, which no broker sends again (a clean-clone CI run's
    browser tests at load average 20: the arm never shown, the refusal never shown). Descriptions
    may hold at most :data:`INBOUND_DESCRIPTION_BYTES` of it, the 50 Hz joints and poses at most
    :data:`INBOUND_FAST_MESSAGES` of its messages (many arms), a payload larger than its topic's
    schema allows is never queued. ``put_nowait`` raises QueueFull to refuse, which the client below
    counts."""

    class _Inbound(asyncio.Queue[Any]):
        def __init__(self, maxsize: int = 0) -> None:
            super().__init__(maxsize=INBOUND_MESSAGES)
            self.bytes = 0
            self.description_bytes = 0
            self.fast = 0   # joints and ee_pose messages waiting
            self.superseded = 0   # state messages a newer one of the same topic replaced while waiting
            self._latest: dict[str, Any] = {}   # topic -> its newest waiting message (LATEST_KINDS)

        def put_nowait(self, item: Any) -> None:
            size = _size(item)
            topic = item.topic.value
            kind = _kind(topic)
            if size > state_schema.MAX_BYTES.get(kind, state_schema.MAX_BYTES_DEFAULT) + 1:
                raise asyncio.QueueFull
            waiting = self._latest.get(topic)
            grows = size - (0 if waiting is None else _size(waiting))
            if self.bytes + grows > INBOUND_BYTES or (kind == "description" and
                                                      self.description_bytes + grows > INBOUND_DESCRIPTION_BYTES):
                raise asyncio.QueueFull
            if waiting is not None:   # takes the waiting one's place: the queue does not grow
                self._latest[topic] = item
                self._count(waiting, -1)
                self._count(item, 1)
                self.superseded += 1
                return
            if kind in FAST_KINDS and self.fast >= INBOUND_FAST_MESSAGES:
                raise asyncio.QueueFull
            super().put_nowait(item)

        def _put(self, item: Any) -> None:
            topic = item.topic.value
            if _kind(topic) in LATEST_KINDS:
                self._latest[topic] = item
                super()._put(topic)   # its place in the order; the message is looked up when taken
            else:
                super()._put(item)
            self._count(item, 1)

        def _get(self) -> Any:
            item = super()._get()
            if isinstance(item, str):
                item = self._latest.pop(item)
            self._count(item, -1)
            return item

        def _count(self, item: Any, sign: int) -> None:
            size = _size(item)
            self.bytes += sign * size
            kind = _kind(item.topic.value)
            if kind == "description":
                self.description_bytes += sign * size
            elif kind in FAST_KINDS:
                self.fast += sign

    return _Inbound


def _size(item: Any) -> int:
    return len(item.payload) if isinstance(item.payload, bytes | bytearray) else 0


def _make_client_class() -> type:
    import aiomqtt

    class _Client(aiomqtt.Client):
        """aiomqtt's client with a publish that returns the broker's PUBACK reason code (aiomqtt
        drops it). Each publish waits for its own PUBACK (by message id), so an e-stop never queues
        behind another command's acknowledgement."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._puback: dict[int, asyncio.Future[Any]] = {}
            self.inbound_dropped = 0   # messages refused by the bounded inbound queue

        @property
        def inbound_superseded(self) -> int:
            """State messages a newer one of the same topic replaced in the inbound queue."""
            return int(getattr(self._queue, "superseded", 0))

        def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
            # aiomqtt's own logs a warning per dropped message: a flood would flood the log too
            try:
                self._queue.put_nowait(aiomqtt.Message._from_paho_message(message))
            except asyncio.QueueFull:
                self.inbound_dropped += 1

        def _on_publish(self, client: Any, userdata: Any, mid: int, reason_code: Any, properties: Any) -> None:
            fut = self._puback.pop(mid, None)
            if fut is not None and not fut.done():
                fut.set_result(reason_code)
            super()._on_publish(client, userdata, mid, reason_code, properties)

        async def publish_checked(self, topic: str, payload: bytes, qos: int, timeout: float) -> Any:
            """Publish at QoS >= 1; the PUBACK's reason code (``.is_failure`` when refused)."""
            import paho.mqtt.client as mqtt

            info = self._client.publish(topic, payload, qos, False)
            if info.rc != mqtt.MQTT_ERR_SUCCESS:
                raise aiomqtt.MqttCodeError(info.rc, "could not publish")
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._puback[info.mid] = fut  # PUBACK arrives through this event loop: no race with this line
            try:
                return await asyncio.wait_for(fut, timeout)
            finally:
                self._puback.pop(info.mid, None)

    return _Client


@dataclass(frozen=True)
class Sent:
    """A QoS-1 command this panel published, kept briefly so a refusal of it can be answered."""

    arm_id: str
    name: str
    body: dict[str, Any]
    seq: int
    client: str
    at: float                 # monotonic s
    resend: Resend | None     # through the checks of the session that sent it; None: never sent again


class PanelLink:
    """The MQTT client of one panel. ``on_message`` listeners run in the event loop."""

    def __init__(self, settings: BrokerSettings, *, name: str | None = None, probe_timeout: float = 3.0) -> None:
        self.settings = settings
        # with a broker account the name starts with "<account>:": the broker plugin of docs/teleop.md lets
        # only that account use such client ids, and the bridge refuses command names not bound to it
        account = f"{settings.username}:" if settings.username else ""
        self.name = name or f"{account}panel-{os.uname().nodename}-{os.getpid()}"[:128]
        self.arms: dict[str, ArmView] = {}
        self.listeners: list[Listener] = []
        self.connected = asyncio.Event()
        self.probe_timeout = probe_timeout
        self._client: Any = None
        self._side_client: Any = None         # the connection that reads descriptions (see :meth:`run`)
        self._seqs: dict[str, int] = {}       # arm id -> the last seq sent to it
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()  # probes in flight (kept referenced until done)
        self._watch: dict[str, int] = {}      # arm id -> browser tabs showing it (joints/ee_pose subscribed)
        self.dropped = 0                      # state messages refused by the schema
        self.warnings: list[str] = []         # security warnings shown on the page (anonymous broker ...)
        self._checked_anonymous = False
        self.epoch = 0                        # bumped to leave a client name someone else poisoned
        self._recent: collections.OrderedDict[tuple[str, int], Sent] = \
            collections.OrderedDict()         # (arm, seq) -> recent QoS-1 commands, for :meth:`_recover`
        self._estop_seq: dict[str, int] = {}  # arm id -> seq of the last e-stop (engage or release) sent to it
        #: arm id -> the operator of an e-stop engage the broker did not confirm (no link, no PUBACK, the
        #: link lost mid-publish): sent again on every reconnect until one is confirmed, the arm's status
        #: shows its e-stop engaged, or a release is sent (:meth:`_send_pending_estops`)
        self.pending_estops: dict[str, str | None] = {}
        self._schemas: dict[str, tuple[int, CommandSchema]] = {}
        self._invalid_log: dict[str, tuple[float, int]] = {}

    # ------------------------------------------------------------------ connection
    def _client_for(self, suffix: str) -> Any:
        """A client of this panel's account (MQTT v5, bounded inbound queue, Maximum Packet Size)."""
        import aiomqtt
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        connect = Properties(PacketTypes.CONNECT)
        connect.MaximumPacketSize = MAX_PACKET   # the broker drops larger messages for us unread
        cls = _make_client_class()
        return cls(**self.settings.client_options(), identifier=f"{self.name}-{suffix}{id(self):x}",
                   protocol=aiomqtt.ProtocolVersion.V5, timeout=5.0, properties=connect,
                   queue_type=_make_queue_class())

    async def run(self) -> None:
        """Connect, subscribe, read; reconnect with back-off until :meth:`stop`.

        Descriptions (up to 4 MiB each, and whoever holds an arm's account may publish them as
        fast as the broker takes them) come on a connection of their own (:meth:`_run_descriptions`):
        one TCP stream delivers in order, so on a shared one every status, ack and joint sample
        waited behind a flood of descriptions (the panel's view of an arm lagged by seconds and an
        e-stop release was refused as "not allowed now")."""
        side = asyncio.create_task(self._run_descriptions())
        try:
            await self._run_main()
        finally:
            await cancel_and_wait({side})

    async def _run_descriptions(self) -> None:
        import aiomqtt

        backoff = 0.2
        while not self._stop.is_set():
            try:
                async with self._client_for("d-") as client:
                    self._side_client = client
                    backoff = 0.2
                    # QoS 0: what the broker cannot deliver at once it may drop (the arm republishes every 5 s)
                    await client.subscribe(f"{PREFIX}/+/state/description", qos=0)
                    await self._read(client)
            except aiomqtt.MqttError as exc:
                log.warning("panel: broker %s (descriptions): %s; retrying in %.1f s", self.settings.url, exc, backoff)
            finally:
                self._side_client = None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), backoff)
            backoff = min(backoff * 2, 5.0)

    async def _run_main(self) -> None:
        import aiomqtt

        backoff = 0.2
        while not self._stop.is_set():
            try:
                async with self._client_for("") as client:
                    self._client = client
                    backoff = 0.2
                    # every arm's low-rate topics; the 50 Hz joints and pose only of arms someone looks at
                    for name in ("status", "ack"):
                        await client.subscribe(f"{PREFIX}/+/state/{name}", qos=1)
                    for arm_id in self._watch:
                        await self._subscribe_fast(client, arm_id)
                    self.connected.set()
                    if not self._checked_anonymous:
                        self._checked_anonymous = True
                        self._spawn(self.check_anonymous())
                    for view in self.arms.values():
                        view.writable = None
                        self._spawn_probe(view.arm_id)
                    if self.pending_estops:
                        self._spawn(self._send_pending_estops())
                    reader = asyncio.create_task(self._read(client))
                    stopper = asyncio.create_task(self._stop.wait())
                    done, pending = await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    await cancel_and_wait(pending)
                    for t in done:
                        failure = t.exception() if t is reader else None
                        if failure is not None:
                            raise failure
            except aiomqtt.MqttError as exc:
                log.warning("panel: broker %s: %s; retrying in %.1f s", self.settings.url, exc, backoff)
            finally:
                self._client = None
                self.connected.clear()
            if self._stop.is_set():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), backoff)
            backoff = min(backoff * 2, 5.0)

    def stop(self) -> None:
        self._stop.set()

    async def _subscribe_fast(self, client: Any, arm_id: str, subscribe: bool = True) -> None:
        topics = Topics(arm_id)
        names = [topics.state(name) for name in ("joints", "ee_pose")]
        # both in one request: one answer that comes late (a busy broker) then leaves neither undone
        if subscribe:
            await client.subscribe([(name, 0) for name in names])
        else:
            await client.unsubscribe(names)

    async def watch(self, arm_id: str, on: bool = True) -> None:
        """Count a browser tab showing ``arm_id`` (``on``) or leaving it; subscribe to its joints and
        pose while anyone shows it. A panel on a broker with many arms reads only what it draws."""
        Topics(arm_id)  # validates the id
        n = self._watch.get(arm_id, 0) + (1 if on else -1)
        if n > 0:
            self._watch[arm_id] = n
        else:
            self._watch.pop(arm_id, None)
        client = self._client
        if self._stop.is_set():
            # stopping: the link's connection is going away with its subscriptions, and an
            # (un)subscribe now would wait out the client's 5 s timeout for an answer that never
            # comes; every closing tab waited it, which held up the panel's exit by 5 s
            return
        if client is not None and ((on and n == 1) or (not on and n <= 0)):
            with contextlib.suppress(Exception):
                await self._subscribe_fast(client, arm_id, subscribe=on)

    async def _read(self, client: Any) -> None:
        async for msg in client.messages:
            try:
                payload, sha = msg.payload, None
                if isinstance(payload, bytes | bytearray) and len(payload) > 65536 \
                        and _kind(msg.topic.value) == "description":
                    # hashing 4 MiB takes milliseconds: in a thread (hashlib lets go of the GIL), so a
                    # flood of descriptions does not hold up an e-stop waiting in the event loop
                    sha = await asyncio.to_thread(state_schema.payload_sha256, payload)
                self.receive(msg.topic.value, payload, sha256=sha)
            except Exception:  # a bug here must not stop the panel reading (nor its e-stop button)
                log.exception("panel: could not process a message on %s", msg.topic.value)

    def receive(self, topic: str, payload: Any, *, sha256: str | None = None) -> None:
        """One message from the broker: validated, then kept in its arm's view and passed on.

        A message that fails :mod:`hebictl.teleop.state_schema` is dropped, counted (per arm and
        in :attr:`dropped`), logged with its topic (at most once a second per topic) and marks
        the arm "data invalid"; nothing else changes, so the last valid state stays in view."""
        parts = topic.split("/")
        if len(parts) != 5 or parts[3] != "state" or parts[4] not in state_schema.SCHEMAS:
            return
        arm_id, kind = parts[2], parts[4]
        if not _arm_id_ok(arm_id):
            return
        data = payload if isinstance(payload, bytes | bytearray) else str(payload or "").encode()
        if not data:
            if kind in ("status", "description") and arm_id in self.arms:
                self.arms.pop(arm_id)  # retained message cleared: the arm is gone
            return
        if len(data) > state_schema.MAX_BYTES.get(kind, state_schema.MAX_BYTES_DEFAULT):
            self.dropped += 1   # before any parsing (the schema would refuse it too, after copying it)
            return
        view = self.arms.get(arm_id)
        sha = None
        if kind == "description":
            sha = sha256 or state_schema.payload_sha256(data)
            if view is not None and not view.description_wanted(sha, time.monotonic()):
                self.dropped += 1
                return
            held = view.held_description(sha) if view is not None else None
            if view is not None and held is not None:
                view.note_description(held, sha)
                return
        group_error = None
        try:
            if kind == "status":   # its group is checked apart: a bad one is dropped, the status kept
                body, group_error = state_schema.validate_status(data, arm_id)
            else:
                body = state_schema.validate(kind, data)
        except StateRejected as exc:
            self.dropped += 1
            if view is None:
                view = self.arms[arm_id] = ArmView(arm_id)
            view.note_invalid(topic, exc)
            self._log_invalid(topic, exc)
            return
        if view is None:
            view = self.arms[arm_id] = ArmView(arm_id)
            self._spawn_probe(arm_id)
        if group_error is not None:
            self.dropped += 1
            view.group_dropped += 1
            view.note_invalid(topic, group_error)
            self._log_invalid(topic, group_error)
        self._keep(view, kind, body, sha or (state_schema.payload_sha256(data) if kind == "description" else None))

    def _keep(self, view: ArmView, kind: str, body: dict[str, Any], sha: str | None) -> None:
        """A validated message kept in its arm's view (:meth:`receive`) and passed to the listeners."""
        arm_id = view.arm_id
        now = time.monotonic()
        if kind == "status":
            view.note_status(body)
            view.last_fresh = now
        elif kind == "description" and sha is not None:
            view.note_description(body, sha)
        elif kind == "joints":
            view.joints = body
            view.last_fresh = now
        elif kind == "ee_pose":
            view.ee_pose = body
        elif kind == "ack":
            if body.get("reason") == GROUP_HOLD and not body.get("accepted"):
                view.note_group_refusal(body)
            self._recover(arm_id, body)
        for listener in list(self.listeners):
            try:
                listener(arm_id, kind, body)
            except Exception:
                log.exception("panel listener failed")

    def _log_invalid(self, topic: str, exc: StateRejected) -> None:
        now = time.monotonic()
        last, count = self._invalid_log.get(topic, (-math.inf, 0))
        if now - last >= 1.0:
            more = f" (and {count} more since the last report)" if count else ""
            log.warning("panel: dropped an invalid message on %s: %s%s", topic, exc, more)
            self._invalid_log[topic] = (now, 0)
        else:
            self._invalid_log[topic] = (last, count + 1)
        if len(self._invalid_log) > 1000:
            self._invalid_log.clear()

    # ------------------------------------------------------------------ write access
    def _spawn_probe(self, arm_id: str) -> None:
        self._spawn(self.probe(arm_id))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def probe(self, arm_id: str) -> bool | None:
        """Whether this account may publish commands to ``arm_id`` (see the module docstring)."""
        view = self.arms.get(arm_id)
        client = self._client
        if view is None or client is None:
            return None
        # an unanswered probe is not a refusal: a busy broker or robot PC can take seconds to answer,
        # and a panel made read-only by one late PUBACK stays so until it reconnects. So the answer is
        # waited for PROBE_ATTEMPTS times, each twice as long (3 + 6 + 12 + 24 s by default), the view
        # as it was meanwhile (unknown on a new connection: the controls the arm's state allows, each
        # command's own PUBACK then decides); only then is it read-only.
        code = None
        for attempt in range(PROBE_ATTEMPTS):
            wait = self.probe_timeout * 2 ** attempt
            try:
                code = await client.publish_checked(Topics(arm_id).root + "/cmd", b"", 1, wait)
                break
            except TimeoutError:
                if self._client is not client:   # reconnected meanwhile: the new connection probes again
                    return None
                if attempt + 1 < PROBE_ATTEMPTS:
                    log.info("panel: the broker did not answer the write probe for %s within %.0f s; asking "
                             "again", arm_id, wait)
                    continue
                log.warning("panel: the broker answered none of %d write probes for %s: read-only until it "
                            "reconnects", PROBE_ATTEMPTS, arm_id)
                view.writable = False
                return False
            except Exception as exc:
                log.warning("panel: write probe for %s failed: %s", arm_id, exc)
                view.writable = False
                return False
        view.writable = not (code is not None and getattr(code, "is_failure", False))
        if not view.writable:
            log.warning("panel: account %r may not command arm %s (%s): read-only", self.settings.username,
                        arm_id, code)
        with contextlib.suppress(Exception):  # the same probe on the arm's state subtree: it should be refused
            code = await client.publish_checked(Topics(arm_id).root + "/state", b"", 1, self.probe_timeout)
            if not (code is not None and getattr(code, "is_failure", False)):
                self._warn(f"this panel's broker account may publish arm {arm_id}'s state topics: whoever holds "
                           "it (or any client, on a broker without accounts) can fake that arm's state; give "
                           "only the arm's own account write access to hebictl/v1/<arm>/state/# (docs/teleop.md)")
        return view.writable

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)
            log.warning("panel: %s", text)

    async def check_anonymous(self) -> bool | None:
        """Whether the broker lets a client in without an account (anyone on the network could
        then publish a fake arm state or description); warns when it does."""
        import aiomqtt

        if not self.settings.username:
            self._warn("the panel connects to the broker without an account: anyone who can reach the broker can "
                       "publish fake arm states and, unless an ACL stops them, commands")
            return True
        options = {**self.settings.client_options(), "username": None, "password": None}
        try:
            async with aiomqtt.Client(**options, identifier=f"{self.name}-anon-check", timeout=3.0):
                pass
        except aiomqtt.MqttError:
            return False
        except Exception as exc:  # the check must never keep the panel from running
            log.info("panel: anonymous-access check failed: %s", exc)
            return None
        self._warn("the broker accepts clients without an account (allow_anonymous): anyone who can reach it can "
                   "publish fake arm states and descriptions; see docs/teleop.md, broker set-up")
        return True

    # ------------------------------------------------------------------ commands
    def client_name(self, operator: str | None = None) -> str:
        """The envelope's ``client`` for ``operator``'s commands: ``<name>[~<epoch>][/<operator>]``.

        The epoch changes when an arm refuses one of our commands as out of order (someone
        published a huge ``seq`` under our name, which acks make visible): the panel then
        continues under a fresh name instead of being locked out (:meth:`_recover`)."""
        base = self.name if self.epoch == 0 else f"{self.name}~{self.epoch}"
        return base if operator is None else f"{base}/{operator}"[:128]

    def is_ours(self, client: Any) -> TypeGuard[str]:
        return isinstance(client, str) and (client == self.name or client.startswith((self.name + "/",
                                                                                       self.name + "~")))

    def next_seq(self, arm_id: str) -> int:
        """The next ``seq`` for ``arm_id``: per arm, from an unguessable start, then +1."""
        last = self._seqs.get(arm_id)
        # below the clock in µs (an arm refuses a seq ahead of its clock: seq_ahead), by 32 random bits (~72 min)
        seq = time.time_ns() // 1000 - secrets.randbelow(2**32) if last is None else last + 1
        self._seqs[arm_id] = seq
        return seq

    def envelope(self, arm_id: str, body: dict[str, Any], ts: float | None = None,
                 operator: str | None = None) -> dict[str, Any]:
        return {**body, "seq": self.next_seq(arm_id), "ts": time.time() if ts is None else ts,
                "client": self.client_name(operator)}

    @property
    def inbound_dropped(self) -> int:
        """Messages the bounded inbound queue refused on the current connection."""
        return sum(int(getattr(c, "inbound_dropped", 0)) for c in (self._client, self._side_client))

    @property
    def inbound_superseded(self) -> int:
        """State messages a newer one of the same topic replaced in the inbound queue (current connection)."""
        return sum(int(getattr(c, "inbound_superseded", 0)) for c in (self._client, self._side_client))

    def command_schema(self, arm_id: str) -> CommandSchema:
        """The bridge's validators for ``arm_id``, with the limits of its description (unbounded
        where the panel has none yet: types, finiteness and lengths are still checked)."""
        view = self.arms.get(arm_id)
        d = view.description if view is not None else None
        key = id(d)
        cached = self._schemas.get(arm_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        joints = (d or {}).get("joints") or {}
        dof = int((d or {}).get("dof") or len(((view.joints if view else None) or {}).get("position") or []) or 1)

        def arr(key: str, default: float) -> np.ndarray:
            values = joints.get(key) or [None] * dof
            return np.array([default if v is None else v for v in values], dtype=np.float64)

        limits = Limits(arr("position_min", -np.inf), arr("position_max", np.inf), arr("velocity_max", np.inf),
                        np.full(dof, np.inf))
        schema = CommandSchema(dof, limits)
        self._schemas[arm_id] = (key, schema)
        return schema

    async def send(self, arm_id: str, name: str, body: dict[str, Any], *, ts: float | None = None,
                   operator: str | None = None, resend: Resend | None = None) -> dict[str, Any]:
        """Validate (:mod:`hebictl.teleop.schema`, the bridge's own rules) and publish ``cmd/<name>``
        for ``arm_id`` as strict JSON; returns the payload sent (with its ``seq``).

        ``resend`` is how the command may be sent again if the arm refuses it as out of order
        (:meth:`_recover`): the caller's own checks run again; without it, it never is.

        Raises CommandRejected for a command the arm would refuse anyway, PermissionError when
        the broker refuses the publish (PUBACK reason code), ConnectionError without a broker.

        An e-stop engage is never lost to the link: one the broker did not confirm (ConnectionError,
        no PUBACK in time, the link lost mid-publish) is kept in :attr:`pending_estops` and sent
        again on every reconnect until one is confirmed; it is still raised, so the operator hears
        of it at once."""
        if name != "estop" or body.get("engaged") is False:
            if name == "estop":
                self.pending_estops.pop(arm_id, None)   # the operator releases it: nothing to re-send
            return await self._publish(arm_id, name, body, ts=ts, operator=operator, resend=resend)
        import aiomqtt

        try:
            payload = await self._publish(arm_id, name, body, ts=ts, operator=operator, resend=resend)
        except (ConnectionError, TimeoutError, aiomqtt.MqttError):
            if arm_id not in self.pending_estops:
                log.warning("panel: the e-stop for %s was not confirmed by the broker; it is sent again on "
                            "reconnect until it is", arm_id)
            self.pending_estops[arm_id] = operator
            raise
        self.pending_estops.pop(arm_id, None)
        return payload

    async def _send_pending_estops(self) -> None:
        """After a reconnect: every e-stop engage the broker did not confirm, again (an arm whose
        status already shows its e-stop engaged needs none)."""
        for arm_id, operator in list(self.pending_estops.items()):
            view = self.arms.get(arm_id)
            if view is not None and (view.status or {}).get("estop") is True:
                self.pending_estops.pop(arm_id, None)
                continue
            with contextlib.suppress(Exception):   # still no link: the next reconnect tries again
                await self.send(arm_id, "estop", {"engaged": True}, operator=operator)
                log.warning("panel: the e-stop for %s, unconfirmed before the link was lost, was sent again", arm_id)

    async def _publish(self, arm_id: str, name: str, body: dict[str, Any], *, ts: float | None,
                       operator: str | None, resend: Resend | None) -> dict[str, Any]:
        """The publish of :meth:`send`."""
        client = self._client
        if client is None:
            raise ConnectionError(f"not connected to the broker {self.settings.url}")
        payload = self.envelope(arm_id, body, ts, operator)
        if name == "input":   # not a CommandSchema topic: the envelope here, the body by commands.input_sample
            command_envelope(payload)
        else:
            self.command_schema(arm_id).validate(name, payload, command_envelope(payload))
        data = json.dumps(payload, allow_nan=False).encode()
        topic = Topics(arm_id).cmd(name)
        qos = COMMAND_QOS.get(name, 1)
        if name == "estop":
            self._estop_seq[arm_id] = payload["seq"]
        if qos == 0:
            await client.publish(topic, data, qos=0)
            return payload
        # an e-stop release is never sent again on its own: the operator presses it again if it is still wanted
        again = None if name == "estop" and body.get("engaged") is False else resend
        self._recent[(arm_id, payload["seq"])] = Sent(arm_id, name, body, payload["seq"], payload["client"],
                                                      time.monotonic(), again)
        while len(self._recent) > 64:
            self._recent.popitem(last=False)
        code = await client.publish_checked(topic, data, qos, 3.0)
        if code is not None and getattr(code, "is_failure", False):
            view = self.arms.get(arm_id)
            if view is not None:
                view.writable = False
            raise PermissionError(f"the broker refused cmd/{name} for {arm_id}: {code}")
        return payload

    def _recover(self, arm_id: str, ack: dict[str, Any]) -> None:
        """An arm refused one of our commands as out of order (someone published a larger ``seq``
        under the name we use now): move to a new client name and, once, send that command again
        through the checks of the session that sent it (:attr:`Sent.resend`).

        An ack is believed only for a command this panel sent, recently, to *this* arm (the ack
        came on ``arm_id``'s own ``state/ack``, which only that arm's account may publish), with the
        same topic, seq and client name: another arm's account that copies our name and seqs into
        its own acks changes nothing. Nothing is sent again once a newer e-stop went to the arm
        from this panel or the arm reported one engaged (whoever engaged it) since the command,
        and an e-stop release never is. Jog samples (QoS 0) are not kept: they just continue."""
        client, seq = ack.get("client"), ack.get("seq")
        if ack.get("accepted") or ack.get("reason") != "out_of_order" or not isinstance(seq, int):
            return
        sent = self._recent.get((arm_id, seq))
        if sent is None or sent.name != ack.get("topic") or sent.client != client \
                or time.monotonic() - sent.at > RESEND_WITHIN:
            return
        operator = client.split("/", 1)[1] if "/" in client else None
        if client != self.client_name(operator):
            return  # a name we already left
        del self._recent[(arm_id, seq)]
        self.epoch += 1
        log.warning("panel: arm %s refused our %s as out of order (someone used our client name with a larger "
                    "seq); continuing as %s", arm_id, sent.name, self.client_name(operator))
        if sent.resend is None:
            return
        view = self.arms.get(arm_id)
        if self._estop_seq.get(arm_id, -1) > seq or (view is not None and view.estop_seen_at >= sent.at):
            log.warning("panel: not sending %s to %s again: an e-stop came after it", sent.name, arm_id)
            return
        self._spawn(self._resend(sent))

    async def _resend(self, sent: Sent) -> None:
        assert sent.resend is not None
        try:
            await sent.resend(sent.arm_id, sent.name, sent.body)
        except Exception as exc:
            log.warning("panel: resending cmd/%s to %s failed: %s", sent.name, sent.arm_id, exc)
