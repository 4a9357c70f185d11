"""A mobile base in teleop (hebictl/teleop/base.py), stepped by hand in one RunnerGroup with its arm on a
SimClock, on the mock and the sim: a velocity sample moves the wheels; a release and a silent stream
stop them (times in simulated time, printed with pytest -s); an arm's e-stop stops the base and holds
everything with one group event; the base's e-stop and its own fault hold the arm; the shutdown stops
the base; nothing resumes by itself. No broker here (tests/teleop/test_base_bridge.py has it)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.base import BaseState
from hebictl.control.safety import ArmState
from hebictl.errors import CommandRejected
from hebictl.hardware.clock import SimClock
from hebictl.panel.groups import overview
from hebictl.panel.link import PanelLink
from hebictl.teleop.base import BasePort, BaseRunner, BaseRunnerProxy, base_status_payload
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.fleet import FleetSettings
from hebictl.teleop.group import GROUP_HOLD, RunnerGroup
from hebictl.teleop.lease import ESTOP_TOPIC, LEASE_TOPIC, estop_message, lease_message
from hebictl.teleop.link import Channel, socket_pair
from hebictl.teleop.messages import status_payload
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.runner_proxy import Outbox
from hebictl.teleop.schema import BaseSchema, BaseVelocityCommand, Envelope, EstopCommand, ModeCommand, StopCommand
from hebictl.teleop.state_schema import validate_status
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.paths import CONFIGS_DIR

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
RATE = 200.0
DT = 1.0 / RATE
BACKENDS = ("mock", pytest.param("sim", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("mujoco") is None, reason="needs MuJoCo")))

_seq = iter(range(1, 10**9))


def env() -> Envelope:
    return Envelope(next(_seq), 0.0, "op")


def sample(v, *, deadman: bool = True, ttl: float = 0.1) -> BaseVelocityCommand:
    return BaseVelocityCommand(env(), np.asarray(v, dtype=float), deadman, ttl)


class Rig:
    """The omni-base config's arm and base on ``backend`` and one SimClock, the arm's runner and the
    base's in one RunnerGroup (acks collected), one cycle stepped."""

    def __init__(self, backend: str, *, fleet: bool = False) -> None:
        self.clock = SimClock()
        self.multi = arms_from_multi_config(Arm, CONFIG, backend, clock=self.clock)
        self.multi.base.period = DT
        self.arm = ArmRunner(self.multi.arms["arm"], rate_hz=RATE)
        #: with ``fleet``: the base's lease gate (station st1, timeout LEASE_TIMEOUT), and the station's
        #: heartbeat every 50 ms while ``leasing`` (delivered at once, on the loop's clock)
        self.gate = FleetSettings(("st1",), LEASE_TIMEOUT).gate("base") if fleet else None
        #: every gate the station leases (the base's; a test may add the arm's)
        self.gates = [] if self.gate is None else [self.gate]
        self.leasing = False
        self.lease_seq = 0
        self.next_lease = 0.0
        self.last_lease: float | None = None
        self.starts: list[float] = []
        self.base = BaseRunner(self.multi.base, fleet=self.gate)
        self.arm_acks: list = []
        self.base_acks: list = []
        self.arm.on_result = self.arm_acks.append
        self.base.on_result = self.base_acks.append
        self.group = RunnerGroup({"arm": self.arm}, rate_hz=RATE, base=("base", self.base))
        self.going = True
        self.cycles(1)

    def cycles(self, n: int, feed=None) -> None:
        for _ in range(n):
            now = self.clock.now()
            if self.gates and self.leasing and now >= self.next_lease:
                self.lease_seq += 1
                for gate in self.gates:
                    assert gate.on_message(LEASE_TOPIC, lease_message("st1", "e1", self.lease_seq, sent=now), now)
                self.last_lease, self.next_lease = now, now + 0.05
            if feed is not None:
                feed()
            self.starts.append(now)
            deadline = self.clock.now() + DT
            self.going = self.group.step()
            self.clock.sleep_until(deadline)

    def drive(self, v, seconds: float) -> None:
        """Stream ``v`` every cycle (received now) for ``seconds``."""
        self.cycles(round(seconds * RATE), lambda: self.base.offer_velocity(sample(v), self.clock.now()))

    def velocity_mode(self) -> None:
        self.base.submit("mode", ModeCommand(env(), "velocity"))
        self.cycles(1)
        assert self.base_acks[-1].accepted, self.base_acks[-1]
        assert self.base.mode == "velocity"

    def until_still(self, bound_s: float = 3.0) -> float:
        t0 = self.clock.now()
        wheels = self.multi.base
        while wheels.velocity_command.any() or not wheels.still:
            assert self.clock.now() - t0 < bound_s, f"not at rest within {bound_s} s: {wheels.feedback.velocity}"
            self.cycles(1)
        return self.clock.now() - t0

    def trips(self) -> list:
        return [e for e in self.group.group.events if e.kind == "fault"]


