"""The arm thread's command handling, stepped by hand on a SimClock (deterministic, no broker)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.motion import Brake
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import ArmState
from hebictl.hardware.clock import SimClock
from hebictl.teleop.jog import MAX_ACCEL, MAX_TTL
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import (
    Envelope,
    EstopCommand,
    JogCommand,
    JointGoalCommand,
    ModeCommand,
    StopCommand,
)
from tests._support.paths import BUNDLED_CONFIGS
from tests._support.paths import KIT6_CONFIG as KIT6
from tests._support.teleop import HOME

RATE = 200.0
DT = 1.0 / RATE


@pytest.fixture
def rig():
    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock)
    runner = ArmRunner(arm, rate_hz=RATE)
    acks = []
    runner.on_result = acks.append
    runner.step()  # first feedback
    yield runner, arm, clock, acks
    arm.close()


_seq = iter(range(1, 10**9))


def env() -> Envelope:
    return Envelope(next(_seq), 0.0, "op")


def goal(q, t=1.5) -> JointGoalCommand:
    """A one-waypoint goal; the mock starts at zeros, so HOME needs >= 1.25 s at rated speed."""
    return JointGoalCommand(env(), (t,), (np.asarray(q, dtype=float),), (None,))


def steps(runner: ArmRunner, n: int) -> None:
    for _ in range(n):
        runner.step()


def test_estop_is_handled_ahead_of_queued_goals(rig):
    """Goals queued before an e-stop in the same cycle are rejected after it; the arm holds (finite command)."""
    runner, arm, _, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.step()
    for _ in range(3):
        runner.submit("joint_goal", goal(HOME))
    runner.engage_estop(EstopCommand(env(), True))
    runner.step()
    assert [(a.topic, a.accepted, a.reason) for a in acks[1:]] == \
        [("estop", True, "")] + [("joint_goal", False, "estop_engaged")] * 3
    assert arm.state is not ArmState.RUNNING and arm.trajectory is None
    assert np.isfinite(arm.pending_command.position).all()
    assert "release" not in arm.events.kinds()


def test_an_estop_pressed_after_a_release_in_the_same_cycle_stays_engaged(rig):
    """The engage jumps the queue; a release published before it (still queued) must not undo it.
    Found by the panel's e2e test: release, then space bar, within one 10 ms cycle."""
    runner, arm, _, acks = rig
    runner.engage_estop(EstopCommand(env(), True))
    runner.step()
    runner.submit("estop", EstopCommand(env(), False))   # the operator releases...
    runner.engage_estop(EstopCommand(env(), True))       # ...and presses the e-stop again at once
    runner.step()
    assert runner.snapshot.estop and runner.estop_latched
    assert [(a.topic, a.accepted, a.reason) for a in acks[-2:]] == \
        [("estop", True, ""), ("estop", False, "estop_engaged")]
    runner.submit("estop", EstopCommand(env(), False))   # a release sent after it still works
    runner.step()
    assert acks[-1].accepted and not runner.estop_latched


def test_a_mode_queued_before_the_link_was_lost_does_not_resume_the_arm(rig):
    """The link loss jumps the queue like an e-stop; a mode command that arrived before it (still
    queued in the same cycle) is refused, so the arm stays stopped until a new mode arrives."""
    runner, arm, _, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.link_lost("broker gone")
    runner.step()
    assert (acks[-1].topic, acks[-1].accepted, acks[-1].reason) == ("mode", False, "stopped")
    assert runner.mode == "idle" and arm.state is not ArmState.RUNNING
    runner.submit("mode", ModeCommand(env(), "position"))  # after reconnecting: a new mode resumes
    runner.step()
    assert acks[-1].accepted and runner.mode == "position"


def test_estop_latched_until_released_and_mode_set(rig):
    """After an e-stop: mode refused while engaged; released alone keeps the arm stopped; mode re-arms."""
    runner, arm, _, acks = rig
    runner.engage_estop(EstopCommand(env(), True))
    runner.step()
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.step()
    assert acks[-1].reason == "estop_engaged" and arm.state is not ArmState.RUNNING
    runner.submit("estop", EstopCommand(env(), False))
    steps(runner, 5)
    assert acks[-1].accepted and arm.state is not ArmState.RUNNING and runner.mode == "idle"
    runner.submit("joint_goal", goal(HOME))
    runner.step()
    assert acks[-1].reason == "wrong_mode"
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.submit("joint_goal", goal(HOME, 1.5))
    steps(runner, int(1.6 * RATE))
    assert acks[-1].accepted and arm.state is ArmState.RUNNING and arm.at_goal
    np.testing.assert_allclose(arm.last_feedback.position, HOME, atol=1e-9)


