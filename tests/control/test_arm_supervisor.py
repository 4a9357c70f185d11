"""The Arm's mode rules on the mock (the sim versions, every bundled config, are in
test_supervisor_sim.py): measured-state entries, no step at a transition, the stricter stop wins,
clear_fault() brakes, the rate limiter after a gap, and Arm.react for the monitors."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.arm import Arm, Mode
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from hebictl.errors import ConfigError
from hebictl.hardware.clock import SimClock
from tests._support.paths import REPO_ROOT

KIT6 = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
DT = 0.005  # the kit's 200 Hz feedback


def running() -> tuple[Arm, SimClock]:
    clock = SimClock()
    arm = Arm.from_config(KIT6, clock=clock, initial_position=HOME)
    cycle(arm, 5)
    return arm, clock


def cycle(arm: Arm, n: int = 1) -> None:
    for _ in range(n):
        arm.update()
        arm.send()


def moving(arm: Arm) -> None:
    arm.set_goal(Goal(6).add_waypoint(t=1.5, position=HOME + np.array([1.0, 0.3, -0.4, 0.2, 0.5, 0.5])))
    cycle(arm, 150)  # half-way, near the peak speed


def test_modes_follow_the_arm():
    arm, _ = running()
    with arm:
        assert arm.mode is Mode.HOLD and arm.state is ArmState.RUNNING
        moving(arm)
        assert arm.mode is Mode.FOLLOW
        arm.cancel_goal()
        assert arm.mode is Mode.BRAKE and arm.braking
        cycle(arm, 100)
        assert arm.mode is Mode.HOLD and not arm.braking
        arm.set_idle("gravcomp")
        assert arm.mode is Mode.GRAVCOMP
        arm.set_idle("hold")
        assert arm.mode is Mode.HOLD


def test_first_stop_cycle_has_no_step_in_position_or_velocity():
    """The brake starts from the last command and the measured velocity: the first stop cycle moves
    the position command by no more than rated speed x dt, and the velocity command changes by no more
    than the rated deceleration x dt (issue 18: it flipped +3.67 -> -4.08 rad/s)."""
    arm, _ = running()
    with arm:
        moving(arm)
        p0, v0 = arm.pending_command.position.copy(), arm.pending_command.velocity.copy()
        arm.stop()
        cycle(arm)
        p1, v1 = arm.pending_command.position, arm.pending_command.velocity
        lim = arm.limits
        assert np.all(np.abs(p1 - p0) <= lim.velocity_max * DT * 1.001), np.abs(p1 - p0) / (lim.velocity_max * DT)
        assert np.all(np.abs(v1 - v0) <= lim.acceleration_max * DT * 1.05), np.abs(v1 - v0)
        assert np.all(np.sign(v1) == np.sign(v0)) or np.all(np.abs(v1 - v0) < 1e-6)
        print(f"first stop cycle: |dp| max {np.max(np.abs(p1 - p0) / (lim.velocity_max * DT)):.3f}x rated*dt, "
              f"|dv| max {np.max(np.abs(v1 - v0) / (lim.acceleration_max * DT)):.3f}x rated decel*dt")


def test_damp_during_a_brake_starts_once_the_arm_is_still():
    arm, _ = running()
    with arm:
        moving(arm)
        arm.stop()
        cycle(arm, 2)
        arm.stop(behaviour="damp")
        assert arm.mode is Mode.BRAKE and arm.stop_behaviour is StopBehaviour.DAMP
        assert arm.latch is not None and arm.latch.behaviour is StopBehaviour.DAMP
        cmds = []
        while arm.braking:
            cycle(arm)
            cmds.append(arm.pending_command.position.copy())
        ramp = np.array([c for c in cmds if np.all(np.isfinite(c))])  # the cycle it ends in already damps
        assert len(ramp) > 10 and len(ramp) >= len(cmds) - 1
        acc = np.diff(ramp, n=2, axis=0) / DT**2
        assert np.all(np.abs(acc).max(axis=0) <= arm.limits.acceleration_max * 1.05)
        cycle(arm)
        assert arm.mode is Mode.DAMP and np.all(np.isnan(arm.pending_command.position))
        # a stricter hold stop during the brake wins over the pending damp
        arm.clear_fault()
        moving(arm)
        arm.stop(behaviour="damp")
        arm.stop(behaviour="hold")
        cycle(arm, 100)
        assert arm.mode is Mode.HOLD and arm.stop_behaviour is StopBehaviour.HOLD


def test_clear_fault_while_moving_brakes_then_holds_without_moving():
    arm, _ = running()
    with arm:
        moving(arm)
        arm.stop()
        cycle(arm, 2)
        arm.clear_fault()
        assert arm.state is ArmState.RUNNING and arm.mode is Mode.BRAKE
        assert arm.events.last.kind is EventKind.CLEARED and "braking" in arm.events.last.detail
        cycle(arm, 100)
        assert arm.mode is Mode.HOLD
        held = arm.last_feedback.position.copy()
        cycle(arm, 200)  # 1 s, no goal: nothing moves
        assert np.abs(arm.last_feedback.position - held).max() < 1e-6


def test_clear_fault_after_damp_holds_where_the_arm_is():
    arm, _ = running()
    with arm:
        arm.stop(behaviour="damp")
        cycle(arm, 20)
        arm.clear_fault()
        cycle(arm)
        np.testing.assert_allclose(arm.pending_command.position, arm.last_feedback.position, atol=1e-3)
        assert arm.mode is Mode.HOLD


def test_mstop_release_holds_where_the_arm_is():
    """While the M-stop is pressed the command follows the measured position; its release moves nothing."""
    arm, _ = running()
    with arm:
        moving(arm)
        arm.backend.press_mstop()
        cycle(arm, 60)
        assert arm.state is ArmState.STOPPED and arm.latch.cause == "mstop"
        where = arm.last_feedback.position.copy()
        np.testing.assert_allclose(arm.pending_command.position, where, atol=1e-9)
        arm.backend.release_mstop()
        cycle(arm, 200)
        moved = np.abs(arm.last_feedback.position - where).max()
        print(f"mock M-stop release: joints moved {moved * 1e3:.3f} mrad in 1 s")
        assert moved < 1e-3
        arm.clear_fault()
        cycle(arm, 100)
        assert np.abs(arm.last_feedback.position - where).max() < 1e-3


def test_after_a_gap_within_the_command_lifetime_the_goal_resumes_where_the_arm_is():
    """A 0.2 s stall mid-move (shorter than the 0.25 s command lifetime: the modules still execute the
    last command, no control_gap): the goal goes on from where the arm is, not where the clock says
    (hebictl/control/modes/follow.py). The mock's modules went on at the last velocity command, so
    the arm is about where the plan is (a little ahead: the plan slows after half-way): the next
    command leads the measured position by no more than one plan step along the motion (before, the
    command stepped up from the pre-stall command at the rated speed); no later step exceeds the
    plan's, and the goal ends where it was going, no earlier than planned."""
    arm, clock = running()
    with arm:
        moving(arm)
        assert arm.backend.command_lifetime > 0.2
        plan = arm.trajectory
        assert plan is not None
        clock.advance(0.2)
        cycle(arm)
        measured = arm.last_feedback.position.copy()
        first = arm.pending_command.position.copy()
        t = clock.now()
        plan_step = np.abs(plan.get_state(t + DT)[0] - plan.get_state(t)[0])
        lead = (first - measured) * np.sign(plan.get_state(t)[1])   # > 0: the command ahead of the arm
        traj = arm.trajectory
        assert traj is not None
        delay = traj.end_time - plan.end_time
        print(f"after a 0.2 s gap: the command leads the measured position by {np.max(lead / plan_step):.3f} plan "
              f"steps at most; goal delayed {delay * 1e3:.1f} ms")
        assert not any(e.kind is EventKind.CONTROL_GAP for e in arm.events.events)
        assert arm.mode is Mode.FOLLOW
        assert np.all(lead <= plan_step + 1e-9)
        assert 0.0 <= delay <= 0.2 and arm.nominal_period == pytest.approx(DT, rel=0.03)
        worst, prev = 0.0, first
        while arm.mode is Mode.FOLLOW and clock.now() < traj.end_time + 1.0:
            t = clock.now()
            cycle(arm)
            cmd = arm.pending_command.position.copy()
            planned = np.abs(plan.get_state(t + DT - delay)[0] - plan.get_state(t - delay)[0])
            worst = max(worst, float(np.max(np.abs(cmd - prev) / np.maximum(planned, 1e-6))))
            prev = cmd
        print(f"  largest later step {worst:.3f}x the plan's")
        assert worst <= 1.0 + 1e-6
        np.testing.assert_allclose(arm.last_feedback.position, plan.positions[:, -1], atol=1e-3)


