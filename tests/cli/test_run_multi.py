"""hebictl run on a multi-arm config: every arm in one loop under one ArmGroup (simulated time)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.cli.run_cmd import TERM_HOLD_S, home_position
from hebictl.cli.run_multi import MultiRun, build_plans, cmd_run_multi
from hebictl.control.arm import Arm
from hebictl.control.loop import FixedRateLoop
from hebictl.control.safety import ArmState
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.multi import CONFIG_IDS, pair_config, run_args, through_the_other_arm
from tests._support.paths import BUNDLED_CONFIGS, CONFIGS_DIR

EXAMPLE = CONFIGS_DIR / "two-x-series-6dof.multi.yaml"


def test_run_homes_every_arm_holds_and_the_summary_shows_each(capsys):
    code = cmd_run_multi(run_args(backend="mock", config=EXAMPLE, hold=0.5), SimClock(), TERM_HOLD_S, home_position)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 arms on mock, one loop at 200 Hz under one arm group" in out
    for name in ("left", "right"):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"arm {name} "))
        assert "state=running, phase=hold" in line and "+1.2000 +1.8000 +2.2000 -1.5700" in line, line


def test_an_arm_goal_for_an_unknown_arm_or_of_the_wrong_length_is_refused_before_anything_moves():
    from hebictl.errors import UsageError

    for goal, words in ((["middle", "0"], "no such arm"), (["left", "0", "1"], "needs 6 finite positions")):
        with pytest.raises(UsageError, match=words):
            cmd_run_multi(run_args(backend="mock", config=EXAMPLE, arm_goal=[goal]), SimClock(), TERM_HOLD_S,
                          home_position)


def _sim_run(tmp_path, config, *, goal=None, obstacles=True, seconds=8.0, during=None):
    """Two arms of ``config`` on the sim (one scene), home, then arm left's ``goal``; returns the run,
    the arms and (contact cycles, deepest penetration [m]) between the arms."""
    from sim_backend.world import contacts_between

    clock = SimClock()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=clock, obstacles=obstacles)
    touching = [0, 0.0]
    try:
        goals = [["left", *map(str, goal)]] if goal is not None else None
        run = MultiRun(multi, build_plans(multi, run_args(arm_goal=goals), home_position), clock, 1.0, 0.5)

        def step():
            going = run.step()
            n, depth = contacts_between(multi.physics, "left", "right")
            touching[0] += n > 0
            touching[1] = max(touching[1], depth)
            if during is not None:
                during(clock.now(), multi)
            return going

        FixedRateLoop(step, 200.0, clock).run(duration=seconds)
    finally:
        multi.close()
    return run, multi, touching


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_an_m_stop_on_one_arm_holds_both_with_one_event_naming_it(tmp_path, config):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    pressed = {}

    def press(now, multi):
        if now >= 1.0 and not pressed:
            multi.arms["right"].backend.press_mstop()
            pressed["at"] = now

    run, multi, _ = _sim_run(tmp_path, config, seconds=3.0, during=press)
    trips = [e for e in run.group.events if e.kind == "fault"]
    assert (len(trips) == 1 and trips[0].arm == "right" and "M-stop" in trips[0].detail) or "mstop" in trips[0].detail
    assert all(a.state is ArmState.STOPPED for a in multi.arms.values())
    left = multi.arms["left"].events.events
    assert any("arm group: right faulted" in e.detail for e in left)
    print(f"\n{config.name}: M-stop of right at {pressed['at']:.3f} s; group event at {trips[0].time:.3f} s "
          f"(+{(trips[0].time - pressed['at']) * 1e3:.0f} ms): {trips[0].detail}")
    assert trips[0].time - pressed["at"] <= 0.0101


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_a_goal_through_the_other_arm_is_refused_and_without_the_check_the_arms_collide(tmp_path, config):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    goal = through_the_other_arm(config, tmp_path)
    run, multi, touching = _sim_run(tmp_path, config, goal=goal, seconds=8.0)
    refused = run.plans["left"].refused
    assert len(refused) == 1 and "collision" in refused[0] and "right/" in refused[0], refused
    assert touching == [0, 0.0]
    assert all(a.state is ArmState.RUNNING for a in multi.arms.values())
    # the same goal, the other arm not in left's collision world: admitted, and the arms touch in the sim
    run2, multi2, touching2 = _sim_run(tmp_path, config, goal=goal, obstacles=False, seconds=8.0)
    assert not run2.plans["left"].refused
    assert touching2[0] > 0
    trip = run2.group.tripped
    print(f"\n{config.name}: goal {np.round(goal, 2).tolist()}: with the other arm as an obstacle: {refused[0]}; "
          f"no contact. Without: {touching2[0]} cycles in contact, deepest {touching2[1] * 1e3:.1f} mm; "
          f"group: {trip.kind + ' ' + trip.arm + ': ' + trip.detail if trip else 'not tripped'}")


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_two_goals_that_meet_hold_both_arms_short_of_each_other(tmp_path, config):
    """Left's goal is admitted while right is turned away (2 rad on its base); right then turns back
    home into left's path, both moving. Admission could not see it; the per-cycle guard holds each
    arm that closes in on the other within the slow-down threshold. Without the guard they touch."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from hebictl.cli.run_multi import ArmPlan
    from sim_backend.world import arm_distance, contacts_between

    goal = through_the_other_arm(config, tmp_path, away=-2.0)
    outcome = {}
    for guard in (True, False):
        clock = SimClock()
        multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=clock)
        try:
            home_l = home_position(multi.config.arms[0].config, multi.arms["left"].dof)
            home_r = home_position(multi.config.arms[1].config, multi.arms["right"].dof)
            away = home_r + np.eye(home_r.size)[0] * -2.0
            plans = {"left": ArmPlan([("home", home_l), ("goal", goal)]),
                     "right": ArmPlan([("home", away), ("goal", home_r)])}
            run = MultiRun(multi, plans, clock, 1.0, 0.5, guard=guard)
            touching = [0, 0.0]

            def step(run=run, multi=multi, touching=touching):
                going = run.step()
                n, depth = contacts_between(multi.physics, "left", "right")
                touching[0] += n > 0
                touching[1] = max(touching[1], depth)
                return going

            FixedRateLoop(step, 200.0, clock).run(duration=12.0)
            outcome[guard] = (run, touching, arm_distance(multi.physics, "left", "right"),
                              {n: a.state for n, a in multi.arms.items()})
        finally:
            multi.close()
    run, touching, apart, states = outcome[True]
    held = [e for e in run.group.events if e.kind == "held"]
    assert not any(p.refused for p in run.plans.values()), "left's goal must be admitted (right turned away)"
    assert held and touching == [0, 0.0] and apart > 0.0 and run.group.tripped is None
    assert all(s is ArmState.HOLD for n, s in states.items() if n in {e.arm for e in held})
    bare_run, bare_touching, _, _ = outcome[False]
    assert bare_touching[0] > 0
    trip = bare_run.group.tripped
    print(f"\n{config.name}: two goals that meet: {'; '.join(f'{e.arm} {e.detail}' for e in held)}; the arms stop "
          f"{apart * 1e3:.1f} mm apart (sim), no contact. Without the guard: {bare_touching[0]} cycles in contact, "
          f"deepest {bare_touching[1] * 1e3:.1f} mm; group "
          f"{trip.kind + ' ' + trip.arm + ': ' + trip.detail if trip else 'running'}")
