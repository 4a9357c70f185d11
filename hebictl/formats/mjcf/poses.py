"""MJCF poses: ``pos`` and the orientation attributes (``quat``, ``axisangle``, ``euler``, ``xyaxes``,
``zaxis``) into transforms, and the pose ``fromto`` gives a geom or site.

Angles use the document's ``<compiler angle>`` (degrees by default) and euler angles its
``eulerseq`` (lower case: moving axes, upper case: fixed axes), as MuJoCo's compiler does.
"""

from __future__ import annotations

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.formats.mjcf.attributes import ORIENT, floats
from hebictl.formats.mjcf.context import Compiler, Ctx, Item, ReadContext
from hebictl.formats.mjcf.defaults import keyword, vector
from hebictl.formats.rotations import (
    MJMINVAL,
    axis_angle_matrix,
    quat_matrix,
    rot_x,
    rot_y,
    rot_z,
    transform,
    z_to_vector,
)

_AXIS_ROT = {"x": rot_x, "y": rot_y, "z": rot_z}


def rotation(rc: ReadContext, elem: etree._Element, tag: str, ctx: Ctx, cls: str | None = None) -> FloatArray:
    """Orientation from the element's own specifier, else from its defaults; identity if none."""
    own = [a for a in ORIENT if elem.get(a) is not None]
    if len(own) > 1:
        raise rc.fail(f"multiple orientation specifiers are not allowed: {', '.join(own)}", elem)
    if own:
        return orientation(rc, elem, own[0], elem.get(own[0]), ctx.doc.compiler)
    if tag in ("body", "frame", "inertial") or cls is None:
        return np.eye(3)
    d = ctx.doc.defaults[cls].get(tag, {})
    dflt = [a for a in ORIENT if a in d]
    return orientation(rc, elem, dflt[-1], d[dflt[-1]], ctx.doc.compiler) if dflt else np.eye(3)


def orientation(rc: ReadContext, elem: etree._Element, kind: str, text: str, comp: Compiler) -> FloatArray:
    """The rotation one orientation attribute (``kind``) writes."""
    if kind == "quat":
        q = floats(rc, elem, text, kind, 4)
        if np.linalg.norm(q) < MJMINVAL:
            raise rc.fail("quaternion has zero norm", elem)
        return quat_matrix(q)

    if kind == "axisangle":
        v = floats(rc, elem, text, kind, 4)
        if np.linalg.norm(v[:3]) < MJMINVAL:
            raise rc.fail("axisangle has a zero axis", elem)
        return axis_angle_matrix(v[:3], v[3] * comp.angle)

    if kind == "euler":
        v = floats(rc, elem, text, kind, 3) * comp.angle
        R = np.eye(3)
        for ch, a in zip(comp.eulerseq, v, strict=True):
            if a == 0.0:
                continue
            Ri = _AXIS_ROT[ch.lower()](float(a))
            R = R @ Ri if ch.islower() else Ri @ R
        return R

    if kind == "xyaxes":
        v = floats(rc, elem, text, kind, 6)
        x = v[:3] / _norm(v[:3], rc, elem)
        y = v[3:] - (v[3:] @ x) * x
        y = y / _norm(y, rc, elem)
        return np.column_stack([x, y, np.cross(x, y)])

    v = floats(rc, elem, text, kind, 3)  # zaxis
    return z_to_vector(v / _norm(v, rc, elem))


def pose(rc: ReadContext, elem: etree._Element, tag: str, ctx: Ctx, cls: str | None = None) -> FloatArray:
    """The element's ``pos`` and orientation as a transform (from its class too when ``cls`` is given)."""
    pos = vector(rc, elem, tag, "pos", ctx if cls else None, (0.0, 0.0, 0.0), 3, cls)
    return transform(rotation(rc, elem, tag, ctx, cls), pos)


def shape_pose(rc: ReadContext, elem: etree._Element, tag: str, ctx: Ctx,
               cls: str) -> tuple[FloatArray, float | None]:
    """Pose of a geom/site in its body frame; with ``fromto``, also the half length it implies."""
    fromto = vector(rc, elem, tag, "fromto", ctx, None, 6, cls)
    gtype = keyword(rc, elem, tag, "type", ctx, "sphere", cls)
    if fromto is not None and gtype in ("capsule", "cylinder", "box", "ellipsoid"):
        a, b = fromto[:3], fromto[3:]
        d = a - b  # MuJoCo points the shape's z axis from "to" back to "from"
        half = float(np.linalg.norm(d)) / 2.0
        if half < MJMINVAL:
            raise rc.fail("fromto points coincide", elem)
        return transform(z_to_vector(d / (2 * half)), (a + b) / 2.0), half
    return pose(rc, elem, tag, ctx, cls), None


def geom_shape(rc: ReadContext, item: Item, cls: str) -> tuple[FloatArray, float | None]:
    """A geom's pose in its body frame (frames applied) and fromto half length, cached on the item."""
    if item.shape is None:
        T, half = shape_pose(rc, item.elem, "geom", item.ctx, cls)
        item.shape = (item.T @ T, half)
    return item.shape


def _norm(v: FloatArray, rc: ReadContext, el: etree._Element) -> float:
    n = float(np.linalg.norm(v))
    if n < MJMINVAL:
        raise rc.fail("orientation vector has zero length", el)
    return n