def test_after_a_gap_beyond_the_command_lifetime_the_command_lands_on_the_arm():
    """A 0.5 s stall mid-move (longer than the command lifetime: the modules' last command expired
    and the arm went on without it): a latched control_gap; the first command lands on the MEASURED
    position (a step relative to the stale pre-gap command, none relative to the arm: the no-force
    choice), nothing drives back toward the pre-gap command, and every later step is <= rated x dt."""
    arm, clock = running()
    with arm:
        moving(arm)
        before = arm.pending_command.position.copy()
        clock.advance(0.5)
        cycle(arm)
        first = arm.pending_command.position.copy()
        measured = arm.last_feedback.position.copy()
        assert arm.state is ArmState.STOPPED and arm.latch.cause == "control_gap"
        np.testing.assert_allclose(first, measured, atol=1e-9)
        stale_step = np.abs(first - before) / (arm.limits.velocity_max * DT)
        worst = 0.0
        prev = first
        for _ in range(200):
            cycle(arm)
            cmd = arm.pending_command.position.copy()
            worst = max(worst, float(np.max(np.abs(cmd - prev) / (arm.limits.velocity_max * DT))))
            # never back toward the pre-gap command: each joint stays on the far side of where it landed
            assert np.all((cmd - first) * (before - first) <= 1e-9)
            prev = cmd
        print(f"after a 0.5 s gap: first command {stale_step.max():.1f}x rated x dt from the stale one, "
              f"0 from the measured position; later steps <= {worst:.3f}x rated speed x dt")
        assert worst <= 1.0 + 1e-6 and arm.mode is Mode.HOLD


