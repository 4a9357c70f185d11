"""The fleet lease wired into teleop (docs/fleet.md): the arm thread's reaction exactly in simulated
time (a runner stepped by hand on a SimClock, the mock and the sim backend), the configuration, and
the plumbing through a real mosquitto with ``hebictl teleop-send --station`` as the station.

Timing claims are checked in simulated time only: the hold starts in the first cycle whose time is
past the last lease plus ``lease_timeout``. The broker test checks what happens and in which order,
never how long it took (its waits are generous hang guards).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hebictl.cli import main
from hebictl.control.arm import Arm
from hebictl.control.safety import ArmState
from hebictl.errors import ConfigError
from hebictl.hardware.clock import SimClock
from hebictl.teleop.client import TeleopClient
from hebictl.teleop.fleet import FleetSettings, fleet_settings
from hebictl.teleop.lease import ESTOP_TOPIC, LEASE_TOPIC, LeaseGate, LeaseState, estop_message, lease_message
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import Envelope, JointGoalCommand, ModeCommand, StopCommand
from hebictl.teleop.state_schema import validate
from tests._support.paths import CONFIGS_DIR, KIT6_CONFIG, KITS_DIR, REPO_ROOT
from tests._support.teleop import ARM_ID, HOME

TIMEOUT = 0.25
_seq = iter(range(1, 10**9))


def env() -> Envelope:
    return Envelope(next(_seq), 0.0, "op")


class Station:
    """A station on the arm's clock: a heartbeat every 50 ms (20 Hz) while ``on``, delivered at once."""

    def __init__(self, gate: LeaseGate, clock: SimClock, name: str = "st1", epoch: str = "e1") -> None:
        self.gate, self.clock, self.name, self.epoch = gate, clock, name, epoch
        self.on = False
        self.seq = 0
        self.next = 0.0
        self.last: float | None = None

    def tick(self) -> None:
        now = self.clock.now()
        if self.on and now >= self.next:
            self.seq += 1
            assert self.gate.on_message(LEASE_TOPIC, lease_message(self.name, self.epoch, self.seq, sent=now), now)
            self.last, self.next = now, now + 0.05


class Rig:
    """A runner with a fleet gate on a SimClock arm, stepped by hand; every step's start time kept."""

    def __init__(self, arm: Arm, clock: SimClock, rate: float) -> None:
        self.arm, self.clock = arm, clock
        self.gate = FleetSettings(("st1",), TIMEOUT).gate(ARM_ID)
        self.runner = ArmRunner(arm, rate_hz=rate, fleet=self.gate)
        self.acks: list[Any] = []
        self.runner.on_result = self.acks.append
        self.station = Station(self.gate, clock)
        self.starts: list[float] = []
        self.runner.step()

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self.station.tick()
            self.starts.append(self.clock.now())
            self.runner.step()

    def run_until(self, predicate: Callable[[], bool], seconds: float) -> None:
        end = self.clock.now() + seconds
        while not predicate():
            assert self.clock.now() < end, "not reached in simulated time"
            self.step()

    def send(self, topic: str, cmd: Any) -> Any:
        self.runner.submit(topic, cmd)
        self.step()
        return self.acks[-1]

    def hold_time(self) -> float:
        ev = self.arm.events.last
        assert ev is not None
        return ev.time


@pytest.fixture
def rig():
    clock = SimClock()
    arm = Arm.from_config(KIT6_CONFIG, backend="mock", clock=clock)
    r = Rig(arm, clock, 200.0)
    yield r
    arm.close()


def goal(rig: Rig, delta: float = 0.5, t: float = 2.0) -> JointGoalCommand:
    q = np.array(rig.arm.last_feedback.position, dtype=float)
    q[0] += delta
    return JointGoalCommand(env(), (t,), (q,), (None,))


def first_start_after(starts: list[float], t: float) -> float:
    """The first cycle start later than ``t`` (the independent reference of "the next cycle")."""
    return next(s for s in starts if s > t)


