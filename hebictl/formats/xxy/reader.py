"""x_xy XML reader (the format of imt-ring, formerly x_xy): bodies, joints and geoms into a RobotModel.

Semantics follow imt-ring 1.7's ``ring.io.xml.from_xml`` (checked against imt-ring's forward
kinematics and inverse dynamics in the tests):

* Only ring's tags and attributes are allowed (``x_xy model``, ``options gravity dt``,
  ``defaults`` with ``geom``/``body`` attributes mixed into every element lacking them,
  ``worldbody``, ``body``, ``geom``, ``omc``); anything else is an error naming the line.
* ``options gravity`` is the acceleration ring gives the base to emulate gravity, so hebictl's
  gravity is its negation (default ``0 0 9.81`` -> ``0 0 -9.81`` m/s²); ``dt`` is metadata.
* A body's frame is ``parent @ T(pos, rotation) @ joint(q)``. ``euler="x y z"`` is in degrees,
  meaning ``R = Rz(z) Ry(y) Rx(x)``; ``quat="w x y z"`` is ring's *passive* quaternion, so the
  body's rotation is its conjugate; both together are an error. ``pos_min``/``pos_max`` (both or
  neither, not equal) are ring's randomisation range of ``pos``: metadata.
* Joints (x_xy has no joint names: a joint is named after its body; chains are massless bodies
  ``<body>__<coordinate>`` before the body):

  ==============  ====================================================================================
  frozen          fixed
  rx ry rz        revolute about the body's x/y/z axis;  px py pz: prismatic
  spherical       ball joint (hebictl ``qw qx qy qz`` = conjugate of ring's ``q``)
  free            free joint ``x y z qw qx qy qz`` (ring: ``q = [passive quat, position]``,
                  ``qd = [ω, v]`` where hebictl has ``[v, ω]``, both in the body frame)
  p3d             ``<b>_x``, ``<b>_y``, ``<b>_z`` prismatic
  cor             a free joint ``<b>_free`` followed by a p3d chain (``<b>_x`` ...) in its frame
  free_2d         ``<b>_y``, ``<b>_z`` prismatic in the parent frame, then ``<b>_rx`` (ring's q order:
                  angle, y, z)
  saddle          ``<b>_ry`` then ``<b>_rz``
  rr              revolute about the body's ``joint_axes`` entry
  rr_imp          ``<b>_pri`` about the primary axis, then ``<b>_res`` about the residual axis
  rsaddle         ``<b>_1``, ``<b>_2`` about the two axes
  ==============  ====================================================================================

  ring draws the axes of rr, rr_imp and rsaddle at random when it loads a file; hebictl takes them
  from ``joint_axes={"body": axis | (axis1, axis2)}`` and otherwise uses ``(1, 0, 0)`` for rr,
  ``(0, 0, 1)``/``(1, 0, 0)`` for rr_imp and ``(1, 0, 0)``/``(0, 1, 0)`` for rsaddle, with a warning.
* ``damping``, ``armature``, ``spring_stiff`` (one value per velocity coordinate of the joint) and
  ``spring_zero`` (one per position coordinate) go to the joints (damping, armature) and joint
  metadata. hebictl's armature is one value per joint: a spherical or free joint whose axes
  differ gets the largest, with a warning.
* Mass and inertia come only from geoms: ``box`` (``dim`` = full edge lengths), ``sphere``
  (``dim`` = radius), ``cylinder`` and ``capsule`` (``dim`` = radius, length of the cylindrical part,
  along the geom's x axis), each at its ``pos``/``euler``/``quat``; ``xyz`` geoms are massless axes.
  Geoms directly in ``<worldbody>`` are kept in metadata only.
* Frames: ``"com"``, ``"output"`` and ``"end_effector"`` (leaf bodies), and ``"omc"`` for ``<omc>``
  markers (``pos`` offset in the body frame).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError, ModelError, XxyWarning
from hebictl.formats import geometry
from hebictl.formats._xml import elements, local_name, parse_floats, parse_xml
from hebictl.formats.building import add_standard_frames, building
from hebictl.formats.rotations import quat_matrix, rot_x, rot_y, rot_z, transform
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_ATTRS = {
    "x_xy": {"model"}, "options": {"gravity", "dt"}, "defaults": set(), "worldbody": set(),
    "body": {"name", "pos", "pos_min", "pos_max", "quat", "euler", "joint", "armature", "damping", "spring_stiff",
             "spring_zero"},
    "geom": {"type", "mass", "pos", "dim", "quat", "euler", "color", "edge_color"},
    "omc": {"name", "pos_marker", "pos"},
}
R, P = JointKind.REVOLUTE, JointKind.PRISMATIC
_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
#: joint type -> (q width, qd width, chain of (kind, axis, coordinate suffix)); axes None = from joint_axes
_JOINTS: dict[str, tuple[int, int, list[tuple[JointKind, Any, str]]]] = {
    "frozen": (0, 0, []),
    "rx": (1, 1, [(R, _X, "")]), "ry": (1, 1, [(R, _Y, "")]), "rz": (1, 1, [(R, _Z, "")]),
    "px": (1, 1, [(P, _X, "")]), "py": (1, 1, [(P, _Y, "")]), "pz": (1, 1, [(P, _Z, "")]),
    "spherical": (4, 3, [(JointKind.BALL, _Z, "")]),
    "free": (7, 6, [(JointKind.FREE, _Z, "")]),
    "p3d": (3, 3, [(P, _X, "x"), (P, _Y, "y"), (P, _Z, "z")]),
    "cor": (10, 9, [(JointKind.FREE, _Z, "free"), (P, _X, "x"), (P, _Y, "y"), (P, _Z, "z")]),
    "free_2d": (3, 3, [(P, _Y, "y"), (P, _Z, "z"), (R, _X, "rx")]),
    "saddle": (2, 2, [(R, _Y, "ry"), (R, _Z, "rz")]),
    "rr": (1, 1, [(R, None, "")]),
    "rr_imp": (2, 2, [(R, None, "pri"), (R, None, "res")]),
    "rsaddle": (2, 2, [(R, None, "1"), (R, None, "2")]),
}
_DEFAULT_AXES = {"rr": [_X], "rr_imp": [_Z, _X], "rsaddle": [_X, _Y]}
_GEOMS = ("box", "sphere", "cylinder", "capsule", "xyz")
_Z_TO_X = rot_y(math.pi / 2)  # maps the z-axis shapes of hebictl.formats.geometry onto ring's x axis


def xxy_rotation(attrs: Mapping[str, str], elem: etree._Element, file: str) -> np.ndarray:
    """Active rotation matrix of an element's ``euler`` [deg] or passive ``quat`` (identity if neither)."""
    if "quat" in attrs and "euler" in attrs:
        raise FormatError(f"<{local_name(elem)}> has both quat and euler; give one", file, elem.sourceline)
    if "quat" in attrs:
        q = parse_floats(attrs["quat"], elem, "quat", file, 4)
        if np.linalg.norm(q) < 1e-12:
            raise FormatError(f"<{local_name(elem)}> quat is zero", file, elem.sourceline)
        return quat_matrix(q).T  # ring's quaternions are passive
    if "euler" in attrs:
        x, y, z = np.deg2rad(parse_floats(attrs["euler"], elem, "euler", file, 3))
        return rot_z(z) @ rot_y(y) @ rot_x(x)
    return np.eye(3)


