"""The Arm's stop behaviours, holds and faults on the mock (the sim versions are in test_safety_sim)."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from hebictl.hardware.clock import SimClock
from tests._support.paths import REPO_ROOT

KIT6 = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])


def running(**options) -> tuple[Arm, SimClock]:
    clock = SimClock()
    arm = Arm.from_config(KIT6, clock=clock, initial_position=HOME, **options)
    for _ in range(5):
        arm.update()
        arm.send()
    return arm, clock


def cycle(arm: Arm, n: int = 1) -> None:
    for _ in range(n):
        arm.update()
        arm.send()


def moving(arm: Arm) -> None:
    arm.set_goal(Goal(6).add_waypoint(t=1.5, position=HOME + np.array([1.0, 0.3, -0.4, 0.2, 0.5, 0.5])))
    cycle(arm, 150)  # half-way: 0.75 s at 200 Hz


def test_default_stop_brakes_within_rated_deceleration_then_holds():
    arm, clock = running()
    with arm:
        moving(arm)
        v_before = arm.pending_command.velocity.copy()
        assert np.abs(v_before).max() > 0.3
        arm.stop()
        assert arm.state is ArmState.STOPPED and arm.stop_behaviour is StopBehaviour.HOLD and arm.braking
        assert arm.events.last.kind is EventKind.ESTOP
        positions = []
        for _ in range(100):
            cycle(arm)
            positions.append(arm.pending_command.position.copy())
        p = np.array(positions)
        v = np.diff(p, axis=0) / 0.005
        a = np.diff(v, axis=0) / 0.005
        assert np.all(np.abs(a).max(axis=0) <= arm.limits.acceleration_max * 1.05)
        assert not arm.braking and np.all(v[-10:] == 0.0)
        np.testing.assert_allclose(arm.pending_command.effort,
                                   arm.model.gravity_compensation(arm.last_feedback.position), atol=1e-6)
        with pytest.raises(Exception, match="stopped"):
            arm.set_goal(Goal(6).add_waypoint(position=HOME))


def test_hold_stop_keeps_commanding_when_feedback_is_lost():
    arm, clock = running()
    with arm:
        arm.stop()
        cycle(arm, 5)
        held = arm.pending_command.position.copy()
        arm.backend.faults.freeze_feedback()
        cycle(arm, 100)  # 0.5 s without feedback: beyond the watchdog
        np.testing.assert_allclose(arm.pending_command.position, held)
        assert np.all(np.isfinite(arm.pending_command.effort))


def test_blind_brake_leads_by_half_a_period_without_outrunning_its_start_speed():
    """Feedback lost mid-move: the brake is commanded at the middle of the period the modules hold
    each command for (half a blind cycle ahead: it waits for feedback, so it is longer than the nominal
    period), the lead taken up as the ramp slows (never a written step above the rated speed x
    period); the hold is the ramp's stopping point."""
    arm, clock = running()
    with arm:
        moving(arm)
        arm.backend.faults.drop_feedback()
        while not arm.braking:
            cycle(arm)
        brake, period = arm.supervisor.motion.ramp, arm.nominal_period  # the ramp itself, to compare with
        prev, leads, cycles = arm.pending_command.position.copy(), [], []
        while arm.braking:
            t0 = clock.now()
            cycle(arm)
            blind = max(clock.now() - t0, period)  # the blind cycle: the modules hold each command this long
            cycles.append(blind / period)
            p = arm.pending_command.position.copy()
            step = np.abs(p - prev) / period
            assert np.all(step <= arm.limits.velocity_max * (1 + 1e-9)), step
            if arm.braking:
                ramp_now = brake.state(clock.now())[0]
                ramp_lead = brake.state(clock.now() + 0.5 * blind)[0]
                j = int(np.argmax(np.abs(brake.v0)))  # the lead as a fraction of half a period, fastest joint
                leads.append(float((p[j] - ramp_now[j]) / (ramp_lead[j] - ramp_now[j])))
            prev = p
        print(f"lead [x half a blind cycle] over the ramp: {np.round(leads, 2).tolist()}; "
              f"blind cycle [x nominal period]: {np.round(cycles, 2).tolist()}")
        assert leads[0] < 0.5 and max(leads) == pytest.approx(1.0, abs=1e-6)  # taken up, then all of it
        assert all(b >= a - 1e-9 for a, b in itertools.pairwise(leads))  # never given back
        np.testing.assert_allclose(arm.pending_command.position, brake.target, atol=1e-9)
        assert np.all(arm.pending_command.velocity == 0.0)


