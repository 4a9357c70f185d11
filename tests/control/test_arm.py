"""The Arm against hebi-py's own Arm and model, and its safe states under injected faults."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.plugins import GravityCompensationEffort
from hebictl.control.safety import ArmState
from hebictl.errors import CommandRejected, ConfigError
from hebictl.hardware.base import Command
from hebictl.hardware.clock import SimClock

REPO = Path(__file__).resolve().parents[2]
BUNDLED = sorted((REPO / "configs").glob("*.cfg.yaml"))
KIT6 = REPO / "configs" / "x-series-6dof.cfg.yaml"


def _arm(config=KIT6, backend="mock", **options) -> tuple[Arm, SimClock]:
    clock = SimClock()
    arm = Arm.from_config(config, backend=backend, clock=clock, **options)
    return arm, clock


def _step(arm: Arm, clock: SimClock, seconds: float, dt: float = 0.005) -> None:
    end = clock.now() + seconds
    while clock.now() < end - 1e-12:
        if arm.backend.__class__.__name__ == "HebiBackend":
            clock.advance(dt)
        arm.update()
        arm.send()


@pytest.mark.parametrize("config", BUNDLED, ids=lambda p: p.stem)
@pytest.mark.parametrize("backend", ["mock", "hebi-imitation"])
def test_bundled_configs_build_and_reach_home(config, backend):
    """Every bundled config builds on mock and hebi-imitation and reaches its home position."""
    arm, clock = _arm(config, backend)
    with arm:
        _step(arm, clock, 0.02)
        home = np.array(arm.user_data["home_position"])
        arm.set_goal(Goal(arm.dof).add_waypoint(position=home))  # timed from the limits
        _step(arm, clock, arm.trajectory.duration + 0.2)
        assert arm.at_goal
        np.testing.assert_allclose(arm.pending_command.position, home, atol=1e-9)
        np.testing.assert_allclose(arm.last_feedback.position, home, atol=1e-3)
        assert arm.state is ArmState.RUNNING, arm.events.kinds()


def test_imitation_gravity_efforts_equal_model_and_hebi(hebi):
    """On hebi-imitation (NaN IMU) the sent gravity efforts equal the model's and hebi-py's, no NaN."""
    arm, clock = _arm(backend="hebi-imitation")
    with arm:
        for p in arm.plugins:
            p.enabled = isinstance(p, GravityCompensationEffort)
            p.enabled_ratio = float(p.enabled)
        q = np.array([0.3, 1.1, 1.7, -0.4, 0.8, 0.2])
        cmd = arm.pending_command
        # drive the imitation group to q (its feedback echoes commands), then let the arm run there
        arm.backend.write(Command(position=q.copy(), velocity=np.zeros(6), effort=np.zeros(6)))
        clock.advance(0.01)
        arm.update()
        assert not np.isnan(cmd.effort).any()
        g = np.array([0.0, 0.0, -9.81])
        np.testing.assert_allclose(arm.last_feedback.position, q, atol=1e-12)
        np.testing.assert_allclose(cmd.effort, arm.model.gravity_compensation(q, g), atol=1e-12)
        ref = hebi.robot_model.import_from_hrdf(str(load_config(KIT6).hrdf))
        np.testing.assert_allclose(cmd.effort, ref.get_grav_comp_efforts(q, g), atol=1e-9)
        sent = cmd.effort.copy()
        arm.send()
        for _ in range(2):  # the imitation group's next sample carries the echo
            clock.advance(0.01)
            arm.update()
        np.testing.assert_allclose(arm.last_feedback.effort, sent, atol=1e-9, err_msg="hebi's group got them")


def test_trajectory_commands_match_hebi_arm(hebi):
    """Same kit, same goal, same clock: commanded positions equal hebi.arm.Arm's on an imitation group."""
    cfg = load_config(KIT6)
    hebi_model = hebi.robot_model.import_from_hrdf(str(cfg.hrdf))
    clock = SimClock()
    group = hebi.util.create_imitation_group(6)
    ref = hebi.arm.Arm(clock.now, group, hebi_model, plugins=[])
    arm = Arm.from_config(cfg, backend="hebi-imitation", clock=clock)
    start = np.array([0.1, 0.9, 1.5, 0.3, -0.2, 0.0])
    for grp in (group, arm.backend.hebi_group):
        c = hebi.GroupCommand(6)
        c.position = start
        c.velocity = np.zeros(6)  # else the imitation echoes NaN velocity and hebi.arm starts "free"
        grp.send_command(c)
    clock.advance(0.01)
    ref.update()
    arm.update()
    target = np.array([0.5, 1.2, 1.0, -0.3, 0.4, 0.6])
    ref.set_goal(hebi.arm.Goal(6).add_waypoint(t=1.5, position=target))
    arm.set_goal(Goal(6).add_waypoint(t=1.5, position=target))
    worst = 0.0
    for _ in range(200):
        clock.advance(0.01)
        ref.update()
        arm.update()
        worst = max(worst, float(np.max(np.abs(ref.pending_command.position - arm.pending_command.position))))
        np.testing.assert_allclose(arm.pending_command.velocity, ref.pending_command.velocity, atol=1e-6)
        ref.send()
        arm.send()
    assert worst < 1e-6
    assert arm.at_goal and ref.at_goal
    arm.close()


