"""hebictl.control.braking: braking deceleration from the effort limit, ramp feed-forward, firmware
limit detection; and the Arm behaviours built on it (brake before a limit, hardware-error stop)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.braking import MARGIN, BrakePlanner, firmware_limit_acting, mass_diagonal, rotor_inertia
from hebictl.control.goal import Goal
from hebictl.control.motion import RateLimiter
from hebictl.control.safety import ArmState, EventKind, Limits
from hebictl.hardware.clock import SimClock
from hebictl.hardware.firmware import LimitState
from tests._support.extras import extra_missing
from tests._support.paths import REPO_ROOT

KIT6 = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
POSES = [HOME, HOME + np.array([1.0, -0.25, -0.25, 0.3, 0.2, 0.1]), np.array([0.5, 0.9, 1.2, 1.0, 0.3, 0.0])]


@pytest.fixture(scope="module")
def sim_arm():
    pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
    arm = Arm.from_config(KIT6, backend="sim", clock=SimClock(), initial_position=HOME)
    yield arm
    arm.close()


@pytest.mark.parametrize("q", POSES)
def test_mass_diagonal_is_mujocos(sim_arm, q):
    """Our RNEA mass-matrix diagonal equals MuJoCo's CRBA one on the sim's own scene (its armature,
    the simulated rotor inertia, taken out)."""
    import mujoco  # the sim extra (the sim_arm fixture skipped the test without it)

    be = sim_arm.backend
    m, d = be.mj_model, mujoco.MjData(be.mj_model)
    qadr, dadr = be.scene.qadr, be.scene.dadr
    d.qpos[qadr] = q
    mujoco.mj_forward(m, d)
    diag = np.empty(len(dadr))
    for k, j in enumerate(dadr):  # M e_j, row j: the diagonal entry (mj_mulM: no layout assumptions)
        e, out = np.zeros(m.nv), np.zeros(m.nv)
        e[j] = 1.0
        mujoco.mj_mulM(m, d, out, e)
        diag[k] = out[j]
    ref = diag - m.dof_armature[dadr]
    np.testing.assert_allclose(mass_diagonal(sim_arm.model, q), ref, rtol=1e-6, atol=1e-9)


def test_rotor_inertia_estimate_is_the_motor_time_constant_rule(sim_arm):
    model = sim_arm.model
    np.testing.assert_allclose(rotor_inertia(model), 0.01 * np.asarray(model.max_efforts) / model.max_speeds)


def test_braking_deceleration_is_within_effort_and_rated(sim_arm):
    model, lim = sim_arm.model, sim_arm.limits
    planner = BrakePlanner(model, lim)
    for q in POSES:
        a = planner.deceleration(q)
        assert np.all(a <= lim.acceleration_max + 1e-12)
        # the torque a full-deceleration ramp needs on each joint alone, plus gravity, fits the rating
        need = (mass_diagonal(model, q) + planner.rotor) * a + np.abs(model.gravity_compensation(q))
        assert np.all(need <= np.asarray(lim.effort_max) * (MARGIN + (1 - MARGIN)) + 1e-9)


def test_a_heavy_payload_lowers_the_braking_deceleration(sim_arm):
    """A joint with little effort left after gravity brakes slower than its rated deceleration."""
    lim = sim_arm.limits
    weak = Limits(lim.position_min, lim.position_max, lim.velocity_max, np.asarray(lim.effort_max) * 0.25,
                  acceleration_max=lim.acceleration_max)
    a = BrakePlanner(sim_arm.model, weak).deceleration(HOME)
    assert a[1] < lim.acceleration_max[1]  # the shoulder carries the arm's weight


def test_minimal_stop_time_bounds_the_ramp(sim_arm):
    planner = BrakePlanner(sim_arm.model, sim_arm.limits)
    v = 0.95 * np.asarray(sim_arm.limits.velocity_max) * np.array([1, 0, 0, 0, 0, 0])
    t_min = planner.minimal_stop_time(HOME, v)
    assert 0.0 < t_min < 1.5 * v[0] / planner.deceleration(HOME)[0]


def test_brake_feed_forward_is_inverse_dynamics_plus_rotor(sim_arm):
    model = sim_arm.model
    planner = BrakePlanner(model, sim_arm.limits)
    p, v, a = HOME, np.full(6, 0.3), np.full(6, -2.0)
    expect = model.inverse_dynamics(p, v, a, np.zeros(3)) + planner.rotor * a
    np.testing.assert_allclose(planner.brake_effort(p, v, a), expect, rtol=1e-12, atol=1e-12)


def test_r6_feed_forward_is_mujocos_inverse_dynamics():
    """Issue 18: r6's blind brake lagged 30-45 mrad (about 2.4 N·m at its base's kp of 60). Not a model
    error: gravity + the brake's feed-forward (rigid body + rotor) equal MuJoCo's ``mj_inverse`` of
    the r6 sim (gripper included) at random states; the lag was the motors' torque-speed line near
    their free speed (the arm did not reach the commanded speed)."""
    mujoco = pytest.importorskip("mujoco", reason=extra_missing("mujoco"))
    cfg = REPO_ROOT / "configs" / "r-series-6dof.cfg.yaml"
    home = np.array([0.0, 1.3, 1.5, 1.7, -1.57, 0.0])
    arm = Arm.from_config(cfg, backend="sim", clock=SimClock(), initial_position=home)
    try:
        m = arm.backend.mj_model
        planner = BrakePlanner(arm.model, arm.limits)
        rng = np.random.default_rng(18)
        worst = 0.0
        for _ in range(5):
            q, v, a = home + rng.normal(0, 0.3, 6), rng.normal(0, 1.0, 6), rng.normal(0, 5.0, 6)
            d = mujoco.MjData(m)
            d.qpos[:6], d.qvel[:6], d.qacc[:6] = q, v, a
            mujoco.mj_inverse(m, d)
            ours = arm.model.gravity_compensation(q) + planner.brake_effort(q, v, a)
            worst = max(worst, float(np.max(np.abs(ours - d.qfrc_inverse[:6]))))
            np.testing.assert_allclose(ours, d.qfrc_inverse[:6], atol=1e-6, rtol=1e-6)
        print(f"r6: |feed-forward - mj_inverse| <= {worst:.2e} N·m")
    finally:
        arm.close()


@pytest.mark.parametrize("q", POSES)
def test_unknown_load_effort_is_mujocos_inverse_dynamics_of_the_payload(sim_arm, q):
    """The brake's unknown-load effort, m J_v^T (J_v a + dJ_v v - g) of a point mass at the end effector,
    equals MuJoCo's inverse dynamics of the sim's scene with a 1 kg payload body there minus the same
    without it (mj_inverse: an independent RNEA on MuJoCo's own kinematic tree), moving and at rest."""
    import mujoco

    from hebictl.control.braking import PAYLOAD_MIN_KG

    loaded = Arm.from_config(KIT6, backend="sim", clock=SimClock(), initial_position=HOME,
                             payload={"mass": 1.0, "com": [0.0, 0.0, 0.0]})
    try:
        rng = np.random.default_rng(7)
        v, a = rng.uniform(-3.0, 3.0, 6), rng.uniform(-20.0, 20.0, 6)

        def mj_effort(be, qd, qdd):
            m, d = be.mj_model, mujoco.MjData(be.mj_model)
            d.qpos[be.scene.qadr], d.qvel[be.scene.dadr], d.qacc[be.scene.dadr] = q, qd, qdd
            mujoco.mj_inverse(m, d)
            return d.qfrc_inverse[be.scene.dadr].copy()

        planner = BrakePlanner(sim_arm.model, sim_arm.limits)
        planner.set_payload_mass(1.0)
        g = np.asarray(sim_arm.backend.mj_model.opt.gravity, dtype=float)
        for qd, qdd in ((v, a), (np.zeros(6), np.zeros(6))):
            ref = mj_effort(loaded.backend, qd, qdd) - mj_effort(sim_arm.backend, qd, qdd)
            ours = planner.payload_effort(q, qd, qdd, g)
            print(f"\nq {np.round(q, 2)}: ours {np.round(ours, 3)} MuJoCo {np.round(ref, 3)}")
            np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=2e-4)
        planner.set_payload_mass(0.5 * PAYLOAD_MIN_KG)  # below the threshold: nothing is carried
        assert planner.payload_mass == 0.0 and not np.any(planner.payload_effort(q, v, a, g))
    finally:
        loaded.close()


