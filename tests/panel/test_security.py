"""Issue 33, the panel's side, tried the way the attackers of docs/security.md would: a real
mosquitto with the accounts and ACL of docs/teleop.md, a real teleop arm (the 6-DoF kit on the
mock backend, its bridge on the broker under its own account), the real panel server and link
under the operator's account, real WebSocket and HTTP clients. Each outcome is judged by an
independent MQTT reader (``spy``: its own account, reading the arm's commands and state), never
by the panel's own view of itself."""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from hebictl.panel.auth import Gate
from hebictl.panel.link import PanelLink
from hebictl.panel.server import REFUSALS, PanelServer
from hebictl.teleop.broker import LocalBroker
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.state_schema import payload_sha256
from tests._support.arms import kit6_arm
from tests._support.broker import need_mosquitto
from tests._support.paths import REPO_ROOT
from tests._support.teleop import serving, teleop_server

# the default timeout (600 s): the first test that builds an arm on a cold kernel cache compiles them (2 min here)
pytestmark = pytest.mark.broker

USERS = {"op": "op-pw", "arm1": "arm1-pw", "arm2": "arm2-pw", "spy": "spy-pw"}
ROOT = "hebictl/v1"
HANG = 540.0   # s: a hang guard for a whole scenario (a cold kernel cache compiles for minutes), never a bound
WAIT = 60.0    # s: a hang guard for one awaited event (a status, an ack, a frame), never a bound
EYE = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]


def description(arm: str, **extra: Any) -> bytes:
    """A one-joint description that passes the state schema."""
    return json.dumps({"dof": 1, "arm_id": arm, "joints": {"names": ["J1"], "position_min": [-3.0],
                       "position_max": [3.0], "velocity_max": [1.0]},
                       "tree": {"base": EYE, "bodies": [{"name": "a", "parent": -1, "placement": EYE, "joint": {
                           "kind": "revolute", "axis": [0, 0, 1], "scale": 1.0, "index": 0}}],
                                "end_effector": [{"body": 0, "offset": EYE}]}, **extra}).encode()


@pytest.fixture
def acl_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """docs/teleop.md's set-up: a password file, each arm account writing only its own state, the
    operator writing every arm's commands; ``spy`` reads commands and state (the judge)."""
    need_mosquitto(passwd=True)
    b = LocalBroker(tmp_path / "b", users=USERS, arms={"arm1": "arm1", "arm2": "arm2"}, operators=["op"])
    with (b.directory / "acl").open("a") as f:
        f.write(f"\nuser spy\ntopic read {ROOT}/+/cmd/#\ntopic read {ROOT}/+/state/#\n")
    b.start()
    yield b
    b.stop()


