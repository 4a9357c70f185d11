"""URDF reader: links, joints, inertials and frames into a :class:`RobotModel`.

Semantics follow the ROS URDF specification as implemented by urdfdom (which pinocchio, ROS and
MoveIt use), checked side by side with pinocchio and MuJoCo in the tests:

* The root link is welded to the world (``floating_base=True`` puts a free joint, named
  ``root_joint`` like pinocchio's, between the world and the root link).
* A link without ``<inertial>`` is massless. Inertia tensors are given in the ``<inertial>``
  origin's axes and stored rotated into the link axes.
* Joint origins are ``xyz`` + fixed-axis ``rpy`` (``R = Rz(yaw) Ry(pitch) Rx(roll)``); the axis
  (default ``1 0 0``, normalised) is in the joint frame. ``continuous`` joints are unbounded
  revolute joints with one coordinate (pinocchio uses cos/sin instead).
* ``planar`` joints become a chain of two massless bodies and the child: prismatic along ``u``,
  prismatic along ``v`` and revolute about the plane normal ``n`` (the joint axis), with
  coordinates ``<joint>_x``, ``<joint>_y``, ``<joint>_theta``. ``u`` is the coordinate axis least
  aligned with ``n`` projected onto the plane, ``v = n × u`` (for ``n = z``: x, y).
* ``floating`` joints are free joints (``x y z qw qx qy qz`` relative to the joint origin).
* ``<mimic>`` is kept in the joint's metadata; kinematics treat mimic joints as independent
  coordinates (as pinocchio 2 does) — apply ``q[j] = multiplier * q[leader] + offset`` yourself.
* ``<visual>``, ``<collision>``, materials and transmissions are kept as metadata. Mesh file
  names (``package://``, ``file://`` or relative) are resolved where possible; missing meshes are
  reported in ``model.metadata["missing_meshes"]`` and one warning, never an error.
* Drake's un-namespaced ``<frame name link xyz rpy>`` becomes a frame of kind ``"frame"``.
  Drake's extensions (:mod:`hebictl.formats._urdf_drake`, checked against Drake 1.51):
  ``<drake:joint>`` ball (quaternion), universal (``_axis1`` about x, ``_axis2`` about y: Drake
  ignores the axis), screw (``_rotation``, ``_translation``; ``drake:screw_thread_pitch`` in
  metadata ``screw_pitch``) and planar (also the standard spelling: plane from the axis as Drake
  does, damping one or three values); ``<limit drake:acceleration>`` → joint metadata
  ``max_acceleration``; a SimpleTransmission's ``<actuator>`` ``drake:rotor_inertia``,
  ``drake:gear_ratio``, ``drake:controller_gains`` → joint metadata and, as Drake applies them
  (one-DoF joint, effort limit not 0), ``Joint.armature`` = gear_ratio² · rotor_inertia (a screw's
  on ``_rotation``); ``<mimic>``/``<drake:mimic>`` metadata; ``drake:capsule``/``drake:ellipsoid``
  shapes, ``drake:proximity_properties`` and ``drake:declare_convex`` in visual/collision metadata
  (inertia stays the explicit ``<inertial>``); collision filter groups, ball constraints, bushings,
  tendon constraints and spring-dampers in ``model.metadata["drake"]``. Other namespaced
  elements and ``<gazebo>`` are ignored with a warning; ``xacro:`` elements are an error.
* Frames added: ``"com"`` (one per link with mass, at its centre of mass, link axes),
  ``"output"`` and ``"end_effector"`` (the frames of leaf links, in body order). A file written
  by :func:`hebictl.formats.write_urdf.write_urdf` carries ``<hebictl:frame>`` elements instead,
  which restore the original frames exactly.
* Bodies (and so coordinates) follow the file's joint order when it lists parents first (files
  written by hebictl do), else depth-first with children in file order, like pinocchio.
* Limits written as ±1.7976931348623157e308 (the largest double, which hebictl's writer uses
  for "unbounded" because URDF has no infinity) read back as ±inf.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError, ModelError
from hebictl.formats import _urdf_drake as drake
from hebictl.formats._sdf_build import joint_stages
from hebictl.formats._xml import (
    HEBICTL_NS,
    add_standard_frames,
    attr_float,
    attr_floats,
    elements,
    line_of,
    local_name,
    namespace,
    parse_xml,
    require,
    rpy_matrix,
    transform,
)
from hebictl.formats.writers import unique
from hebictl.model.tree import Inertia, Joint, JointKind, ModelBuilder

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_ONE_DOF = ("revolute", "continuous", "prismatic", "screw")
_CHAIN_SUFFIXES = {"planar": ("_x", "_y", "_theta"), "universal": ("_axis1", "_axis2"),
                   "screw": ("_rotation", "_translation")}
_KNOWN_TOP = {"link", "joint", "material", "transmission", "gazebo", "frame"}
_LINK_CHILDREN = {"inertial", "visual", "collision"}
_JOINT_CHILDREN = {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic", "safety_controller",
                   "calibration"}
_XACRO_NS = ("http://ros.org/wiki/xacro", "http://www.ros.org/wiki/xacro")
DBL_MAX = 1.7976931348623157e308
_MASSLESS = Inertia.zero()


@dataclass
class _Link:
    name: str
    elem: etree._Element
    inertia: Inertia
    metadata: dict[str, Any]


@dataclass
class _Joint:
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


class _Reader:
    """One parse of one URDF document (keeps the file name for error messages)."""

    def __init__(self, file: str, base_dir: Path | None, package_map: Mapping[str, Path] | None) -> None:
        self.file = file
        self.base_dir = base_dir
        self.package_map = {k: Path(v) for k, v in (package_map or {}).items()}
        self.missing_meshes: list[str] = []
        self.ignored: dict[str, int] = {}
        self.resolved: dict[str, Path | None] = {}
        self.ancestors = () if base_dir is None else (base_dir, *base_dir.parents)
        self.drake_notes: list[str] = []  # extensions Drake would skip (and so do we), for one warning

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        return FormatError(message, self.file, line_of(elem))

    # ------------------------------------------------------------------ elements
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
        mass_el = el.find("mass")
        if mass_el is None:
            raise self.fail(f"link {name!r}: <inertial> needs a <mass> element", el)
        mass = attr_float(mass_el, "value", self.file)
        if mass is None:
            raise self.fail(f"link {name!r}: <mass> is missing the required attribute 'value'", mass_el)
        if mass < 0:
            raise self.fail(f"link {name!r}: negative mass {mass}", mass_el)
        in_el = el.find("inertia")
        if in_el is None:
            raise self.fail(f"link {name!r}: <inertial> needs an <inertia> element", el)
        vals = {}
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            v = attr_float(in_el, key, self.file)
            if v is None:
                raise self.fail(f"link {name!r}: <inertia> is missing the required attribute {key!r}", in_el)
            vals[key] = v
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
            if path is None:
                self.missing_meshes.append(uri)
            if drake.drake_child(shape, "declare_convex") is not None:
                out["declare_convex"] = True
        else:
            out["shape_element"] = etree.tostring(shape, encoding="unicode")
        mat = shape_parent.find("material")
        if mat is not None:
            out["material"] = _material(mat)
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
        candidates: list[Path] = []
        if uri.startswith("package://"):
            pkg, _, rest = uri[len("package://"):].partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / rest)
            candidates.extend(anc / rest for anc in self.ancestors if anc.name == pkg)
        elif uri.startswith("file://"):
            candidates.append(Path(uri[len("file://"):]))
        elif "://" not in uri:
            p = Path(uri)
            candidates.append(p if p.is_absolute() or self.base_dir is None else self.base_dir / p)
        for c in candidates:
            if c.is_file():
                return c.resolve()
        return None

    def link(self, el: etree._Element) -> _Link:
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
        return _Link(name, el, self.inertial(el, name), meta)

    def joint(self, el: etree._Element, is_drake: bool = False) -> _Joint:
        f = self.file
        name = require(el, "name", f)
        jtype = require(el, "type", f)
        if jtype in drake.UNSUPPORTED_JOINT_TYPES:
            raise self.fail(f"joint {name!r}: Drake's {jtype} joint is not supported by hebictl", el)
        if is_drake and jtype not in drake.DRAKE_JOINT_TYPES:
            hint = " (a standard type: write it as <joint>)" if jtype in _JOINT_TYPES else ""
            raise self.fail(f"<drake:joint> {name!r} has type {jtype!r}{hint}; expected one of "
                            f"{', '.join(drake.DRAKE_JOINT_TYPES)}", el)
        if not is_drake and jtype in drake.DRAKE_JOINT_TYPES and jtype not in _JOINT_TYPES:
            raise self.fail(f"joint {name!r} of type {jtype} is one of Drake's joint types: write it as <drake:joint> "
                            f"(xmlns:drake=\"{drake.DRAKE_NS}\")", el)
        if jtype not in _JOINT_TYPES + drake.DRAKE_JOINT_TYPES:
            raise self.fail(f"joint {name!r} has unknown type {jtype!r}; expected one of {', '.join(_JOINT_TYPES)} "
                            f"(or, as <drake:joint>, {', '.join(drake.DRAKE_JOINT_TYPES)})", el)
        parent_el, child_el = el.find("parent"), el.find("child")
        if parent_el is None or child_el is None:
            raise self.fail(f"joint {name!r} needs both <parent link=...> and <child link=...>", el)
        parent, child = require(parent_el, "link", f), require(child_el, "link", f)
        axis_el = el.find("axis")
        axis = np.array([1.0, 0.0, 0.0])
        if axis_el is not None:
            axis = attr_floats(axis_el, "xyz", f, 3, (1.0, 0.0, 0.0))
            norm = float(np.linalg.norm(axis))
            if jtype not in ("fixed", "floating", "ball", "universal") and norm < 1e-12:
                raise self.fail(f"joint {name!r} has a zero axis", axis_el)
            if norm > 0:
                axis = axis / norm
        j = _Joint(name, jtype, el, parent, child, self.origin(el), axis, drake=is_drake)
        limit = el.find("limit")
        if limit is not None and is_drake:
            # Drake reads no <limit> of its own joint types (a standard planar joint keeps its ratings)
            self.ignored[f"<{jtype} joint><limit>"] = self.ignored.get(f"<{jtype} joint><limit>", 0) + 1
            limit = None
        if limit is None and jtype in ("revolute", "prismatic"):
            raise self.fail(f"joint {name!r} of type {jtype} needs a <limit effort=... velocity=...> element", el)
        if limit is not None:
            for key in ("effort", "velocity"):
                if limit.get(key) is None:
                    raise self.fail(f"joint {name!r}: <limit> is missing the required attribute {key!r}", limit)
            j.effort = _unbounded(attr_float(limit, "effort", f))
            j.velocity = _unbounded(attr_float(limit, "velocity", f))
            if j.effort < 0 or j.velocity < 0:
                raise self.fail(f"joint {name!r}: effort and velocity limits must be >= 0", limit)
            if jtype in ("revolute", "prismatic"):
                j.lower = _unbounded(attr_float(limit, "lower", f, 0.0))
                j.upper = _unbounded(attr_float(limit, "upper", f, 0.0))
                if j.lower > j.upper:
                    raise self.fail(f"joint {name!r}: lower limit {j.lower} > upper limit {j.upper}", limit)
            acc = drake.acceleration_limit(limit, f)
            if acc is not None:
                j.metadata["max_acceleration"] = acc
        dyn = el.find("dynamics")
        if dyn is not None:
            if jtype == "planar" and dyn.get("damping") is not None:  # Drake: translation x, y and rotation
                damping = attr_floats(dyn, "damping", f, (1, 3))
                assert damping is not None
                j.metadata["planar_damping"] = tuple(float(d) for d in np.broadcast_to(damping, 3))
            else:
                j.damping = attr_float(dyn, "damping", f, 0.0)
            j.friction = attr_float(dyn, "friction", f, 0.0)
        if jtype == "screw":
            j.metadata["screw_pitch"] = drake.screw_pitch(el, name, f)
        for tag, mimic in (("mimic", el.find("mimic")), ("drake:mimic", drake.drake_child(el, "mimic"))):
            if mimic is not None:
                j.metadata["mimic"] = {"joint": require(mimic, "joint", f),
                                       "multiplier": attr_float(mimic, "multiplier", f, 1.0),
                                       "offset": attr_float(mimic, "offset", f, 0.0), "line": mimic.sourceline,
                                       "element": tag}
        for key in ("safety_controller", "calibration"):
            sub = el.find(key)
            if sub is not None:
                j.metadata[key] = dict(sub.attrib)
        for child in elements(el):
            if drake.is_drake(child) and local_name(child) in ("mimic", "screw_thread_pitch"):
                continue
            if namespace(child) is not None:
                self.note_extension(child)
            elif local_name(child) not in _JOINT_CHILDREN:
                key = f"<joint><{local_name(child)}>"
                self.ignored[key] = self.ignored.get(key, 0) + 1
        j.metadata["line"] = el.sourceline
        return j

    def note_extension(self, el: etree._Element) -> None:
        ns = namespace(el)
        if ns in _XACRO_NS or (el.prefix == "xacro"):
            raise self.fail(f"<{el.prefix}:{local_name(el)}> is a xacro macro: expand the file with xacro first", el)
        if ns == HEBICTL_NS:
            return
        key = f"<{el.prefix or ns}:{local_name(el)}>"
        self.ignored[key] = self.ignored.get(key, 0) + 1

    # ------------------------------------------------------------------ document
    def read(self, root: etree._Element, floating_base: bool) -> RobotModel:
        if local_name(root) != "robot" or namespace(root) is not None:
            raise self.fail(f"URDF root element must be <robot>, got <{local_name(root)}>", root)
        robot_name = root.get("name")
        if robot_name is None:
            raise self.fail("<robot> is missing the required attribute 'name'", root)
        links: dict[str, _Link] = {}
        joints: dict[str, _Joint] = {}
        materials: dict[str, Any] = {}
        transmissions: list[dict[str, Any]] = []
        drake_frames: list[etree._Element] = []
        hebictl_frames: list[etree._Element] = []
        drake_elements: list[etree._Element] = []
        transmission_elements: list[etree._Element] = []
        written_by_hebictl = False
        for el in elements(root):
            tag, ns = local_name(el), namespace(el)
            if ns == drake.DRAKE_NS and tag == "joint":
                j = self.joint(el, is_drake=True)
                if j.name in joints:
                    raise self.fail(f"duplicate joint name {j.name!r} (first at line {line_of(joints[j.name].elem)})",
                                    el)
                joints[j.name] = j
                continue
            if ns == drake.DRAKE_NS and tag in drake.MODEL_ELEMENTS:
                drake_elements.append(el)
                continue
            if ns is not None:
                self.note_extension(el)
                if ns == HEBICTL_NS and tag == "frame":
                    hebictl_frames.append(el)
                written_by_hebictl = written_by_hebictl or (ns == HEBICTL_NS and tag == "model")
                continue
            if tag == "link":
                link = self.link(el)
                if link.name in links:
                    first = line_of(links[link.name].elem)
                    raise self.fail(f"duplicate link name {link.name!r} (first at line {first})", el)
                links[link.name] = link
            elif tag == "joint":
                j = self.joint(el)
                if j.name in joints:
                    raise self.fail(f"duplicate joint name {j.name!r} (first at line {line_of(joints[j.name].elem)})",
                                    el)
                joints[j.name] = j
            elif tag == "material":
                materials[require(el, "name", self.file)] = _material(el)
            elif tag == "transmission":
                transmissions.append(_transmission(el))
                transmission_elements.append(el)
            elif tag == "frame":
                drake_frames.append(el)
            else:  # <gazebo> (simulator settings, which Drake ignores too) and unknown elements
                self.ignored[f"<{tag}>"] = self.ignored.get(f"<{tag}>", 0) + 1
        if not links:
            raise self.fail("URDF has no <link>", root)
        # a mimic names a joint, or one coordinate of a joint hebictl splits (hebictl's writer does that)
        coordinates = set(joints) | {j.name + suffix for j in joints.values()
                                     for suffix in _CHAIN_SUFFIXES.get(j.type, ())}
        for j in joints.values():
            mimic = j.metadata.get("mimic")
            if mimic is not None and (mimic["joint"] not in coordinates or mimic["joint"] == j.name):
                what = "itself" if mimic["joint"] == j.name else f"joint {mimic['joint']!r}, which does not exist"
                raise FormatError(f"joint {j.name!r}: <{mimic['element']}> names {what}", self.file, mimic["line"])
        for el, info in zip(transmission_elements, transmissions, strict=True):
            self.transmission(el, info, joints)
        frame_names = set(links) | {el.get("name", "") for el in drake_frames}
        drake_meta = drake.model_elements(drake_elements, set(links), frame_names, self.file, self.note_extension)
        root_link, children = self.tree(links, joints, root)

        builder = ModelBuilder(robot_name, source=self.file if self.file != "<string>" else None, format="urdf")
        index: dict[str, int] = {}
        used_joint_names = set(joints)
        rl = links[root_link]
        root_joint = Joint.fixed()
        if floating_base:
            jname = unique("root_joint", used_joint_names, first_suffix=1)
            root_joint = Joint(jname, JointKind.FREE)
        index[root_link] = builder.add_body(root_link, -1, None, root_joint, rl.inertia, rl.metadata)
        for j in self.joint_order(root_link, joints, children):
            self.add_joint(builder, index, j, links[j.child])

        if hebictl_frames or written_by_hebictl:
            self.restore_frames(builder, index, hebictl_frames)
        else:
            add_standard_frames(builder)
            for el in drake_frames:
                fname = require(el, "name", self.file)
                lname = require(el, "link", self.file)
                if lname not in index:
                    raise self.fail(f"<frame {fname!r}> refers to unknown link {lname!r}", el)
                xyz = attr_floats(el, "xyz", self.file, 3, (0.0, 0.0, 0.0))
                rpy = attr_floats(el, "rpy", self.file, 3, (0.0, 0.0, 0.0))
                builder.add_frame("frame", index[lname], transform(rpy_matrix(rpy), xyz), fname)
        if self.missing_meshes:
            warnings.warn(f"{self.file}: {len(self.missing_meshes)} mesh file(s) not found (first: "
                          f"{self.missing_meshes[0]}); kinematics and dynamics do not need them", stacklevel=3)
        if self.ignored:
            warnings.warn(f"{self.file}: ignored elements: "
                          + ", ".join(f"{k} x{v}" for k, v in sorted(self.ignored.items())), stacklevel=3)
        if self.drake_notes:
            warnings.warn(f"{self.file}: " + "; ".join(self.drake_notes), stacklevel=3)
        meta = {"root_link": root_link, "materials": materials, "transmissions": transmissions,
                "missing_meshes": self.missing_meshes, "ignored_elements": dict(self.ignored)}
        if drake_meta:
            meta["drake"] = drake_meta
        return builder.build(metadata=meta)

    def transmission(self, el: etree._Element, info: dict[str, Any], joints: dict[str, _Joint]) -> None:
        """Apply a transmission's Drake actuator extensions to its joint, with Drake's rules: only a
        SimpleTransmission makes an actuator, not on a fixed joint or one with a zero effort limit,
        and only on a one-degree-of-freedom joint; reflected inertia = gear_ratio² · rotor_inertia."""
        actuator = el.find("actuator")
        ext = drake.actuator_extensions(actuator, self.file) if actuator is not None else {}
        if actuator is not None:
            info["actuators"][0].update(ext)
        if not ext:
            return
        where = f"transmission {info['name']!r} (line {el.sourceline})"
        if "SimpleTransmission" not in (info.get("type") or el.get("type") or ""):
            self.drake_notes.append(f"{where} is not a SimpleTransmission: Drake ignores it, and its actuator's "
                                    "drake: settings")
            return
        jel = el.find("joint")
        jname = jel.get("name") if jel is not None else None
        if not jname:
            raise self.fail(f"{where} needs a <joint name=...> for its drake: actuator settings", el)
        if jname not in joints:
            raise self.fail(f"transmission {info['name']!r} names joint {jname!r}, which does not exist", jel)
        j = joints[jname]
        if j.type == "fixed":
            self.drake_notes.append(f"{where} acts on fixed joint {jname!r}: Drake skips it")
            return
        if j.type not in _ONE_DOF:
            raise self.fail(f"transmission {info['name']!r}: Drake actuates only one-degree-of-freedom joints, and "
                            f"joint {jname!r} is {j.type}", jel)
        if j.effort == 0:
            self.drake_notes.append(f"{where} acts on joint {jname!r}, whose effort limit is 0: Drake skips it")
            return
        j.metadata.update({k: v for k, v in ext.items()})
        j.metadata["actuator"] = actuator.get("name") if actuator is not None else None
        if "rotor_inertia" in ext:
            reflected = ext["rotor_inertia"] * ext.get("gear_ratio", 1.0) ** 2
            j.metadata["reflected_inertia"] = j.metadata.get("reflected_inertia", 0.0) + reflected
            j.armature += reflected

    def tree(self, links: dict[str, _Link], joints: dict[str, _Joint],
             root: etree._Element) -> tuple[str, dict[str, list[_Joint]]]:
        """Check the link graph is one tree; return its root and each link's child joints (file order)."""
        parent_joint: dict[str, _Joint] = {}
        children: dict[str, list[_Joint]] = {}
        for j in joints.values():
            for role, lname in (("parent", j.parent), ("child", j.child)):
                if lname not in links:
                    hint = (" (Drake treats 'world' as implicit; URDF needs <link name=\"world\"/>)"
                            if lname == "world" else "")
                    raise self.fail(f"joint {j.name!r}: {role} link {lname!r} is not defined{hint}", j.elem)
            if j.parent == j.child:
                raise self.fail(f"joint {j.name!r} connects link {j.child!r} to itself", j.elem)
            if j.child in parent_joint:
                first = parent_joint[j.child]
                raise self.fail(f"link {j.child!r} has two parents: joint {first.name!r} (line {line_of(first.elem)}) "
                                f"and joint {j.name!r}", j.elem)
            parent_joint[j.child] = j
            children.setdefault(j.parent, []).append(j)
        roots = [n for n in links if n not in parent_joint]
        if len(roots) > 1:
            raise self.fail(f"URDF must have exactly one root link, found {len(roots)}: "
                            + ", ".join(repr(r) for r in roots[:5]) + (" ..." if len(roots) > 5 else ""),
                            links[roots[1]].elem)
        if not roots:
            raise self.fail("the joints form a cycle: every link has a parent, so there is no root link", root)
        seen = {roots[0]}
        stack = [roots[0]]
        while stack:
            for j in children.get(stack.pop(), []):
                seen.add(j.child)
                stack.append(j.child)
        if len(seen) != len(links):
            loop = next(n for n in links if n not in seen)
            raise self.fail(f"the joints form a cycle through link {loop!r} (not reachable from root "
                            f"{roots[0]!r})", parent_joint[loop].elem)
        return roots[0], children

    @staticmethod
    def joint_order(root: str, joints: dict[str, _Joint], children: dict[str, list[_Joint]]) -> list[_Joint]:
        """Joints in file order when that already lists parents first (hebictl's writer does), else depth first
        with children in file order (pinocchio's order)."""
        placed = {root}
        for j in joints.values():
            if j.parent not in placed:
                break
            placed.add(j.child)
        else:
            return list(joints.values())
        out: list[_Joint] = []
        stack = list(reversed(children.get(root, [])))
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(reversed(children.get(j.child, [])))
        return out

    def restore_frames(self, builder: ModelBuilder, index: dict[str, int], frames: list[etree._Element]) -> None:
        """Frames saved by hebictl's URDF writer: kind, link ('' = base), name, pose."""
        for el in frames:
            kind = require(el, "kind", self.file)
            lname = el.get("link", "")
            if lname and lname not in index:
                raise self.fail(f"<hebictl:frame> refers to unknown link {lname!r}", el)
            xyz = attr_floats(el, "xyz", self.file, 3, (0.0, 0.0, 0.0))
            rpy = attr_floats(el, "rpy", self.file, 3, (0.0, 0.0, 0.0))
            builder.add_frame(kind, index[lname] if lname else -1, transform(rpy_matrix(rpy), xyz),
                              el.get("name"))

    def add_joint(self, builder: ModelBuilder, index: dict[str, int], j: _Joint, child: _Link) -> None:
        parent = index[j.parent]
        meta = {**j.metadata, "urdf_type": j.type}
        if j.drake:
            meta["drake_joint"] = True
        common = dict(max_velocity=j.velocity, max_effort=j.effort, damping=j.damping, friction=j.friction)
        try:
            if j.type in ("revolute", "continuous", "prismatic"):
                kind = JointKind.PRISMATIC if j.type == "prismatic" else JointKind.REVOLUTE
                joint = Joint(j.name, kind, tuple(j.axis), lower=j.lower, upper=j.upper, metadata=meta,
                              armature=j.armature, **common)
                index[child.name] = builder.add_body(child.name, parent, j.origin, joint, child.inertia,
                                                     child.metadata)
            elif j.type == "fixed":
                index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                     Joint(j.name, JointKind.FIXED, metadata=meta),
                                                     child.inertia, child.metadata)
            elif j.type == "floating":
                index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                     Joint(j.name, JointKind.FREE, metadata=meta, **common),
                                                     child.inertia, child.metadata)
            else:  # planar, ball, screw, universal: the chain SDF's Drake joints become
                index[child.name] = self.add_chain(builder, parent, j, child, meta)
        except ModelError as exc:
            raise self.fail(f"joint {j.name!r}: {exc}", j.elem) from None

    def add_chain(self, builder: ModelBuilder, parent: int, j: _Joint, child: _Link, meta: dict[str, Any]) -> int:
        """A joint the kernels have no kind for, as Drake defines it: massless bodies between one-DoF
        stages (:func:`hebictl.formats._sdf_build.joint_stages`); the child sits on the joint frame."""
        R = np.eye(3)
        if j.type == "planar":  # Drake: the plane's z is the axis, x/y the rotation closest to the joint frame
            R = drake.closest_rotation_from_z(j.axis)
            meta = {**meta, "planar_normal": tuple(j.axis)}
        axes = [np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])] if j.type == "universal" else [j.axis]
        stages = joint_stages(j.type, axes, [{"damping": j.damping}] * 2)
        dampings = meta.get("planar_damping", (0.0,) * 3)
        at, placement = parent, j.origin
        for k, (kind, axis, suffix, lim) in enumerate(stages):
            damping = dampings[k] if j.type == "planar" else lim.get("damping", 0.0)
            joint = Joint(j.name + suffix, kind, tuple(R @ axis), damping=damping, friction=j.friction,
                          max_velocity=j.velocity, max_effort=j.effort, armature=j.armature if k == 0 else 0.0,
                          metadata=meta)
            last = k == len(stages) - 1
            name = child.name if last else f"{child.name}__{j.name}{suffix}"
            at = builder.add_body(name, at, placement, joint, child.inertia if last else None,
                                  child.metadata if last else {"synthetic": j.type, "joint": j.name})
            placement = None
        return at


