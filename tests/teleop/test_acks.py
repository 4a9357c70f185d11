"""AckQueue: rejections coalesce per client and reason while one waits; nothing is dropped silently."""

from __future__ import annotations

import asyncio

from hebictl.teleop.acks import AckQueue
from hebictl.teleop.messages import Ack


class FakeMonotonic:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _reject(seq: int, client: str = "a", reason: str = "stale", topic: str = "joint_goal") -> Ack:
    return Ack(seq, client, topic, False, reason, "x")


def _drain(q: AckQueue) -> list[Ack]:
    out = []
    while (a := q.get_nowait()) is not None:
        out.append(a)
    return out


def test_rejections_coalesce_per_client_and_reason_while_waiting():
    q = AckQueue(FakeMonotonic(), maxsize=10)
    for s in range(1, 101):
        q.put(_reject(s))
    q.put(_reject(500, client="b"))
    q.put(_reject(501, reason="rate_limited"))
    q.put(Ack(7, "a", "mode", True))
    q.put(_reject(502))  # folds into the first waiting (a, stale)
    out = _drain(q)
    assert [(a.client, a.reason, a.accepted) for a in out] == \
        [("a", "stale", False), ("b", "stale", False), ("a", "rate_limited", False), ("a", "", True)]
    first = out[0]
    assert (first.seq, first.coalesced, first.last_seq) == (1, 100, 502)
    assert out[1].coalesced == 0 and out[1].last_seq is None
    assert q.coalesced == 100 and q.dropped == 0
    # once published, the next rejection of the same pair gets its own ack
    q.put(_reject(600))
    assert _drain(q)[0].seq == 600


def test_throttle_counts_held_rejections_into_the_next_ack():
    clock = FakeMonotonic()
    q = AckQueue(clock, maxsize=10)
    q.put(_reject(1, topic="jog"), throttle=0.2)
    assert _drain(q)[0].coalesced == 0
    for s in range(2, 12):             # within 0.2 s of the last ack: held, counted
        clock.t += 0.01
        q.put(_reject(s, topic="jog"), throttle=0.2)
    assert _drain(q) == [] and q.coalesced == 10
    clock.t += 0.2
    q.put(_reject(12, topic="jog"), throttle=0.2)
    (ack,) = _drain(q)
    assert (ack.seq, ack.coalesced, ack.last_seq) == (12, 10, 12)


def test_many_clients_coalesce_per_reason_when_full():
    q = AckQueue(FakeMonotonic(), maxsize=3)
    for i in range(50):
        q.put(_reject(i, client=f"c{i}"))
    out = _drain(q)
    assert len(out) == 4
    assert out[3].client is None and out[3].coalesced == 46
    assert sum(1 + a.coalesced for a in out) == 50 and q.dropped == 0


def test_accepted_acks_are_never_coalesced():
    q = AckQueue(FakeMonotonic(), maxsize=2)
    for s in range(4):
        q.put(Ack(s, "a", "mode", True))
    assert [a.seq for a in _drain(q)] == [0, 1, 2, 3] and q.dropped == 0
    for s in range(5):
        q.put(Ack(s, "a", "mode", True))
    assert [a.seq for a in _drain(q)] == [1, 2, 3, 4] and q.dropped == 1   # beyond 2 * maxsize


def test_get_waits_for_the_next_ack():
    async def go():
        q = AckQueue(FakeMonotonic())
        task = asyncio.create_task(q.get())
        await asyncio.sleep(0.01)
        assert not task.done()
        q.put(_reject(3))
        return await asyncio.wait_for(task, 1.0)

    assert asyncio.run(go()).seq == 3


def test_held_rejections_are_acked_when_no_later_one_carries_them():
    """The end of a rejected jog stream: rejections held by the throttle are answered on their own once
    the throttle time has passed, so every sample gets its answer (seq of the first held, last_seq of
    the last, coalesced the rest)."""
    clock = FakeMonotonic()
    q = AckQueue(clock, maxsize=10)
    q.put(_reject(1, topic="jog"), throttle=0.2)
    assert _drain(q)[0].seq == 1
    for s in range(2, 8):
        clock.t += 0.01
        q.put(_reject(s, topic="jog"), throttle=0.2)
    assert _drain(q) == []
    clock.t = 0.2
    (ack,) = _drain(q)
    assert (ack.seq, ack.coalesced, ack.last_seq) == (2, 5, 7)
    assert q.coalesced == 5

    async def wait_for_it() -> Ack:  # get() wakes up for it without a new put()
        q.put(_reject(8, topic="jog"), throttle=0.2)   # within 0.2 s of the last ack: held
        clock.t = 0.5
        return await asyncio.wait_for(q.get(), 1.0)

    assert asyncio.run(wait_for_it()).seq == 8