class Spy:
    """An MQTT reader of its own: every message on the arms' command and state topics, timed."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.seen: list[tuple[float, str, Any]] = []
        self.ready = asyncio.Event()

    async def run(self) -> None:
        import aiomqtt

        async with aiomqtt.Client("127.0.0.1", self.port, username="spy", password=USERS["spy"],
                                  identifier="spy:judge") as c:
            await c.subscribe(f"{ROOT}/+/cmd/#", qos=1)
            for kind in ("status", "ack"):
                await c.subscribe(f"{ROOT}/+/state/{kind}", qos=1)
            await c.subscribe(f"{ROOT}/arm1/state/joints", qos=0)
            self.ready.set()
            async for m in c.messages:
                try:
                    body = json.loads(m.payload) if m.payload else None
                except ValueError:
                    body = None
                self.seen.append((time.time(), m.topic.value, body))

    def commands(self, arm: str, since: float = 0.0) -> list[tuple[str, dict[str, Any]]]:
        pre = f"{ROOT}/{arm}/cmd/"
        return [(t[len(pre):], b) for at, t, b in self.seen if at >= since and t.startswith(pre) and b]

    def status(self) -> dict[str, Any]:
        return next((b for _, t, b in reversed(self.seen) if t == f"{ROOT}/arm1/state/status" and b), {})

    def joint0(self) -> float:
        return next(b["position"][0] for _, t, b in reversed(self.seen) if t == f"{ROOT}/arm1/state/joints" and b)

    def acks(self, since: float) -> list[dict[str, Any]]:
        return [b for at, t, b in self.seen if at >= since and t == f"{ROOT}/arm1/state/ack" and b]


async def until(pred: Callable[[], Any], timeout: float = WAIT, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or pred}")


@asynccontextmanager
async def panel(b: LocalBroker, **kw: Any) -> AsyncIterator[tuple[PanelServer, Spy]]:
    spy = Spy(b.port)
    link = PanelLink(parse_broker(b.url, username="op", password=USERS["op"]))
    server = PanelServer(link, "127.0.0.1", 0, gate=Gate({"127.0.0.1", "localhost"}), **kw)
    started = asyncio.Event()
    tasks = [asyncio.create_task(spy.run()), asyncio.create_task(link.run()),
             asyncio.create_task(server.serve(started))]
    await started.wait()
    await spy.ready.wait()
    try:
        yield server, spy
    finally:
        link.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def script(server: PanelServer, arm: str = "arm1") -> Any:
    """A session opened with the launch token (as a script would), on ``arm``."""
    from websockets.asyncio.client import connect

    ws = await connect(f"ws://127.0.0.1:{server.port}/ws?token={server.gate.token}", open_timeout=WAIT)
    await ws.send(json.dumps({"t": "select", "arm": arm}))
    await until(lambda: any(s.arm == arm for s in server.sessions), what="the session on the arm")
    told: list[str] = []
    ws.told = told   # what the panel tells this session, read all along (as a browser reads its socket)
    ws.reader = asyncio.create_task(_read_notices(ws, told))
    return ws


async def _read_notices(ws: Any, into: list[str]) -> None:
    from websockets.exceptions import ConnectionClosed

    with suppress(ConnectionClosed):
        async for raw in ws:
            m = json.loads(raw)
            if m["t"] in ("notice", "sent", "ack"):
                into.append(m.get("text") or f"{m['t']} {m.get('name') or m.get('topic')} {m.get('reason') or ''}")


async def notices(ws: Any, quiet: float = 0.05) -> list[str]:
    """What the panel told a tab about its commands, read until the socket is quiet for ``quiet``
    s or closes."""
    from websockets.exceptions import ConnectionClosed

    out = []
    with suppress(TimeoutError, ConnectionClosed):
        while True:
            m = json.loads(await asyncio.wait_for(ws.recv(), quiet))
            if m["t"] in ("notice", "sent", "ack"):
                out.append(m.get("text") or f"{m['t']} {m.get('name') or m.get('topic')}")
    return out


async def shown(link: PanelLink, engaged: bool, arm: str = "arm1") -> None:
    """Wait until the panel's own view of ``arm`` shows its e-stop ``engaged`` (the independent
    reader may see the arm's status a moment earlier; the operator acts on what the page shows)."""
    await until(lambda: bool((link.arms[arm].status or {}).get("estop")) is engaged,
                what=f"the panel showing the e-stop {'engaged' if engaged else 'released'}")


async def cmd(ws: Any, name: str, body: dict[str, Any]) -> None:
    await ws.send(json.dumps({"t": "cmd", "name": name, "body": body}))


async def intrude(client: Any, spy: Spy, topic: str, body: dict[str, Any], name: str) -> None:
    """Publish ``cmd/<topic>`` to arm1 under the panel's client ``name`` with a seq of now (above the
    panel's), until arm1 acknowledges one as accepted: from then on that seq is arm1's last for the
    name. (One that waited in a loaded machine longer than the arm's max age is refused as stale,
    and changes nothing: it is sent again, fresh.)"""
    acks: list[dict[str, Any]] = []
    for _ in range(10):
        seq = time.time_ns() // 1000
        await client.publish(f"{ROOT}/arm1/cmd/{topic}", json.dumps(
            {**body, "seq": seq, "ts": time.time(), "client": name}), qos=1)
        ack = await until(lambda s=seq: next((a for a in spy.acks(0.0) if a.get("seq") == s), None),
                          what=f"arm1's ack of the intruder's {topic}")
        acks.append(ack)
        if ack.get("accepted"):
            return
    raise AssertionError(f"arm1 accepted none of the intruder's {topic}s: {acks}")


