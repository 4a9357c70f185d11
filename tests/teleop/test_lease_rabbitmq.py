"""The fleet lease on a real 3-node RabbitMQ MQTT cluster on loopback (Debian's rabbitmq-server),
started and ended by the test: a frozen node (SIGSTOP) holds the arms it serves by the lease, not by
MQTT's keepalive; arms on healthy nodes keep their lease; nothing resumes by itself.

Ordering, not timing: every wait is for an event (a state of an arm's lease gate, leases counted as
they arrive) with a hang guard (120 s) far below the clients' MQTT keepalive (600 s), so a hold seen
at all was the lease's doing. How fast the hold comes is exact in simulated time (tests/teleop/test_lease.py);
the figures measured here are printed. The cluster is private to the test (its own epmd port, cookie,
node names, ports and directories), so it runs beside anything, including a copy of itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from hebictl.teleop.lease import (
    LEASE_TIMEOUT,
    LEASE_TOPIC,
    FleetLease,
    Heartbeat,
    LeaseGate,
    LeaseState,
    publish_heartbeats,
)
from tests._support.extras import extra_missing
from tests._support.ordering import HANG, until
from tests._support.rabbitmq import rabbitmq_cluster, requires_rabbitmq

#: [s] the MQTT keepalive of every client here: far beyond any wait, so keepalive never decides a hold
KEEPALIVE = 600
pytestmark = [requires_rabbitmq, pytest.mark.heavy]


def test_a_frozen_node_holds_its_arms_by_the_lease_and_the_others_keep_theirs(tmp_path):
    """armI subscribes through node I, the station heartbeats through node 0. Node 2 frozen: arm2 is
    held and takes no lease until the thaw, while arm0 and arm1 keep taking leases; after the thaw
    arm2 is leased again but moves only after a command. The station's node frozen: every arm held."""
    aiomqtt = pytest.importorskip("aiomqtt", reason=extra_missing("aiomqtt"))
    with rabbitmq_cluster(tmp_path) as c:
        arms = {f"arm{i}": LeaseGate(FleetLease(f"arm{i}", {"station"})) for i in range(3)}
        held: dict[str, float] = {}
        taken: dict[str, list[float]] = {name: [] for name in arms}   # when each arm took a lease

        async def scenario() -> dict[str, object]:
            out: dict[str, object] = {}
            async with contextlib.AsyncExitStack() as stack:
                station = await stack.enter_async_context(
                    aiomqtt.Client("127.0.0.1", c.mqtt[0], identifier="station", keepalive=KEEPALIVE))
                clients = {}
                for i, name in enumerate(arms):      # armI on node I
                    cl = await stack.enter_async_context(
                        aiomqtt.Client("127.0.0.1", c.mqtt[i], identifier=name, keepalive=KEEPALIVE))
                    await cl.subscribe(LEASE_TOPIC, qos=0)
                    clients[name] = cl

                async def receive(name: str) -> None:
                    async for m in clients[name].messages:
                        now = time.monotonic()
                        if arms[name].on_message(str(m.topic), bytes(m.payload), now):
                            taken[name].append(now)

                async def poll() -> None:
                    while True:
                        now = time.monotonic()
                        for name, gate in arms.items():
                            if gate.poll(now) is not None:
                                held[name] = now
                        await asyncio.sleep(0.005)

                def more(names: tuple[str, ...], n: int = 5):   # each of them took n more leases from now on
                    base = {name: len(taken[name]) for name in names}
                    return lambda: all(len(taken[name]) >= base[name] + n for name in names)

                tasks = [asyncio.create_task(receive(n)) for n in arms] + [asyncio.create_task(poll())]
                stop = asyncio.Event()
                beat = asyncio.create_task(publish_heartbeats(station, Heartbeat("station"), stop))
                await until(lambda: all(g.state is LeaseState.READY for g in arms.values()), "every arm leased")
                for gate in arms.values():
                    gate.command(time.monotonic())
                await until(more(tuple(arms)), "leases reaching every arm through its node")
                # node 2 freezes: the arm it serves is held and takes no lease; the others keep taking them
                held.clear()
                t_freeze = time.monotonic()
                c.freeze(2)
                await until(lambda: "arm2" in held, "arm2 held after its node froze")
                last = arms["arm2"].lease.last_lease
                assert last is not None
                out["freeze_to_hold"] = held["arm2"] - t_freeze
                out["last_lease_to_hold"] = held["arm2"] - last
                frozen = len(taken["arm2"])
                await until(more(("arm0", "arm1")), "leases still reaching arm0 and arm1")
                out["arm2_leases_while_frozen"] = len(taken["arm2"]) - frozen
                out["others_held"] = sorted(n for n in held if n != "arm2")
                # the node comes back: its arm is leased again but does not move without a command
                c.thaw(2)
                await until(lambda: arms["arm2"].state is LeaseState.READY, "arm2 leased again after the thaw")
                out["arm2_moves_by_itself"] = arms["arm2"].lease.may_move(time.monotonic())
                arms["arm2"].command(time.monotonic())
                out["arm2_after_command"] = arms["arm2"].lease.may_move(time.monotonic())
                # the station's node freezes: every arm holds
                held.clear()
                t_freeze = time.monotonic()
                c.freeze(0)
                # every arm stops being allowed to move (an arm a starved test process already let lapse
                # before the freeze is not held again: one hold per lapse)
                await until(lambda: all(g.state is not LeaseState.ACTIVE for g in arms.values()),
                            "every arm held after the station's node froze")
                out["station_node_freeze_to_hold"] = {n: round(t - t_freeze, 3) for n, t in sorted(held.items())}
                c.thaw(0)
                stop.set()
                await beat
                for t in tasks:
                    t.cancel()
            return out

        out = asyncio.run(asyncio.wait_for(scenario(), 4 * HANG))
        timings = dict(c.timings)
    print(f"3-node RabbitMQ cluster (started in {timings['start']:.1f} s): "
          f"node 2 frozen -> arm2 held after {out['freeze_to_hold']:.3f} s ({out['last_lease_to_hold']:.3f} s after "
          f"its last lease; timeout {LEASE_TIMEOUT} s, keepalive {KEEPALIVE} s), {out['arm2_leases_while_frozen']} "
          f"leases taken while frozen; arms on nodes 0, 1 kept taking leases (held meanwhile: "
          f"{out['others_held'] or 'none'}); after the thaw arm2 moves by itself: {out['arm2_moves_by_itself']}, "
          f"after a command: {out['arm2_after_command']}; station's node frozen -> held after "
          f"{out['station_node_freeze_to_hold']}")
    assert out["arm2_leases_while_frozen"] == 0
    assert out["arm2_moves_by_itself"] is False and out["arm2_after_command"] is True