@pytest.fixture(params=BACKENDS)
def rig(request):
    r = Rig(request.param)
    r.backend = request.param
    yield r
    r.multi.close()


def ideal_stop(rig: Rig, v) -> float:
    return float(np.max(np.abs(v) / rig.multi.base.limits.max_acceleration))


def test_a_velocity_sample_moves_the_wheels_and_a_release_stops_them_at_once(rig):
    """Mode velocity, 3 rad/s streamed for 1 s: the wheels reach it. The dead-man release: the wheels
    ramp down from that cycle on and are at rest within v/a plus 4 cycles; the base holds (no fault,
    no group event) and stays still with nothing more sent."""
    v = np.full(rig.multi.base.size, 3.0)
    rig.velocity_mode()
    rig.drive(v, 1.0)
    np.testing.assert_allclose(rig.multi.base.feedback.velocity, v, rtol=0.03)
    before = rig.multi.base.velocity_command.copy()
    rig.base.offer_velocity(sample([0, 0, 0], deadman=False), rig.clock.now())
    rig.cycles(1)
    assert np.all(rig.multi.base.velocity_command < before), "the release ramps down in its own cycle"
    t = rig.until_still() + DT
    print(f"\n[{rig.backend}] release at {v[0]:g} rad/s: at rest after {t * 1e3:.0f} ms "
          f"(v/a {ideal_stop(rig, v) * 1e3:.0f} ms)")
    assert t <= ideal_stop(rig, v) + 4 * DT
    assert rig.base.counts["released"] == 1 and rig.multi.base.state is BaseState.RUNNING
    assert not rig.trips() and rig.arm.arm.state is ArmState.RUNNING
    rig.cycles(100)
    assert not rig.multi.base.velocity_command.any(), "nothing resumes by itself"


def test_a_silent_stream_stops_the_base_once_its_ttl_has_passed(rig):
    """The last sample (ttl 0.1 s) drives the wheels until its ttl has passed, then the base holds (counted
    ``expired``, not a fault): ramp-down starts within one cycle after the ttl, at rest within ttl + v/a +
    4 cycles of the last sample. A new sample moves it again; mode stays velocity."""
    v = np.full(rig.multi.base.size, 4.0)
    rig.velocity_mode()
    rig.drive(v, 1.0)
    t_last = rig.clock.now() - DT   # the last sample's receipt
    start = rig.clock.now()
    while rig.base.counts["expired"] == 0:
        assert rig.clock.now() - start < 1.0
        np.testing.assert_allclose(rig.multi.base.velocity_command, v)   # still driving within the ttl
        rig.cycles(1)
    held = rig.clock.now() - t_last
    rig.until_still()
    t = rig.clock.now() - t_last
    print(f"\n[{rig.backend}] silent stream at {v[0]:g} rad/s, ttl 0.1 s: held {held * 1e3:.0f} ms after the "
          f"last sample, at rest {t * 1e3:.0f} ms after it (ttl + v/a {(0.1 + ideal_stop(rig, v)) * 1e3:.0f} ms)")
    assert 0.1 <= held <= 0.1 + 2 * DT
    assert t <= 0.1 + ideal_stop(rig, v) + 5 * DT
    assert rig.multi.base.state is BaseState.RUNNING and rig.base.mode == "velocity" and not rig.trips()
    rig.drive(v, 0.5)
    assert rig.multi.base.velocity_command.any(), "a new sample moves it again"


