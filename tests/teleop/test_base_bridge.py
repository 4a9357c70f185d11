"""A mobile base served by ``hebictl teleop ARMS.multi.yaml`` (hebictl/teleop/base_bridge.py), as a real
process against a real mosquitto on a free loopback port, on the mock and the sim, with the arms' bridge in
a process of its own (the default) and in a thread. Plumbing and ordering only: every wait is for an event
seen in the published status, with a hang guard (:data:`HANG_S`); the stop and ttl times are claimed in
simulated time in tests/teleop/test_base.py.

One session per case: the base set to mode velocity, a velocity stream moves its wheels and a release
stops them; hostile messages on ``cmd/velocity`` are each refused and counted and the base still takes a
good command; the arm's e-stop stops the base and holds everything with one group event naming the arm;
the base's e-stop holds the arm (the group names the base); ``teleop-send velocity`` drives it; SIGTERM
stops the base (latched, at rest) while a stream is still coming. With ``--bridge process`` the base's
bridge is a process of its own, as each arm's; SIGKILL of it is a lost link: the base holds."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.teleop.admission import Admission, RateLimit
from hebictl.teleop.base import BaseRunner
from hebictl.teleop.base_bridge import BaseBridge
from hebictl.teleop.client import TeleopClient
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.schema import BaseSchema
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.paths import CONFIGS_DIR, REPO_ROOT
from tests._support.teleop import HANG_S, StderrLines, spawn_teleop

pytest.importorskip("aiomqtt")

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
V = [2.0, 2.0, 2.0]


class FixedWall:
    """Wall and monotonic time for the bridge's admission, set by the test."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def wall(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


def bridge_rig(**admission):
    """A BaseBridge outside a session (its handle() called directly) on the config's base (mock, SimClock),
    its admission on a fixed clock; the acks it would publish collected from its queue."""
    clock = SimClock()
    multi = arms_from_multi_config(Arm, CONFIG, "mock", clock=clock)
    wall = FixedWall()
    runner = BaseRunner(multi.base, clock=wall)
    base = multi.base
    bridge = BaseBridge(runner, parse_broker("mqtt://127.0.0.1:1"), "base", clock=wall,
                        schema=BaseSchema(base.limits.max_velocity, base.limits.command_ttl),
                        admission=Admission(wall_clock=wall.wall, monotonic=wall.monotonic, **admission),
                        account_tags=True)
    runner.mode = "velocity"
    return bridge, runner, wall, multi


def acks_of(bridge) -> list:
    out = []
    while (ack := bridge.acks.get_nowait()) is not None:
        out.append(ack)
    return out


def test_the_base_bridge_binds_accounts_and_admits_like_an_arms():
    """Untagged commands refused (the broker runs the account plugin), a client name not bound to its
    account refused, stale and reordered envelopes refused, the per-topic rate limit, a retained command
    refused; an untagged e-stop engage still taken. Each refusal counted by reason; nothing reaches the
    runner but what was admitted."""
    bridge, runner, wall, multi = bridge_rig(rate_limits={"velocity": RateLimit(10.0, 2.0)})
    try:
        seq = iter(range(1, 1000))

        def body(client="op", ts=None, **fields) -> bytes:
            return json.dumps({"seq": next(seq), "ts": wall.t if ts is None else ts, "client": client,
                               "velocity": [1, 1, 1], "deadman": True, **fields}).encode()

        topic = "hebictl/v1/base/cmd/velocity"
        cases = [
            (topic, body(), {}, "untagged"),
            (topic + "/@op", body(client="intruder"), {}, "wrong_client"),
            (topic + "/@op", body(ts=wall.t - 5.0), {}, "stale"),
            (topic + "/@op", body(), {}, ""),
            (topic + "/@op", body(), {}, ""),
            (topic + "/@op", body(), {}, "rate_limited"),
            (topic + "/@op", json.dumps({"seq": 1, "ts": wall.t, "client": "op", "velocity": [1, 1, 1],
                                         "deadman": True}).encode(), {}, "out_of_order"),
            (topic + "/@op", body(), {"retain": True}, "retained"),
        ]
        for t, payload, kw, reason in cases:
            asyncio.run(bridge.handle(t, payload, **kw))
            if reason:
                got = acks_of(bridge)
                assert [a.reason for a in got] == [reason], (reason, got)
            else:   # handed to the runner: its next cycle takes the sample
                runner.deadline = -1.0
                runner.cycle_commands()
                assert runner.deadline > 0, "the sample was not handed over"
        asyncio.run(bridge.handle("hebictl/v1/base/cmd/estop", json.dumps(
            {"seq": next(seq), "ts": wall.t, "client": "anyone", "engaged": True}).encode()))
        runner.cycle_begin()
        assert runner.estop_latched and runner.mode == "idle"
        stats = bridge.stats_now()
        assert stats["rejected"] == 6 and stats["accepted"] == 3, stats
        assert {k: v for k, v in bridge.dropped.items()} == {
            "untagged": 1, "wrong_client": 1, "stale": 1, "rate_limited": 1, "out_of_order": 1, "retained": 1}
    finally:
        multi.close()