# ---------------------------------------------------------------------- attack 1: forged acks
def test_acks_forged_by_another_arms_account_release_nothing_and_move_nothing(acl_broker: LocalBroker) -> None:
    """Holding only arm2's account, the attacker publishes on arm2's own ``state/ack`` (and tries
    arm1's, which the ACL refuses) ``out_of_order`` refusals carrying the panel's client name and
    the real seqs of its recent arm1 commands (an e-stop release, a mode, a joint goal), after the
    operator engaged the e-stop again. No command reaches arm1, its e-stop stays engaged and joint
    0 stays put. The mechanism is live, not merely dead: a genuine refusal by arm1 itself makes the
    panel send that mode again (once, under a new name, through the session's checks), and a
    genuine refusal of an e-stop release is never answered with another release."""
    import aiomqtt

    async def scenario() -> None:
        with serving(teleop_server(kit6_arm("mock"), acl_broker.url, "arm1", username="arm1",
                                   password=USERS["arm1"])):
            async with panel(acl_broker) as (server, spy):
                link = server.link
                await until(lambda: (v := link.arms.get("arm1")) is not None and v.writable
                            and v.description_verified, what="the panel to see arm1")
                ws = await script(server)
                await until(lambda: spy.status().get("status") == "online", what="arm1 online")
                await until(lambda: link.arms["arm1"].joints, what="arm1's joints in the panel")
                await cmd(ws, "mode", {"mode": "position"})
                await until(lambda: spy.status().get("mode") == "position", what="mode position")

                # a genuine refusal (arm1's own ack): someone with the operator's account used the panel's
                # name with a larger seq; the panel's next mode is refused and sent again under a new name
                name = spy.commands("arm1")[-1][1]["client"]
                async with aiomqtt.Client("127.0.0.1", acl_broker.port, username="op", password=USERS["op"],
                                          identifier="op:intruder") as op:
                    await intrude(op, spy, "stop", {}, name)
                    t0 = time.time()
                    await cmd(ws, "mode", {"mode": "jog"})
                    await until(lambda: spy.status().get("mode") == "jog", what="mode jog, sent again")
                modes = [b for n, b in spy.commands("arm1", t0) if n == "mode"]
                assert [b["mode"] for b in modes] == ["jog", "jog"] and "~1/" in modes[1]["client"], modes
                assert link.epoch == 1
                await cmd(ws, "mode", {"mode": "position"})
                await until(lambda: spy.status().get("mode") == "position", what="mode position")

                # the recent commands the attacker will name: engage, release, mode, a goal
                await cmd(ws, "estop", {"engaged": True})
                await until(lambda: spy.status().get("estop") is True, what="e-stop engaged")
                await shown(link, True)
                await cmd(ws, "estop", {"engaged": False})
                await until(lambda: spy.status().get("estop") is False, what="e-stop released")
                await shown(link, False)
                await cmd(ws, "mode", {"mode": "position"})
                await until(lambda: spy.status().get("mode") == "position", what="mode position")
                q0 = spy.joint0()
                await cmd(ws, "joint_goal", {"positions": [q0 + 0.05, *link.arms["arm1"].joints["position"][1:]]})
                await until(lambda: abs(spy.joint0() - (q0 + 0.05)) < 2e-3, what="the goal")
                await cmd(ws, "estop", {"engaged": True})
                await until(lambda: spy.status().get("estop") is True, what="e-stop engaged")
                await shown(link, True)
                last = [b for n, b in spy.commands("arm1") if n == "estop"][-1]
                await until(lambda: any(a.get("topic") == "estop" and a.get("seq") == last["seq"]
                                        for a in spy.acks(0.0)), what="arm1's ack of the e-stop")
                # the brake that the e-stop began is over (the goal was within 2 mrad of its end): the joint
                # the attack must not move is judged from a sample taken after that
                await until(lambda: spy.status().get("braking") is False, what="the e-stop's brake done")
                t_still = time.time()
                await until(lambda: any(at >= t_still and t == f"{ROOT}/arm1/state/joints" for at, t, _ in spy.seen),
                            what="a joint sample after the brake")
                sent = spy.commands("arm1")
                recent = {n: b for n, b in sent}   # the last of each
                release = [b for n, b in sent if n == "estop" and b["engaged"] is False][-1]
                targets = [("estop", release), ("mode", recent["mode"]), ("joint_goal", recent["joint_goal"]),
                           ("estop", recent["estop"])]
                held = spy.joint0()

                t_forge = time.time()
                marks: list[Any] = []   # the forger's last message, as the panel's link handled it
                link.listeners.append(lambda arm, kind, body: marks.append(body) if arm == "arm2" and kind == "ack"
                                      and body.get("client") == "marker" else None)
                async with aiomqtt.Client("127.0.0.1", acl_broker.port, username="arm2", password=USERS["arm2"],
                                          identifier="arm2:forger") as arm2:
                    for topic, body in targets:
                        ack = {"topic": topic, "accepted": False, "reason": "out_of_order", "client": body["client"],
                               "seq": body["seq"], "ts": time.time()}
                        for arm in ("arm2", "arm1"):   # its own ack topic, and arm1's (the ACL drops that one)
                            await arm2.publish(f"{ROOT}/{arm}/state/ack", json.dumps(ack), qos=1)
                    # then a harmless ack on the same connection and topic: the link gets them in order, so once
                    # it handled this one it had judged every forged one. A believed refusal moves the panel to a
                    # new name (the epoch) before anything is sent again: with the epoch unchanged, nothing is
                    await arm2.publish(f"{ROOT}/arm2/state/ack", json.dumps(
                        {"topic": "mode", "accepted": True, "client": "marker", "seq": 1, "ts": time.time()}), qos=1)
                await until(lambda: marks, what="the panel's link handling the forger's last ack")
                assert link.epoch == 1
                assert spy.commands("arm1", t_forge) == []
                assert [a for a in spy.acks(t_forge) if a.get("client") == release["client"]] == []
                assert spy.status().get("estop") is True and link.epoch == 1
                assert abs(spy.joint0() - held) < 1e-4
                print(f"\nforged acks: {len(targets)} on arm2's topic (+{len(targets)} refused on arm1's): "
                      f"0 commands to arm1, e-stop engaged, joint 0 moved {abs(spy.joint0() - held):.1e} rad")

                # a genuine refusal of a release (someone's larger seq under the panel's current name): the
                # panel moves to a new name but never sends the release again
                name = release["client"]   # the name the panel signs with now (its epoch 1)
                async with aiomqtt.Client("127.0.0.1", acl_broker.port, username="op", password=USERS["op"],
                                          identifier="op:intruder2") as op:
                    await intrude(op, spy, "estop", {"engaged": True}, name)
                    t1 = time.time()
                    await cmd(ws, "estop", {"engaged": False})
                    await until(lambda: any(a.get("reason") == "out_of_order" for a in spy.acks(t1)),
                                what="arm1 refusing the release")
                    # the link decides in the same call that moves it to a new name whether to send again
                    await until(lambda: link.epoch == 2, what="the panel's new name")
                # then an e-stop from the same tab: a release sent again would have gone out before it
                await cmd(ws, "estop", {"engaged": True})
                await until(lambda: [b for n, b in spy.commands("arm1", t1) if n == "estop" and b["engaged"]],
                            what="the tab's e-stop after the refusal")
                releases = [b for n, b in spy.commands("arm1", t1) if n == "estop" and b["engaged"] is False]
                assert len(releases) == 1 and spy.status().get("estop") is True, releases
                await ws.close()

    asyncio.run(asyncio.wait_for(scenario(), HANG))