def test_motion_needs_a_lease_and_a_command_and_the_hold_comes_at_the_first_cycle_after_expiry(rig):
    # no lease: every command that could move the arm is refused, a stop is not
    ack = rig.send("mode", ModeCommand(env(), "position"))
    assert (ack.accepted, ack.reason) == (False, "no_lease")
    assert rig.send("joint_goal", goal(rig)).reason == "no_lease"
    assert rig.send("stop", StopCommand(env())).accepted
    assert rig.runner.mode == "idle" and rig.runner.snapshot.fleet == "no_lease"
    # a lease alone moves nothing
    rig.station.on = True
    rig.step(40)
    assert rig.gate.state is LeaseState.READY and rig.runner.mode == "idle"
    # lease + command: the arm moves
    assert rig.send("mode", ModeCommand(env(), "position")).accepted
    assert rig.gate.state is LeaseState.ACTIVE
    assert rig.send("joint_goal", goal(rig)).accepted
    rig.step(60)
    assert abs(rig.arm.pending_command.velocity[0]) > 0.05
    # the station stops: the hold starts in the first cycle past last lease + timeout
    rig.station.on = False
    rig.run_until(lambda: rig.runner.snapshot.last_error is not None
                  and rig.runner.snapshot.last_error.reason == "lease_expired", 1.0)
    last = rig.station.last
    assert last is not None
    held = rig.hold_time()
    expected = first_start_after(rig.starts, last + TIMEOUT)
    print(f"lease expiry on the mock at 200 Hz: held {1e3 * (held - last):.1f} ms after the last lease "
          f"(timeout {1e3 * TIMEOUT:.0f} ms, cycle 5 ms)")
    assert held == expected and held - last <= TIMEOUT + 0.005 + 1e-9
    assert rig.arm.events.last.kind.value == "teleop_link_lost" and rig.arm.state is ArmState.STOPPED
    assert rig.runner.mode == "idle" and rig.gate.state is LeaseState.NO_LEASE
    rig.step(200)  # braked and holding
    q_held = rig.arm.pending_command.position.copy()
    assert np.all(rig.arm.pending_command.velocity == 0.0)
    # the station comes back: leased again, still holding until a command
    assert rig.send("mode", ModeCommand(env(), "position")).reason == "no_lease"
    rig.station.epoch, rig.station.on = "e2", True
    rig.step(200)
    assert rig.gate.state is LeaseState.READY and rig.arm.state is ArmState.STOPPED
    assert np.array_equal(rig.arm.pending_command.position, q_held)
    assert rig.send("mode", ModeCommand(env(), "position")).accepted
    assert rig.send("joint_goal", goal(rig, -0.3)).accepted
    rig.step(60)
    assert abs(rig.arm.pending_command.velocity[0]) > 0.05


def test_a_fleet_estop_holds_at_the_next_cycle_and_latches_until_an_authorised_clear(rig):
    rig.station.on = True
    rig.step(20)
    assert rig.send("mode", ModeCommand(env(), "position")).accepted
    assert rig.send("joint_goal", goal(rig)).accepted
    rig.step(60)
    t_estop = rig.clock.now()
    assert rig.gate.on_message(ESTOP_TOPIC, estop_message("anyone", reason="drill"), t_estop)
    rig.step()
    assert rig.hold_time() == rig.starts[-1] == t_estop  # the cycle that starts next, not one later
    err = rig.runner.snapshot.last_error
    assert err is not None and err.reason == "fleet_estop" and "drill" in err.detail
    assert rig.arm.events.last.kind.value == "estop" and rig.runner.mode == "idle"
    rig.step(200)  # heartbeats go on: still latched
    assert rig.gate.state is LeaseState.ESTOPPED
    assert rig.send("mode", ModeCommand(env(), "position")).reason == "fleet_estop"
    assert not rig.gate.on_message(ESTOP_TOPIC, estop_message("rogue", clear=True), rig.clock.now())
    assert rig.gate.state is LeaseState.ESTOPPED
    assert not rig.gate.on_message(ESTOP_TOPIC, estop_message("st1", clear=True), rig.clock.now(), retained=True)
    assert rig.gate.on_message(ESTOP_TOPIC, estop_message("st1", clear=True), rig.clock.now())
    q_held = rig.arm.pending_command.position.copy()
    rig.step(100)  # cleared and leased again: nothing moves by itself
    assert rig.gate.state is LeaseState.READY and rig.runner.mode == "idle"
    assert np.array_equal(rig.arm.pending_command.position, q_held) and rig.arm.state is ArmState.STOPPED
    assert rig.send("mode", ModeCommand(env(), "position")).accepted
    assert rig.gate.state is LeaseState.ACTIVE
    assert dict(rig.gate.lease.dropped) == {"unauthorised_clear": 1, "retained": 1}


