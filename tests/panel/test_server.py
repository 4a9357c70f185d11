"""The panel server against a real mosquitto and a stand-in arm (an MQTT client publishing a
description, status and joints, and recording every command it receives), reached with real
WebSocket and HTTP clients: who gets in (launch token, Host, Origin, session cap), what reaches
the arm (validated commands only, one operator's e-stop released only by them), and that hostile
input never closes a session or stops its frames."""

from __future__ import annotations

import asyncio
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hebictl.panel.auth import Gate
from hebictl.panel.link import PanelLink
from hebictl.panel.server import PanelServer
from hebictl.panel.session import JOG_TTL
from hebictl.teleop.broker import LocalBroker
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.state_schema import payload_sha256

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]
HANG = 60.0   # s: how long a wait for an event may take before the test calls it a hang (never a bound)

EYE = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
UP = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0.2], [0, 0, 0, 1.0]]
DESCRIPTION = {"dof": 2, "arm_id": "arm1", "backend": "stand-in",
               "joints": {"names": ["J1", "J2"], "position_min": [-3, -3], "position_max": [3, 3],
                          "velocity_max": [1.0, 1.0]},
               "home": [0.5, 0.5], "stop_behaviours": {"rated_deceleration": [5.0, 5.0]},
               "tree": {"base": EYE, "bodies": [
                   {"name": "a", "parent": -1, "placement": EYE, "joint": {"kind": "revolute", "axis": [0, 0, 1],
                                                                          "scale": 1.0, "index": 0}},
                   {"name": "b", "parent": 0, "placement": UP, "joint": {"kind": "revolute", "axis": [0, 1, 0],
                                                                        "scale": 1.0, "index": 1}}],
                        "end_effector": [{"body": 1, "offset": UP}]},
               "collision_shapes": [{"body": 1, "kind": "capsule", "size": [0.02, 0.05],
                                     "pose": [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0.1], [0, 0, 0, 1.0]]}]}


class StandIn:
    """An arm on the broker: retained description and status (with the description's hash),
    joints at 50 Hz, and every command it receives."""

    def __init__(self, port: int, estop: bool = False) -> None:
        self.port = port
        self.commands: list[tuple[float, str, dict[str, Any]]] = []
        self.status = {"status": "online", "state": "hold", "mode": "jog", "estop": estop, "session": "s1"}
        self.raw = json.dumps(DESCRIPTION).encode()

    async def run(self) -> None:
        import aiomqtt

        async with aiomqtt.Client(hostname="127.0.0.1", port=self.port, identifier="stand-in") as c:
            self.client = c
            await c.subscribe("hebictl/v1/arm1/cmd/#", qos=1)
            await c.publish("hebictl/v1/arm1/state/description", self.raw, qos=1, retain=True)
            await self.publish_status()
            pump = asyncio.create_task(self._joints(c))
            try:
                async for msg in c.messages:
                    if msg.payload:
                        self.commands.append((time.time(), msg.topic.value.rsplit("/", 1)[1], json.loads(msg.payload)))
            finally:
                pump.cancel()

    async def publish_status(self) -> None:
        body = {**self.status, "ts": time.time(), "description_sha256": payload_sha256(self.raw)}
        await self.client.publish("hebictl/v1/arm1/state/status", json.dumps(body), qos=1, retain=True)

    async def _joints(self, c: Any) -> None:
        while True:
            await c.publish("hebictl/v1/arm1/state/joints", json.dumps({"ts": time.time(), "position": [0.1, 0.2]}))
            await asyncio.sleep(0.02)