def test_nothing_is_sent_again_after_a_newer_estop(acl_broker: LocalBroker) -> None:
    """A stand-in arm1 (an MQTT client under arm1's own account, so its acks are the real
    thing) refuses the panel's mode as out of order only after the operator has also pressed
    E-STOP: the mode is not sent again. The same refusal with no e-stop after the mode: sent again,
    once (so the first outcome is the rule, not a dead mechanism)."""
    import aiomqtt

    desc = description("arm1")

    async def scenario() -> None:
        async with aiomqtt.Client("127.0.0.1", acl_broker.port, username="arm1", password=USERS["arm1"],
                                  identifier="arm1:stand-in") as arm:
            status = {"status": "online", "state": "hold", "mode": "position", "estop": False, "session": "s",
                      "ts": time.time(), "description_sha256": payload_sha256(desc)}
            await arm.publish(f"{ROOT}/arm1/state/description", desc, qos=1, retain=True)

            async def alive() -> None:   # a fresh status, or the panel shows the arm as stale (e-stop only)
                while True:
                    await arm.publish(f"{ROOT}/arm1/state/status", json.dumps({**status, "ts": time.time()}), qos=1,
                                      retain=True)
                    await asyncio.sleep(0.2)

            pump = asyncio.create_task(alive())
            async with panel(acl_broker) as (server, spy):
                await until(lambda: (v := server.link.arms.get("arm1")) is not None and v.writable, what="arm1")
                ws = await script(server)

                async def refuse(body: dict[str, Any]) -> None:
                    ack = {"topic": "mode", "accepted": False, "reason": "out_of_order", "client": body["client"],
                           "seq": body["seq"], "ts": time.time()}
                    await arm.publish(f"{ROOT}/arm1/state/ack", json.dumps(ack), qos=1)

                for with_estop in (True, False):
                    epoch = server.link.epoch
                    t0 = time.time()
                    await cmd(ws, "mode", {"mode": "jog"})
                    mode = (await until(lambda t=t0: [b for n, b in spy.commands("arm1", t) if n == "mode"],
                                        what=f"cmd/mode; the session was told {ws.told}"))[0]
                    if with_estop:
                        await cmd(ws, "estop", {"engaged": True})
                        await until(lambda t=t0: [n for n, _ in spy.commands("arm1", t) if n == "estop"])
                    await refuse(mode)
                    # the link believes the refusal and moves to a new name (the epoch) in the same call that
                    # decides whether to send the mode again
                    await until(lambda e=epoch: server.link.epoch == e + 1, what="the panel's new name")
                    if with_estop:   # an e-stop from the same tab: a mode sent again would have gone out before it
                        t1 = time.time()
                        await cmd(ws, "estop", {"engaged": True})
                        await until(lambda t=t1: [n for n, _ in spy.commands("arm1", t) if n == "estop"],
                                    what="the tab's second e-stop")
                    else:
                        await until(lambda t=t0: len([n for n, _ in spy.commands("arm1", t) if n == "mode"]) > 1,
                                    what="the mode sent again")
                    modes = [b for n, b in spy.commands("arm1", t0) if n == "mode"]
                    print(f"\nrefused mode, e-stop after it: {with_estop}: cmd/mode sent {len(modes)} time(s)")
                    assert len(modes) == (1 if with_estop else 2), modes
                await ws.close()
            pump.cancel()

    asyncio.run(asyncio.wait_for(scenario(), HANG))


