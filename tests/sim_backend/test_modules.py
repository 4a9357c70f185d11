"""Extra simulated modules (double shoulder), the sim's feedback faults, and the gas-spring option.

References: MuJoCo's own gravity forces (``qfrc_bias``) for what both shoulder modules together
must hold, hebi-py's DoubledJointMirror for how the second module is commanded, and the
corpus kits' configs (run through ``hebictl run``) for "every HEBI kit runs on the sim".
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hebictl.errors import HardwareError
from hebictl.hardware import Command, Feedback, SimClock, open_backend
from tests._support.corpus import CORPUS_DIR
from tests._support.paths import REPO_ROOT

mujoco = pytest.importorskip("mujoco")

CONFIG = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
DOUBLE = REPO_ROOT / "configs" / "x-series-7dof-double-shoulder.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
KITS = CORPUS_DIR / "hebi" / "hebi-python-examples" / "kits"
DOUBLE_SHOULDER_KITS = ["A-2099-07", "A-2303-01", "A-2303-01G", "A-2582-07", "A-2582-07G"]


def test_second_shoulder_module_shares_the_load_mujoco_computes():
    """The double shoulder on the sim (Arm.from_config, hebi-py's plugin semantics): both modules
    together hold the shoulder's gravity torque from MuJoCo's own qfrc_bias, half each, the
    mirrored one with the opposite sign in its own coordinates."""
    from hebictl.control.arm import Arm

    clock = SimClock()
    arm = Arm.from_config(DOUBLE, backend="sim", clock=clock)
    be = arm.backend
    assert [e.joints for e in be.extra] == [(1,)]
    for _ in range(400):  # 2 s at 200 Hz
        arm.update()
        arm.send()
    mirror = Feedback.empty(1)
    be.extra[0].read(mirror)
    fb = arm.last_feedback
    d = be.mj_data
    mujoco.mj_forward(be.mj_model, d)
    bias = d.qfrc_bias[be.scene.dadr]  # gravity (at rest): the torque the joints must supply
    assert np.all(np.abs(fb.velocity) < 1e-3)
    assert mirror.position[0] == pytest.approx(-fb.position[1], abs=1e-12)
    assert fb.effort[1] - mirror.effort[0] == pytest.approx(bias[1], rel=1e-3)
    assert fb.effort[1] == pytest.approx(-mirror.effort[0], rel=1e-2)
    np.testing.assert_allclose(fb.effort[[0, 2, 3, 4, 5, 6]], bias[[0, 2, 3, 4, 5, 6]], atol=2e-3 * np.abs(bias).max())
    arm.close()


def test_extra_modules_are_checked_and_add_a_rotor():
    be = open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=HOME)
    armature = be.mj_model.dof_armature[be.scene.dadr].copy()
    with pytest.raises(Exception, match="joints"):
        be.open_extra_modules(["X"], ["Arm"], joints=[9], signs=[-1.0])
    extra = be.open_extra_modules(["J2B"], ["Arm"], joints=[1], signs=[-1.0])
    assert extra.size == 1 and extra.names == ("J2B",)
    after = be.mj_model.dof_armature[be.scene.dadr]
    assert after[1] == pytest.approx(2 * armature[1]) and after[0] == armature[0]


def test_both_shoulder_modules_torque_reaches_the_joint_beyond_one_modules_worth():
    """Past one module's rated effort, MuJoCo applies what both modules exert: the exported joint's
    actuatorfrcrange (one module's effort) is widened by the second module's. It was not: x7's
    double shoulder applied 44 of the 71 N·m its two modules reported during a brake, so the arm
    was weaker than the real one and the contact observer saw 25 N·m that nobody applied."""
    from hebictl.control.arm import Arm

    clock = SimClock()
    arm = Arm.from_config(DOUBLE, backend="sim", clock=clock)
    be = arm.backend
    m, d = be.mj_model, be.mj_data
    j = int(m.dof_jntid[be.scene.dadr[1]])
    one = float(arm.limits.effort_max[1])
    assert m.jnt_actfrcrange[j].tolist() == [-2 * one, 2 * one]
    for _ in range(300):
        arm.update()
        arm.send()
    clock.advance(0.8)   # a stall: the limp arm falls, then the brake asks the shoulder for all it has
    mirror = Feedback.empty(1)
    worst, both = 0.0, 0.0
    for _ in range(40):
        arm.update()
        arm.send()
        be.extra[0].read(mirror)
        fb = arm.last_feedback
        reported = fb.effort[1] - mirror.effort[0]   # the mirrored module's effort, in joint coordinates
        applied = float(d.qfrc_actuator[be.scene.dadr[1]])
        worst = max(worst, abs(applied - reported))
        both = max(both, abs(reported))
    print(f"\nx7 shoulder after an 0.8 s fall: both modules up to {both:.1f} N·m (one module's rated "
          f"{one:.0f}); applied - reported at most {worst:.2e} N·m")
    assert both > 1.2 * one   # the brake did need more than one module's worth
    assert worst < 0.01 * both   # (the samples and the physics step are not the same instant; was 27 N·m)
    arm.close()


def test_mirrored_module_alone_moves_the_joint_the_other_way():
    """A mirrored module commanded +0.1 rad in its own coordinates moves the joint to -0.1 rad."""
    be = open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=np.zeros(6),
                      feedback_frequency=1000.0, command_lifetime=0.0)
    be.mj_model.opt.gravity[:] = 0.0
    extra = be.open_extra_modules(["J1B"], ["Arm"], joints=[0], signs=[-1.0])
    fbk = Feedback.empty(6)
    be.write(Command.empty(6))
    cmd = Command.empty(1)
    cmd.position[0], cmd.velocity[0] = 0.1, 0.0
    extra.write(cmd)
    for _ in range(1500):
        be.read(fbk)
    assert fbk.position[0] == pytest.approx(-0.1, abs=0.02)  # the position loop alone, no feed-forward


# ---------------------------------------------------------------------- faults
def _sim():
    return open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=HOME, feedback_frequency=1000.0)


def test_dropped_feedback_times_out_then_resumes():
    be = _sim()
    fbk = Feedback.empty(6)
    be.read(fbk)
    be.faults.drop_feedback(start=0.005, duration=0.02)
    times, misses = [], 0
    for _ in range(20):
        if be.read(fbk, timeout_s=0.004):
            times.append(fbk.time[0])
        else:
            misses += 1
    assert misses == 5  # 20 ms of lost samples, 4 ms read timeouts
    assert not any(0.005 - 1e-9 < t < 0.025 - 1e-9 for t in times) and max(times) > 0.025


def test_frozen_feedback_repeats_the_sample_and_its_sequence():
    be = _sim()
    fbk = Feedback.empty(6)
    be.read(fbk)
    be.faults.freeze_feedback(duration=0.01)
    seqs = []
    for _ in range(5):
        be.read(fbk)
        seqs.append(fbk.sequence)
    assert len(set(seqs)) == 1


def test_frozen_feedback_repeats_every_field_of_the_last_sample():
    """Every field of a frozen sample (orientation, echo, M-stop and limit state too) is the last real sample's."""
    be = _sim()
    fbk = Feedback.empty(6)
    for _ in range(20):
        be.read(fbk)
    last = fbk.copy()
    be.faults.freeze_feedback(duration=0.01)
    fresh = Feedback.empty(6)
    be.read(fresh)
    for name in ("time", "position", "velocity", "effort", "orientation", "position_command", "velocity_command",
                 "effort_command", "mstop", "position_limit_state"):
        np.testing.assert_array_equal(getattr(fresh, name), getattr(last, name), err_msg=name)
    assert fresh.sequence == last.sequence and np.all(np.isfinite(fresh.orientation))


def test_nan_fault_blanks_one_module_and_disconnect_raises():
    be = _sim()
    fbk = Feedback.empty(6)
    be.faults.nan_feedback("J3_elbow", ("position",))
    be.read(fbk)
    assert np.isnan(fbk.position[2]) and np.all(np.isfinite(fbk.position[[0, 1, 3, 4, 5]]))
    be.faults.clear()
    be.faults.disconnect(4)
    with pytest.raises(HardwareError, match="J5_wrist2"):
        be.read(fbk)
    assert be.write(Command.empty(6)) is False


def test_ignored_commands_run_out_by_the_lifetime():
    """Commands that never arrive: the last one expires and the modules go limp."""
    be = _sim()
    fbk = Feedback.empty(6)
    cmd = Command.empty(6)
    cmd.position[:] = HOME
    be.write(cmd)
    be.faults.ignore_commands()
    for _ in range(400):
        be.write(cmd)
        be.read(fbk)
    assert np.all(np.isnan(fbk.position_command)) and np.all(fbk.effort == 0.0)


# ---------------------------------------------------------------------- gas spring
def test_gas_spring_is_a_constant_joint_torque():
    """gas_spring adds its torque to the joint: with it, the modules hold the arm with that much less."""
    be0 = open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=HOME)
    be1 = open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=HOME, gas_spring=[0, 7, 0, 0, 0, 0])
    np.testing.assert_array_equal(be1.mj_data.qfrc_applied[be1.scene.dadr], [0, 7, 0, 0, 0, 0])
    assert not np.any(be0.mj_data.qfrc_applied)
    with pytest.raises(Exception, match="gas_spring"):
        open_backend("sim", config=CONFIG, clock=SimClock(), gas_spring=[1, 2])


