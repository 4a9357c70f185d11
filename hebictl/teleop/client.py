"""An operator's side of the protocol: :class:`TeleopClient` (async), used by ``hebictl
teleop-send``, the tests and the benchmark.

It fills in the envelope of every command (``seq`` increasing, ``ts`` = now, ``client`` = its
name), subscribes to the arm's ``state/#`` and keeps the latest status, joints and pose, and
matches acks to the commands that caused them (a coalesced rejection answers both its first
and its last ``seq``). ``seq`` starts at the current time in microseconds, so successive runs of
a command-line client under the same name keep increasing without storing anything. Wall time
comes from an injected :class:`~hebictl.teleop.clock.TeleopClock`.

It can also act as a fleet station (docs/fleet.md): :meth:`TeleopClient.lease` publishes a
station's heartbeat at 20 Hz until told to stop, and pauses it while a fleet e-stop is engaged (a
station must not lease anything then: an arm that missed the e-stop message still holds when its
lease runs out); :meth:`TeleopClient.fleet_estop` publishes the fleet e-stop (or its clear).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hebictl.errors import CommandRejected
from hebictl.tasks import cancel_and_wait
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.connection import BrokerSettings, parse_broker
from hebictl.teleop.lease import ESTOP_TOPIC, Heartbeat, estop_message, parse_estop, publish_heartbeats
from hebictl.teleop.messages import Ack
from hebictl.teleop.topics import COMMAND_QOS, Topics

log = logging.getLogger(__name__)


class TeleopClient:
    """Async operator client: ``async with TeleopClient(broker, arm_id) as c: await c.mode("position")``.

    ``broker`` is a URL (``mqtt://host:port``) or :class:`BrokerSettings`; ``name`` goes into every
    command's ``client`` field (default ``operator-<pid>``, ``<username>:operator-<pid>`` with an account)."""

    def __init__(self, broker: str | BrokerSettings, arm_id: str, *, name: str | None = None,
                 username: str | None = None, password: str | None = None, subscribe_state: bool = True,
                 seq_start: int | None = None, clock: TeleopClock = SYSTEM_CLOCK) -> None:
        if isinstance(broker, str):
            broker = parse_broker(broker, username=username, password=password)
        self.settings = broker
        self.topics = Topics(arm_id)
        # bound to the broker account (<account>:<name>), as the broker plugin of docs/teleop.md requires
        default = f"operator-{os.getpid()}"
        self.name = name or (default if broker.username is None else f"{broker.username}:{default}")
        self.clock = clock
        self.subscribe_state = subscribe_state
        self._seq = itertools.count(seq_start if seq_start is not None else int(clock.wall() * 1e6))
        self._client: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[tuple[str | None, int | None], asyncio.Future[Ack]] = {}
        self._waiters: list[tuple[Callable[[str, dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]] = []
        self.acks: list[Ack] = []
        self.status: dict[str, Any] | None = None
        self.joints: dict[str, Any] | None = None
        self.ee_pose: dict[str, Any] | None = None
        self.received: dict[str, int] = {}
        #: the fleet e-stop as last seen while leasing (None: none seen, or cleared)
        self.fleet_estopped: str | None = None
        self._heartbeat: Heartbeat | None = None

    # ------------------------------------------------------------------ connection
    async def __aenter__(self) -> TeleopClient:
        import aiomqtt

        self._client = aiomqtt.Client(**self.settings.client_options(),
                                      identifier=f"{self.name}-{os.getpid()}-{id(self):x}", timeout=5.0)
        await self._client.__aenter__()
        try:
            if self.subscribe_state:
                await self._client.subscribe(self.topics.all_states, qos=1)
            self._reader = asyncio.create_task(self._read())
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            await cancel_and_wait([self._reader])
        for fut in self._pending.values():
            fut.cancel()
        with contextlib.suppress(Exception):
            await self._client.__aexit__(None, None, None)

    async def _read(self) -> None:
        import aiomqtt

        try:
            async for msg in self._client.messages:
                if msg.topic.value == ESTOP_TOPIC:
                    self._on_fleet_estop(msg.payload)
                    continue
                name = self.topics.state_name(msg.topic.value)
                if name is None:
                    continue
                try:
                    body = json.loads(msg.payload)
                except (ValueError, TypeError):
                    log.warning("unreadable payload on %s", msg.topic.value)
                    continue
                if not isinstance(body, dict):
                    continue
                self.received[name] = self.received.get(name, 0) + 1
                if name == "ack":
                    ack = Ack.from_dict(body)
                    self.acks.append(ack)
                    for seq in {ack.seq, ack.last_seq}:
                        fut = self._pending.pop((ack.client, seq), None)
                        if fut is not None and not fut.done():
                            fut.set_result(ack)
                elif name == "status":
                    self.status = body
                elif name == "joints":
                    self.joints = body
                elif name == "ee_pose":
                    self.ee_pose = body
                for pred, waiter in list(self._waiters):
                    if not waiter.done() and pred(name, body):
                        waiter.set_result(body)
        except aiomqtt.MqttError as exc:
            log.warning("teleop client lost the broker: %s", exc)
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(exc)

    # ------------------------------------------------------------------ sending
    def next_seq(self) -> int:
        return next(self._seq)

    async def send(self, name: str, body: dict[str, Any] | None = None, *, wait: bool = True,
                   timeout: float = 3.0, seq: int | None = None, ts: float | None = None,
                   qos: int | None = None) -> Ack | None:
        """Publish ``cmd/<name>`` with the envelope filled in; wait for its ack if ``wait``.

        Returns the ack, or None when not waiting. ``seq``/``ts`` override the envelope (tests
        of stale or reordered commands)."""
        seq = self.next_seq() if seq is None else seq
        payload = {**(body or {}), "seq": seq, "ts": self.clock.wall() if ts is None else ts, "client": self.name}
        fut: asyncio.Future[Ack] | None = None
        if wait:
            fut = asyncio.get_running_loop().create_future()
            self._pending[(self.name, seq)] = fut
        await self._client.publish(self.topics.cmd(name), json.dumps(payload).encode(),
                                   qos=COMMAND_QOS.get(name, 1) if qos is None else qos)
        if fut is None:
            return None
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop((self.name, seq), None)

    async def publish_raw(self, topic: str, payload: bytes | str, *, qos: int = 0, retain: bool = False) -> None:
        """Publish anything anywhere (``topic`` relative to the arm root if it does not start with it)."""
        full = topic if topic.startswith(self.topics.root) or topic.startswith("/") else f"{self.topics.root}/{topic}"
        await self._client.publish(full, payload, qos=qos, retain=retain)

    async def wait_for(self, predicate: Callable[[str, dict[str, Any]], bool], timeout: float = 3.0) -> dict[str, Any]:
        """Next state message ``(name, body)`` for which ``predicate`` is true."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        entry = (predicate, fut)
        self._waiters.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._waiters.remove(entry)

    async def wait_ack(self, predicate: Callable[[Ack], bool], timeout: float = 3.0) -> Ack:
        """The first ack received so far, or the next one, for which ``predicate`` is true."""
        for ack in self.acks:
            if predicate(ack):
                return ack
        body = await self.wait_for(lambda n, b: n == "ack" and predicate(Ack.from_dict(b)), timeout)
        return Ack.from_dict(body)

    async def wait_status(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 3.0) -> dict[str, Any]:
        """The current status if it satisfies ``predicate``, else the next one that does."""
        if self.status is not None and predicate(self.status):
            return self.status
        return await self.wait_for(lambda n, b: n == "status" and predicate(b), timeout)

    # ------------------------------------------------------------------ commands
    async def joint_goal(self, positions: Sequence[float], *, velocities: Sequence[float] | None = None,
                         duration: float | None = None, **kw: Any) -> Ack | None:
        """Move to ``positions`` [rad] (arriving with ``velocities`` [rad/s]) in ``duration`` [s]."""
        body: dict[str, Any] = {"positions": _floats(positions)}
        if velocities is not None:
            body["velocities"] = _floats(velocities)
        if duration is not None:
            body["duration"] = float(duration)
        return await self.send("joint_goal", body, **kw)

    async def joint_waypoints(self, waypoints: Sequence[dict[str, Any]], **kw: Any) -> Ack | None:
        """Follow ``[{"t": s, "positions": [...], "velocities": [...]?}, ...]``."""
        return await self.send("joint_goal", {"waypoints": list(waypoints)}, **kw)

    async def cartesian_goal(self, position: Sequence[float], *, orientation: Sequence[float] | None = None,
                             duration: float | None = None, **kw: Any) -> Ack | None:
        """Move the end effector to ``position`` [m, world] (``orientation`` quaternion w x y z)."""
        body: dict[str, Any] = {"position": _floats(position)}
        if orientation is not None:
            body["orientation"] = _floats(orientation)
        if duration is not None:
            body["duration"] = float(duration)
        return await self.send("cartesian_goal", body, **kw)

    async def jog(self, velocity: Sequence[float], *, space: str = "joint", deadman: bool = True,
                  ttl: float | None = None, wait: bool = False, **kw: Any) -> Ack | None:
        """One jog sample (stream them): joint [rad/s] or Cartesian [m/s, rad/s] velocity."""
        body: dict[str, Any] = {"space": space, "velocity": _floats(velocity), "deadman": bool(deadman)}
        if ttl is not None:
            body["ttl"] = float(ttl)
        return await self.send("jog", body, wait=wait, **kw)

    async def base_velocity(self, velocity: Sequence[float], *, deadman: bool = True, ttl: float | None = None,
                            wait: bool = False, **kw: Any) -> Ack | None:
        """One sample of a mobile base's wheel velocity [rad/s per wheel] (stream them; ``deadman``
        False: the release, the base holds at once). ``arm_id`` is then the base's id."""
        body: dict[str, Any] = {"velocity": _floats(velocity), "deadman": bool(deadman)}
        if ttl is not None:
            body["ttl"] = float(ttl)
        return await self.send("velocity", body, wait=wait, **kw)

    async def gripper(self, *, position: float | None = None, action: str | None = None, **kw: Any) -> Ack | None:
        body: dict[str, Any] = {}
        if position is not None:
            body["position"] = float(position)
        if action is not None:
            body["action"] = action
        return await self.send("gripper", body, **kw)

    async def stop(self, **kw: Any) -> Ack | None:
        return await self.send("stop", {}, **kw)

    async def estop(self, engaged: bool = True, *, override: bool = False, **kw: Any) -> Ack | None:
        """Engage or release the e-stop; ``override`` (a release from a supervisor account): release
        an e-stop another account engaged (the arm logs it)."""
        body: dict[str, Any] = {"engaged": bool(engaged)}
        if override:
            body["override"] = True
        return await self.send("estop", body, **kw)

    async def mode(self, mode: str, **kw: Any) -> Ack | None:
        return await self.send("mode", {"mode": mode}, **kw)

    # ------------------------------------------------------------------ fleet station
    async def lease(self, heartbeat: Heartbeat, stop: asyncio.Event) -> int:
        """Publish ``heartbeat`` (a station's lease, a new epoch per :class:`Heartbeat`) at 20 Hz
        until ``stop`` is set, paused while a fleet e-stop is engaged (from its engage to a clear,
        whoever sends them; a retained engage pauses too); the number published."""
        self._heartbeat = heartbeat
        await self._client.subscribe(ESTOP_TOPIC, qos=1)
        try:
            return await publish_heartbeats(self._client, heartbeat, stop)
        finally:
            self._heartbeat = None

    def _on_fleet_estop(self, payload: Any) -> None:
        try:
            estop = parse_estop(payload if isinstance(payload, bytes | str) else b"")
        except CommandRejected:
            return  # not a fleet e-stop: the arms drop it too
        self.fleet_estopped = None if estop.clear else f"fleet e-stop by {estop.station}"
        if self._heartbeat is not None:
            self._heartbeat.paused = not estop.clear
            log.warning("fleet e-stop %s by %s: heartbeat %s", "cleared" if estop.clear else "engaged",
                        estop.station, "resumed" if estop.clear else "paused")

    async def fleet_estop(self, station: str, *, clear: bool = False, reason: str = "") -> None:
        """Publish the fleet e-stop (every arm in the fleet holds, latched) or, ``clear``, its clear
        (then each arm needs a new lease and a command), QoS 1, never retained."""
        await self._client.publish(ESTOP_TOPIC, estop_message(station, clear=clear, reason=reason), qos=1,
                                   retain=False)


def _floats(values: Sequence[float]) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=np.float64).reshape(-1)]
