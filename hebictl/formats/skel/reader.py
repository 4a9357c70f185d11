"""DART's SKEL reader (``<skel><world>``): skeletons, bodies, joints and shapes into a RobotModel.

Semantics follow DART's ``SkelParser`` (checked body by body against dartpy 6.20 in the tests):

* ``<transformation>`` is ``x y z rx ry rz`` [m, rad] with ``R = Rx(rx) Ry(ry) Rz(rz)``. A body's
  transformation is its pose in the skeleton frame at the initial configuration, pre-multiplied by
  the skeleton's own ``<transformation>``; a joint's transformation is the joint frame in the child
  body frame. With ``parent = world`` the joint hangs from the world frame (not the skeleton's).
* Joint motion ``M(q)`` acts between the joint frames: ``child = parent @ T_pj @ M(q) @ T_cj⁻¹``,
  ``T_pj = parent_init⁻¹ @ child_init @ T_cj``. hebictl moves a body about its own origin, so when
  ``T_cj`` is not identity the joint moves a massless body ``<child>__<coordinate>`` and the child
  hangs from it (fixed, at ``T_cj⁻¹``) — except prismatic joints and revolute joints whose axis
  passes through the child origin, which are re-expressed in the child frame.
* Joint types and their hebictl coordinates (DART's coordinates in brackets when they differ):

  ========================  ==================================================================
  weld                      none
  revolute, prismatic       one coordinate named after the joint
  screw                     ``<j>_rot`` (revolute) and ``<j>_trans`` (prismatic): DART couples
                            them (``trans = pitch·rot/2π``, pitch in metadata); hebictl does not
  universal                 ``<j>_1`` about ``axis``, then ``<j>_2`` about ``axis2``
  euler                     one revolute per letter of ``axis_order`` (``xyz``: ``<j>_x``, ``<j>_y``,
                            ``<j>_z``; ``zyx``: z, y, x) — DART's Euler angles, same order
  translational             ``<j>_x``, ``<j>_y``, ``<j>_z``
  translational2d, planar   ``<j>_x``/``_y``/``_z`` along the plane axes (``arbitrary``: ``_1``,
                            ``_2``), then ``<j>_rot`` about their normal (planar only)
  ball                      one ball joint: quaternion ``w x y z`` [DART: rotation vector]
  free                      one free joint: ``x y z qw qx qy qz`` [DART: rotation vector, then
                            translation; velocities ``ω, v`` where hebictl has ``v, ω``]
  ========================  ==================================================================

  A ``<dof name=...>`` renames the coordinate of a chain; limits, velocity/force bounds, damping,
  friction and springs come from ``<axis*>`` (``<limit>``, ``<dynamics>``, legacy ``<damping>``) and
  ``<dof>`` elements; ``init_pos``/``init_vel`` and ``actuator=`` are kept in joint metadata (free
  joints' initial pose also as ``default_position``/``default_quaternion``).
* A body that is the parent of a joint but the child of none gets a free joint named ``root`` (as
  DART does); bodies in no joint are dropped with a warning (DART drops them silently).
* Inertia: ``<mass>``, ``<offset>`` (centre of mass, body frame), ``<moment_of_inertia>``; without
  the latter, the composite of the body's shapes about ``<offset>`` (see
  :mod:`hebictl.formats.skel.shapes`); a body without ``<inertia>`` has DART's defaults, 1 kg and
  identity rotational inertia.
* Soft bodies (``<soft_shape>``) are loaded rigid: the soft shape's ``total_mass`` is added as a
  point mass at the soft shape's origin (its point masses are symmetric there at rest), so gravity
  torques match DART's at the rest shape; its deformation is not modelled (warning).
* ``<gravity>0</gravity>`` on a body (DART then ignores gravity on it) cannot be represented:
  kept in metadata with a warning. ``<mobile>false</mobile>`` skeletons are welded at their initial
  configuration (they do not move in DART either).
* Several skeletons load as separate subtrees of the base; then body and joint names are
  ``"<skeleton>/<name>"`` (a repeated skeleton name becomes ``name(1)``, ... as in DART).
  ``skeleton="name"`` loads one. ``<world><physics>`` gives gravity
  (default ``0 0 -9.81``) and ``time_step`` (metadata).
* Frames: ``"com"``, ``"output"`` and ``"end_effector"`` (leaf bodies), and ``"marker"`` for
  ``<marker name offset>``.

Pre-XML ``.skel`` files (DART 2's ``dofs{ ... }`` text format) are rejected with a clear error.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree
from scipy.spatial.transform import Rotation

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError, ModelError, SkelWarning
from hebictl.formats import geometry
from hebictl.formats._xml import local_name, parse_floats, parse_xml
from hebictl.formats.building import add_standard_frames, building
from hebictl.formats.lenient import bend
from hebictl.formats.rotations import inverse_transform, matrix_quat, transform
from hebictl.formats.skel.shapes import (
    Shape,
    dart_default_moment,
    moment_from_shapes,
    read_shape,
    skel_transform,
    text_floats,
)
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_JOINT_TYPES = ("weld", "revolute", "prismatic", "screw", "universal", "ball", "euler", "translational",
                "translational2d", "planar", "free")
_ACTUATORS = ("force", "passive", "servo", "acceleration", "velocity", "locked", "mimic")
_PLANES = {"xy": ((1.0, 0, 0), (0, 1.0, 0), "x", "y"), "yz": ((0, 1.0, 0), (0, 0, 1.0), "y", "z"),
           "zx": ((0, 0, 1.0), (1.0, 0, 0), "z", "x")}
_UNIT = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


@dataclass
class _Motion:
    """One elementary 1-DoF (or ball/free) motion of a SKEL joint, in the joint frame."""

    kind: JointKind
    axis: tuple[float, float, float]
    suffix: str
    dof: int  # index of DART's first coordinate it stands for


@dataclass
class _Body:
    name: str
    elem: etree._Element
    pose: FloatArray  # initial pose in the world
    inertia: Inertia
    meta: dict[str, Any]


@dataclass
class _SkelJoint:
    name: str
    type: str
    elem: etree._Element
    parent: str | None
    child: str
    T_cj: FloatArray
    motions: list[_Motion]
    ndof: int
    dofs: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def _unqualified(name: str) -> str:
    return name


class _Reader:
    """One read of a SKEL world: its file, and what the skeletons being read share."""

    def __init__(self, file: str, base_dir: Path | None, strict: bool = False) -> None:
        self.file = file
        self.base_dir = base_dir
        self.strict = strict
        self.skel_names: dict[int, str] = {}  # each <skeleton> element's name, DART's renaming applied
        self.markers: list[tuple[int, str, FloatArray]] = []  # body, name, offset of each <marker>
        self.qual: Callable[[str], str] = _unqualified  # names of the skeleton being read ("skel/name" if several)

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        return FormatError(message, self.file, None if elem is None else elem.sourceline)

    # ------------------------------------------------------------------ values
    def child_text(self, elem: etree._Element, tag: str) -> str | None:
        c = elem.find(tag)
        return None if c is None else (c.text or "").strip()

    def number(self, elem: etree._Element, tag: str, default: float | None = None) -> float | None:
        c = elem.find(tag)
        if c is None:
            return default
        return float(parse_floats(c.text or "", c, "text", self.file, 1)[0])

    def flag(self, elem: etree._Element, tag: str, default: bool) -> bool:
        c = elem.find(tag)
        if c is None:
            return default
        t = (c.text or "").strip().lower()
        if t in ("1", "true"):
            return True
        if t in ("0", "false"):
            return False
        raise self.fail(f"<{tag}> must be 0/1 or true/false, got {t!r}", c)

    def pose(self, elem: etree._Element) -> FloatArray:
        c = elem.find("transformation")
        return np.eye(4) if c is None else skel_transform(c.text or "", c, self.file)

    # ------------------------------------------------------------------ document
    def read(self, root: etree._Element, skeleton: str | None) -> RobotModel:
        if local_name(root) != "skel":
            raise self.fail(f"expected a <skel> root element, found <{local_name(root)}>", root)

        world = root.find("world")
        if world is None:
            raise self.fail("<skel> has no <world> element (a bare <skeleton> is not a SKEL world file)", root)

        gravity = np.array([0.0, 0.0, -9.81])
        meta: dict[str, Any] = {"world": world.get("name")}
        physics = world.find("physics")
        if physics is not None:
            if physics.find("gravity") is not None:
                gravity = text_floats(physics, "gravity", self.file, 3)
            ts = self.number(physics, "time_step")
            if ts is not None:
                meta["time_step"] = ts
            cd = self.child_text(physics, "collision_detector")
            if cd:
                meta["collision_detector"] = cd

        skels = world.findall("skeleton")
        names: list[str] = []
        for s in skels:  # DART renames repeated skeleton names "name(1)", "name(2)", ...
            base, k, name = s.get("name", ""), 0, s.get("name", "")
            while name in names:
                k += 1
                name = f"{base}({k})"
            names.append(name)

        self.skel_names = dict(zip(map(id, skels), names, strict=True))

        if skeleton is not None:
            if skeleton not in names:
                raise self.fail(f"no skeleton named {skeleton!r}; the world has {names}", world)
            skels = [skels[names.index(skeleton)]]

        if not skels:
            raise self.fail("the world has no <skeleton>", world)

        prefix = len(skels) > 1
        stem = skels[0].get("name") if len(skels) == 1 else (world.get("name") or Path(self.file).stem)
        builder = ModelBuilder(stem or "skel", self.file, "skel")
        self.markers = []
        meta["skeletons"] = []

        for s in skels:
            meta["skeletons"].append(self.skeleton(builder, s, prefix))

        try:
            add_standard_frames(builder)
            for body, name, offset in self.markers:
                builder.add_frame("marker", body, transform(None, offset), name)
            return builder.build(gravity=gravity, metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), world) from None

    # ------------------------------------------------------------------ skeleton
    def skeleton(self, builder: ModelBuilder, el: etree._Element, prefix: bool) -> dict[str, Any]:
        sname = self.skel_names[id(el)]
        self.qual = (lambda n: f"{sname}/{n}") if prefix else (lambda n: n)
        frame = self.pose(el)
        mobile = self.flag(el, "mobile", True)
        bodies: dict[str, _Body] = {}
        for b in el.findall("body"):
            body = self.body(b, frame)
            if body.name in bodies:
                bend(self.strict, f"skeleton {sname!r} has two bodies named {body.name!r}; the second is dropped "
                     "(as DART does)", self.file, b.sourceline, SkelWarning, "DART", stacklevel=6)
                continue
            bodies[body.name] = body

        joints: dict[str, _SkelJoint] = {}
        joint_names: set[str] = set()
        for j in el.findall("joint"):
            joint = self.joint(j, bodies)
            if joint.name in joint_names:  # DART's NameManager: the first free "name(1)", "name(2)", ...
                new = next(n for k in itertools.count(1) if (n := f"{joint.name}({k})") not in joint_names)
                bend(self.strict, f"skeleton {sname!r} has two joints named {joint.name!r}; the second is renamed "
                     f"{new!r} (as DART does)", self.file, j.sourceline, SkelWarning, "DART", stacklevel=6)
                joint.name = joint.meta["skel_joint"] = new
            joint_names.add(joint.name)
            if joint.child in joints:
                raise self.fail(f"body {joint.child!r} has two parent joints: {joints[joint.child].name!r} and "
                                f"{joint.name!r}", j)
            joints[joint.child] = joint

        created: dict[str, int] = {}
        order = list(joints)

        def create(child: str, stack: tuple[str, ...]) -> int:
            if child in created:
                return created[child]
            if child in stack:
                raise self.fail(f"joints form a loop through body {child!r}", joints[child].elem)
            joint = joints.get(child)
            if joint is None:  # a parent body with no parent joint: DART roots it with a free joint
                joint = _SkelJoint("root", "free", bodies[child].elem, None, child, np.eye(4),
                                   [_Motion(JointKind.FREE, (0.0, 0.0, 1.0), "", 0)], 6, [{} for _ in range(6)],
                                   {"skel_implicit_root": True})
            parent = -1 if joint.parent is None else create(joint.parent, (*stack, child))
            created[child] = self.attach(builder, joint, bodies, parent, mobile)
            return created[child]

        for child in order:
            create(child, ())

        dropped = [n for n in bodies if n not in created]
        if dropped:
            warnings.warn(f"{self.file}:{el.sourceline}: skeleton {sname!r}: bodies {dropped} are in no joint and "
                          "are dropped (as DART does)", category=SkelWarning, stacklevel=3)

        return {"name": sname, "mobile": mobile, "bodies": [self.qual(n) for n in created]}

    def body(self, el: etree._Element, frame: FloatArray) -> _Body:
        name = el.get("name")
        if not name:
            raise self.fail("<body> needs a name", el)

        meta: dict[str, Any] = {"line": el.sourceline}
        if not self.flag(el, "gravity", True):
            meta["gravity"] = False
            warnings.warn(f"{self.file}:{el.sourceline}: body {name!r} has <gravity>0</gravity>; hebictl applies "
                          "gravity to every body", category=SkelWarning, stacklevel=5)

        shapes: list[Shape] = []
        for role in ("visualization", "collision"):
            for s in el.findall(f"{role}_shape"):
                shapes.append(read_shape(s, role, self.pose(s), self.file, self.base_dir))

        if shapes:
            meta["shapes"] = [s.as_metadata() for s in shapes]

        inertia = Inertia(1.0, (0.0, 0.0, 0.0), dart_default_moment())
        iel = el.find("inertia")
        if iel is not None:
            mass = self.number(iel, "mass")
            if mass is None:
                raise self.fail("<inertia> needs <mass>", iel)
            com = text_floats(iel, "offset", self.file, 3) if iel.find("offset") is not None else np.zeros(3)
            moi = iel.find("moment_of_inertia")
            if moi is not None:
                v = {k: self.number(moi, k, 0.0) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
                I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                              [v["ixz"], v["iyz"], v["izz"]]])
            else:
                from_shapes = moment_from_shapes(shapes, mass, com, self.file)
                I = dart_default_moment() if from_shapes is None else from_shapes
            try:
                inertia = Inertia(mass, tuple(com), I)
            except ModelError as exc:
                raise self.fail(f"body {name!r}: {exc}", iel) from None

        soft = el.find("soft_shape")
        if soft is not None:
            inertia = self.soft(el, soft, name, inertia, meta)

        markers = []
        for m in el.findall("marker"):
            off = text_floats(m, "offset", self.file, 3) if m.find("offset") is not None else np.zeros(3)
            markers.append((m.get("name") or "", off))

        if markers:
            meta["markers"] = markers

        return _Body(name, el, frame @ self.pose(el), inertia, meta)

    def soft(self, el: etree._Element, soft: etree._Element, name: str, inertia: Inertia,
             meta: dict[str, Any]) -> Inertia:
        total = self.number(soft, "total_mass")
        if total is None:
            raise self.fail("<soft_shape> needs <total_mass>", soft)
        T = self.pose(soft)
        meta["soft_shape"] = {"total_mass": total, "pose": T.tolist(), "line": soft.sourceline}
        warnings.warn(f"{self.file}:{soft.sourceline}: body {name!r} is a soft body: loaded rigid, its soft shape's "
                      f"{total} kg as a point mass at the shape origin", category=SkelWarning, stacklevel=6)
        props = geometry.combine([
            geometry.MassProperties(inertia.mass, inertia.com_array, inertia.rotational_array),
            geometry.MassProperties(total, T[:3, 3].copy(), np.zeros((3, 3)))])
        return Inertia(props.mass, tuple(props.com), props.inertia)

    # ------------------------------------------------------------------ joints
    def joint(self, el: etree._Element, bodies: dict[str, _Body]) -> _SkelJoint:
        name = el.get("name")
        jtype = el.get("type")
        if not name or not jtype:
            raise self.fail("<joint> needs name and type attributes", el)

        if jtype not in _JOINT_TYPES:
            raise self.fail(f"joint {name!r} has unknown type {jtype!r}; expected one of {', '.join(_JOINT_TYPES)}", el)

        parent = self.child_text(el, "parent")
        child = self.child_text(el, "child")
        if parent is None or child is None:
            raise self.fail(f"joint {name!r} needs <parent> and <child>", el)

        if parent == "world" and "world" not in bodies:
            parent = None

        for role, b in (("parent", parent), ("child", child)):
            if b is not None and b not in bodies:
                raise self.fail(f"joint {name!r}: {role} body {b!r} does not exist", el)

        motions = self.motions(el, name, jtype)
        ndof = {"free": 6, "ball": 3}.get(jtype, len(motions))
        meta: dict[str, Any] = {"skel_joint": name, "skel_type": jtype, "line": el.sourceline}
        actuator = el.get("actuator")
        if actuator is not None:
            if actuator not in _ACTUATORS:
                raise self.fail(f"joint {name!r} has unknown actuator {actuator!r}; expected "
                                f"{', '.join(_ACTUATORS)}", el)
            meta["actuator"] = actuator

        if jtype == "screw":
            axis = el.find("axis")
            meta["screw_pitch"] = self.number(axis, "pitch", 0.1) if axis is not None else 0.1
            warnings.warn(f"{self.file}:{el.sourceline}: screw joint {name!r} becomes independent rotation and "
                          "translation coordinates (pitch kept in metadata)", category=SkelWarning, stacklevel=5)

        joint = _SkelJoint(name, jtype, el, parent, child, self.pose(el), motions, ndof,
                           [{} for _ in range(ndof)], meta)
        self.dof_properties(joint)
        return joint

    def axis_vec(self, el: etree._Element, tag: str, name: str, required: bool = True) -> tuple[float, float, float]:
        a = el.find(tag)
        if a is None or a.find("xyz") is None:
            if required:
                raise self.fail(f"joint {name!r} needs <{tag}><xyz>", el)
            return (0.0, 0.0, 1.0)
        v = text_floats(a, "xyz", self.file, 3)
        if np.linalg.norm(v) < 1e-12:
            raise self.fail(f"joint {name!r}: <{tag}> is a zero vector", a)
        unit = v / np.linalg.norm(v)
        return float(unit[0]), float(unit[1]), float(unit[2])

    def motions(self, el: etree._Element, name: str, jtype: str) -> list[_Motion]:
        R, P = JointKind.REVOLUTE, JointKind.PRISMATIC

        if jtype == "weld":
            return []

        if jtype in ("revolute", "prismatic"):
            return [_Motion(R if jtype == "revolute" else P, self.axis_vec(el, "axis", name), "", 0)]

        if jtype == "screw":
            a = self.axis_vec(el, "axis", name)
            return [_Motion(R, a, "rot", 0), _Motion(P, a, "trans", 0)]

        if jtype == "universal":
            return [_Motion(R, self.axis_vec(el, "axis", name), "1", 0),
                    _Motion(R, self.axis_vec(el, "axis2", name), "2", 1)]

        if jtype == "euler":
            order = self.child_text(el, "axis_order")
            if order not in ("xyz", "zyx"):
                raise self.fail(f"euler joint {name!r} needs <axis_order> xyz or zyx, got {order!r}", el)
            return [_Motion(R, _UNIT[c], c, i) for i, c in enumerate(order)]

        if jtype == "translational":
            return [_Motion(P, _UNIT[c], c, i) for i, c in enumerate("xyz")]

        if jtype in ("planar", "translational2d"):
            plane = el.find("plane")
            ptype = "xy" if plane is None else plane.get("type", "xy")
            if ptype == "arbitrary":
                t1 = self.axis_vec(plane, "translation_axis1", name)
                t2 = self.axis_vec(plane, "translation_axis2", name)
                s1, s2 = "1", "2"
            elif ptype in _PLANES:
                t1, t2, s1, s2 = _PLANES[ptype]
            else:
                raise self.fail(f"joint {name!r}: unknown plane type {ptype!r}; expected xy, yz, zx or arbitrary",
                                plane)
            out = [_Motion(P, t1, s1, 0), _Motion(P, t2, s2, 1)]
            if jtype == "planar":
                n = np.cross(t1, t2)
                if np.linalg.norm(n) < 1e-12:
                    raise self.fail(f"planar joint {name!r}: translation axes are parallel", plane)
                unit = n / np.linalg.norm(n)
                out.append(_Motion(R, (float(unit[0]), float(unit[1]), float(unit[2])), "rot", 2))
            return out

        if jtype == "ball":
            return [_Motion(JointKind.BALL, (0.0, 0.0, 1.0), "", 0)]

        return [_Motion(JointKind.FREE, (0.0, 0.0, 1.0), "", 0)]

    def dof_properties(self, j: _SkelJoint) -> None:  # noqa: C901 (one branch per attribute of the element it reads)
        """Per-DART-coordinate limits and dynamics from <axis*>, init_pos/init_vel and <dof>."""
        el, n = j.elem, j.ndof
        naxes = {"weld": 0, "ball": 0, "free": 0, "screw": 1}.get(j.type, n)
        for i in range(naxes):
            a = el.find("axis" if i == 0 else f"axis{i + 1}")
            if a is None:
                continue
            d = j.dofs[i]
            if a.find("damping") is not None:
                d["damping"] = self.number(a, "damping")
            dyn = a.find("dynamics")
            if dyn is not None:
                for tag, key in (("damping", "damping"), ("friction", "friction"),
                                 ("spring_rest_position", "spring_rest_position"),
                                 ("spring_stiffness", "spring_stiffness")):
                    if dyn.find(tag) is not None:
                        d[key] = self.number(dyn, tag)
            lim = a.find("limit")
            if lim is not None:
                for tag in ("lower", "upper"):
                    if lim.find(tag) is not None:
                        d[tag] = self.number(lim, tag)

        for tag, key in (("init_pos", "initial_position"), ("init_vel", "initial_velocity")):
            c = el.find(tag)
            if c is not None:
                v = parse_floats(c.text or "", c, "text", self.file, n)
                for i in range(n):
                    j.dofs[i][key] = float(v[i])

        for dof in el.findall("dof"):
            idx = dof.get("local_index")
            if idx is None and n > 1:
                raise self.fail(f"joint {j.name!r} has {n} coordinates: its <dof> needs local_index", dof)
            try:
                i = int(idx) if idx is not None else 0
            except ValueError:
                raise self.fail(f"<dof> local_index {idx!r} is not an integer", dof) from None
            if not 0 <= i < n:
                raise self.fail(f"<dof> local_index {i} out of range for joint {j.name!r} ({n} coordinates)", dof)
            d = j.dofs[i]
            if dof.get("name"):
                d["name"] = dof.get("name")
            for tag in ("position", "velocity", "acceleration", "force"):
                c = dof.find(tag)
                if c is None:
                    continue
                for attr in ("lower", "upper", "initial"):
                    if c.get(attr) is not None:
                        key = {"position": "", "velocity": "velocity_", "acceleration": "acceleration_",
                               "force": "force_"}[tag] + attr
                        if tag == "position" and attr == "initial":
                            key = "initial_position"
                        if tag == "velocity" and attr == "initial":
                            key = "initial_velocity"
                        d[key] = float(parse_floats(c.get(attr), c, attr, self.file, 1)[0])
            for tag in ("damping", "friction", "spring_rest_position", "spring_stiffness"):
                if dof.find(tag) is not None:
                    d[tag] = self.number(dof, tag)

    # ------------------------------------------------------------------ assembly
    def attach(self, builder: ModelBuilder, j: _SkelJoint, bodies: dict[str, _Body], parent: int,
               mobile: bool) -> int:
        child = bodies[j.child]
        parent_pose = np.eye(4) if j.parent is None else bodies[j.parent].pose
        T_pj = inverse_transform(parent_pose) @ child.pose @ j.T_cj
        cname = self.qual(child.name)
        meta = dict(child.meta)
        if not mobile:
            meta["immobile"] = True

        if not mobile or not j.motions:  # weld, or an immobile skeleton welded at its initial configuration
            if j.motions:
                T_pj = T_pj @ self.initial_motion(j)
                meta["welded_joint"] = j.name
            return self.add(builder, cname, parent, T_pj @ inverse_transform(j.T_cj), Joint.fixed(self.qual(j.name)),
                            child.inertia, meta, j)

        # re-express a lone prismatic/revolute joint in the child frame when T_cj allows it
        if len(j.motions) == 1 and j.motions[0].kind in (JointKind.PRISMATIC, JointKind.REVOLUTE):
            m = j.motions[0]
            R, p = j.T_cj[:3, :3], j.T_cj[:3, 3]
            a = R @ np.array(m.axis)
            if m.kind is JointKind.PRISMATIC or np.linalg.norm(np.cross(p, a)) < 1e-12:
                joint = self.make_joint(j, m, (float(a[0]), float(a[1]), float(a[2])), len(j.motions))
                return self.add(builder, cname, parent, T_pj @ inverse_transform(j.T_cj), joint, child.inertia, meta, j)

        identity_cj = np.allclose(j.T_cj, np.eye(4), rtol=0.0, atol=1e-15)
        at, place = parent, T_pj

        for k, m in enumerate(j.motions):
            joint = self.make_joint(j, m, m.axis, len(j.motions))
            last = k == len(j.motions) - 1
            if last and identity_cj:
                return self.add(builder, cname, at, place, joint, child.inertia, meta | self.free_default(j, m), j)
            at = self.add(builder, f"{cname}__{joint.name.rsplit('/', 1)[-1]}", at, place, joint, None,
                          {"synthetic": "skel joint chain"} | self.free_default(j, m), j)
            place = np.eye(4)

        return self.add(builder, cname, at, inverse_transform(j.T_cj), Joint.fixed(), child.inertia, meta, j)

    def initial_motion(self, j: _SkelJoint) -> FloatArray:
        """Joint motion at the joint's initial DART coordinates (used to weld immobile skeletons)."""
        q = [d.get("initial_position", 0.0) for d in j.dofs]
        M = np.eye(4)
        for m in j.motions:
            if m.kind is JointKind.REVOLUTE:
                M = M @ transform(Rotation.from_rotvec(np.array(m.axis) * q[m.dof]).as_matrix())
            elif m.kind is JointKind.PRISMATIC:
                M = M @ transform(None, np.array(m.axis) * q[m.dof])
            elif m.kind is JointKind.BALL:
                M = M @ transform(Rotation.from_rotvec(q[:3]).as_matrix())
            else:
                M = M @ transform(Rotation.from_rotvec(q[:3]).as_matrix(), q[3:6])
        return M

    def free_default(self, j: _SkelJoint, m: _Motion) -> dict[str, Any]:
        if m.kind is not JointKind.FREE:
            return {}
        q = [d.get("initial_position", 0.0) for d in j.dofs]
        if not any(q):
            return {}
        quat = matrix_quat(Rotation.from_rotvec(q[:3]).as_matrix())
        return {"default_position": tuple(q[3:6]), "default_quaternion": tuple(float(x) for x in quat)}

    def make_joint(self, j: _SkelJoint, m: _Motion, axis: tuple[float, float, float], count: int) -> Joint:
        if m.kind in (JointKind.BALL, JointKind.FREE):
            dofs = j.dofs
            d: dict[str, Any] = {}
            name = j.name
        else:
            d = j.dofs[m.dof]
            custom = d.get("name") if count > 1 else None
            name = custom or (j.name if count == 1 else f"{j.name}_{m.suffix}")
            dofs = [d]

        meta = dict(j.meta) | {"skel_dofs": [m.dof] if m.kind not in (JointKind.BALL, JointKind.FREE)
                                else list(range(j.ndof))}
        extras = {k: [dd.get(k) for dd in dofs] for k in ("initial_position", "initial_velocity", "spring_stiffness",
                                                           "spring_rest_position", "velocity_lower", "force_lower",
                                                           "acceleration_lower", "acceleration_upper", "name")
                  if any(dd.get(k) is not None for dd in dofs)}
        meta.update(extras)
        # symmetric bounds hebictl can hold: the tighter side of DART's (lower, upper) pair
        vel = min(abs(d.get("velocity_lower", -math.inf)), abs(d.get("velocity_upper", math.inf)))
        eff = min(abs(d.get("force_lower", -math.inf)), abs(d.get("force_upper", math.inf)))
        try:
            return Joint(self.qual(name), m.kind, axis, lower=d.get("lower", -math.inf), upper=d.get("upper", math.inf),
                         max_velocity=vel, max_effort=eff, damping=d.get("damping", 0.0) or 0.0,
                         friction=d.get("friction", 0.0) or 0.0, metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), j.elem) from None

    def add(self, builder: ModelBuilder, name: str, parent: int, placement: FloatArray, joint: Joint,
            inertia: Inertia | None, meta: dict[str, Any], j: _SkelJoint) -> int:
        try:
            index = builder.add_body(name, parent, placement, joint, inertia, meta)
        except ModelError as exc:
            raise self.fail(str(exc), j.elem) from None
        for mname, off in meta.get("markers", ()):
            self.markers.append((index, self.qual(mname), off))
        return index


