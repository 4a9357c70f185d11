"""Issue 29's rows 1 and 2 on the physics sim, every bundled config, in simulated time: a stop is never a
motion (a transient velocity sample before a stop or a hold moves the arm < 1 mm), and a stall is
always named and never undone (a stall between update() and send(), or inside a goal's path check,
longer than the command lifetime is a latched ``control_gap`` that holds where the arm is after it,
never driving the fallen arm back; its event reports the motion measured across the gap).

Judged on the sim's true physical state (``true_state``), not on the arm's feedback."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hebictl.control.arm as arm_module
from benchmarks.safety_supervisor import CONFIGS, SupRig
from hebictl.control.goal import Goal
from hebictl.control.motion import Brake
from hebictl.control.safety import ArmState, EventKind

pytest.importorskip("mujoco")

KEYS = list(CONFIGS)
#: [mm] a stop from rest moves less than this (issue 29's target)
REST_TOL_MM = 1.0
#: [mm] how far the end effector may come back toward its pre-stall position after a gap (the ramp's
#: own settling; a drive-back was 318-855 mm)
BACK_TOL_MM = 5.0


def ee_path(rig: SupRig, since: float) -> np.ndarray:
    t = np.array(rig.t)
    return np.array([rig.ee(q) for q, ti in zip(rig.q, t, strict=True) if ti >= since - 1e-9])


def transient_next_read(rig: SupRig, joints: tuple[int, ...], fraction: float) -> None:
    """The next sample the arm reads carries ``fraction`` x rated velocity on ``joints`` (the
    positions are the arm's: a sensor transient, not a motion)."""
    be = rig.be
    real = be.read

    def read(into, timeout_s=0.1):
        ok = real(into, timeout_s)
        if ok:
            for j in joints:
                into.velocity[j] = fraction * rig.vmax[j]
        be.read = real
        return ok

    be.read = read


@pytest.mark.parametrize("how", ["stop", "hold"])
@pytest.mark.parametrize("key", KEYS)
def test_a_transient_velocity_sample_before_a_stop_moves_nothing(key, how):
    """One sample reading 0.9x rated on the still shoulder and elbow, then stop() or hold() in the same
    cycle: the end effector moves < 1 mm over the next 1.5 s, and the reading is a
    ``feedback_implausible`` event (it drove the arm 78-241 mm when the brake took it as the arm's speed)."""
    rig = SupRig(key)
    try:
        arm = rig.arm
        t0 = rig.clock.now()
        transient_next_read(rig, (1, 2), 0.9)
        arm.update()
        (arm.stop if how == "stop" else arm.hold)()
        arm.send()
        rig.settle(1.5)
        path = ee_path(rig, t0)
        moved = float(np.max(np.linalg.norm(path - rig.ee(rig.q[0]), axis=1))) * 1e3
        kinds = arm.events.kinds()
        print(f"\n{key} {how} after a 0.9x rated transient: EE moved {moved:.3f} mm; events "
              f"{[k.value for k in kinds]}")
        assert EventKind.FEEDBACK_IMPLAUSIBLE in kinds
        assert moved < REST_TOL_MM
    finally:
        rig.close()


def _stop_travel(key: str, transient: float | None) -> tuple[float, float, list[str]]:
    """stop() with the base at half its rated speed, the sample read in the stop's cycle reading
    ``transient`` x rated on the base (None: the true speed): (the base's travel from the stop on
    [rad], its true speed at the stop [rad/s], the events)."""
    rig = SupRig(key)
    try:
        rig.move(0.5)
        v_true = float(rig.be.true_state()[1][0])
        if transient is not None:
            transient_next_read(rig, (0,), transient)
        t0 = rig.clock.now()
        rig.arm.update()
        rig.arm.stop()
        rig.arm.send()
        rig.settle(1.5)
        q = np.array([qi[0] for qi, ti in zip(rig.q, rig.t, strict=True) if ti >= t0 - 1e-9])
        start = float(rig.be.true_state()[0][0]) if not len(q) else q[0]
        travel = float(np.max(np.abs(q - start)))
        return travel, v_true, [k.value for k in rig.arm.events.kinds()]
    finally:
        rig.close()


@pytest.mark.parametrize("key", KEYS)
def test_a_transient_at_speed_does_not_lengthen_or_reverse_the_stop(key):
    """Issue 29 row 1: a stop at speed travels no further than the brake law allows from the speed the
    arm actually had. The base moving at half its rated speed; in the stop's cycle one sample reads
    0.95x rated the same way, or 0.95x rated the other way: the base's travel after the stop is within
    2 mrad of the same stop read right (x the longer end taper of a brake from the measured state,
    +7.8 %; the brake law's travel grows with the square of the speed it starts from: taken from the
    reading, (0.95 / 0.5)^2 = 3.6x as far, or first backward), and the reading is a
    ``feedback_implausible`` event."""
    clean, v_true, _ = _stop_travel(key, None)
    sign = 1.0 if v_true >= 0.0 else -1.0
    rows = []
    for name, fraction in (("faster", 0.95 * sign), ("reversed", -0.95 * sign)):
        travel, _, kinds = _stop_travel(key, fraction)
        rows.append((name, travel, kinds))
    print(f"\n{key}: base at {v_true:.2f} rad/s; stop travel read right {clean * 1e3:.1f} mrad; "
          + "; ".join(f"{n} transient {t * 1e3:.1f} mrad ({'implausible' if 'feedback_implausible' in k else '-'})"
                      for n, t, k in rows))
    # the stop after an implausible reading brakes from the measured state, whose ramp ends with the longer
    # taper (Brake.TAPER_CHASE): (1 + k²/12) x v²/(2a) by the profile's kinematics, against the clean stop's
    longer = (1.0 + Brake.TAPER_CHASE ** 2 / 12.0) / (1.0 + Brake.TAPER ** 2 / 12.0)
    for _, travel, kinds in rows:
        assert "feedback_implausible" in kinds
        assert travel <= clean * longer + 2e-3


def gap_figures(rig: SupRig, before_q: np.ndarray, t_back: float) -> tuple[float, float, float]:
    """(EE fall during the gap, the most the EE came back toward its pre-stall position after it, the
    joints' largest measured motion across the gap [rad]) from the true state."""
    ee_before = rig.ee(before_q)
    path = ee_path(rig, t_back)
    dist = np.linalg.norm(path - ee_before, axis=1)
    back = float(dist[0] - dist.min()) * 1e3
    t = np.array(rig.t)
    first_after = rig.q[int(np.searchsorted(t, t_back - 1e-9))]
    return float(dist[0]) * 1e3, back, float(np.max(np.abs(first_after - before_q)))


def check_gap_event(rig: SupRig, t0: float, moved_true: float) -> None:
    """A latched control_gap whose event reports the motion across the gap as measured (a later stop may
    latch again with its own cause: the arm stays stopped)."""
    arm = rig.arm
    gaps = [e for e in arm.events.events if e.kind is EventKind.CONTROL_GAP and e.time >= t0]
    assert gaps, [e.kind.value for e in arm.events.events]
    assert gaps[0].state is ArmState.STOPPED and arm.state is ArmState.STOPPED
    reported = float(re.search(r"moved up to ([0-9.]+) rad", gaps[0].detail).group(1))
    # feedback is the true state at the read (the sim's sensor has no noise at this scale)
    assert reported == pytest.approx(moved_true, abs=0.01), gaps[0].detail


@pytest.mark.parametrize("stall", [0.3, 0.5, 0.8])
@pytest.mark.parametrize("key", KEYS)
def test_a_stall_between_update_and_send_is_a_latched_gap_that_holds_where_the_arm_is(key, stall):
    """Mid-move, the loop stalls between update() and send() for longer than the command lifetime: the
    stale command is not sent, the next read latches a control_gap measured from the cycle's read (it
    hid itself when measured from the late send), and the arm is held where it is then: the end effector
    never comes back toward where it was before the stall by more than the brake's settling."""
    rig = SupRig(key)
    try:
        arm = rig.arm
        rig.move()
        t0 = rig.clock.now()
        arm.update()
        before_q = rig.be.true_state()[0][:arm.dof].copy()  # the last sample read before the stall
        writes = rig.be.write
        sent: list[float] = []
        rig.be.write = lambda cmd: sent.append(rig.clock.now()) or writes(cmd)
        rig.clock.advance(stall)
        assert not arm.send()  # computed before the stall: not sent
        rig.be.write = writes
        assert sent == []
        t_back = rig.clock.now()
        rig.settle(2.0)
        fall, back, moved = gap_figures(rig, before_q, t_back)
        print(f"\n{key} stall {stall:g} s between update and send: EE fell {fall:.1f} mm, came back "
              f"{back:.2f} mm; joints moved {moved:.3f} rad; events {rig.events_since(t0)}")
        check_gap_event(rig, t0, moved)
        assert back < BACK_TOL_MM
    finally:
        rig.close()


@pytest.mark.parametrize("key", KEYS)
def test_a_stall_inside_a_path_check_sends_no_old_command_and_is_a_latched_gap(key, monkeypatch):
    """A goal's path check stalls 0.8 s: the keep-alive re-sends the hold before the stall (younger than
    the command lifetime) and nothing after it (it re-sent the pre-stall command and drove r6 237 mm
    back at 4.8x rated, with no event); the next read latches a control_gap and holds where the arm is."""
    rig = SupRig(key)
    try:
        arm = rig.arm
        real_plan = arm_module.plan
        sent: list[float] = []
        writes = rig.be.write

        def stalling_plan(goal, t, start, limits, model, keepalive):
            rig.be.write = lambda cmd: sent.append(rig.clock.now()) or writes(cmd)
            rig.clock.advance(0.1)
            keepalive()  # 0.1 s into the check: re-sent
            rig.clock.advance(0.7)
            keepalive()  # 0.8 s: older than the lifetime, not re-sent
            rig.be.write = writes
            return real_plan(goal, t, start, limits, model, keepalive=keepalive)

        monkeypatch.setattr(arm_module, "plan", stalling_plan)
        before_q = rig.be.true_state()[0][:arm.dof].copy()  # the last sample read (the previous cycle's)
        t0 = rig.clock.now()
        target = rig.home.copy()
        target[0] += 0.5
        arm.set_goal(Goal(arm.dof).add_waypoint(t=3.0, position=target))
        assert len(sent) == 1 and sent[0] == pytest.approx(t0 + 0.1)
        t_back = rig.clock.now()
        rig.settle(2.0)
        fall, back, moved = gap_figures(rig, before_q, t_back)
        print(f"\n{key} 0.8 s stall inside a path check: EE fell {fall:.1f} mm, came back {back:.2f} mm; "
              f"events {rig.events_since(t0)}")
        check_gap_event(rig, t0, moved)
        assert back < BACK_TOL_MM
    finally:
        rig.close()


@pytest.mark.parametrize(("phase", "payload"), [("rest", 0.0), ("move", 0.0), ("rest", 1.5), ("move", 1.5)])
@pytest.mark.parametrize("key", KEYS)
def test_after_a_long_fall_no_joint_is_pulled_back_toward_where_it_fell_from(key, phase, payload):
    """An 800 ms stall (at rest or mid-goal, an unknown 1.5 kg or none): the limp arm falls and the
    controller comes back to joints at 2-5x their rated speed. The brake from the measured state stops
    them with the lag of its ramp (capped at the rated speed) while they outrun it, then lands the
    command on each joint that has slowed below its ramp and follows it to rest: no cycle commands a
    joint back toward where it fell from. Before, the trailing ramp pulled the stopped joints back
    (the end effector came back 13-233 mm from the furthest it got; 25-82 cycles per run pulled a
    joint back). Judged per joint on the physical state: a cycle where the command is more than 10
    mrad behind the joint along the way it was moving at the gap's end while it moves back faster
    than 0.05 rad/s."""
    rig = SupRig(key, payload=payload)
    try:
        arm = rig.arm
        rig.move() if phase == "move" else rig.settle(0.3)
        rig.clear()
        rig.clock.advance(0.8)
        rig.settle(1.5)
        q, c, v = np.array(rig.q), np.array(rig.cmd), np.array(rig.v)
        way = np.sign(v[0])
        pulled = ((c - q) * way < -0.01) & (v * way < -0.05)
        ee = np.array([rig.ee(x) for x in q])
        reach = np.linalg.norm(ee - ee[0], axis=1)
        path = float(np.linalg.norm(np.diff(ee, axis=0), axis=1).sum())
        print(f"\n{key} {phase} {payload:g} kg, 0.8 s stall: {np.max(np.abs(v[0]) / rig.vmax):.1f}x rated at the "
              f"first sample; end effector {path * 1e3:.0f} mm of path, {reach.max() * 1e3:.0f} mm at most from "
              f"there, {(reach.max() - reach[-1]) * 1e3:.1f} mm back from that; cycles pulling a joint back "
              f"{pulled.sum(axis=0).tolist()}; events {rig.events_since(rig.t[0])}")
        assert arm.state is ArmState.STOPPED and EventKind.CONTROL_GAP in arm.events.kinds()
        assert not pulled.any()
    finally:
        rig.close()


@pytest.mark.parametrize("key", KEYS)
def test_a_sample_taken_before_the_stall_and_delivered_after_it_anchors_nothing(key):
    """The process stalls 0.8 s between the sim taking a sample and the arm reading it (a SIGSTOP inside
    the read; a buffered sample): the first sample after the stall shows the arm before it fell. The
    arm judges, computes and sends nothing from it; the next sample (taken after the fall) names the
    gap, with the motion it measures, and the hold anchors where the arm is. Anchored on the old sample,
    the hold drove the fallen arm back up: x6 334 mm, r6 260 mm."""
    rig = SupRig(key)
    try:
        arm, be = rig.arm, rig.be
        rig.move()
        rig.cycle()
        pre = arm.last_feedback.copy()
        before_q = be.true_state()[0][:arm.dof].copy()
        t0 = rig.clock.now()
        rig.clock.advance(0.8)
        real, reads = be.read, []

        def stale_first(into, timeout_s=0.1):
            ok = real(into, timeout_s)   # the physics runs to now; the first read then delivers the old sample
            if not reads:
                for field in ("time", "position", "velocity", "effort"):
                    getattr(into, field)[:] = getattr(pre, field)
            reads.append(into.sequence)
            return ok

        sent: list[float] = []
        writes = be.write
        be.read = stale_first
        be.write = lambda cmd: sent.append(rig.clock.now()) or writes(cmd)
        t_back = rig.clock.now()
        k0 = len(rig.q)
        rig.cycle()
        assert sent == []   # nothing computed from the old sample is sent
        be.write = writes
        rig.settle(2.0)
        be.read = real
        fall, back, moved = gap_figures(rig, before_q, t_back)
        q, c, v = np.array(rig.q[k0:]), np.array(rig.cmd[k0:]), np.array(rig.v[k0:])
        way = np.sign(v[0])
        pulled = ((c - q) * way < -0.01) & (v * way < -0.05)
        ee = np.array([rig.ee(x) for x in q])
        reach = np.linalg.norm(ee - rig.ee(before_q), axis=1)
        print(f"\n{key}: stale sample after a 0.8 s stall: EE fell {fall:.0f} mm, came back {back:.2f} mm from the "
              f"first fresh sample, {(reach.max() - reach[-1]) * 1e3:.1f} mm from the furthest; cycles pulling a "
              f"joint back {pulled.sum(axis=0).tolist()}; events {rig.events_since(t0)}")
        gaps = [e for e in arm.events.events if e.kind is EventKind.CONTROL_GAP and e.time >= t0]
        assert len(gaps) == 1
        # the fall between the old sample and the next is judged over the 0.8 s between them, not the 5 ms
        # between their arrivals: possible, not a feedback_implausible stop
        assert EventKind.FEEDBACK_IMPLAUSIBLE not in [e.kind for e in arm.events.events if e.time >= t0]
        first_fresh = rig.q[int(np.searchsorted(np.array(rig.t), t_back + 1e-6))]
        reported = float(re.search(r"moved up to ([0-9.]+) rad", gaps[0].detail).group(1))
        assert reported == pytest.approx(float(np.max(np.abs(first_fresh - before_q))), abs=0.02), gaps[0].detail
        assert not pulled.any()
        assert back < BACK_TOL_MM and (reach.max() - reach[-1]) * 1e3 < 10.0
    finally:
        rig.close()


#: peak joint speed after a sub-lifetime stall / the plan's peak speed of that joint (this goal: 1.25-1.43x
#: after 100 ms and 1.78-2.37x after 200 ms when it was read at the clock's time and the arm chased it;
#: 0.90-1.02x resumed where the arm is)
CATCH_UP_TOL = 1.10


@pytest.mark.parametrize("where", ["before the read", "before the send"])
@pytest.mark.parametrize("stall", [0.1, 0.2])
@pytest.mark.parametrize("key", KEYS)
def test_a_goal_after_a_stall_shorter_than_the_lifetime_resumes_where_the_arm_is(key, stall, where):
    """Mid-goal (base and shoulder at about half their rated speed), the loop stalls 100 or 200 ms, less
    than the command lifetime: the modules hold the last command meanwhile. The goal resumes from the
    point of its path nearest the arm and goes on at its planned speed: no joint moves faster than 1.10x
    its plan's peak speed afterwards (the trajectory read at the clock's time had the arm chase it at up
    to its rated speed), no joint is pulled back, the goal ends where it was going, later by about the
    stall, with no stop and no event."""
    rig = SupRig(key)
    try:
        arm = rig.arm
        delta = np.zeros(arm.dof)
        delta[:2] = (1.0, 0.4)
        duration = 1.875 * 1.0 / (0.45 * rig.vmax[0])
        arm.set_goal(Goal(arm.dof).add_waypoint(t=duration, position=rig.home + delta))
        plan = arm.trajectory
        assert plan is not None
        peak = plan.peak_velocity()
        rig.settle(duration * 0.4)
        t0 = rig.clock.now()
        if where == "before the send":
            arm.update()
            rig.clock.advance(stall)
            assert arm.send()   # younger than the lifetime: sent, late
        else:
            rig.clock.advance(stall)
        rig.clear()
        rig.settle(duration)
        v = np.abs(np.array(rig.v))
        moving = peak > 0.05
        ratio = float(np.max(v[:, moving] / peak[moving]))
        traj = arm.trajectory
        late = None if traj is None else traj.end_time - plan.end_time
        print(f"\n{key} stall {stall:g} s {where} mid-goal: peak joint speed {ratio:.2f}x the plan's; goal "
              f"delayed {late if late is None else round(late, 3)} s; state {arm.state.value}; events "
              f"{rig.events_since(t0)}")
        assert ratio <= CATCH_UP_TOL
        assert arm.state is ArmState.RUNNING and rig.events_since(t0) == "-"
        assert np.allclose(arm.last_feedback.position[:arm.dof], rig.home + delta, atol=0.02)
    finally:
        rig.close()