@asynccontextmanager
async def panel(broker: LocalBroker, *, estop: bool = False, hosts: set[str] | None = None,
                **kw: Any) -> AsyncIterator[tuple[PanelServer, StandIn]]:
    arm = StandIn(broker.port, estop)
    link = PanelLink(parse_broker(broker.url), name="panel-test")
    gate = Gate(hosts or {"127.0.0.1", "localhost", "::1"})
    server = PanelServer(link, "127.0.0.1", 0, gate=gate, **kw)
    started = asyncio.Event()
    tasks = [asyncio.create_task(arm.run()), asyncio.create_task(link.run()),
             asyncio.create_task(server.serve(started))]
    await started.wait()
    # the arm's status, its description and the write probe; not its joints: the link subscribes to an
    # arm's 50 Hz topics only once a session watches it (waiting for them here cost every test 5 s).
    # The status is waited for too: the broker may hand the retained description first, and until the
    # status announces its hash the description is held unverified (CI once asserted in between)
    await until(lambda: (view := link.arms.get("arm1")) is not None and view.description is not None
                and view.status is not None and view.writable is not None)
    try:
        yield server, arm
    finally:
        link.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def connect(server: PanelServer, *, token: str | None = None, headers: dict[str, str] | None = None,
                  origin: str | None = None, host: str = "127.0.0.1") -> Any:
    """A WebSocket to the panel; ``host`` is the name in the URL and Host header (the TCP
    connection always goes to 127.0.0.1)."""
    from websockets.asyncio.client import connect as ws_connect

    url = f"ws://{host}:{server.port}/ws" + (f"?token={token}" if token else "")
    return await ws_connect(url, additional_headers=headers or {}, origin=origin, open_timeout=HANG,  # type: ignore[arg-type]
                            host="127.0.0.1", port=server.port)


def login(server: PanelServer, path: str | None = None) -> tuple[str, str]:
    """What a browser gets from the launch link: its cookie (``name=value``) and, from the
    redirect's fragment, its key."""
    status, headers = _http(server, path or f"/?token={server.gate.token}")
    assert status == 303 and headers["Location"].startswith("/#k="), (status, headers["Location"])
    return headers["Set-Cookie"].split(";")[0], headers["Location"][len("/#k="):]


async def browser(server: PanelServer, cookie: str, key: str | None, **kw: Any) -> Any:
    """A browser's socket: its cookie in the upgrade, its key as the first message."""
    ws = await connect(server, headers={"Cookie": cookie}, origin=f"http://127.0.0.1:{server.port}", **kw)
    if key is not None:
        await ws.send(json.dumps({"t": "auth", "k": key}))
    return ws


async def session(server: PanelServer) -> Any:
    ws = await connect(server, token=server.gate.token)
    await ws.send(json.dumps({"t": "select", "arm": "arm1"}))
    await until(lambda: any(s.arm == "arm1" for s in server.sessions))
    return ws


async def until(pred: Callable[[], Any], timeout: float = HANG) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


async def frames(ws: Any, n: int) -> list[dict[str, Any]]:
    out = []
    while len(out) < n:
        m = json.loads(await asyncio.wait_for(ws.recv(), HANG))
        if m["t"] == "frame":
            out.append(m)
    return out


async def notice(ws: Any, text: str) -> dict[str, Any]:
    """Read ``ws`` up to the panel's notice containing ``text`` (frames in between are skipped)."""
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), HANG))
        if m["t"] == "notice" and text in m.get("text", ""):
            return m


def run(scenario: Callable[[LocalBroker], Awaitable[None]], broker: LocalBroker) -> None:
    asyncio.run(asyncio.wait_for(scenario(broker), 4 * HANG))


def _http(server: PanelServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a: Any, **k: Any) -> None:
            return None

    req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=HANG) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


