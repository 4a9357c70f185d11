"""SimBackend behind hebictl's hardware interface: timing, command semantics, IMU, options, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from hebictl.control.plugins import gravity_from_quaternion
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.formats import load_model
from hebictl.gains import load_gains
from hebictl.hardware import Command, Feedback, MonotonicClock, SimClock, open_backend
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint
from tests._support.paths import REPO_ROOT

pytest.importorskip("mujoco")

from sim_backend import SimBackend, open_sim

CONFIG = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])


def make(**options) -> SimBackend:
    """The bundled 6-DoF kit at home on a fresh SimClock, 1 kHz feedback (options override)."""
    options = {"feedback_frequency": 1000.0, "initial_position": HOME, "clock": SimClock(), **options}
    return open_backend("sim", config=CONFIG, **options)


def hold_command(q: np.ndarray, model=None) -> Command:
    cmd = Command.empty(q.shape[0])
    cmd.position[:] = q
    cmd.velocity[:] = 0.0
    if model is not None:
        cmd.effort[:] = model.gravity_compensation(q)
    return cmd


def write_config(tmp_path, sim: dict) -> str:
    """A copy of the bundled config with user_data.sim set (paths made absolute)."""
    doc = yaml.safe_load(CONFIG.read_text())
    doc["hrdf"] = str((CONFIG.parent / doc["hrdf"]).resolve())
    doc["gains"] = {k: str((CONFIG.parent / v).resolve()) for k, v in doc["gains"].items()}
    doc["user_data"]["sim"] = sim
    path = tmp_path / "robot.cfg.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


# ---------------------------------------------------------------------- opening
def test_registry_opens_the_config_modules():
    """open_backend("sim", config=...) gives the config's modules, rate and lifetime."""
    be = make(feedback_frequency=None)
    assert isinstance(be, SimBackend)
    assert be.names == ("J1_base", "J2_shoulder", "J3_elbow", "J4_wrist1", "J5_wrist2", "J6_wrist3")
    assert be.families == ("Arm",) * 6 and be.size == 6
    assert be.feedback_frequency == 200.0 and be.command_lifetime == pytest.approx(0.25)
    assert be.timestep == 1e-3


def test_model_without_motor_ratings_needs_them_as_options():
    """A model with no max_effort/max_speed (e.g. a URDF without limits) names the missing rating."""
    b = ModelBuilder("one")
    b.add_body("link", -1, joint=Joint("j", axis=(0, 1, 0)), inertia=Inertia(1.0, (0.2, 0, 0), np.eye(3) * 1e-3))
    b.add_frame("end_effector", 0)
    model = b.build()
    with pytest.raises(ConfigError) as err:
        open_sim(model=model, clock=SimClock())
    assert err.value.key == "max_effort" and "j" in err.value.message
    be = open_sim(model=model, clock=SimClock(), max_effort=5.0, max_speed=3.0)
    assert be.names == ("j",)


@pytest.mark.parametrize(("sim", "key"), [
    ({"frction": 0.1}, "user_data.sim.frction"),
    ({"friction": -0.1}, "user_data.sim.friction"),
    ({"payload": {"mass": "heavy"}}, "user_data.sim.payload"),
    ({"initial_position": [0.0, 1.0]}, "user_data.sim.initial_position"),
    ({"timestep": 0.5}, "user_data.sim.timestep"),
    ({"timestep": "fast"}, "user_data.sim.timestep"),
    ({"motor_time_constant": -0.01}, "user_data.sim.motor_time_constant"),
])
def test_bad_config_options_name_file_and_key(tmp_path, sim, key):
    """user_data.sim mistakes are ConfigErrors naming the config file and the key."""
    path = write_config(tmp_path, sim)
    with pytest.raises(ConfigError) as err:
        open_sim(config=path, clock=SimClock())
    assert err.value.key == key
    assert err.value.file == path