@pytest.mark.skipif(not KITS.is_dir(), reason="../shared/corpus not found: the corpus comparisons are skipped")
def test_rosie_with_its_gas_spring_does_not_sag():
    """rosie-t's config offsets a gas spring with EffortOffset -7 N·m; on the sim without the spring
    the arm sags, with user_data.sim-style gas_spring [0, 7, ...] it holds (< 1 mm)."""
    from hebictl.control.arm import Arm

    cfg = KITS / "rosie" / "config" / "rosie-t.cfg.yaml"
    q0 = np.array([0.01, 1.0, 1.5, 1.5, -1.5, 0.01])
    sag = {}
    for spring in (None, [0, 7, 0, 0, 0, 0]):
        opts = {} if spring is None else {"gas_spring": spring}
        arm = Arm.from_config(cfg, backend="sim", clock=SimClock(), initial_position=q0, **opts)
        for _ in range(600):
            arm.update()
            arm.send()
        ee0 = arm.model.forward_kinematics(q0, "end_effector")
        ee = arm.model.forward_kinematics(arm.last_feedback.position, "end_effector")
        sag[spring is None] = float(np.linalg.norm(np.asarray(ee)[..., :3, 3] - np.asarray(ee0)[..., :3, 3]))
        arm.close()
    assert sag[True] > 0.02 and sag[False] < 1e-3