# ---------------------------------------------------------------------- attack 2 and 4: pages, cookies, argv
def _http(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a: Any, **k: Any) -> None:
            return None

    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=WAIT) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def _login(port: int, path: str) -> tuple[str, str]:
    status, headers, _ = _http(port, path)
    assert status == 303 and headers["Location"].startswith("/#k="), (status, dict(headers))
    return headers["Set-Cookie"].split(";")[0], headers["Location"][len("/#k="):]


def test_a_page_on_another_port_and_a_stolen_cookie_get_nothing(acl_broker: LocalBroker) -> None:
    """The operator's browser holds the cookie and key. A page another user serves on another
    loopback port opens the panel's socket from that browser (its Origin: the other port, with the
    cookie, which browsers send to every port): 403. The stolen cookie alone, from a process (no
    Origin), or with the right Origin: the socket is closed (1008) before any hello, and neither a
    select nor an e-stop release it sends reaches the arm. The operator's own tab is untouched."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    async def scenario() -> None:
        with serving(teleop_server(kit6_arm("mock"), acl_broker.url, "arm1", username="arm1",
                                   password=USERS["arm1"])):
            async with panel(acl_broker) as (server, spy):
                await until(lambda: (v := server.link.arms.get("arm1")) is not None and v.writable, what="arm1")
                cookie, key = await asyncio.to_thread(_login, server.port, f"/?token={server.gate.token}")
                url = f"ws://127.0.0.1:{server.port}/ws"
                own = f"http://127.0.0.1:{server.port}"
                tab = await connect(url, additional_headers={"Cookie": cookie}, origin=own)  # type: ignore[arg-type]
                await tab.send(json.dumps({"t": "auth", "k": key}))
                await tab.send(json.dumps({"t": "select", "arm": "arm1"}))
                told = asyncio.create_task(notices(tab, 60.0))   # the tab reads its socket, as a browser does
                await until(lambda: spy.status().get("status") == "online", what="arm1 online")
                await cmd(tab, "estop", {"engaged": True})
                await until(lambda: spy.status().get("estop") is True, what="the operator's e-stop")
                t0 = time.time()
                for other in ("http://127.0.0.1:18091", "http://localhost:18091", f"https://127.0.0.1:{server.port}"):
                    with pytest.raises(InvalidStatus) as exc:
                        await connect(url, additional_headers={"Cookie": cookie}, origin=other)  # type: ignore[arg-type]
                    assert exc.value.response.status_code == 403, other
                closed = []
                for origin in (None, own):   # the stolen cookie: from a process, and from a page of the right origin
                    for first in (None, {"t": "auth", "k": "guess"}, {"t": "select", "arm": "arm1"}):
                        ws = await connect(url, additional_headers={"Cookie": cookie}, origin=origin)  # type: ignore[arg-type]
                        got = []
                        with pytest.raises(ConnectionClosed) as info:
                            if first is not None:
                                await ws.send(json.dumps(first))
                                await ws.send(json.dumps({"t": "cmd", "name": "estop", "body": {"engaged": False}}))
                            while True:
                                got.append(await asyncio.wait_for(ws.recv(), WAIT))
                        assert got == [] and info.value.rcvd is not None and info.value.rcvd.code == 1008
                        closed.append(first)
                # GET / with the stolen cookie is the page itself, without the key
                status, _, body = await asyncio.to_thread(_http, server.port, "/", {"Cookie": cookie})
                assert status == 200 and key.encode() not in body
                assert len([s for s in server.sessions if not s.closing]) == 1 and server.refused["key"] == 6
                # every stolen socket was closed before it became a session: no command of theirs can still come.
                # The operator (cookie and key) releases; the one command since the attacks is that release
                await cmd(tab, "estop", {"engaged": False})
                await until(lambda: spy.status().get("estop") is False, what="the operator's release")
                assert [(n, b.get("engaged")) for n, b in spy.commands("arm1", t0)] == [("estop", False)]
                print(f"\nother-port origins: 3 x 403; stolen cookie: {len(closed)} sockets closed 1008 with 0 "
                      "messages; the only command to arm1 since was the operator's release")
                await tab.close()
                assert "sent estop" in await told

    asyncio.run(asyncio.wait_for(scenario(), HANG))


def test_eviction_never_closes_the_tab_that_holds_the_estop(acl_broker: LocalBroker) -> None:
    """max_sessions 3: the operator's tab engages the e-stop; 50 cookie-only sockets (a stolen
    cookie) and 20 sessions of another browser and of scripts come and go. The e-stop holder's tab
    is never replaced, still gets frames, and releases its e-stop at the end."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    async def scenario() -> None:
        with serving(teleop_server(kit6_arm("mock"), acl_broker.url, "arm1", username="arm1",
                                   password=USERS["arm1"])):
            async with panel(acl_broker, max_sessions=3) as (server, spy):
                await until(lambda: (v := server.link.arms.get("arm1")) is not None and v.writable, what="arm1")
                await until(lambda: spy.status().get("status") == "online", what="arm1 online")
                url, own = f"ws://127.0.0.1:{server.port}/ws", f"http://127.0.0.1:{server.port}"

                async def browser(cookie: str, key: str | None) -> Any:
                    ws = await connect(url, additional_headers={"Cookie": cookie}, origin=own)  # type: ignore[arg-type]
                    if key is not None:
                        await ws.send(json.dumps({"t": "auth", "k": key}))
                    return ws

                cookie, key = await asyncio.to_thread(_login, server.port, f"/?token={server.gate.token}")
                tab = await browser(cookie, key)
                await tab.send(json.dumps({"t": "select", "arm": "arm1"}))
                await cmd(tab, "estop", {"engaged": True})
                await until(lambda: spy.status().get("estop") is True, what="e-stop engaged")
                await until(lambda: server.holds_estop(next(iter(server.sessions)).operator.id), what="ownership")
                stolen = await asyncio.gather(*(browser(cookie, None) for _ in range(50)), return_exceptions=True)
                other = await asyncio.to_thread(_login, server.port, f"/?token={server.gate.token}")
                others = []
                for i in range(20):
                    try:
                        ws = await (browser(*other) if i % 2 else connect(f"{url}?token={server.gate.token}"))
                        await ws.send(json.dumps({"t": "select", "arm": "arm1"}))
                        others.append(ws)
                    except (InvalidStatus, ConnectionClosed):
                        pass
                    assert sum(not s.closing for s in server.sessions) <= 3
                n0 = 0
                while n0 < 3:   # the operator's tab still gets frames
                    m = json.loads(await asyncio.wait_for(tab.recv(), WAIT))
                    n0 += m["t"] == "frame"
                await cmd(tab, "estop", {"engaged": False})
                await until(lambda: spy.status().get("estop") is False, what="the holder's release")
                cut = sum(1 for ws in stolen if not isinstance(ws, BaseException) and ws.close_code == 1008)
                print(f"\n50 cookie-only sockets: {cut} closed 1008, {server.refused['cap']} refused at the cap; "
                      f"20 other sessions: {server.refused['evicted']} evictions, none of the e-stop holder's")
                assert tab.close_code is None and server.refused["evicted"] >= 1
                for ws in [tab, *others, *[w for w in stolen if not isinstance(w, BaseException)]]:
                    with suppress(ConnectionClosed):
                        await ws.close()

    asyncio.run(asyncio.wait_for(scenario(), HANG))


