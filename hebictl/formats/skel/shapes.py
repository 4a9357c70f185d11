"""DART's SKEL shapes and values: transforms, shape parameters and volumes, and the inertia DART derives.

A SKEL ``<inertia>`` with a positive ``<mass>`` and no ``<moment_of_inertia>`` takes its
rotational inertia from the body's rigid shapes (visualization and collision shapes alike), as
dartpy 6.20's ``SkelParser`` does: the mass is split between the shapes in proportion to their
volumes (a shape without a finite positive volume, like a plane, weighs as 1 m³), each shape's
inertia is placed at its ``<transformation>``, and the composite is taken about the body's declared
centre of mass ``<offset>`` (parallel-axis theorem); the centre of mass itself stays at
``<offset>``. (DART before 6.16 used only the first shape, in its own frame.) Meshes and
multi-spheres count as the solid box of their bounding box, as in DART.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats import geometry
from hebictl.formats._xml import elements, local_name, parse_floats
from hebictl.formats.rotations import rot_x, rot_y, rot_z, transform

#: shape element -> its parameters (child elements) and how many numbers each holds
SHAPE_PARAMS: dict[str, dict[str, int]] = {
    "box": {"size": 3},
    "sphere": {"radius": 1},
    "ellipsoid": {"size": 3},
    "cylinder": {"radius": 1, "height": 1},
    "capsule": {"radius": 1, "height": 1},
    "cone": {"radius": 1, "height": 1},
    "plane": {},
    "multi_sphere": {},
    "mesh": {},
}


@dataclass(frozen=True)
class Shape:
    """One SKEL shape: kind, its numeric parameters, pose in the body frame, and file data."""

    kind: str
    params: dict[str, Any]
    pose: FloatArray
    role: str  # "visualization" | "collision"
    line: int | None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "role": self.role, "pose": self.pose.tolist()}
        out.update({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.params.items()})
        out.update(self.extra)
        return out


def text_floats(elem: etree._Element, tag: str, file: str, count: int | None = None) -> FloatArray:
    """Numbers in the text of ``elem``'s child ``tag`` (required)."""
    child = elem.find(tag)
    if child is None:
        raise FormatError(f"<{local_name(elem)}> is missing <{tag}>", file, elem.sourceline)
    return parse_floats(child.text or "", child, "text", file, count)


def read_shape(elem: etree._Element, role: str, pose: FloatArray, file: str, base_dir: Path | None) -> Shape:
    """Parse a ``<visualization_shape>``/``<collision_shape>``'s ``<geometry>``."""
    geom = elem.find("geometry")
    kinds = [] if geom is None else [c for c in elements(geom) if local_name(c) in SHAPE_PARAMS]
    if geom is None or not kinds:
        found = "" if geom is None else ", ".join(local_name(c) for c in elements(geom))
        raise FormatError(f"<{local_name(elem)}> needs a <geometry> with one of {', '.join(SHAPE_PARAMS)}"
                          + (f" (found {found})" if found else ""), file, elem.sourceline)
    g = kinds[0]
    kind = local_name(g)
    params: dict[str, Any] = {}
    for tag, n in SHAPE_PARAMS[kind].items():
        v = text_floats(g, tag, file, n)
        if np.any(v < 0):
            raise FormatError(f"<{kind}> <{tag}> must not be negative", file, g.sourceline)
        params[tag] = float(v[0]) if n == 1 else v
    extra: dict[str, Any] = {}
    if kind == "mesh":
        name_el = g.find("file_name")
        if name_el is None or not (name_el.text or "").strip():
            raise FormatError("<mesh> is missing <file_name>", file, g.sourceline)
        params["scale"] = text_floats(g, "scale", file, 3) if g.find("scale") is not None else np.ones(3)
        fname = name_el.text.strip()
        extra["file_name"] = fname
        # '..' and absolute paths followed as DART does; confined loads keep it inside the allowed folders
        path = limits.resolve_reference(fname, base_dir or Path.cwd(), file=file, line=name_el.sourceline,
                                        what="mesh <file_name>")
        extra["path"] = str(path)
    elif kind == "plane":
        params["normal"] = text_floats(g, "normal", file, 3) if g.find("normal") is not None else np.array([0, 0, 1.0])
    elif kind == "multi_sphere":
        spheres = []
        for s in g.findall("sphere"):
            spheres.append((float(text_floats(s, "radius", file, 1)[0]), text_floats(s, "position", file, 3)))
        params["spheres"] = [(r, p.tolist()) for r, p in spheres]
    color = elem.find("color")
    if color is not None:
        extra["color"] = parse_floats(color.text or "", color, "text", file, (3, 4)).tolist()
    return Shape(kind, params, pose, role, elem.sourceline, extra)