def test_a_command_between_two_polls_does_not_swallow_the_hold():
    """The arm thread polls at its cycle start and checks commands after: a lease that expires, or a
    fleet e-stop that arrives, in between is refused to the command and still held by the next poll."""
    from hebictl.errors import CommandRejected

    for cause in ("expiry", "estop"):
        gate = FleetSettings(("st1",), TIMEOUT).gate(ARM_ID)
        gate.on_message(LEASE_TOPIC, lease_message("st1", "e", 1, sent=0.0), 0.0)
        gate.command(0.0)
        assert gate.poll(0.1) is None
        now = 0.1
        if cause == "estop":
            gate.on_message(ESTOP_TOPIC, estop_message("op"), now)
        else:
            now = TIMEOUT + 0.01
        with pytest.raises(CommandRejected) as exc:
            gate.command(now)
        assert exc.value.reason == ("fleet_estop" if cause == "estop" else "no_lease")
        reason = gate.poll(now)
        assert reason is not None and ("e-stop" in reason if cause == "estop" else "expired" in reason), reason
        assert gate.poll(now) is None  # said once


def test_the_estop_connection_queue_keeps_a_fleet_estop_and_drops_heartbeats_first():
    """On the bridge's e-stop connection a full queue drops lease heartbeats first (a lost heartbeat can
    only hold the arm), never a fleet e-stop for an arm's own engage (they are different latches)."""
    from types import SimpleNamespace

    from hebictl.teleop.inbound import EstopLanes, InboundGate
    from hebictl.teleop.topics import Topics

    def msg(topic: str, payload: bytes) -> Any:
        return SimpleNamespace(topic=SimpleNamespace(value=topic), payload=payload)

    topics = Topics(ARM_ID)
    gate = InboundGate(topics, lambda: 0.0)
    lanes = EstopLanes(gate, 3)
    fleet_stop = msg(ESTOP_TOPIC, estop_message("op"))
    arm_stop = msg(topics.cmd("estop"), b'{"engaged": true, "seq": 1, "ts": 0, "client": "x"}')
    heartbeats = [msg(LEASE_TOPIC, lease_message("st1", "e", k)) for k in (1, 2)]
    engages = [msg(topics.cmd("estop"), f'{{"engaged": true, "seq": {k}, "ts": 0, "client": "x"}}'.encode())
               for k in (2, 3)]
    for m in (heartbeats[0], fleet_stop, heartbeats[1], arm_stop, *engages, msg("hebictl/v1/other/cmd/estop", b"{}")):
        lanes.push(m)
    kept = [lanes.pop() for _ in range(len(lanes))]
    # the two heartbeats went first, then the arm's oldest engage (a later one of the same sender
    # waits): the fleet e-stop, older still, is not the arm's engage and stays
    assert kept == [fleet_stop, *engages], kept
    assert gate.stats["estop_queue_dropped"] == 3


def test_the_status_carries_the_fleet_state_through_its_schema(rig):
    from hebictl.teleop.messages import status_payload

    rig.station.on = True
    rig.step(5)
    rig.gate.on_message(LEASE_TOPIC, b"{not json", rig.clock.now())
    body = validate("status", status_payload(rig.runner.snapshot, ARM_ID, online=True, ts=0.0,
                                             fleet=rig.gate.status(rig.clock.now())))
    fleet = body["fleet"]
    assert fleet["state"] == "ready" and fleet["holder"] == "st1" and fleet["stations"] == ["st1"]
    assert 0.0 <= fleet["lease_age"] <= 0.05 and fleet["lease_timeout"] == TIMEOUT
    assert fleet["dropped"] == {"malformed": 1} and fleet["estop"] is None


@pytest.mark.parametrize("config", ["x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder",
                                    "r-series-6dof"])