def test_config_options_apply_and_keywords_win(tmp_path):
    """initial_position, friction and timestep come from user_data.sim unless given as keywords."""
    path = write_config(tmp_path, {"initial_position": HOME.tolist(), "friction": 0.3, "timestep": 0.002})
    be = open_sim(config=path, clock=SimClock())
    fb = Feedback.empty(6)
    assert be.read(fb)
    np.testing.assert_array_equal(fb.position, HOME)
    assert be.timestep == 0.002
    np.testing.assert_array_equal(be.mj_model.dof_frictionloss[be.scene.dadr], 0.3)
    assert open_sim(config=path, clock=SimClock(), timestep=0.0005).timestep == 0.0005


# ---------------------------------------------------------------------- timing
def test_feedback_on_the_grid_and_physics_follows_the_clock():
    """Samples arrive every 1/f s of the SimClock; physics has advanced exactly to each sample."""
    be = make()
    clock = be.clock
    fb = Feedback.empty(6)
    assert be.read(fb) and fb.time[0] == 0.0 and fb.sequence == 1
    be.write(hold_command(HOME))
    for k in range(1, 50):
        assert be.read(fb)
        assert fb.time[0] == pytest.approx(k * 1e-3, abs=1e-12)
        assert clock.now() == fb.time[0] == fb.rx_time
        assert be.sim_time == pytest.approx(fb.time[0], abs=1e-12)
        assert be.mj_data.time == pytest.approx(fb.time[0], abs=1e-12)
        assert fb.sequence == k + 1


def test_reads_time_out_and_a_stopped_feed_gives_nothing():
    """A timeout shorter than the period, or feedback_frequency 0, returns False at the deadline."""
    be = make(feedback_frequency=100.0)
    fb = Feedback.empty(6)
    assert be.read(fb)
    be.write(hold_command(HOME))
    assert not be.read(fb, timeout_s=0.004)
    assert be.clock.now() == pytest.approx(0.004)
    assert be.read(fb, timeout_s=0.1) and fb.time[0] == pytest.approx(0.01)
    be.feedback_frequency = 0.0
    assert not be.read(fb, timeout_s=0.05)
    assert be.sim_time == pytest.approx(0.06, abs=1e-12)  # physics kept running to the deadline


def test_physics_waits_for_the_first_command():
    """Until the first write the arm stays at initial_position (a slow controller start does not drop it)."""
    be = make(initial_position=np.zeros(6))
    fb = Feedback.empty(6)
    for _ in range(100):
        assert be.read(fb)
    np.testing.assert_array_equal(fb.position, np.zeros(6))
    np.testing.assert_array_equal(fb.velocity, np.zeros(6))


def test_write_simulates_the_loop_latency_under_the_old_command():
    """A write first advances physics to the clock's present, then the new command acts."""
    be = make()
    be.write(hold_command(HOME))
    be.clock.advance(0.0035)
    be.write(hold_command(HOME + 0.1))
    assert be.sim_time == pytest.approx(0.003, abs=1e-12)  # whole steps only


def test_runs_are_deterministic():
    """The same commands on the same clock give bit-identical feedback."""
    def run() -> np.ndarray:
        be = make()
        fb = Feedback.empty(6)
        be.read(fb)
        out = []
        for k in range(300):
            be.write(hold_command(HOME + 0.3 * math.sin(k * 0.01)))
            be.read(fb)
            out.append(np.concatenate([fb.position, fb.velocity, fb.effort]))
        return np.array(out)

    np.testing.assert_array_equal(run(), run())


def test_real_time_with_the_monotonic_clock():
    """With wall time, reads are paced to real time and physics keeps up with the clock, shown by order
    alone (a loaded machine can only make the reads later): each read returns a new sample (from the
    second on, at least one period after the last one), not older than a period before the read was
    called, and never ahead of the clock after it returns. Samples a period apart that never run ahead
    of the clock are paced to real time; a stalled thread makes the physics skip to the next sample
    after the wall time."""
    clock = MonotonicClock()
    be = make(clock=clock, feedback_frequency=100.0)
    period = 0.01
    fb = Feedback.empty(6)
    be.read(fb)
    be.write(hold_command(HOME, be.scene.robot))
    samples, lags = [be.sim_time], []
    for _ in range(20):
        called = clock.now()
        assert be.read(fb, timeout_s=0.1)
        back = clock.now()
        assert called - period <= be.sim_time <= back, (called, be.sim_time, back)
        samples.append(be.sim_time)
        lags.append(back - be.sim_time)
        be.write(hold_command(HOME, be.scene.robot))
    steps = np.diff(samples)
    assert np.all(steps > 0) and np.all(steps[1:] >= period - 1e-9), steps  # on the grid after the first
    print(f"20 samples at 100 Hz; physics behind the clock when a read returned: median "
          f"{np.median(lags) * 1000:.2f} ms, max {max(lags) * 1000:.2f} ms")


