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


def checked_vec3(value: ArrayLike, what: str) -> FloatArray:
    """``value`` as a (3,) float array; ModelError naming ``what`` if it is not 3 finite numbers."""
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} must be 3 finite numbers, got {value!r}")
    return arr


def checked_pose(value: ArrayLike | None, what: str) -> FloatArray:
    """``value`` as a 4x4 float array (identity for None); ModelError naming ``what`` if not finite 4x4."""
    if value is None:
        return np.eye(4)
    arr = np.array(value, dtype=np.float64)
    if arr.shape != (4, 4) or not np.all(np.isfinite(arr)):
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
        axis = checked_vec3(self.axis, f"axis of joint {self.name!r}")
        if not (math.isfinite(self.armature) and self.armature >= 0.0):
            raise ModelError(f"joint {self.name!r}: armature must be finite and >= 0, got {self.armature}")
        if self.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            norm = float(np.linalg.norm(axis))
            if norm < 1e-12:
                raise ModelError(f"joint {self.name!r} has a zero axis")
            axis = axis / norm
        object.__setattr__(self, "axis", tuple(float(a) for a in axis))
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


@dataclass(frozen=True)
class Inertia:
    """Mass [kg], center of mass [m, body frame] and rotational inertia about it [kg·m², body axes]."""

    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotational: tuple[tuple[float, float, float], ...] = ((0.0,) * 3,) * 3

    def __post_init__(self) -> None:
        if not math.isfinite(self.mass) or self.mass < 0.0:
            raise ModelError(f"mass must be finite and >= 0, got {self.mass}")
        com = checked_vec3(self.com, "center of mass")
        rot = np.asarray(self.rotational, dtype=np.float64)
        if rot.shape != (3, 3) or not np.all(np.isfinite(rot)):
            raise ModelError("rotational inertia must be a finite 3x3 matrix")
        if not np.allclose(rot, rot.T, rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(rot).max()))):
            raise ModelError("rotational inertia must be symmetric")
        object.__setattr__(self, "mass", float(self.mass))
        object.__setattr__(self, "com", tuple(float(c) for c in com))
        object.__setattr__(self, "rotational", tuple(tuple(float(v) for v in row) for row in rot))

    @classmethod
    def zero(cls) -> Inertia:
        return cls()

    @property
    def com_array(self) -> FloatArray:
        return np.array(self.com)

    @property
    def rotational_array(self) -> FloatArray:
        return np.array(self.rotational)


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
