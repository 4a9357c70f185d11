"""SDFormat poses and the frame graph of a model or world scope.

SDFormat 1.7 made frames first-class: every link, joint, ``<frame>`` and nested model of a
model is a named frame, ``<pose relative_to="...">`` places an element relative to any of them
(the *pose graph*) and ``<frame attached_to="...">`` rigidly attaches a frame to another (the
*attached-to graph*, which ends at a link). This module resolves both graphs for one scope the
way the specification (sdformat.org "Pose frame semantics") and libsdformat do, and reports the
errors the specification defines: unknown names, reserved names, cycles.

Pre-1.7 files have the same graph with fewer edges (no ``relative_to``/``attached_to``), so
one resolver serves every version; version-dependent defaults live in :mod:`hebictl.formats.sdf`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats._xml import line_of
from hebictl.formats.rotations import inverse_transform, quat_matrix, rpy_matrix, transform

#: Separator of scoped names (``outer::inner::link``).
SCOPE = "::"


def pose_from_element(elem: etree._Element | None, file: str) -> FloatArray:
    """A ``<pose>`` element's transform (identity when absent).

    Understands SDFormat 1.9's ``rotation_format="euler_rpy|quat_xyzw"`` and ``degrees``;
    quaternions are normalised as libsdformat does.
    """
    if elem is None:
        return np.eye(4)
    text = (elem.text or "").split()
    fmt = elem.get("rotation_format", "euler_rpy").strip()
    degrees = parse_bool(elem.get("degrees", "false"), elem, file, "degrees attribute")
    try:
        values = [float(t) for t in text]
    except ValueError:
        raise FormatError(f"<pose> value {' '.join(text)!r} is not a list of numbers", file, line_of(elem)) from None
    if not values:
        return np.eye(4)
    if not all(math.isfinite(v) for v in values):
        raise FormatError(f"<pose> value {' '.join(text)!r} has non-finite numbers", file, line_of(elem))
    if fmt == "euler_rpy":
        if len(values) != 6:
            raise FormatError(f"<pose> needs 6 numbers 'x y z roll pitch yaw', got {len(values)}", file,
                              line_of(elem))
        rpy = np.radians(values[3:]) if degrees else np.array(values[3:])
        return transform(rpy_matrix(rpy), values[:3])
    if fmt == "quat_xyzw":
        if degrees:
            raise FormatError("<pose degrees=\"true\"> only applies to rotation_format=\"euler_rpy\"", file,
                              line_of(elem))
        if len(values) != 7:
            raise FormatError(f"<pose rotation_format=\"quat_xyzw\"> needs 7 numbers 'x y z qx qy qz qw', "
                              f"got {len(values)}", file, line_of(elem))
        qx, qy, qz, qw = values[3:]
        if math.hypot(qx, qy, qz, qw) < 1e-12:
            raise FormatError("<pose> quaternion is zero", file, line_of(elem))
        return transform(quat_matrix((qw, qx, qy, qz)), values[:3])
    raise FormatError(f"<pose> rotation_format={fmt!r} is unknown; expected 'euler_rpy' or 'quat_xyzw'", file,
                      line_of(elem))


def parse_bool(text: str | None, elem: etree._Element, file: str, what: str) -> bool:
    """SDFormat booleans: true/false/1/0 in any case."""
    value = (text or "").strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise FormatError(f"{what} {text!r} is not a boolean (true/false/1/0)", file, line_of(elem))


@dataclass(eq=False)
class Entity:
    """One named frame of a scope: a link, joint, ``<frame>`` or nested model.

    ``relative_to`` is the frame ``pose`` is expressed in ('' = the element's default);
    ``attached_to`` is set for frames ('' = the scope's model frame or the world);
    ``parent``/``child`` for joints; ``scope`` for nested models.
    """

    kind: str
    name: str
    elem: etree._Element
    file: str
    pose: FloatArray
    relative_to: str = ""
    pose_line: int | None = None
    attached_to: str = ""
    parent: str = ""
    child: str = ""
    scope: Scope | None = None
    data: dict[str, Any] = field(default_factory=dict)


class Scope:
    """A model (or the world) and the frames declared directly in it.

    Poses resolve to this scope's own frame: the model frame ``__model__`` of a model, the world
    frame of a world. Names may reach into nested models with ``::`` (SDFormat 1.8+).
    """

    # Set later, not in __init__, by the step that knows them (so a scope without one has no such
    # attribute at all; ``getattr(scope, "drake", None)`` tells a model from a world). Declared here
    # so the reader's parts, in several files, agree on the names and types.
    base_dir: Path | None  # a model's folder (read_model)
    file_root: bool  # a model at the top of its file, or included, or in a world (read_model)
    own_pose: tuple[FloatArray, str, int | None]  # a model's pose, relative_to and line (read_model)
    drake: dict[str, list[Any]]  # a model's Drake elements by tag (read_model)
    entities_data: dict[str, FloatArray]  # a world's "gravity" (read_world)
    prefix: str  # the scoped name prefix of the model's entities (the flattening step)
    X_W: FloatArray  # the model frame in the world (the flattening step)

    def __init__(self, kind: str, name: str, elem: etree._Element, file: str, version: tuple[int, int],
                 parent: Scope | None = None) -> None:
        self.kind = kind
        self.name = name
        self.elem = elem
        self.file = file
        self.version = version
        self.parent = parent
        self.entities: dict[str, Entity] = {}
        self.static = False
        self.canonical_attr = ""
        self.placement_frame = ""
        self._pose: dict[str, FloatArray] = {}
        self._link: dict[str, tuple[Scope, str] | None] = {}
        self._visiting: list[str] = []

    # ------------------------------------------------------------------ structure
    @property
    def root_frame(self) -> str:
        return "world" if self.kind == "world" else "__model__"

    @property
    def what(self) -> str:
        return f"{self.kind} {self.name!r}"

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]

    def fail(self, message: str, elem: etree._Element | None = None, file: str | None = None,
             line: int | None = None) -> FormatError:
        return FormatError(message, file or self.file, line if line is not None else line_of(elem))

    def add(self, entity: Entity) -> None:
        """Declare a frame; names of links, joints, frames and models share one namespace."""
        other = self.entities.get(entity.name)
        if other is not None:
            raise self.fail(f"{entity.kind} name {entity.name!r} is already used by the {other.kind} at line "
                            f"{line_of(other.elem)} of {self.what}: links, joints, frames and nested models of "
                            "one scope need unique names", entity.elem, entity.file)
        self.entities[entity.name] = entity

    def has_frame(self, name: str) -> bool:
        """Whether ``name`` (possibly scoped) names a frame visible from this scope."""
        if name == self.root_frame or name in self.entities:
            return True
        head, sep, rest = name.partition(SCOPE)
        if sep:
            e = self.entities.get(head)
            return e is not None and e.kind == "model" and e.scope is not None and e.scope.has_frame(rest)
        return name in self.entities

    def _default_relative_to(self, e: Entity) -> str:
        if e.kind == "joint":
            return e.child
        if e.kind == "frame":
            return e.attached_to or self.root_frame
        return self.root_frame

    # ------------------------------------------------------------------ pose graph
    def pose(self, name: str) -> FloatArray:
        """Pose of frame ``name`` in this scope's frame (4x4), resolving ``relative_to`` chains."""
        if name == self.root_frame:
            return np.eye(4)
        head, sep, rest = name.partition(SCOPE)
        if sep and name not in self.entities:
            e = self.entities.get(head)
            if e is None or e.kind != "model" or e.scope is None:
                raise self.fail(f"frame {name!r}: {head!r} is not a nested model of {self.what}", self.elem)
            return self.pose(head) @ e.scope.pose(rest)
        cached = self._pose.get(name)
        if cached is not None:
            return cached
        e = self.entities.get(name)
        if e is None:
            raise self.fail(f"no frame named {name!r} in {self.what}", self.elem)
        if name in self._visiting:
            loop = " -> ".join([*self._visiting[self._visiting.index(name):], name])
            raise self.fail(f"the relative_to (pose) graph of {self.what} has a cycle: {loop}", e.elem, e.file,
                            e.pose_line)
        base = e.relative_to or self._default_relative_to(e)
        self._visiting.append(name)
        try:
            X = self.pose(base) @ e.pose
            if e.kind == "model" and e.scope is not None and e.scope.placement_frame:
                X = X @ inverse_transform(e.scope.pose(e.scope.placement_frame))
        finally:
            self._visiting.pop()
        self._pose[name] = X
        return X

    def check_references(self) -> None:
        """Every relative_to / attached_to / joint parent-child / expressed_in name must exist."""
        kinds = "a nested model, link, joint, or frame" if self.kind == "model" else "a model or frame"
        for e in self.entities.values():
            for attr, ref in (("relative_to", e.relative_to), ("attached_to", e.attached_to)):
                if not ref:
                    continue
                if ref == "__root__":
                    raise self.fail(f"{attr}=\"__root__\" of {e.kind} {e.name!r}: '__root__' is reserved and "
                                    "cannot be used", e.elem, e.file, e.pose_line if attr == "relative_to" else None)
                if ref == e.name:
                    what = "attach to" if attr == "attached_to" else "be posed relative to"
                    raise self.fail(f"{e.kind} {e.name!r} cannot {what} itself ({attr}={ref!r} makes a cycle)",
                                    e.elem, e.file, e.pose_line if attr == "relative_to" else None)
                if not self.has_frame(ref):
                    raise self.fail(f"{attr} name {ref!r} of {e.kind} {e.name!r} does not match {kinds} name in "
                                    f"{self.what}", e.elem, e.file, e.pose_line if attr == "relative_to" else None)

    # ------------------------------------------------------------------ attached-to graph
    def canonical(self) -> tuple[Scope, str] | None:
        """The link the model frame is attached to (None: a static model with no link)."""
        if self.kind == "world":
            return None
        if self.canonical_attr:
            found = self.find_link(self.canonical_attr)
            if found is None:
                raise self.fail(f"canonical_link {self.canonical_attr!r} is not a link of {self.what}", self.elem)
            return found
        for e in self.entities.values():
            if e.kind == "link":
                return self, e.name
        for e in self.entities.values():
            if e.kind == "model" and e.scope is not None:
                found = e.scope.canonical()
                if found is not None:
                    return found
        return None

    def find_link(self, name: str) -> tuple[Scope, str] | None:
        if name in self.entities:
            return (self, name) if self.entities[name].kind == "link" else None
        head, sep, rest = name.partition(SCOPE)
        e = self.entities.get(head)
        if sep:
            return e.scope.find_link(rest) if e is not None and e.kind == "model" and e.scope else None
        return (self, name) if e is not None and e.kind == "link" else None

    def link_of(self, name: str, _chain: tuple[str, ...] = ()) -> tuple[Scope, str] | None:
        """The link frame ``name`` is rigidly attached to (None = the world)."""
        if name == "world" and self.kind == "world":
            return None
        if name == "__model__" and self.kind == "model":
            return self.canonical()
        head, sep, rest = name.partition(SCOPE)
        if sep and name not in self.entities:
            e = self.entities.get(head)
            if e is None or e.kind != "model" or e.scope is None:
                raise self.fail(f"frame {name!r}: {head!r} is not a nested model of {self.what}", self.elem)
            return e.scope.link_of(rest)
        if name in self._link:
            return self._link[name]
        e = self.entities.get(name)
        if e is None:
            raise self.fail(f"no frame named {name!r} in {self.what}", self.elem)
        if name in _chain:
            loop = " -> ".join([*_chain[_chain.index(name):], name])
            raise self.fail(f"the attached_to graph of {self.what} has a cycle: {loop}", e.elem, e.file)
        chain = (*_chain, name)
        if e.kind == "link":
            out: tuple[Scope, str] | None = (self, name)
        elif e.kind == "joint":
            out = self.link_of(e.child, chain)
        elif e.kind == "frame":
            out = self.link_of(e.attached_to or self.root_frame, chain)
        else:
            assert e.scope is not None
            out = e.scope.canonical()
            if out is None and not e.scope.static:
                raise self.fail(f"nested model {name!r} has no link to attach to", e.elem, e.file)
        self._link[name] = out
        return out


def add_model_entity(parent: Scope, sub: Scope, elem: etree._Element, file: str) -> None:
    """Enter the nested (or included) model ``sub`` in ``parent`` as a frame at its own pose."""
    pose, rel, line = sub.own_pose
    if parent.kind == "world" and rel == "world":
        rel = ""
    parent.add(Entity("model", sub.name, elem, file, pose, rel, line, scope=sub))