# ---------------------------------------------------------------- faults (mock)
def _running_arm() -> tuple[Arm, SimClock]:
    arm, clock = _arm()
    _step(arm, clock, 0.05)
    arm.set_goal(Goal(arm.dof).add_waypoint(t=2.0, position=np.array([0.4, 1.0, 1.5, 0.5, 0.2, 0.1])))
    _step(arm, clock, 0.5)
    assert arm.state is ArmState.RUNNING
    return arm, clock


def test_lost_feedback_holds_within_the_tolerated_cycles(caplog):
    """Dropped feedback: the last command repeats for missed_feedback_limit cycles, then the arm holds."""
    arm, clock = _running_arm()
    caplog.set_level(logging.WARNING, "hebictl.safety")
    arm.backend.faults.drop_feedback()
    results = [arm.update() for _ in range(arm.missed_feedback_limit + 1)]
    assert results == [False] * (arm.missed_feedback_limit + 1)
    assert arm.state is ArmState.HOLD
    assert arm.events.last.kind == "feedback_lost"
    assert "feedback_lost" in caplog.text
    assert np.all(np.isfinite(arm.pending_command.effort)), "holds with gravity compensation"
    for _ in range(60):  # the brake from the last command sent ends within 0.3 s, feedback or not
        arm.update()
    assert np.all(arm.pending_command.velocity == 0.0)
    assert arm.state is ArmState.STOPPED and arm.stop_behaviour == "hold"  # the watchdog latched it


def test_nan_feedback_holds_in_the_same_cycle():
    """NaN position feedback from one module: hold at the last good position in that cycle."""
    arm, clock = _running_arm()
    before = arm.trajectory.get_state(clock.now())[0]
    arm.backend.faults.nan_feedback(2, ["position"])
    assert arm.update() is False
    assert arm.state is ArmState.HOLD
    assert arm.events.last.kind == "feedback_nan" and "J3_elbow" in arm.events.last.detail
    np.testing.assert_allclose(arm.pending_command.position, before, atol=0.01)
    assert np.all(np.isfinite(arm.pending_command.position))


def test_position_limit_violation_holds_at_the_limit():
    """Feedback beyond a joint limit (plus tolerance): hold at the clamped position, reached at
    no more than the rated speed (no step in the command)."""
    arm, clock = _running_arm()
    hi = np.full(6, np.inf)
    hi[1] = float(arm.last_feedback.position[1]) - 0.1
    before = arm.pending_command.position[1]
    arm.set_joint_limits(-np.inf, hi)
    arm.update()
    assert arm.state is ArmState.HOLD
    assert arm.events.last.kind == "position_limit"
    step = before - arm.pending_command.position[1]
    assert 0 < step <= arm.limits.velocity_max[1] * arm.dt + 1e-12
    _step(arm, clock, 0.2)
    assert arm.pending_command.position[1] == pytest.approx(arm.limits.position_max[1])