class _Reader:
    def __init__(self, file: str, joint_axes: Mapping[str, Any] | None) -> None:
        self.file = file
        self.joint_axes = dict(joint_axes or {})
        self.used_axes: set[str] = set()

    def fail(self, message: str, elem: etree._Element | None) -> FormatError:
        return FormatError(message, self.file, None if elem is None else elem.sourceline)

    def floats(self, attrs: Mapping[str, str], key: str, elem: etree._Element, count: int | tuple[int, ...] | None,
               default: Sequence[float] | None = None) -> FloatArray:
        """The attribute's numbers; callers check ``key in attrs`` first unless they give a default."""
        if key not in attrs:
            if default is None:
                raise self.fail(f"<{local_name(elem)}> needs {key}", elem)
            return np.array(default, dtype=np.float64)
        return parse_floats(attrs[key], elem, key, self.file, count)

    def read(self, root: etree._Element) -> RobotModel:
        if local_name(root) != "x_xy":
            raise self.fail(f"expected an <x_xy> root element, found <{local_name(root)}>", root)

        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            tag = local_name(el)
            if tag not in _ATTRS:
                raise self.fail(f"<{tag}> is not an x_xy element; allowed: {', '.join(sorted(_ATTRS))}", el)
            allowed = _ATTRS[tag]
            for key in el.attrib:
                if key not in allowed:
                    raise self.fail(f"<{tag}> does not take the attribute {key!r}", el)

        self.defaults: dict[str, dict[str, str]] = {"geom": {}, "body": {}}

        for d in root.findall("defaults"):
            for c in elements(d):
                self.defaults.setdefault(local_name(c), {}).update(c.attrib)

        options = root.findall("options")
        if len(options) > 1:
            raise self.fail("more than one <options>", options[1])

        opt = options[0].attrib if options else {}
        ring_gravity = self.floats(opt, "gravity", options[0], 3) if "gravity" in opt else np.array([0, 0, 9.81])
        meta: dict[str, Any] = {"model": root.get("model"), "dt": float(self.floats(opt, "dt", options[0], 1)[0])
                                if "dt" in opt else 0.01}
        worlds = root.findall("worldbody")
        if len(worlds) != 1:
            raise self.fail("an x_xy file needs exactly one <worldbody>", root)

        builder = ModelBuilder(root.get("model") or Path(self.file).stem, self.file, "xxy")
        self.omc: list[tuple[int, str, np.ndarray]] = []
        self.names: set[str] = set()
        world_geoms = [self.geom(g)[1] for g in worlds[0].findall("geom")]
        if world_geoms:
            meta["world_geoms"] = world_geoms

        bodies = worlds[0].findall("body")
        if not bodies:
            raise self.fail("<worldbody> has no <body>", worlds[0])

        for b in bodies:
            self.body(builder, b, -1)

        unused = set(self.joint_axes) - self.used_axes
        if unused:
            raise FormatError(f"joint_axes names bodies without rr/rr_imp/rsaddle joints: {sorted(unused)}", self.file)

        try:
            add_standard_frames(builder)
            for body, name, off in self.omc:
                builder.add_frame("omc", body, transform(None, off), name)
            return builder.build(gravity=-ring_gravity, metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), root) from None

    def attrs(self, el: etree._Element) -> dict[str, str]:
        return {**self.defaults.get(local_name(el), {}), **el.attrib}

    def geom(self, el: etree._Element) -> tuple[geometry.MassProperties | None, dict[str, Any]]:
        a = self.attrs(el)
        gtype = a.get("type")
        if gtype not in _GEOMS:
            raise self.fail(f"<geom> type {gtype!r} is not one of {', '.join(_GEOMS)}", el)

        meta: dict[str, Any] = {"type": gtype, "line": el.sourceline}
        for key in ("color", "edge_color"):
            if key in a:
                meta[key] = a[key]

        if gtype == "xyz":
            dim = self.floats(a, "dim", el, 1, (1.0,))
            meta["dim"] = float(dim[0])
            return None, meta

        if "mass" not in a:
            raise self.fail(f"<geom type={gtype!r}> needs a mass", el)

        mass = float(self.floats(a, "mass", el, 1)[0])
        if mass < 0:
            raise self.fail("<geom> mass must not be negative", el)

        n = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}[gtype]

        if "dim" not in a:
            raise self.fail(f"<geom type={gtype!r}> needs dim", el)

        dim = self.floats(a, "dim", el, n)
        if np.any(dim <= 0):
            raise self.fail(f"<geom type={gtype!r}> dimensions must be positive", el)

        pos = self.floats(a, "pos", el, 3, (0.0, 0.0, 0.0))
        Rg = xxy_rotation(a, el, self.file)

        if gtype == "box":
            I = geometry.box_inertia(mass, *(0.5 * dim))
        elif gtype == "sphere":
            I = geometry.sphere_inertia(mass, dim[0])
        else:
            f = geometry.cylinder_inertia if gtype == "cylinder" else geometry.capsule_inertia
            I = _Z_TO_X @ f(mass, dim[0], 0.5 * dim[1]) @ _Z_TO_X.T

        meta.update(mass=mass, dim=dim.tolist(), pose=transform(Rg, pos).tolist())
        return geometry.MassProperties(mass, pos, Rg @ I @ Rg.T), meta

    def body(self, builder: ModelBuilder, el: etree._Element, parent: int) -> None:  # noqa: C901 (one branch per attribute of the element it reads)
        a = self.attrs(el)
        name = a.get("name")
        if not name:
            raise self.fail("<body> needs a name", el)

        if name in self.names:
            raise self.fail(f"duplicate body name {name!r}", el)

        self.names.add(name)
        jtype = a.get("joint")
        if jtype not in _JOINTS:
            raise self.fail(f"body {name!r} has unknown joint type {jtype!r}; expected one of "
                            f"{', '.join(_JOINTS)}", el)

        nq, nv, chain = _JOINTS[jtype]
        pos = self.floats(a, "pos", el, 3, (0.0, 0.0, 0.0))
        meta: dict[str, Any] = {"line": el.sourceline, "xxy_joint": jtype}

        if ("pos_min" in a) != ("pos_max" in a):
            raise self.fail(f"body {name!r} has only one of pos_min and pos_max; give both or neither", el)

        if "pos_min" in a:
            lo, hi = self.floats(a, "pos_min", el, 3), self.floats(a, "pos_max", el, 3)
            if np.array_equal(lo, hi):
                raise self.fail(f"body {name!r}: pos_min equals pos_max; use pos instead", el)
            meta["pos_range"] = (lo.tolist(), hi.tolist())

        place = transform(xxy_rotation(a, el, self.file), pos)
        props = [self.geom(g) for g in el.findall("geom")]
        mp = geometry.combine([p for p, _ in props if p is not None])
        inertia = Inertia(mp.mass, tuple(mp.com), mp.inertia)

        if props:
            meta["geoms"] = [m for _, m in props]

        dyn = {}
        for key, width in (("damping", nv), ("armature", nv), ("spring_stiff", nv), ("spring_zero", nq)):
            if key in a:
                v = self.floats(a, key, el, None)
                if len(v) != width:
                    raise self.fail(f"body {name!r}: {key} needs {width} value(s) for a {jtype} joint, got {len(v)}",
                                    el)
                dyn[key] = v

        # joints without free axes (not in _DEFAULT_AXES) name every axis in their chain
        axes = self.custom_axes(name, jtype, el) if jtype in _DEFAULT_AXES else []
        at, k_axis, vi = parent, 0, 0

        for k, (kind, axis, suffix) in enumerate(chain):
            if axis is None:
                axis, k_axis = axes[k_axis], k_axis + 1
            jname = f"{name}_{suffix}" if suffix else name
            width = kind.nv
            jm: dict[str, Any] = {"xxy_joint": jtype, "xxy_body": name}
            for key, v in dyn.items():
                if key != "spring_zero":
                    jm[key] = v[vi:vi + width].tolist()
            if "spring_zero" in dyn:
                jm["spring_zero_all"] = dyn["spring_zero"].tolist()
            damping = float(dyn["damping"][vi]) if "damping" in dyn and width == 1 else 0.0
            if "damping" in dyn and width > 1:
                jm["damping_per_axis"] = dyn["damping"][vi:vi + width].tolist()
            armature = 0.0
            if "armature" in dyn:  # hebictl's armature is one value per joint (each chain coordinate is one)
                values = dyn["armature"][vi:vi + width]
                armature = float(values[0])
                if np.ptp(values) > 0:
                    warnings.warn(f"{self.file}:{el.sourceline}: body {name!r}: armature {values.tolist()} differs "
                                  f"between the {jtype} joint's axes; hebictl uses {float(values.max())} on each",
                                  category=XxyWarning, stacklevel=5)
                    armature = float(values.max())
            try:
                joint = Joint(jname, kind, axis, damping=damping, armature=armature, metadata=jm)
            except ModelError as exc:
                raise self.fail(f"body {name!r}: {exc}", el) from None
            vi += width
            last = k == len(chain) - 1
            if last:
                at = self.add(builder, name, at, place, joint, inertia, meta, el)
            else:
                at = self.add(builder, f"{name}__{suffix}", at, place, joint, None, {"synthetic": "x_xy joint chain"},
                              el)
            place = np.eye(4)

        if not chain:
            at = self.add(builder, name, parent, place, Joint.fixed(name), inertia, meta, el)

        for o in el.findall("omc"):
            oa = o.attrib
            self.omc.append((at, oa.get("name", name), self.floats(oa, "pos", o, 3, (0.0, 0.0, 0.0))))

        for child in el.findall("body"):
            self.body(builder, child, at)

    def custom_axes(self, name: str, jtype: str, el: etree._Element) -> list[tuple[float, float, float]]:
        n = len(_DEFAULT_AXES[jtype])
        given = self.joint_axes.get(name)
        if given is None:
            warnings.warn(f"{self.file}:{el.sourceline}: body {name!r} has a {jtype} joint, whose axes imt-ring draws "
                          f"at random; using {_DEFAULT_AXES[jtype]} (pass joint_axes={{{name!r}: ...}})",
                          category=XxyWarning, stacklevel=5)
            return list(_DEFAULT_AXES[jtype])
        self.used_axes.add(name)
        arr = np.asarray(given, dtype=np.float64).reshape(-1, 3) if np.size(given) == 3 * n else None
        if arr is None or arr.shape[0] != n or np.any(np.linalg.norm(arr, axis=1) < 1e-12):
            raise self.fail(f"joint_axes[{name!r}] must give {n} non-zero axis/axes of 3 numbers for a {jtype} joint",
                            el)
        return [(float(v[0]), float(v[1]), float(v[2])) for v in arr]

    def add(self, builder: ModelBuilder, name: str, parent: int, place: np.ndarray, joint: Joint,
            inertia: Inertia | None, meta: dict[str, Any], el: etree._Element) -> int:
        try:
            return builder.add_body(name, parent, place, joint, inertia, meta)
        except ModelError as exc:
            raise self.fail(str(exc), el) from None


def load_xxy(path: str | Path, *, joint_axes: Mapping[str, Any] | None = None) -> RobotModel:
    """Read an x_xy file; ``joint_axes`` fixes the axes of rr/rr_imp/rsaddle joints by body name."""
    p = Path(path)
    with building(str(p)):
        return _Reader(str(p), joint_axes).read(parse_xml(p, str(p)))


def load_xxy_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                    joint_axes: Mapping[str, Any] | None = None) -> RobotModel:
    """Read x_xy text (``base_dir`` is accepted for symmetry with the other readers; x_xy has no files)."""
    with building(source_name):
        return _Reader(source_name, joint_axes).read(parse_xml(text, source_name))

