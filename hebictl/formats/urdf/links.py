"""URDF links: inertials, visuals and collisions, and the mesh files they name (``package://``, ``file://``).

The base of the URDF reader (:class:`LinkReader`): one read's file, folder and package map, and
the link-level elements, with errors naming the file and line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl import limits
from hebictl.errors import FormatError, ModelError, UrdfWarning
from hebictl.formats._xml import (
    HEBICTL_NS,
    attr_float,
    attr_floats,
    elements,
    line_of,
    local_name,
    namespace,
    require,
)
from hebictl.formats.lenient import bend
from hebictl.formats.rotations import rpy_matrix, transform
from hebictl.model.tree import Inertia

if TYPE_CHECKING:
    pass


_MASSLESS = Inertia.zero()
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


@dataclass
class UrdfLink:
    name: str
    elem: etree._Element
    inertia: Inertia
    metadata: dict[str, Any]


@dataclass
class UrdfJoint:
    name: str
    type: str
    elem: etree._Element
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    drake: bool = False  # a <drake:joint>
    armature: float = 0.0  # reflected rotor inertia of the actuators on it [kg·m² or kg]
    metadata: dict[str, Any] = field(default_factory=dict)


_XACRO_NS = ("http://ros.org/wiki/xacro", "http://www.ros.org/wiki/xacro")


class LinkReader:
    """One parse of one URDF document: its file and folders, and the link-level elements."""

    def __init__(self, file: str, base_dir: Path | None, package_map: Mapping[str, Path] | None,
                 strict: bool = False) -> None:
        self.file = file
        self.strict = strict
        self.base_dir = base_dir
        self.package_map = {k: Path(v) for k, v in (package_map or {}).items()}
        self.missing_meshes: list[str] = []
        self.outside_meshes: list[str] = []  # confined load: found outside the allowed folders, not followed
        self.ignored: dict[str, int] = {}
        self.resolved: dict[str, Path | None] = {}
        self.ancestors = () if base_dir is None else (base_dir, *base_dir.parents)
        self.drake_notes: list[str] = []  # extensions Drake would skip (and so do we), for one warning

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        return FormatError(message, self.file, line_of(elem))

    def note_extension(self, el: etree._Element) -> None:
        """Count an element of another namespace as ignored; a xacro macro is an error."""
        ns = namespace(el)
        if ns in _XACRO_NS or (el.prefix == "xacro"):
            raise self.fail(f"<{el.prefix}:{local_name(el)}> is a xacro macro: expand the file with xacro first", el)
        if ns == HEBICTL_NS:
            return
        key = f"<{el.prefix or ns}:{local_name(el)}>"
        self.ignored[key] = self.ignored.get(key, 0) + 1

    def bend(self, message: str, elem: etree._Element | None) -> None:
        """Read what pinocchio (urdfdom) reads, with a warning; an error when strict."""
        bend(self.strict, message, self.file, line_of(elem), UrdfWarning, "pinocchio", stacklevel=6)

    def origin(self, parent: etree._Element) -> np.ndarray:
        """Pose of an ``<origin>`` child (identity when absent)."""
        o = parent.find("origin")
        if o is None:
            return np.eye(4)
        xyz = attr_floats(o, "xyz", self.file, 3, (0.0, 0.0, 0.0))
        rpy = attr_floats(o, "rpy", self.file, 3, (0.0, 0.0, 0.0))
        return transform(rpy_matrix(rpy), xyz)

    def inertial(self, link: etree._Element, name: str) -> Inertia:
        el = link.find("inertial")
        if el is None:
            return _MASSLESS
        T = self.origin(el)
        # urdfdom stops reading an incomplete <inertial> where it fails and pinocchio uses what it
        # read: no <mass> value -> a massless link, an incomplete <inertia> -> a zero tensor
        mass_el = el.find("mass")
        mass = None if mass_el is None else attr_float(mass_el, "value", self.file)
        if mass is None:
            what = "<inertial> has no <mass>" if mass_el is None else "<mass> has no 'value'"
            self.bend(f"link {name!r}: {what} (read as a massless link)", el if mass_el is None else mass_el)
            return _MASSLESS
        if mass < 0:
            raise self.fail(f"link {name!r}: negative mass {mass}", mass_el)
        in_el = el.find("inertia")
        vals = {} if in_el is None else {k: attr_float(in_el, k, self.file) for k in _INERTIA_KEYS}
        missing = [k for k in _INERTIA_KEYS if vals.get(k) is None]
        if missing:
            what = "<inertial> has no <inertia>" if in_el is None else f"<inertia> has no {', '.join(missing)}"
            self.bend(f"link {name!r}: {what} (read as a zero inertia tensor)", el if in_el is None else in_el)
            vals = dict.fromkeys(_INERTIA_KEYS, 0.0)
        I = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                      [vals["ixy"], vals["iyy"], vals["iyz"]],
                      [vals["ixz"], vals["iyz"], vals["izz"]]])
        R = T[:3, :3]
        try:
            return Inertia(mass=mass, com=T[:3, 3], rotational=R @ I @ R.T)
        except ModelError as exc:
            raise self.fail(f"link {name!r}: {exc}", el) from None

    def geometry(self, shape_parent: etree._Element, link: str) -> dict[str, Any]:
        """One ``<visual>``/``<collision>``: origin, shape and material, resolved mesh path."""
        out: dict[str, Any] = {"origin": self.origin(shape_parent).tolist()}
        if shape_parent.get("name"):
            out["name"] = shape_parent.get("name")
        geo = shape_parent.find("geometry")
        shapes = [] if geo is None else elements(geo)
        if not shapes:
            raise self.fail(f"link {link!r}: <{local_name(shape_parent)}> needs a <geometry> with one shape",
                            shape_parent)
        shape = shapes[0]
        kind = local_name(shape)
        out["type"] = kind
        f = self.file
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
            path = self.resolve(uri)
            out["mesh_path"] = str(path) if path is not None else None
            if path is None and uri not in self.outside_meshes:
                self.missing_meshes.append(uri)
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

    def resolve(self, uri: str) -> Path | None:
        """Mesh file of a ``package://``, ``file://`` or relative URI, if it exists (cached per URI)."""
        if uri not in self.resolved:
            self.resolved[uri] = self._resolve(uri)
        return self.resolved[uri]

    def _resolve(self, uri: str) -> Path | None:
        # the text is checked before any system call (NUL bytes, ENAMETOOLONG); in a confined load an existing
        # file must lie inside the model's folder, a package_map folder, the package folder above it or an allowed root
        limits.check_path_text(uri, file=self.file, what="mesh filename")
        candidates: list[Path] = []
        roots: list[Path] = list(self.package_map.values())
        if uri.startswith("package://"):
            pkg, _, rest = uri[len("package://"):].partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / rest)
            candidates.extend(anc / rest for anc in self.ancestors if anc.name == pkg)
            roots.extend(anc for anc in self.ancestors if anc.name == pkg)
        elif uri.startswith("file://"):
            candidates.append(Path(uri[len("file://"):]))
        elif "://" not in uri:
            p = Path(uri)
            candidates.append(p if p.is_absolute() or self.base_dir is None else self.base_dir / p)
        for c in candidates:
            if limits.is_regular_file(c):
                try:
                    return limits.resolve_reference(c, self.base_dir or Path.cwd(), roots, file=self.file,
                                                    what=f"mesh filename {uri!r}")
                except FormatError:
                    # never opened here (kinematics and dynamics do not need visual meshes, and pinocchio
                    # loads such files), so no error; but an export must not point at it either
                    self.outside_meshes.append(uri)
                    return None
        return None

    def link(self, el: etree._Element) -> UrdfLink:
        name = require(el, "name", self.file)
        meta: dict[str, Any] = {"line": el.sourceline}
        visuals, collisions = [], []
        for child in elements(el):
            tag = local_name(child)
            ns = namespace(child)
            if ns is not None:
                self.note_extension(child)
            elif tag == "visual":
                visuals.append(self.geometry(child, name))
            elif tag == "collision":
                collisions.append(self.geometry(child, name))
            elif tag != "inertial":
                self.ignored[f"<link><{tag}>"] = self.ignored.get(f"<link><{tag}>", 0) + 1
        if visuals:
            meta["visuals"] = visuals
        if collisions:
            meta["collisions"] = collisions
        return UrdfLink(name, el, self.inertial(el, name), meta)


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
