"""Issue 12.5 through the real mosquitto: absurd goal numbers, an ack flood, retained commands.

Reproducers of what a fuzz run found: a joint goal to 1e308 with a duration (accepted, NaN command,
then a jump), to -1e308 without one (an exception in the arm thread), and q + 1e6 rad over 600 s
(accepted, faster than rated). Each must be rejected with a reason before it reaches the arm, and
an ordinary goal afterwards must move no joint faster than its rated speed (the model's
``max_speeds``, from the actuator datasheets: an independent number, not one teleop computes).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from hebictl.teleop.server import TeleopServer
from hebictl.teleop.topics import Topics
from tests._support.extras import extra_missing
from tests._support.ordering import HANG, PatientClient, until
from tests._support.paced import ArmWrites, paced_servers
from tests._support.teleop import ARM_ID, HOME, run

aiomqtt = pytest.importorskip("aiomqtt", reason=extra_missing("aiomqtt"))  # every test here talks MQTT

pytestmark = pytest.mark.broker


@pytest.fixture
def make_server() -> Iterator[Callable[..., TeleopServer]]:
    """The arm on simulated time paced to real time (tests/_support/paced.py): a starved test worker
    stretches the arm's time instead of stopping it with a control gap mid-test."""
    with paced_servers() as make:
        yield make


def _speeds(writes: ArmWrites, since: float, rated: np.ndarray) -> np.ndarray:
    """Per joint, the largest |Δ commanded position| between consecutive writes after arm time
    ``since``, as a fraction of ``rated`` x the arm's own dt of that cycle.

    The arm samples its trajectory and rate-limits its command on its own clock (simulated time paced
    to real time here: tests/_support/paced.py), so the figure is the arm's, whatever the machine's
    load. A write outside a cycle (the keep-alive of a long goal check) repeats the command: its Δp is 0."""
    t, p, _, dt = writes.arrays()
    assert np.all(np.isfinite(p)), "a non-finite position command reached the modules"
    k = int(np.searchsorted(t, since, side="right"))
    dp = np.abs(np.diff(p[max(k - 1, 0):], axis=0))
    step = rated * dt[max(k, 1):, None]
    assert np.all(step > 0.0) or np.all(dp[step <= 0.0] == 0.0), "the command moved in a cycle of no time"
    return np.max(np.divide(dp, step, out=np.zeros_like(dp), where=step > 0.0), axis=0)


@pytest.mark.parametrize("limits", ["unlimited", "config"])
def test_absurd_goals_rejected_then_a_normal_goal_moves_at_rated_speed(broker, make_server, limits):
    """With no joint position limits (as every bundled kit had when the fuzz run found this) only
    the rated speed bounds a goal; with the config's limits the targets are out of limits first."""
    server = make_server(broker.url, joint_limits=(-np.inf, np.inf) if limits == "unlimited" else None)
    rated = server.arm.model.max_speeds.copy()
    writes = ArmWrites(server.arm)

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="fuzz") as c:
            assert (await c.mode("position")).accepted
            q = np.array(server.runner.snapshot.command_position)
            huge, tiny, far, fast = q.copy(), q.copy(), q.copy(), q.copy()
            huge[0], tiny[0], far[0], fast[0] = 1e308, -1e308, q[0] + 1e6, q[0] + 100.0
            acks = {
                "1e308 in 1 s": await c.joint_goal(list(huge), duration=1.0),
                "-1e308 untimed": await c.joint_goal(list(tiny)),
                "q+1e6 in 600 s": await c.joint_goal(list(far), duration=600.0),
                "q+100 in 1 s": await c.joint_goal(list(fast), duration=1.0),
                "q+100 waypoints": await c.joint_waypoints([{"t": 0.5, "positions": list(q)},
                                                            {"t": 1.0, "positions": list(fast)}]),
            }
            before = server.arm.clock.now()
            reasons = {"too_fast", "too_far", "out_of_limits", "out_of_range"}
            target = q + np.array([1.0, 0.5, 0.25, 0.6, 1.5, -1.5])   # inside the limits, clear of the table
            ok = await c.joint_goal(list(target), duration=1.5)
            while ok is not None and ok.reason == "rate_limited":   # five goals just went: 20/s, burst 5
                await asyncio.sleep(0.05)
                ok = await c.joint_goal(list(target), duration=1.5)
                reasons.add("rate_limited")   # then the last error the status names
            try:
                status = await c.status_after(time.time(), lambda s: s["at_goal"])
            except TimeoutError:
                events = [(e.kind.value, e.detail[:120]) for e in server.arm.events.events][-6:]
                raise AssertionError(f"not at the goal {HANG:.0f} s after it was accepted ({ok}); last status "
                                     f"{c.status}; the arm's last events {events}") from None
            return acks, ok, before, target, status, reasons

    acks, ok, before, target, status, reasons = run(go(), timeout=4 * HANG)
    for what, ack in acks.items():
        assert ack is not None and not ack.accepted and ack.reason, (what, ack)
        assert ack.reason in ("too_fast", "too_far", "out_of_limits", "not_finite", "out_of_range"), (what, ack)
    if limits == "unlimited":
        assert acks["q+100 in 1 s"].reason == "too_fast"   # no position limit: the rated speed still binds
    assert acks["-1e308 untimed"].reason in ("too_far", "out_of_limits", "out_of_range")
    assert "internal_error" not in server.arm.events.kinds()
    assert ok.accepted, ok
    np.testing.assert_allclose(server.runner.snapshot.position, target, atol=0.01)
    peak = _speeds(writes, before, rated)
    print(f"peak commanded speed per cycle, x rated over the arm's own dt: {np.round(peak, 4)}")
    assert np.all(peak <= 1.05), (peak, rated)
    assert status["state"] == "running" and status["last_error"]["reason"] in reasons


