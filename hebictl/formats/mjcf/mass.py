"""MJCF inertia: a body's mass properties from ``<inertial>`` or from its geoms, as MuJoCo computes them.

MuJoCo's compiler rules are reproduced here (``inertiafromgeom``, ``inertiagrouprange``,
``boundmass``/``boundinertia``, ``balanceinertia``, ``settotalmass``'s scale, shell inertia and
mesh-fitted primitives refused) so that masses agree with ``mj_setConst`` to rounding; mesh
geoms take their volume from :mod:`hebictl.formats.mjcf.meshes`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.formats import geometry
from hebictl.formats.mjcf.attributes import ORIENT, floats, mjcf_bool
from hebictl.formats.mjcf.context import Compiler, Ctx, Doc, Item, ReadContext
from hebictl.formats.mjcf.defaults import element_class, keyword, lookup, number, vector
from hebictl.formats.mjcf.meshes import mesh_mass
from hebictl.formats.mjcf.poses import geom_shape, pose
from hebictl.formats.rotations import MJMINVAL
from hebictl.model.tree import Inertia

PRIMITIVES = {"sphere", "capsule", "cylinder", "ellipsoid", "box"}
VOLUME_TYPES = {"hfield", "sphere", "capsule", "cylinder", "ellipsoid", "box", "mesh", "sdf"}


def body_inertia(rc: ReadContext, el: etree._Element, name: str, items: list[Item], doc: Doc) -> Inertia:
    """The inertia of one MuJoCo body: its ``<inertial>``, else the sum of its geoms (compiler rules applied)."""
    comp = doc.compiler
    inertials = [i for i in items if i.tag == "inertial"]
    if len(inertials) > 1:
        raise rc.fail(f"body {name!r} has more than one <inertial>", inertials[1].elem)
    if inertials and comp.inertiafromgeom != "true":
        props = inertial_properties(rc, inertials[0])
    elif comp.inertiafromgeom == "false":
        props = geometry.MassProperties(0.0, np.zeros(3), np.zeros((3, 3)))
    else:
        moving = any(i.tag in ("joint", "freejoint") for i in items)
        parts = [geom_mass(rc, i, name, moving) for i in items if i.tag == "geom"]
        props = geometry.combine(p for p in parts if p is not None)
    return mass_rules(rc, props, name, el, comp)


def mass_rules(rc: ReadContext, props: geometry.MassProperties, name: str, el: etree._Element,
               comp: Compiler) -> Inertia:
    """compiler boundmass/boundinertia/balanceinertia and settotalmass, and MuJoCo's A + B >= C check."""
    mass, I = props.mass, props.inertia

    if not (math.isfinite(mass) and np.all(np.isfinite(I)) and np.all(np.isfinite(props.com))):
        # e.g. a geom whose size or fromto is near 1e300: its volume or inertia overflows
        raise rc.fail(f"mass properties of body {name!r} overflow (mass {mass:.3g}); check its geom "
                      "sizes, positions and densities", el)

    evals, evecs = np.linalg.eigh(I)
    changed = False
    if comp.boundmass > 0 and mass < comp.boundmass:
        mass, changed = comp.boundmass, True

    if comp.boundinertia > 0 and np.any(evals < comp.boundinertia):
        evals, changed = np.maximum(evals, comp.boundinertia), True

    if evals[0] + evals[1] < evals[2] - MJMINVAL:
        if not comp.balanceinertia:
            raise rc.fail(f"inertia of body {name!r} must satisfy A + B >= C; use 'balanceinertia' to fix", el)
        evals, changed = np.full(3, evals.mean()), True

    if changed:
        I = evecs @ np.diag(evals) @ evecs.T

    com = props.com if props.mass > 0 else np.zeros(3)
    return Inertia(mass * rc.mass_scale, com, 0.5 * (I + I.T) * rc.mass_scale)


def inertial_properties(rc: ReadContext, item: Item) -> geometry.MassProperties:
    """An ``<inertial>`` element's mass, centre of mass and inertia in the body frame."""
    el, ctx = item.elem, item.ctx

    if el.get("pos") is None or el.get("mass") is None:
        raise rc.fail("<inertial> needs pos and mass", el)

    T = item.T @ pose(rc, el, "inertial", ctx)
    mass = float(floats(rc, el, el.get("mass", ""), "mass", 1)[0])
    if mass < 0:
        raise rc.fail(f"negative mass {mass} in <inertial>", el)

    if el.get("fullinertia") is not None:
        if any(el.get(a) is not None for a in ORIENT):
            raise rc.fail("<inertial>: at most one of 'fullinertia', 'quat', 'axisangle', 'xyaxes', 'zaxis', "
                          "'euler' can be specified", el)
        v = floats(rc, el, el.get("fullinertia", ""), "fullinertia", 6)
        I = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        if el.get("diaginertia") is not None:
            raise rc.fail("<inertial> cannot have both diaginertia and fullinertia", el)
    elif el.get("diaginertia") is not None:
        I = np.diag(floats(rc, el, el.get("diaginertia", ""), "diaginertia", 3))
    else:
        raise rc.fail("<inertial> needs diaginertia or fullinertia", el)

    R = T[:3, :3]
    return geometry.MassProperties(mass, T[:3, 3].copy(), R @ I @ R.T)