def test_an_arms_estop_stops_the_base_and_holds_everything_with_one_group_event(rig):
    """The arm's e-stop while the base drives at 4 rad/s: in that cycle the base is stopped by the group
    (one group event, naming the arm), idle with last error group_hold; at rest within v/a + 4 cycles;
    velocity then refused; the base's mode refused group_hold while the arm's e-stop is engaged."""
    v = np.full(rig.multi.base.size, 4.0)
    rig.velocity_mode()
    rig.drive(v, 1.0)
    rig.arm.engage_estop(EstopCommand(env(), True))
    rig.cycles(1, lambda: rig.base.offer_velocity(sample(v), rig.clock.now()))
    assert rig.multi.base.state is BaseState.STOPPING and rig.base.mode == "idle"
    trips = rig.trips()
    assert len(trips) == 1 and trips[0].arm == "arm" and "e-stop engaged" in trips[0].detail
    assert rig.base.last_error.reason == GROUP_HOLD and "arm arm" in rig.base.last_error.detail
    assert rig.base.snapshot["group"]["by"] == "arm" and rig.base.snapshot["group"]["base"] == "base"
    t = rig.until_still() + DT
    print(f"\n[{rig.backend}] arm's e-stop at {v[0]:g} rad/s: base at rest after {t * 1e3:.0f} ms "
          f"(v/a {ideal_stop(rig, v) * 1e3:.0f} ms)")
    assert t <= ideal_stop(rig, v) + 4 * DT
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.cycles(1)
    assert rig.base_acks[-1].reason == GROUP_HOLD and rig.multi.base.state is BaseState.STOPPED
    assert len(rig.trips()) == 1


def test_the_bases_estop_holds_the_arm_and_nothing_resumes_by_itself(rig):
    """The base's e-stop: the base stops, the arm is held by the group (one event naming the base), idle
    with group_hold; the arm's mode is refused group_hold while the base's e-stop is engaged; a velocity
    sample is refused wrong_mode. Released and set to velocity the base holds zero until a sample, and
    the arm then takes its own mode."""
    v = np.full(rig.multi.base.size, 2.0)
    rig.arm.submit("mode", ModeCommand(env(), "position"))
    rig.velocity_mode()
    rig.drive(v, 0.5)
    rig.base.engage_estop(EstopCommand(env(), True))
    rig.cycles(1)
    assert rig.multi.base.state is BaseState.STOPPING and rig.arm.arm.state is ArmState.STOPPED
    trips = rig.trips()
    assert len(trips) == 1 and trips[0].arm == "base" and "e-stop engaged" in trips[0].detail
    assert rig.arm.mode == "idle" and rig.arm.snapshot.last_error.reason == GROUP_HOLD
    assert "the base holds every arm" in rig.arm.snapshot.last_error.detail
    assert rig.arm.snapshot.group["by"] == "base"
    rig.arm.submit("mode", ModeCommand(env(), "position"))
    rig.base.offer_velocity(sample(v), rig.clock.now())
    rig.cycles(1)
    assert rig.arm_acks[-1].reason == GROUP_HOLD and rig.base_acks[-1].reason == "wrong_mode"
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.cycles(1)
    assert rig.base_acks[-1].reason == "estop_engaged"
    rig.until_still()
    rig.base.submit("estop", EstopCommand(env(), False))
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.cycles(2)
    assert rig.base_acks[-1].accepted and rig.multi.base.state is BaseState.RUNNING
    rig.cycles(50)
    assert not rig.multi.base.velocity_command.any(), "cleared: holding zero until a sample"
    assert rig.arm.arm.state is ArmState.STOPPED, "the arm does not resume by itself"
    rig.arm.submit("mode", ModeCommand(env(), "position"))
    rig.cycles(1)
    assert rig.arm_acks[-1].accepted and rig.arm.arm.state is ArmState.RUNNING


def test_a_fault_of_the_base_holds_the_arm_with_one_event_naming_the_base(rig):
    """A latched fault of the base's own (here a hardware error) trips the group: one event naming the
    base and its cause, the arm stopped and told, the base idle with that error."""
    rig.velocity_mode()
    rig.multi.base.stop("hardware_error", "test: write failed")
    rig.cycles(1)
    trips = rig.trips()
    assert len(trips) == 1 and trips[0].arm == "base" and "hardware_error" in trips[0].detail
    assert rig.arm.arm.state is ArmState.STOPPED and rig.arm.snapshot.last_error.reason == GROUP_HOLD
    assert rig.base.mode == "idle" and rig.base.last_error.reason == "hardware_error"


