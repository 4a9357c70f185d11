"""MJCF (MuJoCo XML) reader: bodies, joints, geom-derived inertia and sites into a RobotModel.

What it follows (checked side by side with MuJoCo's own compiler in the tests):

* ``<compiler>``: ``angle`` (**degrees by default**), ``eulerseq``, ``inertiafromgeom``,
  ``inertiagrouprange``, ``autolimits``, ``boundmass``/``boundinertia``, ``balanceinertia``,
  ``settotalmass``, ``discardvisual``, ``alignfree``, ``meshdir``/``assetdir``; ``<option
  gravity>`` and ``<flag gravity="disable">`` (gravity becomes zero).
* ``<default>`` classes cascade (nested classes copy their parent's values, then override);
  an element uses its ``class``, else the nearest ``childclass`` of an enclosing body/frame,
  else ``main``. ``<freejoint>`` takes no defaults.
* Orientation: ``quat`` (w x y z), ``axisangle``, ``euler`` (with ``eulerseq``: lower case =
  moving axes, upper case = fixed axes), ``xyaxes``, ``zaxis``; ``fromto`` on geoms and sites.
* ``<include>`` (path relative to the including file, then to the main file), ``<frame>``
  (joints inside frames have their anchor and axis moved too), ``<replicate>`` (copy ``i``
  posed by the ``i``-th power of its offset/euler, names suffixed with ``sep`` and a
  zero-padded index) and ``<attach>`` of a body, a frame or a whole ``<model>`` asset (names
  prefixed; ``<compiler conflict="error">`` refuses differing options, ``"merge"`` differing
  gravity) are expanded in document order, as MuJoCo numbers them.
* Joints: ``hinge``, ``slide``, ``ball``, ``free`` with ``pos``, ``axis``, ``range``, ``ref``,
  ``springref``, ``damping``, ``frictionloss``, ``armature``; with ``autolimits`` (the default)
  only a ``range`` with ``range[0] < range[1]`` limits a joint. hebictl coordinates equal MuJoCo's
  ``qpos`` (a hinge with ``ref`` reaches the file's pose at ``q = ref``; ``ref`` is in the joint
  metadata). A body with several joints, or a hinge/ball whose ``pos`` is off the body origin,
  becomes a chain of massless bodies named ``<body>__<joint>``; the last body of the chain
  carries the MuJoCo body's name, inertia, geoms and sites. A free body's file pose is its
  default pose (metadata ``default_position``/``default_quaternion``), like MuJoCo's ``qpos0``;
  with ``align``/``alignfree`` its frame moves to the principal axes MuJoCo picks.
* Inertia: ``<inertial>`` (``diaginertia`` or ``fullinertia``), else the body's geoms (sphere,
  capsule, cylinder, ellipsoid, box, height field as MuJoCo's box, mesh and sdf-with-mesh) with
  ``density`` (default 1000 kg/m³) or ``mass``. Mesh inertia needs the mesh data (inline
  ``vertex``/``face`` or an STL/OBJ file; vertices rounded to single precision as MuJoCo stores
  them): MuJoCo's default ``legacy`` algorithm, ``exact`` and ``convex`` are reproduced; a missing
  mesh file is an error only when inertia must come from it. Builtin meshes (``builtin="sphere"``,
  ``supersphere``, ``supertorus``, ``hemisphere``, ``cone``, ``wedge``) are generated as MuJoCo does
  (:mod:`hebictl.formats.builtin_meshes`); a mesh geom with ``mass="0"`` adds nothing, whatever its
  mesh. Meshes a plugin computes (MuJoCo's SDF plugins run marching cubes in compiled code),
  ``plate`` meshes (shell inertia), primitives fitted to meshes and ``shellinertia`` are not
  supported where inertia needs them.
* Actuators (``motor``, ``position``, ``velocity``, ``general``, ...) acting on a joint are kept
  in the joint metadata; their force bounds (``|gear| * forcerange``, or ``|gear| * ctrlrange`` for
  motors; summed over the joint's actuators) and the joint's ``actuatorfrcrange`` bound
  ``max_effort``.
* Unnamed bodies, joints and sites are named ``body<i>``, ``joint<i>``, ``site<i>`` with MuJoCo's
  index ``i``. Sites become frames of kind ``"site"``; frames ``"com"``, ``"output"`` and
  ``"end_effector"`` are added as for URDF (see :func:`hebictl.formats._xml.add_standard_frames`),
  unless the file was written by hebictl's MJCF writer, whose ``<custom>`` text restores the
  original frames.
* ``<flexcomp>`` becomes the bodies MuJoCo makes of it: one per unpinned vertex, named
  ``<name>_<vertex>``, with slide joints (:mod:`hebictl.formats.mjcf_flexcomp`; types from files and
  interpolated dofs are not supported). The flex itself (elasticity, edges, contacts) only acts in
  simulation and is not represented. ``<composite>`` is not supported: a clear FormatError.
  Tendons, equality constraints, contacts, sensors, visuals and cameras do not change kinematics
  or gravity and are ignored.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError, ModelError
from hebictl.formats import geometry, mjcf_flexcomp
from hebictl.formats._xml import (
    add_standard_frames,
    axis_angle_matrix,
    elements,
    inverse_transform,
    local_name,
    matrix_quat,
    parse_xml,
    quat_matrix,
    rot_x,
    rot_y,
    rot_z,
    transform,
)
from hebictl.formats.builtin_meshes import builtin_mesh
from hebictl.formats.sdf_plugin_meshes import mesh_plugin_config, sdf_plugin_mesh
from hebictl.model.tree import Inertia, Joint, JointKind, ModelBuilder

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

MJMINVAL = 1e-15
_SRC = "{urn:hebictl:src}file"  # marks elements spliced in from an included file
_FLEX_FREE = "{urn:hebictl:src}flexfree"  # marks the vertex bodies of a flexcomp that pins nothing to its parent
FRAMES_TEXT = "hebictl:frames"  # <custom><text name=...> written by write_mjcf: the model's frames
JOINTS_TEXT = "hebictl:joints"  # ... and joint data MJCF has no attribute for (max_velocity, one-sided limits)

_SECTIONS = {"compiler", "option", "size", "statistic", "visual", "asset", "worldbody", "default", "contact",
             "equality", "tendon", "actuator", "sensor", "keyframe", "custom", "extension", "deformable"}
_BODY_CHILDREN = {"inertial", "joint", "freejoint", "geom", "site", "camera", "light", "body", "frame", "flexcomp",
                  "replicate", "attach", "plugin"}
_UNSUPPORTED = {"composite": "it generates bodies procedurally (cables, particles, grids)"}
_ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
_POSE = ("pos", *_ORIENT)
_ATTRS: dict[str, set[str]] = {
    "body": {"name", "childclass", "mocap", "gravcomp", "sleep", "user", *_POSE},
    "inertial": {"mass", "diaginertia", "fullinertia", *_POSE},
    "joint": {"name", "class", "type", "group", "pos", "axis", "springdamper", "limited", "actuatorfrclimited",
              "solreflimit", "solimplimit", "solreffriction", "solimpfriction", "stiffness", "range",
              "actuatorfrcrange", "actuatorgravcomp", "margin", "ref", "springref", "armature", "damping",
              "frictionloss", "user"},
    "freejoint": {"name", "group", "align"},
    "geom": {"name", "class", "type", "contype", "conaffinity", "condim", "group", "priority", "size", "material",
             "friction", "mass", "density", "shellinertia", "solmix", "solref", "solimp", "margin", "gap", "fromto",
             "hfield", "mesh", "fitscale", "rgba", "fluidshape", "fluidcoef", "surfacevel", "adhesion", "user", *_POSE},
    "site": {"name", "class", "type", "group", "material", "size", "fromto", "rgba", "user", *_POSE},
    "frame": {"name", "childclass", *_POSE},
    "replicate": {"count", "offset", "euler", "sep", "prefix"},
    "attach": {"model", "body", "frame", "prefix"},
}
_ACTUATORS = {"general", "motor", "position", "velocity", "intvelocity", "orientation", "pid", "damper", "cylinder",
              "muscle", "adhesion", "dcmotor"}
_PRIMITIVES = {"sphere", "capsule", "cylinder", "ellipsoid", "box"}
_AXIS_ROT = {"x": rot_x, "y": rot_y, "z": rot_z}
_VOLUME_TYPES = {"hfield", "sphere", "capsule", "cylinder", "ellipsoid", "box", "mesh", "sdf"}


# --------------------------------------------------------------------------- documents
@dataclass
class _Compiler:
    angle: float = math.pi / 180.0
    eulerseq: str = "xyz"
    inertiafromgeom: str = "auto"
    inertiagrouprange: tuple[int, int] = (0, 5)
    boundmass: float = 0.0
    boundinertia: float = 0.0
    balanceinertia: bool = False
    settotalmass: float = -1.0
    autolimits: bool = True
    discardvisual: bool = False
    alignfree: bool = False
    meshdir: Path | None = None
    conflict: str | None = None


@dataclass
class _Doc:
    """One MJCF document after includes: the main file, or a model brought in by ``<attach>``."""

    file: str
    base_dir: Path | None
    root: etree._Element
    compiler: _Compiler = field(default_factory=_Compiler)
    defaults: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    meshes: dict[str, etree._Element] = field(default_factory=dict)
    models: dict[str, etree._Element] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Ctx:
    """Where an element is read: its document, inherited childclass and name affixes."""

    doc: _Doc
    childclass: str | None = None
    prefix: str = ""
    suffix: str = ""

    def name(self, raw: str | None) -> str | None:
        return None if not raw else f"{self.prefix}{raw}{self.suffix}"


@dataclass
class _Item:
    """One element of a body's content with its pose in the body frame (frames/replicates flattened)."""

    tag: str
    elem: etree._Element
    T: FloatArray
    ctx: _Ctx
    shape: tuple[FloatArray, float | None] | None = None  # geom pose and fromto half length, computed once


