"""The compiled kernels against pinocchio on random trees and HRDF kits: body poses, Jacobians, gravity, RNEA.

Skipped without pinocchio; tests/model/test_robot.py checks the same derivatives by finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.model.tree import JointKind

from .random_trees import random_configuration, random_tree

pin = pytest.importorskip("pinocchio")
from .pinocchio_bridge import q_to_pinocchio, to_pinocchio  # noqa: E402

ALL = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED, JointKind.BALL)
CASES = [
    pytest.param(dict(seed=s, kinds=(JointKind.REVOLUTE,), branching=False), id=f"chain-revolute-{s}")
    for s in range(3)
] + [
    pytest.param(dict(seed=10 + s, kinds=ALL), id=f"tree-mixed-{s}") for s in range(4)
] + [
    pytest.param(dict(seed=20 + s, kinds=ALL, root=JointKind.FREE), id=f"floating-{s}") for s in range(3)
]


def _pair(case):
    model = random_tree(n=9, **case)
    pm, _ = to_pinocchio(model)
    return model, pm, pm.createData()


@pytest.mark.parametrize("case", CASES)
def test_link_poses_match_pinocchio(case):
    """World pose of every body frame equals pinocchio's frame placement to 1e-12."""
    model, pm, pd = _pair(case)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = random_configuration(model, rng)
        pin.framesForwardKinematics(pm, pd, q_to_pinocchio(model, q))
        ours = model.link_poses(q)
        for i, name in enumerate(model.link_names):
            np.testing.assert_allclose(ours[i], pd.oMf[pm.getFrameId(name)].homogeneous, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_gravity_matches_pinocchio(case):
    """Gravity compensation equals pinocchio's computeGeneralizedGravity to 1e-9."""
    model, pm, pd = _pair(case)
    pm.gravity.linear = np.array([0.3, -1.2, -9.81])
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = random_configuration(model, rng)
        ref = pin.computeGeneralizedGravity(pm, pd, q_to_pinocchio(model, q))
        np.testing.assert_allclose(model.gravity_compensation(q, gravity=[0.3, -1.2, -9.81]), ref, atol=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_inverse_dynamics_matches_pinocchio_rnea(case):
    """Full RNEA (velocities, accelerations, rotational inertia) equals pinocchio's rnea to 1e-9."""
    model, pm, pd = _pair(case)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = random_configuration(model, rng)
        qd, qdd = rng.normal(size=(2, model.nv))
        ref = pin.rnea(pm, pd, q_to_pinocchio(model, q), qd, qdd)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), ref, atol=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_jacobians_match_pinocchio(case):
    """Frame Jacobians ([linear; angular], world axes at the frame origin) equal pinocchio's."""
    model, pm, pd = _pair(case)
    rng = np.random.default_rng(4)
    q = random_configuration(model, rng)
    pin.computeJointJacobians(pm, pd, q_to_pinocchio(model, q))
    pin.updateFramePlacements(pm, pd)
    ours = model.jacobians(q, frame="link")
    for i, name in enumerate(model.link_names):
        ref = pin.getFrameJacobian(pm, pd, pm.getFrameId(name), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(ours[i], ref, atol=1e-12)


def _hrdf_kits():
    from pathlib import Path

    from tests._support.corpus import CORPUS_DIR

    kits = sorted((Path(__file__).resolve().parents[2] / "hrdf_kits").glob("*.hrdf"))
    corpus = CORPUS_DIR / "hebi" / "hebi-hrdf"
    return kits + (sorted(corpus.glob("A-*.hrdf")) if corpus.is_dir() else [])


@pytest.mark.parametrize("path", _hrdf_kits(), ids=lambda p: p.name)
def test_hrdf_kit_inverse_dynamics_matches_pinocchio(path):
    """HEBI kits (library inertias, gear-free joints): RNEA equals pinocchio's rnea to 1e-9."""
    import hebictl

    model = hebictl.load_model(path)
    pm, _ = to_pinocchio(model)
    pd = pm.createData()
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-np.pi, np.pi, (3, model.dof))
        ref = pin.rnea(pm, pd, q, qd, qdd)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), ref, atol=1e-9)
        np.testing.assert_allclose(model.gravity_compensation(q), pin.computeGeneralizedGravity(pm, pd, q),
                                   atol=1e-9)
