"""Random kinematic trees for checking the kernels against independent implementations."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Inertia, Joint, JointKind


def transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def random_inertia(rng: np.random.Generator) -> Inertia:
    """A physically valid inertia: principal moments obeying the triangle inequality, rotated."""
    a, b = rng.uniform(0.01, 0.1, 2)
    c = rng.uniform(abs(a - b) + 1e-3, a + b - 1e-3)
    R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
    return Inertia(mass=rng.uniform(0.1, 2.0), com=rng.uniform(-0.1, 0.1, 3), rotational=R @ np.diag([a, b, c]) @ R.T)


def random_tree(seed: int, n: int = 8, kinds: tuple[JointKind, ...] = (JointKind.REVOLUTE, JointKind.PRISMATIC,
                JointKind.FIXED), branching: bool = True, root: JointKind | None = None) -> RobotModel:
    """A random tree of ``n`` bodies; body 0 gets joint ``root`` if given."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(f"random{seed}", format="test")
    for i in range(n):
        parent = -1 if i == 0 else (int(rng.integers(0, i)) if branching else i - 1)
        kind = root if (i == 0 and root is not None) else kinds[int(rng.integers(len(kinds)))]
        joint = Joint.fixed() if kind is JointKind.FIXED else Joint(f"j{i}", kind, axis=rng.normal(size=3))
        R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
        placement = transform(R, rng.uniform(-0.3, 0.3, 3))
        body = b.add_body(f"b{i}", parent, placement, joint, random_inertia(rng))
        b.add_frame("com", body, transform(np.eye(3), np.array(b.bodies[body].inertia.com)))
        b.add_frame("output", body, transform(Rotation.random(random_state=i).as_matrix(), rng.uniform(-0.2, 0.2, 3)))
    return b.build(base=transform(Rotation.random(random_state=seed).as_matrix(), rng.uniform(-1, 1, 3)))


def random_configuration(model: RobotModel, rng: np.random.Generator) -> np.ndarray:
    """Random q: uniform angles, normalised quaternions for ball and free joints."""
    q = rng.uniform(-np.pi, np.pi, model.nq)
    for i in model.joint_bodies:
        kind = model.bodies[i].joint.kind
        s = model.coordinate_index(i)[0]
        if kind is JointKind.BALL:
            q[s:s + 4] = Rotation.random(random_state=rng.integers(1 << 30)).as_quat(scalar_first=True)
        elif kind is JointKind.FREE:
            q[s + 3:s + 7] = Rotation.random(random_state=rng.integers(1 << 30)).as_quat(scalar_first=True)
    return q