def test_a_stop_command_holds_the_base_without_a_fault(rig):
    v = np.full(rig.multi.base.size, 2.0)
    rig.velocity_mode()
    rig.drive(v, 0.5)
    rig.base.submit("stop", StopCommand(env()))
    rig.cycles(1)
    assert rig.base_acks[-1].accepted and rig.base.mode == "idle"
    rig.until_still()
    assert not rig.trips() and rig.multi.base.state is BaseState.RUNNING


def test_the_shutdown_stops_the_base_and_ends_once_it_is_at_rest(rig):
    """SIGTERM's begin_shutdown: the base is stopped in the next cycle (not a fault: no group trip of its
    own), the loop goes on until it is at rest, then the base's part of the loop is done."""
    v = np.full(rig.multi.base.size, 4.0)
    rig.velocity_mode()
    rig.drive(v, 1.0)
    t0 = rig.clock.now()
    rig.group.begin_shutdown("terminate")
    rig.cycles(1)
    assert rig.multi.base.state is BaseState.STOPPING and rig.base.mode == "idle"
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.cycles(1)
    assert rig.base_acks[-1].reason == "shutting_down"
    assert not rig.trips()
    while rig.multi.base.state is not BaseState.STOPPED:
        assert rig.clock.now() - t0 < 2.0
        rig.cycles(1)
    print(f"\n[{rig.backend}] SIGTERM at {v[0]:g} rad/s: base stopped after {(rig.clock.now() - t0) * 1e3:.0f} ms")
    assert rig.multi.base.state is BaseState.STOPPED and not rig.multi.base.velocity_command.any()
    assert rig.clock.now() - t0 <= ideal_stop(rig, v) + 4 * DT


def test_the_base_status_passes_the_status_schema(rig):
    rig.velocity_mode()
    rig.drive([1.0, 1.0, 1.0], 0.2)
    payload = base_status_payload(rig.base.snapshot, "base", online=True, ts=1.0, bridge={"received": 1})
    status, bad_group = validate_status(payload, "base")
    assert bad_group is None and status["group"]["arms"] == ["arm", "base"], status
    assert status["mode"] == "velocity" and len(status["base"]["command"]) == 3
    off = json.loads(base_status_payload(rig.base.snapshot, "base", online=False, ts=1.0))
    assert off["state"] == "offline" and "base" not in off and "mode" not in off


@pytest.mark.parametrize(("body", "reason"), [
    ({"velocity": [1, 2], "deadman": True}, "wrong_length"),
    ({"velocity": [1, 2, "x"], "deadman": True}, "wrong_type"),
    ({"velocity": "fast", "deadman": True}, "wrong_type"),
    ({"velocity": [1, 2, 99], "deadman": True}, "out_of_limits"),
    ({"velocity": [1, 2, 1e999], "deadman": True}, "not_finite"),
    ({"velocity": [1, 2, 3], "deadman": True, "ttl": 0.3}, "ttl_too_long"),
    ({"velocity": [1, 2, 3], "deadman": True, "ttl": 0}, "out_of_range"),
    ({"velocity": [1, 2, 3], "deadman": "yes"}, "wrong_type"),
    ({"velocity": [1, 2, 3]}, "missing_field"),
    ({"velocity": [1, 2, 3], "deadman": True, "space": "joint"}, "unknown_field"),
])
def test_the_base_schema_refuses_a_bad_velocity(body, reason):
    """One schema with the arms' commands: the envelope, then each wheel within max_velocity, a ttl
    bounded by the base's command_ttl (0.25 s here) and the jog bound."""
    schema = BaseSchema([9.6, 9.6, 9.6], 0.25)
    with pytest.raises(CommandRejected) as exc:
        schema.validate("velocity", body, env())
    assert exc.value.reason == reason
    assert schema.validate("velocity", {"velocity": [1, -2, 9.6], "deadman": True, "ttl": 0.25}, env()).ttl == 0.25
    with pytest.raises(CommandRejected, match="unknown_topic"):
        schema.validate("jog", {}, env())


