"""MJCF bodies: the body tree walked in MuJoCo's order into the model, with sites and geoms named as MuJoCo does.

A body with several joints, or a hinge/ball whose ``pos`` is off the body origin, becomes a chain of
massless bodies named ``<body>__<joint>``; the last body of the chain carries the MuJoCo body's
name, inertia, geoms and sites. A free body's file pose is its default pose (like MuJoCo's
``qpos0``); with ``align``/``alignfree`` its frame moves to the principal axes MuJoCo picks.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import ModelError
from hebictl.formats import geometry
from hebictl.formats.mjcf.content import body_content
from hebictl.formats.mjcf.context import FLEX_FREE, Ctx, Item, ReadContext
from hebictl.formats.mjcf.defaults import element_class, keyword, lookup, vector
from hebictl.formats.mjcf.document import asset_path
from hebictl.formats.mjcf.joints import JointSpec, joint_spec
from hebictl.formats.mjcf.mass import body_inertia
from hebictl.formats.mjcf.poses import geom_shape, pose, shape_pose
from hebictl.formats.rotations import MJMINVAL, identity4, inverse_transform, matrix_quat, transform
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind


def world_content(rc: ReadContext, builder: ModelBuilder, wb: etree._Element, T: FloatArray, ctx: Ctx) -> None:
    """The children of a ``<worldbody>``: top-level bodies, world sites and world geoms."""
    for item in body_content(rc, wb, T, ctx):
        if item.tag == "body":
            body(rc, builder, item, -1, top=True)
        elif item.tag == "site":
            site(rc, item, -1)
        elif item.tag == "geom":
            cls = element_class(rc, item.elem, item.ctx)
            rc.register("geom", item)
            rc.world_geoms.append({"type": keyword(rc, item.elem, "geom", "type", item.ctx, "sphere", cls),
                                   "line": item.elem.sourceline})
        elif item.tag in ("joint", "freejoint"):
            raise rc.fail("World body cannot have joints", item.elem)
        elif item.tag == "inertial":
            raise rc.fail("world body cannot have <inertial>", item.elem)


def site(rc: ReadContext, item: Item, body: int) -> None:
    """A site, kept for the model's frames of kind ``"site"``."""
    name = rc.register("site", item)
    cls = element_class(rc, item.elem, item.ctx)
    T = item.T @ shape_pose(rc, item.elem, "site", item.ctx, cls)[0]
    rc.site_frames.append((name, T, body))


def body(rc: ReadContext, builder: ModelBuilder, item: Item, parent: int, top: bool) -> float:
    """Add one MuJoCo body (and its subtree); return the mass welded to its parent (0 if it moves)."""
    el, ctx = item.elem, item.ctx

    if el.get("childclass") and el.get("childclass") not in ctx.doc.defaults:
        raise rc.fail(f"unknown default class name {el.get('childclass')!r}", el)

    name = rc.register("body", item)
    sub = replace(ctx, childclass=el.get("childclass") or ctx.childclass)
    P = item.T @ pose(rc, el, "body", ctx)
    items = list(body_content(rc, el, identity4(), sub))
    joints = [i for i in items if i.tag in ("joint", "freejoint")]
    inertia = body_inertia(rc, el, name, items, ctx.doc)

    meta: dict[str, Any] = {"line": el.sourceline, "file": rc.where(el)[0]}
    if el.get("mocap") == "true":
        meta["mocap"] = True

    geoms = [geom_meta(rc, i) for i in items if i.tag == "geom"]
    if geoms:
        meta["geoms"] = geoms

    # joints: MuJoCo applies them in order, each about its anchor in the (moving) body frame
    specs = [joint_spec(rc, j, top) for j in joints]
    _check_joints(rc, name, el, specs, items)
    align = identity4()
    if [s.kind for s in specs] == [JointKind.FREE]:
        if not top:
            raise rc.fail("free joint can only be used on top level", joints[0].elem)
        index, align = _add_free_body(rc, builder, name, parent, P, specs[0], inertia, meta, el)
    elif not specs:
        index = add_body(rc, builder, name, parent, P, Joint.fixed(), inertia, meta, el)
    else:
        index = _add_joint_chain(rc, builder, name, parent, P, specs, inertia, meta, el)

    # sites and children are posed in the MuJoCo body frame: undo the free body's alignment
    inv_align = inverse_transform(align)
    for i in items:
        if i.tag == "site":
            site(rc, replace(i, T=inv_align @ i.T), index)
        elif i.tag == "geom":
            rc.register("geom", i)

    welded = inertia.mass
    for i in items:
        if i.tag == "body":
            welded += body(rc, builder, replace(i, T=inv_align @ i.T), index, top=False)

    if not specs:
        return welded

    if welded < MJMINVAL:  # MuJoCo's rule: what moves with a joint must have mass
        raise rc.fail(f"mass and inertia of moving bodies must be larger than mjMINVAL (body {name!r} and the "
                      "bodies welded to it have no mass)", el)

    return 0.0


