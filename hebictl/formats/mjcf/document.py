"""MJCF documents: compiler options, default classes, includes and attached models, typed attributes.

The base of the MJCF reader (:class:`DocumentReader`): one read's state and the accessors that
resolve an attribute through the element, its class and ``main`` defaults, report errors with
the element's own file and line, and turn MuJoCo's orientation attributes into rotations.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats._xml import elements, local_name, parse_xml
from hebictl.formats.rotations import (
    MJMINVAL,
    axis_angle_matrix,
    quat_matrix,
    rot_x,
    rot_y,
    rot_z,
    transform,
    z_to_vector,
)
from hebictl.model.builder import ModelBuilder

if TYPE_CHECKING:
    pass

SRC = "{urn:hebictl:src}file"  # marks elements spliced in from an included file
FLEX_FREE = "{urn:hebictl:src}flexfree"  # marks the vertex bodies of a flexcomp that pins nothing to its parent
FRAMES_TEXT = "hebictl:frames"  # <custom><text name=...> written by write_mjcf: the model's frames
JOINTS_TEXT = "hebictl:joints"  # ... and joint data MJCF has no attribute for (max_velocity, one-sided limits)

_SECTIONS = {"compiler", "option", "size", "statistic", "visual", "asset", "worldbody", "default", "contact",
             "equality", "tendon", "actuator", "sensor", "keyframe", "custom", "extension", "deformable"}
BODY_CHILDREN = {"inertial", "joint", "freejoint", "geom", "site", "camera", "light", "body", "frame", "flexcomp",
                  "replicate", "attach", "plugin"}
UNSUPPORTED = {"composite": "it generates bodies procedurally (cables, particles, grids)"}
ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
_POSE = ("pos", *ORIENT)
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
ACTUATORS = {"general", "motor", "position", "velocity", "intvelocity", "orientation", "pid", "damper", "cylinder",
              "muscle", "adhesion", "dcmotor"}
PRIMITIVES = {"sphere", "capsule", "cylinder", "ellipsoid", "box"}
_AXIS_ROT = {"x": rot_x, "y": rot_y, "z": rot_z}
VOLUME_TYPES = {"hfield", "sphere", "capsule", "cylinder", "ellipsoid", "box", "mesh", "sdf"}


# --------------------------------------------------------------------------- documents
@dataclass
class Compiler:
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
class Doc:
    """One MJCF document after includes: the main file, or a model brought in by ``<attach>``."""

    file: str
    base_dir: Path | None
    root: etree._Element
    compiler: Compiler = field(default_factory=Compiler)
    defaults: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    meshes: dict[str, etree._Element] = field(default_factory=dict)
    models: dict[str, etree._Element] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ctx:
    """Where an element is read: its document, inherited childclass and name affixes."""

    doc: Doc
    childclass: str | None = None
    prefix: str = ""
    suffix: str = ""

    def name(self, raw: str | None) -> str | None:
        return None if not raw else f"{self.prefix}{raw}{self.suffix}"


@dataclass
class Item:
    """One element of a body's content with its pose in the body frame (frames/replicates flattened)."""

    tag: str
    elem: etree._Element
    T: FloatArray
    ctx: Ctx
    shape: tuple[FloatArray, float | None] | None = None  # geom pose and fromto half length, computed once


