"""The unknown payload's feed-forward (issue 18 item 2, issue 19 item 4): one owner
(:mod:`hebictl.control.payload_feedforward`) ramps the model-mismatch estimate in and out without a
step, hands it to set_payload without counting it twice, and carries it through every position mode:
a goal started after a hold (or after a stop) that carried an unknown 1 kg does not sag at its start,
on the sim with every bundled config."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.goal import Goal
from hebictl.control.payload_feedforward import MASS_RATE, REFINE_DEADBAND, PayloadFeedForward, point_mass_effort
from tests.control.monitors.rig import CONFIGS, Trace, sim_arm

pytest.importorskip("mujoco")

#: [m] how far the end effector may move against the goal's direction in the goal's first 0.3 s
SAG_TOL = 5e-3


@pytest.fixture(scope="module")
def x6():
    arm, _, home = sim_arm("x-series-6dof", settle=0)
    yield arm, home
    arm.close()


def test_weight_is_the_gradient_of_the_point_masss_potential_energy(x6):
    """At rest the effort is the virtual work of the weight, -d/dq (m g . p_ee(q)) with hebi's sign
    (the efforts that hold it), checked by central differences of the end effector's position."""
    arm, home = x6
    g = np.array([0.0, 0.0, -9.81])
    q = home + np.linspace(0.1, -0.2, arm.dof)
    h = 1e-6
    ref = np.empty(arm.dof)
    for i in range(arm.dof):
        dq = np.zeros(arm.dof)
        dq[i] = h
        up, down = arm.model.end_effector(q + dq)[:3, 3], arm.model.end_effector(q - dq)[:3, 3]
        ref[i] = -1.3 * g @ (up - down) / (2 * h)
    ours = point_mass_effort(arm.model, 1.3, q, None, None, g)
    print(f"\npoint mass 1.3 kg weight: ours {np.round(ours, 4)}, virtual work {np.round(ref, 4)}")
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)


def test_weight_at_an_offset_centre_of_mass_is_the_gradient_of_its_potential_energy(x6):
    """A centre of mass ``c`` [end-effector frame] off the end effector: the effort is the virtual
    work of the weight at p_ee(q) + R(q) c, by central differences of that point's position."""
    arm, home = x6
    g = np.array([0.0, 0.0, -9.81])
    q = home + np.linspace(0.1, -0.2, arm.dof)
    com = np.array([0.02, -0.01, 0.03])
    h = 1e-6

    def point(x):
        T = arm.model.end_effector(x)
        return T[:3, 3] + T[:3, :3] @ com

    ref = np.empty(arm.dof)
    for i in range(arm.dof):
        dq = np.zeros(arm.dof)
        dq[i] = h
        ref[i] = -1.3 * g @ (point(q + dq) - point(q - dq)) / (2 * h)
    ours = point_mass_effort(arm.model, 1.3, q, None, None, g, com)
    print(f"\n1.3 kg at {com} m: ours {np.round(ours, 4)}, virtual work {np.round(ref, 4)}")
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", CONFIGS)
def test_inertia_at_an_offset_centre_of_mass_is_its_point_acceleration(name):
    """Moving (q, v, a), the effort of a point mass at ``c`` is ``m J_c^T (p_c'' - g)``, ``p_c`` the point
    p_ee(q) + R(q) c: its Jacobian and its acceleration along q(t) = q + v t + a t²/2 both by central
    differences of that point's position (independent of the code's Jacobians). Every bundled config; the
    end effector's point mass (what the brake fed forward before) printed against it."""
    arm, _, home = sim_arm(name, settle=0)
    with arm:
        g = np.array([0.0, 0.0, -9.81])
        n = arm.dof
        q = home + np.linspace(0.1, -0.2, n)
        v = np.linspace(1.0, -0.5, n)
        a = np.linspace(-3.0, 2.0, n)
        com = np.array([0.05, 0.0, 0.05])

        def point(x):
            T = arm.model.end_effector(x)
            return T[:3, 3] + T[:3, :3] @ com

        h = 1e-5
        jc = np.column_stack([(point(q + h * e) - point(q - h * e)) / (2 * h) for e in np.eye(n)])
        t = 1e-4
        acc = (point(q + v * t + a * t * t / 2) - 2 * point(q) + point(q - v * t + a * t * t / 2)) / (t * t)
        ref = 1.5 * jc.T @ (acc - g)
        ours = point_mass_effort(arm.model, 1.5, q, v, a, g, com)
        at_ee = point_mass_effort(arm.model, 1.5, q, v, a, g)
        weight_only = point_mass_effort(arm.model, 1.5, q, None, None, g, com)
        print(f"\n{name} 1.5 kg at {com} m: ours {np.round(ours, 4)}, by differences {np.round(ref, 4)}; its inertia "
              f"{np.round(ours - weight_only, 4)}, the end effector's point mass "
              f"{np.round(at_ee - point_mass_effort(arm.model, 1.5, q, None, None, g), 4)}")
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)