def test_every_estop_of_a_cycle_comes_before_the_bases_commands_in_it():
    """The base's mode queued first and its e-stop after it, taken in one cycle: the e-stop first, the mode
    refused estop_engaged. The arm's e-stop and the base's mode in one cycle: the mode refused group_hold."""
    rig = Rig("mock")
    try:
        rig.base.submit("mode", ModeCommand(env(), "velocity"))
        rig.base.engage_estop(EstopCommand(env(), True))
        rig.cycles(1)
        assert [(a.topic, a.accepted, a.reason) for a in rig.base_acks] == [("estop", True, ""),
                                                                            ("mode", False, "estop_engaged")]
        assert rig.base.mode == "idle" and rig.multi.base.state is not BaseState.RUNNING
        rig.base.submit("estop", EstopCommand(env(), False))
        rig.arm.submit("mode", ModeCommand(env(), "position"))
        rig.cycles(1)
        assert rig.arm_acks[-1].reason == GROUP_HOLD, "the base holds every arm until its own mode clears it"
        rig.base.submit("mode", ModeCommand(env(), "velocity"))
        rig.cycles(1)
        rig.arm.submit("mode", ModeCommand(env(), "position"))
        rig.cycles(1)
        assert rig.base_acks[-1].accepted and rig.arm_acks[-1].accepted
        rig.arm.engage_estop(EstopCommand(env(), True))
        rig.base.submit("mode", ModeCommand(env(), "velocity"))
        rig.cycles(1)
        assert rig.base_acks[-1].reason == GROUP_HOLD and rig.base.mode == "idle"
    finally:
        rig.multi.close()


def test_a_lost_link_holds_the_base_without_a_fault():
    """The base's bridge lost the broker while a stream drove it: the base holds (mode idle, last error
    teleop_link_lost), no group trip, the arm runs on; a later sample is refused until a new mode."""
    rig = Rig("mock")
    try:
        v = np.full(rig.multi.base.size, 2.0)
        rig.velocity_mode()
        rig.drive(v, 0.5)
        rig.base.link_lost("lost the broker")
        rig.cycles(1)
        assert rig.base.mode == "idle" and rig.base.last_error.reason == "teleop_link_lost"
        rig.until_still()
        assert not rig.trips() and rig.arm.arm.state is ArmState.RUNNING
        assert rig.multi.base.state is BaseState.RUNNING
        rig.base.offer_velocity(sample(v), rig.clock.now())
        rig.cycles(1)
        assert rig.base_acks[-1].reason == "wrong_mode" and not rig.multi.base.velocity_command.any()
    finally:
        rig.multi.close()


def test_the_panel_shows_the_base_as_a_member_of_the_group():
    """The panel (which lists every status it sees on the broker) takes the base's status, and the group
    the arm and the base both name is confirmed, held by the base after its e-stop."""
    rig = Rig("mock")
    try:
        rig.base.engage_estop(EstopCommand(env(), True))
        rig.cycles(2)

        async def main() -> dict:
            link = PanelLink(parse_broker("mqtt://127.0.0.1:1"), name="p")
            link.receive("hebictl/v1/base/state/status",
                         base_status_payload(rig.base.snapshot, "base", online=True, ts=1.0))
            link.receive("hebictl/v1/arm/state/status", status_payload(rig.arm.snapshot, "arm", online=True, ts=1.0))
            return overview(link.arms)

        seen = asyncio.run(main())
        assert [g["arms"] for g in seen["groups"]] == [["arm", "base"]], seen
        assert seen["groups"][0]["held"] and seen["groups"][0]["by"] == "base", seen
        card = next(c for c in seen["arms"] if c.get("arm_id", c.get("id")) == "base")
        assert card["in_group"], card
    finally:
        rig.multi.close()