def test_ack_flood_is_coalesced_not_dropped(broker, make_server):
    """2,000 stale goals as fast as the client can publish: every one the bridge decodes is answered
    (acks coalesce per client and reason, counted in the status), none dropped, and the arm never moves.
    Since issue 33 an account's goals beyond the flood guard (:data:`hebictl.teleop.inbound.FLOOD_LIMITS`)
    are dropped before decoding and counted in the status instead (``bridge.flood_dropped``): every
    message is either answered or counted there."""
    server = make_server(broker.url, bridge="thread")  # the bridge's live stats
    n = 2000

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="flood") as c:
            assert (await c.mode("position")).accepted
            q0 = server.runner.snapshot.position.copy()
            t0 = time.perf_counter()
            old = time.time() - 3600.0  # stale whatever the freshness window
            seqs = [c.next_seq() for _ in range(n)]
            for s in seqs:
                await c.send("joint_goal", {"positions": HOME, "duration": 1.0}, seq=s, ts=old, wait=False, qos=0)
            rate = n / (time.perf_counter() - t0)   # printed: how fast this machine let the client publish

            def answered() -> int:
                return sum(1 + a.coalesced for a in c.acks if a.client == "flood" and a.reason == "stale")

            # the flood has reached the bridge (the broker's copies of it, or what it dropped, counted:
            # ordering: a goal published after the flood is answered after it), and every decoded one answered
            assert (await c.mode("position")).accepted
            await until(lambda: answered() >= server.bridge.stats["received"] - 2, "every decoded goal answered")
            status = await c.status_after(time.time())   # the counts the arm published since
            return q0, rate, [a for a in c.acks if a.client == "flood" and a.reason == "stale"], status

    q0, rate, stale, status = run(go(), timeout=4 * HANG)
    received = server.bridge.stats["received"] - 2   # all but the two mode commands
    seen = _seen(server.bridge.stats) - 2
    print(f"{n} stale goals at {rate:.0f}/s: {received} decoded and answered, "
          f"{server.bridge.stats['flood_dropped']} dropped undecoded by the account's flood guard")
    assert seen > 0.95 * n, (seen, rate)   # QoS 0: the broker may drop a few under load
    assert server.bridge.stats["queue_dropped"] == 0
    assert sum(1 + a.coalesced for a in stale) == received
    assert server.bridge.stats["acks_dropped"] == 0
    coalesced = sum(a.coalesced for a in stale)
    assert status["bridge"]["acks_coalesced"] == coalesced and status["bridge"]["acks_dropped"] == 0
    for a in stale:
        if a.coalesced:
            assert a.last_seq is not None and a.last_seq > a.seq
    np.testing.assert_allclose(server.runner.snapshot.position, q0, atol=1e-12)


async def _cycles(writes: ArmWrites, n: int) -> None:
    """Until the arm has run ``n`` more cycles (writes to its modules) from now."""
    start = len(writes)
    await until(lambda: len(writes) >= start + n, f"{n} more arm cycles")