def test_jog_integrates_velocity_and_expires_after_ttl(rig):
    """A joint jog moves joint 1 at v (after a slew ramp at the jog's capped rate); with no new sample it brakes
    within one cycle after its ttl and holds where the Arm's brake ramp ends."""
    runner, arm, clock, acks = rig
    runner.submit("mode", ModeCommand(env(), "jog"))
    runner.step()
    q0 = arm.pending_command.position.copy()
    v = 0.4
    ttl = 0.3
    received = clock.now()
    runner.offer_jog(JogCommand(env(), "joint", np.array([v, 0, 0, 0, 0, 0.0]), True, ttl), received)
    jog_cycles = 0
    while arm.events.last is None or arm.events.last.kind != "teleop_jog_expired":
        runner.step()
        jog_cycles += runner.jog.active
        assert clock.now() < received + 1.0
    ev = arm.events.last
    expiry = received + ttl
    assert expiry < ev.time <= expiry + DT + 1e-9
    # continuous reference: a ramp at the jog's rate (8 rad/s² asked, capped at MAX_ACCEL) to v, then v
    ramp = v / min(8.0, MAX_ACCEL)
    expected = v * (jog_cycles * DT - ramp / 2.0)
    assert runner.jog.position[0] - q0[0] == pytest.approx(expected, abs=v * DT)
    assert jog_cycles == pytest.approx(ttl * RATE, abs=2)
    # braking: velocity ramps to zero, then the arm holds at the profile's end
    steps(runner, int(0.3 * RATE))
    assert arm.state is ArmState.HOLD and arm.pending_command.velocity[0] == 0.0
    held = arm.pending_command.position.copy()
    # the Arm's brake ramp from the jog's last command (v, position): it stops v T / 2 further on
    brake = arm.supervisor.motion.after  # the ramp the hold came from
    assert brake is not None and brake.v0[0] == pytest.approx(v, rel=1e-9)
    decel = arm.brake_planner.deceleration(brake.p0)[0]  # at most rated, less where effort is short
    assert decel <= arm.limits.acceleration_max[0]
    # constant deceleration at decel, its last TAPER v / decel falling linearly to 0: v² / (2 decel) on
    distance = v * v / (2.0 * decel) * (1.0 + Brake.TAPER ** 2 / 12.0)
    assert held[0] == pytest.approx(runner.jog.position[0] + distance, abs=1e-9)
    assert brake.duration == pytest.approx(v / decel * (1.0 + Brake.TAPER / 2.0), rel=1e-9)
    steps(runner, 10)
    np.testing.assert_array_equal(arm.pending_command.position, held)
    np.testing.assert_allclose(arm.last_feedback.position, held, atol=1e-12)
    assert not [a for a in acks if not a.accepted]


def test_deadman_release_brakes_next_cycle_and_same_sample_cannot_restart(rig):
    """deadman=false releases at the next cycle; an old sample never restarts the jog, a fresh one does."""
    runner, arm, clock, _ = rig
    runner.submit("mode", ModeCommand(env(), "jog"))
    runner.step()
    runner.offer_jog(JogCommand(env(), "joint", np.full(6, 0.2), True, 0.5), clock.now())
    steps(runner, 20)
    assert runner.jog.active
    # the jog is the arm's mode, and the status says so (the operator's mode is a different field)
    assert arm.mode == "jog" and runner.snapshot.arm_mode == "jog" and runner.snapshot.jogging
    assert runner.snapshot.mode == "jog"
    runner.offer_jog(JogCommand(env(), "joint", np.zeros(6), False, 0.5), clock.now())
    runner.step()
    assert arm.events.last.kind == "teleop_jog_released" and arm.state is ArmState.HOLD
    assert arm.mode == "brake" and runner.snapshot.arm_mode == "brake"  # the release brakes from 0.2 rad/s
    steps(runner, 60)
    assert not runner.jog.active and arm.state is ArmState.HOLD
    assert arm.mode == "hold" and runner.snapshot.arm_mode == "hold" and not runner.snapshot.braking
    runner.offer_jog(JogCommand(env(), "joint", np.full(6, -0.2), True, 0.5), clock.now())
    steps(runner, 3)
    assert runner.jog.active and arm.state is ArmState.RUNNING