def test_a_moving_sim_arm_under_teleop_brakes_to_hold_when_its_lease_expires(config):
    """Every bundled config on the sim: the runner's fleet hold brakes a moving arm to rest."""
    pytest.importorskip("mujoco")
    from tests.control.monitors.rig import sim_arm

    arm, clock, home = sim_arm(config)
    try:
        rate = float(arm.backend.feedback_frequency)
        rig = Rig(arm, clock, rate)
        rig.station.on = True
        rig.step(10)
        assert rig.send("mode", ModeCommand(env(), "position")).accepted
        assert rig.send("joint_goal", goal(rig, 0.8, 2.0)).accepted
        rig.step(int(0.8 * rate))
        speed_before = float(np.abs(arm.backend.true_state()[1]).max())
        rig.station.on = False
        rig.run_until(lambda: arm.state is ArmState.STOPPED, 1.0)
        last = rig.station.last
        assert last is not None
        held = rig.hold_time()
        rig.step(int(1.5 * rate))
        q, qd = arm.backend.true_state()
        speed = float(np.abs(qd).max())
        print(f"{config} (sim, {rate:g} Hz): moving at {speed_before:.3f} rad/s, held {1e3 * (held - last):.1f} ms "
              f"after the last lease (timeout 250 ms); 1.5 s later speed {speed:.4f} rad/s, base "
              f"{q[0] - home[0]:+.3f} rad from home; arm {arm.state.value}")
        assert held == first_start_after(rig.starts, last + TIMEOUT)
        assert speed_before > 0.1 and speed < 0.01 and rig.runner.mode == "idle"
    finally:
        arm.close()


# ---------------------------------------------------------------------- configuration
def test_fleet_settings_from_the_config_and_the_flags():
    assert fleet_settings({}) is None and fleet_settings(None) is None
    s = fleet_settings({"fleet": {"stations": ["a", "b", "a"], "lease_timeout": 0.5}})
    assert s == FleetSettings(("a", "b"), 0.5)
    assert fleet_settings({"fleet": {"stations": ["a"]}}, stations=["c"], lease_timeout=0.1) == FleetSettings(("c",),
                                                                                                          0.1)
    assert fleet_settings({}, stations=["c"]) == FleetSettings(("c",), 0.25)
    bad = [({"fleet": []}, "user_data.fleet"), ({"fleet": {"stations": "a"}}, "user_data.fleet.stations"),
           ({"fleet": {"stations": ["a/b"]}}, "user_data.fleet.stations"),
           ({"fleet": {"stations": ["a"], "lease_timeout": 0}}, "user_data.fleet.lease_timeout"),
           ({"fleet": {"stations": ["a"], "lease_timout": 1}}, "user_data.fleet.lease_timout"),
           ({"fleet": {"lease_timeout": 1}}, "user_data.fleet.stations")]
    for user_data, key in bad:
        with pytest.raises(ConfigError) as exc:
            fleet_settings(user_data)
        assert exc.value.key == key, (user_data, exc.value)
    with pytest.raises(ConfigError) as exc:
        fleet_settings({}, stations=["x y"])
    assert exc.value.key == "--fleet-station"