# ---------------------------------------------------------------------- command semantics
def test_command_echo_from_the_next_sample_and_expiry_goes_limp():
    """The echo shows a command from the next sample; after command_lifetime the modules go limp."""
    be = make(command_lifetime=0.05)
    model = be.scene.robot
    fb = Feedback.empty(6)
    be.read(fb)
    cmd = hold_command(HOME, model)
    be.write(cmd)
    assert np.all(np.isnan(fb.position_command))
    be.read(fb)
    np.testing.assert_array_equal(fb.position_command, cmd.position)
    np.testing.assert_array_equal(fb.effort_command, cmd.effort)
    while be.clock.now() < 0.0495:
        be.read(fb)
    assert np.all(np.isfinite(fb.position_command))
    np.testing.assert_allclose(fb.position, HOME, atol=1e-4)
    while be.clock.now() < 0.4:
        be.read(fb)
    assert np.all(np.isnan(fb.position_command)) and np.all(np.isnan(fb.effort_command))
    np.testing.assert_array_equal(fb.effort, 0.0)  # motors off
    assert np.abs(fb.position - HOME).max() > 0.05  # the arm falls


def test_echo_waits_for_a_physics_step_when_feedback_outruns_physics():
    """With 4 kHz feedback on 1 ms physics, samples before the next step still echo the command
    held before the write (also across two writes); the first sample after a step echoes the last one."""
    be = make(feedback_frequency=4000.0, command_lifetime=0.0)
    fb = Feedback.empty(6)
    first, second = hold_command(HOME, be.scene.robot), hold_command(HOME + 0.01, be.scene.robot)
    be.write(first)
    while be.sim_time < 0.0025:
        be.read(fb)
    np.testing.assert_array_equal(fb.position_command, first.position)
    stepped_at = be.sim_time
    be.write(second)
    second.position[:] = 0.0  # the modules keep what was written, not the caller's buffer
    be.write(first)
    be.write(second)
    seen = []
    while be.sim_time < stepped_at + 0.0025:
        be.read(fb)
        seen.append((be.sim_time > stepped_at, fb.position_command.copy(), fb.effort_command.copy()))
    assert any(not stepped for stepped, _, _ in seen)  # some samples came before the next step
    for stepped, pc, ec in seen:
        np.testing.assert_array_equal(pc, second.position if stepped else first.position)
        np.testing.assert_array_equal(ec, second.effort if stepped else first.effort)


def test_write_installs_what_command_modules_installs():
    """write's one-kernel install and the general command_modules (used by extra modules and a
    disconnected module) leave the same command, running command, expiry and echo."""
    a, b = make(), make()
    fa, fb = Feedback.empty(6), Feedback.empty(6)
    rng = np.random.default_rng(3)
    for i in range(30):
        cmd = hold_command(HOME + 0.05 * rng.standard_normal(6), a.scene.robot)
        cmd.velocity[rng.random(6) < 0.3] = np.nan
        cmd.effort[rng.random(6) < 0.3] = np.nan
        a.write(cmd)
        b.advance(b.clock.now())
        b.command_modules(slice(0, 6), cmd.position, cmd.velocity, cmd.effort, b.clock.now())
        b._pending_echo = True  # what write does after installing (the echo from the next step on)
        for _ in range(1 + i % 3):
            a.read(fa)
            b.read(fb)
        for name in ("position", "velocity", "effort", "position_command", "velocity_command", "effort_command"):
            np.testing.assert_array_equal(getattr(fa, name), getattr(fb, name), err_msg=name)
        np.testing.assert_array_equal(a.actuators.command, b.actuators.command)
        np.testing.assert_array_equal(a.firmware.F, b.firmware.F)
        np.testing.assert_array_equal(a.firmware.commanded, b.firmware.commanded)