BROWSER_STAND_IN = """
import os, sys, time
out = sys.argv[1]
with open(out + ".tmp", "w") as f:
    f.write(f"{os.getpid()}\\n")
os.replace(out + ".tmp", out)
time.sleep(600)   # killed by the test once it has looked at it
"""


def test_open_gives_the_browser_a_private_file_and_a_one_time_nonce(tmp_path: Path) -> None:
    """Attack 4: ``hebictl panel --open`` started ``chromium http://...?token=<secret>``, readable
    by every local user in /proc/<pid>/cmdline. Now the browser (here $BROWSER, a stand-in that
    stays running) gets the path of a 0600 file in a 0700 folder; its command line has neither
    the secret nor a nonce. The file's one-time nonce signs in exactly once."""
    stand_in = tmp_path / "browser.py"
    stand_in.write_text(BROWSER_STAND_IN)
    pid_file = tmp_path / "browser.pid"
    env = {**os.environ, "BROWSER": f"{sys.executable} {stand_in} {pid_file} %s", "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "panel", "--broker", "mqtt://127.0.0.1:1", "--port",
                             "0", "--open"], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
                            cwd=REPO_ROOT)
    browser_pid = None
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + WAIT   # hang guard
        while "hebictl panel: open" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "the panel exited"
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        assert m, line
        port, secret = int(m.group(1)), m.group(2)
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        browser_pid = int(pid_file.read_text())
        argv = Path(f"/proc/{browser_pid}/cmdline").read_bytes().split(b"\0")
        text = b" ".join(argv).decode()
        assert secret not in text and "token=" not in text and "nonce=" not in text, text
        page = Path(argv[-2].decode().removeprefix("file://")) if argv[-1] == b"" else \
            Path(argv[-1].decode().removeprefix("file://"))
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
        content = page.read_text()
        assert secret not in content
        nonce = re.search(r"\?nonce=([A-Za-z0-9_-]+)", content)
        assert nonce, content
        cookie, key = _login(port, f"/?nonce={nonce.group(1)}")
        assert _http(port, f"/?nonce={nonce.group(1)}")[0] == 401   # used up
        assert _http(port, "/", {"Cookie": cookie})[0] == 200 and key
        print(f"\nbrowser argv: {text!r}; page {page} mode 0600 in a 0700 folder; nonce signed in once, then 401")
    finally:
        proc.terminate()
        proc.wait(30)
        if browser_pid is not None:
            os.kill(browser_pid, 15)