def moving(s: dict, at_least: float = 1.0) -> bool:
    wheels = (s.get("base") or {}).get("velocity") or []
    return bool(wheels) and all(w is not None and abs(w) >= at_least for w in wheels)


def at_rest(s: dict) -> bool:
    base = s.get("base") or {}
    return bool(base) and not any(base["command"]) and all(w is not None and abs(w) < 0.1 for w in base["velocity"])


async def stream(c: TeleopClient, stop: asyncio.Event, velocity=V) -> int:
    """Velocity samples at 50 Hz (ttl 0.2 s) until ``stop``; the number sent."""
    n = 0
    while not stop.is_set():
        await c.base_velocity(velocity, ttl=0.2)
        n += 1
        await asyncio.sleep(0.02)
    return n


async def drive_until(c: TeleopClient, predicate) -> dict:
    stop = asyncio.Event()
    task = asyncio.create_task(stream(c, stop))
    try:
        return await c.wait_status(predicate, timeout=HANG_S)
    finally:
        stop.set()
        await task


def hostile(c: TeleopClient) -> list[tuple[bytes, str]]:
    """(payload, the reason it is refused for) on cmd/velocity."""
    def body(**fields) -> bytes:
        return json.dumps({"seq": c.next_seq(), "ts": c.clock.wall(), "client": c.name, **fields}).encode()

    return [
        (b"not json", "malformed_json"),
        (body(velocity=[1, 2], deadman=True), "wrong_length"),
        (body(velocity=["a", 1, 1], deadman=True), "wrong_type"),
        (body(velocity=[1, 1, 50.0], deadman=True), "out_of_limits"),
        (body(velocity=[1, 1, 1], deadman=True, ttl=5.0), "ttl_too_long"),
        (body(velocity=[1, 1, 1], deadman=1), "wrong_type"),
        (b'{"seq": %d, "ts": %f, "client": "op-b", "velocity": [NaN, 1, 1], "deadman": true}'
         % (c.next_seq(), c.clock.wall()), "not_finite"),
        (body(velocity=[1, 1, 1], deadman=True, pad="x" * 70_000), "too_large"),
    ]


