"""The model's data types (hebictl.model.tree): what a Joint and an Inertia accept and normalise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.errors import ModelError
from hebictl.model.tree import Inertia, Joint, JointKind, checked_pose, checked_vec3


@pytest.mark.parametrize(("kind", "nq", "nv"), [(JointKind.FIXED, 0, 0), (JointKind.REVOLUTE, 1, 1),
                                                (JointKind.PRISMATIC, 1, 1), (JointKind.BALL, 4, 3),
                                                (JointKind.FREE, 7, 6)])
def test_coordinate_counts_are_pinocchios(kind, nq, nv):
    """Position/velocity coordinates per joint kind, as pinocchio's joint models have them
    (quaternions for ball and free joints, local angular/linear velocities)."""
    assert (kind.nq, kind.nv) == (nq, nv)
    assert (Joint("j", kind).nq, Joint("j", kind).nv) == (nq, nv)


def test_joint_axis_is_normalised():
    """A 1-DoF joint's axis is stored as a unit vector of Python floats (so the kernels need not care)."""
    j = Joint("j", JointKind.PRISMATIC, axis=(0.0, 3.0, 4.0))
    assert j.axis == pytest.approx((0.0, 0.6, 0.8))
    assert all(type(a) is float for a in j.axis)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"axis": (0.0, 0.0, 0.0)}, "zero axis"),
    ({"axis": (1.0, 0.0)}, "3 finite numbers"),
    ({"axis": (1.0, math.nan, 0.0)}, "3 finite numbers"),
    ({"scale": 0.0}, "scale"),
    ({"scale": math.inf}, "scale"),
    ({"lower": 1.0, "upper": -1.0}, "lower limit"),
    ({"armature": -0.1}, "armature"),
])
def test_bad_joints_raise_model_error(kwargs, message):
    """A joint that cannot move a body sensibly is refused when it is made, naming the joint."""
    with pytest.raises(ModelError, match=message):
        Joint("elbow", **kwargs)


def test_fixed_joint_has_no_coordinates():
    assert Joint.fixed().kind is JointKind.FIXED and Joint.fixed().nv == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mass": -1.0}, "mass"),
    ({"mass": math.nan}, "mass"),
    ({"com": (0.0, 0.0)}, "3 finite numbers"),
    ({"rotational": ((1.0, 0.5, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))}, "symmetric"),
    ({"rotational": np.eye(2)}, "3x3"),
])
def test_bad_inertias_raise_model_error(kwargs, message):
    with pytest.raises(ModelError, match=message):
        Inertia(**kwargs)


def test_inertia_is_stored_as_floats_and_arrays_are_copies():
    """Inertia is immutable: the arrays it hands out are fresh copies."""
    rot = np.diag([1.0, 2.0, 3.0])
    inertia = Inertia(2, (0.1, 0.2, 0.3), rot)
    rot[0, 0] = 9.0
    assert inertia.mass == 2.0 and isinstance(inertia.mass, float)
    assert inertia.rotational_array[0, 0] == 1.0
    inertia.com_array[0] = 5.0
    assert inertia.com == (0.1, 0.2, 0.3)


def test_checked_helpers():
    """checked_pose: None is the identity, anything but a finite 4x4 is refused; checked_vec3 likewise."""
    assert np.array_equal(checked_pose(None, "x"), np.eye(4))
    with pytest.raises(ModelError, match="placement"):
        checked_pose(np.eye(3), "placement")
    with pytest.raises(ModelError, match="gravity"):
        checked_vec3([0, 0, math.inf], "gravity")