def test_estimate_ramps_in_refines_and_drops_without_a_step(x6):
    """The fed mass moves at most MASS_RATE x dt per cycle toward the estimate; a refinement within
    REFINE_DEADBAND is not taken; the estimate gone (None) ramps it out; set_payload's share leaves it at
    once, so model + feed-forward stays the same mass (no double counting, no step)."""
    arm, _ = x6
    ff = PayloadFeedForward(arm.model)
    dt = 0.005
    assert not ff.active
    ff.follow(None, dt)
    assert ff.mass == 0.0 and ff.taken == 0.0
    est = {"extra_mass_kg": 1.0}
    masses = []
    for _ in range(300):
        ff.follow(est, dt)
        masses.append(ff.mass)
    steps = np.abs(np.diff([0.0, *masses]))
    print(f"\nramp in: largest step {steps.max():.4f} kg per {dt * 1e3:.0f} ms cycle (bound {MASS_RATE * dt:.4f})")
    assert steps.max() <= MASS_RATE * dt + 1e-12 and ff.mass == 1.0
    ff.follow({"extra_mass_kg": 1.0 + 0.5 * REFINE_DEADBAND}, dt)  # estimate noise: not taken
    assert ff.target == 1.0
    ff.follow({"extra_mass_kg": 0.8}, dt)  # a real change: ramped
    assert ff.target == 0.8 and ff.mass == pytest.approx(1.0 - MASS_RATE * dt)
    while ff.mass != 0.8:
        ff.follow({"extra_mass_kg": 0.8}, dt)
    ff.model_took(0.6)  # set_payload(0.6) on a model without one: 0.6 kg leave the feed-forward now
    assert ff.mass == pytest.approx(0.2) and ff.target == 0.0
    ff.follow(None, dt)  # the monitor voids its estimate: the rest ramps out
    assert ff.mass == pytest.approx(0.2 - MASS_RATE * dt)
    for _ in range(100):
        ff.follow(None, dt)
    assert ff.mass == 0.0 and not ff.active


def test_a_negative_estimate_is_never_fed_forward(x6):
    """A residual that reads as a negative end-effector mass is not a load (a gas spring, an effort
    offset): nothing is fed forward. Fed, it unloaded the elbow and wrist and the hold followed the sag
    (rosie-t with its shoulder spring drove itself 0.7 rad; tests/sim_backend/test_modules.py)."""
    arm, _ = x6
    ff = PayloadFeedForward(arm.model)
    for _ in range(200):
        ff.follow({"extra_mass_kg": -1.5}, 0.005)
    assert ff.mass == 0.0 and ff.target == 0.0 and not ff.active


def test_hold_takes_the_load_over_where_the_arm_is(x6):
    """carry_over moves a hold's command the ramp step's fraction of the way to the measured position:
    after the whole ramp the command is where the arm sagged, so the feed-forward replaces the
    position loop's error instead of lifting the arm."""
    arm, _ = x6
    ff = PayloadFeedForward(arm.model)
    hold, measured = np.zeros(3), np.array([-0.05, 0.02, 0.01])
    est = {"extra_mass_kg": 1.0}
    while ff.mass != 1.0:
        ff.follow(est, 0.01)
        before = hold.copy()
        ff.carry_over(hold, measured)
        frac = ff.mass / 1.0
        np.testing.assert_allclose(hold, frac * measured, atol=1e-12)  # linear in the fed mass
        assert np.all(np.abs(hold - before) <= np.abs(measured) * MASS_RATE * 0.01 + 1e-12)
    np.testing.assert_allclose(hold, measured)


