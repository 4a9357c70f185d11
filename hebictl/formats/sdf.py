"""SDFormat (1.4-1.12) reader: models, nested models, includes and worlds into a RobotModel.

Semantics follow the SDFormat specification as libsdformat implements it, checked side by side
with Drake (which parses SDF through libsdformat) on the corpus in the tests:

* **Frames.** Links, joints, ``<frame>`` elements and nested models are frames; ``<pose
  relative_to>`` and ``<frame attached_to>`` (1.7+) are resolved by
  :mod:`hebictl.formats._sdf_frames`, with the specification's errors for unknown names,
  ``__root__``, self references and cycles. Defaults: a link or nested model is posed in the
  model frame, a frame relative to what it is attached to (default the model frame), a joint
  relative to its child frame; a ``placement_frame`` places that frame instead of the model frame.
* **Versions.** In 1.4 files joint axes of top-level models are expressed in the model frame
  (libsdformat's 1.4→1.5 conversion adds ``use_parent_model_frame``); in 1.5/1.6
  ``use_parent_model_frame=true`` does the same; 1.7+ uses ``xyz/@expressed_in`` (default: the
  joint frame). ``relative_to``/``attached_to``/``canonical_link`` need 1.7+, ``placement_frame``
  1.8+, scoped references ``A::B::frame`` 1.8+, ``merge`` includes and ``rotation_format``/
  ``degrees`` poses 1.9+, ``screw_thread_pitch`` 1.10+, ``inertial/@auto`` 1.11+.
* **Names.** A model file's own links and joints keep their names; nested models prefix theirs
  (``arm::gripper::finger``). A world's models are all loaded with ``<model>::`` prefixes, or
  one of them (``model=``) with names relative to it.
* **Bodies.** Links without ``<inertial>`` weigh SDFormat's default 1 kg with unit inertia (as
  libsdformat and Drake). A link that no joint moves (a "free body" in a simulator) is welded
  to the world at its pose unless ``floating_base=True``, which gives it a free joint named
  after the link whose neutral configuration is that pose (files from hebictl's writer may name
  the joint and its frame in ``hebictl:free_joint``/``hebictl:free_joint_pose``). Links of ``<static>`` models are
  always welded, and static models may only have fixed joints (as Drake requires).
* **Joints.** revolute, continuous, prismatic, fixed and ball map to the kernel's kinds. The
  others become chains of massless bodies with one-DoF joints named ``<joint>_<suffix>``:
  universal and revolute2 → ``_axis1``, ``_axis2`` (revolute about ``axis``, then about ``axis2``
  as it was at zero), screw → ``_rotation`` and ``_translation`` (both along the axis; apply
  ``translation = pitch / 2π · rotation`` yourself, ``pitch`` in metadata ``screw_pitch``
  [m/rev]), gearbox → ``_axis1``, ``_axis2`` (ratio in metadata, not enforced), Drake's planar →
  ``_x``, ``_y``, ``_theta``. Ball joints are quaternions (Drake's are roll-pitch-yaw angles).
  A joint whose origin is off its child link's origin (off the axis for revolute joints) gets
  a massless body at the joint frame, named ``<child>__<joint>``.
* **Limits.** ``lower``/``upper`` at or beyond ±1e16 and negative ``effort``/``velocity`` are
  unbounded (SDFormat's defaults).
* **Includes** of SDF and URDF files resolve ``model://``, ``package://`` (``package_map``),
  ``file://`` and relative URIs against the including file's folder, ``model_paths`` and the
  ``SDF_PATH``/``GZ_SIM_RESOURCE_PATH`` environment variables; a folder is read through its
  ``model.config``. URDF files load through :mod:`hebictl.formats.urdf`.
* **Drake extensions** (``xmlns:drake="http://drake.mit.edu"``): ``drake:joint`` (ball, planar,
  prismatic, revolute, continuous, fixed, screw, universal), ``drake:mimic``, ``drake:gear_ratio``
  and ``drake:rotor_inertia`` (reflected inertia = gear_ratio² · rotor_inertia, in joint metadata and,
  on the one-axis joints Drake actuates — effort limit not 0 — as the joint's ``armature``; a
  screw joint's on its ``_rotation`` coordinate),
  ``drake:acceleration``, ``drake:controller_gains``, ``drake:capsule``/``drake:ellipsoid``
  geometry, ``drake:collision_filter_group``, ``drake:ball_constraint``,
  ``drake:linear_bushing_rpy`` and ``drake:proximity_properties`` are kept as metadata.
* Un-namespaced elements the specification does not define, on the elements that carry
  kinematics (model, link, joint, axis, inertial, include, frame), are errors; other namespaced
  elements are custom elements and ignored. Visuals, collisions and sensors are metadata.
* Frames added: ``"frame"`` (every ``<frame>``, scoped names), ``"model"`` (each model's frame),
  and the standard ``"com"``, ``"output"``, ``"end_effector"`` frames.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError, ModelError
from hebictl.formats import _sdf_schema as schema
from hebictl.formats._sdf_build import Flattener, build
from hebictl.formats._sdf_frames import SCOPE, Entity, Scope, parse_bool, pose_from_element
from hebictl.formats._xml import (
    HEBICTL_NS,
    elements,
    inverse_transform,
    line_of,
    local_name,
    namespace,
    parse_xml,
)
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
from hebictl.model.tree import Inertia

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


DRAKE_NS = "http://drake.mit.edu"
SUPPORTED = ((1, 0), (1, 12))
UNBOUNDED = 1e16
SDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "revolute2", "screw",
                   "gearbox")
DRAKE_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "planar", "screw")
_RESERVED = ("world",)
_PATH_VARS = ("SDF_PATH", "GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH")
_COLOR_TAGS = ("ambient", "diffuse", "specular", "emissive")
_NUMBER_PREFIX = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


# ====================================================================== parsing
_PREFIX_RE = re.compile(rb"<\s*/?\s*([A-Za-z_][\w.-]*):[A-Za-z_]|\s([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*\s*=")
_ROOT_OPEN_RE = re.compile(rb"<\s*sdf\b")


def parse_sdf_xml(source: str | bytes | Path, file: str) -> etree._Element:
    """Parse SDF text, tolerating namespace prefixes the file never declares.

    libsdformat reads XML without namespaces, so files in the wild use ``<drake:...>`` or
    ``<custom:...>`` without ``xmlns:`` declarations; they are declared here on the root
    element (``drake`` as Drake's namespace) and the file is parsed again, lines unchanged.
    """
    try:
        return parse_xml(source, file)
    except FormatError as exc:
        if "Namespace prefix" not in exc.message:
            raise
    data = source.read_bytes() if isinstance(source, Path) else (
        source.encode() if isinstance(source, str) else source)
    prefixes = {m.group(1) or m.group(2) for m in _PREFIX_RE.finditer(data)} - {b"xmlns", b"xml"}
    declared = set(re.findall(rb"xmlns:([A-Za-z_][\w.-]*)\s*=", data))
    decl = b"".join(b' xmlns:%s="%s"' % (p, DRAKE_NS.encode() if p == b"drake" else b"urn:sdf-undeclared:" + p)
                    for p in sorted(prefixes - declared))
    m = _ROOT_OPEN_RE.search(data)
    if m is None:
        return parse_xml(source, file)
    return parse_xml(data[:m.end()] + decl + data[m.end():], file)


# ====================================================================== small element helpers
def _child(elem: etree._Element, tag: str) -> etree._Element | None:
    """First un-namespaced child ``tag`` (SDF elements are never namespaced)."""
    for c in elem:
        if c.tag == tag:
            return c
    return None


def _children(elem: etree._Element, tag: str) -> list[etree._Element]:
    return [c for c in elem if c.tag == tag]


def _text(elem: etree._Element | None) -> str:
    return (elem.text or "").strip() if elem is not None else ""


def _float(elem: etree._Element | None, file: str, default: float, what: str | None = None) -> float:
    """A double element's value (``default`` when absent)."""
    if elem is None:
        return default
    text = _text(elem)
    try:
        value = float(text)
    except ValueError:
        # libsdformat reads the leading number and ignores trailing junk ("2.35\""); so do we, loudly
        m = _NUMBER_PREFIX.match(text)
        if m is None:
            raise FormatError(f"<{what or local_name(elem)}> value {text!r} is not a number", file,
                              line_of(elem)) from None
        value = float(m.group(0))
        warnings.warn(f"{file}:{line_of(elem)}: <{what or local_name(elem)}> value {text!r} has trailing characters; "
                      f"read as {value!r}", stacklevel=2)
    if math.isnan(value):
        raise FormatError(f"<{what or local_name(elem)}> value {text!r} is not a number", file, line_of(elem))
    return value


def _floats(elem: etree._Element, file: str, count: int | Sequence[int]) -> np.ndarray:
    text = _text(elem).split()
    try:
        values = np.array([float(t) for t in text], dtype=np.float64)
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> value {' '.join(text)!r} is not a list of numbers", file,
                          line_of(elem)) from None
    counts = (count,) if isinstance(count, int) else tuple(count)
    if len(values) not in counts or not np.all(np.isfinite(values)):
        want = " or ".join(str(c) for c in counts)
        raise FormatError(f"<{local_name(elem)}> needs {want} finite numbers, got {' '.join(text)!r}", file,
                          line_of(elem))
    return values


