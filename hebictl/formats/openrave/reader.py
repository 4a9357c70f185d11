"""OpenRAVE XML reader (``<Environment>``, ``<Robot>``, ``<KinBody>``) into a RobotModel.

Semantics follow OpenRAVE's ``xmlreaders-core.cpp`` (there is no installable OpenRAVE to compare
with; the tests check hand-computed rules and published kinematics):

* Tags are case-insensitive. Transforms compound in document order (see
  :mod:`hebictl.formats.openrave.mass`); a ``<Body>``'s ``<offsetfrom>`` pre-multiplies it by that
  body's pose when the body ends. ``<KinBody>``/``<Robot>`` transforms move the bodies they contain.
* ``<Body name>`` with an existing name appends to that body (geometry added, the transform
  compounded onward, the mass of the last ``<Body>`` element wins); ``type="static"`` is metadata.
* ``<Joint type>``: ``hinge``, ``slider``, ``universal``/``hinge2`` (``<axis1>``, ``<axis2>``),
  ``spherical``; ``<anchor>`` and axes are in the ``<offsetfrom>`` body's frame (default: the
  KinBody frame) and taken when the joint ends. ``<limits>``/``<limitsrad>`` are radians (metres for
  sliders), ``<limitsdeg>`` degrees; defaults ±π, sliders ±10 m, unlimited when ``circular``.
  ``maxvel``/``maxveldeg``, ``maxaccel``, ``maxtorque``/``maxforce``, ``weight``, ``resolution``,
  ``initial`` (the joint value at the parsed pose), ``rotorinertia``, ``mimic_pos/vel/accel`` (kept
  in metadata; mimic joints stay independent coordinates), ``enable="false"`` (a passive dummy:
  fixed). The kinematic tree grows from each KinBody's first body through its joints (a joint whose
  second body is nearer the root is inverted); bodies no joint reaches are fixed to the base.
  Hinges about an anchor off the child's origin, universal, hinge2 and spherical joints move a
  massless ``<child>__<joint>`` body at the anchor; universal/hinge2 coordinates are
  ``<joint>_1``/``<joint>_2``; spherical joints are ball joints (OpenRAVE: rotation vector).
* ``file="..."`` on KinBody/Robot/Body includes another file (searched beside the including file,
  then in ``data_dirs``, then ``$OPENRAVE_DATA``); ``prefix="p"`` prefixes the included body and
  joint names (elements written inline beside ``file=`` are not prefixed).
  COLLADA (``.dae``/``.zae``) files are reported as unsupported. ``<modelsdir>`` prefixes mesh paths.
* ``<Manipulator>`` (``base``, ``effector``, its transform, ``direction``, ``joints``/
  ``gripperjoints``, ``closingdirection``, ``iksolver``) becomes an ``"end_effector"`` frame named
  after it (leaf bodies when there is none); ``<AttachedSensor name><link>`` a ``"sensor"`` frame;
  ``<adjacent>``, ``<jointvalues>`` and geometries are metadata.
* An Environment loads every KinBody/Robot as a subtree of the base, names prefixed ``"<body>/"``
  when there are several; ``body="name"`` picks one. Gravity is ``0 0 -9.81`` m/s².
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError, ModelError, OpenraveWarning
from hebictl.formats._xml import parse_xml
from hebictl.formats.building import building
from hebictl.formats.openrave.mass import Geom, apply_transform_tag, manip_transform, numbers, read_geom, read_mass, tag
from hebictl.formats.rotations import inverse_transform, transform
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

_JOINT_TYPES = {"hinge": 1, "slider": 1, "universal": 2, "hinge2": 2, "spherical": 3}


@dataclass
class _Link:
    name: str
    T: np.ndarray
    geoms: list[Geom] = field(default_factory=list)
    mass_el: etree._Element | None = None
    mass_file: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class _RJoint:
    name: str
    type: str
    bodies: tuple[str, str]
    T01: np.ndarray  # body1 in body0 at the parsed pose
    anchor: np.ndarray  # body0 frame
    axes: list[np.ndarray]  # body0 frame
    lower: list[float]
    upper: list[float]
    initial: list[float]
    active: bool
    meta: dict[str, Any]
    line: int | None
    file: str


@dataclass
class _Body:
    """One KinBody/Robot being assembled."""

    name: str
    links: dict[str, _Link] = field(default_factory=dict)
    joints: list[_RJoint] = field(default_factory=list)
    manips: list[dict[str, Any]] = field(default_factory=list)
    sensors: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class _Reader:
    def __init__(self, file: str, base_dir: Path | None, data_dirs: Sequence[Path]) -> None:
        self.file = file
        self.base_dir = base_dir
        env_dirs = [Path(p) for p in os.environ.get("OPENRAVE_DATA", "").split(os.pathsep) if p]
        self.data_dirs = [Path(d) for d in data_dirs] + env_dirs
        self.stack: list[str] = []  # files being included (include cycles)
        # counted against hebictl.limits over the whole load
        self.include_count = 0
        self.expanded = 0  # elements of all included files

    def fail(self, message: str, el: etree._Element | None, file: str | None = None) -> FormatError:
        return FormatError(message, file or self.file, None if el is None else el.sourceline)

    # ------------------------------------------------------------------ files
    def resolve(self, name: str, here: Path | None, el: etree._Element, file: str) -> Path:
        """An included file, searched as OpenRAVE does (beside the file, its parent folder, the data
        folders); a confined load (``confine=True``) keeps it under those folders or the allowed roots."""
        limits.check_path_text(name, file=file, line=el.sourceline, what="file attribute")
        cands = [(here / name) if here else Path(name)] + [d / name for d in ([here.parent] if here else [])
                                                           + self.data_dirs]
        roots = [*([here.parent] if here else []), *self.data_dirs]
        for c in cands:
            if limits.is_regular_file(c):
                return limits.resolve_reference(c, here or Path.cwd(), roots, file=file, line=el.sourceline,
                                                what="file attribute")
        raise self.fail(f"included file {name!r} not found (searched {', '.join(str(c.parent) for c in cands)})",
                        el, file)

    def include(self, el: etree._Element, here: Path | None, file: str) -> tuple[etree._Element, Path, str]:
        name = el.get("file", "")
        if name.lower().endswith((".dae", ".zae")):
            raise self.fail(f"{name!r} is a COLLADA file; hebictl reads OpenRAVE XML only (COLLADA is not "
                            "supported)", el, file)

        path = self.resolve(name, here, el, file)
        key = str(path)
        if key in self.stack:
            raise self.fail(f"file {name!r} includes itself", el, file)

        lim = limits.current()
        if len(self.stack) >= lim.max_include_depth:
            raise limits.exceeded("include depth", len(self.stack) + 1, "max_include_depth", file, el.sourceline)

        self.include_count += 1

        if self.include_count > lim.max_include_count:
            raise limits.exceeded("included files", self.include_count, "max_include_count", file, el.sourceline)

        root = parse_xml(path, str(path))
        # every inclusion is read again: the elements of all of them together are bounded like one file's
        self.expanded += sum(1 for _ in root.iter())

        if self.expanded > lim.max_elements:
            raise limits.exceeded("elements of all included files", self.expanded, "max_elements", file,
                                  el.sourceline)

        return root, path.parent, str(path)

    # ------------------------------------------------------------------ kinbodies
    def kinbody(self, el: etree._Element, body: _Body, here: Path | None, file: str, prefix: str,
                modelsdir: str | None) -> None:
        """Read a <KinBody>/<Robot> element (and its includes) into ``body``."""
        before = set(body.links)
        inner = prefix + (el.get("prefix") or "")
        if not el.get("file"):
            prefix = inner  # with file=, the prefix names the included bodies only (inline ones are written out)

        if el.get("file"):
            root, sub_here, sub_file = self.include(el, here, file)
            self.stack.append(str(Path(sub_file).resolve()))
            roots = [root] if tag(root) in ("kinbody", "robot") else [c for c in root if tag(c) in ("kinbody", "robot")]
            if not roots:
                raise self.fail(f"{sub_file} has no <KinBody> or <Robot>", root, sub_file)
            self.kinbody(roots[0], body, sub_here, sub_file, inner, modelsdir)
            self.stack.pop()

        T = np.eye(4)
        for c in el:
            t = tag(c)
            if apply_transform_tag(T, c, file):
                continue
            if t == "modelsdir":
                modelsdir = (c.text or "").strip()
            elif t == "body":
                self.link(c, body, here, file, prefix, modelsdir)
            elif t == "joint":
                self.joint(c, body, file, prefix)
            elif t in ("kinbody", "robot"):
                self.kinbody(c, body, here, file, prefix, modelsdir)
            elif t == "manipulator":
                body.manips.append(self.manipulator(c, file, prefix))
            elif t == "attachedsensor":
                link = c.find(".//{*}link") if c.find("link") is None else c.find("link")
                body.sensors.append({"name": c.get("name") or "sensor", "link": prefix + (link.text or "").strip()
                                     if link is not None else None, "T": manip_transform(c, file),
                                     "line": c.sourceline})
            elif t == "adjacent":
                body.meta.setdefault("adjacent", []).append([prefix + n for n in (c.text or "").split()])
            elif t == "jointvalues":
                body.meta["jointvalues"] = numbers(c, file).tolist()
            elif t == "mass":
                warnings.warn(f"{file}:{c.sourceline}: <mass> directly in a KinBody is ignored (OpenRAVE reads it "
                              "only inside <Body>)", category=OpenraveWarning, stacklevel=2)

        if not np.allclose(T, np.eye(4)):
            for n in set(body.links) - before:
                body.links[n].T = T @ body.links[n].T

    def link(self, el: etree._Element, body: _Body, here: Path | None, file: str, prefix: str,
             modelsdir: str | None) -> None:
        if el.get("file"):
            root, sub_here, sub_file = self.include(el, here, file)
            self.link(root, body, sub_here, sub_file, prefix, modelsdir)

        name = prefix + (el.get("name") or f"link{len(body.links)}")
        link = body.links.get(name)
        if link is None:
            link = body.links[name] = _Link(name, np.eye(4), meta={"line": el.sourceline, "file": file})

        if el.get("type"):
            link.meta["static"] = el.get("type", "").lower() == "static"

        if el.get("enable", "").lower() in ("false", "0"):
            link.meta["enabled"] = False

        T = link.T.copy()
        offsetfrom = None
        mass_el = None
        for c in el:
            t = tag(c)
            if apply_transform_tag(T, c, file):
                continue
            if t == "offsetfrom":
                ref = prefix + (c.text or "").strip()
                if ref not in body.links:
                    raise self.fail(f"<offsetfrom> names unknown body {ref!r}", c, file)
                offsetfrom = ref
            elif t in ("geom", "geometry"):
                g = read_geom(c, file)
                if modelsdir:
                    for k in ("data", "render", "collision"):
                        if k in g.params:
                            g.params[k]["file"] = str(Path(modelsdir) / g.params[k]["file"])
                link.geoms.append(g)
            elif t == "mass":
                mass_el = c

        link.mass_el, link.mass_file = mass_el, file
        link.T = (body.links[offsetfrom].T @ T) if offsetfrom else T

    def joint(self, el: etree._Element, body: _Body, file: str, prefix: str) -> None:  # noqa: C901 (one branch per attribute of the element it reads)
        jtype = (el.get("type") or "hinge").lower()
        if jtype not in _JOINT_TYPES:
            raise self.fail(f"<Joint> type {el.get('type')!r} is not hinge, slider, universal, hinge2 or spherical",
                            el, file)

        n = _JOINT_TYPES[jtype]
        name = prefix + (el.get("name") or f"J_{len(body.joints)}")
        slider = jtype == "slider"
        lim = 10.0 if slider else (100.0 if jtype == "spherical" else math.pi)
        lower, upper, initial = [-lim] * n, [lim] * n, [0.0] * n
        axes = [np.array(a, dtype=np.float64) for a in ((1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0))][:n] \
            if jtype == "spherical" else [np.array([0.0, 0, 1.0]) for _ in range(n)]
        anchor = np.zeros(3)
        bodies: list[str] = []
        offsetfrom = None
        negate = False
        meta: dict[str, Any] = {"openrave_type": jtype, "line": el.sourceline}
        for key in ("mimic_pos", "mimic_vel", "mimic_accel", "mimic"):
            if el.get(key):
                meta[key] = el.get(key)

        if el.get("circular", "").lower() in ("true", "1"):
            meta["circular"] = True

        active = el.get("enable", "").lower() not in ("false", "0")
        deg = 1.0 if slider else math.pi / 180.0
        for c in el:
            t = tag(c)
            if t == "body":
                bodies.append(prefix + (c.text or "").strip())
            elif t == "offsetfrom":
                offsetfrom = prefix + (c.text or "").strip()
                if offsetfrom not in body.links:
                    raise self.fail(f"<offsetfrom> names unknown body {offsetfrom!r}", c, file)
            elif t == "anchor":
                anchor = numbers(c, file, 3)
            elif t in ("axis", "axis1", "axis2", "axis3"):
                k = {"axis": 0, "axis1": 0, "axis2": 1, "axis3": 2}[t]
                v = numbers(c, file, 3)
                if k < n and jtype != "spherical":
                    if np.linalg.norm(v) < 1e-12:
                        raise self.fail(f"joint {name!r}: <{t}> is a zero vector", c, file)
                    axes[k] = v / np.linalg.norm(v)
            elif t in ("limits", "limitsrad", "limitsdeg"):
                v = numbers(c, file)
                if len(v) != 2 * n:
                    warnings.warn(f"{file}:{c.sourceline}: <{t}> has {len(v)} values, expected {2 * n}; ignored "
                                  "(as OpenRAVE does)", category=OpenraveWarning, stacklevel=2)
                    continue
                f = deg if t == "limitsdeg" else 1.0
                lower = [f * min(v[2 * i], v[2 * i + 1]) for i in range(n)]
                upper = [f * max(v[2 * i], v[2 * i + 1]) for i in range(n)]
            elif t in ("lostop", "histop"):
                negate = True
                v = numbers(c, file, n) * deg
                (lower if t == "lostop" else upper)[:] = list(v)
            elif t in ("maxvel", "maxveldeg", "maxaccel", "maxacceldeg", "maxtorque", "maxforce", "weight",
                       "resolution", "initial", "rotorinertia", "hardmaxvel", "maxinertia"):
                v = numbers(c, file)
                if t.endswith("deg"):
                    v = v * math.pi / 180.0
                if t == "resolution" and not slider:
                    v = v * math.pi / 180.0
                meta[t.replace("deg", "")] = v.tolist()
                if t == "initial":
                    initial = list(v[:n]) + [0.0] * (n - len(v))
            elif t in ("mimic_pos", "mimic_vel", "mimic_accel"):
                meta[t] = (c.text or "").strip()

        if len(bodies) != 2:
            raise self.fail(f"joint {name!r} needs two <body> elements, got {len(bodies)}", el, file)

        for b in bodies:
            if b not in body.links:
                raise self.fail(f"joint {name!r}: unknown body {b!r}", el, file)

        if negate:
            axes = [-a for a in axes]

        if meta.get("circular"):
            lower, upper = [-math.inf] * n, [math.inf] * n

        T0, T1 = body.links[bodies[0]].T, body.links[bodies[1]].T
        Toff = inverse_transform(T0) @ (body.links[offsetfrom].T if offsetfrom else np.eye(4))
        body.joints.append(_RJoint(name, jtype, (bodies[0], bodies[1]), inverse_transform(T0) @ T1,
                                   Toff[:3, :3] @ anchor + Toff[:3, 3], [Toff[:3, :3] @ a for a in axes],
                                   lower, upper, initial, active, meta, el.sourceline, file))

    def manipulator(self, el: etree._Element, file: str, prefix: str) -> dict[str, Any]:
        m: dict[str, Any] = {"name": el.get("name") or "manipulator", "line": el.sourceline, "file": file}
        for c in el:
            t = tag(c)
            if t in ("base", "effector"):
                m[t] = prefix + (c.text or "").strip()
            elif t in ("joints", "gripperjoints"):
                m["gripperjoints"] = [prefix + s for s in (c.text or "").split()]
            elif t in ("direction", "closingdirection", "closingdir"):
                m[t] = numbers(c, file).tolist()
            elif t == "iksolver":
                m["iksolver"] = (c.text or "").strip()

        m["T"] = manip_transform(el, file)

        if "effector" not in m:
            raise self.fail(f"manipulator {m['name']!r} needs <effector>", el, file)

        return m

    # ------------------------------------------------------------------ assembly
    def build(self, builder: ModelBuilder, body: _Body, place: np.ndarray, qual: str) -> None:
        names = list(body.links)
        if not names:
            raise self.fail(f"KinBody {body.name!r} has no bodies", None)

        index: dict[str, int] = {}
        edges: dict[str, list[tuple[_RJoint, bool]]] = {n: [] for n in names}
        for j in body.joints:
            edges[j.bodies[0]].append((j, False))
            edges[j.bodies[1]].append((j, True))

        used: set[int] = set()
        for root in names:
            if root in index:
                continue
            lk = body.links[root]
            index[root] = self.add(builder, qual + root, -1, place @ lk.T, Joint.fixed(), lk, None)
            queue = [root]
            while queue:
                parent = queue.pop(0)
                for j, inverted in edges[parent]:
                    if id(j) in used:
                        continue
                    child = j.bodies[0] if inverted else j.bodies[1]
                    if child in index:
                        warnings.warn(f"{j.file}:{j.line}: joint {j.name!r} closes a kinematic loop; ignored",
                                      category=OpenraveWarning, stacklevel=3)
                        used.add(id(j))
                        continue
                    used.add(id(j))
                    index[child] = self.attach(builder, j, inverted, index[parent], body.links[child], qual)
                    queue.append(child)

        for m in body.manips:
            if m["effector"] not in index:
                raise self.fail(f"manipulator {m['name']!r}: unknown effector {m['effector']!r}", None, m["file"])
            self.frames.append(("end_effector", index[m["effector"]], m["T"], qual + m["name"]))

        for s in body.sensors:
            if s["link"] in index:
                self.frames.append(("sensor", index[s["link"]], s["T"], qual + s["name"]))

    def attach(self, builder: ModelBuilder, j: _RJoint, inverted: bool, parent: int, link: _Link, qual: str) -> int:
        T01, anchor, axes = j.T01, j.anchor, j.axes

        if inverted:
            if j.type in ("universal", "hinge2"):
                raise self.fail(f"joint {j.name!r} ({j.type}) would need to be inverted (its first body is the "
                                "child in the tree); not supported", None, j.file)
            T10 = inverse_transform(T01)
            anchor = T10[:3, :3] @ anchor + T10[:3, 3]
            axes = [-(T10[:3, :3] @ a) for a in axes]
            T01 = T10

        meta = {"openrave_joint": j.name, **j.meta}
        name = qual + j.name
        if not j.active:
            meta["passive"] = True
            return self.add(builder, qual + link.name, parent, T01, Joint.fixed(name), link, meta)

        if j.type == "slider":
            off = transform(None, -j.initial[0] * axes[0])
            joint = self.make(name, JointKind.PRISMATIC, T01[:3, :3].T @ axes[0], j, 0, meta)
            return self.add(builder, qual + link.name, parent, off @ T01, joint, link, None)

        if j.type == "hinge" and np.linalg.norm(np.cross(T01[:3, 3] - anchor, axes[0])) < 1e-12:
            off = transform(geometry_rot(axes[0], -j.initial[0]), None)
            joint = self.make(name, JointKind.REVOLUTE, T01[:3, :3].T @ axes[0], j, 0, meta)
            rel = transform(None, anchor) @ off @ transform(None, -anchor) @ T01
            return self.add(builder, qual + link.name, parent, rel, joint, link, None)

        at, place = parent, transform(None, anchor)

        if j.type == "spherical":
            joint = Joint(name, JointKind.BALL, metadata=meta)
            at = self.add(builder, f"{qual}{link.name}__{j.name}", at, place, joint, None, {"synthetic": "openrave"})
        else:
            for k, axis in enumerate(axes):
                jn = name if len(axes) == 1 else f"{name}_{k + 1}"
                joint = self.make(jn, JointKind.REVOLUTE, axis, j, k, meta)
                off = transform(geometry_rot(axis, -j.initial[k]), None)
                at = self.add(builder, f"{qual}{link.name}__{jn.rsplit('/', 1)[-1]}", at, place @ off, joint, None,
                              {"synthetic": "openrave"})
                place = np.eye(4)

        return self.add(builder, qual + link.name, at, transform(None, -anchor) @ T01, Joint.fixed(), link, None)

    def make(self, name: str, kind: JointKind, axis: np.ndarray, j: _RJoint, k: int, meta: dict[str, Any]) -> Joint:
        def pick(key: str) -> float:
            v = j.meta.get(key)
            return float(v[min(k, len(v) - 1)]) if v else math.inf
        try:
            return Joint(name, kind, tuple(axis), lower=j.lower[k], upper=j.upper[k], max_velocity=pick("maxvel"),
                         max_effort=min(pick("maxtorque"), pick("maxforce")), metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), None, j.file) from None

    def add(self, builder: ModelBuilder, name: str, parent: int, place: np.ndarray, joint: Joint, link: _Link | None,
            meta: dict[str, Any] | None) -> int:
        inertia = None
        md = dict(meta or {})
        if link is not None and not md.get("synthetic"):
            mp = read_mass(link.mass_el, link.geoms, link.mass_file)
            inertia = Inertia(mp.mass, tuple(mp.com), mp.inertia)
            md.update(link.meta)
            if link.geoms:
                md["geoms"] = [g.metadata() for g in link.geoms]
        try:
            return builder.add_body(name, parent, place, joint, inertia, md)
        except ModelError as exc:
            raise self.fail(str(exc), None) from None

    # ------------------------------------------------------------------ document
    def read(self, root: etree._Element, choose: str | None) -> RobotModel:
        top = tag(root)
        self.frames: list[tuple[str, int, np.ndarray, str]] = []
        items: list[tuple[etree._Element, str]] = []
        if top == "environment":
            items = [(c, tag(c)) for c in root if tag(c) in ("kinbody", "robot")]
        elif top in ("kinbody", "robot"):
            items = [(root, top)]
        else:
            raise self.fail(f"expected <Environment>, <Robot> or <KinBody>, found <{root.tag}>", root)

        bodies: list[tuple[_Body, np.ndarray, etree._Element]] = []
        for el, kind in items:
            b = _Body(el.get("name") or "")
            self.stack = [str(Path(self.file).resolve())]
            self.kinbody(el, b, self.base_dir, self.file, "", None)
            if not b.name:
                b.name = f"{kind}{len(bodies)}"
            b.meta["kind"] = kind
            bodies.append((b, np.eye(4), el))

        if choose is not None:
            bodies = [x for x in bodies if x[0].name == choose]
            if not bodies:
                raise self.fail(f"no KinBody or Robot named {choose!r}", root)

        bodies = [x for x in bodies if x[0].links]
        if not bodies:
            raise self.fail("no KinBody or Robot with bodies to load", root)

        multi = len(bodies) > 1
        builder = ModelBuilder(bodies[0][0].name if not multi else Path(self.file).stem, self.file, "openrave")
        meta: dict[str, Any] = {"kinbodies": []}
        for b, place, _ in bodies:
            self.build(builder, b, place, f"{b.name}/" if multi else "")
            meta["kinbodies"].append({"name": b.name, **b.meta,
                                      "manipulators": [{k: v for k, v in m.items() if k != "T"} for m in b.manips]})

        try:
            bs = builder.bodies
            has_child = {x.parent for x in bs}
            for i, x in enumerate(bs):
                if x.inertia.mass > 0:
                    builder.add_frame("com", i, transform(None, x.inertia.com), x.name)
            leaves = [i for i in range(len(bs)) if i not in has_child]
            for i in leaves:
                builder.add_frame("output", i, None, bs[i].name)
            ees = [f for f in self.frames if f[0] == "end_effector"]
            for kind, i, T, name in ees or [("end_effector", i, np.eye(4), bs[i].name) for i in leaves]:
                builder.add_frame(kind, i, T, name)
            for kind, i, T, name in self.frames:
                if kind != "end_effector":
                    builder.add_frame(kind, i, T, name)
            return builder.build(gravity=(0.0, 0.0, -9.81), metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), root) from None


def geometry_rot(axis: np.ndarray, angle: float) -> np.ndarray:
    from hebictl.formats.rotations import axis_angle_matrix

    return axis_angle_matrix(axis, angle) if angle else np.eye(3)


def load_openrave(path: str | Path, *, body: str | None = None, data_dirs: Sequence[str | Path] = ()) -> RobotModel:
    """Read an OpenRAVE XML file (``.env.xml``, ``.robot.xml``, ``.kinbody.xml``)."""
    p = Path(path)
    if p.suffix.lower() in (".dae", ".zae"):
        raise FormatError("COLLADA files are not supported (OpenRAVE XML only)", p)
    with building(str(p)):
        return _Reader(str(p), p.resolve().parent, [Path(d) for d in data_dirs]).read(parse_xml(p, str(p)), body)


def load_openrave_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                         body: str | None = None, data_dirs: Sequence[str | Path] = ()) -> RobotModel:
    """Read OpenRAVE XML text; ``file=`` includes resolve against ``base_dir``."""
    with building(source_name):
        return _Reader(source_name, Path(base_dir) if base_dir is not None else None,
                       [Path(d) for d in data_dirs]).read(parse_xml(text, source_name), body)