def test_unknown_load_slows_the_planned_brake_and_adds_its_inertia(sim_arm):
    """With a 1 kg load taken in, each joint's planned deceleration is what its spare effort (less the load's
    weight) gives over its inertia plus m |J_v,i|^2: never faster than without the load."""
    planner = BrakePlanner(sim_arm.model, sim_arm.limits)
    bare = planner.effort_deceleration(HOME)
    planner.set_payload_mass(1.0)
    loaded = planner.effort_deceleration(HOME)
    jv = sim_arm.model.jacobian_end_effector(HOME)[:3]
    inertia = mass_diagonal(sim_arm.model, HOME) + planner.rotor + (jv * jv).sum(axis=0)
    zero = np.zeros(6)
    weight = np.abs(sim_arm.model.gravity_compensation(HOME)
                    + planner.payload_effort(HOME, zero, zero, sim_arm.model.gravity))
    expect = np.maximum(np.asarray(sim_arm.limits.effort_max) - weight, 0.0) / inertia
    print(f"\ndeceleration without / with 1 kg: {np.round(bare, 1)} / {np.round(loaded, 1)} rad/s^2")
    np.testing.assert_allclose(loaded, expect, rtol=1e-9)
    assert np.all(loaded <= bare + 1e-9) and loaded[0] < bare[0]