def _seen(bridge: dict) -> int:
    """Command messages that reached the bridge: decoded, or dropped undecoded by the flood guard."""
    return int(bridge["received"] + bridge["flood_dropped"] + bridge["queue_dropped"])


def test_retained_goal_is_cleared_from_the_broker_and_never_executed(broker, make_server):
    """A goal left retained on cmd/ is rejected `retained` when the arm subscribes, and the bridge
    deletes it: a new subscriber finds nothing retained, and a restarted arm is not offered it again."""
    topics = Topics(ARM_ID)

    async def retained_on(topic_filter: str) -> list[str]:
        """What the broker holds retained under ``topic_filter``: it sends that on the subscription,
        before it handles the marker published after it on the same connection (ordering, not a wait)."""
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="peek") as peek:
            marker = "hebictl-test/peek-marker"
            await peek.subscribe(topic_filter, qos=1)
            await peek.subscribe(marker, qos=1)
            await peek.publish(marker, b"end", qos=1)
            found = []
            async with asyncio.timeout(HANG):
                async for m in peek.messages:
                    if m.topic.value == marker:
                        break
                    if m.retain and m.payload:
                        found.append(m.topic.value)
            return found

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="op") as c:
            goal = {"seq": c.next_seq(), "ts": time.time(), "client": c.name, "positions": HOME, "duration": 1.0}
            await c.publish_raw("cmd/joint_goal", json.dumps(goal), qos=1, retain=True)
            assert await retained_on(topics.cmd("#")) == [topics.cmd("joint_goal")]
            server = await asyncio.to_thread(make_server, broker.url)
            ack = await c.wait_ack(lambda a: a.reason == "retained")
            await until(lambda: server.bridge.stats["retained_cleared"] == 1, "the bridge clearing the goal")
            return server, ack, await retained_on(topics.cmd("#"))

    server, ack, left = run(go(), timeout=4 * HANG)
    assert ack.topic == "joint_goal" and not ack.accepted
    assert left == []
    assert server.bridge.stats["retained_cleared"] == 1
    assert server.arm.trajectory is None and "goal" not in server.arm.events.kinds()


def test_shutdown_brakes_and_holds_never_releases(broker, make_server):
    """Stopping teleop mid-goal: the last command the modules get is a finite hold at rest."""
    server = make_server(broker.url, runner_options={"shutdown_hold": 0.2})
    writes = ArmWrites(server.arm)

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="op") as c:
            assert (await c.mode("position")).accepted
            assert (await c.joint_goal(list(np.add(HOME, 0.25)), duration=1.0)).accepted
            # mid-goal: the arm published joints on their way
            await c.wait_for(lambda n, b: n == "joints" and np.abs(np.subtract(b["position"], HOME)).max() > 0.02)

    run(go(), timeout=4 * HANG)
    assert server.arm.trajectory is not None, "the goal ended before the shutdown: not mid-goal"
    server.stop_background()
    kinds = server.arm.events.kinds()
    assert "teleop_shutdown" in kinds and "release" not in kinds
    last_p, last_v = writes.positions[-1], writes.velocities[-1]
    assert np.all(np.isfinite(last_p)) and np.all(last_v == 0.0)
    assert np.all(np.isfinite(server.arm.pending_command.effort))   # gravity compensation, not nothing


def test_retained_estop_engage_still_engages_and_is_cleared(broker, make_server):
    """Refusing a stop is never safe: a retained e-stop engage engages the e-stop, and is deleted."""

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="op") as c:
            msg = {"seq": c.next_seq(), "ts": time.time(), "client": c.name, "engaged": True}
            await c.publish_raw("cmd/estop", json.dumps(msg), qos=1, retain=True)
            server = await asyncio.to_thread(make_server, broker.url)
            st = await c.wait_status(lambda s: s.get("estop") is True)
            await until(lambda: server.bridge.stats["retained_cleared"] == 1, "the bridge clearing the e-stop")
            return server, st

    server, st = run(go(), timeout=4 * HANG)
    assert st["state"] == "stopped" and st["stop_behaviour"] == "hold"
    assert server.bridge.stats["retained_cleared"] == 1