# ---------------------------------------------------------------------- who gets in
def test_without_the_launch_token_no_socket_and_no_command(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        from websockets.exceptions import InvalidStatus

        async with panel(b) as (server, arm):
            for kw in ({}, {"token": "guess"}, {"headers": {"Cookie": f"{server.gate.cookie_name}=forged"}}):
                with pytest.raises(InvalidStatus) as exc:   # attack 2: no Origin, no credentials
                    await connect(server, **kw)
                assert exc.value.response.status_code == 401
            # refused in the handshake (counted before the 401 went out): no socket, so nothing to send; that
            # nothing reached the arm is shown below, where the first command the arm gets is the browser's
            assert server.refused["token"] == 3
            # the browser's way in: the token link sets a cookie and redirects to a URL without it, the key in
            # the fragment (which no browser sends to a server)
            status, headers = await asyncio.to_thread(_http, server, f"/?token={server.gate.token}")
            assert status == 303 and headers["Location"].startswith("/#k=")
            cookie = headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert cookie.startswith(f"hebictl-panel-0-{server.gate.launch_id}=")   # a name of this launch only
            value = cookie.split(";")[0]
            assert (await asyncio.to_thread(_http, server, "/"))[0] == 401
            assert (await asyncio.to_thread(_http, server, "/", {"Cookie": value}))[0] == 200
            ws = await browser(server, value, headers["Location"][len("/#k="):])
            await ws.send(json.dumps({"t": "select", "arm": "arm1"}))
            await ws.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": True}}))
            await until(lambda: arm.commands)
            assert len(arm.commands) == 1, arm.commands
            assert arm.commands[0][1] == "estop" and arm.commands[0][2]["client"].startswith("panel-test/")
            await ws.close()

    run(scenario, broker)


def test_foreign_host_and_origin_are_refused_also_with_allow_remote(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        from websockets.exceptions import InvalidStatus

        async with panel(b, hosts={"panel.lab"}) as (server, _):   # what --allow-remote --allowed-host panel.lab makes
            assert (await asyncio.to_thread(_http, server, "/panel.js", {"Host": "panel.lab:8080"}))[0] == 200
            for host in ("evil.example", "evil.example:8080", "127.0.0.1"):  # attack 8: DNS rebinding
                assert (await asyncio.to_thread(_http, server, "/panel.js", {"Host": host}))[0] == 403, host
            token = server.gate.token
            # another port of the right host is another origin (issue 33, attack 2), as is another scheme
            for origin in ("http://evil.example", "http://panel.lab.evil.example", "null", "http://panel.lab:8080",
                           f"https://panel.lab:{server.port}", "http://panel.lab"):
                with pytest.raises(InvalidStatus) as exc:
                    await connect(server, token=token, host="panel.lab", origin=origin)
                assert exc.value.response.status_code == 403, origin
            ws = await connect(server, token=token, host="panel.lab", origin=f"http://panel.lab:{server.port}")
            await ws.close()

    run(scenario, broker)


def test_a_unix_socket_is_for_this_user_only_and_still_needs_the_token(broker: LocalBroker, tmp_path: Path) -> None:
    async def scenario(b: LocalBroker) -> None:
        from websockets.asyncio.client import unix_connect
        from websockets.exceptions import InvalidStatus

        path = tmp_path / "panel.sock"
        async with panel(b, unix_path=str(path)) as (server, arm):
            assert path.stat().st_mode & 0o777 == 0o600
            with pytest.raises(InvalidStatus) as exc:
                await unix_connect(str(path), "ws://localhost/ws")
            assert exc.value.response.status_code == 401
            ws = await unix_connect(str(path), f"ws://localhost/ws?token={server.gate.token}")
            await ws.send(json.dumps({"t": "select", "arm": "arm1"}))
            assert (await frames(ws, 1))[0]["s"]["arm"] == "arm1"
            await ws.close()

    run(scenario, broker)


async def drain(ws: Any) -> None:
    while True:
        await asyncio.wait_for(ws.recv(), HANG)


def test_sessions_are_capped(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        async with panel(b, max_sessions=5) as (server, _):
            open_ = [await connect(server, token=server.gate.token) for _ in range(5)]
            await until(lambda: len(server.sessions) == 5)
            for ws in open_[1:]:   # every tab but the first is used
                await ws.send(json.dumps({"t": "select", "arm": "arm1"}))
            await until(lambda: sum(s.arm == "arm1" for s in server.sessions) == 4)   # the panel read the selects
            newcomer = await connect(server, token=server.gate.token)   # the operator always gets in ...
            with pytest.raises(ConnectionClosed) as exc:   # ... in place of the tab used least recently
                await drain(open_[0])
            assert exc.value.rcvd is not None and exc.value.rcvd.code == 1013
            await until(lambda: len(server.sessions) == 5)
            for _ in range(20):                    # 20 more: never more than the cap at once
                open_.append(await connect(server, token=server.gate.token))
                assert sum(not s.closing for s in server.sessions) <= 5
            await until(lambda: server.refused["evicted"] >= 21 and len(server.sessions) == 5)
            assert server.refused["evicted"] == 21
            unauthenticated = 0
            for _ in range(20):
                with pytest.raises(InvalidStatus):
                    await connect(server)
                unauthenticated += 1
            assert len(server.sessions) == 5 and unauthenticated == 20
            # a browser that opened the launch link is never replaced by a script's session
            tab = await browser(server, *await asyncio.to_thread(login, server))
            await until(lambda: sum(s.operator.browser for s in server.sessions) == 1)
            evicted = server.refused["evicted"]
            for _ in range(10):
                open_.append(await connect(server, token=server.gate.token))
            # each newcomer replaces a session once the panel handles its socket (after the handshake): wait
            # for all 10 evictions; none may be the browser's
            await until(lambda: server.refused["evicted"] >= evicted + 10)
            assert server.refused["evicted"] == evicted + 10
            assert sum(s.operator.browser and not s.closing for s in server.sessions) == 1
            await tab.send(json.dumps({"t": "select", "arm": "arm1"}))
            assert (await frames(tab, 1))[0]["s"]["arm"] == "arm1"
            for ws in [*open_, newcomer, tab]:
                await ws.close()

    run(scenario, broker)


# ---------------------------------------------------------------------- what reaches the arm
def test_an_estop_is_released_only_by_the_operator_who_engaged_it(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        async with panel(b) as (server, arm):
            alice, mallory = await session(server), await session(server)
            await alice.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": True}}))
            await until(lambda: arm.commands)
            arm.status.update(estop=True, mode="idle")
            await arm.publish_status()
            await until(lambda: (server.link.arms["arm1"].status or {}).get("estop"))
            await mallory.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": False}}))  # attack 2
            await notice(mallory, "engaged by another operator")   # the panel's refusal: it decided, sent nothing
            assert [c for _, c, body in arm.commands if body.get("engaged") is False] == []
            await alice.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": False}}))
            await until(lambda: [c for _, c, body in arm.commands if body.get("engaged") is False])
            clients = {body["client"] for _, _, body in arm.commands}
            assert len(clients) == 1   # only alice's identity reached the arm

    run(scenario, broker)


def test_hostile_messages_never_become_commands_nor_close_the_session(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        async with panel(b) as (server, arm):
            ws = await session(server)
            hostile = ['{"t": "jog", "space": "joint", "axis": 0, "dir": NaN, "speed": 1}',     # attack 9
                       '{"t": "jog", "space": "joint", "axis": 0, "dir": 0.000001, "speed": 1}',
                       '{"t": "jog", "space": "joint", "axis": 99999999999999999999999, "dir": 1}',
                       '{"t": "cmd", "name": "mode", "body": {"mode": "turbo"}}',
                       '{"t": "cmd", "name": "cartesian_goal", "body": {"position": [0, 0, Infinity]}}',
                       '{"t": "cmd", "name": "cartesian_goal", "body": {"position": [0.1, 0, 0.3], '
                       '"orientation": [1, 0, 0, 0, 0, 0, 0, 0]}}',
                       '{"t": "cmd", "name": "mode", "body": ' + "[" * 5000 + "]" * 5000 + "}",
                       '{"t": "cmd", "name": "gripper", "body": {"position": 1e400}}', "garbage", "[]"]
            for raw in hostile:
                await ws.send(raw)
            # then a valid command on the same socket: the session reads its messages in order (a jog is
            # published before the next message is read, a command's task starts in arrival order) and the link
            # publishes in order, so a command from any hostile message would have reached the arm before it
            await ws.send(json.dumps({"t": "cmd", "name": "mode", "body": {"mode": "position"}}))
            await until(lambda: arm.commands)
            assert [(name, body.get("mode")) for _, name, body in arm.commands] == [("mode", "position")]
            await ws.send(json.dumps({"t": "jog", "space": "joint", "axis": 1, "dir": -1, "speed": 0.5}))
            await until(lambda: len(arm.commands) > 1)
            _, name, body = arm.commands[1]
            assert name == "jog" and body["velocity"] == [0.0, -0.5] and body["deadman"] is True
            assert body["ttl"] == JOG_TTL   # the arm stops the jog by itself a ttl after the last sample
            assert any("without an account" in w for w in server.link.warnings)   # this broker is anonymous
            assert any("may publish arm arm1's state topics" in w for w in server.link.warnings)
            got = await frames(ws, 5)                      # still open, still updating
            assert got[-1]["s"]["q"] == [0.1, 0.2]

    run(scenario, broker)


def test_a_spoofed_description_is_refused_and_home_stays_off(broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        import aiomqtt

        async with panel(b) as (server, arm):
            view = server.link.arms["arm1"]
            assert view.description_verified and view.description["home"] == [0.5, 0.5]
            fake = json.loads(arm.raw)
            fake["home"] = [2.9, -2.9]
            async with aiomqtt.Client(hostname="127.0.0.1", port=b.port, identifier="attacker") as c:  # attack 7
                await c.publish("hebictl/v1/arm1/state/description", json.dumps(fake), qos=1, retain=True)
            await until(lambda: view.description_refused)
            print(f"\nspoofed description: {view.description_refused}")
            assert view.description["home"] == [0.5, 0.5]  # the verified one stays in use
            arm.status["mode"] = "position"
            await arm.publish_status()
            ws = await session(server)
            await until(lambda: all(t.allowed_controls()["home"] for t in server.sessions))
            await ws.send(json.dumps({"t": "cmd", "name": "home"}))
            await until(lambda: arm.commands)
            assert arm.commands[0][2]["positions"] == [0.5, 0.5]   # never the attacker's pose

    run(scenario, broker)


def test_a_goal_too_short_for_the_acceleration_limit_is_refused_with_the_shortest_duration(
        broker: LocalBroker) -> None:
    async def scenario(b: LocalBroker) -> None:
        async with panel(b) as (server, arm):
            arm.status["mode"] = "position"
            await arm.publish_status()
            ws = await session(server)
            await until(lambda: all(t.allowed_controls()["joint_goal"] for t in server.sessions)
                        and server.link.arms["arm1"].joints)   # the duration is measured from the joints
            # 0.5 rad at 1 rad/s needs 0.94 s for speed but 0.76 s for 5 rad/s^2: speed decides; 2.0 rad:
            # 3.75 s for speed, 1.52 s for acceleration; with a_max = 5, 0.05 rad needs 0.24 s (acceleration)
            await ws.send(json.dumps({"t": "cmd", "name": "joint_goal", "body": {"positions": [0.15, 0.2],
                                                                                "duration": 0.1}}))
            offer = None
            while offer is None:
                m = json.loads(await asyncio.wait_for(ws.recv(), HANG))
                if m["t"] == "notice":
                    offer = m.get("offer")
                    print(f"\n{m['text']}")
                    assert offer is not None, m
            assert offer == {"duration": 0.25}   # sqrt(10/sqrt(3) * 0.05 / 5) = 0.240 s, +2 %, rounded up
            assert arm.commands == []
            await ws.send(json.dumps({"t": "cmd", "name": "joint_goal", "body": {"positions": [0.15, 0.2],
                                                                                "duration": offer["duration"]}}))
            await until(lambda: arm.commands)
            assert arm.commands[0][2]["duration"] == 0.25

    run(scenario, broker)


def test_an_estop_reports_its_times_through_the_panel_and_shapes_come_on_request(broker: LocalBroker) -> None:
    """The ``sent`` of an e-stop carries when the panel read it and when the broker acknowledged
    it (the e2e timing test splits the path with them); a tab that asks for the arm's collision
    shapes (``view``) gets them posed in its frames, other tabs do not."""
    async def scenario(b: LocalBroker) -> None:
        async with panel(b) as (server, arm):
            ws = await session(server)
            t0 = time.time()
            await ws.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": True}}))
            while True:
                m = json.loads(await asyncio.wait_for(ws.recv(), HANG))
                if m["t"] == "sent":
                    break
            assert m["name"] == "estop" and t0 <= m["rx"] <= m["acked"] <= time.time()
            await until(lambda: arm.commands)
            assert arm.commands[0][1] == "estop" and arm.commands[0][0] >= m["rx"]
            assert "shapes" not in (await frames(ws, 1))[0]["s"]
            await ws.send(json.dumps({"t": "view", "shapes": True}))
            await until(lambda: all(s.show_shapes for s in server.sessions))
            posed = (await frames(ws, 2))[-1]["s"]["shapes"]
            # the stand-in's one capsule sits 0.1 m along body 1's z axis; body 1 is 0.3 m up (UP) at q = 0.2
            assert [s["k"] for s in posed] == ["capsule"] and posed[0]["s"] == [0.02, 0.05]
            q0, q1 = 0.1, 0.2   # the stand-in's joints: about z at the base, then about y 0.2 m up
            want = [0.1 * math.sin(q1) * math.cos(q0), 0.1 * math.sin(q1) * math.sin(q0), 0.2 + 0.1 * math.cos(q1)]
            assert [row[3] for row in posed[0]["T"]] == pytest.approx(want, abs=1e-12)
            assert [row[2] for row in posed[0]["T"]] == pytest.approx(
                [math.sin(q1) * math.cos(q0), math.sin(q1) * math.sin(q0), math.cos(q1)], abs=1e-12)
            await ws.send(json.dumps({"t": "view", "shapes": "yes"}))   # a bad request, never a crash
            await ws.close()

    run(scenario, broker)
