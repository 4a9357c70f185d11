"""hebictl run on a multi-arm config: every arm in one loop under one ArmGroup (simulated time)."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from hebictl.cli.run_cmd import TERM_HOLD_S, home_position
from hebictl.cli.run_multi import MultiRun, build_plans, cmd_run_multi
from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.loop import FixedRateLoop
from hebictl.control.safety import ArmState
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.multi import CONFIG_IDS, pair_config, run_args, through_the_other_arm
from tests._support.paths import BUNDLED_CONFIGS, CONFIGS_DIR

EXAMPLE = CONFIGS_DIR / "two-x-series-6dof.multi.yaml"


def test_run_homes_every_arm_holds_and_the_summary_shows_each(capsys):
    from hebictl.cli.run_cmd import realtime_request

    args = run_args(backend="mock", config=EXAMPLE, hold=0.5)
    code = cmd_run_multi(args, SimClock(), TERM_HOLD_S, home_position, realtime_request(args))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 arms on mock, one loop at 200 Hz under one arm group" in out
    assert "waiting for feedback (every arm's read) p50" in out and "real-time: off (--rt-priority 0)" in out
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



def m_stop_of_right_at(t: float):
    """A ``during`` callback pressing the right arm's M-stop at ``t`` [s, simulated], and the dict that
    gets the time it was pressed (``"at"``)."""
    pressed: dict[str, float] = {}

    def press(now, multi):
        if now >= t and not pressed:
            multi.arms["right"].backend.press_mstop()
            pressed["at"] = now
    return press, pressed

@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_an_m_stop_on_one_arm_holds_both_with_one_event_naming_it(tmp_path, config):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    press, pressed = m_stop_of_right_at(1.0)

    run, multi, _ = _sim_run(tmp_path, config, seconds=3.0, during=press)
    trips = [e for e in run.group.events if e.kind == "fault"]
    assert (len(trips) == 1 and trips[0].arm == "right" and "M-stop" in trips[0].detail) or "mstop" in trips[0].detail
    assert all(a.state is ArmState.STOPPED for a in multi.arms.values())
    left = multi.arms["left"].events.events
    assert any("arm group: right stopped" in e.detail for e in left)
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


# ---------------------------------------------------------------- --record RUN.mcap: every arm in one file


def _mcap_messages(path):
    """(topic, log time [ns], decoded message) of every message, read with the ``mcap`` package's own
    reader and decoders (not hebictl's), and the file's metadata and attachment names."""
    import json as json_

    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    factory, decoders = DecoderFactory(), {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        msgs = []
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if channel.id not in decoders:
                decoders[channel.id] = (json_.loads if channel.message_encoding == "json"
                                        else factory.decoder_for(channel.message_encoding, schema))
            msgs.append((channel.topic, message.log_time, decoders[channel.id](message.data)))
        f.seek(0)
        meta = {m.name: dict(m.metadata) for m in make_reader(f).iter_metadata()}
        f.seek(0)
        attachments = sorted(a.name for a in make_reader(f).iter_attachments())
    return msgs, meta, attachments


def _recorded_sim_run(tmp_path, config, seconds, during):
    """Two arms of ``config`` on the sim under one MultiRun recorded to one MCAP; returns the run, the
    file and, per arm, {clock time [ns]: measured position} taken from the arm after each cycle."""
    from hebictl.cli.run_multi import multi_recorder

    clock = SimClock()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=clock)
    path = tmp_path / "run.mcap"
    measured = {name: {} for name in multi.arms}
    try:
        run = MultiRun(multi, build_plans(multi, run_args(), home_position), clock, 1.0, 0.5)
        run.mcap = multi_recorder(run_args(record=path), multi, run.group, 200.0)

        def step():
            going = run.step()
            t_ns = round(clock.now() * 1e9)
            for name, arm in multi.arms.items():
                measured[name][t_ns] = np.array(arm.last_feedback.position)
            during(clock.now(), multi)
            return going

        FixedRateLoop(step, 200.0, clock).run(duration=seconds)
    finally:
        multi.close()
        done = run.mcap.close()
    assert done.dropped == 0 and done.written == done.cycles
    return run, path, measured


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_the_recording_holds_every_arm_per_cycle_as_measured_and_the_group_event_of_an_m_stop(tmp_path, config):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    press, pressed = m_stop_of_right_at(1.0)

    run, path, measured = _recorded_sim_run(tmp_path, config, 2.0, press)
    msgs, meta, attachments = _mcap_messages(path)
    for name in ("left", "right"):
        states = {t: m for topic, t, m in msgs if topic == f"/{name}/joint_states"}
        assert sorted(states) == sorted(measured[name]), f"{name}: a cycle missing or extra"
        worst = max(float(np.max(np.abs(np.array([j.position for j in states[t].joints]) - q)))
                    for t, q in measured[name].items())
        assert worst == 0.0, f"{name}: recorded position differs from the measured one by {worst}"
        assert [j.name for j in states[min(states)].joints] == list(run.group.arms[name].model.joint_names)
        assert f"{name}/robot.urdf" in attachments and f"{name}/robot.cfg.yaml" in attachments
    assert not any(topic == "/joint_states" for topic, _, _ in msgs)   # no arm's topics unprefixed
    group = [(t, m) for topic, t, m in msgs if topic == "/group/events"]
    trip = run.group.tripped
    assert trip is not None and trip.arm == "right"
    assert [m.message for _, m in group] == [f"fault right: {trip.detail}"]
    assert group[0][0] == round(trip.time * 1e9) and group[0][1].level == 3   # WARNING, at the trip's time
    right_events = [m.message for topic, _, m in msgs if topic == "/right/events"]
    assert any("mstop" in e for e in right_events), right_events
    left_events = [m.message for topic, _, m in msgs if topic == "/left/events"]
    assert any("arm group: right stopped" in e for e in left_events), left_events
    run_meta = meta["hebictl.run"]
    assert json.loads(run_meta["arms"]) == ["left", "right"]
    assert run_meta["multi_config"] == (tmp_path / f"{config.name.split('.')[0]}-pair.multi.yaml").read_text()
    print(f"\n{config.name}: {len(measured['left'])} cycles of both arms recorded, equal to the measured "
          f"positions; M-stop at {pressed['at']:.3f} s, group event at {trip.time:.3f} s")


def test_run_record_then_log_info_and_plot_show_every_arm(tmp_path, capsys):
    import argparse

    from hebictl.cli.log_cmd import cmd_info
    from hebictl.cli.run_cmd import cmd_plot
    from hebictl.config import load_config
    from hebictl.errors import RecordingError, UsageError
    from hebictl.recording.reader import load_recorder

    pytest.importorskip("matplotlib", reason="hebictl plot needs matplotlib (pip install 'hebictl[plot]')")
    out = tmp_path / "run.mcap"
    with pytest.raises(UsageError, match=r"records to \.mcap"):
        cmd_run_multi(run_args(backend="mock", config=EXAMPLE, record=tmp_path / "run.npz"), SimClock(), TERM_HOLD_S,
                      home_position)
    code = cmd_run_multi(run_args(backend="mock", config=EXAMPLE, hold=0.5, record=out), SimClock(), TERM_HOLD_S,
                         home_position)
    text = capsys.readouterr().out
    assert code == 0, text
    cycles = int(text.split(f"recording: {out} (")[1].split(" of ")[0])
    assert cmd_info(argparse.Namespace(recording=out, urdf=None, json=False)) == 0
    info = capsys.readouterr().out
    assert "arms: left, right" in info and "complete" in info
    for name in ("left", "right"):
        for topic in ("joint_states", "joint_commands"):
            assert f"/{name}/{topic} " in info and f" {cycles} " in info.split(f"/{name}/{topic} ")[1].split("\n")[0]
    assert "/group/events" in info
    png = tmp_path / "run.png"
    assert cmd_plot(argparse.Namespace(recording=out, output=png, layout=False)) == 0
    home = home_position(load_config(CONFIGS_DIR / "x-series-6dof.cfg.yaml"), 6)   # both arms' config
    for name in ("left", "right"):
        assert (tmp_path / f"run-{name}.png").stat().st_size > 10_000
        rec, _ = load_recorder(out, name)
        assert len(rec) == cycles
        np.testing.assert_allclose(rec.series("position")[-1], home, atol=1e-3)   # each arm ended at its home
    with pytest.raises(RecordingError, match="multi-arm recording"):
        cmd_plot(argparse.Namespace(recording=out, output=tmp_path / "layout.png", layout=True))


# ---------------------------------------------------------------- the live status of every arm


def _table_text(table) -> str:
    from rich.console import Console

    c = Console(record=True, width=220, file=open("/dev/null", "w"))  # noqa: SIM115  # closed with the console
    c.print(table)
    c.file.close()
    return c.export_text()


def _row(text: str, name: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.strip("│ ").startswith(f"{name} "))
    return [cell.strip() for cell in line.strip().strip("│").split("│")]


def test_the_status_shows_every_arm_moving_then_both_stopped_by_one_m_stop(tmp_path):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from hebictl.cli.run_multi import status_table

    seen = {}

    def watch(now, multi):
        if abs(now - 0.5) < 1e-9:   # mid-way home: every arm following, lagging its command on the sim
            seen["moving"] = _table_text(status_table(watch.run, 200.0, "sim"))
        if abs(now - 1.0) < 1e-9:
            multi.arms["right"].backend.press_mstop()

    clock = SimClock()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, BUNDLED_CONFIGS[0]), "sim", clock=clock)
    try:
        watch.run = run = MultiRun(multi, build_plans(multi, run_args(), home_position), clock, 1.0, 0.5)

        def step():
            going = run.step()
            watch(clock.now(), multi)
            return going

        FixedRateLoop(step, 200.0, clock).run(duration=1.2)
        stopped = _table_text(status_table(run, 200.0, "sim"))
    finally:
        multi.close()
    for name in ("left", "right"):
        arm, state, mode, phase, goal, error, _ = _row(seen["moving"], name)
        assert (state, mode, phase) == ("running", "follow", "home"), seen["moving"]
        assert 0.0 < float(goal.rstrip(" %")) < 100.0
        assert 0.0 < float(error) < 100.0, f"{name}: a tracking lag on the sim, in mrad: {error}"
        _, state, mode, phase, _, _, last = _row(stopped, name)
        assert state == "stopped", stopped
    assert "mstop" in _row(stopped, "right")[6] and "arm group: right" in _row(stopped, "left")[6]
    assert "group: fault right: mstop" in stopped
    print(f"\nstatus mid-way home:\n{seen['moving']}\nafter right's M-stop:\n{stopped}")


@pytest.mark.parametrize("quiet", [False, True])
def test_quiet_shows_no_status_as_for_one_arm(quiet, capsys, monkeypatch):
    from hebictl.cli.run_multi import shows_status

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)   # as on a terminal
    assert shows_status(run_args(quiet=quiet)) is not quiet
    code = cmd_run_multi(run_args(backend="mock", config=EXAMPLE, hold=0.2, quiet=quiet), SimClock(), TERM_HOLD_S,
                         home_position)
    out = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", capsys.readouterr().out)   # a terminal's colours
    assert code == 0 and "done after" in out   # the closing summary either way
    assert ("position error" in out) is not quiet, out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)   # piped: never a live table
    assert not shows_status(run_args(quiet=False))


# ---------------------------------------------------------------- --plot OUT.png: one figure per arm


def test_plot_draws_one_figure_per_arm_from_what_each_arm_measured(tmp_path, capsys):
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (pip install 'hebictl[plot]')")
    from hebictl.cli.run_multi import plot_arms, plot_feeds

    clock = SimClock()
    config = pair_config(tmp_path, BUNDLED_CONFIGS[0])
    multi = arms_from_multi_config(Arm, config, "sim", clock=clock)
    args = run_args(plot=tmp_path / "run.png", config=config)
    measured = {name: [] for name in multi.arms}
    try:
        run = MultiRun(multi, build_plans(multi, args, home_position), clock, 0.5, 0.5)
        run.feeds = plot_feeds(args, multi)

        def step():
            going = run.step()
            for name, arm in multi.arms.items():
                measured[name].append(np.array(arm.last_feedback.position))
            return going

        FixedRateLoop(step, 200.0, clock).run(duration=1.0)
    finally:
        multi.close()
        for feed in run.feeds.values():
            feed.close()
    written = plot_arms(args, run)
    assert written == [tmp_path / "run-left.png", tmp_path / "run-right.png"]
    for name, out in zip(("left", "right"), written, strict=True):
        assert out.stat().st_size > 10_000
        rec = run.feeds[name].recorder
        assert run.feeds[name].dropped == 0 and len(rec) == len(measured[name])
        np.testing.assert_array_equal(rec.series("position"), np.array(measured[name]))
    code = cmd_run_multi(run_args(backend="mock", config=EXAMPLE, hold=0.2, plot=tmp_path / "mock.png"), SimClock(),
                         TERM_HOLD_S, home_position)
    out = capsys.readouterr().out
    assert code == 0 and f"plot: {tmp_path / 'mock-left.png'}" in out and f"plot: {tmp_path / 'mock-right.png'}" in out


# ---------------------------------------------------------------- SIGTERM parks every arm at its rest pose

#: [rad] each arm must end within this of its rest pose (the at-goal tolerance of user_data.safety)
REST_TOLERANCE = 0.01


def _parking_run(tmp_path, config, *, second_signal_after=None, limit=120.0, rests=None, during=None,
                 turns=(0.8, -0.8), signal_in_goal=True, guard=True):
    """Two arms of ``config`` on the sim (one scene), home, then each turns its base by ``turns`` (by
    default 0.8 rad away from the other); SIGTERM 0.5 s into the goals (``signal_in_goal``), else once
    both arms hold at their goals (and, with ``second_signal_after`` [s], another signal that long
    after it). Runs in simulated time until the run ends; returns the run, the multi arms, the
    marks (signal times, per arm the peak measured speed / rated speed during its park move, the
    measured end positions and velocities, contacts between the arms) and the run's exit code."""
    import signal

    from hebictl.cli.run_multi import exit_code, rest_poses
    from sim_backend.world import contacts_between

    clock = SimClock()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=clock)
    marks = {"peak": {n: np.zeros(a.dof) for n, a in multi.arms.items()}, "contact": 0}
    try:
        goals = []
        for entry, turn in zip(multi.config.arms, turns, strict=True):
            q = home_position(entry.config, multi.arms[entry.name].dof).copy()
            q[0] += turn
            goals.append([entry.name, *map(str, q)])
        run = MultiRun(multi, build_plans(multi, run_args(arm_goal=goals), home_position), clock, 60.0, TERM_HOLD_S)
        run.rests, run.quiet, run.guard = rest_poses(multi), True, guard
        run.rests.update(rests or {})
        started = {}

        def step():
            going = run.step()
            now = clock.now()
            if all(p.phase == ("goal" if signal_in_goal else "hold") for p in run.plans.values()):
                started.setdefault("goal", now)
            if "goal" in started and now - started["goal"] >= 0.5 * signal_in_goal and "term" not in marks:
                marks["term"] = now
                run.on_signal(signal.SIGTERM, None)
            if second_signal_after is not None and "term" in marks and "again" not in marks \
                    and now - marks["term"] >= second_signal_after:
                marks["again"] = now
                run.on_signal(signal.SIGTERM, None)
            for name, park in run.parks.items():
                if park.phase == "move":
                    arm = park.arm
                    v = np.abs(np.asarray(arm.last_feedback.velocity, dtype=float)) / arm.limits.velocity_max
                    marks["peak"][name] = np.maximum(marks["peak"][name], np.where(np.isfinite(v), v, 0.0))
            marks["contact"] += contacts_between(multi.physics, "left", "right")[0] > 0
            if during is not None:
                during(now, run, multi, marks)
            return going

        FixedRateLoop(step, 200.0, clock).run(duration=limit)
        marks["ended"] = clock.now()
        marks["position"] = {n: np.array(a.last_feedback.position) for n, a in multi.arms.items()}
        marks["velocity"] = {n: np.array(a.last_feedback.velocity) for n, a in multi.arms.items()}
    finally:
        multi.close()
    return run, multi, marks, exit_code(run)


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_sigterm_mid_goal_parks_every_arm_at_its_rest_pose(tmp_path, config):
    """SIGTERM 0.5 s into both arms' goals: every arm brakes, moves to its config's rest pose at most
    0.25 of its rated speed (measured on the sim), holds there and the run ends by itself within the
    park's bound, exit 0; the arms never touch."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from hebictl.cli.run_multi import status_table
    from hebictl.control.park import PARK_BOUND_S, PARK_HOLD_S, PARK_SPEED_FRACTION

    def watch(now, run, multi, marks):
        if "term" in marks and "table" not in marks and now - marks["term"] >= 1.0:
            marks["table"] = _table_text(status_table(run, 200.0, "sim"))

    run, multi, marks, code = _parking_run(tmp_path, config, during=watch)
    took = marks["ended"] - marks["term"]
    assert all(_row(marks["table"], n)[3] == "park move" for n in ("left", "right")), marks["table"]
    lines = []
    for name, park in run.parks.items():
        error = np.abs(marks["position"][name] - run.rests[name])
        peak = marks["peak"][name]
        lines.append(f"{name}: park move {park.duration:.2f} s, measured peak speed {peak.max():.3f} of rated "
                     f"(joint {int(peak.argmax())}), final |error| max {error.max() * 1e3:.3f} mrad")
        assert park.phase == "parked", (name, park.outcome, [str(e) for e in multi.arms[name].events.events])
        assert error.max() <= REST_TOLERANCE
        assert peak.max() <= 1.2 * PARK_SPEED_FRACTION   # the sim's tracking may overshoot the plan a little
        kinds = [e.kind for e in multi.arms[name].events.events]
        assert "terminate" in kinds and "cleared" in kinds, kinds
    print(f"\n{config.name}: SIGTERM at {marks['term']:.3f} s mid-goal; " + "; ".join(lines) +
          f"; SIGTERM to exit {took:.3f} s simulated (bound {PARK_BOUND_S:g} s); contacts {marks['contact']}; "
          f"exit code {code}")
    assert sorted(run.parks) == ["left", "right"]
    assert PARK_HOLD_S <= took <= PARK_BOUND_S < 90.0
    assert code == 0 and marks["contact"] == 0
    assert [e.kind for e in run.group.events] == ["stop"]


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_a_second_sigterm_during_the_parks_brakes_every_arm_and_exits_once_still(tmp_path, config):
    """A second SIGTERM 1.0 s after the first (both arms braking or on their park move): every park
    ends, each arm brakes and the run exits once every arm is measured still (park.py's rule: below
    STILL_RAD_S for STILL_SAMPLES samples, at most ABORT_SETTLE_S after the brake)."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from hebictl.control.park import ABORT_SETTLE_S, STILL_RAD_S

    run, multi, marks, code = _parking_run(tmp_path, config, second_signal_after=1.0)
    took = marks["ended"] - marks["again"]
    speeds = {n: float(np.abs(v).max()) for n, v in marks["velocity"].items()}
    print(f"\n{config.name}: second SIGTERM {marks['again'] - marks['term']:.3f} s after the first; exit "
          f"{took:.3f} s later (simulated); measured speed at exit " +
          ", ".join(f"{n} {s:.4f} rad/s" for n, s in speeds.items()) + f"; exit code {code}")
    assert all(p.phase == "aborted" for p in run.parks.values()), {n: p.outcome for n, p in run.parks.items()}
    assert all(s < STILL_RAD_S for s in speeds.values()) or took >= ABORT_SETTLE_S
    assert took <= 2.0 and code == 0 and marks["contact"] == 0


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_a_rest_pose_inside_the_other_arm_is_not_parked_at(tmp_path, config):
    """The other arm stays an obstacle during the parks: left's rest pose set inside right (the seeded
    search's pose) is refused by left's admission (collision with right's shapes); left falls back to
    the hold, saying why, right parks, the arms never touch, exit 0."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    inside = through_the_other_arm(config, tmp_path)
    run, multi, marks, code = _parking_run(tmp_path, config, rests={"left": inside})
    left, right = run.parks["left"], run.parks["right"]
    apart = float(np.abs(marks["position"]["left"] - inside).max())   # [rad] left's end from that pose
    print(f"\n{config.name}: left's rest pose inside right: {left.outcome}; right: {right.outcome}; "
          f"contacts {marks['contact']}; SIGTERM to exit {marks['ended'] - marks['term']:.3f} s; exit code {code}")
    assert left.phase == "hold" and "refused: collision" in left.outcome and "right/" in left.outcome
    assert right.phase == "parked" and marks["contact"] == 0 and code == 0 and apart > 0.1


# ---------------------------------------------------------------- the group's loop: --rt-priority, the wait meter


def test_the_group_loop_gets_rt_priority_and_measures_every_arms_feedback_wait(capsys):
    """The multi-arm loop asks for --rt-priority/--cpu on its thread, as one arm's does: inside the
    cycle the thread is pinned to the CPU asked for, and runs SCHED_FIFO exactly when the grant says so;
    the grant line is printed before the first cycle. The arms' feedback reads count as waiting, not
    work: the mock arms' feedback comes on a 200 Hz grid (0, 5, 10 ms, ...) and the loop's deadlines
    are 2 ms after it (started at 2 ms), so each cycle waits 3 ms for the first arm's sample (the
    second arm's is then due): the loop must report 3 ms waiting per cycle and no work."""
    import os

    from hebictl.cli.run_cmd import realtime_request
    from hebictl.cli.run_multi import multi_loop

    clock = SimClock()
    multi = arms_from_multi_config(Arm, EXAMPLE, "mock", clock=clock)
    cpu = min(os.sched_getaffinity(0))
    seen = []
    try:
        for arm in multi.arms.values():
            def read(*a, _read=arm.backend.read, **k):
                seen.append((frozenset(os.sched_getaffinity(0)), os.sched_getscheduler(0)))
                return _read(*a, **k)

            arm.backend.read = read
        args = run_args(backend="mock", rt_priority=1, cpu=cpu)
        run = MultiRun(multi, build_plans(multi, args, home_position), clock, 60.0, TERM_HOLD_S)
        loop = multi_loop(run, clock, 200.0, args, realtime_request(args))
        clock.advance(0.002)
        try:
            loop.run(duration=3.0)
        finally:
            loop.release()
    finally:
        multi.close()
    grant = loop.grant
    err = capsys.readouterr().err
    fifo = {policy == os.SCHED_FIFO for _, policy in seen}
    w = run.windows[-1]
    print(f"\n{grant.line()}\nloop thread in the cycle: CPUs {sorted(set().union(*(c for c, _ in seen)))}, "
          f"SCHED_FIFO {fifo}; waiting for feedback p50 {w.wait_p50 * 1e3:.3f} ms, p99 {w.wait_p99 * 1e3:.3f} ms, "
          f"work p99 {w.work_p99 * 1e3:.3f} ms, period p50 {w.period_p50 * 1e3:.3f} ms, {loop.cycles} cycles")
    assert f"hebictl run: {grant.line()}" in err
    assert grant.cpu == cpu and all(c == {cpu} for c, _ in seen)
    assert fifo == {grant.priority > 0}
    assert loop.cycles == 600 and loop.total.late == 0
    for w in run.windows:
        assert w.wait_p50 == pytest.approx(0.003, abs=1e-9) and w.wait_p99 == pytest.approx(0.003, abs=1e-9)
        assert w.work_p99 == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_an_m_stop_during_the_parks_ends_every_park_in_the_hold(tmp_path, config):
    """Right's M-stop pressed 1.0 s after the SIGTERM (both arms on their park move): right stops
    (its own latched stop), left's park ends in the fall-back hold naming right, one group fault
    event; the run exits by itself within the park's bound, exit 1 (an arm faulted)."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from hebictl.control.park import PARK_BOUND_S

    def press(now, run, multi, marks):
        if "term" in marks and "pressed" not in marks and now - marks["term"] >= 1.0:
            marks["pressed"] = now
            marks["phases"] = {n: p.phase for n, p in run.parks.items()}
            multi.arms["right"].backend.press_mstop()

    run, multi, marks, code = _parking_run(tmp_path, config, during=press)
    left, right = run.parks["left"], run.parks["right"]
    faults = [e for e in run.group.events if e.kind == "fault"]
    speed = float(np.abs(marks["velocity"]["left"]).max())
    print(f"\n{config.name}: M-stop of right {marks['pressed'] - marks['term']:.3f} s after the SIGTERM (parks "
          f"{marks['phases']}); group: {[f'{e.kind} {e.arm}: {e.detail}' for e in faults]}; left: {left.outcome}; "
          f"right: {right.outcome}; exit {marks['ended'] - marks['term']:.3f} s after the SIGTERM, left at "
          f"{speed:.4f} rad/s; cycles with the arms in contact {marks['contact']}; exit code {code}")
    assert marks["phases"] == {"left": "move", "right": "move"}
    assert len(faults) == 1 and faults[0].arm == "right" and "mstop" in faults[0].detail
    assert left.phase == "hold" and "arm right stopped during its park" in left.outcome
    assert right.phase == "hold" and "a safety stop during the park move" in right.outcome
    assert multi.arms["right"].state is ArmState.STOPPED and multi.arms["left"].state is ArmState.STOPPED
    # contacts between the arms are printed, not asserted: after its M-stop the sim's right arm is no longer
    # commanded by hebictl (x-series-7dof-double-shoulder: measured at 10-14 rad/s after it, and touching left)
    assert marks["ended"] - marks["term"] <= PARK_BOUND_S and code == 1 and speed < 0.02


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_parks_that_meet_are_held_short_of_each_other(tmp_path, config):
    """Right is turned 2 rad away on its base and left holds at home when the SIGTERM comes; left's rest
    pose is the seeded search's pose inside right at its home (its path clear of right turned away:
    admitted), right's is its home. Both park toward each other; the run's per-cycle guard holds the
    park that closes in on the other arm short of it (fall-back hold, a group ``held`` event)."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from sim_backend.world import arm_distance

    inside = through_the_other_arm(config, tmp_path, away=-2.0)
    apart = {}

    def distance(now, run, multi, marks):
        if "term" in marks:
            apart["min"] = min(apart.get("min", np.inf), arm_distance(multi.physics, "left", "right"))

    home = home_position(load_config(config), len(inside))
    run, multi, marks, code = _parking_run(tmp_path, config, rests={"left": inside, "right": home}, during=distance,
                                           turns=(0.0, -2.0), signal_in_goal=False)
    held = [e for e in run.group.events if e.kind == "held"]
    closest = apart.pop("min")
    bare_run, _, bare, _ = _parking_run(tmp_path, config, rests={"left": inside, "right": home}, during=distance,
                                        turns=(0.0, -2.0), signal_in_goal=False, guard=False)
    print(f"\n{config.name}: " + "; ".join(f"{n}: {p.outcome}" for n, p in run.parks.items()) +
          f"; group held: {[f'{e.arm}: {e.detail}' for e in held]}; closest {closest * 1e3:.1f} mm (sim), "
          f"contacts {marks['contact']}; exit {marks['ended'] - marks['term']:.3f} s after the SIGTERM, code {code}. "
          f"Without the guard: {bare['contact']} cycles in contact; " +
          "; ".join(f"{n}: {p.outcome}" for n, p in bare_run.parks.items()))
    assert held and all("park held" in run.parks[e.arm].outcome for e in held)
    assert marks["contact"] == 0 and closest > 0.0 and code == 0
    assert bare["contact"] > 0
