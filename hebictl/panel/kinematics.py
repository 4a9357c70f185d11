"""Link poses of a described arm: forward kinematics from the JSON tree of ``state/description``.

The panel is a remote client: it has no model files, only what the arm published. The tree gives
each body's parent, its placement on the parent and its joint, so a body's world pose is
``T_parent · placement · motion(scale · q[index])`` (rotation about the axis for a revolute joint,
translation along it for a prismatic one). Kept tiny and in numpy: ten-odd bodies at 30 Hz.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hebictl._typing import FloatArray


def _rot(axis: FloatArray, angle: float) -> FloatArray:
    """Rodrigues' rotation matrix about the unit ``axis``."""
    x, y, z = axis
    c, s = np.cos(angle), np.sin(angle)
    C = 1.0 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def _matrix(m: Any) -> FloatArray:
    a = np.array([[np.nan if v is None else v for v in row] for row in m], dtype=np.float64)
    if a.shape != (4, 4):
        raise ValueError("a 4x4 matrix was expected")
    return a


class DescribedArm:
    """Forward kinematics of the ``tree`` of one ``state/description``."""

    def __init__(self, tree: dict[str, Any]) -> None:
        self.base = _matrix(tree["base"])
        self.parents: list[int] = []
        self.placements: list[FloatArray] = []
        self.kinds: list[str] = []
        self.axes: list[FloatArray] = []
        self.scales: list[float] = []
        self.index: list[int | None] = []
        self.names: list[str] = []
        for b in tree["bodies"]:
            j = b["joint"]
            parent = int(b["parent"])
            if parent >= len(self.parents):
                raise ValueError("bodies must come after their parents")
            self.parents.append(parent)
            self.placements.append(_matrix(b["placement"]))
            self.kinds.append(str(j["kind"]))
            axis = np.array(j.get("axis") or (0.0, 0.0, 1.0), dtype=np.float64)
            self.axes.append(axis / (np.linalg.norm(axis) or 1.0))
            self.scales.append(float(j.get("scale") or 1.0))
            self.index.append(j.get("index"))
            self.names.append(str(b.get("name", "")))
        ee = tree.get("end_effector") or []
        self.ee_body = int(ee[0]["body"]) if ee else len(self.parents) - 1
        self.ee_offset = _matrix(ee[0]["offset"]) if ee else np.eye(4)

    def body_poses(self, q: Sequence[float]) -> FloatArray:
        """World pose of every body, shape (bodies, 4, 4)."""
        qa = np.asarray([np.nan if v is None else v for v in q], dtype=np.float64)
        out = np.empty((len(self.parents), 4, 4))
        for i, parent in enumerate(self.parents):
            T = (self.base if parent < 0 else out[parent]) @ self.placements[i]
            k, idx = self.kinds[i], self.index[i]
            if idx is not None and k in ("revolute", "prismatic"):
                x = self.scales[i] * (qa[idx] if idx < len(qa) and np.isfinite(qa[idx]) else 0.0)
                M = np.eye(4)
                if k == "revolute":
                    M[:3, :3] = _rot(self.axes[i], x)
                else:
                    M[:3, 3] = self.axes[i] * x
                T = T @ M
            out[i] = T
        return out

    def end_effector(self, q: Sequence[float], poses: FloatArray | None = None) -> FloatArray:
        """World pose of the end-effector frame."""
        poses = self.body_poses(q) if poses is None else poses
        parent = self.base if self.ee_body < 0 else poses[self.ee_body]
        return parent @ self.ee_offset

    def segments(self, poses: FloatArray) -> list[list[float]]:
        """Line segments [x0 y0 z0 x1 y1 z1] from each body's origin to its parent's: the arm drawn
        as a stick figure where there are no meshes."""
        segs = []
        for i, parent in enumerate(self.parents):
            a = self.base[:3, 3] if parent < 0 else poses[parent][:3, 3]
            b = poses[i][:3, 3]
            if float(np.linalg.norm(b - a)) > 1e-6:
                segs.append([float(v) for v in (*a, *b)])
        return segs

    def joint_points(self, poses: FloatArray) -> list[list[float]]:
        """Origins of the moving joints (drawn as dots)."""
        return [[float(v) for v in poses[i][:3, 3]] for i, idx in enumerate(self.index) if idx is not None]
