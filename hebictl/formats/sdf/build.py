"""Turning resolved SDFormat scopes into a RobotModel: world poses at zero, joint chains, bodies.

:mod:`hebictl.formats.sdf` reads and validates the document into :class:`~hebictl.formats.sdf.frames.Scope`
objects; this module flattens them (links, joints and frames with world poses at q = 0) and builds
the kinematic tree, including the massless chains of joints the kernels have no kind for. The
conventions are documented in :mod:`hebictl.formats.sdf`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError, ModelError
from hebictl.formats._xml import HEBICTL_NS, line_of
from hebictl.formats.building import Stage, add_standard_frames, joint_stages
from hebictl.formats.rotations import inverse_transform, matrix_quat, rpy_matrix, transform
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.frames import SCOPE, Entity, Scope
from hebictl.formats.sdf.links import read_inertial
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


@dataclass
class _LinkInfo:
    scope: Scope
    name: str
    full: str
    X_W: np.ndarray
    inertia: Inertia
    metadata: dict[str, Any]
    static: bool


@dataclass
class _JointInfo:
    full: str
    type: str
    elem: etree._Element
    file: str
    parent: str | None  # full link name, None = world
    child: str
    X_W: np.ndarray
    axes: list[np.ndarray | None]  # None: the joint has no such axis element
    limits: list[dict[str, float]]
    metadata: dict[str, Any] = field(default_factory=dict)



# ====================================================================== flattening and building
class Flattener:
    """Walks the resolved scopes and lists links, joints and frames with world poses at q = 0."""

    def __init__(self, rc: ReadContext) -> None:
        self.rc = rc
        self.links: dict[str, _LinkInfo] = {}
        self.joints: list[_JointInfo] = []
        self.frames: list[tuple[str, str, str | None, np.ndarray]] = []  # kind, name, link full, X_W
        self.models: list[dict[str, Any]] = []
        self.drake: dict[str, Any] = {}

    def full(self, prefix: str, name: str) -> str:
        return prefix + name

    def link_full(self, found: tuple[Scope, str] | None) -> str | None:
        if found is None:
            return None
        scope, name = found
        original = scope.entities[name].elem.get(f"{{{HEBICTL_NS}}}name")  # renamed by hebictl's writer
        return original or scope.prefix + name

    def model(self, scope: Scope, X_W: np.ndarray, prefix: str) -> None:
        scope.prefix = prefix
        scope.X_W = X_W

        for e in scope.entities.values():
            if e.kind == "model" and e.scope is not None:
                self.model(e.scope, X_W @ scope.pose(e.name), prefix + e.name + SCOPE)

        canonical = scope.canonical()
        self.models.append({"name": prefix[:-2] if prefix else scope.name, "static": scope.static,
                            "canonical_link": self.link_full(canonical), "file": scope.file})
        self.frames.append(("model", prefix[:-2] if prefix else scope.name, self.link_full(canonical), X_W))

        for k, v in getattr(scope, "drake", {}).items():
            self.drake.setdefault(k, []).extend(v if isinstance(v, list) else [v])

        for e in scope.entities.values():
            if e.kind == "link":
                X = X_W @ scope.pose(e.name)
                inertia = read_inertial(self.rc, e, scope)
                meta = {**e.data["metadata"], "model": prefix[:-2] if prefix else scope.name}
                full = self.link_full((scope, e.name))
                assert full is not None
                if full in self.links:
                    raise FormatError(f"two links are named {full!r}", e.file, line_of(e.elem))
                self.links[full] = _LinkInfo(scope, e.name, full, X, inertia, meta, self.is_static(scope))
            elif e.kind == "frame":
                self.frames.append(("frame", prefix + e.name, self.link_full(scope.link_of(e.name)),
                                    X_W @ scope.pose(e.name)))

        for e in scope.entities.values():
            if e.kind == "joint":
                self.joint(scope, e, X_W, prefix)

    def is_static(self, scope: Scope) -> bool:
        return scope.static

    def joint(self, scope: Scope, e: Entity, X_W: np.ndarray, prefix: str) -> None:
        X_MJ = scope.pose(e.name)
        parent = None if e.parent == "world" else self.link_full(scope.link_of(e.parent))
        child = self.link_full(scope.link_of(e.child))
        assert child is not None
        axes_J: list[np.ndarray | None] = []
        for xyz, exp in zip(e.data["axes"], e.data["expressed_in"], strict=True):
            if xyz is None:
                axes_J.append(None)
                continue
            if exp:
                R_ME = scope.pose(exp)[:3, :3]
                axes_J.append(X_MJ[:3, :3].T @ R_ME @ xyz)
            else:
                axes_J.append(np.asarray(xyz, dtype=np.float64))

        full = e.elem.get(f"{{{HEBICTL_NS}}}name") or prefix + e.name
        X_WJ = X_W @ X_MJ
        if e.data["drake"]:
            # Drake's <drake:joint> joins the parent link frame to the child link frame: at zero the
            # child sits on its parent, whatever the links' poses say (and <pose> is not allowed)
            X_WJ = self.links[parent].X_W if parent is not None else np.eye(4)

        self.joints.append(_JointInfo(full, e.data["type"], e.elem, e.file, parent, child, X_WJ,
                                      axes_J, e.data["limits"], {**e.data["metadata"], "drake_joint": e.data["drake"]}))


def _stages(j: _JointInfo) -> list[Stage]:
    return joint_stages(j.type, j.axes, j.limits)


def _joint(name: str, kind: JointKind, axis: np.ndarray, lim: Mapping[str, float], meta: Mapping[str, Any],
           j: _JointInfo, armature: float = 0.0) -> Joint:
    try:
        return Joint(name, kind, tuple(axis), scale=meta.get("scale", 1.0), lower=lim.get("lower", -math.inf),
                     armature=armature,
                     upper=lim.get("upper", math.inf),
                     max_velocity=lim.get("velocity", math.inf), max_effort=lim.get("effort", math.inf),
                     damping=lim.get("damping", 0.0), friction=lim.get("friction", 0.0), metadata=dict(meta))
    except ModelError as exc:
        raise FormatError(f"joint {j.full!r}: {exc}", j.file, line_of(j.elem)) from None


def build(flat: Flattener, name: str, source: str | None, gravity: np.ndarray, floating_base: bool,  # noqa: C901 (one branch per attribute of the element it reads)
           metadata: dict[str, Any]) -> RobotModel:
    links = flat.links
    by_child: dict[str, _JointInfo] = {}
    children: dict[str | None, list[_JointInfo]] = {}
    for j in flat.joints:
        if j.child not in links:
            raise FormatError(f"joint {j.full!r}: child link {j.child!r} not found", j.file, line_of(j.elem))
        if j.child in by_child:
            first = by_child[j.child]
            raise FormatError(f"link {j.child!r} has two parent joints, {first.full!r} (line {line_of(first.elem)}) "
                              f"and {j.full!r}: kinematic loops cannot be represented as a tree", j.file,
                              line_of(j.elem))
        by_child[j.child] = j
        children.setdefault(j.parent, []).append(j)

    builder = ModelBuilder(name, source=source, format="sdf")
    index: dict[str, int] = {}

    def add_subtree(root: str) -> None:
        stack = list(reversed(children.get(root, [])))
        while stack:
            j = stack.pop()
            if j.child in index:
                raise FormatError(f"joint {j.full!r} closes a kinematic loop at link {j.child!r}", j.file,
                                  line_of(j.elem))
            add_joint(j)
            stack.extend(reversed(children.get(j.child, [])))

    def add_joint(j: _JointInfo) -> None:
        child = links[j.child]

        if j.parent is None:
            parent, X_WP = -1, np.eye(4)
        else:
            if j.parent not in index:
                raise FormatError(f"joint {j.full!r}: parent link {j.parent!r} is not connected to the tree before "
                                  "its child (kinematic loop?)", j.file, line_of(j.elem))
            parent, X_WP = index[j.parent], links[j.parent].X_W

        X_PJ = inverse_transform(X_WP) @ j.X_W
        X_JC = np.eye(4) if j.metadata.get("drake_joint") else inverse_transform(j.X_W) @ child.X_W
        stages = _stages(j)
        meta = {**j.metadata, "sdf_joint": j.full}
        placement = X_PJ
        for k, (kind, axis, suffix, lim) in enumerate(stages):
            jname = j.full + suffix
            last = k == len(stages) - 1
            # Drake's reflected inertia acts on the joint's one coordinate (a screw's rotation)
            arm = float(meta.get("armature", 0.0)) if k == 0 else 0.0
            if not last:
                parent = builder.add_body(f"{j.child}__{jname}", parent, placement,
                                          _joint(jname, kind, axis, lim, meta, j, arm), None,
                                          {"synthetic": j.type, "joint": j.full})
                placement = np.eye(4)
                continue
            p_CJ = -X_JC[:3, :3].T @ X_JC[:3, 3]  # joint origin in the child frame
            axis_C = X_JC[:3, :3].T @ axis
            movable = (kind in (JointKind.FIXED, JointKind.PRISMATIC)
                       or (kind is JointKind.REVOLUTE and np.linalg.norm(np.cross(p_CJ, axis_C)) <= 1e-12)
                       or (kind is JointKind.BALL and np.linalg.norm(p_CJ) <= 1e-12))
            if movable:
                joint = _joint(jname, kind, axis_C, lim, meta, j, arm) if kind is not JointKind.FIXED else \
                    Joint(jname, JointKind.FIXED, metadata=meta)
                if kind is JointKind.BALL:  # ball rotation is about the joint frame's axes
                    joint = _joint(jname, kind, axis, lim, meta, j)
                    if not np.allclose(X_JC[:3, :3], np.eye(3), atol=1e-15):
                        movable = False
                if movable:
                    index[j.child] = builder.add_body(j.child, parent, placement @ X_JC, joint, child.inertia,
                                                      child.metadata)
                    return
            mid = builder.add_body(f"{j.child}__{jname}", parent, placement,
                                   _joint(jname, kind, axis, lim, meta, j, arm),
                                   None, {"synthetic": "joint_frame", "joint": j.full})
            offset = Joint(f"{jname}__offset", JointKind.FIXED, metadata=meta)
            index[j.child] = builder.add_body(j.child, mid, X_JC, offset, child.inertia, child.metadata)

    def add_root(lname: str) -> None:
        info = links[lname]
        if floating_base and not info.static:
            elem = info.scope.entities[info.name].elem
            written = elem.get(f"{{{HEBICTL_NS}}}free_joint")  # hebictl's writer: the free joint's name and frame
            joint = Joint(written if written is not None else lname, JointKind.FREE, metadata={"sdf_type": "free"})
            X_WF = np.eye(4)
            if elem.get(f"{{{HEBICTL_NS}}}free_joint_pose") is not None:
                X_WF = info.scope.X_W @ _pose_attribute(elem, "free_joint_pose", flat.rc.file)
            X_FL = inverse_transform(X_WF) @ info.X_W
            meta = {**info.metadata, "default_position": tuple(X_FL[:3, 3]),
                    "default_quaternion": tuple(matrix_quat(X_FL[:3, :3]))}
            index[lname] = builder.add_body(lname, -1, X_WF, joint, info.inertia, meta)
        else:
            index[lname] = builder.add_body(lname, -1, info.X_W, Joint.fixed(f"{lname}__weld"), info.inertia,
                                            {**info.metadata, "welded_to_world": True})

    if flat.rc.hebictl_frames is not None:
        # written by hebictl: restore the original body order (topological)
        def order(lname: str) -> int:
            info = links[lname]
            return int(info.scope.entities[info.name].elem.get(f"{{{HEBICTL_NS}}}index", "0"))

        for lname in sorted(links, key=order):
            incoming = by_child.get(lname)
            if incoming is None:
                add_root(lname)
            elif incoming.parent is not None and incoming.parent not in index:
                raise FormatError(f"joint {incoming.full!r}: parent link {incoming.parent!r} is declared after its "
                                  "child", incoming.file, line_of(incoming.elem))
            else:
                add_joint(incoming)
    else:  # joints to the world first, then free links, each with its subtree depth first in file order
        for root in children.get(None, []):
            add_joint(root)
            add_subtree(root.child)
        for lname in links:
            if lname not in by_child and lname not in index:
                add_root(lname)
                add_subtree(lname)

    missing = [n for n in links if n not in index]
    if missing:
        j = by_child[missing[0]]
        raise FormatError(f"the joints form a kinematic loop through link {missing[0]!r}", j.file, line_of(j.elem))

    if flat.rc.hebictl_frames is not None:  # written by hebictl: restore the original frames exactly
        for el in flat.rc.hebictl_frames:
            link = el.get("link", "")
            if link and link not in index:
                raise FormatError(f"<hebictl:frame> refers to unknown link {link!r}", flat.rc.file,
                                  line_of(el))
            values = [float(v) for v in (el.get("pose") or "0 0 0 0 0 0").split()]
            offset = transform(rpy_matrix(values[3:6]), values[:3])
            builder.add_frame(el.get("kind", "frame"), index[link] if link else -1, offset, el.get("name"))
        return builder.build(gravity=gravity, metadata=metadata)

    add_standard_frames(builder)

    for kind, fname, link, X_W in flat.frames:
        body = -1 if link is None else index[link]
        X_WB = np.eye(4) if link is None else _body_pose(builder, body)
        builder.add_frame(kind, body, inverse_transform(X_WB) @ X_W, fname)

    return builder.build(gravity=gravity, metadata=metadata)


def _pose_attribute(elem: etree._Element, key: str, file: str) -> np.ndarray:
    """The transform in a ``hebictl:`` attribute "x y z roll pitch yaw" (hebictl's own writer's output)."""
    text = elem.get(f"{{{HEBICTL_NS}}}{key}", "")
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        values = []
    if len(values) != 6:
        raise FormatError(f"hebictl:{key}={text!r} must be six numbers (x y z roll pitch yaw)", file, line_of(elem))
    return transform(rpy_matrix(values[3:6]), values[:3])


def _body_pose(builder: ModelBuilder, body: int) -> np.ndarray:
    """World pose of a body at q = 0 (welded bases and fixed offsets only need placements)."""
    X = np.eye(4)
    bodies = builder.bodies
    while body >= 0:
        b = bodies[body]
        X = b.placement @ X
        body = b.parent
    return X