def bridge_children(pid: int) -> list[int]:
    """The bridge processes (``python -m hebictl.teleop.bridge_process``) ``pid`` started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"hebictl.teleop.bridge_process" in cmdline:
            found.append(int(entry.name))
    return found


async def session(url: str, proc: subprocess.Popen, bridge: str) -> dict:
    async with TeleopClient(url, "base", name="op-b") as b, TeleopClient(url, "arm", name="op-a") as a:
        st = await b.wait_status(lambda s: s["status"] == "online" and s.get("kind") == "base", timeout=HANG_S)
        assert st["mode"] == "idle" and st["group"]["arms"] == ["arm", "base"], st
        await a.wait_status(lambda s: s["status"] == "online", timeout=HANG_S)
        # the arm's bridge and the base's: a process each with --bridge process, none with thread
        assert len(bridge_children(proc.pid)) == (2 if bridge == "process" else 0)
        ack = await b.base_velocity(V, wait=True, timeout=HANG_S)
        assert not ack.accepted and ack.reason == "wrong_mode", ack
        assert (await b.mode("velocity", timeout=HANG_S)).accepted

        # a stream moves the wheels, the release stops them
        await drive_until(b, moving)
        await b.base_velocity([0, 0, 0], deadman=False)
        st = await b.wait_status(at_rest, timeout=HANG_S)
        assert st["mode"] == "velocity" and st["state"] == "running" and st["counts"]["released"] >= 1, st

        # hostile messages: each refused and counted; nothing crashed or froze
        before = st["bridge"]["rejected"]
        bad = hostile(b)
        for payload, _ in bad:
            await b.publish_raw("cmd/velocity", payload, qos=1)
        st = await b.wait_status(lambda s: s["bridge"]["rejected"] >= before + len(bad), timeout=HANG_S)
        for _, reason in bad:
            assert st["bridge"].get(f"dropped_{reason}", 0) >= 1, (reason, st["bridge"])
        assert proc.poll() is None
        await drive_until(b, moving)   # still takes a good command
        await b.base_velocity([0, 0, 0], deadman=False)
        await b.wait_status(at_rest, timeout=HANG_S)

        # the arm's e-stop stops the base, one group event naming the arm
        stop = asyncio.Event()
        task = asyncio.create_task(stream(b, stop))
        await b.wait_status(moving, timeout=HANG_S)
        assert (await a.estop(True, timeout=HANG_S)).accepted
        st = await b.wait_status(lambda s: (s.get("group") or {}).get("by") == "arm" and s["mode"] == "idle",
                                 timeout=HANG_S)
        # (its last error: group_hold, or the refusal of a sample of the stream that still comes)
        assert st["state"] in ("stopping", "stopped") and "e-stop engaged" in st["group"]["cause"], st
        stop.set()
        await task
        st = await b.wait_status(lambda s: at_rest(s) and s["state"] == "stopped", timeout=HANG_S)
        ack = await b.mode("velocity", timeout=HANG_S)
        assert not ack.accepted and ack.reason == "group_hold", ack

        # released: the base's own mode clears it; then the base's e-stop holds the arm
        assert (await a.estop(False, timeout=HANG_S)).accepted
        assert (await a.mode("position", timeout=HANG_S)).accepted
        assert (await b.mode("velocity", timeout=HANG_S)).accepted
        await b.wait_status(lambda s: s["state"] == "running" and not (s.get("group") or {}).get("held"),
                            timeout=HANG_S)
        assert (await b.estop(True, timeout=HANG_S)).accepted
        st = await a.wait_status(lambda s: (s.get("group") or {}).get("by") == "base" and s["state"] == "stopped",
                                 timeout=HANG_S)
        assert st["last_error"]["reason"] == "group_hold", st
        ack = await a.mode("position", timeout=HANG_S)
        assert not ack.accepted and ack.reason == "group_hold", ack
        assert (await b.estop(False, timeout=HANG_S)).accepted
        assert (await b.mode("velocity", timeout=HANG_S)).accepted
        assert (await a.mode("position", timeout=HANG_S)).accepted

        # teleop-send velocity: a stream then the release, one summary line
        send = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hebictl", "teleop-send", "--broker", url, "--arm-id", "base", "--client", "op-s",
            "velocity", "--velocity", "1", "1", "1", "--for", "0.5", cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(send.communicate(), HANG_S)
        assert send.returncode == 0, err.decode()
        summary = json.loads(out.decode().strip().splitlines()[-1])
        assert summary["topic"] == "velocity" and summary["accepted"], summary
        st = await b.wait_status(lambda s: s["counts"]["velocity"] >= 1 and at_rest(s), timeout=HANG_S)

        # SIGTERM while a stream still comes: the base is stopped (latched), not only held by its ttl
        stop = asyncio.Event()
        task = asyncio.create_task(stream(b, stop))
        await b.wait_status(moving, timeout=HANG_S)
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, HANG_S)
        stop.set()
        await task
        return st


BACKENDS = ("mock", pytest.param("sim", marks=pytest.mark.skipif(find_spec("mujoco") is None,
                                                                  reason="needs MuJoCo")))


@pytest.mark.broker
@pytest.mark.parametrize("bridge", ["process", "thread"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_base_is_served_beside_the_arm(backend, bridge, broker, spawned):
    proc = spawn_teleop(broker.url, str(CONFIG), "--backend", backend, "--bridge", bridge, "--stop-hold", "0.2")
    spawned.append(proc)
    err = StderrLines(proc)
    asyncio.run(asyncio.wait_for(session(broker.url, proc, bridge), 6 * HANG_S))
    assert proc.wait(HANG_S) == 0, err.text()[-3000:]
    text = err.text()
    assert "base hebictl/v1/base/ (3 wheels, cmd/velocity)" in text, text[-3000:]
    lines = [line.removeprefix("hebictl teleop: ") for line in text.splitlines()]
    final = next(line for line in lines if line.startswith("base base:"))
    assert final.startswith("base base: stopped, commanding +0.00 +0.00 +0.00"), final
    events = [line for line in lines if line.startswith("group event fault")]
    assert [e.split(":")[0] for e in events] == ["group event fault arm", "group event fault base"], events


def started_at(pid: int) -> tuple[int, int]:
    """(start time in clock ticks since boot, pid): the order in which processes were started."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]), pid


