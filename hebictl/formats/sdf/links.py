"""SDFormat links: poses, visuals and collisions as metadata, and inertia (given or computed with ``auto``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError, ModelError
from hebictl.formats._xml import DRAKE_NS, elements, line_of, local_name, namespace
from hebictl.formats.geometry import (
    MassProperties,
    box_inertia,
    box_volume,
    capsule_inertia,
    capsule_volume,
    combine,
    cylinder_inertia,
    cylinder_volume,
    ellipsoid_inertia,
    ellipsoid_volume,
    load_mesh,
    mesh_properties,
    sphere_inertia,
    sphere_volume,
)
from hebictl.formats.rotations import inverse_transform
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.elements import (
    COLOR_TAGS,
    check_element,
    child_of,
    children_of,
    name_of,
    pose_of,
    sdf_float,
    sdf_floats,
    text_of,
)
from hebictl.formats.sdf.frames import Entity, Scope, parse_bool
from hebictl.formats.sdf.include import resolve_uri
from hebictl.model.tree import Inertia


def read_link(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> Entity:
    """A ``<link>`` as a frame of its model; visuals, collisions and sensors as metadata (inertia is read
    later, by :func:`read_inertial`, once the model's frames are known)."""
    check_element(rc, elem, file, version)
    name = name_of(elem, file, version, "link")
    pose, rel, line = pose_of(rc, elem, file, version)
    meta: dict[str, Any] = {"line": line_of(elem)}
    names: dict[tuple[str, str], int | None] = {}
    visuals, collisions, sensors = [], [], []

    for c in elements(elem):
        if namespace(c) is not None:
            continue
        if c.tag in ("visual", "collision", "sensor", "light", "projector", "audio_source", "battery",
                     "particle_emitter"):
            key = (c.tag, c.get("name") or "")
            if key in names and key[1]:
                raise FormatError(f"link {name!r} has two <{c.tag}> elements named {key[1]!r} (first at line "
                                  f"{names[key]})", file, line_of(c))
            names[key] = line_of(c)
        if c.tag == "visual":
            visuals.append(read_shape(rc, c, file, version, scope))
        elif c.tag == "collision":
            collisions.append(read_shape(rc, c, file, version, scope))
        elif c.tag == "sensor":
            sensors.append({"name": c.get("name"), "type": c.get("type"), "line": line_of(c)})
        elif c.tag == "velocity_decay":
            for v in elements(c):
                if v.tag in ("linear", "angular"):
                    sdf_float(v, file, 0.0)
        elif c.tag in ("gravity", "self_collide", "kinematic", "enable_wind", "must_be_base_link"):
            meta[c.tag] = parse_bool(text_of(c), c, file, f"<{c.tag}>")

    if visuals:
        meta["visuals"] = visuals

    if collisions:
        meta["collisions"] = collisions

    if sensors:
        meta["sensors"] = sensors

    e = Entity("link", name, elem, file, pose, rel, line)
    e.data["metadata"] = meta
    e.data["collisions"] = collisions
    return e


def read_shape(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int],
               scope: Scope) -> dict[str, Any]:
    """A visual or collision: name, pose, geometry; kept as metadata (and for automatic inertia)."""
    pose, rel, _ = pose_of(rc, elem, file, version)
    out: dict[str, Any] = {"name": elem.get("name"), "pose": pose.tolist(), "line": line_of(elem)}
    if rel:
        out["relative_to"] = rel

    geo = child_of(elem, "geometry")
    if geo is not None:
        shapes = elements(geo)
        if shapes:
            out.update(read_geometry(rc, shapes[0], file, scope))

    density = child_of(elem, "density")
    if density is not None:
        out["density"] = sdf_float(density, file, 1000.0)

    mat = child_of(elem, "material")
    if mat is not None:
        for tag in COLOR_TAGS:
            col = child_of(mat, tag)
            if col is not None:
                rgba = sdf_floats(col, file, (3, 4))
                if np.any(rgba < 0) or np.any(rgba > 1):
                    raise FormatError(f"<{tag}> colour components must be in [0, 1], got {text_of(col)!r}", file,
                                      line_of(col))
                out.setdefault("material", {})[tag] = rgba.tolist()
        script = child_of(mat, "script")
        if script is not None and not any(text_of(u) for u in children_of(script, "uri")):
            raise FormatError("a material <script> needs a <uri> (the file that defines the script)", file,
                              line_of(script))
        shader = child_of(mat, "shader")
        if shader is not None and (shader.get("type") or "").startswith("normal_map") \
                and not text_of(child_of(shader, "normal_map")):
            raise FormatError(f"material <shader type={shader.get('type')!r}> needs a <normal_map>", file,
                              line_of(shader))

    for c in elements(elem):
        if namespace(c) == DRAKE_NS:
            if local_name(c) == "proximity_properties":
                out["drake:proximity_properties"] = {local_name(p): text_of(p) or dict(p.attrib)
                                                     for p in elements(c)}
            else:
                out[f"drake:{local_name(c)}"] = text_of(c) or dict(c.attrib)

    return out