def test_damp_commands_gravity_minus_damping_without_position():
    arm, clock = running()
    with arm:
        arm.stop(behaviour="damp")
        cycle(arm)
        cmd, fb = arm.pending_command, arm.last_feedback
        assert np.all(np.isnan(cmd.position)) and np.all(np.isnan(cmd.velocity))
        damping = 0.25 * arm.limits.effort_max / arm.limits.velocity_max
        np.testing.assert_allclose(cmd.effort, arm.model.gravity_compensation(fb.position) - damping * fb.velocity,
                                   atol=1e-9)


def test_release_only_on_request_with_a_warning(caplog):
    arm, clock = running()
    with arm, caplog.at_level(logging.WARNING):
        arm.stop(EventKind.RELEASE, "operator release")  # the reason alone does not release
        cycle(arm)
        assert np.all(np.isfinite(arm.pending_command.position))
        arm.stop(EventKind.RELEASE, "operator release", behaviour=StopBehaviour.RELEASE)
        cycle(arm)
        assert np.all(np.isnan(arm.pending_command.position)) and np.all(np.isnan(arm.pending_command.effort))
        assert "will fall" in caplog.text


def test_clear_fault_and_new_hold_do_not_step():
    """After a release the command starts again from the measured position; a hold elsewhere is
    approached at no more than the rated speed."""
    arm, clock = running()
    with arm:
        arm.stop(behaviour="release")
        cycle(arm, 3)
        arm.clear_fault()
        cycle(arm)
        np.testing.assert_allclose(arm.pending_command.position, arm.last_feedback.position, atol=1e-12)
        before = arm.pending_command.position.copy()
        arm.hold(HOME + 0.5)
        cycle(arm)
        assert np.all(np.abs(arm.pending_command.position - before) <= arm.limits.velocity_max * arm.dt + 1e-12)


def test_m_stop_is_a_stop():
    arm, clock = running()
    with arm:
        arm.backend.press_mstop()
        cycle(arm, 3)
        assert arm.m_stopped and arm.state is ArmState.STOPPED and EventKind.MSTOP in arm.events.kinds()
        assert arm.stop_behaviour is StopBehaviour.HOLD


def test_at_goal_waits_for_position_and_rest():
    """On a slow mock (time constant 0.2 s) the trajectory ends before the joints arrive: at_goal
    stays False until they are within 0.01 rad and slower than 0.05 rad/s."""
    arm, clock = running(time_constant_s=0.2)
    with arm:
        target = HOME + np.array([0.5, 0, 0, 0, 0, 0])
        arm.set_goal(Goal(6).add_waypoint(t=1.0, position=target))
        while clock.now() < arm.trajectory.end_time:
            cycle(arm)
        assert arm.goal_progress == 1.0 and not arm.at_goal
        for _ in range(400):
            cycle(arm)
            err = np.abs(arm.last_feedback.position - target).max()
            if arm.at_goal:
                break
            assert err > 0.01 or np.abs(arm.last_feedback.velocity).max() > 0.05
        assert arm.at_goal and np.abs(arm.last_feedback.position - target).max() <= 0.01


def test_switched_on_outside_the_limits_can_move_back_in_but_not_further_out():
    """The 5-DoF kit's elbow limits are [-2.38, 2.69]; a mock starting at -2.6 holds (position_limit),
    a goal further out is refused, a goal back inside is followed without new limit events."""
    clock = SimClock()
    arm = Arm.from_config(REPO_ROOT / "configs" / "x-series-5dof.cfg.yaml", clock=clock,
                          initial_position=[0.0, -1.2, -2.6, 0.0, 0.0])
    with arm:
        cycle(arm, 3)
        assert arm.state is ArmState.HOLD and arm.events.last.kind is EventKind.POSITION_LIMIT
        out = arm.last_feedback.position.copy()
        out[2] = -2.9
        with pytest.raises(Exception, match="out_of_limits"):
            arm.set_goal(Goal(5).add_waypoint(position=out))
        home = np.array(arm.user_data["home_position"])
        arm.set_goal(Goal(5).add_waypoint(position=home))
        n_events = len(arm.events.events)
        end = clock.now() + arm.trajectory.duration + 0.3
        while clock.now() < end:
            cycle(arm)
        assert arm.at_goal and len(arm.events.events) == n_events