def _check_joints(rc: ReadContext, name: str, el: etree._Element, specs: list[JointSpec], items: list[Item]) -> None:
    """MuJoCo's rules for the joints of one body (at most 6 dofs, a free joint alone, no rotation after a ball)."""
    kinds = [s.kind for s in specs]
    if JointKind.FREE in kinds and len(kinds) > 1:
        raise rc.fail(f"more than 6 dofs in body {name!r}" if sum(k.nv for k in kinds) > 6 else
                      f"a free joint must be the only joint of body {name!r}", el)
    for a, b in itertools.pairwise(kinds):
        if a is JointKind.BALL and b in (JointKind.BALL, JointKind.REVOLUTE):
            raise rc.fail(f"ball followed by rotation in body {name!r}", el)
    if sum(k.nv for k in kinds) > 6:
        raise rc.fail(f"more than 6 dofs in body {name!r}", el)
    if kinds and any(i.tag == "body" and i.elem.get(FLEX_FREE) for i in items):
        raise rc.fail(f"body {name!r} has joints but no flex vertices/nodes are pinned to it", el)


def _add_free_body(rc: ReadContext, builder: ModelBuilder, name: str, parent: int, P: FloatArray, spec: JointSpec,
                   inertia: Inertia, meta: dict[str, Any], el: etree._Element) -> tuple[int, FloatArray]:
    """A body on a free joint, its file pose kept as its default pose; returns its index and alignment."""
    align = identity4()
    if spec.align and inertia.mass > 0:
        # the body frame moves to its inertial frame, with MuJoCo's choice of principal axes
        moments, R_in = geometry.principal_axes(np.array(inertia.rotational))
        align = transform(R_in, inertia.com)
        inertia = Inertia(inertia.mass, (0.0, 0.0, 0.0), np.diag(moments))
    X = P @ align
    if not np.all(np.isfinite(X)):
        raise rc.fail(f"pose of body {name!r} is not finite (positions too large?)", el)
    meta["default_position"] = tuple(float(v) for v in X[:3, 3])
    meta["default_quaternion"] = tuple(float(v) for v in matrix_quat(X[:3, :3]))
    return add_body(rc, builder, name, parent, identity4(), spec.joint, inertia, meta, el), align


def _add_joint_chain(rc: ReadContext, builder: ModelBuilder, name: str, parent: int, P: FloatArray,
                     specs: list[JointSpec], inertia: Inertia, meta: dict[str, Any], el: etree._Element) -> int:
    """A body on its joints: one massless ``<body>__<joint>`` per joint whose anchor is off the body origin
    or that is not the last; the last body carries the MuJoCo body. Returns that body's index."""
    prev_anchor = np.zeros(3)
    at = parent
    L = P
    for k, spec in enumerate(specs):
        place = L @ transform(None, spec.anchor - prev_anchor) @ spec.offset
        last = k == len(specs) - 1
        if last and not np.any(spec.anchor):
            return add_body(rc, builder, name, at, place, spec.joint, inertia, meta, el)
        chain_name = rc.unique_body(f"{name}__{spec.joint.name}")
        at = add_body(rc, builder, chain_name, at, place, spec.joint, None, {"synthetic": "mjcf joint chain"}, el)
        L = identity4()
        prev_anchor = spec.anchor

    return add_body(rc, builder, name, at, transform(None, -prev_anchor), Joint.fixed(), inertia, meta, el)


def add_body(rc: ReadContext, builder: ModelBuilder, name: str, parent: int, placement: FloatArray, joint: Joint,
             inertia: Inertia | None, meta: dict[str, Any], el: etree._Element) -> int:
    """``builder.add_body``, its refusals reported at the element."""
    try:
        return builder.add_body(name, parent, placement, joint, inertia, meta)
    except ModelError as exc:
        raise rc.fail(str(exc), el) from None


def geom_meta(rc: ReadContext, item: Item) -> dict[str, Any]:
    """What the model keeps of a geom: type, pose in the body frame, size and mesh file (found or not)."""
    el, ctx = item.elem, item.ctx
    cls = element_class(rc, el, ctx)
    T, half = geom_shape(rc, item, cls)
    out: dict[str, Any] = {"type": keyword(rc, el, "geom", "type", ctx, "sphere", cls),
                           "pose": T.tolist()}
    size = vector(rc, el, "geom", "size", ctx, None, None, cls)
    if size is not None:
        out["size"] = size.tolist()

    if half is not None:
        out["half_length"] = half

    for key in ("mesh", "name", "rgba", "material"):
        v = lookup(rc, el, "geom", key, ctx, cls)
        if v is not None:
            out[key] = item.ctx.name(v) if key == "name" else v

    if out["type"] == "mesh" and "mesh" in out:
        mesh = ctx.doc.meshes.get(out["mesh"])
        if mesh is not None and mesh.get("file"):
            path = asset_path(rc, mesh.get("file", ""), ctx.doc, mesh=True, el=mesh)
            found = path is not None and limits.is_regular_file(path)
            out["mesh_path"] = str(path) if found else None
            if not found and mesh.get("file") not in rc.missing_meshes:
                rc.missing_meshes.append(mesh.get("file", ""))

    return out
