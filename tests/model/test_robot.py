"""RobotModel's derivatives checked by finite differences of its own forward kinematics.

No reference library needed (these run without pinocchio): every Jacobian kind (output, com,
input, end-effector and link frames; linear and angular rows) must equal the central difference
of the frame poses, and gravity compensation must equal the gradient of the potential energy
``U(q) = -sum_i m_i g . c_i(q)`` computed from the COM frames' positions and the masses. Both are
checked on the bundled HRDF kits and on random trees with revolute, prismatic, ball and free
joints (ball/free coordinates are perturbed along their local velocity directions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hebictl
from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Joint, JointKind

from .random_trees import random_configuration, random_inertia, random_tree, transform

KITS = sorted((Path(__file__).resolve().parents[2] / "hrdf_kits").glob("*.hrdf"))
FRAME_KINDS = ("output", "com", "input", "end_effector", "link")
EPS = 1e-6
#: central differences at EPS: truncation ~EPS² and rounding ~1e-16/EPS, both far below this
ATOL = 1e-7


def _tree_with_every_frame_kind(seed: int, n: int = 9, root: JointKind | None = None) -> RobotModel:
    """A random tree with frames of every kind on every body; bodies 1-2 prismatic, 3 revolute."""
    rng = np.random.default_rng(seed)
    kinds = [JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.PRISMATIC, JointKind.FIXED, JointKind.BALL]
    b = ModelBuilder(f"fd{seed}", format="test")
    for i in range(n):
        parent = -1 if i == 0 else int(rng.integers(0, i))
        kind = {1: JointKind.PRISMATIC, 2: JointKind.PRISMATIC, 3: JointKind.REVOLUTE}.get(
            i, kinds[int(rng.integers(len(kinds)))])
        if i == 0 and root is not None:
            kind = root
        joint = Joint.fixed() if kind is JointKind.FIXED else Joint(
            f"j{i}", kind, axis=rng.normal(size=3), scale=float(rng.choice([1.0, 1.0, 0.5, -2.0])))
        R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
        body = b.add_body(f"b{i}", parent, transform(R, rng.uniform(-0.3, 0.3, 3)), joint, random_inertia(rng))
        b.add_frame("com", body, transform(np.eye(3), np.array(b.bodies[body].inertia.com)))
        for kind_name in ("output", "input", "end_effector"):
            offset = transform(Rotation.random(random_state=rng.integers(1 << 30)).as_matrix(),
                               rng.uniform(-0.2, 0.2, 3))
            b.add_frame(kind_name, body, offset)
    b.add_frame("output", -1, transform(np.eye(3), [0.1, 0.2, 0.3]))  # a frame on the base never moves
    return b.build(base=transform(Rotation.random(random_state=seed).as_matrix(), rng.uniform(-1, 1, 3)))


RANDOM = [pytest.param(dict(seed=s), id=f"tree-{s}") for s in range(4)] + [
    pytest.param(dict(seed=10 + s, root=JointKind.FREE), id=f"floating-{s}") for s in range(2)]


def _retract(model: RobotModel, q: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """``q`` moved by the velocity-coordinate step ``dv``: added for 1-DoF joints, local rotation
    (quaternion times exp) for ball/free joints, free-joint translation along the child's axes."""
    out = q.copy()
    for i in model.joint_bodies:
        kind = model.bodies[i].joint.kind
        s, v = model.coordinate_index(i)
        if kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            out[s] += dv[v]
            continue
        o, w = (s + 3, dv[v + 3:v + 6]) if kind is JointKind.FREE else (s, dv[v:v + 3])
        rot = Rotation.from_quat(q[o:o + 4], scalar_first=True)
        if kind is JointKind.FREE:
            out[s:s + 3] += rot.apply(dv[v:v + 3])
        out[o:o + 4] = (rot * Rotation.from_rotvec(w)).as_quat(scalar_first=True)
    return out


def _fd_jacobians(model: RobotModel, q: np.ndarray, frame: str) -> np.ndarray:
    """(n, 6, nv) [linear; angular] world-frame velocity of each frame per unit velocity coordinate."""
    T0 = model.forward_kinematics(q, frame)
    J = np.zeros((T0.shape[0], 6, model.nv))
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = EPS
        Tp, Tm = model.forward_kinematics(_retract(model, q, e), frame), model.forward_kinematics(
            _retract(model, q, -e), frame)
        J[:, :3, k] = (Tp[:, :3, 3] - Tm[:, :3, 3]) / (2 * EPS)
        for f in range(T0.shape[0]):
            R0t = T0[f, :3, :3].T
            wp = Rotation.from_matrix(Tp[f, :3, :3] @ R0t).as_rotvec()
            wm = Rotation.from_matrix(Tm[f, :3, :3] @ R0t).as_rotvec()
            J[f, 3:, k] = (wp - wm) / (2 * EPS)
    return J


