"""SDFormat 1.9 writer for any RobotModel (a model read from HRDF, URDF, SDF, MJCF, ...).

The file is meant to be read back by any SDFormat tool *and* by hebictl without loss:

* every body is a ``<link>`` whose ``<pose relative_to>`` names its parent link (or the model
  frame), so each pose is exactly the body's placement; the model's ``<pose>`` is the base
  transform;
* every joint's frame is its child link's frame (SDFormat's default joint pose), so axes are
  written in the link frame as hebictl stores them; limits, effort, velocity, damping and
  friction go to ``<axis>``; unbounded limits are SDFormat's ±1e16 and -1;
* inertials carry the full inertia about the centre of mass in link axes (mass 0 for massless
  bodies: SDFormat would otherwise default to 1 kg);
* scoped names ``A::B::link`` become nested ``<model>`` elements, so they read back unchanged;
* free joints (only on bodies hanging from the base; below another link they are refused) are
  links without a joint: read them back with ``floating_base=True``. The joint's name and the
  frame its coordinates are relative to (when not the world) go to ``hebictl:free_joint`` and
  ``hebictl:free_joint_pose`` (model frame) attributes of the link;
* joint names never reuse a link's or nested model's name (SDFormat gives them one namespace):
  a clashing joint gets a ``__joint`` suffix and its original name in ``hebictl:name``;
* what SDFormat cannot say is kept in ``hebictl:`` elements other tools ignore: a joint's
  ``scale`` and the model's frames (``<hebictl:frame kind name link>``) so frame queries of
  every kind ("com", "output", "end_effector", ...) come back identical (``<hebictl:frames>``). Frames of kind
  ``"frame"`` are also written as standard ``<frame>`` elements.

Numbers are written with ``repr`` (shortest round-trip form), so a load → write → load cycle
keeps every value to the last bit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError, ModelError
from hebictl.formats._xml import DRAKE_NS, HEBICTL_NS, fmt_floats
from hebictl.formats.rotations import matrix_rpy
from hebictl.model.tree import JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

SDF_VERSION = "1.9"
UNBOUNDED = 1e16
SCOPE = "::"


def _pose_text(T: np.ndarray) -> str:
    return fmt_floats([*T[:3, 3], *matrix_rpy(T[:3, :3])])


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrib: str) -> etree._Element:
    el = etree.SubElement(parent, tag, attrib)
    if text is not None:
        el.text = text
    return el


def _num(value: float) -> str:
    return fmt_floats([value])


class _Nest:
    """Builds nested ``<model>`` elements for scoped names and answers names relative to them."""

    def __init__(self, root: etree._Element) -> None:
        self.root = root
        self.models: dict[str, etree._Element] = {"": root}
        self.reserved: dict[str, set[str]] = {}  # per scope: link and model names written sooner or later

    def reserve(self, full: str) -> None:
        """Claim ``full``'s link name and its nested models' names before any joint picks a name."""
        scope, _ = self.scope_of(full)
        self.reserved.setdefault(scope, set()).add(self.local(full))
        while scope:
            parent, local = self.scope_of(scope)
            self.reserved.setdefault(parent, set()).add(local)
            scope = parent

    def scope_of(self, full: str) -> tuple[str, str]:
        """(scope path, local name) of a scoped name."""
        head, sep, tail = full.rpartition(SCOPE)
        return (head, tail) if sep else ("", full)

    def model(self, path: str) -> etree._Element:
        if path in self.models:
            return self.models[path]
        parent_path, local = self.scope_of(path)
        el = _sub(self.model(parent_path), "model", name=local)
        self.models[path] = el
        return el

    def local(self, full: str) -> str:
        """A link's SDF name in its model: reserved names ('world', '__x__') get a suffix."""
        name = self.scope_of(full)[1]
        if name == "world" or (name.startswith("__") and name.endswith("__")):
            name += "_link"
        return name

    def relative(self, name: str, scope: str) -> str:
        """Link ``name`` as seen from model ``scope`` (which must contain it)."""
        head = self.scope_of(name)[0]
        name = f"{head}{SCOPE}{self.local(name)}" if head else self.local(name)
        if not scope:
            return name
        if not name.startswith(scope + SCOPE):
            raise ModelError(f"{name!r} is not inside the nested model {scope!r}: SDFormat names can only "
                             "reach into nested models")
        return name[len(scope) + len(SCOPE):]