def test_status_flags_are_plain_python_values():
    """m_stopped, braking, at_goal and goal_progress go into status JSON as they are: plain bool and
    float (a numpy bool once made json.dumps fail), whether idle, moving, braking or M-stopped."""
    import json

    arm, _ = running()

    def check() -> None:
        flags = {"m_stopped": arm.m_stopped, "braking": arm.braking, "at_goal": arm.at_goal}
        assert all(type(v) is bool for v in flags.values()), {k: type(v) for k, v in flags.items()}
        assert type(arm.goal_progress) is float
        json.dumps({**flags, "goal_progress": arm.goal_progress})

    check()
    moving(arm)
    check()
    arm.stop()
    cycle(arm)
    assert arm.braking
    check()
    arm.backend.press_mstop()
    cycle(arm, 2)
    assert arm.m_stopped
    check()


@pytest.mark.parametrize("fault", ["frozen", "nan"])
def test_a_blind_brake_is_mirrored_to_a_double_shoulders_second_module(fault):
    """x7 (double shoulder) on the sim, its feedback frozen mid-move, or module 2's position reading NaN:
    every blind cycle (the hold's brake without usable feedback, then, frozen, the watchdog's latched
    stop) sends the mirror module the shoulder's own command, negated, with half the joint's effort on
    each module. Frozen, it kept the last command before the freeze until the watchdog's stop synced it
    (52 mrad and 0.55 rad/s off the primary's brake, the primary at the joint's full effort), and the
    shoulder swung at up to 0.14 rad/s in the hold after that (safety matrix, x7 "feedback frozen
    mid-move": still after 0.52 s; 0.20 s since). NaN, nothing synced it (x7 "feedback NaN (elbow)
    mid-move": still after 0.455 s, 0.19-0.21 s on the other configs)."""
    pytest.importorskip("mujoco")
    cfg = REPO_ROOT / "configs" / "x-series-7dof-double-shoulder.cfg.yaml"
    clock = SimClock()
    home = np.array([0.0, -1.0, 0.0, 2.0, 1.0, 1.57, 0.0])
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home)
    mirror = next(p for p in arm.plugins if type(p).__name__ == "DoubledJointMirror")
    i = mirror.index
    with arm:
        for _ in range(300):  # gravity compensation ramps in
            arm.update()
            arm.send()
        target = home.copy()
        target[1] -= 0.3
        arm.set_goal(Goal(7).add_waypoint(t=1.0, position=target))
        for _ in range(60):
            arm.update()
            arm.send()
        if fault == "frozen":
            arm.backend.faults.freeze_feedback()
        else:
            arm.backend.faults.nan_feedback(2, ("position",))
        worst = 0.0
        for _ in range(100):  # 0.5 s: the blind hold, then the watchdog's stop
            arm.update()
            arm.send()
            cmd = arm.pending_command
            if arm.state in (ArmState.HOLD, ArmState.STOPPED):
                assert mirror.command.position[0] == mirror.sign * cmd.position[i]
                assert mirror.command.velocity[0] == mirror.sign * cmd.velocity[i]
                assert mirror.command.effort[0] == mirror.sign * cmd.effort[i]
                worst = max(worst, abs(mirror.sign * mirror.command.position[0] - cmd.position[i]))
        kinds = [e.kind for e in arm.events.events]
        print(f"\nx7 feedback {fault}: mirror off the shoulder's blind command by {worst * 1e3:.3f} mrad at most; "
              f"events {[k.value for k in kinds]}")
        if fault == "frozen":
            assert EventKind.FEEDBACK_LOST in kinds and EventKind.WATCHDOG in kinds
        else:
            assert EventKind.FEEDBACK_NAN in kinds
