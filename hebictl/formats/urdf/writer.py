"""Write any RobotModel as URDF (one link per body, fixed joints for rigid attachments).

* Every body becomes a link with its mass, centre of mass and full inertia (no ``<inertial>``
  for massless bodies, which is what URDF means by its absence); every non-root body a joint:
  ``fixed``, ``revolute`` (``continuous`` when unbounded), ``prismatic`` or ``floating``.
* A root link (``world`` unless that name is taken) is added when the model's base transform,
  its first body's placement or joint, or several top-level bodies need one.
* URDF has no infinity: unbounded limits and unknown effort/velocity ratings are written as
  ±1.7976931348623157e308 (the largest double), which hebictl's reader turns back into ±inf.
* Frames (all kinds: output, com, end_effector, input, site, mesh, ...) are kept in
  ``<hebictl:frame kind link name xyz rpy>`` elements, which other URDF tools ignore.
* Visuals: the link's URDF visuals if it came from URDF, HRDF mesh frames as mesh visuals, else
  thin cylinders from the link origin to its children ("bones").
* Joint armature (revolute/prismatic) becomes Drake's reflected inertia: a SimpleTransmission
  whose actuator has ``drake:rotor_inertia`` = armature and ``drake:gear_ratio`` 1 (namespace
  declared), which hebictl's and Drake's readers both turn back into it.
* Not expressible, so refused with FormatError: joint scales != 1 (HRDF ``gear_ratio``) and
  ball joints.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.formats._xml import DRAKE_NS, HEBICTL_NS, fmt_floats
from hebictl.formats.building import unique
from hebictl.formats.rotations import matrix_rpy, z_to_vector
from hebictl.formats.urdf.joints import DBL_MAX
from hebictl.formats.writers import body_names, bones, check_expressible
from hebictl.model.tree import JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_BONE_RADIUS = 0.01  # [m]


def _num(value: float) -> str:
    if math.isinf(value):
        return repr(DBL_MAX if value > 0 else -DBL_MAX)
    return repr(float(value))


def _origin(parent: etree._Element, T: np.ndarray, tag: str = "origin") -> None:
    if np.array_equal(T, np.eye(4)):
        return
    etree.SubElement(parent, tag, xyz=fmt_floats(T[:3, 3]), rpy=fmt_floats(matrix_rpy(T[:3, :3])))


def _geometry(parent: etree._Element, shape: dict[str, Any]) -> bool:
    geo = etree.SubElement(parent, "geometry")
    kind = shape.get("type")
    if kind == "box":
        etree.SubElement(geo, "box", size=fmt_floats(shape["size"]))
    elif kind == "sphere":
        etree.SubElement(geo, "sphere", radius=_num(shape["radius"]))
    elif kind in ("cylinder", "capsule"):
        etree.SubElement(geo, kind, radius=_num(shape["radius"]), length=_num(shape["length"]))
    elif kind == "drake:capsule":
        etree.SubElement(geo, f"{{{DRAKE_NS}}}capsule", radius=_num(shape["radius"]), length=_num(shape["length"]))
    elif kind == "drake:ellipsoid":
        a, b, c = shape["radii"]
        etree.SubElement(geo, f"{{{DRAKE_NS}}}ellipsoid", a=_num(a), b=_num(b), c=_num(c))
    elif kind == "mesh":
        # URDF's own filename as read; else the file an SDF/MJCF mesh resolved to (a `model://` URI means
        # nothing to a URDF reader); else the URI as written. A mesh that names no file is left out.
        filename = shape.get("filename") or shape.get("mesh_path") or shape.get("uri")
        if not filename:
            parent.remove(geo)
            return False
        el = etree.SubElement(geo, "mesh", filename=str(filename))
        if isinstance(shape.get("scale"), list):
            el.set("scale", fmt_floats(shape["scale"]))
    else:
        parent.remove(geo)
        return False
    return True


def _bone(link: etree._Element, end: np.ndarray) -> None:
    length = float(np.linalg.norm(end))
    T = np.eye(4)
    T[:3, :3] = z_to_vector(end / length)
    T[:3, 3] = end / 2.0
    vis = etree.SubElement(link, "visual")
    _origin(vis, T)
    _geometry(vis, {"type": "cylinder", "radius": _BONE_RADIUS, "length": length})


def write_urdf(model: RobotModel, path: str | Path | None = None) -> str:  # noqa: C901 (one branch per element kind it writes)
    """URDF text of ``model``; also written to ``path`` when given."""
    check_expressible(model, "urdf", path)
    names = body_names(model)
    robot = etree.Element("robot", name=model.name or "robot", nsmap={"hebictl": HEBICTL_NS, "drake": DRAKE_NS})
    robot.append(etree.Comment(f" written by hebictl from {model.format} model {model.source or model.name} "))
    etree.SubElement(robot, f"{{{HEBICTL_NS}}}model", version="1")

    top = [i for i, b in enumerate(model.bodies) if b.parent < 0]
    first = model.bodies[top[0]] if top else None
    needs_root = (len(top) != 1 or first is None or first.joint.kind is not JointKind.FIXED
                  or not np.array_equal(model.base @ first.placement, np.eye(4)))
    root = unique("world", set(names)) if needs_root else None
    if root is not None:
        etree.SubElement(robot, "link", name=root)

    mesh_frames: dict[int, list[Any]] = {}
    for f in model.frames:
        if f.kind == "mesh" and f.body >= 0 and f.name:
            mesh_frames.setdefault(f.body, []).append(f)
    sticks = bones(model)
    for i, b in enumerate(model.bodies):
        link = etree.SubElement(robot, "link", name=names[i])
        inertia = b.inertia
        I = np.array(inertia.rotational)
        if inertia.mass > 0 or np.any(I):
            inertial = etree.SubElement(link, "inertial")
            if any(inertia.com):
                etree.SubElement(inertial, "origin", xyz=fmt_floats(inertia.com), rpy="0 0 0")
            etree.SubElement(inertial, "mass", value=repr(inertia.mass))
            etree.SubElement(inertial, "inertia", ixx=repr(I[0, 0]), ixy=repr(I[0, 1]), ixz=repr(I[0, 2]),
                             iyy=repr(I[1, 1]), iyz=repr(I[1, 2]), izz=repr(I[2, 2]))
        _visuals(link, b.metadata, mesh_frames.get(i, []), sticks.get(i, []))

    joint_names: set[str] = {b.joint.name for b in model.bodies if b.joint.kind is not JointKind.FIXED}
    armatures: list[tuple[str, float]] = []
    transmission_names: set[str] = set()
    for i, b in enumerate(model.bodies):
        if b.parent < 0 and root is None:
            continue
        j = b.joint
        parent = names[b.parent] if b.parent >= 0 else root
        placement = b.placement if b.parent >= 0 else model.base @ b.placement
        jname = j.name if j.kind is not JointKind.FIXED else unique(j.name or f"{names[i]}_joint", joint_names)
        kind = {JointKind.FIXED: "fixed", JointKind.PRISMATIC: "prismatic", JointKind.FREE: "floating",
                JointKind.REVOLUTE: "continuous" if math.isinf(j.lower) and math.isinf(j.upper) else "revolute"}[j.kind]
        joint = etree.SubElement(robot, "joint", name=jname, type=kind)
        _origin(joint, placement)
        etree.SubElement(joint, "parent", link=parent)
        etree.SubElement(joint, "child", link=names[i])
        if j.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            etree.SubElement(joint, "axis", xyz=fmt_floats(j.axis))
            finite_rating = math.isfinite(j.max_effort) or math.isfinite(j.max_velocity)
            if kind != "continuous" or finite_rating:
                limit = etree.SubElement(joint, "limit", effort=_num(j.max_effort), velocity=_num(j.max_velocity))
                if kind != "continuous":
                    limit.set("lower", _num(j.lower))
                    limit.set("upper", _num(j.upper))
        elif j.kind is JointKind.FREE and (math.isfinite(j.max_effort) or math.isfinite(j.max_velocity)):
            etree.SubElement(joint, "limit", effort=_num(j.max_effort), velocity=_num(j.max_velocity))
        if j.damping or j.friction:
            etree.SubElement(joint, "dynamics", damping=repr(j.damping), friction=repr(j.friction))
        mimic = j.metadata.get("mimic")
        if isinstance(mimic, dict) and mimic.get("joint"):
            etree.SubElement(joint, "mimic", joint=str(mimic["joint"]), multiplier=repr(float(mimic["multiplier"])),
                             offset=repr(float(mimic["offset"])))
        if j.armature and j.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            armatures.append((jname, j.armature))

    for jname, armature in armatures:  # Drake's reflected inertia: rotor inertia · gear ratio², with the ratio 1
        tr = etree.SubElement(robot, "transmission", name=unique(f"{jname}_transmission", transmission_names))
        etree.SubElement(tr, "type").text = "transmission_interface/SimpleTransmission"
        etree.SubElement(tr, "joint", name=jname)
        act = etree.SubElement(tr, "actuator", name=f"{jname}_actuator")
        etree.SubElement(act, f"{{{DRAKE_NS}}}rotor_inertia", value=repr(armature))
        etree.SubElement(act, f"{{{DRAKE_NS}}}gear_ratio", value="1.0")

    for f in model.frames:
        if f.body >= 0:
            link_name, T = names[f.body], f.offset
        else:  # the base frame: the root link when there is one (it sits at the world origin)
            link_name, T = (root or ""), model.base @ f.offset
        attrs = {"kind": f.kind, "link": link_name, "xyz": fmt_floats(T[:3, 3]),
                 "rpy": fmt_floats(matrix_rpy(T[:3, :3]))}
        if f.name is not None:
            attrs["name"] = f.name
        etree.SubElement(robot, f"{{{HEBICTL_NS}}}frame", **attrs)

    etree.indent(robot, space="  ")
    text = etree.tostring(robot, encoding="unicode", pretty_print=True)
    text = '<?xml version="1.0"?>\n' + text
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _visuals(link: etree._Element, meta: Any, meshes: list[Any], sticks: list[np.ndarray]) -> None:
    written = False
    for shape in meta.get("visuals", []) if isinstance(meta, dict) else []:
        vis = etree.Element("visual")
        if shape.get("name"):
            vis.set("name", shape["name"])
        _origin(vis, np.array(shape.get("origin", np.eye(4))))
        if _geometry(vis, shape):
            link.append(vis)
            written = True
    for f in meshes:
        vis = etree.SubElement(link, "visual")
        _origin(vis, f.offset)
        _geometry(vis, {"type": "mesh", "filename": f.name})
        written = True
    if not written:
        for end in sticks:
            _bone(link, end)
