"""URDF links: inertials, visuals and collisions, and the mesh files they name (``package://``, ``file://``).

Errors name the file and line (:meth:`~hebictl.formats.urdf.context.ReadContext.fail`); what
pinocchio only tolerates (an incomplete ``<inertial>``) is read with a warning, or refused when strict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl import limits
from hebictl.errors import FormatError, ModelError
from hebictl.formats._xml import (
    attr_float,
    attr_floats,
    elements,
    local_name,
    namespace,
    require,
)
from hebictl.formats.rotations import rpy_matrix, transform
from hebictl.formats.urdf.context import ReadContext
from hebictl.model.tree import Inertia

_MASSLESS = Inertia.zero()
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


@dataclass
class UrdfLink:
    name: str
    elem: etree._Element
    inertia: Inertia
    metadata: dict[str, Any]


def origin(rc: ReadContext, parent: etree._Element) -> np.ndarray:
    """Pose of an ``<origin>`` child (identity when absent)."""
    o = parent.find("origin")
    if o is None:
        return np.eye(4)
    xyz = attr_floats(o, "xyz", rc.file, 3, (0.0, 0.0, 0.0))
    rpy = attr_floats(o, "rpy", rc.file, 3, (0.0, 0.0, 0.0))
    return transform(rpy_matrix(rpy), xyz)


def inertial(rc: ReadContext, link: etree._Element, name: str) -> Inertia:
    """A link's ``<inertial>`` (massless when absent), as urdfdom and pinocchio read it."""
    el = link.find("inertial")
    if el is None:
        return _MASSLESS

    T = origin(rc, el)
    # urdfdom stops reading an incomplete <inertial> where it fails and pinocchio uses what it
    # read: no <mass> value -> a massless link, an incomplete <inertia> -> a zero tensor
    mass_el = el.find("mass")
    mass = None if mass_el is None else attr_float(mass_el, "value", rc.file)
    if mass is None:
        what = "<inertial> has no <mass>" if mass_el is None else "<mass> has no 'value'"
        rc.bend(f"link {name!r}: {what} (read as a massless link)", el if mass_el is None else mass_el)
        return _MASSLESS

    if mass < 0:
        raise rc.fail(f"link {name!r}: negative mass {mass}", mass_el)

    in_el = el.find("inertia")
    vals = {} if in_el is None else {k: attr_float(in_el, k, rc.file) for k in _INERTIA_KEYS}
    missing = [k for k in _INERTIA_KEYS if vals.get(k) is None]
    if missing:
        what = "<inertial> has no <inertia>" if in_el is None else f"<inertia> has no {', '.join(missing)}"
        rc.bend(f"link {name!r}: {what} (read as a zero inertia tensor)", el if in_el is None else in_el)
        vals = dict.fromkeys(_INERTIA_KEYS, 0.0)

    I = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                  [vals["ixy"], vals["iyy"], vals["iyz"]],
                  [vals["ixz"], vals["iyz"], vals["izz"]]])
    R = T[:3, :3]
    try:
        return Inertia(mass=mass, com=T[:3, 3], rotational=R @ I @ R.T)
    except ModelError as exc:
        raise rc.fail(f"link {name!r}: {exc}", el) from None


def geometry(rc: ReadContext, shape_parent: etree._Element, link: str) -> dict[str, Any]:
    """One ``<visual>``/``<collision>``: origin, shape and material, resolved mesh path."""
    out: dict[str, Any] = {"origin": origin(rc, shape_parent).tolist()}
    if shape_parent.get("name"):
        out["name"] = shape_parent.get("name")

    geo = shape_parent.find("geometry")
    shapes = [] if geo is None else elements(geo)
    if not shapes:
        raise rc.fail(f"link {link!r}: <{local_name(shape_parent)}> needs a <geometry> with one shape",
                      shape_parent)

    shape = shapes[0]
    kind = local_name(shape)
    out["type"] = kind
    f = rc.file
    if drake.is_drake(shape) and kind in ("capsule", "ellipsoid"):
        out.update(drake.shape(shape, f))
    elif kind == "box":
        out["size"] = attr_floats(shape, "size", f, 3, (0.0, 0.0, 0.0)).tolist()
    elif kind == "sphere":
        out["radius"] = attr_float(shape, "radius", f, 0.0)
    elif kind in ("cylinder", "capsule"):
        out["radius"] = attr_float(shape, "radius", f, 0.0)
        out["length"] = attr_float(shape, "length", f, 0.0)
    elif kind == "mesh":
        uri = require(shape, "filename", f)
        out["filename"] = uri
        scale = shape.get("scale")
        if scale is not None:
            out["scale"] = [float(v) for v in scale.split()] if _is_numbers(scale) else scale
        path = resolve(rc, uri)
        out["mesh_path"] = str(path) if path is not None else None
        if path is None and uri not in rc.outside_meshes:
            rc.missing_meshes.append(uri)
        if drake.drake_child(shape, "declare_convex") is not None:
            out["declare_convex"] = True
    else:
        out["shape_element"] = etree.tostring(shape, encoding="unicode")

    mat = shape_parent.find("material")
    if mat is not None:
        out["material"] = read_material(mat)

    for c in elements(shape_parent):
        if not drake.is_drake(c):
            continue
        if local_name(c) == "proximity_properties":
            out["drake:proximity_properties"] = drake.proximity_properties(c, f)
        else:  # illustration/perception properties, accepting_renderer, ...
            out[f"drake:{local_name(c)}"] = dict(c.attrib)

    return out


