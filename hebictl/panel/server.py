"""The panel's web side: serves the page and one WebSocket per browser tab, and turns what the
operator does into teleop commands through :class:`~hebictl.panel.link.PanelLink`.

Why a small page of our own and not viser: see docs/panel.md ("Why not viser"). In short, the
operator station needs hold-to-move on keys as well as buttons and an e-stop on the space bar;
viser's client has no keyboard events and cannot be extended without rebuilding its bundle.

**Who gets in** is decided by :mod:`hebictl.panel.auth` before a WebSocket is accepted (the
launch secret, the Host and Origin checks); at most ``max_sessions`` sockets are open at once.

**The e-stop comes first.** Every tab's socket is read by its own task, and an e-stop (engage or
release) is published from that task the moment it is parsed: no queue, no rate limit, no
other work of the panel in front of it. What could delay it is the event loop being busy, so the
rest is bounded: each socket may send :data:`RATE` messages per second (more are dropped and
counted); frames are built once per arm and tick, not once per tab, and a tab receives at most
``FRAME_HZ`` of them, fewer when many tabs share the :data:`FRAME_BUDGET`; what waits to be sent
to a tab is one frame slot (a newer frame replaces an unsent one) and a short queue of notices.

The dead-man rule lives in the browser, where the hand is: while a jog button or key is held the
page sends one sample every ``JOG_PERIOD`` ms and the server forwards each sample as exactly one
``cmd/jog`` with ``deadman: true`` and ``ttl`` = :data:`JOG_TTL` - it never repeats or invents
samples. Releasing sends ``deadman: false`` at once; a closed tab closes the socket, which sends
the release too; a browser that vanishes silently just stops sending, and the arm's ttl brakes.
Each sample's ``ts`` is the moment the browser produced it, converted to the panel's clock with
an offset measured by ping/pong, so the arm's freshness check and the latency measurement of the
tests see the whole path from the operator's hand.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import itertools
import json
import logging
import math
import socket
import time
from http import HTTPStatus
from importlib import resources
from typing import Any

import numpy as np

from hebictl.errors import CommandRejected, ConfigError, HebictlError
from hebictl.panel import commands
from hebictl.panel.auth import Gate, Operator
from hebictl.panel.commands import BadRequest
from hebictl.panel.kinematics import DescribedArm
from hebictl.panel.link import PanelLink
from hebictl.panel.policy import allowed
from hebictl.teleop.admission import TokenBucket
from hebictl.teleop.state_schema import SCHEMAS

log = logging.getLogger(__name__)

JOG_TTL = 0.2            # s: validity of one sample at the arm
JOG_PERIOD_MS = 40       # ms between samples while held (5 samples per ttl)
FRAME_HZ = 30.0          # scene and status updates to each browser
FRAME_BUDGET = 600.0     # frames per second to all browsers together (each gets min(FRAME_HZ, share))
ACTIVE = 60.0            # s after its last input a tab counts as an operator's (full frame rate) ...
MAX_ACTIVE = 8           # ... for at most this many tabs, the most recently used
RATE = (100.0, 100.0)    # messages per second from one browser socket, burst
NOTICES = 64             # notices and acks waiting for one socket (the oldest is dropped beyond)
LINEAR_JOG = 0.1         # m/s at speed 1.0
ANGULAR_JOG = 0.5        # rad/s at speed 1.0

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/panel.js": ("panel.js", "text/javascript"),
           "/panel.css": ("panel.css", "text/css")}
_HEADERS = [("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", "default-src 'self'; connect-src 'self'; frame-ancestors 'none'")]
LOGIN_PAGE = """<!doctype html><meta charset="utf-8"><title>hebictl panel</title>
<p>This panel needs the link with its launch token, which <code>hebictl panel</code> printed when it started
(<code>http://HOST:PORT/?token=...</code>). Open that link once; this browser is then remembered until the panel
restarts.</p>"""


class PanelServer:
    """HTTP + WebSocket server of one panel, behind ``gate`` (:class:`~hebictl.panel.auth.Gate`).

    ``max_sessions`` caps the open sockets; ``shared_estop_release`` lets any operator release an
    e-stop another operator engaged (by default only the one who engaged it may)."""

    def __init__(self, link: PanelLink, host: str = "127.0.0.1", port: int = 8080, *, gate: Gate | None = None,
                 max_sessions: int = 50, shared_estop_release: bool = False, ssl: Any = None,
                 unix_path: str | None = None) -> None:
        self.link = link
        self.host = host
        self.port = port
        self.gate = gate if gate is not None else Gate({"127.0.0.1", "localhost", "::1"}, port_hint=port)
        self.max_sessions = max_sessions
        self.shared_estop_release = shared_estop_release
        self.ssl = ssl
        self.unix_path = unix_path   # serve on this Unix socket (mode 0600) instead of host:port
        self.sessions: set[Session] = set()
        self.kin: dict[str, tuple[int, DescribedArm]] = {}
        self.estop_owners: dict[str, set[str]] = {}   # arm -> operators whose e-stop is engaged
        self.refused = collections.Counter[str]()      # why connections were refused
        self._pending: dict[int, tuple[Operator, float]] = {}  # connection id -> operator, from handshake to handler
        link.listeners.append(self._on_message)

    def kinematics(self, arm_id: str) -> DescribedArm | None:
        view = self.link.arms.get(arm_id)
        if view is None or not view.description:
            return None
        key = id(view.description)
        cached = self.kin.get(arm_id)
        if cached is None or cached[0] != key:
            try:
                cached = self.kin[arm_id] = (key, DescribedArm(view.description["tree"]))
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                log.warning("panel: cannot draw %s: bad description (%s)", arm_id, exc)
                return None
        return cached[1]

    def _on_message(self, arm_id: str, kind: str, body: dict[str, Any]) -> None:
        if kind == "status" and not body.get("estop"):
            self.estop_owners.pop(arm_id, None)  # released (by anyone) or a restarted arm
        if kind == "ack" and self.link.is_ours(body.get("client")):
            for s in list(self.sessions):
                if body.get("client") == self.link.client_name(s.operator.id):
                    s.on_ack(arm_id, body)

    # ------------------------------------------------------------------ e-stop ownership
    def may_release(self, arm_id: str, operator: str) -> bool:
        owners = self.estop_owners.get(arm_id)
        return self.shared_estop_release or not owners or operator in owners

    # ------------------------------------------------------------------ HTTP
    def _process_request(self, connection: Any, request: Any) -> Any:
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        def refuse(status: HTTPStatus, text: str, why: str) -> Any:
            self.refused[why] += 1
            return connection.respond(status, text)

        headers = request.headers
        if any(len(headers.get_all(h)) > 1 for h in ("Host", "Origin", "Cookie", "Authorization")):
            return refuse(HTTPStatus.BAD_REQUEST, "repeated header\n", "header")
        if not self.gate.host_ok(headers.get("Host")):
            return refuse(HTTPStatus.FORBIDDEN, "unexpected Host header\n", "host")
        path = request.path.split("?", 1)[0]
        if path == "/ws":
            if not self.gate.origin_ok(headers.get("Origin")):
                return refuse(HTTPStatus.FORBIDDEN, "cross-origin WebSocket refused\n", "origin")
            op = self.gate.operator(request.headers, request.path)
            if op is None:
                return refuse(HTTPStatus.UNAUTHORIZED, "the panel's launch token is needed\n", "token")
            now = time.monotonic()
            for key in [k for k, (_, at) in self._pending.items() if now - at > 10.0]:
                del self._pending[key]  # handshakes that never completed
            if len(self.sessions) + len(self._pending) >= self.max_sessions:
                return refuse(HTTPStatus.SERVICE_UNAVAILABLE, "too many panel sessions\n", "cap")
            self._pending[id(connection)] = (op, now)
            return None
        token = self.gate.query_token(request.path)
        if path == "/" and token is not None:
            if not self.gate.token_ok(token):
                return refuse(HTTPStatus.UNAUTHORIZED, "wrong token\n", "token")
            _, cookie = self.gate.admit()
            return Response(303, "See Other", Headers([("Location", "/"), ("Set-Cookie", cookie),
                                                       ("Content-Length", "0"), *_HEADERS]), b"")
        entry = _STATIC.get(path)
        if entry is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        name, ctype = entry
        body = resources.files("hebictl.panel").joinpath("static", name).read_bytes()
        status = (200, "OK")
        if path == "/" and self.gate.operator(request.headers, "/") is None:
            body, ctype, status = LOGIN_PAGE.encode(), "text/html; charset=utf-8", (401, "Unauthorized")
        headers = Headers([("Content-Type", ctype), ("Content-Length", str(len(body))), *_HEADERS])
        return Response(*status, headers, body)

    async def serve(self, started: asyncio.Event | None = None) -> None:
        """Serve until cancelled. A port in use or a host that does not resolve is a ConfigError."""
        import os

        from websockets.asyncio.server import serve, unix_serve

        options = {"process_request": self._process_request, "ping_interval": 2.0, "ping_timeout": 4.0,
                   "max_size": commands.MAX_MESSAGE, "max_queue": 16, "compression": None, "ssl": self.ssl}
        try:
            if self.unix_path is not None:
                old = os.umask(0o177)  # the socket is created 0600: only this user may connect
                try:
                    srv = await unix_serve(self._handle, self.unix_path, **options)
                finally:
                    os.umask(old)
                os.chmod(self.unix_path, 0o600)
            else:
                srv = await serve(self._handle, self.host, self.port, **options)
            async with srv:
                if self.unix_path is None:
                    for sock in srv.sockets:
                        self.port = sock.getsockname()[1]
                if started is not None:
                    started.set()
                ticker = asyncio.create_task(self._tick())
                try:
                    await asyncio.Future()
                finally:
                    ticker.cancel()
        except socket.gaierror as exc:
            raise ConfigError(f"cannot serve the panel on --host {self.host!r}: {exc.strerror or exc}",
                              key="host") from None
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {self.port} on {self.host} is already in use (another panel?); "
                                  "choose another with --port (0: any free port)", key="port") from None
            if exc.errno in (errno.EADDRNOTAVAIL, errno.EACCES):
                raise ConfigError(f"cannot serve the panel on {self.host}:{self.port}: {exc.strerror}",
                                  key="host") from None
            raise

    async def _handle(self, ws: Any) -> None:
        entry = self._pending.pop(id(ws), None)
        if entry is None:  # a handshake older than 10 s: authenticate again
            await ws.close(1008, "not authenticated")
            return
        session = Session(self, ws, entry[0])
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    # ------------------------------------------------------------------ frames, once per arm and tick
    async def _tick(self) -> None:
        """Build each shown arm's frame once per tick and hand it to the tabs that are due."""
        period = 1.0 / FRAME_HZ
        last_arms = -math.inf
        while True:
            started = time.monotonic()
            try:
                self._tick_once(started, started - last_arms > 0.5)
                if started - last_arms > 0.5:
                    last_arms = started
            except Exception:  # a frame that cannot be built must not stop the others
                log.exception("panel: building frames failed")
            await asyncio.sleep(max(period - (time.monotonic() - started), 0.005))

    def _tick_once(self, now: float, arms_due: bool) -> None:
        sessions = list(self.sessions)
        if arms_due:
            arms = json.dumps({"t": "arms", "arms": [
                {"id": a, "status": (v.status or {}).get("status"), "writable": v.writable,
                 "offline": v.offline, "backend": (v.description or {}).get("backend"),
                 "config": (v.description or {}).get("config")}
                for a, v in sorted(self.link.arms.items())], "connected": self.link.connected.is_set(),
                "warnings": self.link.warnings, "dropped": self.link.dropped})
            for s in sessions:
                s.put_slot("arms", arms)
        watching = [s for s in sessions if s.arm is not None]
        if not watching:
            return
        # the MAX_ACTIVE tabs used most recently (within ACTIVE s) get every frame; the others share the rest
        ranked = sorted(watching, key=lambda s: s.last_input, reverse=True)[:MAX_ACTIVE]
        active = {id(s) for s in ranked if now - s.last_input < ACTIVE}
        idle_share = max(1.0 / FRAME_HZ, (len(watching) - len(active)) / (FRAME_BUDGET - FRAME_HZ * MAX_ACTIVE))
        shared: dict[str, str | None] = {}
        for s in watching:
            if now < s.next_frame:
                continue
            period = 1.0 / FRAME_HZ if id(s) in active else idle_share
            s.next_frame = max(s.next_frame + period, now)
            arm = s.arm or ""
            if arm not in shared:
                shared[arm] = self._shared_frame(arm)
            if shared[arm] is not None:
                s.put_frame(shared[arm])  # type: ignore[arg-type]

    def _shared_frame(self, arm_id: str) -> str | None:
        """The JSON of what every tab showing ``arm_id`` sees (the per-tab part is added by the session)."""
        view = self.link.arms.get(arm_id)
        if view is None:
            return None
        q = (view.joints or {}).get("position") or []
        frame: dict[str, Any] = {"arm": arm_id, "q": q, "status": view.status, "writable": view.writable,
                                 "events": list(view.events)[:12], "ee_pose": view.ee_pose,
                                 "joints": None if view.joints is None else {
                                     k: v for k, v in view.joints.items() if k in ("ts", "position")},
                                 "health": view.health(time.monotonic())}
        kin = self.kinematics(arm_id)
        if kin is not None and q:
            try:
                poses = kin.body_poses(q)
                ee = kin.end_effector(q, poses)
                frame.update(segs=kin.segments(poses), pts=kin.joint_points(poses),
                             ee=[[float(v) for v in row] for row in ee[:3]])
            except (ValueError, IndexError, TypeError) as exc:
                log.warning("panel: cannot draw %s: %s", arm_id, exc)
        return json.dumps(_finite(frame), allow_nan=False)


class Session:
    """One browser tab of an authenticated ``operator``."""

    def __init__(self, server: PanelServer, ws: Any, operator: Operator) -> None:
        self.server = server
        self.link = server.link
        self.ws = ws
        self.operator = operator
        self.arm: str | None = None
        self.offset: float | None = None     # panel clock - browser clock [s]
        self.best_rtt = math.inf
        self.jogging = False
        self.ghost: dict[str, Any] | None = None
        self.next_frame = 0.0
        self.last_input = -math.inf          # monotonic s of the last message other than a pong
        self.bucket = TokenBucket(*RATE, time.monotonic())
        self.dropped = 0                      # messages over the rate limit
        self.notices: collections.deque[str] = collections.deque(maxlen=NOTICES)
        self.slots: dict[str, str] = {}       # latest of each kind (frame, arms, description): newest wins
        self._wake = asyncio.Event()
        self._sent_description: int | None = None
        self._last_goal: list[float] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.delays: collections.deque[float] = collections.deque(maxlen=200)  # browser -> panel [s]

    # ------------------------------------------------------------------ outbound
    def post(self, msg: dict[str, Any]) -> None:
        """Queue a notice or ack (the oldest waiting one is dropped beyond :data:`NOTICES`)."""
        self.notices.append(json.dumps(_finite(msg), allow_nan=False, default=str))
        self._wake.set()

    def put_slot(self, kind: str, text: str) -> None:
        self.slots[kind] = text
        self._wake.set()

    def put_frame(self, shared: str) -> None:
        view = self.link.arms.get(self.arm or "")
        if view is None:
            return
        d = view.description
        if d is not None and self._sent_description != id(d):
            self._sent_description = id(d)
            self.put_slot("description", json.dumps(_finite({"t": "description", "arm": view.arm_id, "d": {
                k: v for k, v in d.items() if k != "urdf"}}), allow_nan=False))
        own = {"allowed": self._allowed(), "ghost": self.ghost, "operator": self.operator.id,
               "estop_owner": self.server.estop_owners.get(view.arm_id) and
               self.operator.id in self.server.estop_owners[view.arm_id],
               "link": {"rtt_ms": self.best_rtt * 1000.0, "browser_to_panel_ms": [
                   1000.0 * float(x) for x in np.percentile(self.delays, [50, 99])] if self.delays else None}}
        self.put_slot("frame", f'{{"t":"frame","s":{shared},"me":{json.dumps(_finite(own), allow_nan=False)}}}')

    async def _writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.notices or self.slots:
                if self.notices:  # acks and notices first, then the newest of each slot
                    text = self.notices.popleft()
                else:
                    kind = next(iter(self.slots))
                    text = self.slots.pop(kind)
                await self.ws.send(text)

    async def _pings(self) -> None:
        for i in itertools.count():
            self.post({"t": "ping", "s": time.time()})
            await asyncio.sleep(0.2 if i < 5 else 2.0)

    def on_ack(self, arm_id: str, body: dict[str, Any]) -> None:
        msg = {"t": "ack", "arm": arm_id, **body}
        if body.get("reason") == "too_fast" and body.get("topic") == "joint_goal" and self._last_goal is not None:
            offer = self._shortest(arm_id, self._last_goal)
            if offer is not None:
                msg["offer"] = {"duration": commands.offered_duration(offer * 1.1)}
        self.post(msg)

    # ------------------------------------------------------------------ inbound
    async def run(self) -> None:
        settings = self.link.settings
        self.post({"t": "hello", "client": self.link.client_name(self.operator.id), "broker": settings.url,
                   "user": settings.username, "jog_period_ms": JOG_PERIOD_MS, "jog_ttl": JOG_TTL,
                   "operator": self.operator.id, "schemas": SCHEMAS})
        tasks = [asyncio.create_task(self._pings()), asyncio.create_task(self._writer())]
        try:
            async for raw in self.ws:
                await self.receive(raw)
        except Exception as exc:  # connection lost: the release below still goes out
            log.info("panel: browser connection ended: %s", exc)
        finally:
            for t in tasks:
                t.cancel()
            await self.release_jog()
            if self.arm is not None:
                await self.link.watch(self.arm, on=False)

    async def receive(self, raw: str | bytes) -> None:
        """One message from the browser: an e-stop at once; anything else within the rate limit."""
        try:
            msg = commands.parse(raw)
            if msg["t"] != "pong":
                self.last_input = time.monotonic()
            if msg["t"] == "cmd" and msg["name"] in commands.PRIORITY:
                await self.command(msg["name"], msg.get("body") or {})
                return
            if not self.bucket.take(time.monotonic()):
                self.dropped += 1
                if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                    self.post({"t": "notice", "level": "error",
                               "text": f"too many messages: {self.dropped} dropped (limit {RATE[0]:g}/s)"})
                return
            if msg["t"] == "cmd":  # published in arrival order, but never awaited here: the
                task = asyncio.create_task(self._guarded(msg))  # next e-stop is read at once
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                return
            await self.handle(msg)
        except (BadRequest, CommandRejected) as exc:
            self.post({"t": "notice", "level": "error", "text": f"bad request: {exc}"})
        except HebictlError as exc:
            self.post({"t": "notice", "level": "error", "text": str(exc)})

    async def _guarded(self, msg: dict[str, Any]) -> None:
        try:
            await self.handle(msg)
        except HebictlError as exc:
            self.post({"t": "notice", "level": "error", "text": f"bad request: {exc}"})
        except Exception as exc:  # a bug must cost one command, never the session
            log.exception("panel: %s failed", msg.get("name"))
            self.post({"t": "notice", "level": "error", "text": f"{msg.get('name')} failed: {exc}"})

    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg["t"]
        if kind == "pong":
            now = time.time()
            rtt = now - msg["s"]
            if 0 <= rtt <= self.best_rtt * 1.5 or self.offset is None:
                self.best_rtt = min(self.best_rtt, max(rtt, 0.0))
                self.offset = (msg["s"] + rtt / 2.0) - msg["c"]
        elif kind == "select":
            await self.select(msg.get("arm"))
        elif kind == "ghost":
            self.ghost = self._ghost(msg.get("q"))
        elif kind == "jog":
            await self.jog(msg)
        elif kind == "jog_release":
            await self.release_jog()
        elif kind == "cmd":
            await self.command(msg["name"], msg.get("body") or {})

    async def select(self, arm: str | None) -> None:
        await self.release_jog()
        if arm is not None and arm not in self.link.arms:
            raise BadRequest(f"no arm {arm[:64]!r} on the broker")
        if self.arm is not None:
            await self.link.watch(self.arm, on=False)
        self.arm = arm
        if arm is not None:
            await self.link.watch(arm)
        self._sent_description = None
        self.ghost = None
        self.next_frame = 0.0

    def _ghost(self, q: Any) -> dict[str, Any] | None:
        """The ghost arm (drawn where the sliders would take it), computed once per change."""
        if q is None or self.arm is None:
            return None
        values = commands.numbers(q, "q")
        view = self.link.arms.get(self.arm)
        kin = self.server.kinematics(self.arm)
        if kin is None or view is None or len(values) != (view.description or {}).get("dof"):
            return None
        poses = kin.body_poses(values)
        return {"segs": kin.segments(poses), "ee": [float(v) for v in kin.end_effector(values, poses)[:3, 3]]}

    def _allowed(self) -> dict[str, bool]:
        view = self.link.arms.get(self.arm or "")
        out = allowed(view.status if view else None, writable=view.writable if view else None)
        if view is not None and (view.offline or view.health(time.monotonic())["stale"]):
            out = {k: k == "estop" for k in out}
        if out.get("estop_release") and not self.server.may_release(self.arm or "", self.operator.id):
            out["estop_release"] = False
        return out

    def _browser_ts(self, c: Any) -> float:
        """A browser timestamp on the panel's clock (never in the future, never older than 1 s)."""
        now = time.time()
        if c is None or self.offset is None:
            return now
        ts = float(c) + self.offset
        return min(now, ts) if now - ts < 1.0 else now

    async def jog(self, msg: dict[str, Any]) -> None:
        arm = self.arm
        view = self.link.arms.get(arm or "")
        if arm is None or view is None or not self._allowed()["jog"]:
            if self.jogging:
                await self.release_jog()
            return
        sign = commands.jog_direction(msg["dir"])
        scale = commands.number(msg.get("speed", 0.2), "speed", 0.0, 1.0)
        space, axis = msg["space"], msg["axis"]
        dof = int((view.description or {}).get("dof") or len((view.joints or {}).get("position") or []))
        if space == "joint":
            if not 0 <= axis < dof:
                raise BadRequest(f"no joint {axis}")
            vmax = ((view.description or {}).get("joints") or {}).get("velocity_max") or []
            rated = vmax[axis] if axis < len(vmax) and vmax[axis] is not None else 0.5
            velocity = [0.0] * dof
            velocity[axis] = sign * scale * min(float(rated), 3.0)
        elif space == "cartesian":
            if not 0 <= axis < 6:
                raise BadRequest(f"no Cartesian axis {axis}")
            velocity = [0.0] * 6
            velocity[axis] = sign * scale * (LINEAR_JOG if axis < 3 else ANGULAR_JOG)
        else:
            raise BadRequest("'space' must be joint or cartesian")
        self.jogging = True
        ts = self._browser_ts(msg.get("c"))
        self.delays.append(time.time() - ts)
        await self._send("jog", {"space": space, "velocity": velocity, "deadman": True, "ttl": JOG_TTL},
                         ts=ts, quiet=True)

    async def release_jog(self) -> None:
        if not self.jogging or self.arm is None:
            return
        self.jogging = False
        view = self.link.arms.get(self.arm)
        dof = int(((view.description if view else None) or {}).get("dof") or 6)
        with contextlib.suppress(Exception):
            await self._send("jog", {"space": "joint", "velocity": [0.0] * dof, "deadman": False}, quiet=True)

    async def command(self, name: str, body: dict[str, Any]) -> None:
        arm = self.arm
        view = self.link.arms.get(arm or "")
        if arm is None or view is None:
            self.post({"t": "notice", "level": "error", "text": f"{name}: no arm selected"})
            return
        if name == "estop":
            engaged = body.get("engaged") is not False
            if engaged:
                self.server.estop_owners.setdefault(arm, set()).add(self.operator.id)
            elif not self.server.may_release(arm, self.operator.id):
                self.post({"t": "notice", "level": "error", "text": "this e-stop was engaged by another operator: "
                           "only they can release it"})
                return
            elif not self._allowed().get("estop_release"):
                self.post({"t": "notice", "level": "error", "text": "estop release is not allowed now"})
                return
            await self._send("estop", {"engaged": engaged})
            return
        ok = self._allowed()
        if not ok.get(name, False):
            self.post({"t": "notice", "level": "error", "text": f"{name} is not allowed now"})
            return
        if name == "mode":
            body = {"mode": body.get("mode")}
        elif name == "gripper":
            body = {"action": body.get("action")} if "action" in body else {"position": body.get("position")}
        elif name == "stop":
            body = {}
        elif name in ("joint_goal", "home"):
            goal = self._joint_goal(view, body, home=name == "home")
            if goal is None:
                return
            body, name = goal, "joint_goal"
        elif name == "cartesian_goal":
            out: dict[str, Any] = {"position": commands.numbers(body.get("position"), "position", 3)}
            if body.get("orientation") is not None:
                out["orientation"] = commands.numbers(body["orientation"], "orientation", 4)
            if body.get("duration") is not None:
                out["duration"] = commands.number(body["duration"], "duration", 0.0)
            body = out
        else:
            self.post({"t": "notice", "level": "error", "text": f"unknown command {name[:40]!r}"})
            return
        await self._send(name, body)

    def _shortest(self, arm: str, q: list[float]) -> float | None:
        view = self.link.arms.get(arm)
        if view is None:
            return None
        d = view.description or {}
        current = (view.joints or {}).get("position") or q
        amax = (d.get("stop_behaviours") or {}).get("rated_deceleration")
        return commands.min_duration(current, q, (d.get("joints") or {}).get("velocity_max") or [], amax)

    def _joint_goal(self, view: Any, body: dict[str, Any], *, home: bool) -> dict[str, Any] | None:
        d = view.description or {}
        joints = d.get("joints") or {}
        if home and not view.description_verified and (view.status or {}).get("description_sha256"):
            self.post({"t": "notice", "level": "error", "text": "Home is off: the arm's description is not verified"})
            return None
        target = d.get("home") if home else body.get("positions")
        if not target:
            self.post({"t": "notice", "level": "error", "text": "no home position in the arm's description"
                       if home else "no positions"})
            return None
        q = commands.numbers(target, "positions", int(d.get("dof") or len(target)))
        lo = [-math.inf if x is None else x for x in joints.get("position_min") or [None] * len(q)]
        hi = [math.inf if x is None else x for x in joints.get("position_max") or [None] * len(q)]
        bad = [i for i, x in enumerate(q) if not lo[i] <= x <= hi[i]]
        if bad:
            names = joints.get("names") or []
            self.post({"t": "notice", "level": "error", "text": "outside the joint limits: "
                       + ", ".join(names[i] if i < len(names) else str(i) for i in bad)})
            return None
        self._last_goal = q
        duration = None if home else body.get("duration")
        if duration is None:
            return {"positions": q}   # the arm times it from its limits
        duration = commands.number(duration, "duration", 0.0)
        need = self._shortest(view.arm_id, q) or 0.0
        if duration < need:
            offer = commands.offered_duration(need)
            self.post({"t": "notice", "level": "error", "offer": {"duration": offer},
                       "text": f"too fast for the arm: this move needs at least {offer:.2f} s "
                               "(its rated speed and acceleration)"})
            return None
        return {"positions": q, "duration": duration}

    async def _send(self, name: str, body: dict[str, Any], *, ts: float | None = None, quiet: bool = False) -> None:
        arm = self.arm
        if arm is None:
            return
        view = self.link.arms.get(arm)
        if view is not None and view.writable is False and not (name == "estop" and body.get("engaged")):
            self.post({"t": "notice", "level": "error", "text": "read-only: this account may not command the arm"})
            return
        try:
            payload = await self.link.send(arm, name, body, ts=ts, operator=self.operator.id)
        except CommandRejected as exc:
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name} not sent: {exc}"})
            return
        except PermissionError as exc:
            self.post({"t": "notice", "level": "error", "text": str(exc)})
            return
        except Exception as exc:  # the broker is away (ConnectionError, MqttError): say so, never crash the session
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name} not sent: {exc}"})
            return
        if not quiet:
            self.post({"t": "sent", "arm": arm, "name": name, "seq": payload["seq"]})


def _finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become None (the browser's JSON.parse has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