@pytest.mark.broker
def test_a_killed_base_bridge_process_is_a_lost_link_and_ends_the_run(broker, spawned):
    """SIGKILL of the base's bridge process (the last one ``hebictl teleop`` starts) while a stream drives
    the base: the loop sees the link closed (the base holds for the lost link), the run ends with an
    error naming the bridge process, as a killed arm bridge's does; the base's last will says offline."""
    proc = spawn_teleop(broker.url, str(CONFIG), "--stop-hold", "0.2")
    spawned.append(proc)
    err = StderrLines(proc)

    async def go() -> dict:
        async with TeleopClient(broker.url, "base", name="op-b") as b:
            await b.wait_status(lambda s: s["status"] == "online" and s.get("kind") == "base", timeout=HANG_S)
            assert (await b.mode("velocity", timeout=HANG_S)).accepted
            stop = asyncio.Event()
            task = asyncio.create_task(stream(b, stop))
            await b.wait_status(moving, timeout=HANG_S)
            children = sorted(bridge_children(proc.pid), key=started_at)
            assert len(children) == 2, children
            os.kill(children[-1], signal.SIGKILL)
            st = await b.wait_status(lambda s: s["status"] == "offline", timeout=HANG_S)
            stop.set()
            await task
            return st

    st = asyncio.run(asyncio.wait_for(go(), 4 * HANG_S))
    assert st["state"] == "offline", st
    assert proc.wait(HANG_S) != 0
    text = err.text()
    assert "bridge process" in text and "ended (signal 9)" in text, text[-3000:]