def test_the_bridge_process_link_hands_over_in_order_and_its_loss_holds_the_base():
    """The loop's end of the base's bridge-process link (BasePort), fed as the child's proxy feeds it: an
    e-stop on the priority channel and a mode and a sample on the command channel are taken in one cycle,
    the e-stop first (the mode refused, the sample refused with it); the snapshot and the acks go back. The
    child's end closed (it died): a lost link, the base holds (mode idle, last error teleop_link_lost)
    without a group fault."""
    rig = Rig("mock")
    try:
        (p_loop, p_child), (c_loop, c_child) = socket_pair(), socket_pair()
        port = BasePort(rig.base, Channel(p_loop), Channel(c_loop))
        rig.base.port = port
        proxy = BaseRunnerProxy(Outbox(Channel(p_child), 16), Outbox(Channel(c_child), 16), rig.base.snapshot)
        proxy.submit("mode", ModeCommand(env(), "velocity"))
        proxy.offer_velocity(sample([1.0, 1.0, 1.0]), 0.0)
        proxy.engage_estop(EstopCommand(env(), True))
        rig.cycles(1)
        back = Channel(c_child).receive(16)
        acks = [m[1] for m in back if m[0] == "ack"]
        # (the sample waiting when the e-stop came is refused with it: answered, not dropped)
        assert [(a.topic, a.accepted, a.reason) for a in acks] == [("velocity", False, "estop_engaged"),
                                                                   ("estop", True, ""),
                                                                   ("mode", False, "estop_engaged")], acks
        assert not rig.multi.base.velocity_command.any()
        assert any(m[0] == "snapshot" and m[1]["estop"] for m in back)
        proxy.submit("estop", EstopCommand(env(), False))
        proxy.submit("mode", ModeCommand(env(), "velocity"))
        rig.cycles(2)
        assert rig.base.mode == "velocity" and rig.multi.base.state is BaseState.RUNNING
        p_child.close()
        c_child.close()
        rig.cycles(1)
        assert rig.base.mode == "idle" and rig.base.last_error.reason == "teleop_link_lost"
        assert "ended" in rig.base.last_error.detail and len(rig.trips()) == 1   # the e-stop's trip only
    finally:
        rig.multi.close()


# ---------------------------------------------------------------------- the fleet lease (docs/fleet.md)
LEASE_TIMEOUT = 0.25


@pytest.fixture(params=BACKENDS)
def fleet_rig(request):
    r = Rig(request.param, fleet=True)
    r.backend = request.param
    yield r
    r.multi.close()


def refusals(rig: Rig) -> list[str]:
    return [a.reason for a in rig.base_acks if not a.accepted]


def test_the_base_moves_only_with_a_lease_and_stops_at_the_first_cycle_after_it_expires(fleet_rig):
    """A base with a fleet lease, exactly as an arm: without a lease ``cmd/mode velocity`` and a velocity sample
    are refused ``no_lease``; with one (``ready``) a sample still is (``wrong_mode``: the mode is idle), until
    the mode is set (the explicit command: ``active``). Driving at 3 rad/s with the dead-man still held, the
    station goes silent: the base's latched stop (``lease_expired``) comes in the first cycle whose start is
    past the last lease + lease_timeout, the wheels are at rest within v/a + 4 cycles, mode idle, the arm held
    by the group. The station comes back: nothing moves (samples refused ``wrong_mode`` while ``ready``) until
    a new ``cmd/mode velocity``."""
    rig = fleet_rig
    v = np.full(rig.multi.base.size, 3.0)
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.base.offer_velocity(sample(v), rig.clock.now())
    rig.cycles(1)
    assert refusals(rig) == ["no_lease", "no_lease"] and rig.base.mode == "idle"
    assert rig.base.snapshot["fleet"] == "no_lease"
    rig.leasing = True
    rig.cycles(1)
    assert rig.base.snapshot["fleet"] == "ready"
    rig.base.offer_velocity(sample(v), rig.clock.now())
    rig.cycles(1)
    assert refusals(rig)[-1] == "wrong_mode" and not rig.multi.base.velocity_command.any()
    rig.velocity_mode()
    assert rig.base.snapshot["fleet"] == "active"
    rig.drive(v, 1.0)
    np.testing.assert_allclose(rig.multi.base.feedback.velocity, v, rtol=0.03)

    rig.leasing = False   # the station dies; the operator keeps the dead-man held
    last = rig.last_lease
    assert last is not None
    expiry = last + LEASE_TIMEOUT
    t0 = rig.clock.now()
    while rig.multi.base.latch is None:
        assert rig.clock.now() - t0 < 1.0, "no stop within 1 s of simulated time"
        rig.drive(v, DT)
    latch = rig.multi.base.latch
    stop_cycle = rig.starts[-1]
    first_after = next(t for t in rig.starts if t > expiry)
    late = round((stop_cycle - expiry) / DT, 3)
    assert latch.kind == "lease_expired" and stop_cycle == first_after, (latch, stop_cycle, first_after)
    assert rig.base.mode == "idle" and rig.base.last_error.reason == "lease_expired"
    assert rig.base.snapshot["fleet"] == "no_lease"
    t_stop = rig.until_still() + DT
    print(f"\n[{rig.backend}] base lease expiry at {v[0]:g} rad/s: stop commanded in the first cycle after expiry "
          f"({late:.3f} cycles = {(stop_cycle - expiry) * 1e3:.2f} ms past last lease + {LEASE_TIMEOUT:g} s), "
          f"at rest {t_stop * 1e3:.0f} ms later (v/a {ideal_stop(rig, v) * 1e3:.0f} ms)")
    assert stop_cycle - expiry <= DT
    assert t_stop <= ideal_stop(rig, v) + 4 * DT
    assert rig.multi.base.state is BaseState.STOPPED
    assert rig.arm.arm.state is ArmState.STOPPED and [e.arm for e in rig.trips()] == ["base"]
    assert "lease_expired" in refusals(rig)   # the sample of the stop's cycle: answered, not dropped

    rig.leasing = True   # the station is back: leased, still stopped
    rig.cycles(2)
    assert rig.base.snapshot["fleet"] == "ready"
    n = len(rig.base_acks)
    rig.drive(v, 0.2)
    assert set(refusals(rig)[n - len(rig.base_acks):]) == {"wrong_mode"}
    assert not rig.multi.base.velocity_command.any() and rig.multi.base.state is BaseState.STOPPED
    rig.cycles(100)
    assert not rig.multi.base.velocity_command.any(), "nothing resumes by itself"
    rig.velocity_mode()   # the new lease and the explicit command
    rig.drive(v, 0.5)
    assert np.all(rig.multi.base.feedback.velocity > 1.0)


