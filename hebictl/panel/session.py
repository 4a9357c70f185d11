"""One browser tab of the panel: its socket's messages in, its frames and notices out.

Everything a tab sends is hostile until :mod:`hebictl.panel.commands` has checked it; an e-stop
is published the moment it is parsed (never rate limited, never behind another command's PUBACK:
other commands run as tasks of their own, in arrival order); everything else is rate limited
per socket (:data:`RATE`). What waits to be sent to the tab is bounded: one slot per kind of
state message (a newer frame replaces an unsent one) and :data:`NOTICES` notices and acks.

The dead-man rule lives in the browser: each jog sample becomes exactly one ``cmd/jog`` with
``deadman: true`` and ``ttl`` = :data:`JOG_TTL`; the session never repeats or invents samples, and
sends the release when the tab says so or its socket closes.
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
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl.errors import CommandRejected, HebictlError
from hebictl.panel import commands
from hebictl.panel.auth import Operator
from hebictl.panel.commands import BadRequest
from hebictl.panel.groups import confirmed_members
from hebictl.panel.policy import allowed
from hebictl.teleop.admission import TokenBucket
from hebictl.teleop.state_schema import SCHEMAS

if TYPE_CHECKING:
    from hebictl.panel.server import PanelServer

log = logging.getLogger(__name__)

JOG_TTL = 0.2            # s: validity of one sample at the arm
JOG_PERIOD_MS = 40       # ms between samples while held (5 samples per ttl)
RATE = (100.0, 100.0)    # messages per second from one browser socket, burst
NOTICES = 64             # notices and acks waiting for one socket (the oldest is dropped beyond)
LINEAR_JOG = 0.1         # m/s at speed 1.0
ANGULAR_JOG = 0.5        # rad/s at speed 1.0


class Session:
    """One browser tab of an authenticated ``operator``."""

    def __init__(self, server: PanelServer, ws: Any, operator: Operator) -> None:
        self.server = server
        self.link = server.link
        self.ws = ws
        self.operator = operator
        self.arm: str | None = None
        self.watching: list[str] = []         # arms whose joints this tab reads: the selected one and its group
        self._watch_lock = asyncio.Lock()
        self.offset: float | None = None     # panel clock - browser clock [s]
        self.best_rtt = math.inf
        self.jogging = False
        self.ghost: dict[str, Any] | None = None
        self.show_shapes = False              # the tab draws the arm's collision shapes (frames carry them)
        self.next_frame = 0.0
        self.last_arms: str | None = None     # the arms list last sent, and when (monotonic s)
        self.last_arms_at = -math.inf
        self.last_input = -math.inf          # monotonic s of the last message other than a pong
        self.connected_at = time.monotonic()
        self.closing = False                 # replaced by a newer session (the server's cap)
        self.ended = False                   # the socket is gone: nothing is sent for this tab any more
        self.bucket = TokenBucket(*RATE, time.monotonic())
        self.dropped = 0                      # messages over the rate limit
        self.notices: collections.deque[str] = collections.deque(maxlen=NOTICES)
        self.slots: dict[str, str] = {}       # latest of each kind (frame, arms, description): newest wins
        self._wake = asyncio.Event()
        self._sent_description: int | None = None
        self._last_goal: list[float] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.delays: collections.deque[float] = collections.deque(maxlen=200)  # browser -> panel [s]
        self._delay_count = 0                  # samples appended to ``delays`` so far
        self._delay_stats: tuple[int, list[float] | None] = (0, None)

    # ------------------------------------------------------------------ outbound
    def post(self, msg: dict[str, Any]) -> None:
        """Queue a notice or ack (the oldest waiting one is dropped beyond :data:`NOTICES`)."""
        self.notices.append(json.dumps(json_safe(msg), allow_nan=False, default=str))
        self._wake.set()

    def put_slot(self, kind: str, text: str) -> None:
        self.slots[kind] = text
        self._wake.set()

    def put_frame(self, shared: str) -> None:
        view = self.link.arms.get(self.arm or "")
        if view is None:
            return
        if not self._watch_lock.locked() and self.wanted() != self.watching:
            self._spawn(self.rewatch())   # the selected arm's group was confirmed (or dissolved) since
        d = view.description
        if d is not None and self._sent_description != id(d):
            self._sent_description = id(d)
            self.put_slot("description", json.dumps(json_safe({"t": "description", "arm": view.arm_id, "d": {
                k: v for k, v in d.items() if k != "urdf"}}), allow_nan=False))
        if self._delay_stats[0] != self._delay_count:   # percentiles only when a jog sample came in
            self._delay_stats = (self._delay_count, [1000.0 * float(x) for x in np.percentile(self.delays, [50, 99])]
                                 if self.delays else None)
        own = {"allowed": self.allowed_controls(), "ghost": self.ghost, "operator": self.operator.id,
               "estop_owner": self.server.estop_owners.get(view.arm_id) and
               self.operator.id in self.server.estop_owners[view.arm_id],
               "link": {"rtt_ms": self.best_rtt * 1000.0, "browser_to_panel_ms": self._delay_stats[1]}}
        self.put_slot("frame", f'{{"t":"frame","s":{shared},"me":{json.dumps(json_safe(own), allow_nan=False)}}}')

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
            self.ended = True
            await self.rewatch()   # nothing wanted any more

    async def receive(self, raw: str | bytes) -> None:
        """One message from the browser: an e-stop at once; anything else within the rate limit."""
        received = time.time()
        try:
            msg = commands.parse(raw)
            if msg["t"] != "pong":
                self.last_input = time.monotonic()
            if msg["t"] == "cmd" and msg["name"] in commands.PRIORITY:
                await self.command(msg["name"], msg.get("body") or {}, received=received)
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
        elif kind == "view":
            self.show_shapes = bool(msg["shapes"])
        elif kind == "jog":
            await self.jog(msg)
        elif kind == "jog_release":
            await self.release_jog()
        elif kind == "input":
            await self.input(msg)
        elif kind == "cmd":
            await self.command(msg["name"], msg.get("body") or {})

    async def select(self, arm: str | None) -> None:
        """Show ``arm``: its joints and pose are read (:meth:`PanelLink.watch`), and those of the
        other arms of its confirmed group (:func:`~hebictl.panel.groups.confirmed_members`), which the
        scene draws beside it."""
        await self.release_jog()
        if arm is not None and arm not in self.link.arms:
            raise BadRequest(f"no arm {arm[:64]!r} on the broker")
        self.arm = arm
        await self.rewatch()
        self._sent_description = None
        self.ghost = None
        self.next_frame = 0.0

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def wanted(self) -> list[str]:
        """The arms this tab needs the joints of: the selected one and the others of its confirmed group."""
        arm = self.arm
        return [] if arm is None else [arm] + [m for m in confirmed_members(self.link.arms, arm) if m != arm]

    async def rewatch(self) -> None:
        """Watch what :meth:`wanted` says, no more (on a select, and when the selected arm's group is
        confirmed or dissolved later: :meth:`put_frame` asks for it). One at a time (the lock), so the
        link's per-arm counts stay right."""
        async with self._watch_lock:
            want = self.wanted() if not self.ended else []
            for old in [a for a in self.watching if a not in want]:
                await self.link.watch(old, on=False)
            for new in [a for a in want if a not in self.watching]:
                await self.link.watch(new)
            self.watching = want

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

    def allowed_controls(self) -> dict[str, bool]:
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
        if arm is None or view is None or not self.allowed_controls()["jog"]:
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
        self._delay_count += 1
        await self._send("jog", {"space": space, "velocity": velocity, "deadman": True, "ttl": JOG_TTL},
                         ts=ts, quiet=True)

    async def input(self, msg: dict[str, Any]) -> None:
        """One Mobile IO emulator sample (buttons, axes and, with "AR pose" on, the emulated phone's
        pose): ``cmd/input`` (QoS 0) while the arm's mode is ``app``; outside it the sample is dropped
        here (the page stops streaming when it sees the mode)."""
        body = commands.input_sample(msg["buttons"], msg["axes"], msg.get("pose"))
        if self.arm is None or self.arm not in self.link.arms or not self.allowed_controls()["input"]:
            return
        await self._send("input", body, ts=self._browser_ts(msg.get("c")), quiet=True)

    async def release_jog(self) -> None:
        if not self.jogging or self.arm is None:
            return
        self.jogging = False
        view = self.link.arms.get(self.arm)
        dof = int(((view.description if view else None) or {}).get("dof") or 6)
        with contextlib.suppress(Exception):
            await self._send("jog", {"space": "joint", "velocity": [0.0] * dof, "deadman": False}, quiet=True)

    async def command(self, name: str, body: dict[str, Any], *, received: float | None = None) -> None:
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
            elif not self.allowed_controls().get("estop_release"):
                self.post({"t": "notice", "level": "error", "text": "estop release is not allowed now"})
                return
            await self._send("estop", {"engaged": engaged}, received=received)
            return
        ok = self.allowed_controls()
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

    async def resend(self, arm: str, name: str, body: dict[str, Any]) -> None:
        """Send a command the arm refused as out of order again (:meth:`PanelLink._recover
        <hebictl.panel.link.PanelLink._recover>`), through every check a new one meets: this tab
        still open and on that arm, the e-stop's ownership, what the arm's state allows now. An
        e-stop release is never sent again."""
        if self.ended or self.closing or self.arm != arm or (name == "estop" and body.get("engaged") is False):
            return
        await self.command(name, body)

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

    async def _send(self, name: str, body: dict[str, Any], *, ts: float | None = None, quiet: bool = False,
                    received: float | None = None) -> None:
        """Publish one command for the selected arm; unless ``quiet``, tell the tab it went out
        (``sent``, with the panel's wall-clock times of the browser message's arrival ``rx`` and
        of the broker's PUBACK ``acked``: the e-stop's path through the panel, for the operator's
        link figures and the timing tests)."""
        arm = self.arm
        if arm is None:
            return
        view = self.link.arms.get(arm)
        if view is not None and view.writable is False and not (name == "estop" and body.get("engaged")):
            self.post({"t": "notice", "level": "error", "text": "read-only: this account may not command the arm"})
            return
        try:
            payload = await self.link.send(arm, name, body, ts=ts, operator=self.operator.id, resend=self.resend)
        except CommandRejected as exc:
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name} not sent: {exc}"})
            return
        except PermissionError as exc:
            self.post({"t": "notice", "level": "error", "text": str(exc)})
            return
        except TimeoutError:   # published, but the broker's PUBACK did not come back in time: it may have arrived
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name}: no acknowledgement from the broker "
                       "within 3 s; it may still have reached the arm: check its status"})
            return
        except Exception as exc:  # the broker is away (ConnectionError, MqttError): say so, never crash the session
            self.post({"t": "notice", "level": "error", "text": f"cmd/{name} not sent: {exc}"})
            return
        if not quiet:
            self.post({"t": "sent", "arm": arm, "name": name, "seq": payload["seq"], "rx": received,
                       "acked": time.time()})


def json_safe(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become None (the browser's JSON.parse has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
