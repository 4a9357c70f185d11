"""Kernels against pinocchio on random trees: body poses, Jacobians, gravity, full RNEA."""

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


def test_batch_equals_single_calls():
    """A batch call returns exactly the stack of single calls, for every array query."""
    model = random_tree(seed=5, n=9, kinds=ALL)
    rng = np.random.default_rng(5)
    Q = np.array([random_configuration(model, rng) for _ in range(7)])
    V, A = rng.normal(size=(2, 7, model.nv))
    for name, batch, single in [
        ("fk", model.forward_kinematics(Q, "output"), [model.forward_kinematics(q, "output") for q in Q]),
        ("jac", model.jacobians(Q, "com"), [model.jacobians(q, "com") for q in Q]),
        ("grav", model.gravity_compensation(Q), [model.gravity_compensation(q) for q in Q]),
        ("rnea", model.inverse_dynamics(Q, V, A),
         [model.inverse_dynamics(q, v, a) for q, v, a in zip(Q, V, A, strict=True)]),
    ]:
        assert np.array_equal(batch, np.stack(single)), name


def test_joint_scale_follows_chain_rule():
    """A joint with scale s moves like an unscaled joint at s*q and needs s times the effort."""
    from hebictl.model.builder import ModelBuilder
    from hebictl.model.tree import Joint

    from .random_trees import random_inertia, transform

    rng = np.random.default_rng(6)
    models = []
    for scale in (1.0, 0.25):
        b = ModelBuilder("scaled")
        b.add_body("a", -1, transform(np.eye(3), [0, 0, 0.1]), Joint("j0", axis=(0, 1, 0), scale=scale),
                   random_inertia(np.random.default_rng(0)))
        b.add_body("c", 0, transform(np.eye(3), [0.3, 0, 0]), Joint("j1", JointKind.PRISMATIC, axis=(1, 0, 0),
                   scale=scale), random_inertia(np.random.default_rng(1)))
        b.add_frame("output", 1)
        models.append(b.build())
    unscaled, scaled = models
    q, qd, qdd = rng.normal(size=(3, 2))
    np.testing.assert_allclose(scaled.forward_kinematics(q), unscaled.forward_kinematics(0.25 * q), atol=1e-14)
    np.testing.assert_allclose(scaled.inverse_dynamics(q, qd, qdd),
                               0.25 * unscaled.inverse_dynamics(0.25 * q, 0.25 * qd, 0.25 * qdd), atol=1e-12)
    np.testing.assert_allclose(scaled.jacobians(q, "output"), 0.25 * unscaled.jacobians(0.25 * q, "output"),
                               atol=1e-14)


def test_threaded_batches_equal_serial_batches():
    """Batches large enough to be split across threads return exactly the serial result."""
    from hebictl.model import robot

    model = random_tree(seed=7, n=9, kinds=ALL)
    rng = np.random.default_rng(7)
    B = robot.PARALLEL_MIN_BATCH * 2 + 3
    Q = np.array([random_configuration(model, rng) for _ in range(B)])
    V, A = rng.normal(size=(2, B, model.nv))
    threaded = (model.forward_kinematics(Q), model.jacobians(Q), model.gravity_compensation(Q),
                model.inverse_dynamics(Q, V, A))
    old, robot.PARALLEL_MIN_BATCH = robot.PARALLEL_MIN_BATCH, 10**9
    try:
        serial = (model.forward_kinematics(Q), model.jacobians(Q), model.gravity_compensation(Q),
                  model.inverse_dynamics(Q, V, A))
    finally:
        robot.PARALLEL_MIN_BATCH = old
    for a, b in zip(threaded, serial, strict=True):
        assert np.array_equal(a, b)


def _hrdf_kits():
    from pathlib import Path

    from tests.conftest import CORPUS_DIR

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


def test_armature_adds_reflected_inertia_like_mujoco():
    """Joint armature enters inverse dynamics as MuJoCo's mj_inverse has it (armature on M's diagonal)."""
    mujoco = pytest.importorskip("mujoco")
    from hebictl.model.builder import ModelBuilder
    from hebictl.model.tree import Inertia, Joint

    from .random_trees import transform

    xml = """<mujoco><option gravity="0 0 -9.81"/><worldbody>
      <body name="a" pos="0 0 0.1"><joint name="j0" type="hinge" axis="0 1 0" armature="0.02"/>
        <inertial pos="0.1 0 0" mass="1.5" diaginertia="0.01 0.02 0.03"/>
        <body name="c" pos="0.3 0 0"><joint name="j1" type="slide" axis="1 0 0" armature="0.5"/>
          <inertial pos="0 0.05 0" mass="0.7" diaginertia="0.004 0.005 0.006"/></body></body>
    </worldbody></mujoco>"""
    mm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mm)
    b = ModelBuilder("geared")
    b.add_body("a", -1, transform(np.eye(3), [0, 0, 0.1]), Joint("j0", axis=(0, 1, 0), armature=0.02),
               Inertia(1.5, (0.1, 0, 0), np.diag([0.01, 0.02, 0.03])))
    b.add_body("c", 0, transform(np.eye(3), [0.3, 0, 0]), Joint("j1", JointKind.PRISMATIC, axis=(1, 0, 0),
               armature=0.5), Inertia(0.7, (0, 0.05, 0), np.diag([0.004, 0.005, 0.006])))
    model = b.build()
    rng = np.random.default_rng(9)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=(3, 2))
        md.qpos[:], md.qvel[:], md.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(mm, md)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), md.qfrc_inverse, atol=1e-9)
        out = np.empty(2)
        model.inverse_dynamics_into(q, qd, qdd, np.array([0, 0, -9.81]), out)
        np.testing.assert_allclose(out, md.qfrc_inverse, atol=1e-9)


def test_out_buffers_are_filled_and_checked():
    """forward_kinematics/jacobians fill a given buffer (same values); a wrong buffer is a ModelError."""
    from hebictl.errors import ModelError

    model = random_tree(seed=8, n=6, kinds=ALL)
    rng = np.random.default_rng(8)
    Q = np.array([random_configuration(model, rng) for _ in range(4)])
    fk = np.empty((4, model.frame_count("output"), 4, 4))
    assert model.forward_kinematics(Q, "output", out=fk) is fk
    assert np.array_equal(fk, model.forward_kinematics(Q, "output"))
    one = np.empty((model.frame_count("com"), 6, model.nv))
    model.jacobians(Q[0], "com", out=one)
    assert np.array_equal(one, model.jacobians(Q[0], "com"))
    with pytest.raises(ModelError, match="out must be"):
        model.forward_kinematics(Q, "output", out=np.empty((3, 1, 4, 4)))