def _box(mass: float, size: FloatArray) -> FloatArray:
    return geometry.box_inertia(mass, *(0.5 * np.asarray(size, dtype=np.float64)))


def _mesh_extents(shape: Shape, file: str) -> FloatArray:
    path = Path(shape.extra["path"])
    try:
        vertices, _ = geometry.load_mesh(path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise FormatError(f"the body's inertia comes from mesh {shape.extra['file_name']!r}, which cannot be read "
                          f"({reason}); give <moment_of_inertia> instead", file, shape.line) from None
    v = vertices * shape.params["scale"]
    return v.max(axis=0) - v.min(axis=0)


def _sphere_box(shape: Shape) -> FloatArray:
    spheres = shape.params["spheres"]
    if not spheres:
        return np.zeros(3)
    lo = np.min([np.asarray(c) - r for r, c in spheres], axis=0)
    hi = np.max([np.asarray(c) + r for r, c in spheres], axis=0)
    return hi - lo


def shape_volume_and_moment(shape: Shape, mass: float, file: str) -> tuple[float, FloatArray]:
    """DART's ``getVolume()`` [m³] and ``computeInertia(mass)`` [kg·m², about the shape origin, shape axes]."""
    p = shape.params
    if shape.kind == "box":
        return float(np.prod(p["size"])), _box(mass, p["size"])
    if shape.kind == "sphere":
        return geometry.sphere_volume(p["radius"]), geometry.sphere_inertia(mass, p["radius"])
    if shape.kind == "ellipsoid":  # <size> holds diameters
        radii = 0.5 * p["size"]
        return geometry.ellipsoid_volume(*radii), geometry.ellipsoid_inertia(mass, *radii)
    if shape.kind == "cylinder":
        r, h = p["radius"], p["height"]
        return geometry.cylinder_volume(r, 0.5 * h), geometry.cylinder_inertia(mass, r, 0.5 * h)
    if shape.kind == "capsule":
        r, h = p["radius"], p["height"]
        return geometry.capsule_volume(r, 0.5 * h), geometry.capsule_inertia(mass, r, 0.5 * h)
    if shape.kind == "cone":  # solid cone about its centroid, axis z (no corpus file; not checked against DART)
        r, h = p["radius"], p["height"]
        ixx = mass * (3.0 * r * r / 20.0 + 3.0 * h * h / 80.0)
        return math.pi * r * r * h / 3.0, np.diag([ixx, ixx, 0.3 * mass * r * r])
    if shape.kind == "plane":
        return 0.0, np.zeros((3, 3))
    extents = _sphere_box(shape) if shape.kind == "multi_sphere" else _mesh_extents(shape, file)
    return float(np.prod(extents)), _box(mass, extents)


def moment_from_shapes(shapes: list[Shape], mass: float, com: FloatArray, file: str) -> FloatArray | None:
    """Rotational inertia about ``com`` [kg·m², body axes] from the shapes, or None (DART keeps its default)."""
    if mass <= 0.0 or not shapes:
        return None
    volumes = [shape_volume_and_moment(s, 1.0, file)[0] for s in shapes]
    weights = [v if math.isfinite(v) and v > 0.0 else 1.0 for v in volumes]
    total = sum(weights)
    parts = []
    for s, w in zip(shapes, weights, strict=True):
        m = mass * w / total
        _, I = shape_volume_and_moment(s, m, file)
        R = s.pose[:3, :3]
        parts.append(geometry.MassProperties(m, s.pose[:3, 3].copy(), R @ I @ R.T))
    comp = geometry.combine(parts)
    d = comp.com - np.asarray(com, dtype=np.float64)
    return comp.inertia + mass * (float(d @ d) * np.eye(3) - np.outer(d, d))


def dart_default_moment() -> FloatArray:
    """DART's BodyNode default rotational inertia (identity), kept when nothing else sets it."""
    return np.eye(3)


def skel_transform(text: str, elem: etree._Element, file: str) -> FloatArray:
    """``x y z rx ry rz`` [m, rad] -> 4x4, ``R = Rx Ry Rz`` (DART's ``getValueIsometry3d``)."""
    v = parse_floats(text, elem, "text", file, 6)
    return transform(rot_x(v[3]) @ rot_y(v[4]) @ rot_z(v[5]), v[:3])
