"""Fleet lease and e-stop (hebictl.teleop.lease): exact timing in simulated time, the arm held on the
sim of every bundled config, and the plumbing through a real mosquitto."""

from __future__ import annotations

import asyncio
import selectors
import time

import numpy as np
import pytest

from hebictl.errors import CommandRejected, ConfigError
from hebictl.hardware import SimClock
from hebictl.teleop.lease import (
    ESTOP_TOPIC,
    HEARTBEAT_HZ,
    LEASE_TIMEOUT,
    LEASE_TOPIC,
    TRANSITIONS,
    FleetEstop,
    FleetLease,
    Heartbeat,
    Lease,
    LeaseEvent,
    LeaseGate,
    LeaseState,
    estop_message,
    lease_message,
    parse_lease,
    publish_heartbeats,
)
from tests._support.ordering import HANG, until

CYCLE = 0.005       # the arm's 200 Hz loop
BEAT = 1.0 / HEARTBEAT_HZ


class Station:
    """A station's heartbeat on the simulated clock: one lease every BEAT while ``on``."""

    def __init__(self, name: str = "panel-1", epoch: str = "e1") -> None:
        self.name, self.epoch, self.seq, self.next = name, epoch, 0, 0.0
        self.on = True

    def due(self, now: float) -> Lease | None:
        if not self.on or now + 1e-12 < self.next:
            return None
        self.seq += 1
        self.next += BEAT
        return Lease(self.name, self.epoch, self.seq, None)


def drive(lease: FleetLease, clock: SimClock, station: Station, seconds: float) -> list[tuple[float, str]]:
    """Cycles of the arm for ``seconds``: leases in, poll; returns the hold reasons with their times."""
    holds = []
    end = clock.now() + seconds
    while clock.now() < end - 1e-12:
        clock.advance(CYCLE)
        msg = station.due(clock.now())
        if msg is not None:
            lease.on_lease(msg, clock.now())
        reason = lease.poll(clock.now())
        if reason is not None:
            holds.append((clock.now(), reason))
    return holds


def test_table_covers_every_state():
    assert {s for s, _ in TRANSITIONS} | set(TRANSITIONS.values()) == set(LeaseState)
    assert all(TRANSITIONS[(s, LeaseEvent.ESTOP)] is LeaseState.ESTOPPED for s in LeaseState)
    # no event but a command makes an arm ACTIVE, and only from READY (a fresh lease)
    assert [k for k, v in TRANSITIONS.items() if v is LeaseState.ACTIVE] == [(LeaseState.READY, LeaseEvent.COMMAND)]


def test_no_lease_refuses_motion_then_lease_and_command_allow_it():
    clock, station = SimClock(), Station()
    lease = FleetLease("arm1", {"panel-1"})
    with pytest.raises(CommandRejected, match="no_lease"):
        lease.command(clock.now())
    drive(lease, clock, station, 0.2)
    assert lease.state is LeaseState.READY and not lease.may_move(clock.now())   # a lease alone moves nothing
    lease.command(clock.now())
    assert lease.state is LeaseState.ACTIVE and lease.may_move(clock.now())


def test_expiry_holds_within_the_timeout_plus_one_cycle_and_nothing_resumes_by_itself():
    clock, station = SimClock(), Station()
    lease = FleetLease("arm1", {"panel-1"})
    drive(lease, clock, station, 0.2)
    lease.command(clock.now())
    assert drive(lease, clock, station, 1.0) == []
    station.on = False                           # the station dies (or its broker node freezes)
    last = lease.last_lease
    assert last is not None
    holds = drive(lease, clock, station, 1.0)
    assert len(holds) == 1                       # one hold, not one per cycle
    after = holds[0][0] - last
    print(f"lease expired: hold {after * 1e3:.1f} ms after the last heartbeat "
          f"(timeout {LEASE_TIMEOUT * 1e3:.0f} ms + one {CYCLE * 1e3:.0f} ms cycle)")
    assert LEASE_TIMEOUT < after <= LEASE_TIMEOUT + CYCLE + 1e-9
    assert lease.state is LeaseState.NO_LEASE
    station.on, station.next = True, clock.now()   # the station comes back
    assert drive(lease, clock, station, 1.0) == []
    assert lease.state is LeaseState.READY and not lease.may_move(clock.now())
    lease.command(clock.now())                      # only an explicit command moves it again
    assert lease.may_move(clock.now())


