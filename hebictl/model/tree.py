"""The one in-memory robot model every format builds: bodies, joints and named frames.

Every reader (HRDF, URDF, SDF, MJCF, ...) produces the same structure through
:class:`hebictl.model.builder.ModelBuilder`, so kinematics, dynamics, export and the controller
never care where a model came from. This module holds only the plain data types (no import of
the builder or of :class:`~hebictl.model.robot.RobotModel`), so every other model module can
depend on it without a cycle.

Conventions (shared with pinocchio where it has one):

* Bodies are stored in topological order: a body's parent always precedes it. ``parent == -1``
  means the body hangs from the model's base frame.
* A body's frame is ``parent_frame @ placement @ joint_motion(q)``: ``placement`` is the joint
  frame in the parent body frame at ``q = 0``, the joint then moves the child about/along
  ``axis`` (expressed in the joint frame).
* Inertia is given about the body's center of mass, in body-frame axes.
* Joint velocities of ball and free joints are *local* (child-frame) angular/linear velocities,
  as in pinocchio; their position coordinates store quaternions as ``w x y z`` (MuJoCo order),
  free joints as ``x y z qw qx qy qz``.
* A joint's ``scale`` multiplies its coordinate before it moves the body (HRDF ``gear_ratio`` g
  is ``scale = 1/g``); efforts follow by the chain rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.errors import ModelError


class JointKind(IntEnum):
    """Joint types the kinematics kernels know. Values are used inside the compiled kernels."""

    FIXED = 0
    REVOLUTE = 1
    PRISMATIC = 2
    BALL = 3
    FREE = 4

    @property
    def nq(self) -> int:
        """Number of position coordinates."""
        return _NQ[self]

    @property
    def nv(self) -> int:
        """Number of velocity coordinates."""
        return _NV[self]


_NQ = {JointKind.FIXED: 0, JointKind.REVOLUTE: 1, JointKind.PRISMATIC: 1, JointKind.BALL: 4,
       JointKind.FREE: 7}
_NV = {JointKind.FIXED: 0, JointKind.REVOLUTE: 1, JointKind.PRISMATIC: 1, JointKind.BALL: 3,
       JointKind.FREE: 6}


#: Python number types the scalar fast paths accept as they are (anything else goes through numpy)
_PLAIN = (float, int, np.float64)
_EYE4 = np.eye(4)
_EYE4.flags.writeable = False


def checked_vec3(value: ArrayLike, what: str) -> FloatArray:
    """``value`` as a (3,) float array; ModelError naming ``what`` if it is not 3 finite numbers."""
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.shape != (3,) or not np.isfinite(arr).all():
        raise ModelError(f"{what} must be 3 finite numbers, got {value!r}")
    return arr


def _finite3(value: ArrayLike, what: str) -> tuple[float, float, float]:
    """:func:`checked_vec3` as a tuple of floats, without numpy for a tuple/list of 3 plain numbers.

    Readers build one Inertia and Joint per body; numpy's per-call overhead on 3 numbers was most
    of the model's build time on large files (flag.xml: 514 bodies).
    """
    if isinstance(value, tuple | list) and len(value) == 3 and all(type(v) in _PLAIN for v in value):
        x, y, z = (float(v) for v in value)
        if math.isfinite(x) and math.isfinite(y) and math.isfinite(z):
            return x, y, z
        raise ModelError(f"{what} must be 3 finite numbers, got {value!r}")
    x, y, z = checked_vec3(value, what).tolist()
    return x, y, z


def _norm3(x: float, y: float, z: float) -> float:
    """``np.linalg.norm`` of a 3-vector, bit for bit (same sum of squares: overflows to inf as it does)."""
    return math.sqrt(x * x + y * y + z * z)


def checked_pose(value: ArrayLike | None, what: str) -> FloatArray:
    """``value`` as a 4x4 float array (identity for None); ModelError naming ``what`` if not finite 4x4."""
    if value is None:
        return _EYE4.copy()  # a copy: callers own (and may modify) the pose they get
    arr = np.array(value, dtype=np.float64)
    if arr.shape != (4, 4) or not np.isfinite(arr).all():
        raise ModelError(f"{what} must be a finite 4x4 homogeneous transform")
    return arr


@dataclass(frozen=True)
class Joint:
    """A joint between a body and its parent.

    ``lower``/``upper`` bound the joint coordinate [rad or m] (1-DoF joints); ``max_velocity``
    [rad/s or m/s] and ``max_effort`` [N·m or N] are the actuator's ratings (``inf`` = unknown).
    """

    name: str
    kind: JointKind = JointKind.REVOLUTE
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    scale: float = 1.0
    lower: float = -math.inf
    upper: float = math.inf
    max_velocity: float = math.inf
    max_effort: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        axis = _finite3(self.axis, f"axis of joint {self.name!r}")
        if not (math.isfinite(self.armature) and self.armature >= 0.0):
            raise ModelError(f"joint {self.name!r}: armature must be finite and >= 0, got {self.armature}")
        if self.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            norm = _norm3(*axis)
            if norm < 1e-12:
                raise ModelError(f"joint {self.name!r} has a zero axis")
            axis = (axis[0] / norm, axis[1] / norm, axis[2] / norm)
        object.__setattr__(self, "axis", axis)
        if not math.isfinite(self.scale) or self.scale == 0.0:
            raise ModelError(f"joint {self.name!r}: scale must be finite and non-zero")
        if self.lower > self.upper:
            raise ModelError(f"joint {self.name!r}: lower limit {self.lower} > upper limit {self.upper}")

    @classmethod
    def fixed(cls, name: str = "") -> Joint:
        """A rigid connection (no degree of freedom)."""
        return cls(name=name, kind=JointKind.FIXED)

    @property
    def nq(self) -> int:
        return self.kind.nq

    @property
    def nv(self) -> int:
        return self.kind.nv


@dataclass(frozen=True, init=False)
class Inertia:
    """Mass [kg], center of mass [m, body frame] and rotational inertia about it [kg·m², body axes].

    Built from any 3-vector and 3x3 array-like (readers pass numpy arrays); stored as tuples so the
    value is immutable and hashable."""

    mass: float
    com: tuple[float, float, float]
    rotational: tuple[tuple[float, float, float], ...]

    def __init__(self, mass: float = 0.0, com: ArrayLike = (0.0, 0.0, 0.0),
                 rotational: ArrayLike = ((0.0,) * 3,) * 3) -> None:
        if not math.isfinite(mass) or mass < 0.0:
            raise ModelError(f"mass must be finite and >= 0, got {mass}")
        com3 = _finite3(com, "center of mass")
        rows: Any = rotational
        if not (type(rows) is tuple and len(rows) == 3
                and all(type(r) is tuple and len(r) == 3 and all(type(v) is float for v in r) for r in rows)):
            rot = np.asarray(rows, dtype=np.float64)
            if rot.shape != (3, 3):
                raise ModelError("rotational inertia must be a finite 3x3 matrix")
            rows = tuple(tuple(r) for r in rot.tolist())
        flat = rows[0] + rows[1] + rows[2]
        if not all(math.isfinite(v) for v in flat):
            raise ModelError("rotational inertia must be a finite 3x3 matrix")
        # np.allclose(rot, rot.T, rtol=0, atol=tol) on finite entries, without numpy's overhead
        tol = 1e-12 * max(1.0, max(abs(v) for v in flat))
        if not (abs(flat[1] - flat[3]) <= tol and abs(flat[2] - flat[6]) <= tol and abs(flat[5] - flat[7]) <= tol):
            raise ModelError("rotational inertia must be symmetric")
        object.__setattr__(self, "mass", float(mass))
        object.__setattr__(self, "com", com3)
        object.__setattr__(self, "rotational", rows)

    @classmethod
    def zero(cls) -> Inertia:
        """The massless inertia; one shared instance (it is immutable) for the plain class."""
        return _ZERO_INERTIA if cls is Inertia else cls()

    @property
    def com_array(self) -> FloatArray:
        return np.array(self.com)

    @property
    def rotational_array(self) -> FloatArray:
        return np.array(self.rotational)


_ZERO_INERTIA = Inertia()


@dataclass(frozen=True)
class Body:
    """A rigid body: where its joint frame sits on the parent, the joint, and its inertia."""

    name: str
    parent: int
    placement: FloatArray
    joint: Joint
    inertia: Inertia
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Frame:
    """A named frame rigidly attached to a body (``body == -1``: the base frame).

    ``kind`` groups frames for queries like ``forward_kinematics(q, frame="com")``; the order of
    frames of one kind is the order they were added.
    """

    kind: str
    body: int
    offset: FloatArray
    name: str | None = None