def test_a_fleet_estop_stops_a_driving_base_latched_until_an_authorised_clear(fleet_rig):
    """A fleet e-stop (from any station) while the base drives: the latched stop ``fleet_estop`` at the
    next cycle, at rest within v/a + 4 cycles; ``cmd/mode velocity`` refused ``fleet_estop`` while the
    station still leases; an unauthorised clear changes nothing; st1's clear leaves it ``no_lease`` then
    ``ready``, and only ``cmd/mode velocity`` lets a sample move it."""
    rig = fleet_rig
    v = np.full(rig.multi.base.size, 3.0)
    rig.leasing = True
    rig.cycles(1)
    rig.velocity_mode()
    rig.drive(v, 1.0)
    t_msg = rig.clock.now()
    assert rig.gate is not None
    assert rig.gate.on_message(ESTOP_TOPIC, estop_message("drill", reason="test"), t_msg)
    rig.drive(v, DT)
    latch = rig.multi.base.latch
    assert latch is not None and latch.kind == "fleet_estop" and rig.starts[-1] == t_msg, latch
    t_stop = rig.until_still() + DT
    print(f"\n[{rig.backend}] fleet e-stop at {v[0]:g} rad/s: stop commanded in the cycle after the message "
          f"(0 cycles late), at rest {t_stop * 1e3:.0f} ms later (v/a {ideal_stop(rig, v) * 1e3:.0f} ms)")
    assert t_stop <= ideal_stop(rig, v) + 4 * DT
    rig.base.submit("mode", ModeCommand(env(), "velocity"))
    rig.cycles(1)
    assert refusals(rig)[-1] == "fleet_estop" and rig.base.snapshot["fleet"] == "estopped"
    assert not rig.gate.on_message(ESTOP_TOPIC, estop_message("drill", clear=True), rig.clock.now())
    assert rig.gate.on_message(ESTOP_TOPIC, estop_message("st1", clear=True), rig.clock.now())
    rig.cycles(12)   # the next heartbeat: ready
    assert rig.base.snapshot["fleet"] == "ready"
    rig.drive(v, 0.1)
    assert refusals(rig)[-1] == "wrong_mode" and not rig.multi.base.velocity_command.any()
    # (the arm, held by the group for the base's cause, is cleared by its own mode, as ever)
    assert (rig.arm.arm.state is ArmState.STOPPED)
    rig.velocity_mode()
    rig.drive(v, 0.5)
    assert np.all(rig.multi.base.feedback.velocity > 1.0)


