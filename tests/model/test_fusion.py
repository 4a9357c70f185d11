"""Folding fixed bodies into their moving ancestor (hebictl.model.fusion) changes no result.

The reference is the same tree with every fixed joint replaced by a revolute joint locked at
zero (zero position, velocity and acceleration): fusion then has nothing to fold, so the
kernels walk every body. Kinematics, the real joints' Jacobian columns, gravity and inverse
dynamics must agree to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.model.builder import ModelBuilder
from hebictl.model.fusion import fuse
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Inertia, Joint, JointKind

from .random_trees import random_configuration, random_tree, transform

KINDS = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED, JointKind.FIXED, JointKind.BALL)


def _unlocked_twin(model: RobotModel) -> tuple[RobotModel, np.ndarray]:
    """``model`` with each fixed joint a revolute joint 'lock<i>'; and which of its v coordinates are real."""
    b = ModelBuilder(model.name + "-unfused", format="test")
    real = []
    for i, body in enumerate(model.bodies):
        joint = body.joint
        if joint.kind is JointKind.FIXED:
            joint = Joint(f"lock{i}", JointKind.REVOLUTE, axis=(0.3, -0.5, 0.8))
        b.add_body(body.name, body.parent, body.placement, joint, body.inertia)
        real += [body.joint.kind is not JointKind.FIXED] * joint.nv
    for f in model.frames:
        b.add_frame(f.kind, f.body, f.offset, f.name)
    return b.build(base=model.base, gravity=model.gravity), np.array(real)


def _twin_q(model: RobotModel, twin: RobotModel, q: np.ndarray) -> np.ndarray:
    """The twin's configuration: the model's coordinates, zeros for the locked joints."""
    out = np.zeros(twin.nq)
    for i, body in enumerate(model.bodies):
        if body.joint.kind is not JointKind.FIXED:
            s, _ = model.coordinate_index(i)
            t, _ = twin.coordinate_index(i)
            out[t:t + body.joint.nq] = q[s:s + body.joint.nq]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_fused_model_equals_the_unfused_twin(seed):
    model = random_tree(seed=40 + seed, n=12, kinds=KINDS, root=JointKind.FIXED if seed % 2 else None)
    twin, real = _unlocked_twin(model)
    assert twin.nv > model.nv  # the twin really has more joints to walk
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q = random_configuration(model, rng)
        qt = _twin_q(model, twin, q)
        qd, qdd = rng.normal(size=(2, model.nv))
        qdt, qddt = np.zeros((2, twin.nv))
        qdt[real], qddt[real] = qd, qdd
        for kind in ("output", "com", "link"):
            np.testing.assert_allclose(model.forward_kinematics(q, kind), twin.forward_kinematics(qt, kind),
                                       atol=1e-12)
            np.testing.assert_allclose(model.jacobians(q, kind), twin.jacobians(qt, kind)[..., real], atol=1e-12)
        np.testing.assert_allclose(model.gravity_compensation(q), twin.gravity_compensation(qt)[real], atol=1e-10)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd),
                                   twin.inverse_dynamics(qt, qdt, qddt)[real], atol=1e-10)


def test_fusion_keeps_only_moving_bodies_and_all_mass():
    """The kernel tables hold one body per moving joint; every kilogram not on the base is kept."""
    b = ModelBuilder("chain")
    b.add_body("plate", -1, transform(np.eye(3), [0, 0, 0.1]), inertia=None)
    j1 = b.add_body("link1", 0, np.eye(4), Joint("j1"))
    bracket = b.add_body("bracket", j1, transform(Rotation.from_euler("x", 0.4).as_matrix(), [0.2, 0, 0]),
                         inertia=Inertia(0.7, (0.01, 0.02, 0.03), np.diag([1e-3, 2e-3, 3e-3])))
    b.add_body("tool", bracket, np.eye(4), inertia=Inertia(0.3, (0, 0, 0.05)))
    model = b.build()
    fused = fuse(model.bodies, model.base)
    assert fused.tables.parent.shape == (1,)
    assert fused.tables.mass[0] == pytest.approx(1.0)
    assert [a[0] for a in fused.anchor] == [-1, 0, 0, 0]