def model_element(model: RobotModel, *, weld_root: bool = True) -> etree._Element:
    """The ``<model>`` element of ``model`` (what :func:`write_sdf` wraps in ``<sdf>``).

    ``weld_root=False`` leaves bodies fixed to the base without a joint, so SDF readers treat
    them as free bodies (how a URDF included into an SDF world behaves).
    """
    root = etree.Element("model", {"name": model.name or "robot"}, nsmap={"hebictl": HEBICTL_NS})
    if not np.allclose(model.base, np.eye(4), rtol=0, atol=0):
        _sub(root, "pose", _pose_text(model.base))
    if not np.array_equal(model.gravity, (0.0, 0.0, -9.81)):  # a world property; kept for hebictl
        _sub(root, f"{{{HEBICTL_NS}}}gravity", fmt_floats(model.gravity))
    if not model.bodies:  # SDFormat only allows a model without links if it is static
        _sub(root, "static", "true")
    nest = _Nest(root)
    names = model.link_names
    X_M: FloatArray | list[FloatArray] = []  # the links' poses in the model frame
    if model.bodies:
        X_M = np.linalg.inv(model.base) @ model.link_poses(model.neutral_configuration())
    for b in model.bodies:  # SDFormat: links, joints and models of one scope share a namespace
        nest.reserve(b.name)
    for i, b in enumerate(model.bodies):
        scope, local = nest.scope_of(b.name)
        link = _sub(nest.model(scope), "link", name=nest.local(b.name))
        if nest.local(b.name) != local:
            link.set(f"{{{HEBICTL_NS}}}name", b.name)
        link.set(f"{{{HEBICTL_NS}}}index", str(i))  # body order, which nesting would lose
        parent_name = names[b.parent] if b.parent >= 0 else None
        X = b.placement
        if b.joint.kind is JointKind.FREE:
            if b.parent >= 0:
                raise FormatError(f"body {b.name!r}: SDFormat has no free joint below another link (a link "
                                  "without a joint floats in the world, so its coordinates could not be relative "
                                  f"to {names[b.parent]!r})")
            default = np.eye(4)
            default[:3, 3] = b.metadata.get("default_position", (0.0, 0.0, 0.0))
            from hebictl.formats.rotations import quat_matrix

            default[:3, :3] = quat_matrix(b.metadata.get("default_quaternion", (1.0, 0.0, 0.0, 0.0)))
            X = X @ default
            if b.joint.name != b.name:  # SDFormat's free link has no joint to carry the name
                link.set(f"{{{HEBICTL_NS}}}free_joint", b.joint.name)
            if not (np.array_equal(b.placement, np.eye(4)) and np.array_equal(model.base, np.eye(4))):
                # q is the pose relative to this frame (model frame), not SDFormat's world pose
                link.set(f"{{{HEBICTL_NS}}}free_joint_pose", _pose_text(b.placement))
        rel = "__model__"
        if parent_name is not None:
            if not scope or parent_name.startswith(scope + SCOPE):
                rel = nest.relative(parent_name, scope)
            else:  # the parent is outside this nested model: pose in the (shared) model frame instead
                X = X_M[i]
        _sub(link, "pose", _pose_text(X), relative_to=rel)
        inertial = _sub(link, "inertial")
        I = np.asarray(b.inertia.rotational)
        _sub(inertial, "pose", fmt_floats([*b.inertia.com, 0.0, 0.0, 0.0]))
        _sub(inertial, "mass", _num(b.inertia.mass))
        inertia = _sub(inertial, "inertia")
        for key, (r, c) in (("ixx", (0, 0)), ("ixy", (0, 1)), ("ixz", (0, 2)), ("iyy", (1, 1)), ("iyz", (1, 2)),
                            ("izz", (2, 2))):
            _sub(inertia, key, _num(I[r, c]))
        _write_joint(nest, model, i, weld_root)
    frames = etree.SubElement(root, f"{{{HEBICTL_NS}}}frames")  # present even when empty: "restore exactly"
    for f in model.frames:
        link = names[f.body] if f.body >= 0 else ""
        fel = etree.SubElement(frames, f"{{{HEBICTL_NS}}}frame", {"kind": f.kind, "link": link})
        if f.name is not None:
            fel.set("name", f.name)
        fel.set("pose", _pose_text(f.offset))
    return root


