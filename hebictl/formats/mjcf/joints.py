"""MJCF joints: ``hinge``, ``slide``, ``ball`` and ``free`` into hebictl joints, with MuJoCo's limits and ``ref``.

hebictl coordinates equal MuJoCo's ``qpos``: a hinge or slide with ``ref`` reaches the file's pose
at ``q = ref`` (the placement offset of :class:`JointSpec`). With ``autolimits`` (the default)
only a ``range`` with ``range[0] < range[1]`` limits a joint; the effort bound comes from the
joint's ``actuatorfrcrange`` and its actuators (:mod:`hebictl.formats.mjcf.actuators`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import ModelError
from hebictl.formats.mjcf.actuators import effort_bound
from hebictl.formats.mjcf.attributes import mjcf_bool
from hebictl.formats.mjcf.context import Compiler, Item, ReadContext
from hebictl.formats.mjcf.defaults import element_class, keyword, number, vector
from hebictl.formats.rotations import MJMINVAL, axis_angle_matrix, identity4, transform
from hebictl.model.tree import Joint, JointKind

_KINDS = {"hinge": JointKind.REVOLUTE, "slide": JointKind.PRISMATIC, "ball": JointKind.BALL, "free": JointKind.FREE}


@dataclass
class JointSpec:
    """One MuJoCo joint as the body walk places it."""

    kind: JointKind
    joint: Joint
    anchor: FloatArray  # the joint's position in the body frame (zero for slides and free joints)
    offset: FloatArray  # placement that puts the body at its file pose when q = ref
    align: bool = False  # a free joint whose body frame moves to its principal axes (align/alignfree)


def joint_spec(rc: ReadContext, item: Item, top: bool) -> JointSpec:
    """One joint: hebictl Joint, its anchor in the body frame and the placement offset for ``ref``."""
    el, ctx = item.elem, item.ctx
    comp = ctx.doc.compiler
    name = rc.register("joint", item)
    extra = rc.joint_extras.get(name, {})
    if item.tag == "freejoint":
        align = el.get("align", "auto")
        aligned = comp.alignfree if align == "auto" else mjcf_bool(align, "align", rc, el)
        joint = Joint(name, JointKind.FREE, metadata={"mjcf_type": "free", "line": el.sourceline},
                      max_velocity=extra.get("max_velocity", math.inf), max_effort=extra.get("max_effort", math.inf))
        return JointSpec(JointKind.FREE, joint, np.zeros(3), identity4(), align=aligned)

    cls = element_class(rc, el, ctx)
    jtype = keyword(rc, el, "joint", "type", ctx, "hinge", cls)
    if jtype not in _KINDS:
        raise rc.fail(f"joint {name!r} has unknown type {jtype!r}; expected hinge, slide, ball or free", el)

    kind = _KINDS[jtype]
    meta: dict[str, Any] = {"mjcf_type": jtype, "line": el.sourceline}
    if kind is JointKind.FREE:
        joint = Joint(name, kind, metadata=meta,
                      damping=number(rc, el, "joint", "damping", ctx, 0.0, cls),
                      friction=number(rc, el, "joint", "frictionloss", ctx, 0.0, cls),
                      armature=number(rc, el, "joint", "armature", ctx, 0.0, cls))
        return JointSpec(kind, joint, np.zeros(3), identity4(), align=comp.alignfree)

    # a joint inside <frame> elements has its anchor and axis moved by them
    anchor = item.T[:3, :3] @ vector(rc, el, "joint", "pos", ctx, (0.0, 0.0, 0.0), 3, cls) + item.T[:3, 3]
    axis = item.T[:3, :3] @ vector(rc, el, "joint", "axis", ctx, (0.0, 0.0, 1.0), 3, cls)
    ax, ay, az = axis.tolist()  # scalar norm: numpy's overhead per joint was a large part of a load

    if kind is not JointKind.BALL and math.sqrt(ax * ax + ay * ay + az * az) < MJMINVAL:
        raise rc.fail(f"joint {name!r}: axis too small", el)

    angular = kind in (JointKind.REVOLUTE, JointKind.BALL)
    unit = comp.angle if angular else 1.0
    lower, upper = -math.inf, math.inf
    rng = vector(rc, el, "joint", "range", ctx, None, 2, cls)
    is_limited = _is_limited(rc, item, name, cls, rng, comp)
    if is_limited:
        rng = np.zeros(2) if rng is None else rng
        if kind is not JointKind.BALL and not rng[0] < rng[1]:  # MuJoCo checks hinges and slides only
            raise rc.fail(f"range[0] should be smaller than range[1] in joint {name!r}", el)
        if kind is JointKind.BALL:
            meta["range"] = (float(rng[0] * unit), float(rng[1] * unit))
        else:
            lower, upper = float(rng[0] * unit), float(rng[1] * unit)

    ref = number(rc, el, "joint", "ref", ctx, 0.0, cls) * (unit if kind is not JointKind.BALL else 1.0)

    for key in ("springref", "stiffness", "armature"):
        v = number(rc, el, "joint", key, ctx, 0.0, cls)
        if v:
            meta[key] = v * unit if key == "springref" and angular else v

    if ref:
        meta["ref"] = ref

    max_effort = effort_bound(rc, el, name, ctx, cls)

    if not is_limited:
        lower, upper = extra.get("lower", lower), extra.get("upper", upper)

    if rc.actuators.get(name):
        meta["actuators"] = [{k: v for k, v in a.items() if k != "elem"} for a in rc.actuators[name]]

    try:
        joint = Joint(name, kind, (ax, ay, az) if kind is not JointKind.BALL else (0.0, 0.0, 1.0),
                      lower=lower, upper=upper, max_effort=max_effort,
                      max_velocity=extra.get("max_velocity", math.inf),
                      damping=number(rc, el, "joint", "damping", ctx, 0.0, cls),
                      friction=number(rc, el, "joint", "frictionloss", ctx, 0.0, cls),
                      armature=number(rc, el, "joint", "armature", ctx, 0.0, cls), metadata=meta)
    except ModelError as exc:
        raise rc.fail(str(exc), el) from None

    offset = identity4()
    if ref and kind is JointKind.REVOLUTE:
        offset = transform(axis_angle_matrix(joint.axis, -ref))
    elif ref and kind is JointKind.PRISMATIC:
        offset = transform(None, -ref * np.array(joint.axis))

    if kind is JointKind.PRISMATIC:
        anchor = np.zeros(3)  # a slide's anchor does not move the body

    return JointSpec(kind, joint, anchor, offset)


def _is_limited(rc: ReadContext, item: Item, name: str, cls: str, rng: FloatArray | None, comp: Compiler) -> bool:
    """Whether the joint has a position limit: ``limited``, else (``auto``) MuJoCo's autolimits rule."""
    el = item.elem
    limited = keyword(rc, el, "joint", "limited", item.ctx, "auto", cls)
    if limited != "auto":
        return mjcf_bool(limited, "limited", rc, el)
    if rng is not None and not comp.autolimits:
        raise rc.fail(f"joint {name!r} has `range` but not `limited`. set the autolimits=\"true\" compiler "
                      "option, specify `limited` explicitly (\"true\" or \"false\"), or remove `range`", el)
    # MuJoCo's autolimits: only a proper interval limits the joint
    return rng is not None and bool(rng[0] < rng[1])
