"""EndEffectorWrench against hebi-py's plugin and against virtual work with a finite-difference Jacobian."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.control.plugins import EndEffectorWrench
from tests._support.plugin_arm import HOME, hebi_arm, set_state

WRENCH = np.array([3.0, -2.0, 5.0, 0.3, -0.2, 0.1])  # N, N·m (world frame)


def test_efforts_equal_hebi_py(hebi, arm):
    from hebi._internal.plugins.end_effector_wrench_plugin import EndEffectorWrenchPlugin as Ref

    q = HOME + np.array([0.3, -0.2, 0.1, 0.4, 0.2, -0.3])
    ours = EndEffectorWrench()
    ours.on_associated(arm)
    ours.wrench[:] = WRENCH
    set_state(arm, q, np.zeros(6), q, np.zeros(6))
    ours.update(arm, 0.01)
    ref = Ref(enabled=True, ramp_time=0.0)
    href = hebi_arm(hebi, q, np.zeros(6), q, np.zeros(6))  # position_command echo NaN: hebi uses feedback
    ref.on_associated(href)
    ref.set_target_wrench(WRENCH.copy())
    ref.update(href, 0.01)
    np.testing.assert_allclose(arm.pending_command.effort, href.pending_command.effort, rtol=1e-8, atol=1e-10)


def test_virtual_work_with_finite_difference_jacobian(arm, model):
    """tau_i = F . dp/dq_i + M . omega_i, both derivatives by central differences of the FK."""
    q = HOME + np.array([-0.4, 0.1, 0.2, -0.3, 0.5, 0.7])
    ours = EndEffectorWrench()
    ours.on_associated(arm)
    ours.wrench[:] = WRENCH
    set_state(arm, q, np.zeros(6), q, np.zeros(6))
    ours.update(arm, 0.0)
    h = 1e-6
    R0 = model.end_effector(q)[:3, :3]
    tau = np.empty(6)
    for i, e in enumerate(np.eye(6)):
        Tp, Tm = model.end_effector(q + h * e), model.end_effector(q - h * e)
        dp = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        omega = (Rotation.from_matrix(Tp[:3, :3] @ R0.T).as_rotvec()
                 - Rotation.from_matrix(Tm[:3, :3] @ R0.T).as_rotvec()) / (2 * h)
        tau[i] = WRENCH[:3] @ dp + WRENCH[3:] @ omega
    np.testing.assert_allclose(arm.pending_command.effort, tau, rtol=1e-5, atol=1e-7)


def test_ramp_scales_the_wrench(arm):
    ours = EndEffectorWrench(enabled=True, ramp_time=1.0)
    ours.enabled_ratio = 0.0
    ours.on_associated(arm)
    ours.wrench[:] = WRENCH
    set_state(arm, HOME, np.zeros(6), HOME, np.zeros(6))
    ours.update(arm, 0.25)
    quarter = arm.pending_command.effort.copy()
    arm.pending_command.effort[:] = 0.0
    ours.enabled_ratio = 1.0
    ours.update(arm, 0.0)
    np.testing.assert_allclose(quarter, 0.25 * arm.pending_command.effort, rtol=1e-12)
