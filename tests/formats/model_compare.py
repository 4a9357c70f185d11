"""Two RobotModels compared body by body: mass properties, joint data, link and frame poses,
gravity torques. Shared by the writer round trips of every format (tests/formats/)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind
from tests.formats.references import random_q

REV, PRI, FIX = JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED


def with_armature(model: RobotModel, seed: int) -> RobotModel:
    """``model`` with a random armature [kg·m² or kg] on each moving joint."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(model.name, format=model.format)
    for body in model.bodies:
        joint = body.joint
        if joint.kind is not FIX:
            joint = dataclasses.replace(joint, armature=float(rng.uniform(0.001, 0.5)))
        b.add_body(body.name, body.parent, body.placement, joint, body.inertia, body.metadata)
    for f in model.frames:
        b.add_frame(f.kind, f.body, f.offset, f.name)
    return b.build(base=model.base, gravity=model.gravity)


def map_q(src: RobotModel, dst: RobotModel, q: np.ndarray) -> np.ndarray:
    """``q`` of ``src`` rearranged into ``dst``'s coordinate order (by joint name)."""
    by_name = dict(zip(src.q_names, q, strict=True))
    return np.array([by_name[n] for n in dst.q_names])


def assert_same_model(a: RobotModel, b: RobotModel) -> None:
    """Bodies' mass properties, joints' data, link and frame poses of ``a`` are all found in ``b``."""
    ib = {n: i for i, n in enumerate(b.link_names)}
    for body in a.bodies:
        other = b.bodies[ib[body.name]]
        assert other.inertia.mass == pytest.approx(body.inertia.mass, abs=1e-12), body.name
        np.testing.assert_allclose(other.inertia.com, body.inertia.com, atol=1e-12, err_msg=body.name)
        np.testing.assert_allclose(other.inertia.rotational, body.inertia.rotational, atol=1e-12, err_msg=body.name)
        ja, jb = body.joint, other.joint
        assert jb.kind is ja.kind, body.name
        if ja.kind is JointKind.FIXED:
            continue
        assert jb.name == ja.name
        if ja.kind in (REV, PRI):  # a ball or free joint has no axis
            np.testing.assert_allclose(jb.axis, ja.axis, atol=1e-12)
            assert (jb.lower, jb.upper) == pytest.approx((ja.lower, ja.upper), abs=1e-12), ja.name
        assert (jb.max_velocity, jb.max_effort, jb.damping, jb.friction, jb.armature) == pytest.approx(
            (ja.max_velocity, ja.max_effort, ja.damping, ja.friction, ja.armature), abs=1e-12), ja.name
    rng = np.random.default_rng(9)
    for _ in range(3):
        q = random_q(a, rng)
        qb = map_q(a, b, q)
        pa, pb = a.link_poses(q), b.link_poses(qb)
        for i, name in enumerate(a.link_names):
            np.testing.assert_allclose(pb[ib[name]], pa[i], atol=1e-12, err_msg=name)
        for kind in {f.kind for f in a.frames}:
            fa = [(f.name, f.body, f.offset) for f in a.frames if f.kind == kind]
            fb = [(f.name, f.body, f.offset) for f in b.frames if f.kind == kind]
            assert [n for n, *_ in fa] == [n for n, *_ in fb], kind
            for (name, ba, Ta), (_, bb, Tb) in zip(fa, fb, strict=True):
                wa = (pa[ba] if ba >= 0 else a.base) @ Ta
                wb = (pb[bb] if bb >= 0 else b.base) @ Tb
                np.testing.assert_allclose(wb, wa, atol=1e-12, err_msg=f"{kind} frame {name}")
        gb = dict(zip(b.v_names, b.gravity_compensation(qb), strict=True))
        np.testing.assert_allclose([gb[n] for n in a.v_names], a.gravity_compensation(q), atol=1e-9)