@pytest.mark.parametrize("reaction", ["event", "hold", "stop", "damp"])
def test_react(reaction):
    arm, _ = running()
    with arm:
        moving(arm)
        arm.react(EventKind.FIRMWARE_LIMIT, "monitor finding", reaction)
        ev = arm.events.last
        assert ev.kind is EventKind.FIRMWARE_LIMIT and "monitor finding" in ev.detail
        if reaction == "event":
            assert arm.mode is Mode.FOLLOW and arm.state is ArmState.RUNNING
            return
        assert arm.mode is Mode.BRAKE  # moving: brake first
        expected = {"hold": ArmState.HOLD, "stop": ArmState.STOPPED, "damp": ArmState.STOPPED}[reaction]
        assert arm.state is expected
        cycle(arm, 100)
        assert arm.mode is (Mode.DAMP if reaction == "damp" else Mode.HOLD)
        if reaction != "hold":
            assert arm.latch.cause == "firmware_limit"


def test_react_anchors_at_the_measured_position():
    """A 'stop' reaction brakes from where the arm IS: a held arm whose command differs from its
    measured position (an obstacle holds it) holds where it is, not at the pre-contact command."""
    arm, _ = running()
    with arm:
        arm.backend.press_mstop()  # the modules hold: commands no longer move them
        arm.hold(HOME + 0.05)
        arm.backend.release_mstop()
        arm.react(EventKind.FIRMWARE_LIMIT, "contact", "stop")
        cycle(arm)
        np.testing.assert_allclose(arm.pending_command.position, arm.last_feedback.position, atol=1e-9)


def test_unknown_reaction_is_a_config_error():
    arm, _ = running()
    with arm, pytest.raises(ConfigError, match="unknown reaction 'explode'"):
        arm.react(EventKind.HOLD, "x", "explode")
