"""URDF reader: joints, the kinematic tree, transmissions and frames into a :class:`RobotModel`.

Links (inertials, visuals, collisions, mesh files) are read by :mod:`hebictl.formats.urdf.links`
and Drake's extensions by :mod:`hebictl.formats.urdf.drake`. What the reader follows (urdfdom's
semantics, as pinocchio reads them) is listed in :mod:`hebictl.formats.urdf`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl.errors import FormatError, ModelError, UrdfWarning
from hebictl.formats._xml import (
    HEBICTL_NS,
    attr_float,
    attr_floats,
    elements,
    line_of,
    local_name,
    namespace,
    parse_xml,
    require,
)
from hebictl.formats.building import add_standard_frames, joint_stages, unique
from hebictl.formats.rotations import rpy_matrix, transform
from hebictl.formats.urdf.links import LinkReader, UrdfJoint, UrdfLink, read_material
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Joint, JointKind

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
DBL_MAX = 1.7976931348623157e308


class _Reader(LinkReader):
    """One parse of one URDF document: joints, the tree and its order, transmissions, frames."""

    # ------------------------------------------------------------------ elements

    def joint(self, el: etree._Element, is_drake: bool = False) -> UrdfJoint:  # noqa: C901 (one branch per attribute of the element it reads)
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
        j = UrdfJoint(name, jtype, el, parent, child, self.origin(el), axis, drake=is_drake)
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

    # ------------------------------------------------------------------ document
    def read(self, root: etree._Element, floating_base: bool) -> RobotModel:  # noqa: C901 (one branch per attribute of the element it reads)
        if local_name(root) != "robot" or namespace(root) is not None:
            raise self.fail(f"URDF root element must be <robot>, got <{local_name(root)}>", root)
        robot_name = root.get("name")
        if robot_name is None:
            raise self.fail("<robot> is missing the required attribute 'name'", root)
        links: dict[str, UrdfLink] = {}
        joints: dict[str, UrdfJoint] = {}
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
                materials[require(el, "name", self.file)] = read_material(el)
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
                          f"{self.missing_meshes[0]}); kinematics and dynamics do not need them",
                          category=UrdfWarning, stacklevel=3)
        if self.outside_meshes:
            warnings.warn(f"{self.file}: {len(self.outside_meshes)} mesh file(s) outside the model's folder not "
                          f"followed (confine=True; first: {self.outside_meshes[0]}); kinematics and dynamics do not "
                          "need them, and exports leave them out unless allowed_roots=[...] / --allow-root DIR lists "
                          "their folder",
                          category=UrdfWarning, stacklevel=3)
        if self.ignored:
            warnings.warn(f"{self.file}: ignored elements: "
                          + ", ".join(f"{k} x{v}" for k, v in sorted(self.ignored.items())),
                          category=UrdfWarning, stacklevel=3)
        if self.drake_notes:
            warnings.warn(f"{self.file}: " + "; ".join(self.drake_notes),
            category=UrdfWarning, stacklevel=3)
        meta = {"root_link": root_link, "materials": materials, "transmissions": transmissions,
                "missing_meshes": self.missing_meshes,
                "outside_meshes": self.outside_meshes, "ignored_elements": dict(self.ignored)}
        if drake_meta:
            meta["drake"] = drake_meta
        return builder.build(metadata=meta)

    def transmission(self, el: etree._Element, info: dict[str, Any], joints: dict[str, UrdfJoint]) -> None:
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
            ratio = ext.get("gear_ratio", 1.0)
            reflected = ext["rotor_inertia"] * ratio * ratio  # inf, not OverflowError, when it overflows
            if not math.isfinite(reflected):
                raise self.fail(f"transmission {info['name']!r}: rotor_inertia {ext['rotor_inertia']:.3g} times "
                                f"gear_ratio {ratio:.3g} squared overflows", actuator)
            j.metadata["reflected_inertia"] = j.metadata.get("reflected_inertia", 0.0) + reflected
            j.armature += reflected

    def tree(self, links: dict[str, UrdfLink], joints: dict[str, UrdfJoint],
             root: etree._Element) -> tuple[str, dict[str, list[UrdfJoint]]]:
        """Check the link graph is one tree; return its root and each link's child joints (file order)."""
        parent_joint: dict[str, UrdfJoint] = {}
        children: dict[str, list[UrdfJoint]] = {}
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
    def joint_order(root: str, joints: dict[str, UrdfJoint], children: dict[str, list[UrdfJoint]]) -> list[UrdfJoint]:
        """Joints in file order when that already lists parents first (hebictl's writer does), else depth first
        with children in file order (pinocchio's order)."""
        placed = {root}
        for j in joints.values():
            if j.parent not in placed:
                break
            placed.add(j.child)
        else:
            return list(joints.values())
        out: list[UrdfJoint] = []
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

    def add_joint(self, builder: ModelBuilder, index: dict[str, int], j: UrdfJoint, child: UrdfLink) -> None:
        parent = index[j.parent]
        meta = {**j.metadata, "urdf_type": j.type}
        if j.drake:
            meta["drake_joint"] = True
        try:
            if j.type in ("revolute", "continuous", "prismatic"):
                kind = JointKind.PRISMATIC if j.type == "prismatic" else JointKind.REVOLUTE
                joint = Joint(j.name, kind, tuple(j.axis), lower=j.lower, upper=j.upper, metadata=meta,
                              armature=j.armature, max_velocity=j.velocity, max_effort=j.effort, damping=j.damping,
                              friction=j.friction)
                index[child.name] = builder.add_body(child.name, parent, j.origin, joint, child.inertia,
                                                     child.metadata)
            elif j.type == "fixed":
                index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                     Joint(j.name, JointKind.FIXED, metadata=meta),
                                                     child.inertia, child.metadata)
            elif j.type == "floating":
                index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                     Joint(j.name, JointKind.FREE, metadata=meta,
                                                           max_velocity=j.velocity, max_effort=j.effort,
                                                           damping=j.damping, friction=j.friction),
                                                     child.inertia, child.metadata)
            else:  # planar, ball, screw, universal: the chain SDF's Drake joints become
                index[child.name] = self.add_chain(builder, parent, j, child, meta)
        except ModelError as exc:
            raise self.fail(f"joint {j.name!r}: {exc}", j.elem) from None

    def add_chain(self, builder: ModelBuilder, parent: int, j: UrdfJoint, child: UrdfLink, meta: dict[str, Any]) -> int:
        """A joint the kernels have no kind for, as Drake defines it: massless bodies between one-DoF
        stages (:func:`hebictl.formats.building.joint_stages`); the child sits on the joint frame."""
        R = np.eye(3)
        if j.type == "planar":  # Drake: the plane's z is the axis, x/y the rotation closest to the joint frame
            R = drake.closest_rotation_from_z(j.axis)
            meta = {**meta, "planar_normal": tuple(j.axis)}
        axes = [np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])] if j.type == "universal" else [j.axis]
        stages = joint_stages(j.type, axes, [{"damping": j.damping}] * 2)
        dampings = meta.get("planar_damping", (0.0,) * 3)
        at = parent
        placement: np.ndarray | None = j.origin  # the first stage's; the later ones sit on the joint frame
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
              package_map: Mapping[str, Path] | None = None, strict: bool = False) -> RobotModel:
    """Read a URDF file.

    ``floating_base`` adds a free joint at the root link; ``package_map`` maps ROS package
    names to folders for ``package://`` mesh URIs (meshes are optional: see module docstring).
    ``strict=True`` rejects what pinocchio only tolerates (an incomplete ``<inertial>``) instead of
    reading it as pinocchio does with a :class:`~hebictl.errors.UrdfWarning`.
    """
    p = Path(path)
    root = parse_xml(p, str(p))
    return _Reader(str(p), p.resolve().parent, package_map, strict).read(root, floating_base)


def load_urdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     floating_base: bool = False, package_map: Mapping[str, Path] | None = None,
                     strict: bool = False) -> RobotModel:
    """Read URDF text; relative mesh paths resolve against ``base_dir`` (``strict`` as for :func:`load_urdf`)."""
    root = parse_xml(text, source_name)
    return _Reader(source_name, Path(base_dir) if base_dir is not None else None, package_map, strict).read(
        root, floating_base)