def test_teleop_names_a_bad_fleet_section_by_file_and_line(tmp_path, capsys):
    pytest.importorskip("aiomqtt")
    text = KIT6_CONFIG.read_text()
    text = text.replace('"../hrdf_kits/', f'"{KITS_DIR}/').replace('"gains/', f'"{CONFIGS_DIR}/gains/')
    bad = tmp_path / "fleet.cfg.yaml"
    bad.write_text(text.replace("user_data:\n", "user_data:\n  fleet:\n    stations: [ok, 'not/ok']\n", 1))
    assert main(["teleop", str(bad), "--backend", "mock", "--broker", "mqtt://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    line = 1 + bad.read_text().splitlines().index("    stations: [ok, 'not/ok']")
    assert f"{bad}:{line}" in err and "user_data.fleet.stations" in err and "not/ok" in err, err
    assert "Traceback" not in err
    assert main(["teleop", "--backend", "mock", "--broker", "mqtt://127.0.0.1:1", "--fleet-station", "a",
                 "--lease-timeout", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--lease-timeout" in err and "Traceback" not in err, err
    assert main(["teleop-send", "--broker", "mqtt://127.0.0.1:1", "fleet-estop"]) == 2
    assert "needs --station" in capsys.readouterr().err


# ---------------------------------------------------------------------- a real broker
def _station(url: str, station: str) -> subprocess.Popen[bytes]:
    """``hebictl teleop-send --station ID lease``: a station process, ended by the test."""
    return subprocess.Popen([sys.executable, "-m", "hebictl", "teleop-send", "--broker", url, "--arm-id", ARM_ID,
                             "--station", station, "lease"], cwd=REPO_ROOT,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _send(url: str, *args: str) -> int:
    return subprocess.run([sys.executable, "-m", "hebictl", "teleop-send", "--broker", url, "--arm-id", ARM_ID,
                           *args], cwd=REPO_ROOT, capture_output=True, timeout=120, check=False).returncode


GUARD = 60.0  # [s] a hang guard, never a measured bound


@pytest.mark.broker
def test_fleet_plumbing_through_mosquitto_with_teleop_send_as_the_station(broker, make_server):
    """Order only: refused without a lease, moves with one, holds when the station process is
    killed, holds on a fleet e-stop (from teleop-send), and after each recovery nothing moves
    until a new lease and a command."""
    gate = FleetSettings(("st1",), TIMEOUT).gate(ARM_ID)
    server = make_server(broker.url, runner_options={"shutdown_hold": 0.05, "fleet": gate})
    procs: list[subprocess.Popen[bytes]] = []

    def fleet_state(s: dict[str, Any]) -> str | None:
        return (s.get("fleet") or {}).get("state")

    def error(s: dict[str, Any]) -> str | None:
        return (s.get("last_error") or {}).get("reason")

    async def scenario() -> None:
        async with TeleopClient(broker.url, ARM_ID, name="op") as op:
            status = await op.wait_status(lambda s: s.get("status") == "online", timeout=GUARD)
            assert fleet_state(status) == "no_lease"
            ack = await op.mode("position", timeout=GUARD)
            assert (ack.accepted, ack.reason) == (False, "no_lease")
            procs.append(_station(broker.url, "st1"))
            await op.wait_status(lambda s: fleet_state(s) == "ready", timeout=GUARD)
            assert (await op.mode("position", timeout=GUARD)).accepted
            target = list(HOME)
            target[0] += 0.6
            assert (await op.joint_goal(target, duration=30.0, timeout=GUARD)).accepted
            await op.wait_status(lambda s: s.get("arm_mode") == "follow", timeout=GUARD)
            # the station dies: the arm holds (lease_expired), its lease state no_lease
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(GUARD)
            held = await op.wait_status(lambda s: error(s) == "lease_expired", timeout=GUARD)
            assert held["mode"] == "idle" and held["state"] == "stopped" and fleet_state(held) == "no_lease"
            # a new station process: leased again, still held until a command
            procs.append(_station(broker.url, "st1"))
            ready = await op.wait_status(lambda s: fleet_state(s) == "ready", timeout=GUARD)
            assert ready["state"] == "stopped" and ready["mode"] == "idle"
            assert (await op.mode("position", timeout=GUARD)).accepted
            # a fleet e-stop from teleop-send: held, latched while the station keeps leasing
            assert await asyncio.to_thread(_send, broker.url, "--station", "drill", "fleet-estop") == 0
            held = await op.wait_status(lambda s: error(s) == "fleet_estop", timeout=GUARD)
            assert fleet_state(held) == "estopped" and held["mode"] == "idle"
            # the station saw the e-stop and stopped leasing: the arm's lease only ages
            await op.wait_status(lambda s: fleet_state(s) == "estopped" and s["fleet"]["lease_age"] > 4 * TIMEOUT,
                                 timeout=GUARD)
            ack = await op.mode("position", timeout=GUARD)
            assert (ack.accepted, ack.reason) == (False, "fleet_estop")
            assert await asyncio.to_thread(_send, broker.url, "--station", "st1", "fleet-estop", "--clear") == 0
            ready = await op.wait_status(lambda s: fleet_state(s) == "ready", timeout=GUARD)
            assert ready["mode"] == "idle" and ready["state"] == "stopped"
            assert (await op.mode("position", timeout=GUARD)).accepted
            active = await op.wait_status(lambda s: fleet_state(s) == "active", timeout=GUARD)
            assert active["fleet"]["holder"] == "st1"

    try:
        asyncio.run(asyncio.wait_for(scenario(), 10 * GUARD))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            p.communicate(timeout=GUARD)
    assert server.runner.fleet is gate
    assert procs[1].returncode == 0  # SIGTERM ends a station cleanly, with its summary


@pytest.mark.broker
def test_the_acl_lets_only_station_accounts_lease(tmp_path, make_server):
    """mosquitto with acl_text(..., stations=...): an operator account may publish the fleet e-stop
    but not a lease (the broker drops it), a station account may do both. Order only: the operator's
    forged lease is published before its e-stop on the same connection, so had it reached the arm
    it would have been there first."""
    aiomqtt = pytest.importorskip("aiomqtt")
    from tests._support.broker import local_broker

    users = {"arm-t1": "arm-pw", "operator": "op-pw", "station": "st-pw"}
    with local_broker(tmp_path / "acl", users=users, arms={"arm-t1": ARM_ID}, operators=["operator"],
                      stations=["station"]) as b:
        gate = FleetSettings(("st1",), TIMEOUT).gate(ARM_ID)
        make_server(b.url, username="arm-t1", password="arm-pw",
                    runner_options={"shutdown_hold": 0.05, "fleet": gate})

        async def scenario() -> None:
            async with aiomqtt.Client("127.0.0.1", b.port, username="operator", password="op-pw",
                                      identifier="operator:forger") as op, \
                    aiomqtt.Client("127.0.0.1", b.port, username="station", password="st-pw",
                                   identifier="station:st1") as st, \
                    TeleopClient(b.url, ARM_ID, name="operator", username="operator", password="op-pw") as view:
                await op.publish(LEASE_TOPIC, lease_message("st1", "forged", 1), qos=1)
                await op.publish(ESTOP_TOPIC, estop_message("operator", reason="acl test"), qos=1)
                await view.wait_status(lambda s: (s.get("fleet") or {}).get("state") == "estopped", timeout=GUARD)
                assert gate.lease.last_lease is None and gate.lease.holder is None  # the lease never came
                await st.publish(ESTOP_TOPIC, estop_message("st1", clear=True), qos=1)
                await st.publish(LEASE_TOPIC, lease_message("st1", "real", 1), qos=1)
                ready = await view.wait_status(lambda s: (s.get("fleet") or {}).get("state") == "ready",
                                               timeout=GUARD)
                assert ready["fleet"]["holder"] == "st1"

        asyncio.run(asyncio.wait_for(scenario(), 4 * GUARD))


def test_teleop_refuses_a_base_whose_arms_name_different_fleets(tmp_path, capsys):
    """A multi-arm config with a mobile base whose arms' ``user_data.fleet`` differ: the base takes the
    arms' fleet lease, so it would not know whose to take: refused at start (exit 2), naming the arms,
    before any broker is reached (docs/multi_arm.md, docs/fleet.md)."""
    pytest.importorskip("aiomqtt")
    text = KIT6_CONFIG.read_text()
    text = text.replace('"../hrdf_kits/', f'"{KITS_DIR}/').replace('"gains/', f'"{CONFIGS_DIR}/gains/')
    for name, station in (("left", "st1"), ("right", "st2")):
        (tmp_path / f"{name}.cfg.yaml").write_text(
            text.replace("user_data:\n", f"user_data:\n  fleet:\n    stations: [{station}]\n", 1))
    omni = (CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml").read_text()
    base = omni[omni.index("base:\n  name: base"):]
    multi = tmp_path / "fleet.multi.yaml"
    multi.write_text("multi_arm: 1\narms:\n"
                     "  - name: left\n    config: left.cfg.yaml\n    base: {xyz: [0.0, 0.3, 0.0]}\n"
                     "    families: [Left-Arm]\n"
                     "  - name: right\n    config: right.cfg.yaml\n    base: {xyz: [0.0, -0.3, 0.0]}\n"
                     "    families: [Right-Arm]\n" + base)
    assert main(["teleop", str(multi), "--backend", "mock", "--broker", "mqtt://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "user_data.fleet" in err and "left, right" in err and "base" in err, err
    assert "Traceback" not in err