def test_fleet_estop_latches_until_an_authorised_clear_then_needs_lease_and_command():
    clock, station = SimClock(), Station()
    lease = FleetLease("arm1", {"panel-1"})
    drive(lease, clock, station, 0.1)
    lease.command(clock.now())
    assert lease.on_estop(FleetEstop("anyone", False, "person in the cell"), clock.now())
    holds = drive(lease, clock, station, 0.5)
    assert [h[1] for h in holds] == ["fleet e-stop by anyone: person in the cell"]
    assert holds[0][0] - 0.1 <= CYCLE + 1e-9       # held at the next cycle
    with pytest.raises(CommandRejected, match="fleet_estop"):
        lease.command(clock.now())                  # leases keep coming: still latched
    assert not lease.on_estop(FleetEstop("intruder", True, ""), clock.now())
    assert lease.dropped["unauthorised_clear"] == 1 and lease.state is LeaseState.ESTOPPED
    assert lease.on_estop(FleetEstop("panel-1", True, ""), clock.now())
    assert lease.state is LeaseState.NO_LEASE and not lease.may_move(clock.now())
    drive(lease, clock, station, 0.1)
    assert lease.state is LeaseState.READY
    lease.command(clock.now())
    assert lease.may_move(clock.now())


def test_leases_that_do_not_count_are_dropped_and_counted():
    lease = FleetLease("arm1", {"panel-1"})
    assert not lease.on_lease(Lease("rogue", "e", 1, None), 0.0)
    assert not lease.on_lease(Lease("panel-1", "e", 1, ("arm2",)), 0.0)
    assert lease.on_lease(Lease("panel-1", "e", 5, ("arm1", "arm2")), 0.0)
    assert not lease.on_lease(Lease("panel-1", "e", 5, None), 0.01)       # a replay
    assert lease.on_lease(Lease("panel-1", "restart", 1, None), 0.02)      # a restarted station
    assert dict(lease.dropped) == {"unauthorised_station": 1, "not_for_this_arm": 1, "old_seq": 1}
    gate = LeaseGate(FleetLease("arm1", {"panel-1"}))
    bad = [b"{", b"[]", b'{"station": "panel-1", "epoch": "e", "seq": NaN}', b'{"station": "p", "epoch": "e"}',
           b'{"station": "panel-1", "epoch": "e", "seq": true}', b'{"station": "a/b", "epoch": "e", "seq": 1}',
           b'{"station": "panel-1", "epoch": "e", "seq": 1, "x": 1}', b"x" * 5000,
           b'{"station": "panel-1", "epoch": "e", "seq": 1, "t": -1}',
           b'{"station": "panel-1", "epoch": "e", "seq": 1, "t": "now"}']
    assert not any(gate.on_message(LEASE_TOPIC, b, 0.0) for b in bad)
    assert sum(gate.lease.dropped.values()) == len(bad) and gate.state is LeaseState.NO_LEASE
    assert gate.on_message(LEASE_TOPIC, lease_message("panel-1", "e", 1), 0.0)
    assert parse_lease(lease_message("panel-1", "e", 7, ["arm1"])) == Lease("panel-1", "e", 7, ("arm1",))
    with pytest.raises(ConfigError):
        FleetLease("arm1", [])


@pytest.mark.parametrize("config", ["x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder",
                                    "r-series-6dof"])
def test_a_moving_sim_arm_holds_when_its_lease_expires(config):
    pytest.importorskip("mujoco")
    from hebictl.control.goal import Goal
    from hebictl.control.safety import ArmState
    from tests.control.monitors.rig import sim_arm

    arm, clock, home = sim_arm(config)
    station, lease = Station(), FleetLease("arm1", {"panel-1"})
    station.next = clock.now()
    lease.on_lease(station.due(clock.now()), clock.now())
    lease.command(clock.now())
    target = home.copy()
    target[0] += 1.0
    arm.set_goal(Goal(arm.dof).add_waypoint(t=2.0, position=target))
    held_at = None
    t_stop = clock.now() + 0.8
    while clock.now() < t_stop + 1.5:
        station.on = clock.now() < t_stop
        arm.update()
        msg = station.due(clock.now())
        if msg is not None:
            lease.on_lease(msg, clock.now())
        reason = lease.poll(clock.now())
        if reason is not None:
            arm.hold(detail=reason)
            held_at = clock.now()
        arm.send()
    assert held_at is not None and lease.last_lease is not None
    after = held_at - lease.last_lease
    q, qd = arm.backend.true_state()
    speed = float(np.abs(qd).max())
    print(f"{config}: held {after * 1e3:.1f} ms after the last lease; arm {arm.state.value}, "
          f"base stopped {abs(q[0] - home[0]):.3f} rad from home, speed {speed:.4f} rad/s")
    assert after <= LEASE_TIMEOUT + CYCLE + 1e-9
    assert arm.state is ArmState.HOLD and speed < 0.01


