"""SIGTERM parks at ``user_data.rest_position`` (hebictl.control.park), on the MuJoCo sim, all four bundled
configs, in simulated time (a SimClock drives the loop: every time below is exact, never the wall
clock). What is checked against the physics: the measured final position (the sim's joints, not the
command), the measured peak joint speed against the rated speed, the time from the signal to the
loop's end, and the exit status ``hebictl run`` would return."""

from __future__ import annotations

import argparse
import math
import signal

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.park import STILL_RAD_S
from tests._support.paths import BUNDLED_CONFIGS

pytest.importorskip("mujoco")

IDS = [p.name.split(".")[0] for p in BUNDLED_CONFIGS]
#: [rad] the park ends "at goal" (the arm's at-goal tolerance, user_data.safety: 0.01 rad); the measured
#: position after the hold must be within this of the rest pose
REST_TOLERANCE = 0.01
RATE = 200.0


def _sim_run(config, **flags):
    """``hebictl run``'s pieces (plan_phases, RunSteps, FixedRateLoop) on the sim backend driven by a
    SimClock: the arm starts at home, its goal turns the base 0.8 rad (planned from the limits)."""
    from hebictl.cli.run_cmd import RunSteps, home_position, plan_phases
    from hebictl.control.arm import Arm
    from hebictl.control.loop import FixedRateLoop
    from hebictl.control.park import rest_position
    from hebictl.hardware.clock import SimClock

    cfg = load_config(config)
    clock = SimClock()
    home = np.asarray(cfg.user_data["home_position"], dtype=float)
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home)
    goal = home.copy()
    goal[0] += 0.8
    args = argparse.Namespace(goal=list(goal), goal_time=None, hold=math.inf, backend="sim", stop_hold=None,
                              quiet=True, rt_priority=0, cpu=None)
    vars(args).update(flags)
    phases = plan_phases(arm, home_position(cfg, arm.dof), args)
    run = RunSteps(arm, phases, clock, None, args, rest_position(cfg, arm.dof))
    run.attended = False
    loop = FixedRateLoop(run.step, RATE, clock)
    return arm, clock, run, loop


def _drive(arm, clock, run, loop, on_cycle, limit: float = 120.0) -> dict:
    """Run the loop until it ends (or ``limit`` simulated seconds); ``on_cycle(now, marks)`` after
    each cycle; records the peak measured joint speed / rated speed while the park moves."""
    marks: dict = {"peak": np.zeros(arm.dof)}
    step = run.step
    vmax = arm.limits.velocity_max

    def cycle():
        go_on = step()
        now = clock.now()
        if run.park is not None and run.park.phase == "move":
            v = np.abs(np.asarray(arm.last_feedback.velocity, dtype=float)) / vmax
            marks["peak"] = np.maximum(marks["peak"], np.where(np.isfinite(v), v, 0.0))
        on_cycle(now, marks)
        return go_on

    loop.step = cycle
    try:
        loop.run(duration=limit)
    finally:
        marks["ended"] = clock.now()
        marks["position"] = np.array(arm.last_feedback.position, dtype=float)
        arm.close()
    return marks


