"""The panel's MQTT side: one client (MQTT v5) that watches every arm on the broker and sends the
operator's commands, under the panel's own broker account and ACL.

It subscribes to ``hebictl/v1/+/state/#`` and keeps, per arm, the retained status and description
and the latest joints and pose (:class:`ArmView`). Commands get the protocol's envelope (``seq``
increasing per client, ``ts``, ``client``). Write access is *detected*, never assumed: MQTT 3.1.1
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
import itertools
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hebictl.tasks import cancel_and_wait
from hebictl.teleop.connection import BrokerSettings
from hebictl.teleop.topics import COMMAND_QOS, PREFIX, Topics

log = logging.getLogger(__name__)

#: (arm_id, kind, body) - kind is a state topic name; body the decoded JSON object
Listener = Callable[[str, str, dict[str, Any]], None]


@dataclass
class ArmView:
    """What the panel knows of one arm, straight from its state topics."""

    arm_id: str
    status: dict[str, Any] | None = None
    description: dict[str, Any] | None = None
    joints: dict[str, Any] | None = None
    ee_pose: dict[str, Any] | None = None
    writable: bool | None = None          # None: not probed yet
    events: collections.deque[dict[str, Any]] = field(default_factory=lambda: collections.deque(maxlen=20))

    def note_status(self, body: dict[str, Any]) -> None:
        """Keep a short history of what changed (events, errors, state, mode) for the panel."""
        old = self.status or {}
        for key in ("last_event", "last_error"):
            if body.get(key) and body.get(key) != old.get(key):
                item = body[key]
                self.events.appendleft({"ts": body.get("ts"), "what": key,
                                        "kind": item.get("kind") or item.get("reason"),
                                        "detail": item.get("detail", "")})
        for key in ("status", "state", "mode", "estop"):
            if old and body.get(key) != old.get(key):
                self.events.appendleft({"ts": body.get("ts"), "what": key, "kind": str(body.get(key)),
                                        "detail": f"{old.get(key)} -> {body.get(key)}"})
        self.status = body


def _make_client_class() -> type:
    import aiomqtt

    class _Client(aiomqtt.Client):  # type: ignore[misc]
        """aiomqtt's client with a publish that returns the broker's PUBACK reason code (aiomqtt
        drops it). Each publish waits for its own PUBACK (by message id), so an e-stop never queues
        behind another command's acknowledgement."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._puback: dict[int, asyncio.Future[Any]] = {}

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


