"""The panel's web side: serves the page and one WebSocket per browser tab, and turns what the
operator does into teleop commands through :class:`~hebictl.panel.link.PanelLink`.

Why a small page of our own and not viser: see docs/panel.md ("Why not viser"). In short, the
operator station needs hold-to-move on keys as well as buttons and an e-stop on the space bar;
viser's client has no keyboard events and cannot be extended without rebuilding its bundle.

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
import itertools
import json
import logging
import math
import time
from http import HTTPStatus
from importlib import resources
from typing import Any

import numpy as np

from hebictl.errors import HebictlError
from hebictl.panel.kinematics import DescribedArm
from hebictl.panel.link import PanelLink
from hebictl.panel.policy import allowed

log = logging.getLogger(__name__)

JOG_TTL = 0.2            # s: validity of one sample at the arm
JOG_PERIOD_MS = 40       # ms between samples while held (5 samples per ttl)
FRAME_HZ = 30.0          # scene and status updates to each browser
LINEAR_JOG = 0.1         # m/s at speed 1.0
ANGULAR_JOG = 0.5        # rad/s at speed 1.0
GOAL_SPEED_FRACTION = 0.5  # goals: joints at most this fraction of their rated speed (as the arm plans)

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/panel.js": ("panel.js", "text/javascript"),
           "/panel.css": ("panel.css", "text/css")}


def min_duration(start: Any, goal: Any, vmax: Any) -> float:
    """Shortest duration [s] of a joint move from ``start`` to ``goal`` at ``GOAL_SPEED_FRACTION``
    of the rated speeds ``vmax`` (a minimum-jerk move peaks at 1.875 × the mean speed)."""
    s, g = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
    v = np.asarray([np.inf if x is None else x for x in vmax], dtype=float) * GOAL_SPEED_FRACTION
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(np.isfinite(s - g), np.abs(g - s) * 1.875 / v, 0.0)
    return float(np.nanmax(t, initial=0.0))


class PanelServer:
    """HTTP + WebSocket server of one panel. ``allowed_hosts`` are the ``Host`` headers accepted
    (DNS-rebinding guard); None accepts any (only with ``--allow-remote``)."""

    def __init__(self, link: PanelLink, host: str = "127.0.0.1", port: int = 8080, *,
                 allowed_hosts: set[str] | None = None) -> None:
        self.link = link
        self.host = host
        self.port = port
        self.allowed_hosts = allowed_hosts
        self.sessions: set[Session] = set()
        self.kin: dict[str, tuple[int, DescribedArm]] = {}
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
        if kind == "ack" and body.get("client") == self.link.name:
            for s in list(self.sessions):
                s.post({"t": "ack", "arm": arm_id, **body})

    # ------------------------------------------------------------------ HTTP
    def _process_request(self, connection: Any, request: Any) -> Any:
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        host = request.headers.get("Host", "")
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            return connection.respond(HTTPStatus.FORBIDDEN, f"unexpected Host header {host!r}\n")
        path = request.path.split("?", 1)[0]
        if path == "/ws":
            origin = request.headers.get("Origin")
            if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
                return connection.respond(HTTPStatus.FORBIDDEN, "cross-origin WebSocket refused\n")
            return None
        entry = _STATIC.get(path)
        if entry is None:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        name, ctype = entry
        body = resources.files("hebictl.panel").joinpath("static", name).read_bytes()
        headers = Headers([("Content-Type", ctype), ("Content-Length", str(len(body))),
                           ("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"),
                           ("Content-Security-Policy", "default-src 'self'; connect-src 'self'; "
                                                       "frame-ancestors 'none'")])
        return Response(200, "OK", headers, body)

    async def serve(self, started: asyncio.Event | None = None) -> None:
        """Serve until cancelled."""
        from websockets.asyncio.server import serve

        async with serve(self._handle, self.host, self.port, process_request=self._process_request,
                         ping_interval=2.0, ping_timeout=4.0, max_size=65536, compression=None) as srv:
            for sock in srv.sockets:
                self.port = sock.getsockname()[1]
            if started is not None:
                started.set()
            await asyncio.Future()

    async def _handle(self, ws: Any) -> None:
        session = Session(self, ws)
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)


class Session:
    """One browser tab."""

    def __init__(self, server: PanelServer, ws: Any) -> None:
        self.server = server
        self.link = server.link
        self.ws = ws
        self.arm: str | None = None
        self.offset: float | None = None     # panel clock - browser clock [s]
        self.best_rtt = math.inf
        self.jogging = False
        self.ghost: list[float] | None = None
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=200)
        self._sent_description: int | None = None
        self.delays: collections.deque[float] = collections.deque(maxlen=200)  # browser -> panel [s]

    def post(self, msg: dict[str, Any]) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.outbox.put_nowait(msg)

    async def run(self) -> None:
        settings = self.link.settings
        self.post({"t": "hello", "client": self.link.name, "broker": settings.url, "user": settings.username,
                   "jog_period_ms": JOG_PERIOD_MS, "jog_ttl": JOG_TTL})
        tasks = [asyncio.create_task(self._frames()), asyncio.create_task(self._pings()),
                 asyncio.create_task(self._writer())]
        try:
            async for raw in self.ws:
                try:
                    msg = json.loads(raw)
                    if isinstance(msg, dict):
                        await self.handle(msg)
                except (ValueError, TypeError, KeyError, IndexError, HebictlError) as exc:
                    self.post({"t": "notice", "level": "error", "text": f"bad request: {exc}"})
        except Exception as exc:  # connection lost: the release below still goes out
            log.info("panel: browser connection ended: %s", exc)
        finally:
            for t in tasks:
                t.cancel()
            await self.release_jog()
            if self.arm is not None:
                await self.link.watch(self.arm, on=False)

    async def _writer(self) -> None:
        while True:
            msg = await self.outbox.get()
            await self.ws.send(json.dumps(msg, allow_nan=False, default=str))

    async def _pings(self) -> None:
        for i in itertools.count():
            self.post({"t": "ping", "s": time.time()})
            await asyncio.sleep(0.2 if i < 5 else 2.0)

    # ------------------------------------------------------------------ inbound
    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg.get("t")
        if kind == "pong":
            now = time.time()
            rtt = now - float(msg["s"])
            if 0 <= rtt <= self.best_rtt * 1.5 or self.offset is None:
                self.best_rtt = min(self.best_rtt, rtt)
                self.offset = (float(msg["s"]) + rtt / 2.0) - float(msg["c"])
        elif kind == "select":
            await self.release_jog()
            if self.arm is not None:
                await self.link.watch(self.arm, on=False)
            self.arm = str(msg["arm"]) if msg.get("arm") else None
            if self.arm is not None:
                await self.link.watch(self.arm)
            self._sent_description = None
            self.ghost = None
        elif kind == "ghost":
            self.ghost = [float(x) for x in msg["q"]] if msg.get("q") else None
        elif kind == "jog":
            await self.jog(msg)
        elif kind == "jog_release":
            await self.release_jog()
        elif kind == "cmd":
            await self.command(str(msg["name"]), dict(msg.get("body") or {}))

    def _allowed(self) -> dict[str, bool]:
        view = self.link.arms.get(self.arm or "")
        return allowed(view.status if view else None, writable=view.writable if view else None)

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
        dof = int((view.description or {}).get("dof") or len((view.joints or {}).get("position") or []))
        space, axis, sign = str(msg["space"]), int(msg["axis"]), 1.0 if float(msg["dir"]) >= 0 else -1.0
        scale = min(max(float(msg.get("speed", 0.2)), 0.0), 1.0)
        if space == "joint":
            if not 0 <= axis < dof:
                return
            vmax = ((view.description or {}).get("joints") or {}).get("velocity_max") or []
            rated = vmax[axis] if axis < len(vmax) and vmax[axis] is not None else 0.5
            velocity = [0.0] * dof
            velocity[axis] = sign * scale * min(float(rated), 3.0)
        elif space == "cartesian":
            if not 0 <= axis < 6:
                return
            velocity = [0.0] * 6
            velocity[axis] = sign * scale * (LINEAR_JOG if axis < 3 else ANGULAR_JOG)
        else:
            return
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
            return
        ok = self._allowed()
        key = {"estop": "estop_release" if body.get("engaged") is False else "estop"}.get(name, name)
        if not ok.get(key, False):
            self.post({"t": "notice", "level": "error", "text": f"{name} is not allowed now"})
            return
        if name == "estop":
            body = {"engaged": body.get("engaged") is not False}
        elif name == "mode":
            body = {"mode": str(body["mode"])}
        elif name == "gripper":
            body = {"action": str(body["action"])} if "action" in body else {"position": float(body["position"])}
        elif name == "stop":
            body = {}
        elif name in ("joint_goal", "home"):
            body = self._joint_goal(view, body, home=name == "home")
            if body is None:
                return
            name = "joint_goal"
        elif name == "cartesian_goal":
            body = {k: [float(x) for x in body[k]] for k in ("position", "orientation") if body.get(k)} | (
                {"duration": float(body["duration"])} if body.get("duration") else {})
        else:
            self.post({"t": "notice", "level": "error", "text": f"unknown command {name!r}"})
            return
        await self._send(name, body)

    def _joint_goal(self, view: Any, body: dict[str, Any], *, home: bool) -> dict[str, Any] | None:
        d = view.description or {}
        joints = d.get("joints") or {}
        target = d.get("home") if home else body.get("positions")
        if not target:
            self.post({"t": "notice", "level": "error", "text": "no home position in the arm's description"
                       if home else "no positions"})
            return None
        q = [float(x) for x in target]
        lo = [-math.inf if x is None else x for x in joints.get("position_min") or [None] * len(q)]
        hi = [math.inf if x is None else x for x in joints.get("position_max") or [None] * len(q)]
        bad = [i for i, x in enumerate(q) if not lo[i] <= x <= hi[i]]
        if bad:
            names = joints.get("names") or []
            self.post({"t": "notice", "level": "error", "text": "outside the joint limits: "
                       + ", ".join(names[i] if i < len(names) else str(i) for i in bad)})
            return None
        current = (view.joints or {}).get("position") or q
        need = min_duration([np.nan if x is None else x for x in current], q, joints.get("velocity_max") or [])
        duration = body.get("duration")
        if duration is None or home:
            duration = max(need, 0.5)
        duration = float(duration)
        if duration < need:
            self.post({"t": "notice", "level": "error", "text": f"too fast: this move needs at least {need:.2f} s "
                       f"at {GOAL_SPEED_FRACTION:.0%} of the rated speeds"})
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
            payload = await self.link.send(arm, name, body, ts=ts)
        except PermissionError as exc:
            self.post({"t": "notice", "level": "error", "text": str(exc)})
            return
        except Exception as exc:  # the broker is away (ConnectionError, MqttError): say so, never crash the session
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name} not sent: {exc}"})
            return
        if not quiet:
            self.post({"t": "sent", "arm": arm, "name": name, "seq": payload["seq"]})

    # ------------------------------------------------------------------ outbound
    async def _frames(self) -> None:
        period = 1.0 / FRAME_HZ
        last_arms = 0.0
        while True:
            now = time.monotonic()
            if now - last_arms > 0.5:
                last_arms = now
                self.post({"t": "arms", "arms": [
                    {"id": a, "status": (v.status or {}).get("status"), "writable": v.writable,
                     "backend": (v.description or {}).get("backend"), "config": (v.description or {}).get("config")}
                    for a, v in sorted(self.link.arms.items())], "connected": self.link.connected.is_set()})
            if self.arm is not None:
                self._frame()
            await asyncio.sleep(period)

    def _frame(self) -> None:
        view = self.link.arms.get(self.arm or "")
        if view is None:
            return
        d = view.description
        if d is not None and self._sent_description != id(d):
            self._sent_description = id(d)
            self.post({"t": "description", "arm": view.arm_id,
                       "d": {k: v for k, v in d.items() if k not in ("urdf", "tree")}})
        kin = self.server.kinematics(view.arm_id)
        q = (view.joints or {}).get("position") or []
        frame: dict[str, Any] = {"t": "frame", "arm": view.arm_id, "q": q, "status": view.status,
                                 "writable": view.writable, "allowed": self._allowed(),
                                 "events": list(view.events)[:10], "ee_pose": view.ee_pose,
                                 "joints_ts": (view.joints or {}).get("ts"),
                                 "link": {"rtt_ms": self.best_rtt * 1000.0, "browser_to_panel_ms": [
                                     1000.0 * float(x) for x in np.percentile(self.delays, [50, 99])]
                                     if self.delays else None}}
        if kin is not None and q:
            poses = kin.body_poses(q)
            ee = kin.end_effector(q, poses)
            frame.update(segs=kin.segments(poses), pts=kin.joint_points(poses),
                         ee=[[float(v) for v in row] for row in ee[:3]])
            if self.ghost is not None and len(self.ghost) == len(q):
                gp = kin.body_poses(self.ghost)
                frame["ghost"] = kin.segments(gp)
                frame["ghost_ee"] = [float(v) for v in kin.end_effector(self.ghost, gp)[:3, 3]]
        self.post(_finite(frame))


def _finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become None (the browser's JSON.parse has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
