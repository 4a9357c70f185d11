"""The bridge's work before decoding (hebictl.teleop.inbound): per-account flood limits on the topic
alone, and a bounded queue that drops jog samples first and otherwise keeps arrival order. Driven
through asyncio's own Queue API, as aiomqtt drives it (``put_nowait`` from its callback, ``get``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hebictl.teleop.admission import RateLimit
from hebictl.teleop.inbound import InboundGate, inbound_queue_type
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
