"""Write any RobotModel as MJCF that MuJoCo loads with the same kinematics and gravity.

* Bodies nest as in the model; a body with a fixed joint is a nested body without joints, which
  MuJoCo welds to its parent. Joints: ``hinge``, ``slide``, ``ball``, ``freejoint``; their motion
  is about the body origin (joint ``pos`` 0), coordinates equal hebictl's ``q`` (MuJoCo ``qpos``).
* Angles are radians (``<compiler angle="radian">``); ``inertiafromgeom="false"`` so the
  visual geoms never add mass; every body carries its mass, centre of mass and principal
  inertia (``<inertial pos quat mass diaginertia>``, diagonalised here in double precision).
* MuJoCo refuses a moving body without mass or inertia. Only when the model has one (an output
  body at the end of a chain, a massless intermediate link) the writer sets
  ``<compiler boundmass="1e-13" boundinertia="1e-13">``: MuJoCo (and hebictl's reader) then give
  such bodies 1e-13 kg and 1e-13 kg·m², which moves gravity torques by less than 1e-11 N·m.
* ``max_effort`` becomes the joint's ``actuatorfrcrange``; limits bounded on both sides become
  ``range``. What MJCF has no attribute for (``max_velocity``, a limit bounded on one side
  only, a locked joint's lower == upper) and all frames (as sites named ``<kind>:<name>``) are
  kept in ``<custom><text>`` JSON that hebictl's reader restores.
* Visual geoms (``contype=conaffinity=0``, group 1): the body's MJCF geoms or URDF visuals when
  it came from those formats, HRDF mesh frames whose files exist, else capsules from the body
  origin to its children. Meshes whose files are absent are left out (MuJoCo would refuse them).
* Not expressible, so refused with FormatError: joint scales != 1 (HRDF ``gear_ratio``), free
  joints that are not top-level bodies at the world origin (MuJoCo free joints are world poses)
  and inertias whose principal moments break A + B >= C (unless ``balance_inertia=True``).
* Body order: MJCF nests bodies, so a model whose bodies are not in depth-first order reads back
  in depth-first order (coordinates then follow that order; names are kept).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError
from hebictl.formats._xml import fmt_floats
from hebictl.formats.building import unique
from hebictl.formats.mjcf.document import FRAMES_TEXT, JOINTS_TEXT
from hebictl.formats.rotations import MJMINVAL, matrix_quat
from hebictl.formats.writers import body_names, bones, check_expressible
from hebictl.model.tree import JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

MASS_FLOOR = 1e-13  # [kg] and [kg·m²], only where MuJoCo would refuse a moving body

_BONE_RADIUS = 0.01  # [m]


def _pose_attrs(el: etree._Element, T: np.ndarray) -> None:
    if np.any(T[:3, 3]):
        el.set("pos", fmt_floats(T[:3, 3]))
    if not np.array_equal(T[:3, :3], np.eye(3)):
        el.set("quat", fmt_floats(matrix_quat(T[:3, :3])))


def _principal(I: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vals, vecs = np.linalg.eigh(0.5 * (I + I.T))
    if np.linalg.det(vecs) < 0:
        vecs[:, 2] *= -1.0
    return vals, vecs


def write_mjcf(model: RobotModel, path: str | Path | None = None, *, balance_inertia: bool = False) -> str:  # noqa: C901 (one branch per element kind it writes)
    """MJCF text of ``model``; also written to ``path`` when given.

    MuJoCo only accepts principal moments of inertia with A + B >= C (true of every rigid body).
    A model that breaks it is refused unless ``balance_inertia=True``, which asks MuJoCo to even
    out those bodies' moments (``<compiler balanceinertia>``), so the file then means a
    different rotational inertia for them.
    """
    check_expressible(model, "mjcf", path)
    where = None if path is None else str(path)
    names = body_names(model)
    if "world" in names:  # MuJoCo's world body owns that name
        names[names.index("world")] = unique("world_link", set(names))
    root = etree.Element("mujoco", model=model.name or "robot")
    root.append(etree.Comment(f" written by hebictl from {model.format} model {model.source or model.name} "))
    compiler = etree.SubElement(root, "compiler", angle="radian", autolimits="true", inertiafromgeom="false")
    etree.SubElement(root, "option", gravity=fmt_floats(model.gravity))
    default = etree.SubElement(root, "default")
    etree.SubElement(default, "geom", contype="0", conaffinity="0", group="1", rgba="0.7 0.7 0.7 1")
    etree.SubElement(default, "site", group="4", size="0.005")
    asset = etree.SubElement(root, "asset")
    world = etree.SubElement(root, "worldbody")

    children: dict[int, list[int]] = {}
    for i, b in enumerate(model.bodies):
        children.setdefault(b.parent, []).append(i)
    needs_floor = False
    unbalanced: list[str] = []
    for i, b in enumerate(model.bodies):
        if b.joint.kind is JointKind.FIXED:
            continue
        vals = _principal(np.array(b.inertia.rotational))[0]
        if _welded_mass(model, children, i) < MJMINVAL or vals[0] < MJMINVAL:
            needs_floor = True
        if b.joint.kind is JointKind.FREE and (b.parent >= 0 or not np.allclose(model.base @ b.placement, np.eye(4),
                                                                                  rtol=0, atol=1e-15)):
            raise FormatError(f"free joint {b.joint.name!r}: MJCF free joints are world poses of top-level bodies, "
                              "but this one moves relative to another frame", where)
    if needs_floor:
        compiler.set("boundmass", repr(MASS_FLOOR))
        compiler.set("boundinertia", repr(MASS_FLOOR))

    site_names: set[str] = set()
    frames_json: list[list[Any]] = []
    sites: dict[int, list[tuple[str, np.ndarray]]] = {}
    for k, f in enumerate(model.frames):
        sname = unique(f"{f.kind}:{f.name if f.name is not None else k}", site_names)
        frames_json.append([f.kind, sname, f.name])
        sites.setdefault(f.body, []).append((sname, f.offset if f.body >= 0 else model.base @ f.offset))
    for sname, T in sites.get(-1, []):
        _pose_attrs(etree.SubElement(world, "site", name=sname), T)

    mesh_assets: dict[str, str] = {}
    mesh_frames: dict[int, list[Any]] = {}
    for f in model.frames:
        if f.kind == "mesh" and f.body >= 0 and f.name:
            mesh_frames.setdefault(f.body, []).append(f)
    sticks = bones(model)
    joints_json: dict[str, dict[str, float]] = {}
    elements: dict[int, etree._Element] = {}
    for i, b in enumerate(model.bodies):
        parent_el = world if b.parent < 0 else elements[b.parent]
        body = etree.SubElement(parent_el, "body", name=names[i])
        elements[i] = body
        j = b.joint
        if j.kind is JointKind.FREE:
            pos = b.metadata.get("default_position", (0.0, 0.0, 0.0))
            quat = b.metadata.get("default_quaternion", (1.0, 0.0, 0.0, 0.0))
            body.set("pos", fmt_floats(pos))
            body.set("quat", fmt_floats(quat))
        else:
            _pose_attrs(body, b.placement if b.parent >= 0 else model.base @ b.placement)
        inertia = b.inertia
        vals, R = _principal(np.array(inertia.rotational))
        if inertia.mass > 0 or np.any(vals):
            if vals[0] < -1e-12 * max(1.0, float(vals[2])):
                raise FormatError(f"body {b.name!r} has an inertia with a negative principal moment {vals[0]:g}",
                                  where)
            vals = np.maximum(vals, 0.0)
            if vals[0] + vals[1] < vals[2] - MJMINVAL:
                if not balance_inertia:
                    raise FormatError(f"body {b.name!r} has principal moments of inertia {fmt_floats(vals)} that break "
                                      "A + B >= C, which MuJoCo requires: MJCF cannot hold this inertia unchanged "
                                      "(balance_inertia=True lets MuJoCo even the moments out)", where)
                unbalanced.append(names[i])
            inertial = etree.SubElement(body, "inertial", pos=fmt_floats(inertia.com), mass=repr(inertia.mass),
                                        diaginertia=fmt_floats(vals))
            if not np.allclose(R, np.eye(3), rtol=0, atol=0):
                inertial.set("quat", fmt_floats(matrix_quat(R)))
        _joint(body, j, joints_json)
        _geoms(body, asset, mesh_assets, b.metadata, mesh_frames.get(i, []), sticks.get(i, []))
        for sname, T in sites.get(i, []):
            _pose_attrs(etree.SubElement(body, "site", name=sname), T)
    if unbalanced:
        # MuJoCo insists on A + B >= C; it evens out principal moments that break it
        compiler.set("balanceinertia", "true")
    if not len(asset):
        root.remove(asset)
    custom = etree.SubElement(root, "custom")
    etree.SubElement(custom, "text", name=FRAMES_TEXT, data=json.dumps(frames_json))
    etree.SubElement(custom, "text", name=JOINTS_TEXT, data=json.dumps(joints_json))
    etree.indent(root, space="  ")
    text = etree.tostring(root, encoding="unicode", pretty_print=True)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _welded_mass(model: RobotModel, children: dict[int, list[int]], i: int) -> float:
    """Mass of body ``i`` and the bodies fixed to it (what MuJoCo requires to be positive)."""
    total, stack = 0.0, [i]
    while stack:
        k = stack.pop()
        total += model.bodies[k].inertia.mass
        stack.extend(c for c in children.get(k, []) if model.bodies[c].joint.kind is JointKind.FIXED)
    return total


def _joint(body: etree._Element, j: Any, extras: dict[str, dict[str, float]]) -> None:
    if j.kind is JointKind.FIXED:
        return
    if j.kind is JointKind.FREE:
        if j.armature:  # <freejoint> has no armature attribute
            etree.SubElement(body, "joint", name=j.name, type="free", armature=repr(j.armature))
        else:
            etree.SubElement(body, "freejoint", name=j.name)
    else:
        el = etree.SubElement(body, "joint", name=j.name,
                              type={JointKind.REVOLUTE: "hinge", JointKind.PRISMATIC: "slide",
                                    JointKind.BALL: "ball"}[j.kind])
        if j.kind is not JointKind.BALL:
            el.set("axis", fmt_floats(j.axis))
            if math.isfinite(j.lower) and math.isfinite(j.upper) and j.lower < j.upper:
                el.set("range", fmt_floats((j.lower, j.upper)))
            elif math.isfinite(j.lower) or math.isfinite(j.upper):  # one-sided, or locked (MuJoCo: range[0] < range[1])
                extras.setdefault(j.name, {}).update(
                    {k: v for k, v in (("lower", j.lower), ("upper", j.upper)) if math.isfinite(v)})
        if j.damping:
            el.set("damping", repr(j.damping))
        if j.friction:
            el.set("frictionloss", repr(j.friction))
        if j.armature:
            el.set("armature", repr(j.armature))
        if math.isfinite(j.max_effort):
            el.set("actuatorfrcrange", fmt_floats((-j.max_effort, j.max_effort)))
    if math.isfinite(j.max_velocity):
        extras.setdefault(j.name, {})["max_velocity"] = j.max_velocity
    if j.kind is JointKind.FREE and math.isfinite(j.max_effort):
        extras.setdefault(j.name, {})["max_effort"] = j.max_effort


def _mesh(asset: etree._Element, assets: dict[str, str], file: str, scale: Any = None) -> str | None:
    """Name of a mesh asset for an existing STL/OBJ file (None when MuJoCo could not load it)."""
    p = Path(file)
    if not p.is_file() or p.suffix.lower() not in (".stl", ".obj", ".msh"):
        return None
    key = f"{p.resolve()}|{scale}"
    if key not in assets:
        assets[key] = unique(p.stem, set(assets.values()))
        el = etree.SubElement(asset, "mesh", name=assets[key], file=str(p.resolve()))
        if scale is not None:
            el.set("scale", fmt_floats(scale))
    return assets[key]


def _geoms(body: etree._Element, asset: etree._Element, assets: dict[str, str], meta: Any, meshes: list[Any],
           sticks: list[np.ndarray]) -> None:
    written = 0
    for g in meta.get("geoms", []):  # from MJCF
        kind = g.get("type")
        T = np.array(g["pose"])
        size = list(g.get("size", []))
        if kind in ("capsule", "cylinder") and "half_length" in g:
            size = [size[0], g["half_length"]]
        elif kind in ("box", "ellipsoid") and "half_length" in g:
            size = [size[0], size[0], g["half_length"]]
        if kind == "mesh":
            name = _mesh(asset, assets, g.get("mesh_path") or "")
            if name is None:
                continue
            el = etree.SubElement(body, "geom", type="mesh", mesh=name)
        elif kind in ("sphere", "capsule", "cylinder", "ellipsoid", "box") and size and min(size) > 0:
            el = etree.SubElement(body, "geom", type=kind, size=fmt_floats(size))
        else:
            continue
        _pose_attrs(el, T)
        written += 1
    for v in meta.get("visuals", []):  # from URDF
        T = np.array(v.get("origin", np.eye(4)))
        kind = v.get("type")
        if kind == "box" and min(v["size"]) > 0:
            el = etree.SubElement(body, "geom", type="box", size=fmt_floats(np.array(v["size"]) / 2.0))
        elif kind == "sphere" and v["radius"] > 0:
            el = etree.SubElement(body, "geom", type="sphere", size=fmt_floats([v["radius"]]))
        elif kind in ("cylinder", "capsule") and v["radius"] > 0 and v["length"] > 0:
            el = etree.SubElement(body, "geom", type=kind, size=fmt_floats([v["radius"], v["length"] / 2.0]))
        elif kind == "mesh":
            scale = v.get("scale") if isinstance(v.get("scale"), list) and len(v["scale"]) == 3 else None
            name = _mesh(asset, assets, v.get("mesh_path") or "", scale)
            if name is None:
                continue
            el = etree.SubElement(body, "geom", type="mesh", mesh=name)
        else:
            continue
        _pose_attrs(el, T)
        written += 1
    for f in meshes:  # HRDF mesh frames
        name = _mesh(asset, assets, f.name)
        if name is not None:
            _pose_attrs(etree.SubElement(body, "geom", type="mesh", mesh=name), f.offset)
            written += 1
    if not written:
        for end in sticks:
            etree.SubElement(body, "geom", type="capsule", size=repr(_BONE_RADIUS),
                             fromto=fmt_floats([0.0, 0.0, 0.0, *end]))
