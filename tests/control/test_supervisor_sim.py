"""Issue 18's supervisor rules on the physics sim, every bundled config: the rows of
benchmarks/safety_supervisor.py (M-stop release, a module gone and back, clear_fault() while
braking, stop() then damp, stop() at full speed with unknown payloads) judged against their
targets, and seeded random sequences of goals, stops, faults, M-stops, clears and releases
checked cycle by cycle (no commanded step above rated speed x period that pulls the arm, nothing
commanded beyond the limits, and the end effector still while latched in a hold)."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

from benchmarks.safety_supervisor import (
    CONFIGS,
    EE_TOL,
    STEP_TOL,
    STILL_T,
    SupRig,
    sc_clear_while_moving,
    sc_control_stall,
    sc_module_return,
    sc_mstop_release,
    sc_stop_payload,
    sc_stop_then_damp,
    step_ratio,
)
from hebictl.control.arm import Mode
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState
from hebictl.errors import CommandRejected
from hebictl.hardware.firmware import ModuleSafety

pytest.importorskip("mujoco")

KEYS = list(CONFIGS)


def show(row) -> None:
    print(f"\n{row.scenario}: step {row.peak:.3f}x, standstill {row.still:.3f} s, EE after {row.ee_mm:.2f} mm, "
          f"events {row.event}; {row.note}")


@pytest.mark.parametrize("key", KEYS)
def test_mstop_release_moves_nothing(key):
    """HoldPosition M-stop mid-move, released 1.5 s later while latched: EE < 5 mm over the 1.5 s after."""
    row = sc_mstop_release(key, "HoldPosition")
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("key", KEYS)
def test_mstop_motoroff_release_brakes_as_fast_as_the_actuators_allow(key):
    """MotorOff M-stop mid-move: the arm falls while pressed (the modules' strategy: no torque); released
    1.5 s later it comes back at up to 5x the rated speed (r6), far outside its limits: still within
    0.5 s of the release, then EE < 5 mm (the brake starts from the measured state, with the effort the
    actuators have, runs out along a joint's way outside its limits, and brakes again while it overran)."""
    row = sc_mstop_release(key, "MotorOff")
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("key", KEYS)
def test_module_return_holds_where_the_arm_is(key):
    """The shoulder gone 0.5 s mid-move (it falls, r6's at ~3 rad/s): still within 0.5 s of its return."""
    row = sc_module_return(key)
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("stall", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("key", KEYS)
def test_control_stall_then_still_where_the_arm_is(key, stall):
    """A stall of the control process: shorter than the command lifetime nothing happens; longer, a
    control_gap, no command step above rated speed x period after it, standstill within 0.5 s of the
    return and EE < 5 mm after (a 1 s stall drops the limp arm through its limits first: measured)."""
    row = sc_control_stall(key, stall)
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("key", KEYS)
def test_control_stall_with_module_firmware_limits(key):
    """With the modules' own position limits set (0.05 rad outside the arm's, HoldPosition), the limp arm
    of a 1 s stall is caught at them: it goes at most 0.5 rad past a limit instead of 1.4-2.9 rad."""
    row = sc_control_stall(key, 1.0, firmware_limits=True)
    show(row)
    beyond = float(row.note.split(" mrad")[0]) * 1e-3
    assert row.ok and beyond < 0.5, row


@pytest.mark.parametrize("key", KEYS)
def test_clear_fault_while_braking_brakes_then_holds(key):
    row = sc_clear_while_moving(key)
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("key", KEYS)
def test_damp_during_brake_keeps_the_brake(key):
    row = sc_stop_then_damp(key)
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("key", KEYS)
def test_stop_at_full_speed(key):
    row = sc_stop_payload(key, 0.0)
    show(row)
    assert row.ok, row


@pytest.mark.parametrize("mass", [0.5, 1.0])
@pytest.mark.parametrize("key", KEYS)
def test_stop_with_unknown_payload(key, mass):
    """stop() at 0.95x rated with an end-effector payload the model does not know: no step pulls the arm,
    still within 0.5 s, EE < 5 mm after (the brake carries the model-mismatch monitor's estimate)."""
    row = sc_stop_payload(key, mass)
    show(row)
    assert row.ok and row.still <= STILL_T and math.isfinite(row.ee_mm) and row.ee_mm < EE_TOL, row


#: the stated degradation above 1 kg (docs/supervisor.md, "Stopping with an unknown payload"): (standstill
#: [s], EE after it [mm]) after stop() at 0.95x rated, measured 2026-12-02 on the sim with the
#: constant-deceleration brake ramp (its end tapered over 0.6 v0 / a while it carries the estimate; the
#: smoothstep's figures before it are in the doc); the test bounds them with 10 % on top (the EE never below
#: the 5 mm target). Standstill None: not still (>= 0.05 rad/s) within the 2 s the scenario waits. Every
#: row: no step above 1.05x rated x period. The x5 and x7 rows re-measured 2026-12-02 with the load at its
#: estimated centre of mass in the brake (x5 1.5 kg 0.21 -> 0.255 s, 1.72 -> 1.35 mm: its 5 cm along the
#: end effector is not observed at x5's home; x7 1.5 kg 0.335 -> 0.25 s, 4.58 -> 1.54 mm, 2 kg 0.665 -> 0.46 s,
#: 2.36 -> 3.80 mm); the others within their 10 %.
HEAVY = {("x6", 1.5): (0.41, 2.64), ("x5", 1.5): (0.255, 1.72), ("x7", 1.5): (0.25, 1.54), ("r6", 1.5): (0.475, 3.48),
         ("x6", 2.0): (0.845, 8.90), ("x5", 2.0): (0.46, 2.13), ("x7", 2.0): (0.46, 3.80), ("r6", 2.0): (1.28, 4.62),
         ("x6", 3.0): (1.675, 1.24), ("x5", 3.0): (1.285, 2.55), ("x7", 3.0): (1.795, 2.80), ("r6", 3.0): (None, None)}


@pytest.mark.parametrize(("key", "mass"), list(HEAVY))
def test_stop_with_a_heavier_unknown_payload_degrades_as_stated(key, mass):
    """stop() at 0.95x rated with 1.5-3 kg the model does not know: issue 29 6b asks the stop target
    (still within 0.5 s, EE < 5 mm) up to 1.5 kg on every config: met on all four since the brake ramp
    decelerates at a constant rate (r6 0.545 -> 0.475 s). Above, the degradation docs/supervisor.md
    states, measured here."""
    row = sc_stop_payload(key, mass)
    show(row)
    still, ee = HEAVY[(key, mass)]
    assert row.peak <= STEP_TOL, row
    if still is None:  # not still within the scenario's 2 s: measured and printed, stated as such
        assert row.still >= 1.9, row
        return
    assert row.still <= 1.1 * still and math.isfinite(row.ee_mm) and row.ee_mm < max(EE_TOL, 1.1 * ee), row
    if still <= STILL_T:
        assert row.ok, row


# ---------------------------------------------------------------------- random sequences
ACTIONS = ("goal", "goal", "goal", "stop", "damp", "hold", "cancel", "clear", "mstop", "disconnect", "nan")


def _random_goal(rig: SupRig, rng: np.random.Generator) -> bool:
    lim = rig.arm.limits
    lo, hi = np.maximum(lim.position_min, rig.home - 0.8), np.minimum(lim.position_max, rig.home + 0.8)
    target = rng.uniform(lo, hi)
    with contextlib.suppress(CommandRejected):  # a refused goal is part of the sequence
        rig.arm.set_goal(Goal(rig.arm.dof).add_waypoint(position=target))
        return True
    return False


@pytest.mark.parametrize("key", KEYS)
def test_random_sequences_never_step_exceed_or_move_while_latched(key):
    """60 random actions, 0.1-0.4 s apart (seeded; a latched stop is cleared half the time, an M-stop
    released after the cycles that follow its press): every cycle the command's step that pulls the arm
    is <= rated speed x period, no commanded position is beyond a limit by more than 1 mrad further than
    the arm was measured, and while the arm is latched in a hold (not damp/release, M-stop not pressed,
    once still) the end effector moves < 5 mm."""
    rng = np.random.default_rng(18)
    rig = SupRig(key)
    arm, be = rig.arm, rig.be
    n = be.size
    be.set_safety(ModuleSafety.create(np.full(n, -np.inf), np.full(n, np.inf), mstop_strategy="HoldPosition"))
    lim = arm.limits
    worst_step, worst_ee, over = 0.0, 0.0, 0.0
    worst_at = over_at = ""
    ref = None  # EE where the current latched, still hold began
    actions = []
    accepted = 0
    fastest = 0.0
    for _ in range(60):
        action = str(rng.choice(ACTIONS))
        actions.append(action)
        if arm.state is ArmState.STOPPED and rng.random() < 0.5:
            arm.clear_fault()
            actions.append("clear")
        if action in ("stop", "damp", "hold", "cancel", "clear"):
            # a stop or hold asked for anew anchors a new hold where the arm is then: its stillness is
            # judged from its own standstill (a stop shorter than a cycle, from a slow arm, used to be
            # counted with the hold before it: r6's base, swinging back 9 mrad after a module's fall had
            # dragged it past the earlier hold, was charged to the new one, 5.4 mm)
            ref = None
        if action == "goal":
            if arm.state is ArmState.STOPPED:  # the operator clears, then asks for the goal
                arm.clear_fault()
            accepted += _random_goal(rig, rng)
        elif action == "stop":
            arm.stop()
        elif action == "damp":
            arm.stop(behaviour="damp")
        elif action == "hold":
            arm.hold()
        elif action == "cancel":
            arm.cancel_goal()
        elif action == "clear":
            arm.clear_fault()
        elif action == "mstop":  # pressed now, released after the next run of cycles
            be.press_mstop()
        elif action == "disconnect":
            be.faults.disconnect(int(rng.integers(arm.dof)), duration=float(rng.uniform(0.02, 0.3)))
        elif action == "nan":
            be.faults.nan_feedback(int(rng.integers(arm.dof)), ("position",), duration=0.02)
        start = len(rig.cmd)
        end = rig.clock.now() + float(rng.uniform(0.1, 0.4))
        while rig.clock.now() < end:
            rig.cycle()
            cmd = rig.cmd[-1]
            finite = np.isfinite(cmd)
            # beyond a limit, and further out than the arm was last measured (holding an arm where it
            # is, past a limit it sagged or was pushed over while the M-stop was pressed, drives nothing)
            q = arm.last_feedback.position
            out = np.maximum(cmd - np.maximum(lim.position_max, q), np.minimum(lim.position_min, q) - cmd)
            beyond = float(np.max(np.where(finite, np.maximum(out, 0.0), 0.0)))
            if beyond > over:
                over, over_at = beyond, f"after {actions[-3:]} ({arm.state.value}/{arm.mode.value})"
            latched_hold = (arm.state is ArmState.STOPPED and arm.mode is Mode.HOLD and not be.mstop_pressed)
            still = bool(np.all(np.abs(rig.v[-1]) < 0.05))
            if latched_hold and (ref is not None or still):
                ee = rig.ee(rig.q[-1])
                ref = ee if ref is None else ref
                worst_ee = max(worst_ee, float(np.linalg.norm(ee - ref)) * 1e3)
            elif not latched_hold:
                ref = None
            fastest = max(fastest, float(np.max(np.abs(rig.v[-1]) / rig.vmax)))
        if be.mstop_pressed:
            be.release_mstop()
        seg = slice(max(start - 1, 0), len(rig.cmd))
        step = step_ratio(np.array(rig.cmd[seg]), np.array(rig.q[seg]), rig.vmax * arm.nominal_period)
        if step > worst_step:
            worst_step, worst_at = step, f"after {actions[-3:]} ({arm.state.value}/{arm.mode.value})"
    rig.close()
    print(f"\n{key}: {len(actions)} actions ({', '.join(actions)}), {accepted} goals accepted, fastest joint "
          f"{fastest:.2f}x rated: worst step {worst_step:.3f}x rated*dt, beyond limits {over * 1e3:.3f} mrad, "
          f"EE while latched and still {worst_ee:.2f} mm")
    # the sequence did move the arm (random goals through the arm or the table are refused since the
    # collision checks: x5 and r6 accept 5-6 of their goals)
    assert accepted >= 4 and fastest > 0.15
    assert worst_step <= STEP_TOL, worst_at
    assert over <= 1e-3, over_at  # (x5 holds 0.24 mrad past a limit the arm was recovering from)
    assert worst_ee < EE_TOL


@pytest.mark.parametrize("wait", [0.0, 0.05])
@pytest.mark.parametrize("key", KEYS)
def test_clear_fault_right_after_a_motoroff_release_never_pulls_a_fallen_joint_back_to_its_limit(key, wait):
    """MotorOff M-stop mid-move: the limp arm falls far outside its limits; released 1.5 s later and
    clear_fault() ``wait`` s after, while it still swings back: a joint that leaves the recovery range
    is held where it is (braking first), never at its limit. Every joint outside its limits at the
    clear ends at least half as far outside (the clamped hold pulled r6's back: 9.18 -> 6.56 rad past its
    limit, 671 mm at the end effector)."""
    rig = SupRig(key)
    try:
        n = rig.be.size
        rig.be.set_safety(ModuleSafety.create(np.full(n, -np.inf), np.full(n, np.inf), mstop_strategy="MotorOff"))
        rig.move()
        rig.be.press_mstop()
        rig.settle(1.5)
        rig.be.release_mstop()
        rig.settle(wait)
        lim = rig.arm.limits

        def outside(q):
            return np.maximum(np.maximum(lim.position_min - q, q - lim.position_max), 0.0)

        at_clear = outside(rig.be.true_state()[0][:rig.arm.dof])
        rig.arm.clear_fault()
        rig.settle(2.0)
        at_end = outside(rig.q[-1])
        print(f"\n{key} clear_fault {wait:g} s after a MotorOff release: outside its limits at the clear "
              f"{np.round(at_clear, 2)} rad, 2 s later {np.round(at_end, 2)} rad; events {rig.events_since(0.0)}")
        was = at_clear > 0.05
        assert np.all(at_end[was] >= 0.5 * at_clear[was])
    finally:
        rig.close()