def _bounded(value: float) -> float:
    if value >= UNBOUNDED:
        return math.inf
    if value <= -UNBOUNDED:
        return -math.inf
    return value


def parse_version(text: str | None, elem: etree._Element, file: str) -> tuple[int, int]:
    """``"1.9"`` -> (1, 9); an error for missing or unsupported versions."""
    if text is None:
        raise FormatError("<sdf> is missing the required attribute 'version' (e.g. version=\"1.9\")", file,
                          line_of(elem))
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if m is None:
        raise FormatError(f"<sdf version={text!r}> is not a version number like \"1.9\"", file, line_of(elem))
    version = (int(m.group(1)), int(m.group(2)))
    if not SUPPORTED[0] <= version <= SUPPORTED[1]:
        raise FormatError(f"SDFormat version {text.strip()} is not supported (1.0 to 1.12 are)", file,
                          line_of(elem))
    return version


@dataclass
class _Include:
    """What an ``<include>`` overrides on the model it brings in."""

    name: str | None = None
    pose: np.ndarray | None = None
    relative_to: str = ""
    pose_line: int | None = None
    static: bool | None = None
    placement_frame: str = ""



# ====================================================================== reader
class _Reader:
    """One load: files read so far (include cycles), search paths, collected warnings."""

    def __init__(self, package_map: Mapping[str, str | Path] | None, model_paths: Sequence[str | Path] | None,
                 floating_base: bool) -> None:
        self.package_map = {k: Path(v) for k, v in (package_map or {}).items()}
        paths = [Path(p) for p in (model_paths or ())]
        for var in _PATH_VARS:
            paths.extend(Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p)
        self.model_paths = paths
        self.floating_base = floating_base
        self.ignored: dict[str, int] = {}
        self.include_stack: list[Path] = []
        self.missing_meshes: list[str] = []
        self.hebictl_frames: list[etree._Element] | None = None
        self.file = ""
        self.gravity: np.ndarray | None = None

    # ------------------------------------------------------------------ documents
    def read_document(self, root: etree._Element, file: str, base_dir: Path | None) -> tuple[Scope, tuple[int, int]]:
        """The world or the model of an ``<sdf>`` document."""
        tag = local_name(root)
        if tag == "element" and root.get("name") is not None:
            raise FormatError("this is an SDFormat specification (schema) file describing the element "
                              f"<{root.get('name')}>, not a robot description", file, line_of(root))
        if tag != "sdf" or namespace(root) is not None:
            raise FormatError(f"SDFormat root element must be <sdf version=...>, got <{tag}>", file, line_of(root))
        version = parse_version(root.get("version"), root, file)
        worlds = _children(root, "world")
        models = _children(root, "model")
        others = [c for c in elements(root) if c.tag in ("actor", "light")]
        if worlds and (models or len(worlds) > 1):
            raise FormatError(f"an <sdf> may hold one <world> or one <model>; this one has {len(worlds)} world(s) "
                              f"and {len(models)} model(s)", file, line_of(root))
        if worlds:
            return self.read_world(worlds[0], file, version, base_dir), version
        if len(models) > 1:
            raise FormatError(f"an <sdf> may hold only one <model>, this one has {len(models)} (put several in a "
                              "<world>)", file, line_of(models[1]))
        if models and others:
            raise FormatError(f"the <sdf> root may hold only one of <model>, <light> or <actor>; it also has "
                              f"<{others[0].tag}>", file, line_of(others[0]))
        if not models:
            raise FormatError("no <model> or <world> in this SDF file", file, line_of(root))
        for c in elements(root):
            if c.tag not in ("model", "world", "actor", "light") and namespace(c) is None:
                raise FormatError(f"<{c.tag}> is not an SDFormat root element", file, line_of(c))
        return self.read_model(models[0], file, version, base_dir, None), version

    def read_world(self, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None) -> Scope:
        name = elem.get("name")
        if not name:
            raise FormatError("<world> is missing the required attribute 'name'", file, line_of(elem))
        world = Scope("world", name, elem, file, version)
        gravity = _child(elem, "gravity")
        physics = _child(elem, "physics")
        if gravity is None and physics is not None and version < (1, 5):
            gravity = _child(physics, "gravity")
        world.entities_data = {"gravity": _floats(gravity, file, 3) if gravity is not None  # type: ignore[attr-defined]
                               else np.array([0.0, 0.0, -9.8])}
        for c in elements(elem):
            tag = c.tag
            if tag == "model":
                sub = self.read_model(c, file, version, base_dir, world)
                self.add_model_entity(world, sub, c, file)
            elif tag == "include":
                self.read_include(world, c, file, version, base_dir)
            elif tag == "frame":
                world.add(self.read_frame(c, file, version, world))
            elif tag in ("light", "actor"):
                nm = c.get("name")
                if nm:
                    world.add(Entity(tag, nm, c, file, np.eye(4)))
        world.check_references()
        return world

    # ------------------------------------------------------------------ models
    def check_element(self, elem: etree._Element, file: str, version: tuple[int, int]) -> None:
        """Un-namespaced children/attributes the specification does not define are errors."""
        tag = local_name(elem)
        for c in elements(elem):
            if namespace(c) is not None:
                continue
            ok = schema.allowed(tag, c.tag, version)
            if ok is False:
                if c.tag in schema.CHILDREN.get(tag, ()):
                    raise FormatError(f"<{c.tag}> in <{tag}> exists only in {schema.versions_of(tag, c.tag)}, "
                                      f"this file is SDFormat {version[0]}.{version[1]}", file, line_of(c))
                raise FormatError(f"<{c.tag}> is not an SDFormat child of <{tag}> (custom elements need a "
                                  f"namespace prefix, e.g. <my_ns:{c.tag}>)", file, line_of(c))
        for attr in elem.attrib:
            if attr.startswith("{") or ":" in attr:
                continue
            ok = schema.allowed(tag, attr, version, attribute=True)
            if ok is False:
                where = (f"exists only in {schema.versions_of(tag, attr)}, this file is SDFormat "
                         f"{version[0]}.{version[1]}" if attr in schema.ATTRIBUTES.get(tag, ())
                         else "is not defined by SDFormat (custom attributes need a namespace prefix)")
                raise FormatError(f"attribute {attr!r} of <{tag}> {where}", file, line_of(elem))

    def name_of(self, elem: etree._Element, file: str, version: tuple[int, int], kind: str) -> str:
        name = elem.get("name")
        if name is None or name == "":
            raise FormatError(f"<{local_name(elem)}> is missing the required attribute 'name'", file, line_of(elem))
        if name in _RESERVED and kind != "model":
            raise FormatError(f"the {kind} name {name!r} is reserved", file, line_of(elem))
        if name.startswith("__") and name.endswith("__"):
            raise FormatError(f"the {kind} name {name!r} is reserved (names starting and ending with '__')", file,
                              line_of(elem))
        if SCOPE in name and version >= (1, 8):
            raise FormatError(f"the {kind} name {name!r} may not contain the scope delimiter '::'", file,
                              line_of(elem))
        return name

    def pose_of(self, elem: etree._Element, file: str, version: tuple[int, int]) -> tuple[np.ndarray, str, int | None]:
        """(pose, relative_to, line) of an element's ``<pose>`` child."""
        p = _child(elem, "pose")
        if p is None:
            return np.eye(4), "", None
        self.check_element(p, file, version)
        if p.get("frame"):
            raise FormatError("<pose frame=...> has no defined meaning in SDFormat before 1.7 and is not supported; "
                              "use SDFormat 1.7+ <pose relative_to=...>", file, line_of(p))
        return pose_from_element(p, file), (p.get("relative_to") or "").strip(), line_of(p)

    def read_model(self, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None,
                   parent: Scope | None, include: _Include | None = None) -> Scope:
        self.check_element(elem, file, version)
        name = include.name if include and include.name else self.name_of(elem, file, version, "model")
        scope = Scope("model", name, elem, file, version, parent)
        scope.base_dir = base_dir  # type: ignore[attr-defined]
        scope.file_root = parent is None or include is not None or parent.kind == "world"  # type: ignore[attr-defined]
        scope.canonical_attr = (elem.get("canonical_link") or "").strip()
        scope.placement_frame = (elem.get("placement_frame") or "").strip()
        if include is not None and include.placement_frame:
            scope.placement_frame = include.placement_frame
        if scope.placement_frame == "__root__":
            raise FormatError("placement_frame=\"__root__\": '__root__' is reserved and cannot be used", file,
                              line_of(elem))
        st = _child(elem, "static")
        scope.static = parse_bool(_text(st), st, file, "<static>") if st is not None else False
        if include is not None and include.static is not None:
            scope.static = include.static
        pose, rel, line = self.pose_of(elem, file, version)
        if include is not None and include.pose is not None:
            pose, rel, line = include.pose, include.relative_to, include.pose_line
        scope.own_pose = (pose, rel, line)  # type: ignore[attr-defined]
        scope.drake = {}  # type: ignore[attr-defined]
        for c in elements(elem):
            tag, ns = c.tag, namespace(c)
            if ns is not None:
                if ns == DRAKE_NS:
                    self.read_drake_model_element(scope, c, file, version)
                elif ns == HEBICTL_NS and local_name(c) == "frames" and parent is None:
                    self.hebictl_frames = [f for f in c if local_name(f) == "frame"]
                elif ns == HEBICTL_NS and local_name(c) == "gravity" and parent is None:
                    self.gravity = _floats(c, file, 3)
                continue
            if tag == "link":
                scope.add(self.read_link(c, file, version, scope))
            elif tag == "joint":
                scope.add(self.read_joint(c, file, version, scope, drake=False))
            elif tag == "frame":
                scope.add(self.read_frame(c, file, version, scope))
            elif tag == "model":
                sub = self.read_model(c, file, version, base_dir, scope)
                self.add_model_entity(scope, sub, c, file)
            elif tag == "include":
                self.read_include(scope, c, file, version, base_dir)
        if not scope.static and not scope.of_kind("link") and not scope.of_kind("model"):
            raise FormatError(f"model {name!r} has no link: a model must have at least one link (or be <static>)",
                              file, line_of(elem))
        if scope.static:
            for j in scope.of_kind("joint"):
                if j.data["type"] != "fixed":
                    raise FormatError(f"joint {j.name!r} of static model {name!r} is {j.data['type']}: only fixed "
                                      "joints are permitted in static models", j.file, line_of(j.elem))
        self.check_model(scope)
        return scope

    def add_model_entity(self, parent: Scope, sub: Scope, elem: etree._Element, file: str) -> None:
        pose, rel, line = sub.own_pose  # type: ignore[attr-defined]
        if parent.kind == "world" and rel == "world":
            rel = ""
        parent.add(Entity("model", sub.name, elem, file, pose, rel, line, scope=sub))

    def check_model(self, scope: Scope) -> None:
        """The specification's validity rules for one model scope (references, joints, canonical link)."""
        scope.check_references()
        file = scope.file
        if scope.canonical_attr and (scope.canonical_attr == "__root__"
                                     or scope._find_link(scope.canonical_attr) is None):
            raise FormatError(f"canonical_link {scope.canonical_attr!r} is not a link of model {scope.name!r}",
                              file, line_of(scope.elem))
        if scope.placement_frame and not scope.has_frame(scope.placement_frame):
            raise FormatError(f"placement_frame {scope.placement_frame!r} is not a frame of model {scope.name!r}",
                              file, line_of(scope.elem))
        for j in scope.of_kind("joint"):
            jf, jl = j.file, line_of(j.elem)
            if j.child == "world":
                raise FormatError(f"joint {j.name!r}: the child may not be 'world'", jf, jl)
            if j.parent == j.name:
                raise FormatError(f"joint {j.name!r} names itself as its parent frame", jf, jl)
            if j.child == j.name:
                raise FormatError(f"joint {j.name!r} names itself as its child frame (an attached_to cycle)", jf, jl)
            if j.parent == j.child:
                raise FormatError(f"joint {j.name!r} has the same parent and child frame {j.child!r}", jf, jl)
            for role, ref in (("parent", j.parent), ("child", j.child)):
                if ref == "world" and role == "parent":
                    continue
                if ref == "__root__" or not scope.has_frame(ref):
                    raise FormatError(f"joint {j.name!r}: {role} frame {ref!r} is not a link, joint, frame or nested "
                                      f"model of model {scope.name!r}", jf, jl)
            expressed = j.data.get("expressed_in", [])
            for e in expressed:
                if e and not scope.has_frame(e):
                    raise FormatError(f"joint {j.name!r}: axis xyz expressed_in frame {e!r} is not a frame of "
                                      f"model {scope.name!r}", jf, jl)
        # attached-to graph: every frame reaches a link (cycle errors come from here)
        for e in scope.entities.values():
            if e.kind in ("frame", "joint"):
                scope.link_of(e.name)
        for j in scope.of_kind("joint"):
            parent = None if j.parent == "world" else scope.link_of(j.parent)
            child = scope.link_of(j.child)
            if child is None:
                raise FormatError(f"joint {j.name!r}: child frame {j.child!r} is not attached to any link", j.file,
                                  line_of(j.elem))
            if parent is not None and parent[0] is child[0] and parent[1] == child[1]:
                raise FormatError(f"joint {j.name!r}: parent {j.parent!r} and child {j.child!r} both resolve to link "
                                  f"{child[1]!r}; they must be different links", j.file, line_of(j.elem))
        for e in scope.entities.values():
            scope.pose(e.name)  # relative_to cycles

    # ------------------------------------------------------------------ includes
    def read_include(self, scope: Scope, elem: etree._Element, file: str, version: tuple[int, int],
                     base_dir: Path | None) -> None:
        self.check_element(elem, file, version)
        uri_el = _child(elem, "uri")
        uri = _text(uri_el)
        if not uri:
            raise FormatError("<include> needs a <uri>", file, line_of(elem))
        path = self.resolve_uri(uri, base_dir)
        if path is None:
            where = ", ".join(str(p) for p in self.model_paths) or "none given"
            raise FormatError(f"<include> uri {uri!r} not found (searched beside the file and the model paths: "
                              f"{where}; pass model_paths= or package_map=, or set SDF_PATH)", file, line_of(uri_el))
        if path.is_dir():
            path = self.model_config(path, file, uri_el)
        inc = _Include()
        nm = _child(elem, "name")
        if nm is not None:
            inc.name = _text(nm)
        if _child(elem, "pose") is not None:
            inc.pose, inc.relative_to, inc.pose_line = self.pose_of(elem, file, version)
        st = _child(elem, "static")
        if st is not None:
            inc.static = parse_bool(_text(st), st, file, "<static>")
        pf = _child(elem, "placement_frame")
        if pf is not None:
            inc.placement_frame = _text(pf)
        merge = parse_bool(elem.get("merge", "false"), elem, file, "merge attribute")
        resolved = path.resolve()
        if resolved in self.include_stack:
            raise FormatError(f"<include> of {path} is recursive (it includes itself)", file, line_of(elem))
        self.include_stack.append(resolved)
        try:
            sub = self.included_model(path, inc, scope, file, elem)
        finally:
            self.include_stack.pop()
        if sub is None:
            return
        if inc.name:
            self.name_of(etree.Element("model", name=inc.name), file, version, "model")
        if merge:
            self.merge_into(scope, sub, elem, file)
        else:
            self.add_model_entity(scope, sub, elem, file)

    def included_model(self, path: Path, inc: _Include, parent: Scope, file: str,
                       elem: etree._Element) -> Scope | None:
        if path.suffix.lower() == ".urdf":
            return self.included_urdf(path, inc, parent, file, elem)
        root = parse_sdf_xml(path, str(path))
        if local_name(root) != "sdf":
            raise FormatError(f"<include>d file {path} is not SDF (root <{local_name(root)}>)", file, line_of(elem))
        version = parse_version(root.get("version"), root, str(path))
        models = _children(root, "model")
        if len(models) != 1:
            if not models and (_children(root, "actor") or _children(root, "light")):
                self.ignored["<include> of an actor or light"] = self.ignored.get("<include> of an actor or light",
                                                                                   0) + 1
                return None
            raise FormatError(f"<include>d file {path} must hold exactly one <model>, it has {len(models)}", file,
                              line_of(elem))
        return self.read_model(models[0], str(path), version, path.resolve().parent, parent, inc)

    def included_urdf(self, path: Path, inc: _Include, parent: Scope, file: str,
                      elem: etree._Element) -> Scope:
        """A URDF brought in by <include>: read by the URDF reader, then seen as an SDF model."""
        try:
            from hebictl.formats.urdf import load_urdf
        except ImportError:  # pragma: no cover - the URDF reader ships with hebictl
            raise FormatError("including URDF files needs hebictl.formats.urdf, which is not available", file,
                              line_of(elem)) from None
        from hebictl.formats.write_sdf import model_element

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            urdf = load_urdf(path, package_map=self.package_map)
        model_el = model_element(urdf, weld_root=False)
        return self.read_model(model_el, str(path), (1, 9), path.resolve().parent, parent, inc)

    def merge_into(self, scope: Scope, sub: Scope, elem: etree._Element, file: str) -> None:
        """``<include merge="true">``: the included model's frames join the including scope."""
        if sub.placement_frame:
            raise FormatError("<include merge=\"true\"> with a placement_frame is not supported", file, line_of(elem))
        proxy = f"_merged__{sub.name}__model__"
        pose, rel, line = sub.own_pose  # type: ignore[attr-defined]
        canonical = sub.canonical()
        attach = canonical[1] if canonical is not None else ""
        scope.add(Entity("frame", proxy, elem, file, pose, rel or scope.root_frame, line, attached_to=attach))

        def redirect(ref: str) -> str:
            return proxy if ref in ("", "__model__") else ref

        for e in sub.entities.values():
            if e.kind == "joint":
                e.parent = e.parent if e.parent == "world" else redirect(e.parent)
                e.child = redirect(e.child)
                e.data["expressed_in"] = [proxy if x == "__model__" else x for x in e.data.get("expressed_in", [])]
                e.relative_to = "" if not e.relative_to else redirect(e.relative_to)
            elif e.kind == "frame":
                e.attached_to = redirect(e.attached_to)
                e.relative_to = "" if not e.relative_to else redirect(e.relative_to)
            else:
                e.relative_to = redirect(e.relative_to)
            if e.scope is not None:
                e.scope.parent = scope
            scope.add(e)
        drake = getattr(scope, "drake", None)
        if drake is not None:
            for k, v in getattr(sub, "drake", {}).items():
                drake.setdefault(k, []).extend(v)

    def resolve_uri(self, uri: str, base_dir: Path | None) -> Path | None:
        candidates: list[Path] = []
        if uri.startswith("model://"):
            rest = uri[len("model://"):]
            candidates += [p / rest for p in self.model_paths]
            if base_dir is not None:
                candidates += [base_dir / rest, base_dir.parent / rest]
            pkg, _, tail = rest.partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / tail)
        elif uri.startswith("package://"):
            pkg, _, tail = uri[len("package://"):].partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / tail)
            if base_dir is not None:
                candidates += [anc / tail for anc in (base_dir, *base_dir.parents) if anc.name == pkg]
        elif uri.startswith("file://"):
            candidates.append(Path(uri[len("file://"):]))
        elif "://" not in uri:
            p = Path(uri)
            if p.is_absolute():
                candidates.append(p)
            else:
                if base_dir is not None:
                    candidates.append(base_dir / p)
                candidates += [m / p for m in self.model_paths]
        for c in candidates:
            if c.exists():
                return c
        return None

    def model_config(self, folder: Path, file: str, elem: etree._Element | None) -> Path:
        """The SDF file a model folder's model.config names (the newest version), else model.sdf."""
        cfg = folder / "model.config"
        if cfg.is_file():
            root = parse_xml(cfg, str(cfg))
            best: tuple[tuple[int, int], str] | None = None
            for s in root.iter("sdf"):
                m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", s.get("version", "0.0"))
                v = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
                if v <= SUPPORTED[1] and _text(s) and (best is None or v > best[0]):
                    best = (v, _text(s))
            if best is not None and (folder / best[1]).is_file():
                return folder / best[1]
        if (folder / "model.sdf").is_file():
            return folder / "model.sdf"
        raise FormatError(f"<include>d folder {folder} has no model.config naming an SDF file and no model.sdf", file,
                          line_of(elem))

    # ------------------------------------------------------------------ links
    def read_link(self, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> Entity:
        self.check_element(elem, file, version)
        name = self.name_of(elem, file, version, "link")
        pose, rel, line = self.pose_of(elem, file, version)
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
                visuals.append(self.read_shape(c, file, version, scope))
            elif c.tag == "collision":
                collisions.append(self.read_shape(c, file, version, scope))
            elif c.tag == "sensor":
                sensors.append({"name": c.get("name"), "type": c.get("type"), "line": line_of(c)})
            elif c.tag == "velocity_decay":
                for v in elements(c):
                    if v.tag in ("linear", "angular"):
                        _float(v, file, 0.0)
            elif c.tag in ("gravity", "self_collide", "kinematic", "enable_wind", "must_be_base_link"):
                meta[c.tag] = parse_bool(_text(c), c, file, f"<{c.tag}>")
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

    def read_shape(self, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> dict[str, Any]:
        """A visual or collision: name, pose, geometry; kept as metadata (and for automatic inertia)."""
        pose, rel, _ = self.pose_of(elem, file, version)
        out: dict[str, Any] = {"name": elem.get("name"), "pose": pose.tolist(), "line": line_of(elem)}
        if rel:
            out["relative_to"] = rel
        geo = _child(elem, "geometry")
        if geo is not None:
            shapes = elements(geo)
            if shapes:
                out.update(self.read_geometry(shapes[0], file, scope))
        density = _child(elem, "density")
        if density is not None:
            out["density"] = _float(density, file, 1000.0)
        mat = _child(elem, "material")
        if mat is not None:
            for tag in _COLOR_TAGS:
                col = _child(mat, tag)
                if col is not None:
                    rgba = _floats(col, file, (3, 4))
                    if np.any(rgba < 0) or np.any(rgba > 1):
                        raise FormatError(f"<{tag}> colour components must be in [0, 1], got {_text(col)!r}", file,
                                          line_of(col))
                    out.setdefault("material", {})[tag] = rgba.tolist()
            script = _child(mat, "script")
            if script is not None and not any(_text(u) for u in _children(script, "uri")):
                raise FormatError("a material <script> needs a <uri> (the file that defines the script)", file,
                                  line_of(script))
            shader = _child(mat, "shader")
            if shader is not None and (shader.get("type") or "").startswith("normal_map") \
                    and not _text(_child(shader, "normal_map")):
                raise FormatError(f"material <shader type={shader.get('type')!r}> needs a <normal_map>", file,
                                  line_of(shader))
        for c in elements(elem):
            if namespace(c) == DRAKE_NS:
                if local_name(c) == "proximity_properties":
                    out["drake:proximity_properties"] = {local_name(p): _text(p) or dict(p.attrib)
                                                         for p in elements(c)}
                else:
                    out[f"drake:{local_name(c)}"] = _text(c) or dict(c.attrib)
        return out

    def read_geometry(self, shape: etree._Element, file: str, scope: Scope) -> dict[str, Any]:
        kind = local_name(shape)
        ns = namespace(shape)
        out: dict[str, Any] = {"type": f"drake:{kind}" if ns == DRAKE_NS else kind}
        if ns not in (None, DRAKE_NS):
            return out
        if kind == "box":
            size = _child(shape, "size")
            out["size"] = _floats(size, file, 3).tolist() if size is not None else [1.0, 1.0, 1.0]
        elif kind in ("sphere", "cylinder", "capsule"):
            out["radius"] = _float(_child(shape, "radius"), file, 1.0 if kind != "capsule" else 0.5)
            if kind != "sphere":
                out["length"] = _float(_child(shape, "length"), file, 1.0)
        elif kind == "ellipsoid":
            radii = _child(shape, "radii")
            if ns == DRAKE_NS:
                out["radii"] = [_float(_child(shape, k), file, 1.0) for k in ("a", "b", "c")]
            else:
                out["radii"] = _floats(radii, file, 3).tolist() if radii is not None else [1.0, 1.0, 1.0]
        elif kind == "mesh":
            uri = _text(_child(shape, "uri"))
            out["uri"] = uri
            scale = _child(shape, "scale")
            out["scale"] = _floats(scale, file, 3).tolist() if scale is not None else [1.0, 1.0, 1.0]
            path = self.resolve_uri(uri, getattr(scope, "base_dir", None)) if uri else None
            out["mesh_path"] = str(path) if path is not None and path.is_file() else None
            if out["mesh_path"] is None:
                self.missing_meshes.append(uri)
        elif kind == "plane":
            normal = _child(shape, "normal")
            if normal is not None:
                out["normal"] = _floats(normal, file, 3).tolist()
        return out

    def read_inertial(self, link: Entity, scope: Scope) -> Inertia:
        """SDFormat ``<inertial>``: mass (default 1 kg), inertia about the COM in the inertial frame."""
        el = _child(link.elem, "inertial")
        file, version = link.file, scope.version
        if el is None:
            return Inertia(1.0, (0.0, 0.0, 0.0), np.eye(3))
        self.check_element(el, file, version)
        pose, rel, _ = self.pose_of(el, file, version)
        if rel:
            if not scope.has_frame(rel):
                raise FormatError(f"link {link.name!r}: inertial pose relative_to {rel!r} is not a frame of "
                                  f"{scope.what}", file, line_of(el))
            pose = inverse_transform(scope.pose(link.name)) @ scope.pose(rel) @ pose
        mass_el = _child(el, "mass")
        mass = _float(mass_el, file, 1.0)
        auto = version >= (1, 11) and parse_bool(el.get("auto", "false"), el, file, "auto attribute")
        if auto:
            return self.auto_inertia(link, el, mass if mass_el is not None else None, scope)
        if mass < 0:
            raise FormatError(f"link {link.name!r} has a negative mass {mass}", file, line_of(mass_el))
        I = np.eye(3)
        inertia = _child(el, "inertia")
        if inertia is not None:
            self.check_element(inertia, file, version)
            vals = {k: _float(_child(inertia, k), file, 1.0 if k in ("ixx", "iyy", "izz") else 0.0)
                    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
            I = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                          [vals["ixy"], vals["iyy"], vals["iyz"]],
                          [vals["ixz"], vals["iyz"], vals["izz"]]])
        R = pose[:3, :3]
        try:
            return Inertia(mass, pose[:3, 3], R @ I @ R.T)
        except ModelError as exc:
            raise FormatError(f"link {link.name!r}: {exc}", file, line_of(el)) from None

    def auto_inertia(self, link: Entity, el: etree._Element, mass: float | None, scope: Scope) -> Inertia:
        """``<inertial auto="true">`` (1.11): mass properties of the collision shapes."""
        file = link.file
        default_density = _float(_child(el, "density"), file, 1000.0)
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

    # ------------------------------------------------------------------ joints and frames
    def read_joint(self, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope,
                   drake: bool) -> Entity:
        if not drake:
            self.check_element(elem, file, version)
        name = self.name_of(elem, file, version, "joint")
        jtype = elem.get("type")
        if jtype is None:
            raise FormatError(f"joint {name!r} is missing the required attribute 'type'", file, line_of(elem))
        jtype = jtype.strip()
        types = DRAKE_JOINT_TYPES if drake else SDF_JOINT_TYPES
        if jtype not in types:
            raise FormatError(f"joint {name!r} has unknown type {jtype!r}; expected one of {', '.join(types)}", file,
                              line_of(elem))
        pre = f"{{{DRAKE_NS}}}" if drake else ""
        parent_el, child_el = _child(elem, pre + "parent"), _child(elem, pre + "child")
        if parent_el is None or child_el is None or not _text(parent_el) or not _text(child_el):
            raise FormatError(f"joint {name!r} needs both <parent> and <child>", file, line_of(elem))
        if drake and _child(elem, "pose") is not None:
            raise FormatError(f"<drake:joint> {name!r}: <pose> is not supported (Drake joins the parent link frame to "
                              "the child link frame)", file, line_of(_child(elem, "pose")))
        pose, rel, line = self.pose_of(elem, file, version)
        e = Entity("joint", name, elem, file, pose, rel, line, parent=_text(parent_el), child=_text(child_el))
        data = e.data
        data["type"] = jtype
        data["drake"] = drake
        axes, expressed, limits = [], [], []
        meta: dict[str, Any] = {"sdf_type": jtype, "line": line_of(elem)}
        for tag in ("axis", "axis2"):
            ax = _child(elem, tag)
            if ax is None:
                axes.append(None)
                expressed.append("")
                limits.append({})
                continue
            self.check_element(ax, file, version)
            xyz_el = _child(ax, "xyz")
            xyz = _floats(xyz_el, file, 3) if xyz_el is not None else np.array([0.0, 0.0, 1.0])
            if np.linalg.norm(xyz) < 1e-12 and jtype not in ("fixed", "ball"):
                raise FormatError(f"joint {name!r}: <{tag}><xyz> is the zero vector", file, line_of(xyz_el))
            exp = (xyz_el.get("expressed_in") or "").strip() if xyz_el is not None and version >= (1, 7) else ""
            upmf = _child(ax, "use_parent_model_frame")
            if upmf is not None and version < (1, 7) and parse_bool(_text(upmf), upmf, file,
                                                                     "<use_parent_model_frame>"):
                exp = "__model__"
            if version < (1, 5) and getattr(scope, "file_root", False):
                exp = "__model__"  # libsdformat's 1.4 -> 1.5 conversion (top-level models only)
            axes.append(xyz)
            expressed.append(exp)
            lim: dict[str, float] = {}
            limit = _child(ax, "limit")
            if limit is not None:
                self.check_element(limit, file, version)
                lim["lower"] = _bounded(_float(_child(limit, "lower"), file, -UNBOUNDED))
                lim["upper"] = _bounded(_float(_child(limit, "upper"), file, UNBOUNDED))
                eff = _float(_child(limit, "effort"), file, -1.0)
                vel = _float(_child(limit, "velocity"), file, -1.0)
                lim["effort"] = math.inf if eff < 0 else eff
                lim["velocity"] = math.inf if vel < 0 else vel
                acc = _child(limit, f"{{{DRAKE_NS}}}acceleration")
                if acc is not None:
                    meta[f"{tag}_max_acceleration"] = _float(acc, file, math.inf, "drake:acceleration")
                if lim["lower"] > lim["upper"] and jtype not in ("continuous",):
                    raise FormatError(f"joint {name!r}: lower limit {lim['lower']} > upper limit {lim['upper']}", file,
                                      line_of(limit))
            dyn = _child(ax, "dynamics")
            if dyn is not None:
                self.check_element(dyn, file, version)
                lim["damping"] = _float(_child(dyn, "damping"), file, 0.0)
                lim["friction"] = _float(_child(dyn, "friction"), file, 0.0)
                for key in ("spring_reference", "spring_stiffness"):
                    if _child(dyn, key) is not None:
                        meta[f"{tag}_{key}"] = _float(_child(dyn, key), file, 0.0)
            mimic = _child(ax, "mimic")
            if mimic is not None:
                meta["mimic"] = {"joint": mimic.get("joint"), "axis": mimic.get("axis", "axis"),
                                 "multiplier": _float(_child(mimic, "multiplier"), file, 1.0),
                                 "offset": _float(_child(mimic, "offset"), file, 0.0),
                                 "reference": _float(_child(mimic, "reference"), file, 0.0)}
            limits.append(lim)
        needs_axis = {"revolute": 1, "continuous": 1, "prismatic": 1, "screw": 1, "universal": 2, "revolute2": 2,
                      "gearbox": 2}.get(jtype, 0)
        for k in range(needs_axis):
            if axes[k] is None:
                if k == 0:
                    raise FormatError(f"joint {name!r} of type {jtype} needs an <axis>", file, line_of(elem))
                axes[k] = np.array([0.0, 0.0, 1.0])
        if drake:
            damping = _child(elem, f"{{{DRAKE_NS}}}damping")
            if damping is not None:
                meta["damping"] = _text(damping).split()
        for tag in ("gearbox_ratio", "gearbox_reference_body"):
            c = _child(elem, tag)
            if c is not None:
                meta[tag] = _text(c) if tag.endswith("body") else _float(c, file, 1.0)
        if jtype == "screw":
            stp = _child(elem, "screw_thread_pitch") or _child(elem, f"{{{DRAKE_NS}}}screw_thread_pitch")
            tp = _child(elem, "thread_pitch")
            if stp is not None:
                pitch = _float(stp, file, 1.0)
            elif tp is not None:
                tpv = _float(tp, file, 1.0)
                if tpv == 0:
                    raise FormatError(f"joint {name!r}: thread_pitch must not be 0", file, line_of(tp))
                pitch = -2.0 * math.pi / tpv
            else:
                pitch = 1.0
            meta["screw_pitch"] = pitch
        self.read_drake_joint_extras(elem, file, meta)
        # Drake actuates a one-axis joint unless its effort limit is exactly 0; only an actuator
        # carries rotor inertia, so the reflected inertia is the joint's armature only then
        actuated = (not drake and jtype in ("revolute", "continuous", "prismatic", "screw")
                    and limits[0].get("effort", math.inf) != 0)
        if "reflected_inertia" in meta and actuated:
            meta["armature"] = meta["reflected_inertia"]
        scale = _child(elem, f"{{{HEBICTL_NS}}}scale")
        if scale is not None:
            meta["scale"] = _float(scale, file, 1.0, "hebictl:scale")
        data["axes"] = axes
        data["expressed_in"] = expressed
        data["limits"] = limits
        data["metadata"] = meta
        return e

    def read_drake_joint_extras(self, elem: etree._Element, file: str, meta: dict[str, Any]) -> None:
        for c in elements(elem):
            if namespace(c) != DRAKE_NS:
                continue
            tag = local_name(c)
            if tag in ("gear_ratio", "rotor_inertia"):
                meta[tag] = _float(c, file, 0.0, f"drake:{tag}")
                if tag == "rotor_inertia" and meta[tag] < 0:
                    raise FormatError(f"<drake:rotor_inertia> must be >= 0, got {meta[tag]}", file, line_of(c))
            elif tag == "mimic":
                meta["mimic"] = {"joint": c.get("joint"),
                                 "multiplier": float(c.get("multiplier", "1")), "offset": float(c.get("offset", "0"))}
            elif tag == "controller_gains":
                meta["controller_gains"] = {k: float(v) for k, v in c.attrib.items()}
            elif tag not in ("parent", "child", "damping", "screw_thread_pitch"):
                meta[f"drake:{tag}"] = _text(c) or dict(c.attrib)
        if "rotor_inertia" in meta:
            meta["reflected_inertia"] = meta["rotor_inertia"] * meta.get("gear_ratio", 1.0) ** 2

    def read_frame(self, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> Entity:
        self.check_element(elem, file, version)
        name = self.name_of(elem, file, version, "frame")
        pose, rel, line = self.pose_of(elem, file, version)
        attached = (elem.get("attached_to") or "").strip() if version >= (1, 7) else ""
        return Entity("frame", name, elem, file, pose, rel, line, attached_to=attached)

    def read_drake_model_element(self, scope: Scope, c: etree._Element, file: str, version: tuple[int, int]) -> None:
        tag = local_name(c)
        drake = scope.drake  # type: ignore[attr-defined]
        if tag == "joint":
            scope.add(self.read_joint(c, file, version, scope, drake=True))
        elif tag == "collision_filter_group":
            drake.setdefault("collision_filter_groups", []).append({
                "name": c.get("name"), "ignore": c.get("ignore"),
                "members": [_text(m) for m in c if local_name(m) == "member"],
                "member_groups": [_text(m) for m in c if local_name(m) == "member_group"],
                "ignored_groups": [_text(m) for m in c if local_name(m) == "ignored_collision_filter_group"]})
        elif tag in ("ball_constraint", "linear_bushing_rpy", "weld_constraint"):
            drake.setdefault(tag, []).append({local_name(k): _text(k) for k in elements(c)})
        else:
            drake.setdefault("other", []).append(tag)


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


# ====================================================================== public API
def _load(root: etree._Element, file: str, base_dir: Path | None, *, model: str | None, floating_base: bool,
          package_map: Mapping[str, str | Path] | None, model_paths: Sequence[str | Path] | None,
          source: str | None) -> RobotModel:
    reader = _Reader(package_map, model_paths, floating_base)
    reader.file = file
    scope, version = reader.read_document(root, file, base_dir)
    flat = Flattener(reader)
    gravity = np.array([0.0, 0.0, -9.81])
    meta: dict[str, Any] = {"sdf_version": f"{version[0]}.{version[1]}"}
    if scope.kind == "world":
        gravity = scope.entities_data["gravity"]  # type: ignore[attr-defined]
        meta["world"] = scope.name
        names = [e.name for e in scope.of_kind("model")]
        if model is not None:
            if model not in names:
                raise FormatError(f"world {scope.name!r} has no model {model!r}; it has {names}", file,
                                  line_of(scope.elem))
            chosen = scope.entities[model]
            assert chosen.scope is not None
            flat.model(chosen.scope, scope.pose(model), "")
            name = model
        else:
            for e in scope.of_kind("model"):
                assert e.scope is not None
                flat.model(e.scope, scope.pose(e.name), e.name + SCOPE)
            for e in scope.of_kind("frame"):
                found = scope.link_of(e.name)
                flat.frames.append(("frame", e.name, None if found is None else found[0].prefix + found[1],  # type: ignore[attr-defined]
                                    scope.pose(e.name)))
            name = scope.name
    else:
        if model is not None and model != scope.name:
            raise FormatError(f"the file's model is {scope.name!r}, not {model!r}", file, line_of(scope.elem))
        pose, rel, line = scope.own_pose  # type: ignore[attr-defined]
        if rel and rel != "world":
            raise FormatError(f"the top-level model's pose is relative_to {rel!r}; only the world frame is defined "
                              "outside a model", file, line)
        X_W = pose
        if scope.placement_frame:
            X_W = X_W @ inverse_transform(scope.pose(scope.placement_frame))
        flat.model(scope, X_W, "")
        name = scope.name
    if reader.gravity is not None:
        gravity = reader.gravity
    meta["models"] = flat.models
    if flat.drake:
        meta["drake"] = flat.drake
    if reader.ignored:
        meta["ignored_elements"] = dict(reader.ignored)
    if reader.missing_meshes:
        meta["missing_meshes"] = list(reader.missing_meshes)
    return build(flat, name, source, gravity, floating_base, meta)


def load_sdf(path: str | Path, *, model: str | None = None, floating_base: bool = False,
             package_map: Mapping[str, str | Path] | None = None,
             model_paths: Sequence[str | Path] | None = None) -> RobotModel:
    """Read an SDFormat file (``.sdf`` or ``.world``).

    ``model`` picks one model of a world (default: all of them, names prefixed ``<model>::``);
    ``floating_base`` gives links that no joint moves a free joint instead of welding them to
    the world; ``package_map`` maps ``package://`` names to folders; ``model_paths`` are searched
    for ``<include>`` URIs (as libsdformat's ``SDF_PATH``).
    """
    p = Path(path)
    root = parse_sdf_xml(p, str(p))
    return _load(root, str(p), p.resolve().parent, model=model, floating_base=floating_base,
                 package_map=package_map, model_paths=model_paths, source=str(p))


def load_sdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                    model: str | None = None, floating_base: bool = False,
                    package_map: Mapping[str, str | Path] | None = None,
                    model_paths: Sequence[str | Path] | None = None) -> RobotModel:
    """Read SDFormat text; relative ``<include>`` URIs resolve against ``base_dir``."""
    root = parse_sdf_xml(text, source_name)
    return _load(root, source_name, Path(base_dir) if base_dir is not None else None, model=model,
                 floating_base=floating_base, package_map=package_map, model_paths=model_paths,
                 source=None if source_name == "<string>" else source_name)
