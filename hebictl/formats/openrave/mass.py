"""OpenRAVE XML transforms, geometries and ``<mass>`` rules, as ``xmlreaders-core.cpp`` applies them.

Transform elements compound in document order: ``<translation>`` adds to the translation (never
rotated), ``<rotationaxis x y z deg>``, ``<quat w x y z>`` and ``<rotationmat>`` (row-major 3x3)
pre-multiply the rotation only. Geometry transforms are relative to their body.

Mass (the last ``<mass>`` of a body, or of the last ``<Body>`` element with its name):

* none: a 1 kg sphere of radius 1 m at the body origin (OpenRAVE's default);
* ``type="sphere"`` / ``"box"``: ``<radius>``/``<extents>`` (half extents) with ``<total>`` mass or
  ``<density>`` (default density 1 kg/m³), centred at the body origin;
* ``type="mimicgeom"``: the union of the body's box, sphere and cylinder geoms at their poses,
  with ``<density>``, or scaled to ``<total>`` (meshes carry no mass);
* ``type="custom"``: ``<total>``, ``<com>`` and a row-major ``<inertia>`` about the COM.

Cylinder geoms are along their frame's y axis (OpenRAVE rotates its internal z-axis cylinder by
90° about x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats import geometry
from hebictl.formats._xml import parse_floats
from hebictl.formats.rotations import axis_angle_matrix, quat_matrix, rot_x, transform

TRANSFORM_TAGS = ("translation", "rotationaxis", "quat", "rotationmat")
_CYL_TO_Y = rot_x(math.pi / 2)


def tag(el: etree._Element) -> str:
    """Lower-case local tag name (OpenRAVE's tags are case-insensitive)."""
    t = el.tag
    return t.rsplit("}", 1)[-1].lower() if isinstance(t, str) else ""


def numbers(el: etree._Element, file: str, count: int | tuple[int, ...] | None = None) -> FloatArray:
    return parse_floats(el.text or "", el, "text", file, count)


def apply_transform_tag(T: FloatArray, el: etree._Element, file: str, scale: float = 1.0) -> bool:
    """Compound one transform element into ``T`` in place; False if ``el`` is not one."""
    t = tag(el)
    if t == "translation":
        T[:3, 3] += numbers(el, file, 3) * scale
    elif t == "rotationaxis":
        v = numbers(el, file, 4)
        if np.linalg.norm(v[:3]) < 1e-12:
            raise FormatError("<rotationaxis> has a zero axis", file, el.sourceline)
        T[:3, :3] = axis_angle_matrix(v[:3], math.radians(v[3])) @ T[:3, :3]
    elif t == "quat":
        q = numbers(el, file, 4)
        if np.linalg.norm(q) < 1e-12:
            raise FormatError("<quat> is zero", file, el.sourceline)
        T[:3, :3] = quat_matrix(q) @ T[:3, :3]
    elif t == "rotationmat":
        M = numbers(el, file, 9).reshape(3, 3)
        U, _, Vt = np.linalg.svd(M)
        T[:3, :3] = (U @ Vt) @ T[:3, :3]
    else:
        return False
    return True


@dataclass
class Geom:
    """One ``<Geom>``: type, sizes [m], pose in the body frame, files referenced."""

    kind: str
    pose: FloatArray
    params: dict[str, Any] = field(default_factory=dict)
    line: int | None = None

    def metadata(self) -> dict[str, Any]:
        return {"type": self.kind, "pose": self.pose.tolist(), "line": self.line, **self.params}

    def mass(self, density: float) -> geometry.MassProperties | None:
        """Solid of this geom at ``density`` [kg/m³], in the body frame (None for meshes)."""
        p, R = self.pose[:3, 3], self.pose[:3, :3]
        if self.kind == "box":
            e = np.asarray(self.params["extents"])
            m = density * geometry.box_volume(*e)
            inertia = geometry.box_inertia(m, *e)
        elif self.kind == "sphere":
            r = self.params["radius"]
            m = density * geometry.sphere_volume(r)
            inertia = geometry.sphere_inertia(m, r)
        elif self.kind == "cylinder":
            r, h = self.params["radius"], self.params["height"]
            m = density * geometry.cylinder_volume(r, 0.5 * h)
            inertia = _CYL_TO_Y @ geometry.cylinder_inertia(m, r, 0.5 * h) @ _CYL_TO_Y.T
        else:
            return None
        return geometry.MassProperties(m, p.copy(), R @ inertia @ R.T)


def read_geom(el: etree._Element, file: str) -> Geom:
    gtype = (el.get("type") or "").lower()
    if gtype not in ("box", "sphere", "cylinder", "trimesh"):
        raise FormatError(f"<Geom> type {el.get('type')!r} is not box, sphere, cylinder or trimesh", file,
                          el.sourceline)
    T = np.eye(4)
    g = Geom(gtype, T, {}, el.sourceline)
    for c in el:
        t = tag(c)
        if apply_transform_tag(T, c, file):
            continue
        if t == "extents":
            g.params["extents"] = numbers(c, file, 3).tolist()
        elif t in ("radius", "height"):
            g.params[t] = float(numbers(c, file, 1)[0])
        elif t in ("data", "render", "collision"):
            parts = (c.text or "").split()
            if parts:
                try:
                    scale = [float(x) for x in parts[1:4]] or [1.0]
                except ValueError:
                    scale = [math.nan]
                if not all(math.isfinite(x) for x in scale):
                    raise FormatError(f"<{c.tag}> scale {' '.join(parts[1:4])!r} is not a list of finite numbers",
                                      file, c.sourceline)
                g.params[t] = {"file": parts[0], "scale": scale}
        elif t in ("diffusecolor", "ambientcolor", "transparency"):
            g.params[t] = (c.text or "").strip()
    need = {"box": ("extents",), "sphere": ("radius",), "cylinder": ("radius", "height"), "trimesh": ()}[gtype]
    for key in need:
        if key not in g.params:
            raise FormatError(f"<Geom type={gtype!r}> needs <{key}>", file, el.sourceline)
    return g


def read_mass(el: etree._Element | None, geoms: list[Geom], file: str) -> geometry.MassProperties:
    """A body's mass properties in its frame (see the module docstring)."""
    if el is None:
        return geometry.MassProperties(1.0, np.zeros(3), geometry.sphere_inertia(1.0, 1.0))
    mtype = (el.get("type") or "sphere").lower()
    if mtype not in ("sphere", "box", "mimicgeom", "custom"):
        raise FormatError(f"<mass> type {mtype!r} is not sphere, box, mimicgeom or custom", file, el.sourceline)
    vals: dict[str, FloatArray] = {}
    for c in el:
        t = tag(c)
        if t in ("total", "density", "radius"):
            vals[t] = numbers(c, file, 1)
        elif t in ("extents", "com"):
            vals[t] = numbers(c, file, 3)
        elif t == "inertia":
            vals[t] = numbers(c, file, 9)
    total = float(vals["total"][0]) if "total" in vals else None
    density = float(vals["density"][0]) if "density" in vals else 1.0
    if mtype == "custom":
        m = total if total is not None else 1.0
        I = vals["inertia"].reshape(3, 3) if "inertia" in vals else geometry.sphere_inertia(m, 1.0)
        return geometry.MassProperties(m, vals.get("com", np.zeros(3)), 0.5 * (I + I.T))
    if mtype == "mimicgeom":
        parts = [p for p in (g.mass(density if total is None else 1000.0) for g in geoms) if p is not None]
        if total is not None:
            s = total / sum(p.mass for p in parts) if parts and sum(p.mass for p in parts) > 0 else 0.0
            parts = [geometry.MassProperties(p.mass * s, p.com, p.inertia * s) for p in parts]
        return geometry.combine(parts)
    if mtype == "box":
        e = vals.get("extents", np.ones(3))
        m = total if total is not None else density * geometry.box_volume(*e)
        return geometry.MassProperties(m, np.zeros(3), geometry.box_inertia(m, *e))
    r = float(vals["radius"][0]) if "radius" in vals else 1.0
    m = total if total is not None else density * geometry.sphere_volume(r)
    return geometry.MassProperties(m, np.zeros(3), geometry.sphere_inertia(m, r))


def manip_transform(el: etree._Element, file: str) -> FloatArray:
    """The transform elements directly under ``el``, compounded."""
    T = np.eye(4)
    for c in el:
        apply_transform_tag(T, c, file)
    return T


__all__ = [
    "TRANSFORM_TAGS",
    "Geom",
    "apply_transform_tag",
    "manip_transform",
    "numbers",
    "read_geom",
    "read_mass",
    "tag",
    "transform",
]