# ---------------------------------------------------------------------- load: descriptions, handshakes
FLOODER = """
import json, sys, time
import paho.mqtt.client as mqtt
port, password, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="arm2:flood")
c.username_pw_set("arm2", password)
c.connect("127.0.0.1", port)
c.loop_start()
while not c.is_connected():
    time.sleep(0.01)
filler = "x" * (4 * 1024 * 1024 - 2000)   # just under the 4 MiB a description may have
t0 = time.monotonic()
for i in range(n):
    body = json.dumps({"dof": 1, "urdf": f"{i}{filler}"})
    c.publish("hebictl/v1/arm2/state/description", body, qos=1).wait_for_publish(30)
print(f"{n} {time.monotonic() - t0:.2f}", flush=True)
c.loop_stop()
"""


def test_a_description_flood_from_another_arm_keeps_the_panel_small(acl_broker: LocalBroker) -> None:
    """arm2's account announces a small description by its hash, then (from a process of its own)
    publishes 120 different 4 MiB ones, none the announced one, as fast as the broker takes them.
    The panel refuses them by their hash without parsing, its memory stays bounded (peak RSS
    growth of this process printed and bounded at 150 MB; the unbounded queue and parse grew the
    panel by GBs), arm2's description stays the announced one, and the operator's e-stops through
    the panel reach arm1 during the flood (each press to arm1's status printed; no bound asserted
    here: a wall-clock figure on a shared machine)."""
    import aiomqtt

    small = description("arm2")

    async def scenario() -> None:
        with serving(teleop_server(kit6_arm("mock"), acl_broker.url, "arm1", username="arm1",
                                   password=USERS["arm1"])):
            async with panel(acl_broker) as (server, spy):
                link = server.link
                async with aiomqtt.Client("127.0.0.1", acl_broker.port, username="arm2", password=USERS["arm2"],
                                          identifier="arm2:state") as arm2:
                    await arm2.publish(f"{ROOT}/arm2/state/description", small, qos=1, retain=True)
                    await arm2.publish(f"{ROOT}/arm2/state/status", json.dumps(
                        {"status": "online", "state": "hold", "mode": "idle", "estop": False, "session": "x",
                         "ts": time.time(), "description_sha256": payload_sha256(small)}), qos=1, retain=True)
                await until(lambda: (v := link.arms.get("arm2")) is not None and v.description_verified, what="arm2")
                await until(lambda: (v := link.arms.get("arm1")) is not None and v.writable, what="arm1")
                await until(lambda: spy.status().get("status") == "online", what="arm1 online")
                ws = await script(server)
                rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                dropped0 = link.dropped
                flood = await asyncio.create_subprocess_exec(sys.executable, "-c", FLOODER, str(acl_broker.port),
                                                             USERS["arm2"], "120", stdout=subprocess.PIPE)
                presses: list[float] = []
                while flood.returncode is None and len(presses) < 8:
                    await asyncio.sleep(0.3)
                    t0 = time.time()
                    await cmd(ws, "estop", {"engaged": True})
                    await until(lambda: spy.status().get("estop") is True, what="the e-stop during the flood")
                    presses.append(1000 * (time.time() - t0))
                    await shown(link, True)   # the operator releases what the page shows engaged
                    await cmd(ws, "estop", {"engaged": False})
                    await until(lambda: spy.status().get("estop") is False, what="the release")
                    await shown(link, False)
                assert flood.stdout is not None
                done = (await asyncio.wait_for(flood.stdout.readline(), 120)).decode().split()
                await flood.wait()
                last, still = -1, 0.0
                while still < 2.0:   # until every one was handled (or the count stands still for 2 s)
                    n = link.dropped + link.inbound_dropped - dropped0
                    if n >= 120:
                        break
                    still = still + 0.1 if n == last else 0.0
                    last = n
                    await asyncio.sleep(0.1)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss0
                view = link.arms["arm2"]
                print(f"\n{done[0]} x 4 MiB descriptions in {done[1]} s: peak RSS +{rss:.0f} MB, refused by hash "
                      f"{link.dropped - dropped0}, dropped at the queue {link.inbound_dropped}; {len(presses)} e-stops "
                      f"during it, press -> arm1's status (test's wall clock, ms): {[round(p) for p in presses]}")
                assert view.description_verified and view.description == json.loads(small)
                assert view.description_refused is not None and link.dropped - dropped0 >= 1 and presses
                assert rss < 150
                await ws.close()

    asyncio.run(asyncio.wait_for(scenario(), HANG))