def read_geometry(rc: ReadContext, shape: etree._Element, file: str, scope: Scope) -> dict[str, Any]:
    """A ``<geometry>`` shape's type and sizes; a mesh's file, found or not (missing ones are counted)."""
    kind = local_name(shape)
    ns = namespace(shape)
    out: dict[str, Any] = {"type": f"drake:{kind}" if ns == DRAKE_NS else kind}
    if ns not in (None, DRAKE_NS):
        return out

    if kind == "box":
        size = child_of(shape, "size")
        out["size"] = sdf_floats(size, file, 3).tolist() if size is not None else [1.0, 1.0, 1.0]
    elif kind in ("sphere", "cylinder", "capsule"):
        out["radius"] = sdf_float(child_of(shape, "radius"), file, 1.0 if kind != "capsule" else 0.5)
        if kind != "sphere":
            out["length"] = sdf_float(child_of(shape, "length"), file, 1.0)
    elif kind == "ellipsoid":
        radii = child_of(shape, "radii")
        if ns == DRAKE_NS:
            out["radii"] = [sdf_float(child_of(shape, k), file, 1.0) for k in ("a", "b", "c")]
        else:
            out["radii"] = sdf_floats(radii, file, 3).tolist() if radii is not None else [1.0, 1.0, 1.0]
    elif kind == "mesh":
        uri = text_of(child_of(shape, "uri"))
        out["uri"] = uri
        scale = child_of(shape, "scale")
        out["scale"] = sdf_floats(scale, file, 3).tolist() if scale is not None else [1.0, 1.0, 1.0]
        path = resolve_uri(rc, uri, getattr(scope, "base_dir", None), file, line_of(shape)) if uri else None
        out["mesh_path"] = str(path) if path is not None and os.path.isfile(path) else None
        if out["mesh_path"] is None:
            rc.missing_meshes.append(uri)
    elif kind == "plane":
        normal = child_of(shape, "normal")
        if normal is not None:
            out["normal"] = sdf_floats(normal, file, 3).tolist()

    return out


def read_inertial(rc: ReadContext, link: Entity, scope: Scope) -> Inertia:
    """SDFormat ``<inertial>``: mass (default 1 kg), inertia about the COM in the inertial frame."""
    el = child_of(link.elem, "inertial")
    file, version = link.file, scope.version

    if el is None:
        return Inertia(1.0, (0.0, 0.0, 0.0), np.eye(3))

    check_element(rc, el, file, version)
    pose, rel, _ = pose_of(rc, el, file, version)

    if rel:
        if not scope.has_frame(rel):
            raise FormatError(f"link {link.name!r}: inertial pose relative_to {rel!r} is not a frame of "
                              f"{scope.what}", file, line_of(el))
        pose = inverse_transform(scope.pose(link.name)) @ scope.pose(rel) @ pose

    mass_el = child_of(el, "mass")
    mass = sdf_float(mass_el, file, 1.0)
    auto = version >= (1, 11) and parse_bool(el.get("auto", "false"), el, file, "auto attribute")
    if auto:
        return auto_inertia(link, el, mass if mass_el is not None else None, scope)

    if mass < 0:
        raise FormatError(f"link {link.name!r} has a negative mass {mass}", file, line_of(mass_el))

    I = np.eye(3)
    inertia = child_of(el, "inertia")
    if inertia is not None:
        check_element(rc, inertia, file, version)
        vals = {k: sdf_float(child_of(inertia, k), file, 1.0 if k in ("ixx", "iyy", "izz") else 0.0)
                for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                      [vals["ixy"], vals["iyy"], vals["iyz"]],
                      [vals["ixz"], vals["iyz"], vals["izz"]]])

    R = pose[:3, :3]
    try:
        return Inertia(mass, pose[:3, 3], R @ I @ R.T)
    except ModelError as exc:
        raise FormatError(f"link {link.name!r}: {exc}", file, line_of(el)) from None


def auto_inertia(link: Entity, el: etree._Element, mass: float | None, scope: Scope) -> Inertia:
    """``<inertial auto="true">`` (1.11): mass properties of the collision shapes."""
    file = link.file
    default_density = sdf_float(child_of(el, "density"), file, 1000.0)
    parts: list[MassProperties] = []
    for col in link.data["collisions"]:
        density = col.get("density", default_density)
        props = _shape_properties(col, density)
        if props is None:
            raise FormatError(f"link {link.name!r}: automatic inertia cannot use collision {col.get('name')!r} "
                              f"of type {col.get('type')!r}", file, col.get("line"))
        parts.append(props.transformed(np.array(col["pose"])))

    if not parts:
        raise FormatError(f"link {link.name!r}: <inertial auto=\"true\"> needs at least one <collision>", file,
                          line_of(el))

    total = combine(parts)
    if mass is not None and total.mass > 0:
        k = mass / total.mass
        total = MassProperties(mass, total.com, total.inertia * k)

    return Inertia(total.mass, total.com, total.inertia)


def _shape_properties(col: dict[str, Any], density: float) -> MassProperties | None:
    """Mass properties of one collision shape in its own frame (None for shapes without a volume)."""
    kind = col.get("type")
    if kind == "box":
        hx, hy, hz = (0.5 * s for s in col["size"])
        m = density * box_volume(hx, hy, hz)
        return MassProperties(m, np.zeros(3), box_inertia(m, hx, hy, hz))

    if kind == "sphere":
        r = col["radius"]
        m = density * sphere_volume(r)
        return MassProperties(m, np.zeros(3), sphere_inertia(m, r))

    if kind in ("cylinder", "capsule", "drake:capsule"):
        r, h = col["radius"], 0.5 * col["length"]
        if kind == "cylinder":
            m = density * cylinder_volume(r, h)
            return MassProperties(m, np.zeros(3), cylinder_inertia(m, r, h))
        m = density * capsule_volume(r, h)
        return MassProperties(m, np.zeros(3), capsule_inertia(m, r, h))

    if kind in ("ellipsoid", "drake:ellipsoid"):
        a, b, c = col["radii"]
        m = density * ellipsoid_volume(a, b, c)
        return MassProperties(m, np.zeros(3), ellipsoid_inertia(m, a, b, c))

    if kind == "mesh" and col.get("mesh_path"):
        try:
            v, f = load_mesh(col["mesh_path"])
            return mesh_properties(v * np.array(col.get("scale", [1.0, 1.0, 1.0])), f, density)
        except (ValueError, OSError):
            return None

    return None
