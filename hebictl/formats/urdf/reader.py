"""URDF reader: a ``<robot>`` into a :class:`RobotModel`, through one
:class:`~hebictl.formats.urdf.context.ReadContext`.

The read is plain functions by concept, each taking the context: links (inertials, visuals,
collisions, mesh files) by :mod:`~hebictl.formats.urdf.links`, joints and transmissions by
:mod:`~hebictl.formats.urdf.joints`, the tree by :mod:`~hebictl.formats.urdf.tree`, Drake's
extensions by :mod:`~hebictl.formats.urdf.drake`. What the reader follows (urdfdom's semantics,
as pinocchio reads them) is listed in :mod:`hebictl.formats.urdf`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl.errors import FormatError, UrdfWarning
from hebictl.formats._xml import (
    HEBICTL_NS,
    attr_floats,
    elements,
    line_of,
    local_name,
    namespace,
    parse_xml,
    require,
)
from hebictl.formats.building import add_standard_frames, unique
from hebictl.formats.rotations import rpy_matrix, transform
from hebictl.formats.urdf.context import ReadContext
from hebictl.formats.urdf.joints import UrdfJoint, apply_transmission, read_joint, read_transmission
from hebictl.formats.urdf.links import UrdfLink, read_link, read_material
from hebictl.formats.urdf.tree import add_joint, check_tree, joint_order
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_CHAIN_SUFFIXES = {"planar": ("_x", "_y", "_theta"), "universal": ("_axis1", "_axis2"),
                   "screw": ("_rotation", "_translation")}


def read_robot(rc: ReadContext, root: etree._Element, floating_base: bool) -> RobotModel:
    """The ``<robot>``: its links, joints, materials, transmissions and frames into a model."""
    if local_name(root) != "robot" or namespace(root) is not None:
        raise rc.fail(f"URDF root element must be <robot>, got <{local_name(root)}>", root)

    robot_name = root.get("name")
    if robot_name is None:
        raise rc.fail("<robot> is missing the required attribute 'name'", root)

    doc = _read_elements(rc, root)
    links, joints, transmissions, drake_frames = doc.links, doc.joints, doc.transmissions, doc.drake_frames

    if not links:
        raise rc.fail("URDF has no <link>", root)

    _check_mimics(rc, joints)

    for el, info in zip(doc.transmission_elements, transmissions, strict=True):
        apply_transmission(rc, el, info, joints)

    frame_names = set(links) | {el.get("name", "") for el in drake_frames}
    drake_meta = drake.model_elements(doc.drake_elements, set(links), frame_names, rc.file, rc.note_extension)
    root_link, children = check_tree(rc, links, joints, root)

    builder = ModelBuilder(robot_name, source=rc.file if rc.file != "<string>" else None, format="urdf")
    index: dict[str, int] = {}
    used_joint_names = set(joints)
    rl = links[root_link]
    root_joint = Joint.fixed()
    if floating_base:
        jname = unique("root_joint", used_joint_names, first_suffix=1)
        root_joint = Joint(jname, JointKind.FREE)

    index[root_link] = builder.add_body(root_link, -1, None, root_joint, rl.inertia, rl.metadata)

    for j in joint_order(root_link, joints, children):
        add_joint(rc, builder, index, j, links[j.child])

    if doc.hebictl_frames or doc.written_by_hebictl:
        restore_frames(rc, builder, index, doc.hebictl_frames)
    else:
        add_standard_frames(builder)
        for el in drake_frames:
            fname = require(el, "name", rc.file)
            lname = require(el, "link", rc.file)
            if lname not in index:
                raise rc.fail(f"<frame {fname!r}> refers to unknown link {lname!r}", el)
            xyz = attr_floats(el, "xyz", rc.file, 3, (0.0, 0.0, 0.0))
            rpy = attr_floats(el, "rpy", rc.file, 3, (0.0, 0.0, 0.0))
            builder.add_frame("frame", index[lname], transform(rpy_matrix(rpy), xyz), fname)

    # stacklevel 3: the caller of load_urdf / load_urdf_string
    if rc.missing_meshes:
        warnings.warn(f"{rc.file}: {len(rc.missing_meshes)} mesh file(s) not found (first: "
                      f"{rc.missing_meshes[0]}); kinematics and dynamics do not need them",
                      category=UrdfWarning, stacklevel=3)

    if rc.outside_meshes:
        warnings.warn(f"{rc.file}: {len(rc.outside_meshes)} mesh file(s) outside the model's folder not "
                      f"followed (confine=True; first: {rc.outside_meshes[0]}); kinematics and dynamics do not "
                      "need them, and exports leave them out unless allowed_roots=[...] / --allow-root DIR lists "
                      "their folder",
                      category=UrdfWarning, stacklevel=3)

    if rc.ignored:
        warnings.warn(f"{rc.file}: ignored elements: "
                      + ", ".join(f"{k} x{v}" for k, v in sorted(rc.ignored.items())),
                      category=UrdfWarning, stacklevel=3)

    if rc.drake_notes:
        warnings.warn(f"{rc.file}: " + "; ".join(rc.drake_notes), category=UrdfWarning, stacklevel=3)

    meta = {"root_link": root_link, "materials": doc.materials, "transmissions": transmissions,
            "missing_meshes": rc.missing_meshes,
            "outside_meshes": rc.outside_meshes, "ignored_elements": dict(rc.ignored)}
    if drake_meta:
        meta["drake"] = drake_meta

    return builder.build(metadata=meta)


@dataclass
class _Elements:
    """The top-level elements of a ``<robot>``, read in file order."""

    links: dict[str, UrdfLink] = field(default_factory=dict)
    joints: dict[str, UrdfJoint] = field(default_factory=dict)
    materials: dict[str, Any] = field(default_factory=dict)
    transmissions: list[dict[str, Any]] = field(default_factory=list)
    transmission_elements: list[etree._Element] = field(default_factory=list)
    drake_frames: list[etree._Element] = field(default_factory=list)  # <frame> (Drake's extension)
    drake_elements: list[etree._Element] = field(default_factory=list)  # <drake:...> model elements
    hebictl_frames: list[etree._Element] = field(default_factory=list)  # <hebictl:frame> (hebictl's writer)
    written_by_hebictl: bool = False


def _read_elements(rc: ReadContext, root: etree._Element) -> _Elements:
    """Links, joints (URDF's and Drake's), materials, transmissions and frames; names must be unique."""
    doc = _Elements()
    links, joints = doc.links, doc.joints

    for el in elements(root):
        tag, ns = local_name(el), namespace(el)
        if ns == drake.DRAKE_NS and tag == "joint":
            j = read_joint(rc, el, is_drake=True)
            if j.name in joints:
                raise rc.fail(f"duplicate joint name {j.name!r} (first at line {line_of(joints[j.name].elem)})",
                              el)
            joints[j.name] = j
            continue
        if ns == drake.DRAKE_NS and tag in drake.MODEL_ELEMENTS:
            doc.drake_elements.append(el)
            continue
        if ns is not None:
            rc.note_extension(el)
            if ns == HEBICTL_NS and tag == "frame":
                doc.hebictl_frames.append(el)
            doc.written_by_hebictl = doc.written_by_hebictl or (ns == HEBICTL_NS and tag == "model")
            continue
        if tag == "link":
            link = read_link(rc, el)
            if link.name in links:
                first = line_of(links[link.name].elem)
                raise rc.fail(f"duplicate link name {link.name!r} (first at line {first})", el)
            links[link.name] = link
        elif tag == "joint":
            j = read_joint(rc, el)
            if j.name in joints:
                raise rc.fail(f"duplicate joint name {j.name!r} (first at line {line_of(joints[j.name].elem)})",
                              el)
            joints[j.name] = j
        elif tag == "material":
            doc.materials[require(el, "name", rc.file)] = read_material(el)
        elif tag == "transmission":
            doc.transmissions.append(read_transmission(el))
            doc.transmission_elements.append(el)
        elif tag == "frame":
            doc.drake_frames.append(el)
        else:  # <gazebo> (simulator settings, which Drake ignores too) and unknown elements
            rc.ignore(f"<{tag}>")

    return doc


def _check_mimics(rc: ReadContext, joints: dict[str, UrdfJoint]) -> None:
    """A mimic names a joint, or one coordinate of a joint hebictl splits (hebictl's writer does that)."""
    coordinates = set(joints) | {j.name + suffix for j in joints.values()
                                 for suffix in _CHAIN_SUFFIXES.get(j.type, ())}
    for j in joints.values():
        mimic = j.metadata.get("mimic")
        if mimic is not None and (mimic["joint"] not in coordinates or mimic["joint"] == j.name):
            what = "itself" if mimic["joint"] == j.name else f"joint {mimic['joint']!r}, which does not exist"
            raise FormatError(f"joint {j.name!r}: <{mimic['element']}> names {what}", rc.file, mimic["line"])


def restore_frames(rc: ReadContext, builder: ModelBuilder, index: dict[str, int],
                   frames: list[etree._Element]) -> None:
    """Frames saved by hebictl's URDF writer: kind, link ('' = base), name, pose."""
    for el in frames:
        kind = require(el, "kind", rc.file)
        lname = el.get("link", "")
        if lname and lname not in index:
            raise rc.fail(f"<hebictl:frame> refers to unknown link {lname!r}", el)
        xyz = attr_floats(el, "xyz", rc.file, 3, (0.0, 0.0, 0.0))
        rpy = attr_floats(el, "rpy", rc.file, 3, (0.0, 0.0, 0.0))
        builder.add_frame(kind, index[lname] if lname else -1, transform(rpy_matrix(rpy), xyz),
                          el.get("name"))


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
    return read_robot(ReadContext.create(str(p), p.resolve().parent, package_map, strict), root, floating_base)


def load_urdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     floating_base: bool = False, package_map: Mapping[str, Path] | None = None,
                     strict: bool = False) -> RobotModel:
    """Read URDF text; relative mesh paths resolve against ``base_dir`` (``strict`` as for :func:`load_urdf`)."""
    root = parse_xml(text, source_name)
    rc = ReadContext.create(source_name, Path(base_dir) if base_dir is not None else None, package_map, strict)
    return read_robot(rc, root, floating_base)