def test_link_loss_holds_and_requires_new_mode(rig):
    """Losing the broker mid-goal brakes to a hold and drops to idle: the next goal is refused."""
    runner, arm, _, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.submit("joint_goal", goal(HOME, 2.0))
    steps(runner, int(0.5 * RATE))
    assert arm.state is ArmState.RUNNING and 0.1 < arm.goal_progress < 0.5
    runner.link_lost("broker gone")
    runner.step()
    assert arm.state is not ArmState.RUNNING and runner.mode == "idle"
    steps(runner, int(0.5 * RATE))
    held = arm.last_feedback.position.copy()
    steps(runner, 20)
    np.testing.assert_allclose(arm.last_feedback.position, held, atol=1e-12)
    runner.submit("joint_goal", goal(HOME))
    runner.step()
    assert acks[-1].reason == "wrong_mode"


def test_arm_fault_disarms_teleop(rig):
    """A safety event of the arm itself (NaN feedback) ends the jog and drops the mode to idle."""
    runner, arm, clock, _ = rig
    runner.submit("mode", ModeCommand(env(), "jog"))
    runner.step()
    runner.offer_jog(JogCommand(env(), "joint", np.full(6, 0.1), True, 0.5), clock.now())
    steps(runner, 10)
    assert runner.jog.active
    arm.backend.faults.nan_feedback(2, ["position"])
    steps(runner, 3)
    assert arm.state is ArmState.HOLD and runner.mode == "idle" and not runner.jog.active
    assert runner.snapshot.last_error.reason == "feedback_nan"


def test_gravcomp_mode_commands_efforts_only(rig):
    """Mode gravcomp releases position control (hand-guiding): position/velocity NaN, gravity efforts."""
    runner, arm, _, _ = rig
    runner.submit("mode", ModeCommand(env(), "gravcomp"))
    steps(runner, 3)
    cmd = arm.pending_command
    assert np.isnan(cmd.position).all() and np.isnan(cmd.velocity).all()
    q = arm.last_feedback.position
    ramp = arm.plugin("gravComp").enabled_ratio
    np.testing.assert_allclose(cmd.effort, ramp * arm.model.gravity_compensation(q), rtol=1e-9, atol=1e-9)
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.step()
    np.testing.assert_allclose(arm.pending_command.position, q, atol=1e-12)


def test_gravcomp_refused_while_moving(rig):
    """Going limp mid-goal would keep the arm's momentum: refused with 'moving' until stopped and held."""
    runner, arm, _, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.submit("joint_goal", goal(np.add(HOME, 0.2), 2.0))   # inside the kit's joint limits
    steps(runner, 50)
    runner.submit("mode", ModeCommand(env(), "gravcomp"))
    runner.step()
    assert acks[-1].reason == "moving" and runner.mode == "position" and arm.state is ArmState.RUNNING
    runner.submit("stop", StopCommand(env()))
    steps(runner, int(0.3 * RATE))
    assert arm.state is ArmState.HOLD and not arm.braking
    runner.submit("mode", ModeCommand(env(), "gravcomp"))
    runner.step()
    assert acks[-1].accepted and runner.mode == "gravcomp"


class _Sabotage(ArmPlugin):
    """A plugin that raises, or writes NaN into the position command, when told to (a bug in the loop)."""

    type_name = "TestSabotage"

    def __init__(self) -> None:
        super().__init__("sabotage")
        self.mode: str | None = None

    def update(self, arm, dt):
        if self.mode == "raise":
            self.mode = None
            raise RuntimeError("bug in a plugin")
        if self.mode == "nan":
            arm.pending_command.position[2] = np.nan
        return True