def _potential(model: RobotModel, q: np.ndarray, g: np.ndarray) -> float:
    """Gravitational potential energy [J] from the COM frames' world positions and the masses."""
    com = model.forward_kinematics(q, "com")[:, :3, 3]
    return float(-np.sum(model.masses * (com @ g)))


def _fd_gravity(model: RobotModel, q: np.ndarray, g: np.ndarray) -> np.ndarray:
    tau = np.zeros(model.nv)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = EPS
        up, down = _potential(model, _retract(model, q, e), g), _potential(model, _retract(model, q, -e), g)
        tau[k] = (up - down) / (2 * EPS)
    return tau


def _configurations(model: RobotModel, seed: int, n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [random_configuration(model, rng) for _ in range(n)]


def _check_jacobians(model: RobotModel, q: np.ndarray, frame: str) -> None:
    ours = model.jacobians(q, frame)
    assert ours.shape == (model.frame_count(frame), 6, model.nv)
    ref = _fd_jacobians(model, q, frame)
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(ours[:, :3], ref[:, :3], atol=ATOL * scale, err_msg=f"{frame}: linear rows")
    np.testing.assert_allclose(ours[:, 3:], ref[:, 3:], atol=ATOL * scale, err_msg=f"{frame}: angular rows")


# ---------------------------------------------------------------------------------------------- random trees
@pytest.mark.parametrize("frame", FRAME_KINDS)
@pytest.mark.parametrize("case", RANDOM)
def test_jacobians_are_derivatives_of_fk_random_trees(case, frame):
    """Each frame kind's Jacobian equals the central difference of its poses (prismatic, ball, free)."""
    model = _tree_with_every_frame_kind(**case)
    assert model.frame_count(frame) > 0
    kinds = {model.bodies[i].joint.kind for i in model.joint_bodies}
    assert {JointKind.PRISMATIC, JointKind.REVOLUTE} <= kinds
    for q in _configurations(model, case["seed"]):
        _check_jacobians(model, q, frame)


@pytest.mark.parametrize("case", RANDOM)
def test_gravity_is_the_potential_gradient_random_trees(case):
    """gravity_compensation(q, g) = dU/dq for U = -sum m_i g.c_i (a tilted g checks every axis)."""
    model = _tree_with_every_frame_kind(**case)
    assert np.isclose(model.masses.sum(), model.total_mass)  # every body's mass is on a COM frame
    for g in (np.array([0.0, 0.0, -9.81]), np.array([1.3, -2.1, -9.4])):
        for q in _configurations(model, case["seed"] + 100):
            np.testing.assert_allclose(model.gravity_compensation(q, gravity=g), _fd_gravity(model, q, g),
                                       atol=1e-6)


def test_end_effector_jacobian_is_the_end_effector_row():
    """jacobian_end_effector(q, i) is frame i of the end-effector Jacobians, also checked by differences."""
    model = _tree_with_every_frame_kind(seed=3)
    q = _configurations(model, 3, 1)[0]
    ref = _fd_jacobians(model, q, "end_effector")
    for i in (0, model.frame_count("end_effector") - 1):
        np.testing.assert_allclose(model.jacobian_end_effector(q, i), ref[i], atol=ATOL)


def test_finite_differences_catch_a_wrong_jacobian():
    """The check is sharp: a Jacobian with one column off by 1e-4 fails it (the test can fail)."""
    model = _tree_with_every_frame_kind(seed=1)
    q = _configurations(model, 1, 1)[0]
    wrong = model.jacobians(q, "output")
    wrong[:, :, -1] *= 1.0 + 1e-4
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(wrong, _fd_jacobians(model, q, "output"), atol=ATOL)


# ---------------------------------------------------------------------------------------------- HRDF kits
@pytest.fixture(scope="module", params=KITS, ids=lambda p: p.name)
def kit(request) -> RobotModel:
    return hebictl.load_model(request.param)


def test_kits_are_bundled():
    """The HRDF kits below are found (an empty parametrisation would pass silently)."""
    assert len(KITS) >= 4


@pytest.mark.parametrize("frame", FRAME_KINDS)
def test_jacobians_are_derivatives_of_fk_hrdf_kits(kit, frame):
    """On HEBI kits (library bodies, all five frame kinds) every Jacobian equals the FK difference."""
    assert kit.frame_count(frame) > 0
    for q in _configurations(kit, 7, 2):
        _check_jacobians(kit, q, frame)


def test_gravity_is_the_potential_gradient_hrdf_kits(kit):
    """Gravity compensation of a kit is the gradient of the potential of its COM frames' masses."""
    for g in (np.array([0.0, 0.0, -9.81]), np.array([2.0, 1.0, -9.5])):
        for q in _configurations(kit, 8, 3):
            np.testing.assert_allclose(kit.gravity_compensation(q, gravity=g), _fd_gravity(kit, q, g), atol=1e-6)


# ---------------------------------------------------------------------------------------------- API behaviour
ALL = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED, JointKind.BALL)


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