def _sigterm_mid_goal(run, now, marks) -> None:
    if run.phases[run.phase].name == "goal" and run.phase_start is not None and "term" not in marks \
            and now - run.phase_start >= 0.5:
        marks["term"] = now
        run.on_signal(signal.SIGTERM, None)


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=IDS)
def test_sigterm_mid_goal_parks_at_the_rest_pose(config):
    """SIGTERM 0.5 s into a goal: brake, move to the rest pose at most PARK_SPEED_FRACTION of the rated
    speed (measured), hold PARK_HOLD_S there, exit 0, all within PARK_BOUND_S of simulated time."""
    from hebictl.cli.run_cmd import exit_code
    from hebictl.control.park import PARK_BOUND_S, PARK_HOLD_S, PARK_SPEED_FRACTION

    arm, clock, run, loop = _sim_run(config)
    marks = _drive(arm, clock, run, loop, lambda now, m: _sigterm_mid_goal(run, now, m))
    park = run.park
    assert park is not None and park.phase == "parked", (park and park.outcome, [str(e) for e in arm.events.events])
    error = np.abs(marks["position"] - run.rest)
    took = marks["ended"] - marks["term"]
    peak = marks["peak"]
    code = exit_code(arm, run)
    kinds = [e.kind for e in arm.events.events]
    print(f"\n{config.name}: park move {park.duration:.2f} s; measured peak speed {peak.max():.3f} of rated "
          f"(joint {int(peak.argmax())}; planned {PARK_SPEED_FRACTION:g}); final |error| max {error.max() * 1e3:.3f} "
          f"mrad; SIGTERM to exit {took:.3f} s simulated (bound {PARK_BOUND_S:g} s); exit code {code}; {kinds}")
    assert error.max() <= REST_TOLERANCE
    assert peak.max() <= 1.2 * PARK_SPEED_FRACTION  # the sim's tracking may overshoot the plan a little
    assert PARK_HOLD_S <= took <= PARK_BOUND_S < 90.0
    assert code == 0 and kinds[0] == "terminate" and "cleared" in kinds
    assert all("measured" in e.detail for e in arm.events.events if e.kind in ("cleared", "hold"))


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=IDS)
def test_a_refused_rest_pose_falls_back_to_the_hold(config):
    """A rest pose the admission refuses (here beyond joint 1's upper limit by 0.1 rad) is not moved to:
    the arm holds where it braked for TERM_HOLD_S and the run exits; the event says why."""
    from hebictl.cli.run_cmd import TERM_HOLD_S, exit_code

    arm, clock, run, loop = _sim_run(config)
    run.rest = run.rest.copy()
    run.rest[1] = arm.limits.position_max[1] + 0.1
    braked: dict = {}

    def on_cycle(now, marks):
        _sigterm_mid_goal(run, now, marks)
        if run.park is not None and run.park.phase == "hold" and "at" not in braked:
            braked["at"] = np.array(arm.last_feedback.position, dtype=float)
            braked["t"] = now

    marks = _drive(arm, clock, run, loop, on_cycle)
    moved = np.abs(marks["position"] - braked["at"]).max()
    details = [e.detail for e in arm.events.events]
    print(f"\n{config.name}: {run.park.outcome}; held {marks['ended'] - braked['t']:.3f} s simulated, moved "
          f"{moved * 1e3:.2f} mrad while holding; exit code {exit_code(arm, run)}")
    assert run.park.phase == "hold" and "refused" in run.park.outcome
    assert any("not parking: the rest pose was refused: out_of_limits" in d for d in details), details
    assert "cleared" not in [e.kind for e in arm.events.events]  # never left the latched stop
    assert moved < 0.01
    assert TERM_HOLD_S - 1e-9 <= marks["ended"] - braked["t"] <= TERM_HOLD_S + 2 / RATE
    assert exit_code(arm, run) == 0


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=IDS)
def test_a_second_sigterm_ends_the_park_with_a_brake(config):
    """A second SIGTERM 0.5 s into the park move: the arm brakes (measured speed below the at-goal
    velocity tolerance at the end) and the run ends as soon as the brake has, not at the rest pose."""
    arm, clock, run, loop = _sim_run(config)

    def on_cycle(now, marks):
        _sigterm_mid_goal(run, now, marks)
        park = run.park
        if park is not None and park.phase == "move" and "moving" not in marks:
            marks["moving"] = now
        if "moving" in marks and "second" not in marks and now - marks["moving"] >= 0.5:
            marks["second"] = now
            run.on_signal(signal.SIGTERM, None)

    marks = _drive(arm, clock, run, loop, on_cycle)
    took = marks["ended"] - marks["second"]
    speed = float(np.abs(np.asarray(arm.last_feedback.velocity, dtype=float)).max())
    far = float(np.abs(marks["position"] - run.rest).max())
    print(f"\n{config.name}: second SIGTERM 0.5 s into the park: exited {took:.3f} s later (simulated), measured "
          f"speed at exit {speed:.4f} rad/s, {far:.3f} rad from the rest pose")
    assert run.park.phase == "aborted"
    assert any("park ended by a second signal" in e.detail for e in arm.events.events)
    assert took <= 1.0 and speed < STILL_RAD_S and far > 0.05  # exits braked and measured still


def test_an_unattended_safety_stop_parks_an_estop_keeps_holding():
    """After a latched safety stop that leaves the arm controllable (control_gap) an unattended run parks;
    after an e-stop it keeps holding (TERM_HOLD_S) and exits 1, never moving to the rest pose."""
    from hebictl.cli.run_cmd import exit_code
    from hebictl.control.safety import EventKind

    config = BUNDLED_CONFIGS[IDS.index("x-series-6dof")]
    result = {}
    for kind in (EventKind.CONTROL_GAP, EventKind.ESTOP):
        arm, clock, run, loop = _sim_run(config)

        def on_cycle(now, marks, arm=arm, run=run, kind=kind):
            if run.phases[run.phase].name == "goal" and run.phase_start is not None and "stop" not in marks \
                    and now - run.phase_start >= 0.5:
                marks["stop"] = now
                arm.stop(kind, "a stop the arm made itself (test)")

        marks = _drive(arm, clock, run, loop, on_cycle)
        result[kind] = (run.park, float(np.abs(marks["position"] - run.rest).max()), exit_code(arm, run))
        print(f"\n{kind}: park {run.park and run.park.outcome}; {result[kind][1]:.3f} rad from rest; "
              f"exit {result[kind][2]}")
    park, far, code = result[EventKind.CONTROL_GAP]
    assert park is not None and park.phase == "parked" and far <= REST_TOLERANCE and code == 1
    park, far, code = result[EventKind.ESTOP]
    assert park is None and far > 0.1 and code == 1


def test_the_bound_reached_mid_move_brakes_before_the_exit(monkeypatch):
    """Were the bound reached while the arm still moves (here PARK_BOUND_S lowered to 1.5 s, so it comes
    during the park move), the park brakes (a 'terminate' hold stop) and the run exits once the brake
    has ended, never with the arm moving."""
    import hebictl.control.park as park_module

    monkeypatch.setattr(park_module, "PARK_BOUND_S", 1.5)
    arm, clock, run, loop = _sim_run(BUNDLED_CONFIGS[IDS.index("x-series-6dof")])
    marks = _drive(arm, clock, run, loop, lambda now, m: _sigterm_mid_goal(run, now, m))
    speed = float(np.abs(np.asarray(arm.last_feedback.velocity, dtype=float)).max())
    took = marks["ended"] - marks["term"]
    print(f"\nbound 1.5 s: {run.park.outcome}; exited {took:.3f} s after SIGTERM (simulated), measured speed "
          f"{speed:.4f} rad/s")
    assert run.park.phase == "aborted" and "its bound of 1.5 s" in run.park.outcome
    assert any("park ended by its bound" in e.detail for e in arm.events.events)
    assert 1.5 <= took <= 2.5 and speed < STILL_RAD_S