@pytest.mark.parametrize("fault", ["raise", "nan"])
def test_internal_error_holds_a_finite_command_and_next_goal_is_smooth(rig, fault):
    """A bug mid-goal (an exception, or a NaN position) never reaches the modules: the arm holds a
    finite position, drops to idle, and the next goal starts from there at rated speed or less."""
    runner, arm, clock, acks = rig
    bad = _Sabotage()
    arm.add_plugin(bad)
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.submit("joint_goal", goal(HOME, 2.0))
    steps(runner, int(0.5 * RATE))
    written = []
    inner = arm.backend.write
    arm.backend.write = lambda cmd: (written.append(cmd.position.copy()), inner(cmd))[1]
    bad.mode = fault
    steps(runner, 3)
    bad.mode = None
    assert all(np.isfinite(p).all() for p in written), written
    assert runner.mode == "idle" and arm.state is not ArmState.RUNNING
    assert runner.snapshot.last_error.reason == "internal_error"
    assert "release" not in arm.events.kinds()
    held = arm.pending_command.position.copy()
    steps(runner, 10)
    np.testing.assert_array_equal(arm.pending_command.position, held)
    # a later goal starts from the hold, not from NaN: no jump in the first cycles
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.submit("joint_goal", goal(np.add(held, 0.3), 1.0))
    positions = []
    for _ in range(int(1.1 * RATE)):
        runner.step()
        positions.append(arm.pending_command.position.copy())
    assert acks[-1].accepted, acks[-1]
    speed = np.max(np.abs(np.diff(np.array([held, *positions]), axis=0)), axis=0) / DT
    assert np.all(speed <= 1.05 * arm.model.max_speeds), speed


def test_runner_rejects_absurd_goals_even_without_the_bridge(rig):
    """Goals that skip the bridge's checks (a direct submit) are still refused in the arm thread."""
    runner, arm, _, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    runner.step()
    q = arm.pending_command.position.copy()
    for target, t in ((1e308, 1.0), (-1e308, None), (q[0] + 1e6, 600.0), (q[0] + 2.0, 0.3)):
        p = q.copy()
        p[0] = target
        runner.submit("joint_goal", JointGoalCommand(env(), (t,), (p,), (None,)))
        runner.step()
        assert not acks[-1].accepted and acks[-1].reason in ("too_fast", "too_far"), (target, acks[-1])
    assert "internal_error" not in arm.events.kinds() and arm.trajectory is None
    assert np.isfinite(arm.pending_command.position).all()


def test_a_plain_stop_is_not_reported_as_a_fault(rig):
    """After cmd/stop (a plain hold, not a fault) the next jog leaves the hold with an event that
    says so in plain words, not "fault cleared" (issue 20: "cleared fault cleared" in the panel)."""
    runner, arm, clock, acks = rig
    runner.submit("mode", ModeCommand(env(), "jog"))
    runner.step()
    runner.offer_jog(JogCommand(env(), "joint", np.full(6, 0.2), True, MAX_TTL), clock.now())
    steps(runner, 20)
    runner.submit("stop", StopCommand(env()))
    steps(runner, 60)
    assert arm.state is ArmState.HOLD and arm.events.last.kind == "teleop_stop"
    runner.offer_jog(JogCommand(env(), "joint", np.full(6, -0.2), True, MAX_TTL), clock.now())
    steps(runner, 3)
    cleared = [e for e in arm.events.events if e.kind == "cleared"]
    assert runner.jog.active and len(cleared) == 1
    assert "fault" not in cleared[0].detail and "leaving the hold" in cleared[0].detail, cleared[0].detail
    assert all(a.accepted for a in acks)


def test_link_loss_mid_jog_brakes_in_the_next_cycle_not_at_the_ttl(rig):
    """The broker lost mid-jog (samples of the longest ttl): the arm stops in the very next cycle,
    latched (STOPPED, hold behaviour), long before the ttl would have ended the jog; then it holds,
    drops to idle and refuses the jog until a new mode. The broker test (test_teleop_resilience)
    shows the same through a killed mosquitto, by order of events only."""
    runner, arm, clock, acks = rig
    runner.submit("mode", ModeCommand(env(), "jog"))
    runner.step()
    for _ in range(20):
        runner.offer_jog(JogCommand(env(), "joint", np.array([0.2, 0, 0, 0, 0, 0]), True, MAX_TTL), clock.now())
        runner.step()
    assert runner.snapshot.jogging and arm.state is ArmState.RUNNING
    lost_at = clock.now()
    runner.link_lost("broker gone")
    runner.step()
    stopped_after = clock.now() - lost_at
    print(f"\nlink lost mid-jog -> stopped after {stopped_after * 1000:.1f} ms of arm time (ttl {MAX_TTL} s)")
    assert arm.state is ArmState.STOPPED and stopped_after == pytest.approx(DT)
    assert arm.events.last.kind == "teleop_link_lost" and "teleop_jog_expired" not in arm.events.kinds()
    steps(runner, int(MAX_TTL * RATE))   # past the ttl: the brake has ended in a hold that stays
    assert not runner.snapshot.braking and runner.snapshot.stop_behaviour == "hold" and runner.mode == "idle"
    held = arm.last_feedback.position.copy()
    runner.offer_jog(JogCommand(env(), "joint", np.array([0.2, 0, 0, 0, 0, 0]), True, MAX_TTL), clock.now())
    steps(runner, 20)
    np.testing.assert_array_equal(arm.last_feedback.position, held)
    assert arm.state is ArmState.STOPPED


