"""DynamicsCompensationEffort against MuJoCo's inverse dynamics (gravity off) of the same arm.

hebi-py's DynamicCompEffortPlugin ignores the links' rotational inertia, so it is not the reference
here; MuJoCo's RNE on the model exported to MJCF is (no armature, damping or friction added).
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.plugins import DynamicsCompensationEffort
from tests._support.plugin_arm import HOME, set_state

mujoco = pytest.importorskip("mujoco")


def _mujoco_inverse(model, q, v, a) -> np.ndarray:
    from sim_backend import build_scene

    scene = build_scene(model, armature=0.0, damping=0.0, friction=0.0)
    m, d = scene.model, scene.data
    m.opt.gravity[:] = 0.0
    d.qpos[scene.qadr] = q
    d.qvel[scene.dadr] = v
    d.qacc[scene.dadr] = a
    mujoco.mj_inverse(m, d)
    return d.qfrc_inverse[scene.dadr].copy()


def test_efforts_equal_mujoco_inverse_dynamics(arm, model):
    rng = np.random.default_rng(7)
    plugin = DynamicsCompensationEffort()
    plugin.on_associated(arm)
    for _ in range(3):
        q = HOME + rng.uniform(-0.5, 0.5, 6)
        v = rng.uniform(-1.0, 1.0, 6)
        a = rng.uniform(-3.0, 3.0, 6)
        set_state(arm, q, v, q, v)
        arm.trajectory_state = (q, v, a)
        plugin.update(arm, 0.01)
        np.testing.assert_allclose(arm.pending_command.effort, _mujoco_inverse(model, q, v, a), rtol=1e-6, atol=1e-8)


def test_nothing_without_a_trajectory_and_ramped(arm):
    plugin = DynamicsCompensationEffort(ramp_time=1.0)
    plugin.enabled_ratio = 0.0
    plugin.on_associated(arm)
    set_state(arm, HOME, np.zeros(6), HOME, np.zeros(6))
    plugin.update(arm, 0.5)
    assert np.all(arm.pending_command.effort == 0.0)  # no trajectory state
    arm.trajectory_state = (HOME, np.ones(6), np.ones(6))
    plugin.update(arm, 0.0)
    half = arm.pending_command.effort.copy()
    arm.pending_command.effort[:] = 0.0
    plugin.enabled_ratio = 1.0
    plugin.update(arm, 0.0)
    np.testing.assert_allclose(half, 0.5 * arm.pending_command.effort, rtol=1e-12)
    assert np.any(half != 0.0)
