"""Closed-loop scenarios: hebictl's Arm controlling the simulated kits (headless, SimClock, faster than real time)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.formats import load_model
from hebictl.gains import load_gains
from hebictl.hardware import SimClock
from tests._support.paths import REPO_ROOT

pytest.importorskip("mujoco")

from sim_backend import with_payload

CONFIGS = ["x-series-6dof", "x-series-5dof", "r-series-6dof"]


def config(name: str):
    return load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")


def home(cfg) -> np.ndarray:
    return np.array(cfg.user_data["home_position"], dtype=float)


def effort_only_arm(cfg, *, gravity_compensation: bool, **options) -> tuple[Arm, SimClock]:
    """Arm at home on the sim, position gains zeroed, commanding effort only (idle 'gravcomp')."""
    clock = SimClock()
    gains = load_gains(cfg.gains["default"])
    no_position = replace(gains, position=replace(gains.position, kp=np.zeros(gains.width)))
    arm = Arm.from_config(cfg, backend="sim", clock=clock, gains=None, initial_position=home(cfg), **options)
    arm.backend.set_gains(no_position)
    arm.set_idle("gravcomp")
    grav = arm.plugin("GravityCompensationEffort")
    grav.enabled = gravity_compensation
    grav.enabled_ratio = 1.0 if gravity_compensation else 0.0
    assert arm.update() and arm.send()
    return arm, clock


def drift(arm: Arm, clock: SimClock, seconds: float) -> float:
    """Largest joint excursion [rad] from the first sample over ``seconds`` of simulated time, or
    until the arm records a safety event (then it no longer commands effort only)."""
    start = arm.last_feedback.position.copy()
    worst = 0.0
    while clock.now() < seconds:
        arm.update()
        arm.send()
        worst = max(worst, float(np.abs(arm.last_feedback.position - start).max()))
        if arm.events.last is not None:  # the arm's own safety reacted (a sagging joint left its limits)
            break
        assert np.all(np.isnan(arm.pending_command.position))  # really effort-only
    return worst


@pytest.mark.parametrize("name", CONFIGS)
def test_gravity_compensation_holds_the_kit_effort_only(name):
    """Effort-only control with gravity compensation holds the pose: drift < 1 mrad over 2 s."""
    arm, clock = effort_only_arm(config(name), gravity_compensation=True)
    assert drift(arm, clock, 2.0) < 1e-3
    assert arm.events.last is None  # no safety event


@pytest.mark.parametrize("name", CONFIGS)
def test_without_gravity_compensation_the_kit_sags(name):
    """The same effort-only arm without gravity compensation sags measurably (> 50 mrad in 2 s)."""
    arm, clock = effort_only_arm(config(name), gravity_compensation=False)
    assert drift(arm, clock, 2.0) > 0.05


@pytest.mark.parametrize("name", CONFIGS)
def test_minimum_jerk_goal_is_tracked(name):
    """A 2 s minimum-jerk move with the config's gains and plugins is tracked within 10 mrad, settles within 1."""
    cfg = config(name)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home(cfg))
    arm.backend.feedback_frequency = 500.0
    arm.feedback_timeout = 0.004
    assert arm.update() and arm.send()
    target = home(cfg) + np.linspace(0.4, -0.3, arm.dof)
    goal = Goal(arm.dof)
    goal.add_waypoint(t=2.0, position=target)
    arm.set_goal(goal)
    worst = 0.0
    while clock.now() < 2.0:
        arm.update()
        arm.send()
        if arm.trajectory_state is not None:
            worst = max(worst, float(np.abs(arm.trajectory_state[0] - arm.last_feedback.position).max()))
    while clock.now() < 3.0:
        arm.update()
        arm.send()
    print(f"{name}: max tracking error {worst * 1e3:.2f} mrad")  # shown with pytest -s
    assert 0.0 < worst < 0.01
    assert np.abs(arm.last_feedback.position - target).max() < 1e-3
    assert arm.events.last is None


def payload_config(tmp_path, mass: float, com: list[float]):
    """The 6-DoF config with user_data.sim.payload set."""
    src = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["hrdf"] = str((src.parent / doc["hrdf"]).resolve())
    doc["gains"] = {k: str((src.parent / v).resolve()) for k, v in doc["gains"].items()}
    doc["user_data"]["sim"] = {"payload": {"mass": mass, "com": com}}
    path = tmp_path / "payload.cfg.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_config(path)


def test_payload_in_the_config_is_compensated_by_a_model_that_knows_it(tmp_path):
    """A 0.5 kg payload set in user_data.sim: gravity compensation with with_payload holds, without it sags."""
    mass, com = 0.5, [0.0, 0.0, 0.05]
    cfg = payload_config(tmp_path, mass, com)
    knowing = with_payload(load_model(cfg.hrdf), mass, com)
    arm, clock = effort_only_arm(cfg, gravity_compensation=True, model=knowing)
    assert arm.backend.scene.robot.total_mass == pytest.approx(knowing.total_mass)
    assert drift(arm, clock, 2.0) < 1e-3
    np.testing.assert_allclose(arm.last_feedback.effort, knowing.gravity_compensation(arm.last_feedback.position),
                               atol=1e-6)
    unaware, clock = effort_only_arm(cfg, gravity_compensation=True)
    # the sag itself is measured here: the gravcomp_sinking monitor would hold it after 0.1 s of sinking
    # (tests/control/monitors/test_gravcomp.py)
    unaware.monitors.gravcomp.settings["max_speed"] = float("inf")
    assert drift(unaware, clock, 2.0) > 0.05


def test_hebictl_run_on_sim_writes_a_plot(tmp_path):
    """`hebictl run CONFIG --backend sim --plot out.png` runs in real time and writes the plot."""
    pytest.importorskip("matplotlib")
    from hebictl.cli import main

    out = tmp_path / "run.png"
    goal = ["0.05"] * 6  # from the sim's initial position, zeros
    code = main(["run", str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"), "--backend", "sim", "--no-home",
                 "--goal", *goal, "--goal-time", "0.4", "--hold", "0.2", "--plot", str(out), "--quiet"])
    assert code == 0
    assert out.stat().st_size > 10_000