def test_an_endless_shutdown_hold_lasts_until_end_hold():
    """``hebictl teleop``'s first Ctrl-C closes the runner with an endless hold: the arm thread
    holds the stopped arm for as long as the arm's clock runs (here 30 simulated seconds, longer than
    any finite hold of the CLI: 5 s after SIGTERM, then at most 2 s of braking) and ends only at
    ``end_hold`` (the second Ctrl-C). The arm thread runs on a SimClock at 50 Hz, so the 30 s pass in
    1,500 cycles; the wall clock only guards against a hang."""
    import threading
    import time

    clock = SimClock()
    arm = Arm.from_config(KIT6, backend="mock", clock=clock, initial_position=HOME)
    runner = ArmRunner(arm, rate_hz=50.0, shutdown_hold=math.inf)
    runner.start()
    closer = threading.Thread(target=runner.close, kwargs={"reason": "interrupt"}, daemon=True)
    try:
        closer.start()
        guard = time.monotonic() + 120.0   # hang guard only
        while clock.now() < 30.0 and runner.running and time.monotonic() < guard:
            time.sleep(0.01)
        snap = runner.snapshot
        assert clock.now() >= 30.0 and runner.running and closer.is_alive()
        assert snap.state == "stopped" and not snap.braking and snap.stop_behaviour == "hold", snap
        assert "interrupt" in arm.events.kinds()
        runner.end_hold()
        closer.join(120.0)
        assert not closer.is_alive() and not runner.running
    finally:
        runner.end_hold()
        closer.join(120.0)
        arm.close()


def test_a_finding_the_arm_only_reports_keeps_the_operators_mode_and_a_hold_disarms(rig):
    """A monitor whose reaction is ``event`` leaves the arm RUNNING: the operator's mode stays (it
    ended a Mobile IO app mid-homing); a finding that holds the arm disarms teleop (mode idle)."""
    from hebictl.control.safety import EventKind

    runner, arm, clock, acks = rig
    runner.submit("mode", ModeCommand(env(), "position"))
    steps(runner, 2)
    assert runner.mode == "position"
    arm.events.record(clock.now(), EventKind.MODEL_MISMATCH, ArmState.RUNNING, "an end-effector load of -0.00 kg")
    steps(runner, 3)
    assert runner.mode == "position"
    arm.events.record(clock.now(), EventKind.TRACKING_ERROR, ArmState.HOLD, "tracking error")
    steps(runner, 3)
    assert runner.mode == "idle"