class PanelLink:
    """The MQTT client of one panel. ``on_message`` listeners run in the event loop."""

    def __init__(self, settings: BrokerSettings, *, name: str | None = None, probe_timeout: float = 3.0) -> None:
        self.settings = settings
        self.name = name or f"panel-{os.uname().nodename}-{os.getpid()}"[:128]
        self.arms: dict[str, ArmView] = {}
        self.listeners: list[Listener] = []
        self.connected = asyncio.Event()
        self.probe_timeout = probe_timeout
        self._client: Any = None
        self._seq = itertools.count(time.time_ns() // 1000)
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()  # probes in flight (kept referenced until done)
        self._watch: dict[str, int] = {}      # arm id -> browser tabs showing it (joints/ee_pose subscribed)

    # ------------------------------------------------------------------ connection
    async def run(self) -> None:
        """Connect, subscribe, read; reconnect with back-off until :meth:`stop`."""
        import aiomqtt

        backoff = 0.2
        while not self._stop.is_set():
            try:
                cls = _make_client_class()
                async with cls(**self.settings.client_options(), identifier=f"{self.name}-{id(self):x}",
                               protocol=aiomqtt.ProtocolVersion.V5, timeout=5.0) as client:
                    self._client = client
                    backoff = 0.2
                    # every arm's low-rate topics; the 50 Hz joints and pose only of arms someone looks at
                    for name in ("status", "description", "ack"):
                        await client.subscribe(f"{PREFIX}/+/state/{name}", qos=1)
                    for arm_id in self._watch:
                        await self._subscribe_fast(client, arm_id)
                    self.connected.set()
                    for view in self.arms.values():
                        view.writable = None
                        self._spawn_probe(view.arm_id)
                    reader = asyncio.create_task(self._read(client))
                    stopper = asyncio.create_task(self._stop.wait())
                    done, pending = await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    await cancel_and_wait(pending)
                    for t in done:
                        if t is reader and t.exception() is not None:
                            raise t.exception()  # type: ignore[misc]
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
        for name in ("joints", "ee_pose"):
            if subscribe:
                await client.subscribe(topics.state(name), qos=0)
            else:
                await client.unsubscribe(topics.state(name))

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
        if client is not None and ((on and n == 1) or (not on and n <= 0)):
            with contextlib.suppress(Exception):
                await self._subscribe_fast(client, arm_id, subscribe=on)

    async def _read(self, client: Any) -> None:
        async for msg in client.messages:
            parts = msg.topic.value.split("/")
            if len(parts) != 5 or parts[3] != "state":
                continue
            arm_id, kind = parts[2], parts[4]
            try:
                body = json.loads(msg.payload) if msg.payload else None
            except (ValueError, TypeError):
                continue
            if not isinstance(body, dict):
                if kind in ("status", "description") and not msg.payload and arm_id in self.arms:
                    self.arms.pop(arm_id)  # retained message cleared: the arm is gone
                continue
            view = self.arms.get(arm_id)
            if view is None:
                view = self.arms[arm_id] = ArmView(arm_id)
                self._spawn_probe(arm_id)
            if kind == "status":
                view.note_status(body)
            elif kind == "description" and body != view.description:  # the arm republishes it every 5 s
                view.description = body
            elif kind == "joints":
                view.joints = body
            elif kind == "ee_pose":
                view.ee_pose = body
            for listener in list(self.listeners):
                try:
                    listener(arm_id, kind, body)
                except Exception:
                    log.exception("panel listener failed")

    # ------------------------------------------------------------------ write access
    def _spawn_probe(self, arm_id: str) -> None:
        task = asyncio.create_task(self.probe(arm_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def probe(self, arm_id: str) -> bool | None:
        """Whether this account may publish commands to ``arm_id`` (see the module docstring)."""
        view = self.arms.get(arm_id)
        client = self._client
        if view is None or client is None:
            return None
        try:
            code = await client.publish_checked(Topics(arm_id).root + "/cmd", b"", 1, self.probe_timeout)
        except Exception as exc:
            log.warning("panel: write probe for %s failed: %s", arm_id, exc)
            view.writable = False
            return False
        view.writable = not (code is not None and getattr(code, "is_failure", False))
        if not view.writable:
            log.warning("panel: account %r may not command arm %s (%s): read-only", self.settings.username,
                        arm_id, code)
        return view.writable

    # ------------------------------------------------------------------ commands
    def envelope(self, body: dict[str, Any], ts: float | None = None) -> dict[str, Any]:
        return {**body, "seq": next(self._seq), "ts": time.time() if ts is None else ts, "client": self.name}

    async def send(self, arm_id: str, name: str, body: dict[str, Any], *, ts: float | None = None) -> dict[str, Any]:
        """Publish ``cmd/<name>`` for ``arm_id``; returns the payload sent (with its ``seq``).

        Raises PermissionError when the broker refuses the publish (PUBACK reason code), and
        ConnectionError without a broker connection."""
        client = self._client
        if client is None:
            raise ConnectionError(f"not connected to the broker {self.settings.url}")
        payload = self.envelope(body, ts)
        data = json.dumps(payload).encode()
        topic = Topics(arm_id).cmd(name)
        qos = COMMAND_QOS.get(name, 1)
        if qos == 0:
            await client.publish(topic, data, qos=0)
            return payload
        code = await client.publish_checked(topic, data, qos, 3.0)
        if code is not None and getattr(code, "is_failure", False):
            view = self.arms.get(arm_id)
            if view is not None:
                view.writable = False
            raise PermissionError(f"the broker refused cmd/{name} for {arm_id}: {code}")
        return payload