def test_firmware_limit_states_follow_hebis_values():
    inside = np.full(6, float(LimitState.INSIDE))
    assert firmware_limit_acting(inside, 6) is None
    assert firmware_limit_acting(np.full(6, float(LimitState.UNINITIALIZED)), 6) is None
    assert firmware_limit_acting(np.full(6, np.nan), 6) is None
    for value, side in ((LimitState.BELOW, "lower"), (LimitState.AT_LOWER, "lower"),
                        (LimitState.AT_UPPER, "upper"), (LimitState.ABOVE, "upper")):
        s = inside.copy()
        s[3] = float(value)
        assert firmware_limit_acting(s, 6) == (3, side)


def test_rate_limiter_reaches_a_limit_at_rest():
    """A command driven at full speed into a limit arrives there at rest, within the deceleration."""
    lim = Limits(np.array([-1.0]), np.array([1.0]), np.array([2.0]), np.array([10.0]),
                 acceleration_max=np.array([10.0]))
    rl = RateLimiter(lim.velocity_max, lim)
    dt, p, out = 0.005, np.array([0.0]), []
    for _ in range(400):
        pos, vel = p + 2.0 * dt, np.array([2.0])  # a jog pushing on at rated speed
        lim.clamp_command(pos, vel, np.zeros(1))
        rl.apply(pos, vel, dt, p)
        p = pos
        out.append(float(pos[0]))
    x = np.array(out)
    assert x.max() <= 1.0 and x[-1] == pytest.approx(1.0, abs=1e-4)
    v = np.diff(x) / dt
    assert v[-5:].max() < 0.05
    assert np.abs(np.diff(v) / dt).max() <= 10.0 + 1e-6


def test_first_command_after_a_hardware_error_is_not_a_full_speed_velocity():
    clock = SimClock()
    with Arm.from_config(KIT6, clock=clock, initial_position=HOME) as arm:
        for _ in range(5):
            arm.update()
            arm.send()
        arm.set_goal(Goal(6).add_waypoint(t=1.0, position=HOME + np.array([0.5, 0, 0, 0, 0, 0])))
        for _ in range(100):
            arm.update()
            arm.send()
        v_before = arm.pending_command.velocity.copy()
        arm.backend.faults.disconnect(0)
        arm.update()
        assert arm.state is ArmState.STOPPED and arm.events.last.kind is EventKind.HARDWARE_ERROR
        v = arm.pending_command.velocity
        assert np.all(np.abs(v) <= np.abs(v_before) + 1e-9), (v, v_before)
