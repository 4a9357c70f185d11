"""Rotations and rigid transforms that the readers and writers of several formats share.

Kept apart from the XML plumbing (:mod:`hebictl.formats._xml`) because they are maths, not
parsing: roll-pitch-yaw, quaternions, axis-angle and 4x4 homogeneous transforms, each with the
convention the formats document (URDF/SDF fixed-axis RPY, ``w x y z`` quaternions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray

#: Below this a vector counts as zero (MuJoCo's ``mjMINVAL``).
MJMINVAL = 1e-15


_EYE4 = np.eye(4)
_EYE4.flags.writeable = False


def identity4() -> FloatArray:
    """A new 4x4 identity the caller owns: a copy of one constant, ~7x cheaper than ``np.eye(4)``.

    Readers make several per body (tens of thousands on large MJCF files).
    """
    return _EYE4.copy()


def transform(R: FloatArray | None = None, p: Sequence[float] | FloatArray | None = None) -> FloatArray:
    """4x4 homogeneous transform from a rotation matrix and a translation [m]."""
    T = _EYE4.copy()
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def inverse_transform(T: FloatArray) -> FloatArray:
    out = _EYE4.copy()
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def rot_x(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(rpy: ArrayLike) -> FloatArray:
    """Fixed-axis roll-pitch-yaw [rad] (URDF/SDF): ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = (float(v) for v in np.asarray(rpy, dtype=np.float64).reshape(3))
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_rpy(R: FloatArray) -> tuple[float, float, float]:
    """Inverse of :func:`rpy_matrix` (pitch in [-pi/2, pi/2]).

    Yaw and pitch come first and roll is then fitted to what they leave, so the three stay
    consistent near pitch = ±90° (where roll and yaw alone are ill-conditioned) and the
    rebuilt matrix matches ``R`` to rounding error.
    """
    R = np.asarray(R, dtype=np.float64)
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    yaw = math.atan2(R[1, 0], R[0, 0])
    M = (rot_z(yaw) @ rot_y(pitch)).T @ R
    roll = math.atan2(M[2, 1], M[1, 1])
    return roll, pitch, yaw


def axis_angle_matrix(axis: ArrayLike, angle: float) -> FloatArray:
    """Rotation by ``angle`` [rad] about ``axis`` (any length, not zero)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def quat_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrix of a quaternion ``w x y z`` (normalised here)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_quat(R: FloatArray) -> FloatArray:
    """Quaternion ``w x y z`` (w >= 0) of a rotation matrix."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return -q if w < 0 else q


def z_to_vector(v: FloatArray) -> FloatArray:
    """MuJoCo's zaxis rule: the smallest rotation taking +z to the unit vector ``v``."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, v)
    s = float(np.linalg.norm(axis))
    if s < MJMINVAL:
        return np.eye(3) if v[2] > 0 else np.diag([1.0, -1.0, -1.0])
    return axis_angle_matrix(axis / s, math.atan2(s, float(v[2])))
