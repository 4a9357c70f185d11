"""ImpedanceController against hebi-py's own plugin (same HRDF, same joint states, several cycles)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.plugins import ImpedanceController
from tests._support.plugin_arm import HOME, hebi_arm, set_state

KP = [300.0, 250.0, 200.0, 5.0, 4.0, 3.0]
KD = [8.0, 7.0, 6.0, 0.5, 0.4, 0.3]
KI = [20.0, 15.0, 10.0, 1.0, 1.0, 1.0]
CLAMP = [0.3, 0.3, 0.3, 0.02, 0.02, 0.02]


def _hebi_plugin(hebi, in_ee_frame: bool):
    from hebi._internal.plugins.impedance_controller_plugin import ImpedanceController as Ref

    ref = Ref(name="imp", enabled=True, ramp_time=0.0, gains_in_end_effector_frame=in_ee_frame)
    ref.set_kp(*KP)
    ref.set_kd(*KD)
    ref.set_ki(*KI)
    ref.set_i_clamp(*CLAMP)
    return ref


@pytest.mark.parametrize("in_ee_frame", [False, True])
def test_efforts_equal_hebi_py_over_cycles(hebi, arm, model, in_ee_frame):
    """Spring, damper and clamped integrator: efforts equal hebi-py's every cycle (the integrator
    saturates within the run, so the clamp is exercised too)."""
    ours = ImpedanceController("imp", kp=KP, kd=KD, ki=KI, i_clamp=CLAMP, gains_in_end_effector_frame=in_ee_frame)
    ours.on_associated(arm)
    ref = _hebi_plugin(hebi, in_ee_frame)
    rng = np.random.default_rng(3)
    href = None
    for k in range(40):
        q_cmd = HOME + 0.05 * np.sin(0.3 * k + np.arange(6))
        q_fb = q_cmd + 0.05 + rng.normal(0.0, 0.01, 6)  # a steady offset winds the integrator up
        v_cmd = 0.2 * np.cos(0.3 * k + np.arange(6))
        v_fb = v_cmd + rng.normal(0.0, 0.1, 6)
        base = rng.normal(0.0, 1.0, 6)
        set_state(arm, q_fb, v_fb, q_cmd, v_cmd, base)
        if href is None:
            href = hebi_arm(hebi, q_fb, v_fb, q_cmd, v_cmd, base)
            ref.on_associated(href)
        else:
            href.last_feedback.position[:], href.last_feedback.velocity[:] = q_fb, v_fb
            href.pending_command.position[:], href.pending_command.velocity[:] = q_cmd, v_cmd
            href.pending_command.effort[:] = base
        assert ours.update(arm, 0.05) and ref.update(href, 0.05)
        np.testing.assert_allclose(arm.pending_command.effort, href.pending_command.effort, rtol=1e-7, atol=1e-9)
    assert np.any(np.abs(ours.i_err) >= ours.max_accum - 1e-12)  # the clamp was reached


def test_no_command_no_effort_and_integrator_reset(arm):
    """A NaN position or velocity command (not commanded) adds nothing and resets the integrator."""
    ours = ImpedanceController("imp", kp=KP, kd=KD, ki=KI)
    ours.on_associated(arm)
    set_state(arm, HOME + 0.01, np.zeros(6), HOME, np.zeros(6))
    ours.update(arm, 0.01)
    assert np.any(ours.i_err != 0.0)
    arm.pending_command.velocity[:] = np.nan
    arm.pending_command.effort[:] = 0.0
    ours.update(arm, 0.01)
    assert np.all(arm.pending_command.effort == 0.0) and np.all(ours.i_err == 0.0)


def test_pure_translation_spring_is_jacobian_transpose_of_the_force(arm, model):
    """Independent of hebi-py: with kp only on x, the effort is J^T [kp * dx, 0, 0, 0, 0, 0], J by
    central finite differences of the end-effector position."""
    ours = ImpedanceController("imp", kp=[100.0, 0, 0, 0, 0, 0])
    ours.on_associated(arm)
    q_cmd = HOME + np.array([0.02, 0.0, 0.0, 0.0, 0.0, 0.0])
    set_state(arm, HOME, np.zeros(6), q_cmd, np.zeros(6))
    ours.update(arm, 0.0)
    dx = model.end_effector(q_cmd)[0, 3] - model.end_effector(HOME)[0, 3]
    h = 1e-6
    jx = np.array([(model.end_effector(HOME + h * e)[0, 3] - model.end_effector(HOME - h * e)[0, 3]) / (2 * h)
                   for e in np.eye(6)])
    np.testing.assert_allclose(arm.pending_command.effort, jx * 100.0 * dx, rtol=1e-6, atol=1e-9)
