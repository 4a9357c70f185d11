"""Live view: the recorder's messages served to Foxglove over its WebSocket protocol.

``hebictl teleop --foxglove`` serves Foxglove's live connection (``foxglove.sdk.v1`` /
``foxglove.websocket.v1`` sub-protocol: ``serverInfo``, ``advertise``, client ``subscribe`` /
``unsubscribe``, binary message frames) on ``ws://127.0.0.1:8765`` by default. The view is
read-only: the server offers no services, parameters or client publishing, so nothing a viewer
sends reaches the arm. The same encoded bytes as the MCAP file go out (same topics and schemas,
so the shipped layout works live too).

It used to be foxglove-sdk's server, which has no login and no Origin check: a cross-site page
read every channel (commands and client names included), and 300 idle connections cut the arm
loop from 151 to 34 cycles/s (issue 33). This server, on ``websockets``, holds the panel's rules
(docs/security.md):

* **a launch token in the URL** (``ws://127.0.0.1:PORT/?token=...``): random per process, compared
  in constant time, printed to the operator's terminal only (never logged); without it the
  handshake gets 401;
* **an Origin check**: a browser page may connect only from ``https://app.foxglove.dev`` or an
  origin given with ``--foxglove-origin`` (scheme, host and port compared); a client that sends
  no Origin (Foxglove desktop, scripts) still needs the token;
* **a connection cap** (``max_clients``, refused with 503 beyond it);
* **readers that cannot slow the arm**: the recorder's writer thread (never the control thread)
  hands each frame to a bounded per-client queue (``backlog`` frames, oldest dropped) and wakes
  the client's sender on this server's own thread; a slow or stalled reader loses frames, the
  writer never waits.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import ipaddress
import json
import logging
import secrets
import struct
import threading
from collections import deque
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hebictl.errors import ConfigError, InstallationError
from hebictl.recording import schemas
from hebictl.recording.schemas import Topic

log = logging.getLogger(__name__)

#: sub-protocols of Foxglove's live WebSocket connection (the SDK's name first)
SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")
#: the Foxglove web app: the one browser origin allowed by default
FOXGLOVE_APP_ORIGIN = "https://app.foxglove.dev"
#: a client's own messages (subscribe, unsubscribe) are small: anything bigger closes it
MAX_CLIENT_MESSAGE = 64 * 1024
MAX_SUBSCRIPTIONS = 64


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind address unless the operator allowed it explicitly."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError as exc:
        raise ConfigError(f"--foxglove-host {host!r} is not an IP address") from exc
    if not loopback and not allow_remote:
        raise ConfigError(f"--foxglove-host {host} is not a loopback address: the Foxglove protocol has no login "
                          "beyond the launch token; add --foxglove-allow-remote only behind a reverse proxy with "
                          "TLS and a login (docs/recording.md)")


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` lower-cased, default ports dropped; ConfigError if it is not one."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username:
        raise ConfigError(f"--foxglove-origin {origin!r} is not an origin (scheme://host[:port])")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"--foxglove-origin {origin!r} has a bad port") from exc
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return f"{parts.scheme}://{host}" + ("" if port in (None, default) else f":{port}")


class Reader:
    """One connected viewer: its subscriptions (channel id -> subscription id) and its bounded
    queue of frames waiting to be sent (oldest dropped)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, backlog: int) -> None:
        self.loop = loop
        self.subscriptions: dict[int, int] = {}
        self.frames: deque[bytes] = deque(maxlen=backlog)
        self.wake = asyncio.Event()
        self.pending = False
        self.dropped = 0

    def offer(self, channel: int, t_ns: int, data: bytes) -> None:
        """Called on the writer thread: queue a frame, wake the sender once (never blocks)."""
        sub = self.subscriptions.get(channel)
        if sub is None:
            return
        if len(self.frames) == self.frames.maxlen:
            self.dropped += 1
        self.frames.append(struct.pack("<BIQ", 1, sub, t_ns) + data)
        if not self.pending:
            self.pending = True
            with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                self.loop.call_soon_threadsafe(self.wake.set)