def test_the_base_status_carries_the_fleet_object_as_an_arms(fleet_rig):
    rig = fleet_rig
    rig.leasing = True
    rig.cycles(2)
    assert rig.gate is not None
    payload = base_status_payload(rig.base.snapshot, "base", online=True, ts=1.0,
                                  fleet=rig.gate.status(rig.clock.now()))
    status, _ = validate_status(payload, "base")
    assert status["fleet"]["state"] == "ready" and status["fleet"]["holder"] == "st1"
    assert status["fleet"]["stations"] == ["st1"] and status["fleet"]["lease_timeout"] == LEASE_TIMEOUT
    plain = json.loads(base_status_payload(rig.base.snapshot, "base", online=True, ts=1.0))
    assert "fleet" not in plain


@pytest.mark.parametrize("what", ["estop", "link", "stop", "idle"])
def test_a_sample_that_waits_in_the_cycle_of_a_stop_is_answered(what):
    """A driving sample still in the mailbox when the same cycle's e-stop, lost link, cmd/stop or mode
    idle idles the base: refused with that reason (the bridge counted it accepted), not dropped."""
    rig = Rig("mock")
    try:
        rig.velocity_mode()
        rig.drive([2.0, 2.0, 2.0], 0.1)
        rig.base.offer_velocity(sample([2.0, 2.0, 2.0]), rig.clock.now())
        if what == "estop":
            rig.base.engage_estop(EstopCommand(env(), True))
        elif what == "link":
            rig.base.link_lost("the bridge died")
        elif what == "stop":
            rig.base.submit("stop", StopCommand(env()))
        else:
            rig.base.submit("mode", ModeCommand(env(), "idle"))
        n = len(rig.base_acks)
        rig.cycles(1)
        refused = [a for a in rig.base_acks[n:] if not a.accepted]
        expected = {"estop": "estop_engaged", "link": "link_lost", "stop": "wrong_mode", "idle": "wrong_mode"}[what]
        assert [(a.topic, a.reason) for a in refused] == [("velocity", expected)], rig.base_acks[n:]
        assert rig.base.counts["refused"] == 1 and rig.base.mode == "idle"
    finally:
        rig.multi.close()


def test_a_fleet_estop_reaching_the_arm_and_the_base_in_one_cycle_leaves_each_clearable():
    """The arm and the base both leased and moving; one fleet e-stop reaches both gates before the same
    cycle: both latch their own ``fleet_estop`` there, the arm trips the group. After the clear and a new
    lease the arm's ``cmd/mode`` and then the base's are accepted (the base, latched in the trip's cycle,
    counts as held by the group, as a held arm does: neither refuses the other ``group_hold`` for ever)."""
    rig = Rig("mock", fleet=True)
    try:
        arm_gate = FleetSettings(("st1",), LEASE_TIMEOUT).gate("arm")
        rig.arm.fleet = arm_gate
        rig.gates.append(arm_gate)
        rig.leasing = True
        rig.cycles(1)
        rig.velocity_mode()
        rig.arm.submit("mode", ModeCommand(env(), "position"))
        rig.cycles(1)
        assert rig.arm_acks[-1].accepted, rig.arm_acks[-1]
        rig.drive([3.0, 3.0, 3.0], 0.5)
        now = rig.clock.now()
        for gate in rig.gates:
            assert gate.on_message(ESTOP_TOPIC, estop_message("drill"), now)
        rig.cycles(1)
        latch = rig.multi.base.latch
        assert latch is not None and latch.kind == "fleet_estop" and rig.arm.arm.state is ArmState.STOPPED
        assert [e.arm for e in rig.trips()] == ["arm"]
        rig.until_still()
        for gate in rig.gates:
            assert gate.on_message(ESTOP_TOPIC, estop_message("st1", clear=True), rig.clock.now())
        rig.cycles(12)
        assert rig.base.snapshot["fleet"] == "ready" and arm_gate.state.value == "ready"
        rig.arm.submit("mode", ModeCommand(env(), "position"))
        rig.cycles(1)
        assert rig.arm_acks[-1].accepted, rig.arm_acks[-1]
        rig.velocity_mode()
        rig.drive([3.0, 3.0, 3.0], 0.5)
        assert np.all(rig.multi.base.feedback.velocity > 1.0)
    finally:
        rig.multi.close()