def _write_joint(nest: _Nest, model: RobotModel, i: int, weld_root: bool) -> None:
    b = model.bodies[i]
    j = b.joint
    names = model.link_names
    if j.kind is JointKind.FREE or (b.parent < 0 and j.kind is JointKind.FIXED and not weld_root):
        return
    parent = names[b.parent] if b.parent >= 0 else "world"
    name = j.name or f"{b.name}__fixed"
    scope = nest.scope_of(name)[0] if SCOPE in name else ""
    # a joint must live in a model that contains both its links
    for link in (b.name, parent if b.parent >= 0 else None):
        while link is not None and scope and not link.startswith(scope + SCOPE):
            scope = nest.scope_of(scope)[0]
    local = name[len(scope) + len(SCOPE):] if scope and name.startswith(scope + SCOPE) else name
    if SCOPE in local:
        local = local.replace(SCOPE, "__")
    taken = {c.get("name") for c in nest.model(scope) if c.tag in ("link", "joint", "model", "frame")}
    taken |= nest.reserved.get(scope, set())
    while local in taken:  # SDFormat: links, joints and models of one scope share a namespace
        local += "__joint"
    kind = {JointKind.REVOLUTE: "revolute", JointKind.PRISMATIC: "prismatic", JointKind.FIXED: "fixed",
            JointKind.BALL: "ball"}[j.kind]
    if kind == "revolute" and math.isinf(j.lower) and math.isinf(j.upper):
        kind = "continuous"
    el = _sub(nest.model(scope), "joint", name=local, type=kind)
    _sub(el, "parent", parent if b.parent < 0 else nest.relative(parent, scope))
    _sub(el, "child", nest.relative(b.name, scope))
    if j.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
        axis = _sub(el, "axis")
        _sub(axis, "xyz", fmt_floats(j.axis))
        limit = _sub(axis, "limit")
        _sub(limit, "lower", _num(max(j.lower, -UNBOUNDED)))
        _sub(limit, "upper", _num(min(j.upper, UNBOUNDED)))
        _sub(limit, "effort", _num(j.max_effort) if math.isfinite(j.max_effort) else "-1")
        _sub(limit, "velocity", _num(j.max_velocity) if math.isfinite(j.max_velocity) else "-1")
        dyn = _sub(axis, "dynamics")
        _sub(dyn, "damping", _num(j.damping))
        _sub(dyn, "friction", _num(j.friction))
        if j.armature:  # Drake's reflected inertia: rotor inertia · gear ratio², with the ratio 1
            for tag, value in (("rotor_inertia", j.armature), ("gear_ratio", 1.0)):
                etree.SubElement(el, f"{{{DRAKE_NS}}}{tag}", nsmap={"drake": DRAKE_NS}).text = _num(value)
    if j.scale != 1.0:
        _sub(el, f"{{{HEBICTL_NS}}}scale", _num(j.scale))
    if j.name and local != j.name:
        el.set(f"{{{HEBICTL_NS}}}name", j.name)


def write_sdf(model: RobotModel, path: str | Path | None = None, *, weld_base: bool = True) -> str:
    """SDFormat 1.9 text of ``model``; also written to ``path`` when given.

    Bodies fixed to the base get a fixed joint to ``world``; ``weld_base=False`` leaves them as
    free links instead, so a scene (model directives, an SDF world) can weld them elsewhere.
    """
    sdf = etree.Element("sdf", {"version": SDF_VERSION}, nsmap={"hebictl": HEBICTL_NS})
    sdf.append(model_element(model, weld_root=weld_base))

    text = etree.tostring(sdf, pretty_print=True, xml_declaration=True, encoding="UTF-8").decode()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
