"""Collision shapes: one primitive (or mesh) rigidly attached to a body of the model or to the world.

Why a neutral type: the arm's shapes come from several sources (HEBI element data for HRDF, the
model file's own collision geometry for URDF/SDF/MJCF) and the workspace from the config; the
collision engine (:mod:`hebictl.collision.world`) takes them all in one form. Sizes follow
MuJoCo's conventions, the engine the world is built on: capsules and cylinders lie along their
local z axis and are given as ``(radius, half_length)``, boxes as half extents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hebictl._typing import FloatArray

#: the shape kinds the engine understands
KINDS = ("capsule", "box", "sphere", "cylinder", "mesh", "plane")


@dataclass(frozen=True, eq=False)
class Shape:
    """A collision shape: ``kind`` (one of :data:`KINDS`), ``size`` (MuJoCo convention, see the
    module doc; a plane has none), ``pose`` 4x4 in its body's frame, ``body`` (index into
    ``model.bodies``; -1 = the world), ``name`` for messages, ``mesh_path``/``mesh_scale`` for
    meshes (MuJoCo collides a mesh through its convex hull)."""

    kind: str
    size: tuple[float, ...]
    pose: FloatArray
    body: int
    name: str
    mesh_path: str | None = None
    mesh_scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    clearance: float = 0.0
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown shape kind {self.kind!r}")


def segment_pose(a: FloatArray, b: FloatArray) -> tuple[FloatArray, float]:
    """Pose whose z axis runs from point ``a`` to point ``b`` (centred between them) and the half length.

    Used to lay a capsule along a segment; a zero-length segment gives the identity rotation."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = b - a
    length = float(np.linalg.norm(d))
    T = np.eye(4)
    T[:3, 3] = 0.5 * (a + b)
    if length > 1e-9:
        z = d / length
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        T[:3, 0], T[:3, 1], T[:3, 2] = x, np.cross(z, x), z
    return T, 0.5 * length