def _read(data: bytes, file: str, base_dir: Path | None, skeleton: str | None, strict: bool) -> RobotModel:
    if data.lstrip()[:1] not in (b"<", b""):
        raise FormatError("this is a pre-XML SKEL file (DART 2's 'dofs{ ... }' text format), which is not "
                          "supported; convert it to the XML <skel> format", file, 1)
    return _Reader(file, base_dir, strict).read(parse_xml(data, file), skeleton)


def load_skel(path: str | Path, *, skeleton: str | None = None, strict: bool = False) -> RobotModel:
    """Read a SKEL world file; ``skeleton`` picks one skeleton by name (default: all of them). ``strict=True``
    rejects what DART only tolerates (repeated body or joint names) instead of warning and reading it as DART."""
    p = Path(path)
    with limits.model_folder(p), building(str(p)):
        data = limits.read_regular_file(p, what="SKEL file")  # bounded; never a device or FIFO
        return _read(data, str(p), p.resolve().parent, skeleton, strict)


def load_skel_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     skeleton: str | None = None, strict: bool = False) -> RobotModel:
    """Read SKEL text; relative mesh paths resolve against ``base_dir`` (``strict`` as for :func:`load_skel`)."""
    data = text.encode() if isinstance(text, str) else text
    with building(source_name):
        return _read(data, source_name, Path(base_dir) if base_dir is not None else None, skeleton, strict)