def geom_mass(rc: ReadContext, item: Item, body: str, moving: bool) -> geometry.MassProperties | None:
    """One geom's mass properties in the body frame (None: it adds none, e.g. outside inertiagrouprange)."""
    el, ctx = item.elem, item.ctx
    comp = ctx.doc.compiler
    cls = element_class(rc, el, ctx)
    gtype = keyword(rc, el, "geom", "type", ctx, "sphere", cls)
    group = int(number(rc, el, "geom", "group", ctx, 0.0, cls))
    lo, hi = comp.inertiagrouprange

    if not lo <= group <= hi:
        return None

    if gtype == "plane":
        if moving:
            raise rc.fail("plane only allowed in static bodies", el)
        return None

    fitted = lookup(rc, el, "geom", "mesh", ctx, cls)
    if gtype in PRIMITIVES and fitted is not None:
        raise rc.fail(f"geom in body {body!r} is a {gtype} fitted to mesh {fitted!r}: fitting primitives to "
                      "meshes is not supported; give the body an <inertial>", el)

    if gtype not in VOLUME_TYPES:
        raise rc.fail(f"geom type {gtype!r} in body {body!r}: inertia from it is not supported; give the body "
                      "an <inertial>", el)

    if mjcf_bool(keyword(rc, el, "geom", "shellinertia", ctx, "false", cls), "shellinertia", rc, el):
        raise rc.fail("shellinertia is not supported; give the body an <inertial>", el)

    T, half = geom_shape(rc, item, cls)
    mass_text = lookup(rc, el, "geom", "mass", ctx, cls)
    density = number(rc, el, "geom", "density", ctx, 1000.0, cls)
    if gtype in ("mesh", "sdf"):
        if mass_text is not None and float(floats(rc, el, mass_text, "mass", 1)[0]) == 0.0:
            return None  # a massless mesh adds nothing, whatever its shape (MuJoCo's tactile sensor meshes)
        props = mesh_mass(rc, el, ctx, cls, body)
        volume = props.mass  # computed with density 1
        if mass_text is not None:
            density = float(floats(rc, el, mass_text, "mass", 1)[0]) / volume
        local = geometry.MassProperties(props.mass * density, props.com, props.inertia * density)
        return local.transformed(T)

    if gtype == "hfield":
        gtype, size = "box", hfield_box(rc, el, ctx, cls)
    else:
        size = vector(rc, el, "geom", "size", ctx, (0.0, 0.0, 0.0), (1, 2, 3), cls)
        size = np.concatenate([size, np.zeros(3 - len(size))])

    if half is not None:
        if gtype in ("capsule", "cylinder"):
            size[1] = half
        else:  # box, ellipsoid: MuJoCo uses size[0] across the segment
            size[1:] = size[0], half

    need = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}[gtype]
    for k in range(need):
        if size[k] <= 0:
            raise rc.fail(f"size {k} must be positive in geom", el)

    volume, unit = _shape(gtype, size)
    mass = density * volume
    if mass_text is not None:
        mass = float(floats(rc, el, mass_text, "mass", 1)[0])

    return geometry.MassProperties(mass, T[:3, 3].copy(), T[:3, :3] @ (unit * mass) @ T[:3, :3].T)


def hfield_box(rc: ReadContext, el: etree._Element, ctx: Ctx, cls: str) -> FloatArray:
    """Half sizes of the box MuJoCo uses for a height field's inertia: (rx, ry, (elevation/2 + base)/2)."""
    name = lookup(rc, el, "geom", "hfield", ctx, cls)
    asset = next((h for a in ctx.doc.root.iterchildren("asset") for h in a.iterchildren("hfield")
                  if h.get("name") == name or (h.get("file") and Path(h.get("file", "")).stem == name)), None)
    if asset is None:
        raise rc.fail(f"hfield {name!r} not found in geom", el)
    size = floats(rc, asset, asset.get("size", ""), "size", 4)
    return np.array([size[0], size[1], (size[2] / 2.0 + size[3]) / 2.0])


def _shape(gtype: str, size: FloatArray) -> tuple[float, FloatArray]:
    """Volume [m³] and inertia per unit mass of a MuJoCo primitive."""
    if gtype == "sphere":
        return geometry.sphere_volume(size[0]), geometry.sphere_inertia(1.0, size[0])
    if gtype == "capsule":
        return geometry.capsule_volume(size[0], size[1]), geometry.capsule_inertia(1.0, size[0], size[1])
    if gtype == "cylinder":
        return geometry.cylinder_volume(size[0], size[1]), geometry.cylinder_inertia(1.0, size[0], size[1])
    if gtype == "ellipsoid":
        return geometry.ellipsoid_volume(*size[:3]), geometry.ellipsoid_inertia(1.0, *size[:3])
    return geometry.box_volume(*size[:3]), geometry.box_inertia(1.0, *size[:3])