def test_refused_handshakes_are_throttled_per_peer_and_the_operator_still_gets_in(
        acl_broker: LocalBroker) -> None:
    """300 handshakes without credentials from one peer: after the first refusals the rest are
    answered 429 without the gate's work; the operator (same loopback address, with its cookie
    and key) still gets in and its e-stop reaches arm1."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def scenario() -> None:
        with serving(teleop_server(kit6_arm("mock"), acl_broker.url, "arm1", username="arm1",
                                   password=USERS["arm1"])):
            async with panel(acl_broker) as (server, spy):
                await until(lambda: (v := server.link.arms.get("arm1")) is not None and v.writable, what="arm1")
                await until(lambda: spy.status().get("status") == "online", what="arm1 online")
                url = f"ws://127.0.0.1:{server.port}/ws"
                codes: dict[int, int] = {}
                t0 = time.monotonic()
                for _ in range(300):
                    try:
                        await connect(url)
                    except InvalidStatus as exc:
                        codes[exc.response.status_code] = codes.get(exc.response.status_code, 0) + 1
                elapsed = time.monotonic() - t0
                cookie, key = await asyncio.to_thread(_login, server.port, f"/?token={server.gate.token}")
                tab = await connect(url, additional_headers={"Cookie": cookie},  # type: ignore[arg-type]
                                    origin=f"http://127.0.0.1:{server.port}")
                await tab.send(json.dumps({"t": "auth", "k": key}))
                await tab.send(json.dumps({"t": "select", "arm": "arm1"}))
                await cmd(tab, "estop", {"engaged": True})
                await until(lambda: spy.status().get("estop") is True, what="the operator's e-stop")
                # the bucket (REFUSALS: 5/s, burst 30) gives at most burst + rate x elapsed refusals the gate's
                # work (401), however slowly the machine ran the handshakes; the rest are 429
                rate, burst = REFUSALS
                print(f"\n300 handshakes without credentials in {elapsed:.2f} s: {codes} (at most "
                      f"{burst + rate * elapsed:.0f} may be 401); the operator's e-stop engaged")
                assert sum(codes.values()) == 300 and set(codes) == {401, 429}, codes
                assert burst <= codes[401] <= burst + rate * elapsed + 1, codes
                await cmd(tab, "estop", {"engaged": False})
                await tab.close()

    asyncio.run(asyncio.wait_for(scenario(), HANG))