class _Reader:
    """One read of an MJCF file: its documents, names given so far, and the model being built."""

    def __init__(self, file: str, base_dir: Path | None) -> None:
        self.file = file
        self.base_dir = base_dir
        self.counts = {"body": 1, "joint": 0, "site": 0, "geom": 0}
        self.names: dict[str, dict[str, etree._Element]] = {"body": {}, "joint": {}, "site": {}, "geom": {}}
        self.attached: dict[tuple[str, str], _Doc] = {}
        self.actuators: dict[str, list[dict[str, Any]]] = {}
        self.synthetic: set[str] = set()
        self.site_frames: list[tuple[str, FloatArray, int]] = []
        self.world_geoms: list[dict[str, Any]] = []
        self.missing_meshes: list[str] = []
        self.mass_scale = 1.0
        self.joint_extras: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------------ errors
    def where(self, elem: etree._Element | None) -> tuple[str, int | None]:
        if elem is None:
            return self.file, None
        for e in (elem, *elem.iterancestors()):
            src = e.get(_SRC)
            if src is not None:
                return src, elem.sourceline
        return self.file, elem.sourceline

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        file, line = self.where(elem)
        return FormatError(message, file, line)

    # ------------------------------------------------------------------ attributes
    def floats(self, elem: etree._Element, text: str, attr: str, count: int | tuple[int, ...] | None = None
               ) -> FloatArray:
        try:
            parsed = [float(t) for t in text.split()]
        except ValueError:
            raise self.fail(f"<{local_name(elem)}> attribute {attr}={text!r} is not a list of numbers", elem) from None
        if not all(map(math.isfinite, parsed)):
            raise self.fail(f"<{local_name(elem)}> attribute {attr}={text!r} has non-finite numbers", elem)
        values = np.array(parsed)
        if count is not None:
            allowed = (count,) if isinstance(count, int) else count
            if len(values) not in allowed:
                want = " or ".join(str(c) for c in allowed)
                raise self.fail(f"<{local_name(elem)}> attribute {attr} needs {want} numbers, got {len(values)}",
                                elem)
        return values

    def cls(self, elem: etree._Element, ctx: _Ctx) -> str:
        name = elem.get("class") or ctx.childclass or "main"
        if name not in ctx.doc.defaults:
            raise self.fail(f"unknown default class name {name!r}", elem)
        return name

    def get(self, elem: etree._Element, tag: str, attr: str, ctx: _Ctx | None, cls: str | None = None) -> str | None:
        """An attribute from the element, else from its default class."""
        v = elem.get(attr)
        if v is not None or ctx is None:
            return v
        return ctx.doc.defaults[cls or self.cls(elem, ctx)].get(tag, {}).get(attr)

    def num(self, elem: etree._Element, tag: str, attr: str, ctx: _Ctx | None, default: float,
            cls: str | None = None) -> float:
        text = self.get(elem, tag, attr, ctx, cls)
        return default if text is None else float(self.floats(elem, text, attr, 1)[0])

    def vec(self, elem: etree._Element, tag: str, attr: str, ctx: _Ctx | None, default: tuple[float, ...] | None,
            count: int | tuple[int, ...] | None = 3, cls: str | None = None) -> FloatArray | None:
        text = self.get(elem, tag, attr, ctx, cls)
        if text is None:
            return None if default is None else np.array(default, dtype=np.float64)
        return self.floats(elem, text, attr, count)

    def flag(self, elem: etree._Element, tag: str, attr: str, ctx: _Ctx | None, default: str,
             cls: str | None = None) -> str:
        return self.get(elem, tag, attr, ctx, cls) or default

    def check_attrs(self, elem: etree._Element, tag: str) -> None:
        allowed = _ATTRS.get(tag)
        if allowed is None:
            return
        for a in elem.attrib:
            if a.startswith("{"):
                continue
            if a not in allowed:
                raise self.fail(f"unrecognized attribute {a!r} in <{tag}>", elem)

    # ------------------------------------------------------------------ poses
    def rotation(self, elem: etree._Element, tag: str, ctx: _Ctx, cls: str | None = None) -> FloatArray:
        """Orientation from the element's own specifier, else from its defaults; identity if none."""
        own = [a for a in _ORIENT if elem.get(a) is not None]
        if len(own) > 1:
            raise self.fail(f"multiple orientation specifiers are not allowed: {', '.join(own)}", elem)
        if own:
            return self.orient(elem, own[0], elem.get(own[0]), ctx.doc.compiler)
        if tag in ("body", "frame", "inertial") or cls is None:
            return np.eye(3)
        d = ctx.doc.defaults[cls].get(tag, {})
        dflt = [a for a in _ORIENT if a in d]
        return self.orient(elem, dflt[-1], d[dflt[-1]], ctx.doc.compiler) if dflt else np.eye(3)

    def orient(self, elem: etree._Element, kind: str, text: str, comp: _Compiler) -> FloatArray:
        if kind == "quat":
            q = self.floats(elem, text, kind, 4)
            if np.linalg.norm(q) < MJMINVAL:
                raise self.fail("quaternion has zero norm", elem)
            return quat_matrix(q)
        if kind == "axisangle":
            v = self.floats(elem, text, kind, 4)
            if np.linalg.norm(v[:3]) < MJMINVAL:
                raise self.fail("axisangle has a zero axis", elem)
            return axis_angle_matrix(v[:3], v[3] * comp.angle)
        if kind == "euler":
            v = self.floats(elem, text, kind, 3) * comp.angle
            R = np.eye(3)
            for ch, a in zip(comp.eulerseq, v, strict=True):
                if a == 0.0:
                    continue
                Ri = _AXIS_ROT[ch.lower()](float(a))
                R = R @ Ri if ch.islower() else Ri @ R
            return R
        if kind == "xyaxes":
            v = self.floats(elem, text, kind, 6)
            x = v[:3] / _norm(v[:3], self, elem)
            y = v[3:] - (v[3:] @ x) * x
            y = y / _norm(y, self, elem)
            return np.column_stack([x, y, np.cross(x, y)])
        v = self.floats(elem, text, kind, 3)  # zaxis
        return z_to_vector(v / _norm(v, self, elem))

    def pose(self, elem: etree._Element, tag: str, ctx: _Ctx, cls: str | None = None) -> FloatArray:
        pos = self.vec(elem, tag, "pos", ctx if cls else None, (0.0, 0.0, 0.0), 3, cls)
        return transform(self.rotation(elem, tag, ctx, cls), pos)

    # ------------------------------------------------------------------ documents
    def load_doc(self, root: etree._Element, file: str, base_dir: Path | None) -> _Doc:
        if local_name(root) != "mujoco":
            raise FormatError(f"MJCF root element must be <mujoco>, got <{local_name(root)}>", file, root.sourceline)
        if file != self.file:  # an attached model: its elements report their own file
            for child in elements(root):
                child.set(_SRC, file)
        self.expand_includes(root, base_dir, base_dir, [str(Path(file).resolve())], file)
        doc = _Doc(file, base_dir, root)
        for el in elements(root):
            tag = local_name(el)
            if tag not in _SECTIONS:
                raise self.fail(f"unrecognized element <{tag}> in <mujoco>", el)
        for el in root.iterchildren("compiler"):
            self.compiler(el, doc)
        doc.defaults = {"main": {}}
        for el in root.iterchildren("default"):
            self.defaults(el, doc, "main", None)
        for el in root.iterchildren("option"):
            for k, v in el.attrib.items():
                doc.options[k] = v
            for fl in el.iterchildren("flag"):
                doc.flags.update(fl.attrib)
        for asset in root.iterchildren("asset"):
            for el in elements(asset):
                tag = local_name(el)
                if tag == "mesh":
                    name = el.get("name") or (Path(el.get("file", "")).stem if el.get("file") else None)
                    if name is None:
                        raise self.fail("<mesh> needs a name or a file", el)
                    if name in doc.meshes:
                        raise self.fail(f"repeated name {name!r} in mesh", el)
                    doc.meshes[name] = el
                elif tag == "model":
                    src = el.get("file")
                    if src is None:
                        raise self.fail("<model> asset needs a file", el)
                    doc.models[el.get("name") or ""] = el
        return doc

    def expand_includes(self, root: etree._Element, here: Path | None, main: Path | None, stack: list[str],
                        file: str) -> None:
        """Replace every <include file=...> by the children of the included <mujoco> (recursively).

        ``here`` is the folder of the file holding ``root``; included paths are tried there, then
        in the main file's folder. Spliced elements are marked with their file for error messages.
        """
        for inc in list(root.iter("include")):
            src = inc.get("file")
            if src is None:
                raise FormatError("<include> needs a file attribute", file, inc.sourceline)
            candidates = [p / src for p in (here, main) if p is not None] or [Path(src)]
            path = next((c for c in candidates if c.is_file()), None)
            if path is None:
                raise FormatError(f"included file {src!r} not found", file, inc.sourceline)
            key = str(path.resolve())
            if key in stack:
                raise FormatError(f"include cycle: {src!r} is already being included", file, inc.sourceline)
            sub = parse_xml(path, str(path))
            if local_name(sub) != "mujoco":
                raise FormatError(f"included file must have a <mujoco> root, got <{local_name(sub)}>", str(path),
                                  sub.sourceline)
            self.expand_includes(sub, path.parent, main, [*stack, key], str(path))
            parent = inc.getparent()
            if parent is None:
                raise FormatError("<include> cannot be the root element", file, inc.sourceline)
            pos = parent.index(inc)
            for k, child in enumerate(elements(sub)):
                if child.get(_SRC) is None:
                    child.set(_SRC, str(path))
                parent.insert(pos + k, child)
            parent.remove(inc)

    def compiler(self, el: etree._Element, doc: _Doc) -> None:
        c = doc.compiler
        for key, text in el.attrib.items():
            if key == "angle":
                if text not in ("degree", "radian"):
                    raise self.fail(f"compiler angle must be 'degree' or 'radian', got {text!r}", el)
                c.angle = math.pi / 180.0 if text == "degree" else 1.0
            elif key == "eulerseq":
                if len(text) != 3 or any(ch not in "xyzXYZ" for ch in text):
                    raise self.fail(f"eulerseq must be 3 characters from xyzXYZ, got {text!r}", el)
                c.eulerseq = text
            elif key == "inertiafromgeom":
                if text not in ("true", "false", "auto"):
                    raise self.fail(f"inertiafromgeom must be true, false or auto, got {text!r}", el)
                c.inertiafromgeom = text
            elif key == "inertiagrouprange":
                lo, hi = self.floats(el, text, key, 2)
                c.inertiagrouprange = (int(lo), int(hi))
            elif key in ("boundmass", "boundinertia", "settotalmass"):
                setattr(c, key, float(self.floats(el, text, key, 1)[0]))
            elif key in ("balanceinertia", "autolimits", "discardvisual", "alignfree"):
                setattr(c, key, _bool(text, key, self, el))
            elif key in ("meshdir", "assetdir"):
                if key == "meshdir" or c.meshdir is None:
                    c.meshdir = Path(text)
            elif key == "coordinate":
                if text != "local":
                    raise self.fail("compiler coordinate='global' is not supported (MuJoCo 3 removed it)", el)
            elif key == "conflict":
                c.conflict = text
            elif key not in ("strippath", "fitaabb", "texturedir", "usethread", "fusestatic", "saveinertial",
                             "exactmeshinertia") and not key.startswith("{"):
                raise self.fail(f"unrecognized attribute {key!r} in <compiler>", el)

    def defaults(self, el: etree._Element, doc: _Doc, name: str, parent: str | None) -> None:
        cls_name = el.get("class") or name
        if parent is not None and el.get("class") is None:
            raise self.fail("nested <default> needs a class attribute", el)
        if parent is not None and cls_name in doc.defaults:
            raise self.fail(f"repeated default class name {cls_name!r}", el)
        base = copy.deepcopy(doc.defaults[parent]) if parent is not None else doc.defaults.setdefault(cls_name, {})
        doc.defaults[cls_name] = base
        nested = []
        for child in elements(el):
            tag = local_name(child)
            if tag == "default":
                nested.append(child)
                continue
            key = "actuator" if tag in _ACTUATORS else tag
            attrs = base.setdefault(key, {})
            if tag in ("geom", "site") and any(a in child.attrib for a in _ORIENT):
                for a in _ORIENT:
                    attrs.pop(a, None)
            attrs.update({k: v for k, v in child.attrib.items() if not k.startswith("{")})
        for child in nested:
            self.defaults(child, doc, child.get("class", ""), cls_name)

    # ------------------------------------------------------------------ body content
    def content(self, parent: etree._Element, T: FloatArray, ctx: _Ctx) -> Iterator[_Item]:
        """Children of a body (or worldbody), with frames, replicates and attachments flattened."""
        for el in elements(parent):
            tag = local_name(el)
            if tag in _UNSUPPORTED:
                raise self.fail(f"unsupported MJCF element <{tag}>: {_UNSUPPORTED[tag]}", el)
            if tag not in _BODY_CHILDREN:
                raise self.fail(f"unrecognized element <{tag}> in <{local_name(parent)}>", el)
            self.check_attrs(el, tag)
            if tag == "frame":
                sub = replace(ctx, childclass=el.get("childclass") or ctx.childclass)
                if el.get("childclass") and el.get("childclass") not in ctx.doc.defaults:
                    raise self.fail(f"unknown default class name {el.get('childclass')!r}", el)
                yield from self.content(el, T @ self.pose(el, "frame", ctx), sub)
            elif tag == "replicate":
                yield from self.replicate(el, T, ctx)
            elif tag == "attach":
                yield from self.attach(el, T, ctx)
            elif tag == "flexcomp":
                yield from self.flexcomp(el, T, ctx)
            elif tag in ("camera", "light", "plugin"):
                continue
            else:
                yield _Item(tag, el, T, ctx)

    def replicate(self, el: etree._Element, T: FloatArray, ctx: _Ctx) -> Iterator[_Item]:
        count_text = el.get("count")
        if count_text is None or not count_text.strip().isdigit() or int(count_text) < 1:
            raise self.fail(f"replicate needs a positive integer count, got {count_text!r}", el)
        count = int(count_text)
        offset = self.vec(el, "replicate", "offset", None, (0.0, 0.0, 0.0))
        R = self.orient(el, "euler", el.get("euler"), ctx.doc.compiler) if el.get("euler") else np.eye(3)
        step = transform(R, offset)
        sep = el.get("sep", "")
        digits = len(str(count))
        Ti = np.eye(4)
        for i in range(count):
            sub = replace(ctx, suffix=f"{sep}{i:0{digits}d}{ctx.suffix}")
            yield from self.content(el, T @ Ti, sub)
            Ti = Ti @ step

    def flexcomp(self, el: etree._Element, T: FloatArray, ctx: _Ctx) -> Iterator[_Item]:
        """The vertex bodies of a ``<flexcomp>``, as ``<body>`` elements made here (see mjcf_flexcomp)."""
        fields: dict[str, Any] = {"name": el.get("name", "")}
        for attr in ("type", "dof"):
            if el.get(attr) is not None:
                fields[attr] = el.get(attr)
        for attr, count in (("count", 3), ("dim", 1)):
            if el.get(attr) is not None:
                v = mjcf_flexcomp.parse_ints(self.floats(el, el.get(attr, ""), attr, count))
                fields[attr] = v if count > 1 else v[0]
        for attr, count in (("spacing", 3), ("scale", 3), ("mass", 1), ("inertiabox", 1), ("point", None)):
            if el.get(attr) is not None:
                v = tuple(float(x) for x in self.floats(el, el.get(attr, ""), attr, count))
                fields[attr] = v[0] if count == 1 else v
        if el.get("element") is not None:
            fields["element"] = mjcf_flexcomp.parse_ints(self.floats(el, el.get("element", ""), "element"))
        if el.get("rigid") is not None:
            fields["rigid"] = _bool(el.get("rigid", ""), "rigid", self, el)
        if el.get("file") is not None and el.get("type") not in ("mesh", "gmsh"):
            raise self.fail("flexcomp file is only for types mesh and gmsh", el)
        pins: dict[str, list[int]] = {"id": [], "range": [], "grid": [], "gridrange": []}
        for pin in el.iterchildren("pin"):
            for key in pins:
                if pin.get(key) is not None:
                    pins[key] += mjcf_flexcomp.parse_ints(self.floats(pin, pin.get(key, ""), key))
        spec = mjcf_flexcomp.Flexcomp(**fields, pin_id=tuple(pins["id"]), pin_range=tuple(pins["range"]),
                                      pin_grid=tuple(pins["grid"]), pin_gridrange=tuple(pins["gridrange"]))
        pos = self.vec(el, "flexcomp", "pos", None, (0.0, 0.0, 0.0))
        try:
            # enclosing frames move the flexcomp's pose; its bodies keep the parent body's orientation (MuJoCo)
            R = T[:3, :3] @ self.rotation(el, "flexcomp", ctx)
            bodies, n_pinned = mjcf_flexcomp.vertex_bodies(spec, R, T[:3, :3] @ pos + T[:3, 3])
        except ValueError as exc:
            what = "unsupported <flexcomp>: " if "not supported" in str(exc) else "<flexcomp>: "
            raise self.fail(what + str(exc), el) from None
        for vb in bodies:
            body = etree.Element("body", name=vb.name, pos=" ".join(repr(float(x)) for x in vb.position))
            body.sourceline = el.sourceline
            etree.SubElement(body, "inertial", pos="0 0 0", mass=repr(vb.mass),
                             diaginertia=" ".join([repr(vb.inertia)] * 3))
            for axis in vb.slide_axes:
                etree.SubElement(body, "joint", type="slide", pos="0 0 0", axis=" ".join(repr(a) for a in axis))
            if not n_pinned:
                body.set(_FLEX_FREE, "1")
            for child in body.iter():
                child.sourceline = el.sourceline
                if el.get(_SRC) is not None or self.where(el)[0] != self.file:
                    child.set(_SRC, self.where(el)[0])
            yield _Item("body", body, np.eye(4), ctx)

    def attach(self, el: etree._Element, T: FloatArray, ctx: _Ctx) -> Iterator[_Item]:
        model_name = el.get("model")
        # without a model, a frame of this very document is copied
        doc = ctx.doc if model_name is None else self.child_doc(el, model_name, ctx.doc)
        prefix = el.get("prefix", "")
        sub = _Ctx(doc, None, ctx.prefix + prefix, ctx.suffix)
        target = el.get("body") or el.get("frame")
        tag = "body" if el.get("body") else "frame"
        if target is None:  # the whole world of the model, as if in a frame
            for wb in doc.root.iterchildren("worldbody"):
                yield from self.content(wb, T, sub)
            return
        found = None
        for wb in doc.root.iterchildren("worldbody"):
            for cand in wb.iter(tag):
                if cand.get("name") == target:
                    found = cand
                    break
            if found is not None:
                break
        if found is None:
            raise self.fail(f"<attach>: {tag} {target!r} not found in model {model_name!r}", el)
        # the attached element keeps the childclass its own document gave it
        for anc in found.iterancestors():
            if anc.get("childclass"):
                sub = replace(sub, childclass=anc.get("childclass"))
                break
        if tag == "body":
            yield _Item("body", found, T, sub)
        else:
            self.check_attrs(found, "frame")
            inner = replace(sub, childclass=found.get("childclass") or sub.childclass)
            yield from self.content(found, T @ self.pose(found, "frame", sub), inner)

    def child_doc(self, el: etree._Element, model_name: str, parent: _Doc) -> _Doc:
        asset = parent.models.get(model_name)
        key_path = None
        if asset is None:
            # a <model file> without a name is known by the model name inside the file
            for m in parent.models.values():
                path = self.asset_path(m.get("file", ""), parent)
                if path is not None and path.is_file():
                    try:
                        inner = parse_xml(path, str(path)).get("model")
                    except FormatError:
                        continue
                    if inner == model_name:
                        asset, key_path = m, path
                        break
        if asset is None:
            raise self.fail(f"<attach>: unknown model {model_name!r} (declare it with <asset><model>)", el)
        path = key_path or self.asset_path(asset.get("file", ""), parent)
        if path is None or not path.is_file():
            raise self.fail(f"<attach>: model file {asset.get('file')!r} not found", asset)
        key = (str(path.resolve()), model_name)
        if key not in self.attached:
            doc = self.load_doc(parse_xml(path, str(path)), str(path), path.parent)
            self.check_conflict(parent, doc, el)
            self.attached[key] = doc
        return self.attached[key]

    def check_conflict(self, parent: _Doc, child: _Doc, el: etree._Element) -> None:
        """``<compiler conflict="error">``: option values set by both documents must agree (MuJoCo rule);
        ``merge``: gravity must agree."""
        policy = parent.compiler.conflict
        if policy not in ("error", "merge"):
            return
        keys = set(child.options) if policy == "error" else {"gravity"} & set(child.options)
        for k in sorted(keys):
            pv = parent.options.get(k, _OPTION_DEFAULTS.get(k))
            cv = child.options[k]
            if pv is None or _normalize(pv) != _normalize(cv):
                raise self.fail(f"attach conflict ({policy} policy): option {k}: parent has {pv!r}, "
                                f"child has {cv!r}", el)
        if policy == "error":
            for k, cv in child.flags.items():
                if parent.flags.get(k) != cv:
                    raise self.fail(f"attach conflict (error policy): flag {k!r}: parent has "
                                    f"{parent.flags.get(k)!r}, child has {cv!r}", el)

    def asset_path(self, name: str, doc: _Doc, mesh: bool = False) -> Path | None:
        if not name:
            return None
        p = Path(name)
        if p.is_absolute():
            return p
        base = doc.base_dir or Path()
        if mesh and doc.compiler.meshdir is not None:
            d = doc.compiler.meshdir
            base = d if d.is_absolute() else base / d
        return base / p

    # ------------------------------------------------------------------ bodies
    def read(self, doc: _Doc) -> RobotModel:
        root = doc.root
        self.scan_actuators(doc)
        extras = self.custom_text(root, JOINTS_TEXT)
        if extras is not None:
            try:
                self.joint_extras = json.loads(extras)
                ok = isinstance(self.joint_extras, dict) and all(
                    isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values())
                    for v in self.joint_extras.values())
            except json.JSONDecodeError:
                ok = False
            if not ok:
                raise self.fail(f"<custom><text name={JOINTS_TEXT!r}> must hold a JSON object of joint data", root)
        builder = ModelBuilder(root.get("model") or "MuJoCo Model", source=self.file if self.file != "<string>"
                               else None, format="mjcf")
        ctx = _Ctx(doc)
        for wb in root.iterchildren("worldbody"):
            for a in wb.attrib:
                if not a.startswith("{"):
                    raise self.fail(f"unrecognized attribute {a!r} in <worldbody>", wb)
            self.world_content(builder, wb, np.eye(4), ctx)
        unknown = sorted(set(self.actuators) - set(self.names["joint"]))
        if unknown:
            raise self.fail(f"actuator refers to unknown joint {unknown[0]!r}", self.actuators[unknown[0]][0]["elem"])
        gravity = np.array([0.0, 0.0, -9.81])
        if "gravity" in doc.options:
            gravity = self.floats(root, doc.options["gravity"], "gravity", 3)
        disabled = doc.flags.get("gravity") == "disable"
        frames_text = self.custom_text(root, FRAMES_TEXT)
        if frames_text is not None:
            self.restore_frames(builder, frames_text, root)
        else:
            add_standard_frames(builder)
            for name, T, body in self.site_frames:
                builder.add_frame("site", body, T, name)
        if self.missing_meshes:
            warnings.warn(f"{self.file}: {len(self.missing_meshes)} mesh file(s) of body geoms not found (first: "
                          f"{self.missing_meshes[0]}); kinematics and dynamics do not need them", stacklevel=4)
        return builder.build(gravity=np.zeros(3) if disabled else gravity,
                             metadata={"gravity_disabled": disabled, "world_geoms": self.world_geoms,
                                       "missing_meshes": self.missing_meshes,
                                       "option_gravity": gravity.tolist(), "compiler_angle":
                                       "degree" if doc.compiler.angle != 1.0 else "radian"})

    def world_content(self, builder: ModelBuilder, wb: etree._Element, T: FloatArray, ctx: _Ctx) -> None:
        for item in self.content(wb, T, ctx):
            if item.tag == "body":
                self.body(builder, item, -1, top=True)
            elif item.tag == "site":
                self.site(item, -1)
            elif item.tag == "geom":
                cls = self.cls(item.elem, item.ctx)
                self.register("geom", item)
                self.world_geoms.append({"type": self.flag(item.elem, "geom", "type", item.ctx, "sphere", cls),
                                         "line": item.elem.sourceline})
            elif item.tag in ("joint", "freejoint"):
                raise self.fail("World body cannot have joints", item.elem)
            elif item.tag == "inertial":
                raise self.fail("world body cannot have <inertial>", item.elem)

    def register(self, kind: str, item: _Item, name: str | None = None) -> str:
        """Check the name is new for its kind; return it, or MuJoCo-style ``<kind><index>`` if unnamed."""
        index = self.counts[kind]
        self.counts[kind] += 1
        name = name if name is not None else item.ctx.name(item.elem.get("name"))
        if name:
            if name in self.names[kind]:
                raise self.fail(f"repeated name {name!r} in {kind}", item.elem)
            self.names[kind][name] = item.elem
            return name
        return f"{kind}{index}"

    def site(self, item: _Item, body: int) -> None:
        name = self.register("site", item)
        cls = self.cls(item.elem, item.ctx)
        T = item.T @ self.shape_pose(item.elem, "site", item.ctx, cls)[0]
        self.site_frames.append((name, T, body))

    def shape_pose(self, elem: etree._Element, tag: str, ctx: _Ctx, cls: str) -> tuple[FloatArray, float | None]:
        """Pose of a geom/site in its body frame; with ``fromto``, also the half length it implies."""
        fromto = self.vec(elem, tag, "fromto", ctx, None, 6, cls)
        gtype = self.flag(elem, tag, "type", ctx, "sphere", cls)
        if fromto is not None and gtype in ("capsule", "cylinder", "box", "ellipsoid"):
            a, b = fromto[:3], fromto[3:]
            d = a - b  # MuJoCo points the shape's z axis from "to" back to "from"
            half = float(np.linalg.norm(d)) / 2.0
            if half < MJMINVAL:
                raise self.fail("fromto points coincide", elem)
            return transform(z_to_vector(d / (2 * half)), (a + b) / 2.0), half
        return self.pose(elem, tag, ctx, cls), None

    def body(self, builder: ModelBuilder, item: _Item, parent: int, top: bool) -> float:
        """Add one MuJoCo body (and its subtree); return the mass welded to its parent (0 if it moves)."""
        el, ctx = item.elem, item.ctx
        if el.get("childclass") and el.get("childclass") not in ctx.doc.defaults:
            raise self.fail(f"unknown default class name {el.get('childclass')!r}", el)
        name = self.register("body", item)
        sub = replace(ctx, childclass=el.get("childclass") or ctx.childclass)
        P = item.T @ self.pose(el, "body", ctx)
        items = list(self.content(el, np.eye(4), sub))
        joints = [i for i in items if i.tag in ("joint", "freejoint")]
        inertia = self.body_inertia(el, name, items, ctx.doc)
        meta: dict[str, Any] = {"line": el.sourceline, "file": self.where(el)[0]}
        if el.get("mocap") == "true":
            meta["mocap"] = True
        geoms = [self.geom_meta(i) for i in items if i.tag == "geom"]
        if geoms:
            meta["geoms"] = geoms
        # joints: MuJoCo applies them in order, each about its anchor in the (moving) body frame
        specs = [self.joint_spec(j, top) for j in joints]
        kinds = [s["kind"] for s in specs]
        if JointKind.FREE in kinds and len(kinds) > 1:
            raise self.fail(f"more than 6 dofs in body {name!r}" if sum(k.nv for k in kinds) > 6 else
                            f"a free joint must be the only joint of body {name!r}", el)
        for a, b in itertools.pairwise(kinds):
            if a is JointKind.BALL and b in (JointKind.BALL, JointKind.REVOLUTE):
                raise self.fail(f"ball followed by rotation in body {name!r}", el)
        if sum(k.nv for k in kinds) > 6:
            raise self.fail(f"more than 6 dofs in body {name!r}", el)
        if kinds and any(i.tag == "body" and i.elem.get(_FLEX_FREE) for i in items):
            raise self.fail(f"body {name!r} has joints but no flex vertices/nodes are pinned to it", el)
        align = np.eye(4)
        if kinds == [JointKind.FREE]:
            spec = specs[0]
            if not top:
                raise self.fail("free joint can only be used on top level", joints[0].elem)
            if spec["align"] and inertia.mass > 0:
                # the body frame moves to its inertial frame, with MuJoCo's choice of principal axes
                moments, R_in = geometry.principal_axes(np.array(inertia.rotational))
                align = transform(R_in, inertia.com)
                inertia = Inertia(inertia.mass, (0.0, 0.0, 0.0), np.diag(moments))
            pose = P @ align
            meta["default_position"] = tuple(float(v) for v in pose[:3, 3])
            meta["default_quaternion"] = tuple(float(v) for v in matrix_quat(pose[:3, :3]))
            index = self.add(builder, name, parent, np.eye(4), spec["joint"], inertia, meta, el)
        elif not specs:
            index = self.add(builder, name, parent, P, Joint.fixed(), inertia, meta, el)
        else:
            prev_anchor = np.zeros(3)
            at = parent
            L = P
            for k, spec in enumerate(specs):
                anchor = spec["anchor"]
                place = L @ transform(None, anchor - prev_anchor) @ spec["offset"]
                last = k == len(specs) - 1
                if last and not np.any(anchor):
                    index = self.add(builder, name, at, place, spec["joint"], inertia, meta, el)
                    break
                chain_name = self.unique_body(f"{name}__{spec['joint'].name}")
                at = self.add(builder, chain_name, at, place, spec["joint"], None, {"synthetic": "mjcf joint chain"},
                              el)
                L = np.eye(4)
                prev_anchor = anchor
            else:
                index = self.add(builder, name, at, transform(None, -prev_anchor), Joint.fixed(), inertia, meta, el)
        inv_align = inverse_transform(align)
        for i in items:
            if i.tag == "site":
                self.site(replace(i, T=inv_align @ i.T), index)
            elif i.tag == "geom":
                self.register("geom", i)
        welded = inertia.mass
        for i in items:
            if i.tag == "body":
                welded += self.body(builder, replace(i, T=inv_align @ i.T), index, top=False)
        if not specs:
            return welded
        if welded < MJMINVAL:  # MuJoCo's rule: what moves with a joint must have mass
            raise self.fail(f"mass and inertia of moving bodies must be larger than mjMINVAL (body {name!r} and the "
                            "bodies welded to it have no mass)", el)
        return 0.0

    def unique_body(self, name: str) -> str:
        out, k = name, 1
        while out in self.names["body"] or out in self.synthetic:
            out = f"{name}_{k}"
            k += 1
        self.synthetic.add(out)
        return out

    def add(self, builder: ModelBuilder, name: str, parent: int, placement: FloatArray, joint: Joint,
            inertia: Inertia | None, meta: dict[str, Any], el: etree._Element) -> int:
        try:
            return builder.add_body(name, parent, placement, joint, inertia, meta)
        except ModelError as exc:
            raise self.fail(str(exc), el) from None

    def joint_spec(self, item: _Item, top: bool) -> dict[str, Any]:
        """One joint: hebictl Joint, its anchor in the body frame and the placement offset for ``ref``."""
        el, ctx = item.elem, item.ctx
        comp = ctx.doc.compiler
        name = self.register("joint", item)
        extra = self.joint_extras.get(name, {})
        if item.tag == "freejoint":
            align = el.get("align", "auto")
            return {"kind": JointKind.FREE, "anchor": np.zeros(3), "offset": np.eye(4),
                    "align": comp.alignfree if align == "auto" else _bool(align, "align", self, el),
                    "joint": Joint(name, JointKind.FREE, metadata={"mjcf_type": "free", "line": el.sourceline},
                                   max_velocity=extra.get("max_velocity", math.inf),
                                   max_effort=extra.get("max_effort", math.inf))}
        cls = self.cls(el, ctx)
        jtype = self.flag(el, "joint", "type", ctx, "hinge", cls)
        kinds = {"hinge": JointKind.REVOLUTE, "slide": JointKind.PRISMATIC, "ball": JointKind.BALL,
                 "free": JointKind.FREE}
        if jtype not in kinds:
            raise self.fail(f"joint {name!r} has unknown type {jtype!r}; expected hinge, slide, ball or free", el)
        kind = kinds[jtype]
        meta: dict[str, Any] = {"mjcf_type": jtype, "line": el.sourceline}
        if kind is JointKind.FREE:
            return {"kind": kind, "anchor": np.zeros(3), "offset": np.eye(4), "align": comp.alignfree,
                    "joint": Joint(name, kind, metadata=meta,
                                   damping=self.num(el, "joint", "damping", ctx, 0.0, cls),
                                   friction=self.num(el, "joint", "frictionloss", ctx, 0.0, cls),
                                   armature=self.num(el, "joint", "armature", ctx, 0.0, cls))}
        # a joint inside <frame> elements has its anchor and axis moved by them
        anchor = item.T[:3, :3] @ self.vec(el, "joint", "pos", ctx, (0.0, 0.0, 0.0), 3, cls) + item.T[:3, 3]
        axis = item.T[:3, :3] @ self.vec(el, "joint", "axis", ctx, (0.0, 0.0, 1.0), 3, cls)
        if kind is not JointKind.BALL and np.linalg.norm(axis) < MJMINVAL:
            raise self.fail(f"joint {name!r}: axis too small", el)
        angular = kind in (JointKind.REVOLUTE, JointKind.BALL)
        unit = comp.angle if angular else 1.0
        lower, upper = -math.inf, math.inf
        rng = self.vec(el, "joint", "range", ctx, None, 2, cls)
        limited = self.flag(el, "joint", "limited", ctx, "auto", cls)
        if limited == "auto":
            if rng is not None and not comp.autolimits:
                raise self.fail(f"joint {name!r} has `range` but not `limited`. set the autolimits=\"true\" compiler "
                                "option, specify `limited` explicitly (\"true\" or \"false\"), or remove `range`", el)
            # MuJoCo's autolimits: only a proper interval limits the joint
            is_limited = rng is not None and bool(rng[0] < rng[1])
        else:
            is_limited = _bool(limited, "limited", self, el)
        if is_limited:
            rng = np.zeros(2) if rng is None else rng
            if kind is not JointKind.BALL and not rng[0] < rng[1]:  # MuJoCo checks hinges and slides only
                raise self.fail(f"range[0] should be smaller than range[1] in joint {name!r}", el)
            if kind is JointKind.BALL:
                meta["range"] = (float(rng[0] * unit), float(rng[1] * unit))
            else:
                lower, upper = float(rng[0] * unit), float(rng[1] * unit)
        ref = self.num(el, "joint", "ref", ctx, 0.0, cls) * (unit if kind is not JointKind.BALL else 1.0)
        for key in ("springref", "stiffness", "armature"):
            v = self.num(el, "joint", key, ctx, 0.0, cls)
            if v:
                meta[key] = v * unit if key == "springref" and angular else v
        if ref:
            meta["ref"] = ref
        max_effort = self.effort_bound(el, name, ctx, cls)
        if not is_limited:
            lower, upper = extra.get("lower", lower), extra.get("upper", upper)
        if self.actuators.get(name):
            meta["actuators"] = [{k: v for k, v in a.items() if k != "elem"} for a in self.actuators[name]]
        try:
            joint = Joint(name, kind, tuple(axis) if kind is not JointKind.BALL else (0.0, 0.0, 1.0),
                          lower=lower, upper=upper, max_effort=max_effort,
                          max_velocity=extra.get("max_velocity", math.inf),
                          damping=self.num(el, "joint", "damping", ctx, 0.0, cls),
                          friction=self.num(el, "joint", "frictionloss", ctx, 0.0, cls),
                          armature=self.num(el, "joint", "armature", ctx, 0.0, cls), metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), el) from None
        offset = np.eye(4)
        if ref and kind is JointKind.REVOLUTE:
            offset = transform(axis_angle_matrix(joint.axis, -ref))
        elif ref and kind is JointKind.PRISMATIC:
            offset = transform(None, -ref * np.array(joint.axis))
        if kind is JointKind.PRISMATIC:
            anchor = np.zeros(3)  # a slide's anchor does not move the body
        return {"kind": kind, "anchor": anchor, "offset": offset, "joint": joint, "align": False}

    def effort_bound(self, el: etree._Element, name: str, ctx: _Ctx, cls: str) -> float:
        """Largest joint effort the file allows: the joint's actuatorfrcrange, its actuators' bounds."""
        bound = math.inf
        frc = self.vec(el, "joint", "actuatorfrcrange", ctx, None, 2, cls)
        lim = self.flag(el, "joint", "actuatorfrclimited", ctx, "auto", cls)
        if frc is not None and (lim == "true" or (lim == "auto" and ctx.doc.compiler.autolimits)):
            bound = float(np.max(np.abs(frc)))
        acts = self.actuators.get(name)
        if acts:
            total = sum(a["max_effort"] for a in acts)
            bound = min(bound, total)
        return bound

    def scan_actuators(self, doc: _Doc) -> None:
        """Actuators acting on joints, by joint name (read before the bodies so joints can carry them)."""
        ctx = _Ctx(doc)
        for section in doc.root.iterchildren("actuator"):
            for el in elements(section):
                tag = local_name(el)
                if tag not in _ACTUATORS and tag != "plugin":
                    raise self.fail(f"unrecognized element <{tag}> in <actuator>", el)
                joint = el.get("joint") or el.get("jointinparent")
                if joint is None:
                    continue
                cls = self.cls(el, ctx)
                gear = self.vec(el, "actuator", "gear", ctx, (1.0,), (1, 2, 3, 4, 5, 6), cls)
                g = abs(float(gear[0]))
                info: dict[str, Any] = {"type": tag, "name": el.get("name"), "gear": float(gear[0]), "elem": el}
                bound = math.inf
                for key in ("forcerange", "ctrlrange"):
                    rng = self.vec(el, "actuator", key, ctx, None, 2, cls)
                    lim = self.flag(el, "actuator", key.replace("range", "limited"), ctx, "auto", cls)
                    limited = rng is not None and (lim == "true" or (lim == "auto" and doc.compiler.autolimits))
                    if limited:
                        info[key] = (float(rng[0]), float(rng[1]))
                        if key == "forcerange" or tag == "motor":
                            bound = min(bound, g * float(np.max(np.abs(rng))))
                info["max_effort"] = bound
                self.actuators.setdefault(joint, []).append(info)

    def geom_shape(self, item: _Item, cls: str) -> tuple[FloatArray, float | None]:
        """A geom's pose in its body frame (frames applied) and fromto half length, cached on the item."""
        if item.shape is None:
            T, half = self.shape_pose(item.elem, "geom", item.ctx, cls)
            item.shape = (item.T @ T, half)
        return item.shape

    def geom_meta(self, item: _Item) -> dict[str, Any]:
        el, ctx = item.elem, item.ctx
        cls = self.cls(el, ctx)
        T, half = self.geom_shape(item, cls)
        out: dict[str, Any] = {"type": self.flag(el, "geom", "type", ctx, "sphere", cls),
                               "pose": T.tolist()}
        size = self.vec(el, "geom", "size", ctx, None, None, cls)
        if size is not None:
            out["size"] = size.tolist()
        if half is not None:
            out["half_length"] = half
        for key in ("mesh", "name", "rgba", "material"):
            v = self.get(el, "geom", key, ctx, cls)
            if v is not None:
                out[key] = item.ctx.name(v) if key == "name" else v
        if out["type"] == "mesh" and "mesh" in out:
            mesh = ctx.doc.meshes.get(out["mesh"])
            if mesh is not None and mesh.get("file"):
                path = self.asset_path(mesh.get("file", ""), ctx.doc, mesh=True)
                found = path is not None and path.is_file()
                out["mesh_path"] = str(path) if found else None
                if not found and mesh.get("file") not in self.missing_meshes:
                    self.missing_meshes.append(mesh.get("file", ""))
        return out

    # ------------------------------------------------------------------ inertia
    def body_inertia(self, el: etree._Element, name: str, items: list[_Item], doc: _Doc) -> Inertia:
        comp = doc.compiler
        inertials = [i for i in items if i.tag == "inertial"]
        if len(inertials) > 1:
            raise self.fail(f"body {name!r} has more than one <inertial>", inertials[1].elem)
        if inertials and comp.inertiafromgeom != "true":
            props = self.inertial(inertials[0])
        elif comp.inertiafromgeom == "false":
            props = geometry.MassProperties(0.0, np.zeros(3), np.zeros((3, 3)))
        else:
            moving = any(i.tag in ("joint", "freejoint") for i in items)
            parts = [self.geom_mass(i, name, moving) for i in items if i.tag == "geom"]
            props = geometry.combine(p for p in parts if p is not None)
        return self.mass_rules(props, name, el, comp)

    def mass_rules(self, props: geometry.MassProperties, name: str, el: etree._Element,
                   comp: _Compiler) -> Inertia:
        """compiler boundmass/boundinertia/balanceinertia and settotalmass, and MuJoCo's A + B >= C check."""
        mass, I = props.mass, props.inertia
        evals, evecs = np.linalg.eigh(I)
        changed = False
        if comp.boundmass > 0 and mass < comp.boundmass:
            mass, changed = comp.boundmass, True
        if comp.boundinertia > 0 and np.any(evals < comp.boundinertia):
            evals, changed = np.maximum(evals, comp.boundinertia), True
        if evals[0] + evals[1] < evals[2] - MJMINVAL:
            if not comp.balanceinertia:
                raise self.fail(f"inertia of body {name!r} must satisfy A + B >= C; use 'balanceinertia' to fix", el)
            evals, changed = np.full(3, evals.mean()), True
        if changed:
            I = evecs @ np.diag(evals) @ evecs.T
        com = props.com if props.mass > 0 else np.zeros(3)
        return Inertia(mass * self.mass_scale, com, 0.5 * (I + I.T) * self.mass_scale)

    def inertial(self, item: _Item) -> geometry.MassProperties:
        el, ctx = item.elem, item.ctx
        if el.get("pos") is None or el.get("mass") is None:
            raise self.fail("<inertial> needs pos and mass", el)
        T = item.T @ self.pose(el, "inertial", ctx)
        mass = float(self.floats(el, el.get("mass", ""), "mass", 1)[0])
        if mass < 0:
            raise self.fail(f"negative mass {mass} in <inertial>", el)
        if el.get("fullinertia") is not None:
            if any(el.get(a) is not None for a in _ORIENT):
                raise self.fail("<inertial>: at most one of 'fullinertia', 'quat', 'axisangle', 'xyaxes', 'zaxis', "
                                "'euler' can be specified", el)
            v = self.floats(el, el.get("fullinertia", ""), "fullinertia", 6)
            I = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
            if el.get("diaginertia") is not None:
                raise self.fail("<inertial> cannot have both diaginertia and fullinertia", el)
        elif el.get("diaginertia") is not None:
            I = np.diag(self.floats(el, el.get("diaginertia", ""), "diaginertia", 3))
        else:
            raise self.fail("<inertial> needs diaginertia or fullinertia", el)
        R = T[:3, :3]
        return geometry.MassProperties(mass, T[:3, 3].copy(), R @ I @ R.T)

    def geom_mass(self, item: _Item, body: str, moving: bool) -> geometry.MassProperties | None:
        el, ctx = item.elem, item.ctx
        comp = ctx.doc.compiler
        cls = self.cls(el, ctx)
        gtype = self.flag(el, "geom", "type", ctx, "sphere", cls)
        group = int(self.num(el, "geom", "group", ctx, 0.0, cls))
        lo, hi = comp.inertiagrouprange
        if not lo <= group <= hi:
            return None
        if gtype == "plane":
            if moving:
                raise self.fail("plane only allowed in static bodies", el)
            return None
        fitted = self.get(el, "geom", "mesh", ctx, cls)
        if gtype in _PRIMITIVES and fitted is not None:
            raise self.fail(f"geom in body {body!r} is a {gtype} fitted to mesh {fitted!r}: fitting primitives to "
                            "meshes is not supported; give the body an <inertial>", el)
        if gtype not in _VOLUME_TYPES:
            raise self.fail(f"geom type {gtype!r} in body {body!r}: inertia from it is not supported; give the body "
                            "an <inertial>", el)
        if _bool(self.flag(el, "geom", "shellinertia", ctx, "false", cls), "shellinertia", self, el):
            raise self.fail("shellinertia is not supported; give the body an <inertial>", el)
        T, half = self.geom_shape(item, cls)
        mass_text = self.get(el, "geom", "mass", ctx, cls)
        density = self.num(el, "geom", "density", ctx, 1000.0, cls)
        if gtype in ("mesh", "sdf"):
            if mass_text is not None and float(self.floats(el, mass_text, "mass", 1)[0]) == 0.0:
                return None  # a massless mesh adds nothing, whatever its shape (MuJoCo's tactile sensor meshes)
            props = self.mesh_mass(el, ctx, cls, body)
            volume = props.mass  # computed with density 1
            if mass_text is not None:
                density = float(self.floats(el, mass_text, "mass", 1)[0]) / volume
            local = geometry.MassProperties(props.mass * density, props.com, props.inertia * density)
            return local.transformed(T)
        if gtype == "hfield":
            gtype, size = "box", self.hfield_box(el, ctx, cls)
        else:
            size = self.vec(el, "geom", "size", ctx, (0.0, 0.0, 0.0), (1, 2, 3), cls)
            size = np.concatenate([size, np.zeros(3 - len(size))])
        if half is not None:
            if gtype in ("capsule", "cylinder"):
                size[1] = half
            else:  # box, ellipsoid: MuJoCo uses size[0] across the segment
                size[1:] = size[0], half
        need = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}[gtype]
        for k in range(need):
            if size[k] <= 0:
                raise self.fail(f"size {k} must be positive in geom", el)
        volume, unit = _shape(gtype, size)
        mass = density * volume
        if mass_text is not None:
            mass = float(self.floats(el, mass_text, "mass", 1)[0])
        return geometry.MassProperties(mass, T[:3, 3].copy(), T[:3, :3] @ (unit * mass) @ T[:3, :3].T)

    def hfield_box(self, el: etree._Element, ctx: _Ctx, cls: str) -> FloatArray:
        """Half sizes of the box MuJoCo uses for a height field's inertia: (rx, ry, (elevation/2 + base)/2)."""
        name = self.get(el, "geom", "hfield", ctx, cls)
        asset = next((h for a in ctx.doc.root.iterchildren("asset") for h in a.iterchildren("hfield")
                      if h.get("name") == name or (h.get("file") and Path(h.get("file", "")).stem == name)), None)
        if asset is None:
            raise self.fail(f"hfield {name!r} not found in geom", el)
        size = self.floats(asset, asset.get("size", ""), "size", 4)
        return np.array([size[0], size[1], (size[2] / 2.0 + size[3]) / 2.0])

    def mesh_mass(self, el: etree._Element, ctx: _Ctx, cls: str, body: str) -> geometry.MassProperties:
        """Volume (as mass at density 1), centroid and unit-density inertia of a mesh, in mesh coordinates."""
        mname = self.get(el, "geom", "mesh", ctx, cls)
        if mname is None:
            raise self.fail("mesh geom needs a mesh attribute", el)
        mesh = ctx.doc.meshes.get(mname)
        if mesh is None:
            raise self.fail(f"mesh {mname!r} not found in geom", el)
        mcls = mesh.get("class") or "main"
        mdefaults = ctx.doc.defaults.get(mcls, {}).get("mesh", {})
        get = lambda key: mesh.get(key) if mesh.get(key) is not None else mdefaults.get(key)  # noqa: E731
        plugin = mesh.find("plugin") if mesh.get("file") is None else None  # MuJoCo: a file wins over a plugin
        if plugin is not None:
            if get("scale") is not None and np.any(self.floats(mesh, get("scale") or "", "scale", 3) != 1):
                raise self.fail(f"attribute scale is not compatible with SDFs in mesh {mname!r}", mesh)
            try:
                V, F = sdf_plugin_mesh(*mesh_plugin_config(plugin, ctx.doc.root))
            except ValueError as exc:
                raise self.fail(f"body {body!r} takes its inertia from mesh {mname!r}, which a plugin generates: "
                                f"{exc}; give the body an <inertial>", el) from None
        elif mesh.get("vertex") is not None:
            V = self.floats(mesh, mesh.get("vertex", ""), "vertex")
            if len(V) % 3 or len(V) < 12:
                raise self.fail("mesh vertex needs at least 4 points of 3 numbers", mesh)
            V = V.reshape(-1, 3)
            F = None
            if mesh.get("face") is not None:
                F = self.floats(mesh, mesh.get("face", ""), "face").astype(np.int64).reshape(-1, 3)
        elif mesh.get("file") is not None:
            path = self.asset_path(mesh.get("file", ""), ctx.doc, mesh=True)
            if path is None or not path.is_file():
                raise self.fail(f"body {body!r} takes its inertia from mesh {mname!r}, whose file "
                                f"{mesh.get('file')!r} was not found ({path}); give the body an <inertial> or "
                                "provide the mesh", el)
            try:
                V, F = geometry.load_mesh(path)
            except (ValueError, OSError) as exc:
                raise self.fail(f"cannot read mesh {str(path)!r}: {exc}", mesh) from None
        elif mesh.get("builtin") is not None:
            params = self.floats(mesh, mesh.get("params", ""), "params")
            try:
                V, F, forced = builtin_mesh(mesh.get("builtin", ""), params)
            except ValueError as exc:
                raise self.fail(f"mesh {mname!r}: {exc}", mesh) from None
            if forced == "shell":
                raise self.fail(f"body {body!r} takes its inertia from builtin mesh {mname!r}, a plate whose "
                                "shell inertia is not supported; give the body an <inertial>", el)
        else:
            raise self.fail(f"mesh {mname!r} has neither vertex nor file", mesh)
        V = V.astype(np.float32).astype(np.float64)  # MuJoCo keeps mesh vertices in single precision
        scale = get("scale")
        if scale is not None:
            V = V * self.floats(mesh, scale, "scale", 3)
        refpos, refquat = mesh.get("refpos"), mesh.get("refquat")
        if refpos is not None:
            V = V - self.floats(mesh, refpos, "refpos", 3)
        if refquat is not None:
            V = V @ quat_matrix(self.floats(mesh, refquat, "refquat", 4))
        method = get("inertia") or "legacy"
        try:
            if F is None or method == "convex":
                props = geometry.convex_hull_properties(V, 1.0)
            elif method == "exact":
                props = geometry.mesh_properties(V, F, 1.0)
            elif method == "legacy":
                props = geometry.legacy_mesh_properties(V, F, 1.0)
            else:
                raise self.fail(f"mesh inertia {method!r} is not supported (use convex, exact or legacy)", mesh)
        except ValueError as exc:
            raise self.fail(f"mesh {mname!r}: {exc}", mesh) from None
        # MuJoCo keeps a mesh's inertia as moments in the principal frame its Jacobi solver finds; that solver
        # does not start rotating by less than ~1e-6 rad, so the tiny products of inertia of a nearly symmetric
        # mesh (float-rounded vertices) are dropped: the mesh frame stays a permutation of the file's axes
        moments, R = geometry.principal_axes(props.inertia)
        if plugin is not None:
            # MuJoCo leaves a plugin mesh's frame at the geom frame (mesh pos 0, quat identity) yet gives
            # the geom the mesh's principal moments along its axes, about its origin: reproduced as is
            return replace(props, com=np.zeros(3), inertia=np.diag(moments))
        if np.allclose(np.abs(R), np.round(np.abs(R)), rtol=0.0, atol=1e-12):
            props = replace(props, inertia=R @ np.diag(moments) @ R.T)
        return props

    # ------------------------------------------------------------------ frames saved by write_mjcf
    @staticmethod
    def custom_text(root: etree._Element, name: str) -> str | None:
        for custom in root.iterchildren("custom"):
            for t in custom.iterchildren("text"):
                if t.get("name") == name:
                    return t.get("data", "")
        return None

    def restore_frames(self, builder: ModelBuilder, text: str, root: etree._Element) -> None:
        """Frames saved by write_mjcf: a JSON list of ``[kind, site name, frame name or null]``."""
        by_name = {name: (T, body) for name, T, body in self.site_frames}
        try:
            entries = json.loads(text)
            ok = isinstance(entries, list) and all(isinstance(e, list) and len(e) == 3 for e in entries)
        except json.JSONDecodeError:
            ok = False
        if not ok:
            raise self.fail(f"<custom><text name={FRAMES_TEXT!r}> must hold a JSON list of [kind, site, name]", root)
        for kind, site, fname in entries:
            if site not in by_name:
                raise self.fail(f"<custom><text name={FRAMES_TEXT!r}> refers to unknown site {site!r}", root)
            T, body = by_name[site]
            builder.add_frame(str(kind), body, T, fname)