# ---------------------------------------------------------------------- every kit runs
def _run(cfg) -> subprocess.CompletedProcess:
    # --stop-hold 0: a safety stop ends the run at once (exit 2, with its cause in stderr) instead of
    # holding until Ctrl-C, so a failure shows as a failure, not as the test's timeout; --paced-clock:
    # a loaded machine stretches the sim's time instead of stopping the arm with a control gap
    return subprocess.run([sys.executable, "-m", "hebictl", "run", str(cfg), "--backend", "sim", "--hold", "0.5",
                           "--stop-hold", "0", "--paced-clock"], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT)


def test_bundled_double_shoulder_runs_on_the_sim():
    """`hebictl run configs/x-series-7dof-double-shoulder.cfg.yaml --backend sim --hold 0.5` exits 0
    (on the paced clock: real time, stretched where the machine is loaded)."""
    res = _run(DOUBLE)
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.mark.skipif(not KITS.is_dir(), reason="../shared/corpus not found: the corpus comparisons are skipped")
@pytest.mark.parametrize("kit", DOUBLE_SHOULDER_KITS)
def test_corpus_double_shoulder_kits_run_on_the_sim(kit):
    """What `hebictl run KIT --backend sim --hold 0.5` does (home, then hold 0.5 s), in simulated time:
    the kit's config opens on the sim, reaches its home without a safety event and holds it still."""
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.goal import Goal

    cfg = KITS / "arms" / "config" / f"{kit}.cfg.yaml"
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock)
    try:
        home = np.asarray(load_config(cfg).user_data["home_position"], dtype=float)
        arm.update()
        arm.set_goal(Goal(arm.dof).add_waypoint(position=home))
        t_end = None
        while t_end is None or clock.now() < t_end:
            arm.update()
            arm.send()
            if t_end is None and arm.at_goal:
                t_end = clock.now() + 0.5
            assert clock.now() < 60.0, f"{kit}: home not reached in 60 s of simulated time"
        assert arm.events.kinds() == [], f"{kit}: {arm.events.last()}"
        assert arm.at_goal
        assert np.all(np.abs(arm.last_feedback.velocity) < 0.05), arm.last_feedback.velocity
    finally:
        arm.close()
