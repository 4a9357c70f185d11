"""Cartesian jog: damped least squares against independent formulations (lstsq, pseudo-inverse)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.teleop.jog import dls_joint_velocity
from tests._support.paths import KIT6_CONFIG as KIT6
from tests._support.teleop import HOME


@pytest.mark.parametrize("damping", [0.0, 1e-3, 0.02, 0.2])
@pytest.mark.parametrize("seed", range(5))
def test_dls_equals_augmented_least_squares(seed, damping):
    """J^T (J J^T + λ²I)^-1 w equals argmin |J x - w|² + λ²|x|² solved by lstsq on [J; λI]."""
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(6, 7))
    w = rng.normal(size=6)
    A = np.vstack([J, damping * np.eye(7)])
    b = np.concatenate([w, np.zeros(7)])
    ref = np.linalg.lstsq(A, b, rcond=None)[0] if damping > 0 else np.linalg.pinv(J) @ w
    np.testing.assert_allclose(dls_joint_velocity(J, w, damping), ref, rtol=1e-9, atol=1e-12)


def test_dls_bounded_at_singularity_on_the_arm():
    """On the 6-DoF kit: at home the undamped solve reproduces the twist; near a singularity
    (wrist aligned) damping keeps joint speed bounded where the pseudo-inverse explodes."""
    arm = Arm.from_config(KIT6, backend="mock", clock=SimClock())
    try:
        J = arm.model.jacobian_end_effector(np.array(HOME))
        w = np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0])
        np.testing.assert_allclose(J @ dls_joint_velocity(J, w, 0.0), w, atol=1e-10)
        q_sing = np.array(HOME)
        q_sing[4] = 0.0  # wrist 2 at zero aligns wrist 1 and wrist 3 axes on this kit
        Js = arm.model.jacobian_end_effector(q_sing)
        s = np.linalg.svd(Js, compute_uv=False)
        assert s[-1] < 1e-6 * s[0], s
        twist = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5])
        damped = dls_joint_velocity(Js, twist, 0.02)
        assert np.linalg.norm(damped) <= np.linalg.norm(twist) / (2 * 0.02) * (1 + 1e-9)  # σ/(σ²+λ²) <= 1/(2λ)
    finally:
        arm.close()
