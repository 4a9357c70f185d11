"""The panel's web side: serves the page and one WebSocket per browser tab, and turns what the
operator does into teleop commands through :class:`~hebictl.panel.link.PanelLink`.

Why a small page of our own and not viser: see docs/panel.md ("Why not viser"). In short, the
operator station needs hold-to-move on keys as well as buttons and an e-stop on the space bar;
viser's client has no keyboard events and cannot be extended without rebuilding its bundle.

**Who gets in** is decided by :mod:`hebictl.panel.auth`: the Host and Origin checks and the
launch secret (or a browser's cookie) before a WebSocket is accepted, then a browser's key as its
first message (:data:`AUTH_TIMEOUT`) before a session exists. Refusals are counted per peer
address and, beyond :data:`REFUSALS`, answered at once without the gate's work. At most
``max_sessions`` sessions are open at once: a newcomer that has shown its key replaces the
session used least recently, never one whose operator holds an engaged e-stop (a handshake alone
never replaces anyone).

**The e-stop comes first.** Every tab's socket is read by its own task, and an e-stop (engage or
release) is published from that task the moment it is parsed: no queue, no rate limit, no
other work of the panel in front of it. What could delay it is the event loop being busy, so the
rest is bounded: each socket may send :data:`~hebictl.panel.session.RATE` messages per second (more are dropped and
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
import errno
import json
import logging
import math
import socket
import time
from http import HTTPStatus
from importlib import resources
from typing import Any

import numpy as np

from hebictl.errors import ConfigError
from hebictl.panel import commands
from hebictl.panel.auth import Gate, Operator
from hebictl.panel.groups import confirmed_members, overview
from hebictl.panel.kinematics import DescribedArm
from hebictl.panel.link import PanelLink
from hebictl.panel.session import JOG_PERIOD_MS, JOG_TTL, Session, json_safe
from hebictl.teleop.admission import TokenBucket

__all__ = ["JOG_PERIOD_MS", "JOG_TTL", "PanelServer"]

log = logging.getLogger(__name__)

FRAME_HZ = 30.0          # scene and status updates to each browser
FRAME_BUDGET = 400.0     # frames per second to all browsers together (each gets min(FRAME_HZ, share))
ACTIVE = 60.0            # s after its last input a tab counts as an operator's (full frame rate) ...
MAX_ACTIVE = 8           # ... for at most this many tabs, the most recently used
AUTH_TIMEOUT = 3.0       # s for a browser's socket to send its key (its first message)
REFUSALS = (5.0, 30.0)   # refused requests per second from one peer address, burst; beyond: 429 at once
PEERS = 1024             # peer addresses whose refusals are counted (the least recent is forgotten)

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/panel.js": ("panel.js", "text/javascript"),
           "/panel.css": ("panel.css", "text/css")}
_HEADERS = [("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", "default-src 'self'; connect-src 'self'; frame-ancestors 'none'")]
LOGIN_PAGE = """<!doctype html><meta charset="utf-8"><title>hebictl panel</title>
<p>This panel needs the link with its launch token, which <code>hebictl panel</code> printed when it started
(<code>http://HOST:PORT/?token=...</code>). Open that link once; this browser is then remembered until the panel
restarts.</p>"""
_FILES: dict[str, bytes] = {}   # the static files, read once (a request must not cost a disk read)


def _static(name: str) -> bytes:
    data = _FILES.get(name)
    if data is None:
        data = _FILES[name] = resources.files("hebictl.panel").joinpath("static", name).read_bytes()
    return data


class PanelServer:
    """HTTP + WebSocket server of one panel, behind ``gate`` (:class:`~hebictl.panel.auth.Gate`).

    ``max_sessions`` caps the open sockets (see :meth:`_evict`); ``shared_estop_release`` lets any operator release an
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
        self.refused = collections.Counter[str]()      # why connections were refused (or evicted)
        self._closing: set[asyncio.Task[Any]] = set()
        self._pending: dict[int, tuple[Operator, float]] = {}  # connection id -> operator, from handshake to handler
        self._peers: collections.OrderedDict[str, TokenBucket] = collections.OrderedDict()  # refusals per peer
        self._waiting: collections.OrderedDict[int, Any] = collections.OrderedDict()  # sockets waiting for a key
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
                if s.arm == arm_id and body.get("client") == self.link.client_name(s.operator.id):
                    s.on_ack(arm_id, body)

    # ------------------------------------------------------------------ e-stop ownership
    def may_release(self, arm_id: str, operator: str) -> bool:
        owners = self.estop_owners.get(arm_id)
        return self.shared_estop_release or not owners or operator in owners

    def holds_estop(self, operator: str) -> bool:
        """Whether ``operator`` engaged an e-stop that is still engaged on some arm."""
        return any(operator in owners for owners in self.estop_owners.values())

    @staticmethod
    def _peer(connection: Any) -> str:
        try:
            return str(connection.remote_address[0])
        except (TypeError, IndexError, AttributeError):
            return "unix"

    def _throttled(self, connection: Any) -> bool:
        """Whether this peer address has used up its refusals (:data:`REFUSALS`); spends one."""
        peer = self._peer(connection)
        now = time.monotonic()
        bucket = self._peers.get(peer)
        if bucket is None:
            bucket = self._peers[peer] = TokenBucket(*REFUSALS, now)
            while len(self._peers) > PEERS:
                self._peers.popitem(last=False)
        self._peers.move_to_end(peer)
        return not bucket.take(now)

    # ------------------------------------------------------------------ HTTP
    def _process_request(self, connection: Any, request: Any) -> Any:
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        def refuse(status: HTTPStatus, text: str, why: str) -> Any:
            # each refusal spends one of the peer's; beyond them, the answer is 429 (see above)
            if self._throttled(connection):
                why, status, text = "throttled", HTTPStatus.TOO_MANY_REQUESTS, "too many refused requests\n"
            self.refused[why] += 1
            return connection.respond(status, text)

        headers = request.headers
        bucket = self._peers.get(self._peer(connection))
        if bucket is not None and bucket.tokens + (time.monotonic() - bucket.last) * bucket.rate < 1.0 \
                and not self._credentials(headers, request.path):
            # this peer's refusals are used up and the request carries nothing that could let it in: answered
            # before any of the gate's work (a peer address is shared by every local user, so a request that
            # shows a credential is still checked: a flood must not lock out the operator's own browser)
            self.refused["throttled"] += 1
            return connection.respond(HTTPStatus.TOO_MANY_REQUESTS, "too many refused requests\n")
        if any(len(headers.get_all(h)) > 1 for h in ("Host", "Origin", "Cookie", "Authorization")):
            return refuse(HTTPStatus.BAD_REQUEST, "repeated header\n", "header")
        if not self.gate.host_ok(headers.get("Host")):
            return refuse(HTTPStatus.FORBIDDEN, "unexpected Host header\n", "host")
        path = request.path.split("?", 1)[0]
        if path == "/ws":
            if not self.gate.origin_ok(headers.get("Origin"), headers.get("Host")):
                return refuse(HTTPStatus.FORBIDDEN, "cross-origin WebSocket refused\n", "origin")
            op = self.gate.operator(request.headers, request.path)
            if op is None:
                return refuse(HTTPStatus.UNAUTHORIZED, "the panel's launch token is needed\n", "token")
            now = time.monotonic()
            for key in [k for k, (_, at) in self._pending.items() if now - at > 10.0]:
                del self._pending[key]  # handshakes that never completed
            if len(self._pending) + len(self._waiting) >= self.max_sessions:
                if not self._waiting:
                    return refuse(HTTPStatus.SERVICE_UNAVAILABLE, "too many panel sessions\n", "cap")
                # the socket that has waited longest without showing its key goes (a browser shows it at
                # once): sockets on a stolen cookie cannot hold the door shut
                _, stale = self._waiting.popitem(last=False)
                self.refused["key_wait"] += 1
                self._spawn_close(stale, 1008, "not authenticated")
            self._pending[id(connection)] = (op, now)
            return None   # a session only once the handler has its key (a browser) and a place (the cap)
        token = self.gate.query_token(request.path)
        nonce = self.gate.query(request.path, "nonce")
        if path == "/" and (token is not None or nonce is not None):
            if not (self.gate.token_ok(token) if token is not None else self.gate.redeem(nonce)):
                return refuse(HTTPStatus.UNAUTHORIZED, "wrong or used link\n", "token")
            _, cookie, page_key = self.gate.admit()
            # the key goes in the fragment: the browser keeps it (per origin) and never sends it in a request
            return Response(303, "See Other", Headers([("Location", f"/#k={page_key}"), ("Set-Cookie", cookie),
                                                       ("Content-Length", "0"), *_HEADERS]), b"")
        entry = _STATIC.get(path)
        if entry is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        name, ctype = entry
        body = _static(name)
        status = (200, "OK")
        if path == "/" and self.gate.operator(request.headers, "/") is None:
            body, ctype, status = LOGIN_PAGE.encode(), "text/html; charset=utf-8", (401, "Unauthorized")
        headers = Headers([("Content-Type", ctype), ("Content-Length", str(len(body))), *_HEADERS])
        return Response(*status, headers, body)

    def _credentials(self, headers: Any, path: str) -> bool:
        """Cheap look: does the request carry anything that could authenticate it?"""
        return (self.gate.cookie_name in (headers.get("Cookie") or "") or "Authorization" in headers
                or "token=" in path or "nonce=" in path)

    def _evict(self, for_browser: bool) -> bool:
        """Make room at the cap: a script's session (token only) used least recently goes first;
        a browser that opened the launch link may also replace the browser tab used least
        recently, a script never replaces a browser tab, and no one replaces a tab whose operator
        holds an engaged e-stop. The closed tab's jog is released. So sessions opened with the
        token cannot lock out the operator's browser, and the number of sockets stays bounded.
        False when nothing may be replaced (the newcomer is refused)."""
        live = [s for s in self.sessions if not s.closing and not self.holds_estop(s.operator.id)]
        pool = [s for s in live if not s.operator.browser] or (live if for_browser else [])
        if not pool:
            return False
        victim = min(pool, key=lambda s: max(s.last_input, s.connected_at))
        victim.closing = True
        self.refused["evicted"] += 1
        self._spawn_close(victim.ws, 1013, "replaced by a newer panel session")
        return True

    def _spawn_close(self, ws: Any, code: int, reason: str) -> None:
        task = asyncio.get_running_loop().create_task(ws.close(code, reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def serve(self, started: asyncio.Event | None = None) -> None:
        """Serve until cancelled. A port in use or a host that does not resolve is a ConfigError."""
        import os

        from websockets.asyncio.server import serve, unix_serve

        # close_timeout: a tab that does not answer the closing handshake (frozen, or gone without a
        # FIN) is dropped after 1 s, not websockets' default 10 s, which held up the panel's exit
        options = {"process_request": self._process_request, "ping_interval": 2.0, "ping_timeout": 4.0,
                   "close_timeout": 1.0, "max_size": commands.MAX_MESSAGE, "max_queue": 16, "compression": None,
                   "ssl": self.ssl}
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
        op = entry[0]
        if op.browser and not await self._key(ws, op):
            return
        if sum(not s.closing for s in self.sessions) >= self.max_sessions and not self._evict(op.browser):
            self.refused["cap"] += 1
            await ws.close(1013, "too many panel sessions")
            return
        session = Session(self, ws, op)
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    async def _key(self, ws: Any, op: Operator) -> bool:
        """A browser's first message must be ``{"t": "auth", "k": <its key>}`` within
        :data:`AUTH_TIMEOUT` s: the cookie alone (which every server on this host can receive) gets
        nothing. Closed with 1008 otherwise, counted as refused."""
        self._waiting[id(ws)] = ws
        try:
            raw = await asyncio.wait_for(ws.recv(), AUTH_TIMEOUT)
            msg = json.loads(raw) if isinstance(raw, str) and len(raw) < 1024 else None
            ok = isinstance(msg, dict) and msg.get("t") == "auth" and self.gate.key_ok(op, msg.get("k"))
        except Exception:   # timeout, a closed socket (e.g. displaced by a newer one), not JSON
            ok = False
        finally:
            self._waiting.pop(id(ws), None)
        if not ok:
            self.refused["key"] += 1
            self._throttled(ws)   # spends one of the peer's refusals
            await ws.close(1008, "not authenticated: open the link hebictl panel printed")
        return ok

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
            # every arm's card and the confirmed groups (hebictl/panel/groups.py): the overview of every arm
            arms = json.dumps(json_safe({"t": "arms", **overview(self.link.arms, now),
                                         "connected": self.link.connected.is_set(),
                                         "warnings": self.link.warnings, "dropped": self.link.dropped}),
                              allow_nan=False)
            for s in sessions:   # only when it changed (or every 5 s): 300 tabs x 2/s was half the traffic
                if s.last_arms != arms or now - s.last_arms_at > 5.0:
                    s.last_arms, s.last_arms_at = arms, now
                    s.put_slot("arms", arms)
        watching = [s for s in sessions if s.arm is not None]
        if not watching:
            return
        # the MAX_ACTIVE tabs used most recently (within ACTIVE s) get every frame; the others share the rest
        # ... the tabs of an operator holding an e-stop and browsers before scripts (whatever those send)
        ranked = sorted(watching, key=lambda s: (self.holds_estop(s.operator.id), s.operator.browser, s.last_input),
                        reverse=True)[:MAX_ACTIVE]
        active = {id(s) for s in ranked if now - s.last_input < ACTIVE}
        idle_share = max(1.0 / FRAME_HZ, (len(watching) - len(active)) / (FRAME_BUDGET - FRAME_HZ * MAX_ACTIVE))
        shared: dict[tuple[str, bool], str | None] = {}
        for s in watching:
            if now < s.next_frame:
                continue
            period = 1.0 / FRAME_HZ if id(s) in active else idle_share
            s.next_frame = max(s.next_frame + period, now)
            key = (s.arm or "", s.show_shapes)
            if key not in shared:
                shared[key] = self._shared_frame(*key)
            frame = shared[key]
            if frame is not None:
                s.put_frame(frame)

    def _shared_frame(self, arm_id: str, shapes: bool = False) -> str | None:
        """The JSON of what every tab showing ``arm_id`` sees (the per-tab part is added by the
        session); with ``shapes``, also the arm's collision shapes posed in the world (the
        description's ``collision_shapes`` on the bodies' poses), for tabs that draw them."""
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
                if shapes:
                    frame["shapes"] = self._posed_shapes(view.description or {}, poses)
            except (ValueError, IndexError, TypeError) as exc:
                log.warning("panel: cannot draw %s: %s", arm_id, exc)
        others = self._group_scene(arm_id)
        if others:
            frame["others"] = others
        return json.dumps(json_safe(frame), allow_nan=False)

    def _group_scene(self, arm_id: str) -> list[dict[str, Any]]:
        """The other arms of ``arm_id``'s confirmed group (:func:`~hebictl.panel.groups.confirmed_members`)
        as stick figures in ``arm_id``'s base frame: each at its measured joints, placed by the
        descriptions' ``world_base`` (the multi-arm config's base poses in its shared world frame);
        with each arm's e-stop and group hold, to colour it. An arm without a world base, joints or a
        description that can be drawn is left out."""
        view = self.link.arms.get(arm_id)
        own = (view.description or {}).get("world_base") if view is not None else None
        members = confirmed_members(self.link.arms, arm_id)
        if own is None or not members:
            return []
        try:
            to_own = np.linalg.inv(np.asarray(own, dtype=np.float64))
        except np.linalg.LinAlgError:
            return []
        out = []
        for other_id in members:
            other = self.link.arms[other_id]
            base = (other.description or {}).get("world_base")
            q = (other.joints or {}).get("position")
            kin = self.kinematics(other_id)
            if other_id == arm_id or base is None or not q or kin is None:
                continue
            T = to_own @ np.asarray(base, dtype=np.float64)
            if not np.all(np.isfinite(T)):
                continue
            try:
                poses = kin.body_poses(q)
                segs = np.asarray(kin.segments(poses), dtype=np.float64).reshape(-1, 2, 3)
                pts = np.asarray(kin.joint_points(poses), dtype=np.float64).reshape(-1, 3)
            except (ValueError, IndexError, TypeError) as exc:
                log.warning("panel: cannot draw %s beside %s: %s", other_id, arm_id, exc)
                continue
            st = other.status or {}
            out.append({"arm": other_id, "segs": (segs @ T[:3, :3].T + T[:3, 3]).reshape(-1, 6).tolist(),
                        "pts": (pts @ T[:3, :3].T + T[:3, 3]).tolist(), "base": T[:3, 3].tolist(),
                        "estop": bool(st.get("estop")), "held": bool((st.get("group") or {}).get("held")),
                        "offline": other.offline})
        return out

    @staticmethod
    def _posed_shapes(description: dict[str, Any], poses: Any) -> list[dict[str, Any]]:
        """Each collision shape of the description at its body's world pose: kind, size, 3x4 pose."""
        out = []
        for sh in description.get("collision_shapes") or []:
            if not 0 <= sh["body"] < len(poses):
                continue
            T = poses[sh["body"]] @ np.asarray(sh["pose"], dtype=np.float64)
            if np.all(np.isfinite(T)):
                out.append({"k": sh["kind"], "s": sh["size"], "T": [[float(v) for v in row] for row in T[:3]]})
        return out