class LiveView:
    """A Foxglove WebSocket server with one channel per recorded topic (see the module docstring)."""

    def __init__(self, topics: tuple[Topic, ...], *, host: str = "127.0.0.1", port: int = 8765,
                 allow_remote: bool = False, name: str = "hebictl", origins: list[str] | tuple[str, ...] = (),
                 max_clients: int = 4, backlog: int = 256) -> None:
        check_host(host, allow_remote)
        if max_clients < 1:
            raise ConfigError(f"--foxglove-max-clients must be >= 1, got {max_clients}")
        try:
            import websockets  # noqa: F401  (the live extra)
        except ImportError as exc:
            raise InstallationError("--foxglove needs websockets: pip install 'hebictl[live]'") from exc
        self.name = name
        self.origins = frozenset({FOXGLOVE_APP_ORIGIN, *(normalize_origin(o) for o in origins)})
        self.max_clients = max_clients
        self.backlog = backlog
        self.token = secrets.token_urlsafe(24)
        self.stats = {"refused_token": 0, "refused_origin": 0, "refused_cap": 0, "frames_dropped": 0}
        self.channels: dict[str, int] = {}
        self._advertise: list[dict[str, Any]] = []
        for i, t in enumerate(topics, start=1):
            data = schemas.schema_bytes(t)
            protobuf = t.encoding == "protobuf"
            self.channels[t.name] = i
            self._advertise.append({"id": i, "topic": t.name, "encoding": t.encoding, "schemaName": t.schema,
                                    "schema": base64.b64encode(data).decode() if protobuf else data.decode(),
                                    "schemaEncoding": "protobuf" if protobuf else "jsonschema"})
        self._readers: tuple[Reader, ...] = ()   # replaced, never mutated: the writer thread iterates it
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port = port
        self._thread = threading.Thread(target=self._serve_thread, args=(host, port), name="hebictl-foxglove",
                                        daemon=True)
        self._thread.start()
        self._ready.wait(10.0)
        if self._error is not None:
            raise ConfigError(f"cannot serve Foxglove on {host}:{port}: {self._error}") from self._error
        shown = f"[{host}]" if ":" in host else host
        self.url = f"ws://{shown}:{self.port}"
        log.info("Foxglove live view on %s (token required)", self.url)

    @property
    def secret_url(self) -> str:
        """The URL with the launch token: for the operator's terminal only."""
        return f"{self.url}/?token={self.token}"

    @property
    def readers(self) -> tuple[Reader, ...]:
        """The viewers connected now."""
        return self._readers

    # ------------------------------------------------------------------ writer thread side
    def emit(self, topic: str, t_ns: int, data: bytes) -> None:
        channel = self.channels.get(topic)
        if channel is None:
            return
        for reader in self._readers:
            reader.offer(channel, t_ns, data)

    def describe(self, t_ns: int, urdf: str) -> None:
        """(Re)send the URDF: a viewer that connects later gets it within a flush interval."""
        self.emit(schemas.ROBOT_DESCRIPTION.name, t_ns, json.dumps({"data": urdf}).encode())

    def close(self) -> None:
        loop, stop = self._loop, self._stop
        if stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        self._thread.join(10.0)

    # ------------------------------------------------------------------ server thread
    def _serve_thread(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve(host, port))
        except BaseException as exc:  # reported by __init__ when it happens before ready
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _serve(self, host: str, port: int) -> None:
        from websockets.asyncio.server import serve

        self._stop = asyncio.Event()
        async with serve(self._session, host, port, subprotocols=list(SUBPROTOCOLS),  # type: ignore[arg-type]
                         process_request=self._admit, max_size=MAX_CLIENT_MESSAGE, compression=None,
                         server_header=None) as server:
            self.port = int(next(iter(server.sockets)).getsockname()[1])
            self._ready.set()
            await self._stop.wait()

    def _admit(self, connection: Any, request: Any) -> Any:
        """Before the upgrade: the token, the Origin, the cap (a refusal costs one HTTP answer)."""
        from http import HTTPStatus

        given = parse_qs(urlsplit(request.path).query).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            self.stats["refused_token"] += 1
            return connection.respond(HTTPStatus.UNAUTHORIZED, "a token is required (printed by hebictl teleop)\n")
        origin = request.headers.get("Origin")
        if origin is not None:
            try:
                allowed = normalize_origin(origin) in self.origins
            except ConfigError:
                allowed = False
            if not allowed:
                self.stats["refused_origin"] += 1
                log.warning("refused a Foxglove connection from origin %r", origin[:100])
                return connection.respond(HTTPStatus.FORBIDDEN, "origin not allowed\n")
        if len(self._readers) >= self.max_clients:
            self.stats["refused_cap"] += 1
            return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE,
                                      f"at most {self.max_clients} live viewers (--foxglove-max-clients)\n")
        return None

    async def _session(self, ws: Any) -> None:
        with self._lock:
            if len(self._readers) >= self.max_clients:  # two handshakes raced past _admit
                self.stats["refused_cap"] += 1
                await ws.close(1013, "too many viewers")
                return
            reader = Reader(asyncio.get_running_loop(), self.backlog)
            self._readers = (*self._readers, reader)
        sender = asyncio.create_task(self._send(ws, reader))
        try:
            await ws.send(json.dumps({"op": "serverInfo", "name": self.name, "capabilities": [],
                                      "supportedEncodings": [], "metadata": {},
                                      "sessionId": secrets.token_hex(8)}))
            await ws.send(json.dumps({"op": "advertise", "channels": self._advertise}))
            async for message in ws:
                self._client_message(reader, message)
        except Exception as exc:  # a viewer's connection ends however it ends; the arm never notices
            log.debug("Foxglove viewer left: %s", exc)
        finally:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
            with self._lock:
                self._readers = tuple(r for r in self._readers if r is not reader)
            self.stats["frames_dropped"] += reader.dropped

    def _client_message(self, reader: Reader, message: Any) -> None:
        """``subscribe`` / ``unsubscribe``; anything else is ignored (read-only)."""
        if not isinstance(message, str):
            return
        try:
            msg = json.loads(message)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        valid = set(self.channels.values())
        if msg.get("op") == "subscribe" and isinstance(msg.get("subscriptions"), list):
            for s in msg["subscriptions"][:MAX_SUBSCRIPTIONS]:
                if isinstance(s, dict) and s.get("channelId") in valid and isinstance(s.get("id"), int) \
                        and 0 <= s["id"] < 2**32 and len(reader.subscriptions) < MAX_SUBSCRIPTIONS:
                    reader.subscriptions = {**reader.subscriptions, s["channelId"]: s["id"]}
        elif msg.get("op") == "unsubscribe" and isinstance(msg.get("subscriptionIds"), list):
            gone = set(x for x in msg["subscriptionIds"] if isinstance(x, int))
            reader.subscriptions = {c: s for c, s in reader.subscriptions.items() if s not in gone}

    @staticmethod
    async def _send(ws: Any, reader: Reader) -> None:
        while True:
            await reader.wake.wait()
            reader.wake.clear()
            reader.pending = False
            while reader.frames:
                await ws.send(reader.frames.popleft())