def test_hostile_numbers_and_shapes_are_dropped_counted_and_close_nothing(broker, make_server):
    """Issue 20 item 9, at the bridge: NaN/Infinity, out-of-range numbers, unknown modes,
    8-value orientations, integer overflow, deep nesting and repeated fields are each rejected
    with an ack; a jog whose direction is NaN never becomes a jog; the operator's connection and
    the arm's stay up (no reconnect), and the next valid jog is accepted and moves the arm."""
    server = make_server(broker.url, bridge="thread")  # the bridge's live stats
    writes = ArmWrites(server.arm)
    topics = Topics(ARM_ID)
    port = int(broker.url.rsplit(":", 1)[1])
    env = '"seq": %d, "ts": %.3f, "client": "hostile"'
    bodies = {
        "jog": ['"space": "joint", "velocity": [NaN, 0, 0, 0, 0, 0], "deadman": true',
                '"space": "cartesian", "velocity": [-Infinity, 0, 0, 0, 0, 0], "deadman": true',
                '"space": "joint", "velocity": [' + "9" * 400 + ', 0, 0, 0, 0, 0], "deadman": true',
                '"space": "joint", "velocity": [' + "9" * 5000 + ', 0, 0, 0, 0, 0], "deadman": true',
                '"space": "joint", "velocity": [1e999, 0, 0, 0, 0, 0], "deadman": true',
                '"space": "joint", "velocity": [0.1, 0, 0, 0, 0, 0], "deadman": true, "x": '
                + "[" * 3000 + "]" * 3000,
                '"space": "joint", "velocity": [0.1, 0, 0, 0, 0, 0], "velocity": [-3, 0, 0, 0, 0, 0], '
                '"deadman": true'],
        "mode": ['"mode": "turbo"'],
        "cartesian_goal": ['"position": [0.3, 0, 0.2], "orientation": [1, 0, 0, 0, 0, 0, 0, 0]'],
        "gripper": ['"position": 1.5'],
    }

    async def go():
        async with PatientClient(broker.url, ARM_ID, name="op") as c:
            assert (await c.mode("jog")).accepted
            q0 = server.runner.snapshot.position.copy()
            acks = []
            async with aiomqtt.Client("127.0.0.1", port, identifier="hostile") as h:
                await h.subscribe(topics.state("ack"), qos=1)
                n = 0
                for name, items in bodies.items():
                    for body in items:
                        n += 1
                        payload = ("{" + env % (n, time.time()) + ", " + body + "}").encode()
                        await h.publish(topics.cmd(name), payload, qos=1)
                # every payload handled by the bridge, and acks of the reasons looked for in (jog
                # rejections are acked at most every 0.2 s per client and reason, coalesced)
                needed = {"not_finite", "out_of_range", "wrong_length"}
                async with asyncio.timeout(HANG):
                    async for m in h.messages:
                        a = json.loads(m.payload)
                        if a["client"] in ("hostile", None):
                            acks.append(a)
                        if server.bridge.stats["rejected"] >= n and needed <= {x["reason"] for x in acks}:
                            break
            await _cycles(writes, 10)   # arm cycles after the last of them was handled
            moved = np.abs(server.runner.snapshot.position - q0).max()
            jogging = server.runner.jog.active
            moved_after, end = 0.0, time.monotonic() + HANG
            while moved_after <= 0.01:   # a valid jog afterwards still works
                assert time.monotonic() < end, "hang guard: a valid jog after the hostile ones never moved the arm"
                await c.jog([0.2, 0, 0, 0, 0, 0], ttl=0.2)
                await asyncio.sleep(0.01)
                moved_after = abs(server.runner.snapshot.position[0] - q0[0])
            return n, acks, moved, jogging, moved_after

    n, acks, moved, jogging, moved_after = run(go(), timeout=4 * HANG)
    stats = server.bridge.stats
    reasons = sorted({a["reason"] for a in acks})
    print(f"\n{n} hostile payloads -> {len(acks)} acks, reasons {reasons}; malformed counted "
          f"{stats['malformed']}; arm moved {moved:.2e} rad; connects {stats['connects']}, "
          f"disconnects {stats['disconnects']}")
    assert acks and not any(a["accepted"] for a in acks)
    assert {"not_finite", "out_of_range", "wrong_length"} <= set(reasons)
    assert moved < 1e-9 and not jogging, "a hostile jog moved the arm"
    assert stats["rejected"] == n and stats["malformed"] == 5  # NaN, -Infinity, 5000 digits, depth, repeat
    assert stats["connects"] == 1 and stats["disconnects"] == 0
    assert moved_after > 0.01, "a valid jog after the hostile ones did not move the arm"
