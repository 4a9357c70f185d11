"""MJCF reader: the body tree (bodies, joints, sites, actuators, flexcomps) into a RobotModel.

The documents (includes, defaults, compiler options, attribute access) are
:mod:`hebictl.formats.mjcf.document`'s; inertia from geoms and meshes is
:mod:`hebictl.formats.mjcf.mass`'s. What the reader follows is listed in :mod:`hebictl.formats.mjcf`.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError, MjcfWarning, ModelError
from hebictl.formats import geometry
from hebictl.formats._xml import elements, local_name, parse_xml
from hebictl.formats.building import add_standard_frames, building
from hebictl.formats.mjcf.actuators import ActuatorReader
from hebictl.formats.mjcf.document import (
    BODY_CHILDREN,
    FLEX_FREE,
    FRAMES_TEXT,
    JOINTS_TEXT,
    SRC,
    UNSUPPORTED,
    Ctx,
    Doc,
    Item,
    mjcf_bool,
)
from hebictl.formats.mjcf.flexcomp import Flexcomp, parse_ints, vertex_bodies
from hebictl.formats.rotations import (
    MJMINVAL,
    axis_angle_matrix,
    identity4,
    inverse_transform,
    matrix_quat,
    transform,
)
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


class _Reader(ActuatorReader):
    """One read of an MJCF file: the body tree walked in MuJoCo's order into the model being built."""

    # ------------------------------------------------------------------ body content
    def content(self, parent: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
        """Children of a body (or worldbody), with frames, replicates and attachments flattened."""
        budget = limits.current().max_elements
        for el in elements(parent):
            # replicates multiply elements: the expanded tree is bounded like the parsed one
            self.expanded = getattr(self, "expanded", 0) + 1
            if self.expanded > budget:
                raise limits.exceeded("elements after <replicate>/<attach> expansion", self.expanded, "max_elements",
                                      *self.where(el))
            tag = local_name(el)
            if tag in UNSUPPORTED:
                raise self.fail(f"unsupported MJCF element <{tag}>: {UNSUPPORTED[tag]}", el)
            if tag not in BODY_CHILDREN:
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
                yield Item(tag, el, T, ctx)

    def replicate(self, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
        count_text = el.get("count")
        # ASCII digits only: "²".isdigit() is True but int("²") raises
        digits_text = (count_text or "").strip()
        if not (digits_text.isascii() and digits_text.isdigit()) or len(digits_text) > 12 or int(digits_text) < 1:
            raise self.fail(f"replicate needs a positive integer count, got {count_text!r}", el)
        count = limits.check_count(int(digits_text), "max_replicate_count", "replicate count", *self.where(el))
        # nested replicates multiply: count every copy made in this load against the same limit
        self.replicated = getattr(self, "replicated", 0) + count
        if self.replicated > limits.current().max_replicate_count:
            raise limits.exceeded("copies made by <replicate> (nested replicates multiply)", self.replicated,
                                  "max_replicate_count", *self.where(el))
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
            if not np.all(np.isfinite(Ti)):
                raise self.fail(f"replicate offset {el.get('offset')!r} repeated {count} times overflows", el)

    def ints(self, el: etree._Element, attr: str, count: int | None = None) -> tuple[int, ...]:
        """Integers written as numbers (``count="3 4 5"``), each whole and within ±2**31 like MuJoCo's int."""
        values = self.floats(el, el.get(attr, ""), attr, count)
        if any(not (abs(v) < 2**31 and v == int(v)) for v in values):
            raise self.fail(f"<{local_name(el)}> attribute {attr} needs integers (|value| < 2**31), got "
                            f"{el.get(attr)!r}", el)
        return parse_ints(values)

    def flexcomp(self, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:  # noqa: C901 (one branch per attribute of the element it reads)
        """The vertex bodies of a ``<flexcomp>``, as ``<body>`` elements made here (see flexcomp.py)."""
        fields: dict[str, Any] = {"name": el.get("name", "")}
        for attr in ("type", "dof"):
            if el.get(attr) is not None:
                fields[attr] = el.get(attr)
        for attr, count in (("count", 3), ("dim", 1)):
            if el.get(attr) is not None:
                v = self.ints(el, attr, count)
                fields[attr] = v if count > 1 else v[0]
        if "count" in fields:
            n = 1
            for c in fields["count"]:
                n *= max(c, 1)
            limits.check_count(n, "max_flexcomp_count", "flexcomp points (product of count)", *self.where(el))
        for attr, width in (("spacing", 3), ("scale", 3), ("mass", 1), ("inertiabox", 1), ("point", None)):
            if el.get(attr) is not None:
                numbers = tuple(float(x) for x in self.floats(el, el.get(attr, ""), attr, width))
                fields[attr] = numbers[0] if width == 1 else numbers
        if el.get("element") is not None:
            fields["element"] = self.ints(el, "element")
        if el.get("rigid") is not None:
            fields["rigid"] = mjcf_bool(el.get("rigid", ""), "rigid", self, el)
        if el.get("file") is not None and el.get("type") not in ("mesh", "gmsh"):
            raise self.fail("flexcomp file is only for types mesh and gmsh", el)
        pins: dict[str, list[int]] = {"id": [], "range": [], "grid": [], "gridrange": []}
        for pin in el.iterchildren("pin"):
            for key in pins:
                if pin.get(key) is not None:
                    pins[key] += self.ints(pin, key)
        spec = Flexcomp(**fields, pin_id=tuple(pins["id"]), pin_range=tuple(pins["range"]),
                                      pin_grid=tuple(pins["grid"]), pin_gridrange=tuple(pins["gridrange"]))
        pos = self.vec(el, "flexcomp", "pos", None, (0.0, 0.0, 0.0))
        try:
            # enclosing frames move the flexcomp's pose; its bodies keep the parent body's orientation (MuJoCo)
            R = T[:3, :3] @ self.rotation(el, "flexcomp", ctx)
            bodies, n_pinned = vertex_bodies(spec, R, T[:3, :3] @ pos + T[:3, 3])
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
                body.set(FLEX_FREE, "1")
            for child in body.iter():
                child.sourceline = el.sourceline
                if el.get(SRC) is not None or self.where(el)[0] != self.file:
                    child.set(SRC, self.where(el)[0])
            yield Item("body", body, np.eye(4), ctx)

    def attach(self, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
        model_name = el.get("model")
        # without a model, a frame of this very document is copied
        doc = ctx.doc if model_name is None else self.child_doc(el, model_name, ctx.doc)
        prefix = el.get("prefix", "")
        sub = Ctx(doc, None, ctx.prefix + prefix, ctx.suffix)
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
            yield Item("body", found, T, sub)
        else:
            self.check_attrs(found, "frame")
            inner = replace(sub, childclass=found.get("childclass") or sub.childclass)
            yield from self.content(found, T @ self.pose(found, "frame", sub), inner)

    # ------------------------------------------------------------------ bodies
    def read(self, doc: Doc) -> RobotModel:
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
        ctx = Ctx(doc)
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
                          f"{self.missing_meshes[0]}); kinematics and dynamics do not need them",
                          category=MjcfWarning, stacklevel=4)
        return builder.build(gravity=np.zeros(3) if disabled else gravity,
                             metadata={"gravity_disabled": disabled, "world_geoms": self.world_geoms,
                                       "missing_meshes": self.missing_meshes,
                                       "option_gravity": gravity.tolist(), "compiler_angle":
                                       "degree" if doc.compiler.angle != 1.0 else "radian"})

    def world_content(self, builder: ModelBuilder, wb: etree._Element, T: FloatArray, ctx: Ctx) -> None:
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

    def register(self, kind: str, item: Item, name: str | None = None) -> str:
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

    def site(self, item: Item, body: int) -> None:
        name = self.register("site", item)
        cls = self.cls(item.elem, item.ctx)
        T = item.T @ self.shape_pose(item.elem, "site", item.ctx, cls)[0]
        self.site_frames.append((name, T, body))

    def body(self, builder: ModelBuilder, item: Item, parent: int, top: bool) -> float:  # noqa: C901 (one branch per attribute of the element it reads)
        """Add one MuJoCo body (and its subtree); return the mass welded to its parent (0 if it moves)."""
        el, ctx = item.elem, item.ctx
        if el.get("childclass") and el.get("childclass") not in ctx.doc.defaults:
            raise self.fail(f"unknown default class name {el.get('childclass')!r}", el)
        name = self.register("body", item)
        sub = replace(ctx, childclass=el.get("childclass") or ctx.childclass)
        P = item.T @ self.pose(el, "body", ctx)
        items = list(self.content(el, identity4(), sub))
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
        if kinds and any(i.tag == "body" and i.elem.get(FLEX_FREE) for i in items):
            raise self.fail(f"body {name!r} has joints but no flex vertices/nodes are pinned to it", el)
        align = identity4()
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
            if not np.all(np.isfinite(pose)):
                raise self.fail(f"pose of body {name!r} is not finite (positions too large?)", el)
            meta["default_position"] = tuple(float(v) for v in pose[:3, 3])
            meta["default_quaternion"] = tuple(float(v) for v in matrix_quat(pose[:3, :3]))
            index = self.add(builder, name, parent, identity4(), spec["joint"], inertia, meta, el)
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
                L = identity4()
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

    def joint_spec(self, item: Item, top: bool) -> dict[str, Any]:
        """One joint: hebictl Joint, its anchor in the body frame and the placement offset for ``ref``."""
        el, ctx = item.elem, item.ctx
        comp = ctx.doc.compiler
        name = self.register("joint", item)
        extra = self.joint_extras.get(name, {})
        if item.tag == "freejoint":
            align = el.get("align", "auto")
            return {"kind": JointKind.FREE, "anchor": np.zeros(3), "offset": identity4(),
                    "align": comp.alignfree if align == "auto" else mjcf_bool(align, "align", self, el),
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
            return {"kind": kind, "anchor": np.zeros(3), "offset": identity4(), "align": comp.alignfree,
                    "joint": Joint(name, kind, metadata=meta,
                                   damping=self.num(el, "joint", "damping", ctx, 0.0, cls),
                                   friction=self.num(el, "joint", "frictionloss", ctx, 0.0, cls),
                                   armature=self.num(el, "joint", "armature", ctx, 0.0, cls))}
        # a joint inside <frame> elements has its anchor and axis moved by them
        anchor = item.T[:3, :3] @ self.vec(el, "joint", "pos", ctx, (0.0, 0.0, 0.0), 3, cls) + item.T[:3, 3]
        axis = item.T[:3, :3] @ self.vec(el, "joint", "axis", ctx, (0.0, 0.0, 1.0), 3, cls)
        ax, ay, az = axis.tolist()  # scalar norm: numpy's overhead per joint was a large part of a load
        if kind is not JointKind.BALL and math.sqrt(ax * ax + ay * ay + az * az) < MJMINVAL:
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
            is_limited = mjcf_bool(limited, "limited", self, el)
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
            joint = Joint(name, kind, (ax, ay, az) if kind is not JointKind.BALL else (0.0, 0.0, 1.0),
                          lower=lower, upper=upper, max_effort=max_effort,
                          max_velocity=extra.get("max_velocity", math.inf),
                          damping=self.num(el, "joint", "damping", ctx, 0.0, cls),
                          friction=self.num(el, "joint", "frictionloss", ctx, 0.0, cls),
                          armature=self.num(el, "joint", "armature", ctx, 0.0, cls), metadata=meta)
        except ModelError as exc:
            raise self.fail(str(exc), el) from None
        offset = identity4()
        if ref and kind is JointKind.REVOLUTE:
            offset = transform(axis_angle_matrix(joint.axis, -ref))
        elif ref and kind is JointKind.PRISMATIC:
            offset = transform(None, -ref * np.array(joint.axis))
        if kind is JointKind.PRISMATIC:
            anchor = np.zeros(3)  # a slide's anchor does not move the body
        return {"kind": kind, "anchor": anchor, "offset": offset, "joint": joint, "align": False}

    def geom_meta(self, item: Item) -> dict[str, Any]:
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
                path = self.asset_path(mesh.get("file", ""), ctx.doc, mesh=True, el=mesh)
                found = path is not None and limits.is_regular_file(path)
                out["mesh_path"] = str(path) if found else None
                if not found and mesh.get("file") not in self.missing_meshes:
                    self.missing_meshes.append(mesh.get("file", ""))
        return out

def _read(source: str | bytes | Path, file: str, base_dir: Path | None) -> RobotModel:
    with building(file):  # size="1e308": one FormatError naming the body, no numpy warnings first
        return _read_model(source, file, base_dir)


def _read_model(source: str | bytes | Path, file: str, base_dir: Path | None) -> RobotModel:
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