def test_watchdog_stops_when_feedback_stays_away():
    """No fresh feedback beyond watchdog_timeout: the arm stops, latched, and keeps commanding the
    hold with gravity compensation (X/R modules have no brakes: commanding nothing drops the arm)."""
    arm, clock = _running_arm()
    arm.backend.faults.freeze_feedback()
    t0 = clock.now()
    while clock.now() - t0 < arm.watchdog_timeout + 0.05:
        arm.update()
        arm.send()
    assert arm.state is ArmState.STOPPED
    assert arm.events.kinds()[-1] == "watchdog"
    assert arm.stop_behaviour == "hold"
    cmd = arm.pending_command
    assert np.all(np.isfinite(cmd.position)) and np.all(cmd.velocity == 0.0)
    np.testing.assert_allclose(cmd.effort, arm.model.gravity_compensation(cmd.position), atol=1e-9)
    arm.backend.faults.clear()
    _step(arm, clock, 0.05)
    assert arm.state is ArmState.STOPPED, "nothing resumes by itself"
    with pytest.raises(CommandRejected, match="stopped"):
        arm.set_goal(Goal(6).add_waypoint(t=1.0, position=np.zeros(6)))
    arm.clear_fault()
    assert arm.state is ArmState.RUNNING


def test_disconnected_module_stops_the_arm():
    """A module that disappears (read raises) stops the arm in that cycle."""
    arm, clock = _running_arm()
    arm.backend.faults.disconnect(4)
    arm.update()
    assert arm.state is ArmState.STOPPED
    assert arm.events.last.kind == "hardware_error"


def test_goal_outside_limits_is_rejected():
    """A waypoint beyond the joint limits is refused before it reaches the trajectory."""
    arm, clock = _running_arm()
    arm.set_joint_limits(-1.0, 1.0)
    with pytest.raises(CommandRejected, match="out_of_limits"):
        arm.set_goal(Goal(6).add_waypoint(t=1.0, position=np.full(6, 2.0)))


def test_efforts_are_clamped_to_actuator_ratings():
    """Plugin efforts beyond an actuator's rated effort are clamped in the command."""
    arm, clock = _running_arm()
    from hebictl.control.plugins import EffortOffset

    arm.add_plugin(EffortOffset("big", offset=np.full(6, 1e3)))
    arm.update()
    np.testing.assert_allclose(arm.pending_command.effort, arm.model.max_efforts)


def test_plugin_ramp_matches_hebi_semantics():
    """enabled toggles ramp the contribution linearly over ramp_time, like hebi-py's ArmPlugin."""
    arm, clock = _running_arm()
    from hebictl.control.plugins import EffortOffset

    p = EffortOffset("ramped", enabled=False, ramp_time=0.1, offset=np.ones(6))
    arm.add_plugin(p)
    p.enabled = True
    p.update(arm, 0.025)
    assert p.enabled_ratio == pytest.approx(0.25)
    p.update(arm, 1.0)
    assert p.enabled_ratio == 1.0


def test_config_dof_mismatch_names_the_key(tmp_path):
    """A config whose names do not match the HRDF's joints fails with a ConfigError naming 'names'."""
    text = KIT6.read_text().replace('"J6_wrist3"]', '"J6_wrist3", "J7_extra"]')
    skip = ("home_position", "ik_seed_pos", "position_min", "position_max")
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith(skip))
    text = text.replace("offset: [0, -7, 0, 0, 0, 0]", "offset: 0")  # a config consistent in itself
    text = text.replace("../hrdf_kits/", str(REPO / "hrdf_kits") + "/").replace('"gains/', f'"{REPO}/configs/gains/')
    bad = tmp_path / "bad.cfg.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as err:
        Arm.from_config(bad, clock=SimClock())
    assert err.value.key == "names" and "bad.cfg.yaml" in str(err.value)


def test_gravity_from_a_tilted_base_imu():
    """A base IMU reporting a 30° tilt about x: gravity in the model frame is R^T (0, 0, -9.81)."""
    from scipy.spatial.transform import Rotation

    tilt = Rotation.from_euler("x", 30, degrees=True)
    arm, clock = _arm(orientation=tilt.as_quat(scalar_first=True))
    with arm:
        # a base tilted on purpose: raise the IMU plausibility bound (docs/monitors.md) above the tilt
        arm.monitors.imu.settings["max_angle"] = np.pi
        _step(arm, clock, 0.05)
        grav = arm.plugin("GravityCompensationEffort")
        expected = tilt.as_matrix().T @ np.array([0.0, 0.0, -9.81])
        np.testing.assert_allclose(grav.gravity, expected, atol=1e-12)
        q = arm.last_feedback.position
        np.testing.assert_allclose(grav.efforts, arm.model.gravity_compensation(q, expected), atol=1e-12)
