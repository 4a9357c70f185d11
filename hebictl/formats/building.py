"""Model-building steps that the readers of several formats share (no format of their own).

The standard frames every link-based reader adds, the one-DoF stages a multi-axis joint type
(SDF/Drake universal, planar, screw...) becomes, and unique naming: the URDF and SDF readers
and the writers all need them, so they live here rather than in one reader that the others import.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from hebictl.errors import FormatError, ModelError
from hebictl.formats.rotations import transform
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import JointKind


@contextlib.contextmanager
def building(file: str | None) -> Iterator[None]:
    """Around a reader's work: floating-point overflow stays quiet and a model rule is a FormatError.

    Extreme values (a box of size 1e200, a mass of 1e308) overflow while inertia is computed; the
    reader or the model then refuses the non-finite result with an error naming the element
    ("rotational inertia must be finite", "mass properties of body 'b' overflow"), so numpy's
    RuntimeWarnings on the way would only be noise printed before the clean error. A
    :class:`~hebictl.errors.ModelError` raised while building becomes a
    :class:`~hebictl.errors.FormatError` naming ``file``, as through :func:`hebictl.load_model`.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        try:
            yield
        except ModelError as exc:
            raise FormatError(str(exc), file) from exc


def add_standard_frames(builder: ModelBuilder) -> None:
    """Frames every reader of a link-based format adds, so queries work on any model.

    * ``"com"``: one per body with mass, at its centre of mass with the body's axes (the bodies
      behind :attr:`RobotModel.masses`);
    * ``"output"`` and ``"end_effector"``: the frames of leaf bodies (no children), in body order.
    """
    bodies = builder.bodies
    has_child = {b.parent for b in bodies}
    for i, b in enumerate(bodies):
        if b.inertia.mass > 0.0:
            builder.add_frame("com", i, transform(None, b.inertia.com), b.name)
    for kind in ("output", "end_effector"):
        for i, b in enumerate(bodies):
            if i not in has_child:
                builder.add_frame(kind, i, None, b.name)


Stage = tuple[JointKind, np.ndarray, str, Mapping[str, float]]


def joint_stages(t: str, axes: Sequence[np.ndarray | None], limits: Sequence[Mapping[str, float]]) -> list[Stage]:
    """The one-DoF (or ball/fixed) joints an SDF or Drake joint type becomes, axes in the joint frame.

    Shared by the SDF and URDF readers (Drake's ``drake:joint`` types): each stage is (kind,
    axis, name suffix, limits); a chain of several stages gets massless bodies in between.
    """
    first, a2 = [*axes, None, None][:2]
    l1, l2 = [*limits, {}, {}][:2]
    z = np.array([0.0, 0.0, 1.0])
    if t in ("revolute", "continuous"):
        lim = dict(l1)
        if t == "continuous":
            lim.pop("lower", None)
            lim.pop("upper", None)
        return [(JointKind.REVOLUTE, _given(first, t), "", lim)]
    if t == "prismatic":
        return [(JointKind.PRISMATIC, _given(first, t), "", l1)]
    if t == "fixed":
        return [(JointKind.FIXED, z, "", {})]
    if t == "ball":
        return [(JointKind.BALL, z, "", {k: v for k, v in l1.items() if k in ("damping", "friction")})]
    if t in ("universal", "revolute2", "gearbox"):
        return [(JointKind.REVOLUTE, _given(first, t), "_axis1", l1),
                (JointKind.REVOLUTE, a2 if a2 is not None else z, "_axis2", l2)]
    if t == "screw":
        a1 = _given(first, t)
        return [(JointKind.REVOLUTE, a1, "_rotation", l1), (JointKind.PRISMATIC, a1, "_translation", {})]
    if t == "planar":
        x, y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
        return [(JointKind.PRISMATIC, x, "_x", {}), (JointKind.PRISMATIC, y, "_y", {}),
                (JointKind.REVOLUTE, z, "_theta", {})]
    raise AssertionError(t)


def _given(axis: np.ndarray | None, t: str) -> np.ndarray:
    """The first axis of a joint type that needs one; the readers refuse such a joint without it."""
    if axis is None:
        raise AssertionError(f"a {t} joint without an axis reached joint_stages")
    return axis


def unique(name: str, used: set[str], first_suffix: int = 2) -> str:
    """``name``, or ``name_2``, ``name_3``... whichever is not in ``used`` (which is updated).

    ``first_suffix`` is the number tried first after ``name`` itself.
    """
    out, k = name, first_suffix
    while out in used:
        out = f"{name}_{k}"
        k += 1
    used.add(out)
    return out