def resolve(rc: ReadContext, uri: str) -> Path | None:
    """Mesh file of a ``package://``, ``file://`` or relative URI, if it exists (cached per URI)."""
    if uri not in rc.resolved:
        rc.resolved[uri] = _resolve(rc, uri)
    return rc.resolved[uri]


def _resolve(rc: ReadContext, uri: str) -> Path | None:
    """The existing mesh file a URI names, kept inside the allowed folders (not cached)."""
    # the text is checked before any system call (NUL bytes, ENAMETOOLONG); in a confined load an existing
    # file must lie inside the model's folder, a package_map folder, the package folder above it or an allowed root
    limits.check_path_text(uri, file=rc.file, what="mesh filename")
    candidates: list[Path] = []
    roots: list[Path] = list(rc.package_map.values())
    if uri.startswith("package://"):
        pkg, _, rest = uri[len("package://"):].partition("/")
        if pkg in rc.package_map:
            candidates.append(rc.package_map[pkg] / rest)
        candidates.extend(anc / rest for anc in rc.ancestors if anc.name == pkg)
        roots.extend(anc for anc in rc.ancestors if anc.name == pkg)
    elif uri.startswith("file://"):
        candidates.append(Path(uri[len("file://"):]))
    elif "://" not in uri:
        p = Path(uri)
        candidates.append(p if p.is_absolute() or rc.base_dir is None else rc.base_dir / p)

    for c in candidates:
        if limits.is_regular_file(c):
            try:
                return limits.resolve_reference(c, rc.base_dir or Path.cwd(), roots, file=rc.file,
                                                what=f"mesh filename {uri!r}")
            except FormatError:
                # never opened here (kinematics and dynamics do not need visual meshes, and pinocchio
                # loads such files), so no error; but an export must not point at it either
                rc.outside_meshes.append(uri)
                return None

    return None


def read_link(rc: ReadContext, el: etree._Element) -> UrdfLink:
    """A ``<link>``: its inertia, visuals and collisions."""
    name = require(el, "name", rc.file)
    meta: dict[str, Any] = {"line": el.sourceline}
    visuals, collisions = [], []

    for child in elements(el):
        tag = local_name(child)
        ns = namespace(child)
        if ns is not None:
            rc.note_extension(child)
        elif tag == "visual":
            visuals.append(geometry(rc, child, name))
        elif tag == "collision":
            collisions.append(geometry(rc, child, name))
        elif tag != "inertial":
            rc.ignore(f"<link><{tag}>")

    if visuals:
        meta["visuals"] = visuals

    if collisions:
        meta["collisions"] = collisions

    return UrdfLink(name, el, inertial(rc, el, name), meta)


def read_material(el: etree._Element) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if el.get("name"):
        out["name"] = el.get("name")
    color = el.find("color")
    if color is not None and color.get("rgba") and _is_numbers(color.get("rgba", "")):
        out["rgba"] = [float(v) for v in color.get("rgba", "").split()]
    tex = el.find("texture")
    if tex is not None and tex.get("filename"):
        out["texture"] = tex.get("filename")
    return out


def _is_numbers(text: str) -> bool:
    try:
        [float(t) for t in text.split()]
    except ValueError:
        return False
    return True