def _unbounded(value: float | None) -> float:
    if value is None:
        return math.inf
    if value >= DBL_MAX:
        return math.inf
    if value <= -DBL_MAX:
        return -math.inf
    return value


def _is_numbers(text: str) -> bool:
    try:
        [float(t) for t in text.split()]
    except ValueError:
        return False
    return True


def _material(el: etree._Element) -> dict[str, Any]:
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


def _transmission(el: etree._Element) -> dict[str, Any]:
    out: dict[str, Any] = {"name": el.get("name"), "line": el.sourceline}
    t = el.find("type")
    if t is not None and t.text:
        out["type"] = t.text.strip()
    out["joints"] = [j.get("name") for j in el.findall("joint")]
    out["actuators"] = []
    for a in el.findall("actuator"):
        red = a.find("mechanicalReduction")
        out["actuators"].append({"name": a.get("name"),
                                 "reduction": red.text.strip() if red is not None and red.text else None})
    return out


# --------------------------------------------------------------------------- public API
def load_urdf(path: str | Path, *, floating_base: bool = False,
              package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read a URDF file.

    ``floating_base`` adds a free joint at the root link; ``package_map`` maps ROS package
    names to folders for ``package://`` mesh URIs (meshes are optional: see module docstring).
    """
    p = Path(path)
    root = parse_xml(p, str(p))
    return _Reader(str(p), p.resolve().parent, package_map).read(root, floating_base)


def load_urdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     floating_base: bool = False, package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read URDF text; relative mesh paths resolve against ``base_dir``."""
    root = parse_xml(text, source_name)
    return _Reader(source_name, Path(base_dir) if base_dir is not None else None, package_map).read(root, floating_base)
