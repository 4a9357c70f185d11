"""Drake model directives (``*.dmd.yaml``): compose a scene from several robot files.

A directives file is a list of steps, run in order (Drake's ``ProcessModelDirectives``):

* ``add_model: {name, file, default_joint_positions, default_free_body_pose}`` loads a model
  (SDF, URDF, HRDF, MJCF... anything :func:`hebictl.formats.load_model` reads) as an instance
  whose bodies, joints and frames are named ``<name>::<original>``;
* ``add_model_instance: {name}`` declares an empty instance (a namespace for frames);
* ``add_frame: {name, X_PF: {base_frame, translation, rotation}}`` adds a frame fixed to
  ``base_frame`` (default ``world``);
* ``add_weld: {parent, child, X_PC}`` fixes the child frame's body (which must be a body no joint
  moves, e.g. a model's base) to the parent frame so that ``X_parent_child = X_PC``;
* ``add_directives: {file, model_namespace}`` runs another directives file, its names prefixed
  with ``<model_namespace>::``;
* ``add_collision_filter_group`` is kept as metadata.

Frame names are scoped: ``world``, ``<instance>`` (the instance's model frame: an SDF model's
frame, or the root body of other formats), ``<instance>::<body or frame>``, or a name given to
``add_frame``. ``file:`` accepts ``package://name/...`` (``package_map``), ``file://``, absolute
and paths relative to the directives file. Rotations are ``!Rpy {deg: [r, p, y]}`` (or
``rad:``), ``!AngleAxis {angle_deg: a, axis: [x, y, z]}`` (or ``angle_rad:``) and ``!Identity
{}``; roll-pitch-yaw are fixed-axis x-y-z as in Drake's ``RollPitchYaw``.

Bodies nothing welds are free bodies in Drake: here they get a free joint named after the body
whose neutral configuration is their pose (``default_free_body_pose`` or the pose in the file),
or are welded there with ``floating_base=False``. ``default_joint_positions`` are kept in
``model.metadata["default_joint_positions"]`` (scoped joint names).

Warnings: the readers of the files ``add_model`` loads warn as usual (their own format's class,
naming the included file and line); the directives themselves have no lenient case (Drake's
parser accepts none with a warning either: a bad step is an error).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from hebictl import limits
from hebictl.errors import FormatError, HebictlError
from hebictl.formats.registry import READERS, detect_format
from hebictl.formats.rotations import (
    axis_angle_matrix,
    inverse_transform,
    matrix_quat,
    quat_matrix,
    rpy_matrix,
    transform,
)
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind
from hebictl.yaml_load import StrictLoader, load_yaml

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

SCOPE = "::"
_DERIVED_FRAMES = ("com", "output", "end_effector", "input", "link")
_STEPS = ("add_model", "add_model_instance", "add_frame", "add_weld", "add_directives",
          "add_collision_filter_group")


# ====================================================================== YAML with line numbers
class _Map(dict):
    """A YAML mapping that remembers its line (1-based) for error messages."""

    line: int | None = None


@dataclass(frozen=True)
class _Rotation:
    """A tagged rotation (``!Rpy``, ``!AngleAxis``, ``!Identity``) before it is checked."""

    tag: str
    value: Any
    line: int | None


class _Loader(StrictLoader):
    """hebictl's bounded YAML loader (typed-scalar errors with lines, no duplicate keys) plus Drake's tags."""


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _Map:
    out = _Map(loader.construct_mapping(node, deep=True))
    out.line = node.start_mark.line + 1
    return out


def _rotation(tag: str) -> Callable[[_Loader, yaml.Node], _Rotation]:
    def construct(loader: _Loader, node: yaml.Node) -> _Rotation:
        value = loader.construct_mapping(node, deep=True) if isinstance(node, yaml.MappingNode) else {}
        return _Rotation(tag, value, node.start_mark.line + 1)
    return construct


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
for _tag in ("Rpy", "AngleAxis", "Identity"):
    _Loader.add_constructor(f"!{_tag}", _rotation(_tag))


# ====================================================================== scene assembly
@dataclass
class _Body:
    name: str
    parent: str | None
    placement: np.ndarray
    joint: Joint
    inertia: Inertia
    metadata: dict[str, Any]
    free_pose: np.ndarray | None = None  # world pose of a root body that nothing welded yet


@dataclass
class _Instance:
    name: str
    model: RobotModel | None
    model_frame: str | None  # body the instance's own frame is on
    model_frame_offset: np.ndarray = field(default_factory=lambda: np.eye(4))


class _Scene:
    """Bodies and frames of every instance so far, with welds applied."""

    def __init__(self, package_map: Mapping[str, str | Path] | None) -> None:
        self.package_map = {k: Path(v) for k, v in (package_map or {}).items()}
        self.bodies: dict[str, _Body] = {}
        self.frames: dict[str, tuple[str | None, np.ndarray]] = {}  # name -> (body or None=world, offset)
        self.extra_frames: list[tuple[str, str | None, np.ndarray, str | None]] = []  # kind, body, offset, name
        self.instances: dict[str, _Instance] = {}
        self.default_q: dict[str, list[float]] = {}
        self.filter_groups: list[Any] = []
        self.sources: list[str] = []
        self.stack: list[Path] = []

    # ------------------------------------------------------------------ names
    def locate(self, name: str, file: str, line: int | None) -> tuple[str | None, np.ndarray]:
        """(body name or None for the world, offset in that body) of a scoped frame name."""
        if name == "world":
            return None, np.eye(4)
        if name in self.bodies:
            return name, np.eye(4)
        if name in self.frames:
            return self.frames[name]
        inst = self.instances.get(name)
        if inst is not None:
            if inst.model_frame is None:
                raise FormatError(f"model instance {name!r} has no body to refer to", file, line)
            return inst.model_frame, inst.model_frame_offset
        known = sorted([*self.frames, *self.instances])[:12]
        raise FormatError(f"no frame named {name!r} (known frames and instances: {known} ...; bodies are "
                          "'<instance>::<link>')", file, line)

    def body_pose(self, body: str | None) -> np.ndarray:
        """World pose of a body at the neutral configuration (free bodies at their pose)."""
        X = np.eye(4)
        while body is not None:
            b = self.bodies[body]
            X = (b.free_pose if b.free_pose is not None else b.placement) @ X
            body = b.parent
        return X

    # ------------------------------------------------------------------ steps
    def add_model(self, step: _Map, file: Path, ns: str) -> None:
        name = _required(step, "name", str, file)
        if len(self.sources) >= limits.current().max_include_count:
            raise limits.exceeded("models added", len(self.sources) + 1, "max_include_count", str(file), step.line)
        model_file = self.resolve(_required(step, "file", str, file), file, step.line)
        inst = ns + name
        if inst in self.instances:
            raise FormatError(f"model instance {inst!r} already exists", str(file), step.line)
        try:  # its readers' warnings reach the caller: they already name their file and line
            model = _load_model(model_file)
        except HebictlError as exc:
            raise FormatError(f"add_model {name!r}: {exc}", str(file), step.line) from None
        self.sources.append(str(model_file))
        prefix = inst + SCOPE
        names = [prefix + b.name for b in model.bodies]
        for i, b in enumerate(model.bodies):
            parent = names[b.parent] if b.parent >= 0 else None
            joint = b.joint
            if joint.kind is not JointKind.FIXED or joint.name:
                jmeta = dict(joint.metadata)
                if "sdf_joint" in jmeta:
                    jmeta["sdf_joint"] = prefix + jmeta["sdf_joint"]
                joint = dataclasses.replace(joint, name=prefix + joint.name if joint.name else "", metadata=jmeta)
            placement = b.placement if parent is not None else model.base @ b.placement
            free_pose = None
            if parent is None:
                free_pose = placement
                if b.joint.kind is JointKind.FREE:
                    d = np.eye(4)
                    d[:3, 3] = b.metadata.get("default_position", (0.0, 0.0, 0.0))
                    d[:3, :3] = quat_matrix(b.metadata.get("default_quaternion", (1.0, 0.0, 0.0, 0.0)))
                    free_pose = placement @ d
                elif b.joint.kind is not JointKind.FIXED or not _is_free_root(b.metadata, model.format):
                    free_pose = None  # a real joint to the world: stays where it is
            self.bodies[names[i]] = _Body(names[i], parent, placement, joint, b.inertia,
                                          {**b.metadata, "instance": inst}, free_pose)
        model_frame = names[0] if names else None
        offset = np.eye(4)
        for f in model.frames:
            body = names[f.body] if f.body >= 0 else None
            self.extra_frames.append((f.kind, body, f.offset, prefix + f.name if f.name else None))
            if f.name and f.kind not in _DERIVED_FRAMES:  # "com"/"output"... frames carry body names
                self.frames.setdefault(prefix + f.name, (body, f.offset))
            if f.kind == "model" and f.name == model.name and body is not None:
                model_frame, offset = body, f.offset
        self.instances[inst] = _Instance(inst, model, model_frame, offset)
        for jname, values in (step.get("default_joint_positions") or {}).items():
            self.default_q[prefix + jname] = [float(v) for v in (values if isinstance(values, list) else [values])]
        for bname, pose in (step.get("default_free_body_pose") or {}).items():
            target = prefix + bname if bname else model_frame
            if target not in self.bodies or self.bodies[target].free_pose is None:
                raise FormatError(f"default_free_body_pose: {bname!r} is not a free body of {inst!r}", str(file),
                                  getattr(pose, "line", step.line))
            base = pose.get("base_frame", "world") if isinstance(pose, Mapping) else "world"
            body, off = self.locate(base if base == "world" or SCOPE in base or base in self.frames
                                    else prefix + base, str(file), step.line)
            self.bodies[target].free_pose = self.body_pose(body) @ off @ _transform(pose, file)

    def add_frame(self, step: _Map, file: Path, ns: str) -> None:
        name = ns + _required(step, "name", str, file)
        X_PF = step.get("X_PF")
        if not isinstance(X_PF, Mapping):
            raise FormatError(f"add_frame {name!r} needs an X_PF mapping", str(file), step.line)
        base = X_PF.get("base_frame", "world")
        body, offset = self.locate(self.scoped(base, ns), str(file), step.line)
        if name in self.frames:
            raise FormatError(f"frame {name!r} already exists", str(file), step.line)
        self.frames[name] = (body, offset @ _transform(X_PF, file))
        self.extra_frames.append(("frame", body, self.frames[name][1], name))

    def add_weld(self, step: _Map, file: Path, ns: str) -> None:
        parent = self.scoped(_required(step, "parent", str, file), ns)
        child = self.scoped(_required(step, "child", str, file), ns)
        X_PC = _transform(step["X_PC"], file) if step.get("X_PC") is not None else np.eye(4)
        pbody, X_BP = self.locate(parent, str(file), step.line)
        cbody, X_DC = self.locate(child, str(file), step.line)
        if cbody is None:
            raise FormatError("add_weld: the child cannot be the world", str(file), step.line)
        b = self.bodies[cbody]
        if b.parent is not None or b.free_pose is None:
            raise FormatError(f"add_weld: {child!r} is on body {cbody!r}, which already has a joint (only a body "
                              "no joint moves can be welded)", str(file), step.line)
        up = pbody
        while up is not None:
            if up == cbody:
                raise FormatError(f"add_weld {parent!r} -> {child!r} would close a loop", str(file), step.line)
            up = self.bodies[up].parent
        b.parent = pbody
        b.placement = X_BP @ X_PC @ inverse_transform(X_DC)
        b.free_pose = None
        b.joint = Joint(f"{parent}__weld__{child}", JointKind.FIXED, metadata={"directive": "add_weld"})

    def add_directives(self, step: _Map, file: Path, ns: str) -> None:
        sub = self.resolve(_required(step, "file", str, file), file, step.line)
        namespace = step.get("model_namespace")
        self.run(sub, ns + f"{namespace}{SCOPE}" if namespace else ns)

    def scoped(self, name: str, ns: str) -> str:
        """A name used inside a namespaced directives file, as seen from the top."""
        if not ns or name == "world":
            return name
        return ns + name

    def resolve(self, uri: str, file: Path, line: int | None) -> Path:
        """A ``file:`` URI; a confined load keeps it inside the directives file's folder, a package_map folder
        or an allowed root."""
        limits.check_path_text(uri, file=str(file), line=line, what="file")
        if uri.startswith("package://"):
            pkg, _, rest = uri[len("package://"):].partition("/")
            if pkg not in self.package_map:
                raise FormatError(f"package {pkg!r} of {uri!r} is not in the package map (pass package_map="
                                  f"{{{pkg!r}: '/path/to/{pkg}'}})", str(file), line)
            path = self.package_map[pkg] / rest
        elif uri.startswith("file://"):
            path = Path(uri[len("file://"):])
        else:
            path = Path(uri) if Path(uri).is_absolute() else file.resolve().parent / uri
        path = limits.resolve_reference(path, file.resolve().parent, list(self.package_map.values()), file=str(file),
                                        line=line, what=f"file {uri!r}")
        if not limits.is_regular_file(path):
            why = "is not a regular file" if limits.exists(path) else "not found"
            raise FormatError(f"file {uri!r} {why} ({path})", str(file), line)
        return path

    def run(self, path: Path, ns: str = "") -> None:
        resolved = path.resolve()
        if resolved in self.stack:
            raise FormatError("add_directives includes itself", str(path))
        if len(self.stack) >= limits.current().max_include_depth:
            raise limits.exceeded("add_directives depth", len(self.stack) + 1, "max_include_depth", str(path))
        self.stack.append(resolved)
        try:
            # size, depth and alias limits; bad UTF-8 and bad scalars are FormatErrors with the line
            self.run_text(None, path, ns)
        finally:
            self.stack.pop()

    def run_text(self, text: str | None, path: Path, ns: str) -> None:
        doc = load_yaml(path, error=FormatError, loader=_Loader, what="model directives file", text=text)
        if not isinstance(doc, Mapping) or not isinstance(doc.get("directives"), list):
            raise FormatError("a model directives file is a mapping with a 'directives:' list", str(path),
                              getattr(doc, "line", None))
        for step in doc["directives"]:
            if not isinstance(step, Mapping) or len(step) != 1:
                raise FormatError(f"each directive is a mapping with one key of {', '.join(_STEPS)}", str(path),
                                  getattr(step, "line", None))
            (kind, body), = step.items()
            if kind not in _STEPS:
                raise FormatError(f"unknown directive {kind!r}; expected one of {', '.join(_STEPS)}", str(path),
                                  getattr(step, "line", None))
            if not isinstance(body, Mapping):
                raise FormatError(f"{kind} needs a mapping of arguments", str(path), getattr(step, "line", None))
            if not isinstance(body, _Map):
                body = _Map(body)
                body.line = getattr(step, "line", None)
            if kind == "add_model":
                self.add_model(body, path, ns)
            elif kind == "add_model_instance":
                inst = ns + _required(body, "name", str, path)
                self.instances.setdefault(inst, _Instance(inst, None, None))
            elif kind == "add_frame":
                self.add_frame(body, path, ns)
            elif kind == "add_weld":
                self.add_weld(body, path, ns)
            elif kind == "add_directives":
                self.add_directives(body, path, ns)
            else:
                self.filter_groups.append(dict(body))

    # ------------------------------------------------------------------ output
    def build(self, name: str, source: str | None, floating_base: bool) -> RobotModel:
        builder = ModelBuilder(name, source=source, format="directives")
        index: dict[str, int] = {}
        children: dict[str | None, list[str]] = {}
        for b in self.bodies.values():
            children.setdefault(b.parent, []).append(b.name)
        stack = list(reversed(children.get(None, [])))
        while stack:
            n = stack.pop()
            b = self.bodies[n]
            parent = index[b.parent] if b.parent is not None else -1
            joint, placement, meta = b.joint, b.placement, b.metadata
            if b.parent is None and b.free_pose is not None:
                if floating_base:
                    joint = Joint(n, JointKind.FREE, metadata={"free_body": True})
                    placement = np.eye(4)
                    meta = {**meta, "default_position": tuple(b.free_pose[:3, 3]),
                            "default_quaternion": tuple(matrix_quat(b.free_pose[:3, :3]))}
                else:
                    placement = b.free_pose
            index[n] = builder.add_body(n, parent, placement, joint, b.inertia, meta)
            stack.extend(reversed(children.get(n, [])))
        for kind, body, offset, fname in self.extra_frames:
            builder.add_frame(kind, index[body] if body is not None else -1, offset, fname)
        meta = {"directives": source, "models": {k: str(v.model.source) if v.model else None
                                                 for k, v in self.instances.items()},
                "default_joint_positions": dict(self.default_q), "sources": list(self.sources)}
        if self.filter_groups:
            meta["collision_filter_groups"] = self.filter_groups
        return builder.build(metadata=meta)


def _is_free_root(meta: Mapping[str, Any], fmt: str) -> bool:
    """Whether a root body sits on the base only because its file left it free (or welded it by
    convention: URDF/HRDF roots), not through a joint the file declares to the world."""
    if fmt == "sdf":
        return bool(meta.get("welded_to_world"))
    return True


def _required(step: Mapping[str, Any], key: str, kind: type, file: Path) -> Any:
    value = step.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value):
        raise FormatError(f"directive needs '{key}' ({kind.__name__})", str(file), getattr(step, "line", None))
    return value


def _vector(value: Any, what: str, file: Path, line: int | None) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise FormatError(f"{what} must be 3 numbers, got {value!r}", str(file), line) from None
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise FormatError(f"{what} must be 3 finite numbers, got {value!r}", str(file), line)
    return arr


def _transform(spec: Any, file: Path) -> np.ndarray:
    """A Drake ``schema::Transform`` mapping: translation [m] and rotation."""
    if not isinstance(spec, Mapping):
        raise FormatError(f"a transform is a mapping with translation/rotation, got {spec!r}", str(file))
    line = getattr(spec, "line", None)
    unknown = set(spec) - {"base_frame", "translation", "rotation"}
    if unknown:
        raise FormatError(f"unknown transform keys {sorted(unknown)} (expected base_frame, translation, rotation)",
                          str(file), line)
    p = _vector(spec.get("translation", [0, 0, 0]), "translation", file, line)
    rot = spec.get("rotation")
    R = np.eye(3)
    if rot is None:
        pass
    elif isinstance(rot, (_Rotation, Mapping)):
        tag, value, rline = (rot.tag, rot.value, rot.line) if isinstance(rot, _Rotation) else ("Rpy", rot, line)
        if tag == "Identity":
            R = np.eye(3)
        elif tag == "Rpy":
            if "deg" in value:
                R = rpy_matrix(np.radians(_vector(value["deg"], "!Rpy deg", file, rline)))
            elif "rad" in value:
                R = rpy_matrix(_vector(value["rad"], "!Rpy rad", file, rline))
            else:
                raise FormatError("!Rpy needs 'deg: [r, p, y]' or 'rad: [r, p, y]'", str(file), rline)
        else:  # AngleAxis
            axis = _vector(value.get("axis"), "!AngleAxis axis", file, rline)
            if "angle_deg" in value:
                angle = math.radians(float(value["angle_deg"]))
            elif "angle_rad" in value:
                angle = float(value["angle_rad"])
            else:
                raise FormatError("!AngleAxis needs 'angle_deg' or 'angle_rad'", str(file), rline)
            if np.linalg.norm(axis) < 1e-12:
                raise FormatError("!AngleAxis axis is zero", str(file), rline)
            R = axis_angle_matrix(axis, angle)
    else:
        raise FormatError(f"rotation must be !Rpy, !AngleAxis or !Identity, got {rot!r}", str(file), line)
    return transform(R, p)


# ====================================================================== public API
def _load_model(path: Path) -> RobotModel:
    """An ``add_model`` file, read by its format's reader.

    Through the format tables rather than :func:`hebictl.formats.load_model`, whose registry
    imports this module: a directives file named by ``add_model`` is read here directly.
    """
    if not limits.is_regular_file(path):
        raise FormatError("file not found", str(path))
    fmt = detect_format(path)
    if fmt == "directives":
        return load_directives(path)
    module, loader, _ = READERS[fmt]
    load: Callable[[Path], RobotModel] = getattr(importlib.import_module(module), loader)
    return load(path)


def load_directives(path: str | Path, *, package_map: Mapping[str, str | Path] | None = None,
                    floating_base: bool = True) -> RobotModel:
    """Compose the scene of a Drake model directives file into one RobotModel.

    ``package_map`` maps ``package://`` names to folders; ``floating_base=False`` welds bodies
    nothing welded at their poses instead of giving them free joints.
    """
    p = Path(path)
    if not limits.is_regular_file(p):
        raise FormatError("file not found", str(p))
    with limits.model_folder(p):
        scene = _Scene(package_map)
        scene.run(p)
        name = p.name.removesuffix(".dmd.yaml")
        return scene.build(name, str(p), floating_base)


def load_directives_string(text: str, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                           package_map: Mapping[str, str | Path] | None = None,
                           floating_base: bool = True) -> RobotModel:
    """Model directives from YAML text; relative ``file:`` paths resolve against ``base_dir``."""
    scene = _Scene(package_map)
    fake = Path(base_dir or ".") / (source_name if source_name != "<string>" else "directives.dmd.yaml")
    with limits.model_folder(fake):
        scene.run_text(text, fake, "")
    return scene.build("directives", None if source_name == "<string>" else source_name, floating_base)