def _lift_goal(arm, start):
    """A goal 0.3 rad on the shoulder (joint 1) the way that raises the end effector, inside the limits."""
    z0 = arm.model.end_effector(start)[2, 3]
    for sign in (1.0, -1.0):
        target = start.copy()
        target[1] += sign * 0.3
        if (arm.limits.position_min[1] < target[1] < arm.limits.position_max[1]
                and arm.model.end_effector(target)[2, 3] > z0 + 0.02):
            return target
    raise AssertionError("no lifting shoulder goal")


@pytest.mark.parametrize("after", ["hold", "brake"])
@pytest.mark.parametrize("config", CONFIGS)
def test_goal_after_a_payload_hold_does_not_sag(config, after):
    """1 kg the model does not know (com 3 cm out): the arm holds 1.5 s (the monitor estimates it at rest
    and the hold takes it over), or a goal is braked mid-move to a hold (``Arm.hold()``); then a
    goal that lifts the end effector. In its first 0.3 s the end effector moves < 5 mm against the goal's
    direction (before, the goal dropped the feed-forward in one cycle and the arm sagged to its payload
    offset), and the commanded effort does not step at the goal's start."""
    arm, clock, home = sim_arm(config, settle=0, payload={"mass": 1.0, "com": [0.0, 0.0, 0.03]})
    with arm:
        Trace().run(arm, clock, 1.5)
        assert arm.payload_estimate is not None and arm.payload_feedforward.mass > 0.5
        if after == "brake":
            arm.set_goal(Goal(arm.dof).add_waypoint(t=2.0, position=_lift_goal(arm, arm.last_feedback.position)))
            Trace().run(arm, clock, 0.7)
            arm.hold()  # brakes, then holds where the arm stops (unlatched: a goal may follow)
            Trace().run(arm, clock, 1.0)
        fed = arm.payload_feedforward.mass
        start = arm.last_feedback.position.copy()
        before = arm.pending_command.effort.copy()
        goal = _lift_goal(arm, start)
        arm.set_goal(Goal(arm.dof).add_waypoint(t=2.0, position=goal))
        tr = Trace()
        efforts = []
        tr.run(arm, clock, 0.3, probe=lambda: efforts.append(arm.pending_command.effort.copy()) or 0.0)
        _, _, _, ee, _ = tr.arrays()
        ee0 = arm.model.end_effector(start)[:3, 3]
        u = arm.model.end_effector(goal)[:3, 3] - ee0
        u /= np.linalg.norm(u)
        against = float(max(0.0, -np.min((ee - ee0) @ u)))
        step = float(np.max(np.abs(efforts[0] - before) / arm.limits.effort_max))
        print(f"\n{config} after a {after}: {fed:.2f} kg fed forward; in the goal's first 0.3 s the end effector "
              f"moved {against * 1e3:.2f} mm against the goal's direction, {np.linalg.norm(ee[-1] - ee0) * 1e3:.1f} mm "
              f"along; effort step at the start {step * 100:.1f}% of rated")
        assert arm.payload_feedforward.mass > 0.5  # still carried by the goal
        assert against < SAG_TOL
        assert step < 0.05


def test_an_effort_echo_is_not_fed_forward():
    """The mock (like hebi's imitation group) echoes the commanded effort: an estimate from it measures
    the command, so the Arm does not feed it forward (the sim measures what the joints exert)."""
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from tests._support.paths import REPO_ROOT

    cfg = load_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")
    with Arm.from_config(cfg, backend="mock") as arm:
        assert arm.payload_feedforward.measured is False
        arm.monitors.mismatch.estimate = {"extra_mass_kg": 1.0}
        for _ in range(50):
            arm.update()
            arm.send()
        assert arm.payload_feedforward.mass == 0.0