# ---------------------------------------------------------------------- the fleet lease (docs/fleet.md)
def _station(url: str, station: str) -> subprocess.Popen[bytes]:
    """``hebictl teleop-send --station ID lease``: a station process (every arm's lease), ended by the test."""
    return subprocess.Popen([sys.executable, "-m", "hebictl", "teleop-send", "--broker", url, "--arm-id", "base",
                             "--station", station, "lease"], cwd=REPO_ROOT,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _send(url: str, *args: str) -> int:
    return subprocess.run([sys.executable, "-m", "hebictl", "teleop-send", "--broker", url, "--arm-id", "base",
                           *args], cwd=REPO_ROOT, capture_output=True, timeout=HANG_S, check=False).returncode


def fleet_state(s: dict) -> str | None:
    return (s.get("fleet") or {}).get("state")


def latch_kind(s: dict) -> str | None:
    return (s.get("latch") or {}).get("kind")


@pytest.mark.broker
@pytest.mark.parametrize("bridge", ["process", "thread"])
def test_a_fleet_estop_stops_a_driving_base_and_only_a_new_lease_and_a_command_resume_it(bridge, broker, spawned,
                                                                                         tmp_path):
    """``hebictl teleop ARMS.multi.yaml --fleet-station st1 --record DIR`` (the base's bridge a process of its
    own, or a task of the teleop process with ``--bridge thread``) with ``teleop-send --station st1 lease``
    as the station, through a real mosquitto. Order only
    (every wait a hang guard; the stop timing is claimed in simulated time in tests/teleop/test_base.py):
    without a lease the base refuses ``cmd/mode velocity`` and a sample (``no_lease``), its status carries
    the ``fleet`` object; leased and set to velocity it drives; a fleet e-stop from ``teleop-send`` while a
    stream still comes stops it (latched ``fleet_estop``, at rest); after the authorised clear and a new
    lease a stream is refused (``wrong_mode``: the mode is idle) and the wheels stay still until
    ``cmd/mode velocity``. The recording has the base's wheels on ``/base/wheels``, as ``hebictl log info`` shows."""
    proc = spawn_teleop(broker.url, str(CONFIG), "--bridge", bridge, "--fleet-station", "st1",
                        "--lease-timeout", "1.0", "--record", str(tmp_path / "rec"), "--stop-hold", "0.2")
    spawned.append(proc)
    err = StderrLines(proc)
    stations: list[subprocess.Popen[bytes]] = []

    async def go() -> dict:
        async with TeleopClient(broker.url, "base", name="op-b") as b, \
                TeleopClient(broker.url, "arm", name="op-a") as a:
            st = await b.wait_status(lambda s: s["status"] == "online" and s.get("kind") == "base", timeout=HANG_S)
            assert fleet_state(st) == "no_lease" and st["fleet"]["stations"] == ["st1"], st
            ack = await b.mode("velocity", timeout=HANG_S)
            assert (ack.accepted, ack.reason) == (False, "no_lease"), ack
            ack = await b.base_velocity(V, wait=True, timeout=HANG_S)
            assert (ack.accepted, ack.reason) == (False, "no_lease"), ack

            stations.append(_station(broker.url, "st1"))
            await b.wait_status(lambda s: fleet_state(s) == "ready", timeout=HANG_S)
            assert (await b.mode("velocity", timeout=HANG_S)).accepted
            await b.wait_status(lambda s: fleet_state(s) == "active", timeout=HANG_S)

            # a fleet e-stop while the stream (the dead-man held) still comes: the base stops, latched
            stop = asyncio.Event()
            task = asyncio.create_task(stream(b, stop))
            await b.wait_status(moving, timeout=HANG_S)
            assert await asyncio.to_thread(_send, broker.url, "--station", "drill", "fleet-estop") == 0
            # (the latch is the base's own fleet_estop, or the group's when the arm's bridge process handed
            # the same e-stop over a cycle earlier and the arm tripped the group first: stopped either way)
            st = await b.wait_status(lambda s: fleet_state(s) == "estopped" and s["state"] == "stopped"
                                     and at_rest(s), timeout=HANG_S)
            assert latch_kind(st) in ("fleet_estop", "group") and st["mode"] == "idle", st
            stop.set()
            await task
            st = await b.wait_status(lambda s: s["bridge"].get("dropped_fleet_estop", 0) >= 1, timeout=HANG_S)
            ack = await b.mode("velocity", timeout=HANG_S)
            assert (ack.accepted, ack.reason) == (False, "fleet_estop"), ack

            # cleared by the authorised station, leased again: still nothing moves
            assert await asyncio.to_thread(_send, broker.url, "--station", "st1", "fleet-estop", "--clear") == 0
            await b.wait_status(lambda s: fleet_state(s) == "ready", timeout=HANG_S)
            stop = asyncio.Event()
            task = asyncio.create_task(stream(b, stop))
            ack = await b.base_velocity(V, wait=True, timeout=HANG_S)
            assert (ack.accepted, ack.reason) == (False, "wrong_mode"), ack   # leased, not commanded: mode idle
            await asyncio.sleep(0.5)
            st = await b.wait_status(lambda s: True, timeout=HANG_S)
            assert at_rest(st) and st["state"] == "stopped" and fleet_state(st) == "ready", st
            stop.set()
            await task

            # the explicit command (the arm's too, whichever of the two tripped the group first)
            ack = await b.mode("velocity", timeout=HANG_S)
            if not ack.accepted:
                assert ack.reason == "group_hold", ack
                assert (await a.mode("position", timeout=HANG_S)).accepted
                assert (await b.mode("velocity", timeout=HANG_S)).accepted
            st = await drive_until(b, moving)
            assert fleet_state(st) == "active" and st["fleet"]["holder"] == "st1", st
            await b.base_velocity([0, 0, 0], deadman=False)
            return await b.wait_status(at_rest, timeout=HANG_S)

    try:
        asyncio.run(asyncio.wait_for(go(), 6 * HANG_S))
    finally:
        for p in stations:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            p.communicate(timeout=HANG_S)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(HANG_S) == 0, err.text()[-3000:]
    assert "fleet lease: the base base moves only while a station of st1 leases it" in err.text()

    files = sorted((tmp_path / "rec").glob("*.mcap"))
    assert files, list((tmp_path / "rec").iterdir())
    out = subprocess.run([sys.executable, "-m", "hebictl", "log", "info", "--json", str(files[0])], cwd=REPO_ROOT,
                         capture_output=True, timeout=HANG_S, check=True).stdout
    info = json.loads(out)
    wheels = info["topics"]["/base/wheels"]
    print(f"\n[{bridge}] recorded /base/wheels: {wheels['count']} messages over {info['duration']:.2f} s "
          f"(of {len(info['topics'])} topics)")
    assert wheels["schema"] == "hebictl.BaseWheels" and wheels["count"] > 100, info["topics"]