# --------------------------------------------------------------------------- helpers
_OPTION_DEFAULTS = {"timestep": "0.002", "gravity": "0 0 -9.81", "iterations": "100"}


def _normalize(text: str) -> tuple[float, ...] | str:
    try:
        return tuple(float(t) for t in text.split())
    except ValueError:
        return text.strip()


def _bool(text: str, what: str, reader: _Reader, el: etree._Element) -> bool:
    if text not in ("true", "false"):
        raise reader.fail(f"{what} must be 'true' or 'false', got {text!r}", el)
    return text == "true"


def _norm(v: FloatArray, reader: _Reader, el: etree._Element) -> float:
    n = float(np.linalg.norm(v))
    if n < MJMINVAL:
        raise reader.fail("orientation vector has zero length", el)
    return n


def z_to_vector(v: FloatArray) -> FloatArray:
    """MuJoCo's zaxis rule: the smallest rotation taking +z to the unit vector ``v``."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, v)
    s = float(np.linalg.norm(axis))
    if s < MJMINVAL:
        return np.eye(3) if v[2] > 0 else np.diag([1.0, -1.0, -1.0])
    return axis_angle_matrix(axis / s, math.atan2(s, float(v[2])))


def _shape(gtype: str, size: FloatArray) -> tuple[float, FloatArray]:
    """Volume [m³] and inertia per unit mass of a MuJoCo primitive."""
    if gtype == "sphere":
        return geometry.sphere_volume(size[0]), geometry.sphere_inertia(1.0, size[0])
    if gtype == "capsule":
        return geometry.capsule_volume(size[0], size[1]), geometry.capsule_inertia(1.0, size[0], size[1])
    if gtype == "cylinder":
        return geometry.cylinder_volume(size[0], size[1]), geometry.cylinder_inertia(1.0, size[0], size[1])
    if gtype == "ellipsoid":
        return geometry.ellipsoid_volume(*size[:3]), geometry.ellipsoid_inertia(1.0, *size[:3])
    return geometry.box_volume(*size[:3]), geometry.box_inertia(1.0, *size[:3])


# --------------------------------------------------------------------------- public API
def _read(source: str | bytes | Path, file: str, base_dir: Path | None) -> RobotModel:
    reader = _Reader(file, base_dir)
    doc = reader.load_doc(parse_xml(source, file), file, base_dir)
    model = reader.read(doc)
    target = doc.compiler.settotalmass
    if target > 0 and model.total_mass > 0:
        # MuJoCo scales every mass and inertia so the total matches: read again with that scale
        reader = _Reader(file, base_dir)
        reader.mass_scale = target / model.total_mass
        model = reader.read(reader.load_doc(parse_xml(source, file), file, base_dir))
    return model


def _check_options(floating_base: bool, package_map: Mapping[str, Path] | None, file: str) -> None:
    if floating_base:
        raise FormatError("floating_base is for URDF: an MJCF file declares its free joints itself (<freejoint>)",
                          file)
    if package_map:
        raise FormatError("package_map is for URDF: MJCF asset paths are relative to the file (compiler meshdir)",
                          file)


def load_mjcf(path: str | Path, *, floating_base: bool = False,
              package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read an MJCF file (see the module docstring for what is supported).

    ``floating_base`` and ``package_map`` exist so every reader takes the same options; MJCF
    has no use for them, so setting them is an error rather than silently ignored.
    """
    p = Path(path)
    _check_options(floating_base, package_map, str(p))
    return _read(p, str(p), p.resolve().parent)


def load_mjcf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     floating_base: bool = False, package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read MJCF text; includes, meshes and attached models resolve against ``base_dir``."""
    _check_options(floating_base, package_map, source_name)
    return _read(text, source_name, Path(base_dir) if base_dir is not None else None)