@pytest.mark.parametrize("second_signal", [False, True], ids=["parks", "second-signal"])
def test_a_sigterm_shutdown_parks_at_the_rest_pose_on_the_sim(second_signal):
    """``hebictl teleop``'s SIGTERM with a config that has ``user_data.rest_position`` (the CLI sets
    ``park_rest``): the arm thread brakes, moves to the rest pose slowly (hebictl.control.park) and
    ends the loop by itself after the hold there; ``close`` returns. On the MuJoCo sim, x-series-6dof,
    the arm thread on a SimClock (times are simulated, the wall clock only guards against a hang).
    A second signal (``end_hold``) during the move brakes and ends the loop short of the rest pose."""
    import threading
    import time

    pytest.importorskip("mujoco")
    from hebictl.config import load_config
    from hebictl.control.park import PARK_BOUND_S, PARK_SPEED_FRACTION, rest_position

    cfg = load_config(KIT6)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=HOME)
    runner = ArmRunner(arm, rate_hz=200.0, shutdown_hold=PARK_BOUND_S)
    runner.park_rest = rest_position(cfg, arm.dof)
    runner.start()
    closer = threading.Thread(target=runner.close, kwargs={"reason": "terminate"}, daemon=True)
    peak = np.zeros(arm.dof)
    try:
        guard = time.monotonic() + 120.0  # hang guard only
        while clock.now() < 0.2 and time.monotonic() < guard:
            time.sleep(0.005)
        started = clock.now()
        closer.start()
        while closer.is_alive() and time.monotonic() < guard:
            park = runner.park
            if park is not None and park.phase == "move":
                peak = np.maximum(peak, np.abs(runner.snapshot.velocity) / arm.limits.velocity_max)
                if second_signal and clock.now() - park.move_end + park.duration >= 0.5:
                    runner.end_hold()
            time.sleep(0.001)
        closer.join(120.0)
        assert not closer.is_alive() and not runner.running
        took = clock.now() - started
        error = float(np.abs(arm.last_feedback.position - runner.park_rest).max())
        speed = float(np.abs(arm.last_feedback.velocity).max())
        print(f"\nteleop SIGTERM on the sim ({'second signal' if second_signal else 'one signal'}): "
              f"{runner.park.outcome}; {error * 1e3:.3f} mrad from the rest pose, measured speed at exit "
              f"{speed:.4f} rad/s, peak {peak.max():.3f} of rated; loop ended {took:.3f} s (simulated) after close")
        assert took <= PARK_BOUND_S
        assert speed < 0.05
        if second_signal:
            assert runner.park.phase == "aborted" and error > 0.05
        else:
            assert runner.park.phase == "parked" and error <= 0.01
            assert peak.max() <= 1.2 * PARK_SPEED_FRACTION
            assert "cleared" in arm.events.kinds()
    finally:
        runner.end_hold()
        closer.join(120.0)
        arm.close()


@pytest.mark.parametrize("when", ["before", "during"], ids=["estop-then-sigterm", "estop-during-park"])
@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=[p.name.split(".")[0] for p in BUNDLED_CONFIGS])
def test_an_engaged_estop_is_never_parked(config, when):
    """An e-stop says the arm must not move, and a park is a move: ``hebictl teleop``'s SIGTERM with
    a rest pose does not park an e-stopped arm (the shutdown's fall-back hold instead), and an
    e-stop engaged during the park's move ends it in that hold short of the rest pose. On the MuJoCo
    sim, every bundled config, in simulated time; the measured travel after the e-stop is printed."""
    pytest.importorskip("mujoco")
    from hebictl.config import load_config
    from hebictl.control.park import PARK_BOUND_S, rest_position

    cfg = load_config(config)
    clock = SimClock()
    home = np.asarray(cfg.user_data["home_position"], dtype=float)
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home)
    runner = ArmRunner(arm, rate_hz=RATE, shutdown_hold=PARK_BOUND_S)
    rest = rest_position(cfg, arm.dof)
    try:
        steps(runner, int(0.5 * RATE))
        if when == "before":
            runner.engage_estop(EstopCommand(env(), True))
            steps(runner, int(0.5 * RATE))
        runner.park_rest = rest
        runner.park_fallback_hold = 5.0
        runner.request_close("terminate", PARK_BOUND_S)
        if when == "during":
            while runner.park is None or runner.park.phase != "move":
                assert runner.step() and clock.now() < 10.0
            steps(runner, int(0.5 * RATE))   # half a second into the move
            runner.engage_estop(EstopCommand(env(), True))
        pressed = np.array(arm.last_feedback.position, dtype=float)
        cycles = 0
        while runner.step() and cycles < int(70 * RATE):   # a bound on simulated cycles, not a wait
            cycles += 1
        final = np.array(arm.last_feedback.position, dtype=float)
        travel = float(np.abs(final - pressed).max())
        print(f"\n{config.name}, e-stop {when} the park: {runner.park.outcome}; joints moved {travel * 1e3:.2f} "
              f"mrad after the e-stop; {float(np.abs(final - rest).max()):.3f} rad from the rest pose; loop "
              f"ended {cycles / RATE:.2f} s (simulated) later")
        assert runner.park.phase == "hold" and "e-stop is engaged" in runner.park.outcome
        assert float(np.abs(final - rest).max()) > 0.05, "the arm went on to the rest pose"
        assert cycles / RATE <= 5.0 + 1.0
        assert travel < (0.002 if when == "before" else 0.03)   # measured: 0.02 and 6 mrad at most
        assert float(np.abs(np.asarray(arm.last_feedback.velocity, dtype=float)).max()) < 0.05
    finally:
        arm.close()
