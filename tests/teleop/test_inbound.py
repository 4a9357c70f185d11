"""The bridge's work before decoding (hebictl.teleop.inbound): per-account flood limits on the topic
alone, and a bounded queue that drops jog samples first and otherwise keeps arrival order. Driven
through asyncio's own Queue API, as aiomqtt drives it (``put_nowait`` from its callback, ``get``)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from hebictl.teleop.admission import RateLimit
from hebictl.teleop.inbound import InboundGate, estop_queue_type, inbound_queue_type
from hebictl.teleop.topics import Topics

TOPICS = Topics("a1")


@dataclass
class FakeTopic:  # aiomqtt's Topic has .value; nothing else is read
    value: str


@dataclass
class Message:
    topic: FakeTopic
    payload: bytes = b""


def _msg(name: str, account: str | None = "op") -> Message:
    return Message(FakeTopic(TOPICS.cmd(name) + ("" if account is None else f"/@{account}")))


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _drain(q: asyncio.Queue) -> list[str]:
    out = []
    while not q.empty():
        out.append(q.get_nowait().topic.value)
    return out


def test_a_full_queue_drops_the_oldest_jog_first_and_keeps_order():
    gate = InboundGate(TOPICS, Clock())
    q = inbound_queue_type(gate, 4)(maxsize=0)
    for m in (_msg("jog"), _msg("mode"), _msg("jog"), _msg("stop"), _msg("joint_goal")):
        q.put_nowait(m)
    assert _drain(q) == [TOPICS.cmd(n) + "/@op" for n in ("mode", "jog", "stop", "joint_goal")]
    assert gate.stats["queue_dropped_jog"] == 1
    for m in (_msg("mode"), _msg("stop"), _msg("joint_goal"), _msg("gripper"), _msg("jog"), _msg("mode")):
        q.put_nowait(m)  # no jog waits when the jog arrives: the newcomer is dropped, then the last mode too
    assert _drain(q) == [TOPICS.cmd(n) + "/@op" for n in ("mode", "stop", "joint_goal", "gripper")]
    assert gate.stats["queue_dropped"] == 2


def test_a_full_queue_drops_the_jog_samples_of_the_account_with_the_most_waiting():
    """A flooder's samples leave a full queue before an operator's (on a tie, the sender's own go):
    the operator's stream at a third of the flood's rate keeps every sample, in order."""
    gate = InboundGate(TOPICS, Clock())
    q = inbound_queue_type(gate, 4)(maxsize=0)
    taken = []
    for _ in range(5):  # four arrivals per message the bridge takes: the queue stays full
        for account in ("op", "flood", "flood", "flood"):
            q.put_nowait(_msg("jog", account))
        taken.append(q.get_nowait().topic.value)
    assert taken == [TOPICS.cmd("jog") + "/@op"] * 5
    assert _drain(q) == [TOPICS.cmd("jog") + "/@flood"] * 3
    assert gate.stats["queue_dropped_jog"] == 12 and gate.stats["queue_dropped"] == 0


def test_each_account_has_its_own_budget_and_estop_copies_are_not_queued():
    clock = Clock()
    gate = InboundGate(TOPICS, clock, limits={"jog": RateLimit(10.0, 3.0)})
    q = inbound_queue_type(gate, 100)(maxsize=0)
    for _ in range(10):
        q.put_nowait(_msg("jog", "flooder"))
    q.put_nowait(_msg("jog", "operator"))
    q.put_nowait(_msg("estop", "operator"))       # the e-stop has its own connection
    q.put_nowait(Message(FakeTopic("hebictl/v1/other/cmd/jog/@op")))  # another arm's
    got = _drain(q)
    assert got.count(TOPICS.cmd("jog") + "/@flooder") == 3 and got[-1] == TOPICS.cmd("jog") + "/@operator"
    assert len(got) == 4 and gate.stats["flood_dropped"] == 7
    clock.t = 0.1  # 10/s refills one
    q.put_nowait(_msg("jog", "flooder"))
    q.put_nowait(_msg("jog", "flooder"))
    assert len(_drain(q)) == 1 and gate.stats["flood_dropped"] == 8


def test_a_getter_waiting_on_an_empty_queue_wakes_only_for_a_kept_message():
    async def go() -> str:
        gate = InboundGate(TOPICS, Clock())
        q = inbound_queue_type(gate, 10)(maxsize=0)
        getter = asyncio.create_task(q.get())
        await asyncio.sleep(0)
        q.put_nowait(_msg("estop"))                # dropped: the getter must keep waiting
        await asyncio.sleep(0)
        assert not getter.done()
        q.put_nowait(_msg("mode"))
        return (await asyncio.wait_for(getter, 5.0)).topic.value

    assert asyncio.run(go()) == TOPICS.cmd("mode") + "/@op"


def _estop(engaged: object, account: str | None = "op", raw: bytes | None = None) -> Message:
    payload = raw if raw is not None else json.dumps({"client": "c", "seq": 1, "engaged": engaged}).encode()
    return Message(FakeTopic(TOPICS.cmd("estop") + ("" if account is None else f"/@{account}")), payload)


def _kinds(q: asyncio.Queue) -> list[tuple[str, object]]:
    out = []
    while not q.empty():
        m = q.get_nowait()
        try:
            engaged = json.loads(m.payload).get("engaged")
        except ValueError:
            engaged = "junk"
        out.append((m.topic.value.rsplit("@", 1)[-1], engaged))
    return out


def test_a_full_estop_queue_drops_junk_then_releases_then_an_accounts_older_engage():
    """Issue 33: the e-stop connection's queue is bounded, and what it drops never leaves the arm
    less stopped than the messages would: junk first, then the oldest release, then an engage of an
    account with a later engage waiting; the survivors keep their order."""
    gate = InboundGate(TOPICS, Clock())
    q = estop_queue_type(gate, 4)(maxsize=0)
    for m in (_estop(True, "a"), _estop(False, "b"), _estop(None, "c", raw=b"not json"), _estop(True, "a"),
              _estop(False, "d"), _estop(True, "e")):
        q.put_nowait(m)
    # six in, four kept: the junk went first, then b's release (the oldest); d's release stays
    assert _kinds(q) == [("a", True), ("a", True), ("d", False), ("e", True)]
    assert gate.stats["estop_queue_dropped"] == 2
    for m in (_estop(True, "a"), _estop(True, "a"), _estop(True, "b"), _estop(True, "a"), _estop(True, "c")):
        q.put_nowait(m)  # only engages: a's older ones go, so b's and c's (other owners) stay
    assert _kinds(q) == [("a", True), ("b", True), ("a", True), ("c", True)]
    assert gate.stats["estop_queue_dropped"] == 3


def test_an_estop_queue_of_one_engage_per_account_drops_the_newcomer_and_never_an_engage_for_a_release():
    gate = InboundGate(TOPICS, Clock())
    q = estop_queue_type(gate, 3)(maxsize=0)
    for m in (_estop(True, "a"), _estop(True, "b"), _estop(True, "c"), _estop(False, "a"), _estop(True, "d"),
              _estop(True, None), _estop("yes", "e")):
        q.put_nowait(m)
    assert _kinds(q) == [("a", True), ("b", True), ("c", True)]
    assert gate.stats["estop_queue_dropped"] == 4
    q.put_nowait(Message(FakeTopic(TOPICS.cmd("jog") + "/@a"), b"{}"))   # not an e-stop topic: not queued
    assert q.empty() and gate.stats["estop_queue_dropped"] == 4


def test_an_estop_flood_stays_bounded_and_the_operators_engage_after_it_survives():
    """100,000 junk and release messages from an attacker, then the operator's engage: the queue never
    holds more than its bound, and the engage is the message the bridge reads."""
    gate = InboundGate(TOPICS, Clock())
    q = estop_queue_type(gate, 64)(maxsize=0)
    peak = 0
    for i in range(100_000):
        q.put_nowait(_estop(False, "attacker") if i % 2 else _estop(None, "attacker", raw=b"x" * 100))
        peak = max(peak, q.qsize())
    q.put_nowait(_estop(True, "op"))
    q.put_nowait(_estop(False, "attacker"))   # a release after it: it must not push the engage out
    kinds = _kinds(q)
    print(f"\npeak queue {peak}, dropped {gate.stats['estop_queue_dropped']}, kept {len(kinds)}")
    assert peak == 64 and ("op", True) in kinds and gate.stats["estop_queue_dropped"] == 100_002 - 64