def test_lease_and_fleet_estop_through_a_real_broker(broker):
    """Plumbing through mosquitto, ordering only (waits are for the gate's states, with hang guards):
    heartbeats into a LeaseGate, a station that stops, a fleet e-stop that latches while heartbeats
    keep coming, and its clear. The heartbeat's rate and the lease's timing are exact in simulated
    time (above and :func:`test_heartbeats_keep_their_rate_on_absolute_deadlines`)."""
    aiomqtt = pytest.importorskip("aiomqtt")
    gate = LeaseGate(FleetLease("arm1", {"panel-1"}))

    async def scenario() -> list[str]:
        log: list[str] = []
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="arm1") as arm, \
                aiomqtt.Client("127.0.0.1", broker.port, identifier="panel-1") as station:
            await arm.subscribe(LEASE_TOPIC, qos=0)
            await arm.subscribe(ESTOP_TOPIC, qos=1)

            async def receive() -> None:
                async for m in arm.messages:
                    gate.on_message(str(m.topic), bytes(m.payload), time.monotonic())

            async def beat(stop: asyncio.Event) -> None:
                sent = await publish_heartbeats(station, Heartbeat("panel-1"), stop)
                log.append(f"{sent} heartbeats")

            async def wait_for(pred, what: str) -> None:
                await until(pred, f"{what} ({gate.state})")
                log.append(what)

            async def command(what: str) -> None:
                """Command once leased; a lease a starved test process let run out before the command
                is waited for again (the refusal is the gate's to make, not a failure of the plumbing)."""
                while True:
                    await wait_for(lambda: gate.state is LeaseState.READY, "leased")
                    assert not gate.lease.may_move(time.monotonic())   # a lease alone moves nothing
                    try:
                        gate.command(time.monotonic())
                    except CommandRejected:
                        continue
                    log.append(what)
                    return

            rx = asyncio.create_task(receive())
            first = asyncio.Event()
            beating = asyncio.create_task(beat(first))
            await command("commanded")
            first.set()
            await beating                                       # the station stops
            await wait_for(lambda: gate.poll(time.monotonic()) is not None, "held: lease expired")
            await station.publish(ESTOP_TOPIC, estop_message("panel-1", reason="test"), qos=1)
            back = asyncio.Event()
            beating = asyncio.create_task(beat(back))     # the station is back, heartbeating
            await wait_for(lambda: gate.state is LeaseState.ESTOPPED, "fleet e-stop latched")
            latched_at = gate.lease.last_lease or 0.0
            await wait_for(lambda: (gate.lease.last_lease or 0.0) > latched_at, "a heartbeat taken while e-stopped")
            with pytest.raises(CommandRejected):
                gate.command(time.monotonic())
            log.append("command refused while e-stopped")
            await station.publish(ESTOP_TOPIC, estop_message("panel-1", clear=True), qos=1)
            await wait_for(lambda: gate.state is not LeaseState.ESTOPPED, "cleared")
            await command("commanded again")
            back.set()
            await beating
            rx.cancel()
        return log

    log = asyncio.run(asyncio.wait_for(scenario(), 4 * HANG))
    print(" -> ".join(log), "| dropped:", dict(gate.lease.dropped))
    assert log[-2:] == ["commanded again", log[-1]] and log[-1].endswith("heartbeats")
    assert log.index("fleet e-stop latched") < log.index("command refused while e-stopped") < log.index("cleared")
    assert all(int(x.split()[0]) >= 1 for x in log if x.endswith("heartbeats"))


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on simulated time: where it would block for its next timer it jumps its clock
    there instead (its selector never waits), so ``loop.time()`` deadlines are exact."""

    def __init__(self) -> None:
        self.now = 0.0
        loop = self

        class Selector(selectors.DefaultSelector):
            def select(self, timeout: float | None = None) -> list:
                events = super().select(0)
                if not events and timeout:
                    loop.now += timeout
                return events

        super().__init__(Selector())

    def time(self) -> float:
        return self.now


class Recorder:
    """An aiomqtt-style client that notes the loop time of each publish; ``slow`` maps the index of a
    publish to how long [s] it takes (a congested link)."""

    def __init__(self, slow: dict[int, float] | None = None) -> None:
        self.times: list[float] = []
        self.slow = slow or {}

    async def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        assert topic == LEASE_TOPIC and qos == 0 and not retain
        self.times.append(asyncio.get_running_loop().time())
        delay = self.slow.get(len(self.times) - 1, 0.0)
        if delay:
            await asyncio.sleep(delay)


@pytest.mark.parametrize(("slow", "expected"), [
    ({}, [k * BEAT for k in range(20)]),                                     # 20 Hz for 1 s
    ({k: 0.02 for k in range(20)}, [k * BEAT for k in range(20)]),           # slow publishes: no stretch
    ({2: 0.12}, [0.0, BEAT, 2 * BEAT, 0.22, 0.27, 0.32, 0.37, 0.42, 0.47]),  # behind: at once, no burst
])
def test_heartbeats_keep_their_rate_on_absolute_deadlines(slow, expected):
    """:func:`publish_heartbeats` in simulated time (the loop's own clock): one heartbeat every 1/20 s
    on absolute deadlines; a publish that takes longer than a period is followed by one at once, then
    the period again (no burst of the missed ones); none while paused; it stops when told."""
    loop = VirtualTimeLoop()
    try:
        client, hb = Recorder(slow), Heartbeat("panel-1")
        stop = asyncio.Event()
        end = expected[-1] + BEAT / 2
        loop.call_at(end, stop.set)
        sent = loop.run_until_complete(publish_heartbeats(client, hb, stop))
        paused = Recorder()
        hb.paused = True
        stop2 = asyncio.Event()
        loop.call_at(loop.time() + 1.0, stop2.set)
        none = loop.run_until_complete(publish_heartbeats(paused, hb, stop2))
    finally:
        loop.close()
    print(f"heartbeats at {[round(t, 4) for t in client.times]} s")
    assert sent == len(expected) and client.times == pytest.approx(expected, abs=1e-9)
    assert none == 0 and paused.times == []


def run_delayed(lease: FleetLease, seconds: float, delay, offset: float = 1000.0, rate: float = 1.0,
                poll_every: float = CYCLE) -> tuple[list[float], float]:
    """Heartbeats stamped with the station's clock (``offset`` + ``rate`` x arm time) and delivered
    ``delay(sent)`` later; the arm polls every ``poll_every``. Returns (hold times, last on-time send)."""
    heartbeat_at, seq, inbox, holds = 0.0, 0, [], []
    t = 0.0
    while t < seconds - 1e-12:
        t = round(t + poll_every, 9)
        while heartbeat_at <= t:
            seq += 1
            inbox.append((heartbeat_at + delay(heartbeat_at), Lease("panel-1", "e", seq, None,
                                                                     offset + rate * heartbeat_at)))
            heartbeat_at = round(heartbeat_at + BEAT, 9)
        for msg in [m for m in inbox if m[0] <= t]:
            lease.on_lease(msg[1], t)
            inbox.remove(msg)
        if lease.state is LeaseState.READY:
            lease.command(t)
        if lease.poll(t) is not None:
            holds.append(t)
    return holds, heartbeat_at


def test_heartbeats_a_broker_delivers_late_do_not_keep_an_arm_moving():
    """From t = 1 s the broker delivers every heartbeat 1 s late (congested, or a node that froze and
    flushed): they keep arriving every 50 ms, but were sent too long ago to count."""
    lease = FleetLease("arm1", {"panel-1"})
    holds, _ = run_delayed(lease, 3.0, lambda sent: 0.005 if sent < 1.0 else 1.0)
    last_on_time = max(k * BEAT for k in range(40) if k * BEAT < 1.0)
    print(f"late delivery from 1 s: held at {holds[0]:.3f} s, {holds[0] - last_on_time:.3f} s after the last "
          f"heartbeat delivered on time; dropped {dict(lease.dropped)}")
    assert len(holds) == 1 and holds[0] - last_on_time <= LEASE_TIMEOUT + 0.005 + CYCLE + 1e-9
    assert lease.dropped["late"] > 0 and lease.state is LeaseState.NO_LEASE


def test_clock_rates_that_differ_by_150_ppm_do_not_expire_a_lease_in_an_hour():
    lease = FleetLease("arm1", {"panel-1"})
    holds, _ = run_delayed(lease, 3600.0, lambda sent: 0.005 + 0.02 * ((sent * 7.3) % 1.0), rate=1.0 - 150e-6,
                           poll_every=BEAT)
    assert holds == [] and lease.dropped["late"] == 0 and lease.state is LeaseState.ACTIVE
