"""hebictl run on a multi-arm config with a mobile base (simulated time): the base holds zero, or
drives --base-velocity for --base-time s then holds zero; an arm's e-stop during the drive stops the
base (one group event naming the arm), Ctrl-C stops it too; the status and the summary show it."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from hebictl.cli.run_cmd import TERM_HOLD_S, home_position
from hebictl.cli.run_multi import MultiRun, base_plan, build_plans, cmd_run_multi, status_table
from hebictl.control.arm import Arm
from hebictl.control.base import BaseState
from hebictl.control.safety import EventKind
from hebictl.errors import UsageError
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.multi import run_args
from tests._support.paths import CONFIGS_DIR

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
TWO_ARMS = CONFIGS_DIR / "two-x-series-6dof.multi.yaml"
BACKENDS = ("mock", pytest.param("sim", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("mujoco") is None, reason="needs MuJoCo")))


def test_the_base_drives_its_script_then_holds_zero_and_the_summary_shows_it(capsys):
    args = run_args(backend="mock", config=CONFIG, hold=0.5, base_velocity=[3.0, 3.0, 3.0], base_time=1.0)
    code = cmd_run_multi(args, SimClock(), TERM_HOLD_S, home_position)
    out = capsys.readouterr().out
    assert code == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("base base "))
    assert "3 wheels): state=running, phase=hold" in line and "commanded +0.0000 +0.0000 +0.0000" in line, line
    assert "1 arm on mock" in out and "1 arms" not in out, out   # one arm beside the base: the summary says so


@pytest.mark.parametrize(("config", "velocity", "words"), [
    (TWO_ARMS, [1.0], "the config has no base"),
    (CONFIG, [1.0, 1.0], "needs 3 finite wheel velocities within max_velocity 9.6 9.6 9.6 rad/s"),
    (CONFIG, [1.0, 1.0, 10.0], "within max_velocity"),
])
def test_a_bad_base_velocity_is_refused_before_anything_moves(config, velocity, words):
    with pytest.raises(UsageError, match=words):
        cmd_run_multi(run_args(backend="mock", config=config, base_velocity=velocity), SimClock(), TERM_HOLD_S,
                      home_position)


def _run(backend: str, seconds: float = 1.0):
    clock = SimClock()
    multi = arms_from_multi_config(Arm, CONFIG, backend, clock=clock, initial_position=[0, 1.2, 1.8, 2.2, -1.57, 0])
    run = MultiRun(multi, build_plans(multi, run_args(), home_position), clock, 1.0, 0.5)
    run.base_plan = base_plan(run_args(base_velocity=[9.6, 9.6, 9.6], base_time=seconds), multi.base)
    return multi, run, clock


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_arms_estop_during_the_drive_stops_the_base_with_one_event_naming_the_arm(backend):
    multi, run, clock = _run(backend, seconds=10.0)
    try:
        base = run.group.base
        for _ in range(400):   # 2 s: the base at full speed
            assert run.step()
        assert run.base_plan is not None and run.base_plan.phase == "drive"
        assert np.allclose(base.feedback.velocity, 9.6, rtol=0.02)
        t0, p0 = clock.now(), base.feedback.position.copy()
        multi.arms["arm"].stop(EventKind.ESTOP, "test: the arm's e-stop")
        while base.state is not BaseState.STOPPED or not base.still:
            assert clock.now() - t0 < 2.0
            run.step()
        t_stop, travel = clock.now() - t0, base.feedback.position - p0
        events = [e for e in run.group.events if e.kind == "fault"]
        print(f"\n[{backend}] hebictl run: the arm's e-stop mid-drive stops the base from 9.6 rad/s in "
              f"{t_stop * 1e3:.0f} ms, wheel travel {travel.round(3)} rad; {events[0].kind} {events[0].arm}")
        assert len(events) == 1 and events[0].arm == "arm" and t_stop <= 0.52   # v/a 0.5 s and 4 cycles
        table = status_table(run, 200.0, backend)
        assert table.row_count == 2
    finally:
        multi.close()


def test_ctrl_c_stops_the_base_too():
    multi, run, clock = _run("mock", seconds=10.0)
    try:
        for _ in range(200):
            run.step()
        run.on_signal(signal.SIGINT, None)
        while run.step():
            pass
        base = run.group.base
        assert base.state is BaseState.STOPPED and base.latch is not None and base.latch.kind == "interrupt"
        assert not base.velocity_command.any()
    finally:
        multi.close()


def test_the_recording_holds_the_base_every_cycle(tmp_path, capsys):
    import json

    from mcap.reader import make_reader

    out = tmp_path / "run.mcap"
    args = run_args(backend="mock", config=CONFIG, hold=0.2, base_velocity=[3.0, 3.0, 3.0], base_time=0.5,
                    record=out, record_mode="0600")
    assert cmd_run_multi(args, SimClock(), TERM_HOLD_S, home_position) == 0
    with out.open("rb") as f:
        reader = make_reader(f)
        wheels = [json.loads(m.data) for _, ch, m in reader.iter_messages() if ch.topic == "/base/wheels"]
        f.seek(0)
        cycles = sum(1 for _, ch, _ in make_reader(f).iter_messages() if ch.topic == "/arm/joint_states")
    assert len(wheels) == cycles > 100
    peak = max(max(w["velocity_command"]) for w in wheels)
    assert peak == pytest.approx(3.0) and wheels[-1]["velocity_command"] == [0.0] * 3
    assert {w["state"] for w in wheels} == {"running"} and wheels[-1]["stop"] is None


def test_the_base_counts_the_loops_cycles_at_a_rate_other_than_its_feedback(monkeypatch):
    """--rate 50 with the wheels' feedback at 200 Hz: the ramp still reaches --base-velocity at
    max_acceleration (its dt bound is two of the loop's 20 ms cycles, not of the feedback's 5 ms)."""
    seen = []
    real = MultiRun.step

    def step(self):
        going = real(self)
        seen.append(float(self.group.base.velocity_command[0]))
        return going

    monkeypatch.setattr(MultiRun, "step", step)
    args = run_args(backend="mock", config=CONFIG, hold=0.2, base_velocity=[9.6] * 3, base_time=1.0, rate=50.0)
    assert cmd_run_multi(args, SimClock(), TERM_HOLD_S, home_position) == 0
    rises = np.diff(seen)
    assert max(seen) == pytest.approx(9.6) and rises.max() == pytest.approx(19.2 / 50.0)