def test_zero_lifetime_never_expires():
    """command_lifetime 0 keeps the last command in force."""
    be = make(command_lifetime=0.0)
    fb = Feedback.empty(6)
    be.write(hold_command(HOME, be.scene.robot))
    for _ in range(1000):
        be.read(fb)
    assert np.all(np.isfinite(fb.position_command))
    np.testing.assert_allclose(fb.position, HOME, atol=1e-6)


def test_nan_fields_are_not_commanded():
    """A position-only command settles where the position loop's effort kp (p - q) carries gravity; all-NaN lets go."""
    be = make(command_lifetime=0.0)
    kp = load_gains(REPO_ROOT / "configs" / "gains" / "x-series-6dof.xml").position.kp
    fb = Feedback.empty(6)
    cmd = Command.empty(6)
    cmd.position[:] = HOME
    be.write(cmd)
    for _ in range(3000):
        be.read(fb)
    assert np.abs(fb.position - HOME).max() < 0.1
    np.testing.assert_allclose(fb.velocity, 0.0, atol=1e-4)
    # 2e-4: with the config's table the scene has contacts on (none touching); the shoulder, still
    # settling at 5e-6 rad/s after 3 s, ends 1.1e-4 N·m off instead of under 1e-4
    np.testing.assert_allclose(fb.effort, kp * (HOME - fb.position), atol=2e-4)
    np.testing.assert_allclose(fb.effort, be.scene.robot.gravity_compensation(fb.position), atol=1e-3)
    be.write(Command.empty(6))
    for _ in range(200):
        be.read(fb)
    np.testing.assert_array_equal(fb.effort, 0.0)


def test_bad_calls_raise():
    """Size mismatches, bad buffers, bad timeouts, foreign gains and use after close are errors."""
    be = make()
    with pytest.raises(CommandRejected):
        be.write(Command.empty(5))
    with pytest.raises(HardwareError):
        be.read(Feedback.empty(5))
    with pytest.raises(HardwareError):
        be.read(Feedback.empty(6), timeout_s=-1.0)
    with pytest.raises(HardwareError):
        be.set_gains({"kp": 1.0})
    be.close()
    be.close()
    with pytest.raises(HardwareError):
        be.read(Feedback.empty(6))
    with pytest.raises(HardwareError):
        be.write(Command.empty(6))


# ---------------------------------------------------------------------- IMU
def test_orientation_is_each_modules_input_frame_in_the_world():
    """Module quaternions (w x y z) equal hebictl's FK of the actuators' input frames at the sampled q."""
    be = make(command_lifetime=0.0)
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    fb = Feedback.empty(6)
    be.write(Command.empty(6))  # limp: the arm falls through many poses
    be.advance(0.0)
    inputs = [next(k for k, f in enumerate(f for f in model.frames if f.kind == "input")
                   if f.body == model.bodies[jb].parent) for jb in model.joint_bodies]
    from scipy.spatial.transform import Rotation

    for _ in range(40):
        for _ in range(10):
            be.read(fb)
        frames = model.forward_kinematics(fb.position, "input")[inputs]
        for i in range(6):
            ref = Rotation.from_matrix(frames[i, :3, :3]).as_quat(scalar_first=True)
            ref = ref if ref[0] >= 0 else -ref
            np.testing.assert_allclose(fb.orientation[i], ref, rtol=0, atol=1e-12)
    # what the gravity-compensation plugin makes of module 0's IMU: world gravity, straight down
    g = frames[0, :3, :3] @ gravity_from_quaternion(fb.orientation[0])
    np.testing.assert_allclose(g, [0.0, 0.0, -1.0], atol=1e-12)


def test_viewer_without_a_display_runs_headless(monkeypatch):
    """viewer=True without a display warns and simulates headless."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.warns(RuntimeWarning, match="headless"):
        be = make(viewer=True)
    be.write(hold_command(HOME, be.scene.robot))
    assert be.read(Feedback.empty(6))