class DocumentReader:
    """One read of an MJCF file: its documents, names given so far, and the model being built."""

    def __init__(self, file: str, base_dir: Path | None) -> None:
        self.file = file
        self.base_dir = base_dir
        self.counts = {"body": 1, "joint": 0, "site": 0, "geom": 0}
        self.names: dict[str, dict[str, etree._Element]] = {"body": {}, "joint": {}, "site": {}, "geom": {}}
        self.attached: dict[tuple[str, str], Doc] = {}
        self.actuators: dict[str, list[dict[str, Any]]] = {}
        self.synthetic: set[str] = set()
        self.site_frames: list[tuple[str, FloatArray, int]] = []
        self.world_geoms: list[dict[str, Any]] = []
        self.missing_meshes: list[str] = []
        self.mass_scale = 1.0
        self.joint_extras: dict[str, dict[str, float]] = {}

    def where(self, elem: etree._Element | None) -> tuple[str, int | None]:
        if elem is None:
            return self.file, None
        for e in (elem, *elem.iterancestors()):
            src = e.get(SRC)
            if src is not None:
                return src, elem.sourceline
        return self.file, elem.sourceline

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        file, line = self.where(elem)
        return FormatError(message, file, line)

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

    def cls(self, elem: etree._Element, ctx: Ctx) -> str:
        name = elem.get("class") or ctx.childclass or "main"
        if name not in ctx.doc.defaults:
            raise self.fail(f"unknown default class name {name!r}", elem)
        return name

    def get(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, cls: str | None = None) -> str | None:
        """An attribute from the element, else from its default class."""
        v = elem.get(attr)
        if v is not None or ctx is None:
            return v
        return ctx.doc.defaults[cls or self.cls(elem, ctx)].get(tag, {}).get(attr)

    def num(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: float,
            cls: str | None = None) -> float:
        text = self.get(elem, tag, attr, ctx, cls)
        return default if text is None else float(self.floats(elem, text, attr, 1)[0])

    # The overloads tell the checker what the code does: with a default the result is never None.
    @overload
    def vec(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: tuple[float, ...],
            count: int | tuple[int, ...] | None = 3, cls: str | None = None) -> FloatArray: ...

    @overload
    def vec(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: None,
            count: int | tuple[int, ...] | None = 3, cls: str | None = None) -> FloatArray | None: ...

    def vec(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: tuple[float, ...] | None,
            count: int | tuple[int, ...] | None = 3, cls: str | None = None) -> FloatArray | None:
        text = self.get(elem, tag, attr, ctx, cls)
        if text is None:
            return None if default is None else np.array(default, dtype=np.float64)
        return self.floats(elem, text, attr, count)

    def flag(self, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: str,
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

    def rotation(self, elem: etree._Element, tag: str, ctx: Ctx, cls: str | None = None) -> FloatArray:
        """Orientation from the element's own specifier, else from its defaults; identity if none."""
        own = [a for a in ORIENT if elem.get(a) is not None]
        if len(own) > 1:
            raise self.fail(f"multiple orientation specifiers are not allowed: {', '.join(own)}", elem)
        if own:
            return self.orient(elem, own[0], elem.get(own[0]), ctx.doc.compiler)
        if tag in ("body", "frame", "inertial") or cls is None:
            return np.eye(3)
        d = ctx.doc.defaults[cls].get(tag, {})
        dflt = [a for a in ORIENT if a in d]
        return self.orient(elem, dflt[-1], d[dflt[-1]], ctx.doc.compiler) if dflt else np.eye(3)

    def orient(self, elem: etree._Element, kind: str, text: str, comp: Compiler) -> FloatArray:
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

    def pose(self, elem: etree._Element, tag: str, ctx: Ctx, cls: str | None = None) -> FloatArray:
        pos = self.vec(elem, tag, "pos", ctx if cls else None, (0.0, 0.0, 0.0), 3, cls)
        return transform(self.rotation(elem, tag, ctx, cls), pos)

    def load_doc(self, root: etree._Element, file: str, base_dir: Path | None) -> Doc:
        if local_name(root) != "mujoco":
            raise FormatError(f"MJCF root element must be <mujoco>, got <{local_name(root)}>", file, root.sourceline)
        if file != self.file:  # an attached model: its elements report their own file
            for child in elements(root):
                child.set(SRC, file)
        self.expand_includes(root, base_dir, base_dir, [str(Path(file).resolve())], file)
        doc = Doc(file, base_dir, root)
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
        includes = list(root.iter("include"))
        # counted before any is read: splicing thousands of includes is quadratic
        self.include_count = getattr(self, "include_count", 0) + len(includes)
        if self.include_count > limits.current().max_include_count:
            raise limits.exceeded("number of includes", self.include_count, "max_include_count", file,
                                  includes[-1].sourceline)
        for inc in includes:
            src = inc.get("file")
            if src is None:
                raise FormatError("<include> needs a file attribute", file, inc.sourceline)
            # tried beside the including file, then beside the main file ('..' followed, as MuJoCo does;
            # a confined load keeps both inside the allowed folders)
            candidates = [limits.resolve_reference(src, p, file=file, line=inc.sourceline, what="<include> file")
                          for p in [q for q in (here, main) if q is not None] or [Path.cwd()]]
            path = next((c for c in candidates if limits.is_regular_file(c)), None)
            if path is None:
                why = "is not a regular file" if any(limits.exists(c) for c in candidates) else "not found"
                raise FormatError(f"included file {src!r} {why}", file, inc.sourceline)
            key = str(path)
            if key in stack:
                raise FormatError(f"include cycle: {src!r} is already being included", file, inc.sourceline)
            if len(stack) > limits.current().max_include_depth:
                raise limits.exceeded("include depth", len(stack), "max_include_depth", file, inc.sourceline)
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
                if child.get(SRC) is None:
                    child.set(SRC, str(path))
                parent.insert(pos + k, child)
            parent.remove(inc)

    def compiler(self, el: etree._Element, doc: Doc) -> None:
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
                setattr(c, key, mjcf_bool(text, key, self, el))
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

    def defaults(self, el: etree._Element, doc: Doc, name: str, parent: str | None) -> None:
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
            key = "actuator" if tag in ACTUATORS else tag
            attrs = base.setdefault(key, {})
            if tag in ("geom", "site") and any(a in child.attrib for a in ORIENT):
                for a in ORIENT:
                    attrs.pop(a, None)
            attrs.update({k: v for k, v in child.attrib.items() if not k.startswith("{")})
        for child in nested:
            self.defaults(child, doc, child.get("class", ""), cls_name)

    def child_doc(self, el: etree._Element, model_name: str, parent: Doc) -> Doc:
        asset = parent.models.get(model_name)
        key_path = None
        if asset is None:
            # a <model file> without a name is known by the model name inside the file
            for m in parent.models.values():
                path = self.asset_path(m.get("file", ""), parent, el=m)
                if path is not None and limits.is_regular_file(path):
                    try:
                        inner = parse_xml(path, str(path)).get("model")
                    except FormatError:
                        continue
                    if inner == model_name:
                        asset, key_path = m, path
                        break
        if asset is None:
            raise self.fail(f"<attach>: unknown model {model_name!r} (declare it with <asset><model>)", el)
        path = key_path or self.asset_path(asset.get("file", ""), parent, el=asset)
        if path is None or not limits.is_regular_file(path):
            raise self.fail(f"<attach>: model file {asset.get('file')!r} not found", asset)
        key = (str(path), model_name)
        if key not in self.attached:
            doc = self.load_doc(parse_xml(path, str(path)), str(path), path.parent)
            self.check_conflict(parent, doc, el)
            self.attached[key] = doc
        return self.attached[key]

    def check_conflict(self, parent: Doc, child: Doc, el: etree._Element) -> None:
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

    def asset_path(self, name: str, doc: Doc, mesh: bool = False, el: etree._Element | None = None) -> Path | None:
        """The file an asset names (``meshdir`` applied), resolved and kept inside the allowed folders."""
        if not name:
            return None
        ref = name
        if mesh and doc.compiler.meshdir is not None and not Path(name).is_absolute():
            ref = str(doc.compiler.meshdir / name)  # an absolute or ../ meshdir is checked like the file
        file, line = self.where(el) if el is not None else (doc.file, None)
        return limits.resolve_reference(ref, doc.base_dir or Path.cwd(), file=file, line=line, what="asset file")

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


# --------------------------------------------------------------------------- public API


_OPTION_DEFAULTS = {"timestep": "0.002", "gravity": "0 0 -9.81", "iterations": "100"}


def _normalize(text: str) -> tuple[float, ...] | str:
    try:
        return tuple(float(t) for t in text.split())
    except ValueError:
        return text.strip()


def mjcf_bool(text: str, what: str, reader: DocumentReader, el: etree._Element) -> bool:
    if text not in ("true", "false"):
        raise reader.fail(f"{what} must be 'true' or 'false', got {text!r}", el)
    return text == "true"


def _norm(v: FloatArray, reader: DocumentReader, el: etree._Element) -> float:
    n = float(np.linalg.norm(v))
    if n < MJMINVAL:
        raise reader.fail("orientation vector has zero length", el)
    return n
