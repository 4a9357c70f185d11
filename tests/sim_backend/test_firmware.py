"""The simulated modules' own safety: firmware position limits with HEBI's strategies, the M-stop, lifetimes.

References are physical and independent of the firmware code: MuJoCo's own gravity forces
(``qfrc_bias``) for what a motor that is off leaves unbalanced, and the strategies' documented
outcomes (hebi-py's field docs: "the motor output is set to return the module to within the limits").
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.hardware import Command, Feedback, SimClock, open_backend
from hebictl.hardware.firmware import LimitState, ModuleSafety
from tests._support.paths import REPO_ROOT

pytest.importorskip("mujoco")

CONFIG = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
SHOULDER = 1


def make(**options):
    options = {"feedback_frequency": 1000.0, "initial_position": HOME, "clock": SimClock(),
               "command_lifetime": 0.0, **options}
    return open_backend("sim", config=CONFIG, **options)


def hold(be, q, *, effort=True) -> Command:
    cmd = Command.empty(6)
    cmd.position[:] = q
    cmd.velocity[:] = 0.0
    if effort:
        cmd.effort[:] = be.scene.robot.gravity_compensation(q)
    return cmd


def run(be, fbk, cmd, seconds, *, write_each=True):
    for _ in range(round(seconds * 1000)):
        if write_each:
            be.write(cmd)
        be.read(fbk)


def safety(hi_shoulder, strategy, **kw):
    hi = np.full(6, np.inf)
    hi[SHOULDER] = hi_shoulder
    return ModuleSafety.create(np.full(6, -np.inf), hi, max_strategy=strategy, **kw)


def test_hold_position_keeps_the_joint_at_its_limit():
    """HoldPosition: a command past the firmware limit stops at the limit; state ABOVE while pushed."""
    be = make()
    limit = HOME[SHOULDER] + 0.2
    be.set_safety(safety(limit, "HoldPosition"))
    fbk = Feedback.empty(6)
    target = HOME.copy()
    target[SHOULDER] += 0.6
    run(be, fbk, hold(be, target), 2.0)
    # at the limit up to the position loop's error (the effort fed forward is gravity at the target)
    assert limit - 0.05 < fbk.position[SHOULDER] <= limit + 0.005
    assert abs(fbk.velocity[SHOULDER]) < 0.05
    assert fbk.position_limit_state[SHOULDER] in (LimitState.ABOVE, LimitState.AT_UPPER)
    assert fbk.position_limit_state[0] == LimitState.INSIDE


def test_disabled_limit_is_not_enforced():
    be = make()
    be.set_safety(safety(HOME[SHOULDER] + 0.2, "Disabled"))
    fbk = Feedback.empty(6)
    target = HOME.copy()
    target[SHOULDER] += 0.6
    run(be, fbk, hold(be, target), 2.0)
    assert fbk.position[SHOULDER] == pytest.approx(target[SHOULDER], abs=0.02)
    assert fbk.position_limit_state[SHOULDER] == LimitState.ABOVE  # reported, not acted on


def test_damped_spring_pushes_back_inside():
    """DampedSpring: past the limit a spring-damper effort drives the joint back towards it."""
    be = make()
    limit = HOME[SHOULDER] + 0.2
    be.set_safety(safety(limit, "DampedSpring"))
    fbk = Feedback.empty(6)
    target = HOME.copy()
    target[SHOULDER] += 0.6
    run(be, fbk, hold(be, target), 2.0)
    assert limit < fbk.position[SHOULDER] < limit + 0.1  # a spring: some overshoot, far from the target
    assert abs(fbk.velocity[SHOULDER]) < 0.05


def test_motor_off_beyond_the_limit_lets_gravity_act():
    """MotorOff: past the limit the module applies no torque; gravity then pulls the shoulder back."""
    be = make()
    limit = HOME[SHOULDER] - 0.05
    be.set_safety(safety(limit, "MotorOff"))
    fbk = Feedback.empty(6)
    be.write(hold(be, HOME))  # already 0.05 rad past the limit: not armed yet
    be.read(fbk)
    assert fbk.position_limit_state[SHOULDER] == LimitState.UNINITIALIZED
    be.set_safety(safety(HOME[SHOULDER] + 0.05, "MotorOff"))
    run(be, fbk, hold(be, HOME), 0.2)
    assert fbk.position_limit_state[SHOULDER] == LimitState.INSIDE
    target = HOME.copy()
    target[SHOULDER] += 0.3
    for _ in range(2000):
        be.write(hold(be, target))
        be.read(fbk)
        if fbk.position_limit_state[SHOULDER] == LimitState.ABOVE:
            break
    assert fbk.position_limit_state[SHOULDER] == LimitState.ABOVE
    assert fbk.effort[SHOULDER] == 0.0  # the same step's state and torque: the motor is off
    assert fbk.effort[SHOULDER + 1] != 0.0  # the other modules still run


def test_mstop_motor_off_drops_the_arm_and_hold_position_keeps_it():
    """An M-stop press: MotorOff (the assumed default) lets the arm fall; HoldPosition holds it
    (position loop only, so it sags a little under gravity); feedback mstop reads 1 while pressed."""
    results = {}
    for strategy in ("MotorOff", "HoldPosition"):
        be = make()
        be.set_safety(ModuleSafety.create(np.full(6, -np.inf), np.full(6, np.inf), mstop_strategy=strategy))
        fbk = Feedback.empty(6)
        run(be, fbk, hold(be, HOME), 0.3)
        assert not fbk.m_stopped
        be.press_mstop()
        run(be, fbk, hold(be, HOME), 1.0)
        assert fbk.m_stopped and np.all(fbk.mstop == 1.0)
        results[strategy] = abs(fbk.position[SHOULDER] - HOME[SHOULDER])
        if strategy == "MotorOff":
            assert np.all(fbk.effort == 0.0)
        be.release_mstop()
        run(be, fbk, hold(be, HOME), 1.0)
        assert not fbk.m_stopped
        if strategy == "HoldPosition":
            assert fbk.position[SHOULDER] == pytest.approx(HOME[SHOULDER], abs=0.01)  # commands act again
    assert results["MotorOff"] > 0.3
    assert results["HoldPosition"] < 0.1


def test_default_mstop_strategy_is_motor_off():
    be = make()
    fbk = Feedback.empty(6)
    run(be, fbk, hold(be, HOME), 0.1)
    be.press_mstop()
    run(be, fbk, hold(be, HOME), 0.1)
    assert np.all(fbk.effort == 0.0)


def test_lifetime_expiry_lets_an_unsupported_arm_fall():
    """Commands expire after the lifetime: the motors are off and the shoulder falls under gravity,
    with the acceleration MuJoCo's own dynamics give for zero torque."""
    be = make(command_lifetime=0.1)
    fbk = Feedback.empty(6)
    be.write(hold(be, HOME))
    run(be, fbk, None, 0.15, write_each=False)
    assert np.all(np.isnan(fbk.position_command)) and np.all(fbk.effort == 0.0)
    run(be, fbk, None, 0.5, write_each=False)
    assert abs(fbk.position[SHOULDER] - HOME[SHOULDER]) > 0.1
