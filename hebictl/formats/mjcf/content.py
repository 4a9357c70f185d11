"""MJCF body content: the children of a body with ``<frame>``, ``<replicate>``, ``<attach>`` and ``<flexcomp>``
expanded in document order, as MuJoCo numbers what they make.

Each child comes out as an :class:`~hebictl.formats.mjcf.context.Item` posed in the body frame;
expansion is counted against ``max_elements`` and ``max_replicate_count`` over the whole read
(nested replicates multiply).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.formats._xml import elements, local_name
from hebictl.formats.mjcf.attributes import check_attrs, floats, ints, mjcf_bool
from hebictl.formats.mjcf.context import FLEX_FREE, SRC, Ctx, Item, ReadContext
from hebictl.formats.mjcf.defaults import vector
from hebictl.formats.mjcf.document import attached_document
from hebictl.formats.mjcf.flexcomp import Flexcomp, vertex_bodies
from hebictl.formats.mjcf.poses import orientation, pose, rotation
from hebictl.formats.rotations import transform

BODY_CHILDREN = {"inertial", "joint", "freejoint", "geom", "site", "camera", "light", "body", "frame", "flexcomp",
                 "replicate", "attach", "plugin"}
UNSUPPORTED = {"composite": "it generates bodies procedurally (cables, particles, grids)"}


def body_content(rc: ReadContext, parent: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
    """Children of a body (or worldbody), with frames, replicates and attachments flattened."""
    budget = limits.current().max_elements
    for el in elements(parent):
        # replicates multiply elements: the expanded tree is bounded like the parsed one
        rc.expanded += 1
        if rc.expanded > budget:
            raise limits.exceeded("elements after <replicate>/<attach> expansion", rc.expanded, "max_elements",
                                  *rc.where(el))
        tag = local_name(el)
        if tag in UNSUPPORTED:
            raise rc.fail(f"unsupported MJCF element <{tag}>: {UNSUPPORTED[tag]}", el)
        if tag not in BODY_CHILDREN:
            raise rc.fail(f"unrecognized element <{tag}> in <{local_name(parent)}>", el)
        check_attrs(rc, el, tag)
        if tag == "frame":
            sub = replace(ctx, childclass=el.get("childclass") or ctx.childclass)
            if el.get("childclass") and el.get("childclass") not in ctx.doc.defaults:
                raise rc.fail(f"unknown default class name {el.get('childclass')!r}", el)
            yield from body_content(rc, el, T @ pose(rc, el, "frame", ctx), sub)
        elif tag == "replicate":
            yield from replicate(rc, el, T, ctx)
        elif tag == "attach":
            yield from attach(rc, el, T, ctx)
        elif tag == "flexcomp":
            yield from flexcomp(rc, el, T, ctx)
        elif tag in ("camera", "light", "plugin"):
            continue
        else:
            yield Item(tag, el, T, ctx)


def replicate(rc: ReadContext, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
    """``count`` copies of the content, copy ``i`` posed by the ``i``-th power of the offset/euler step and
    its names suffixed with ``sep`` and a zero-padded ``i`` (MuJoCo's order and names)."""
    count_text = el.get("count")
    # ASCII digits only: "²".isdigit() is True but int("²") raises
    digits_text = (count_text or "").strip()
    if not (digits_text.isascii() and digits_text.isdigit()) or len(digits_text) > 12 or int(digits_text) < 1:
        raise rc.fail(f"replicate needs a positive integer count, got {count_text!r}", el)

    count = limits.check_count(int(digits_text), "max_replicate_count", "replicate count", *rc.where(el))
    # nested replicates multiply: count every copy made in this load against the same limit
    rc.replicated += count

    if rc.replicated > limits.current().max_replicate_count:
        raise limits.exceeded("copies made by <replicate> (nested replicates multiply)", rc.replicated,
                              "max_replicate_count", *rc.where(el))

    offset = vector(rc, el, "replicate", "offset", None, (0.0, 0.0, 0.0))
    R = orientation(rc, el, "euler", el.get("euler"), ctx.doc.compiler) if el.get("euler") else np.eye(3)
    step = transform(R, offset)
    sep = el.get("sep", "")
    digits = len(str(count))
    Ti = np.eye(4)
    for i in range(count):
        sub = replace(ctx, suffix=f"{sep}{i:0{digits}d}{ctx.suffix}")
        yield from body_content(rc, el, T @ Ti, sub)
        Ti = Ti @ step
        if not np.all(np.isfinite(Ti)):
            raise rc.fail(f"replicate offset {el.get('offset')!r} repeated {count} times overflows", el)


def _flexcomp_spec(rc: ReadContext, el: etree._Element) -> Flexcomp:
    """The attributes and ``<pin>`` children of a ``<flexcomp>`` that decide its vertex bodies."""
    fields: dict[str, Any] = {"name": el.get("name", "")}
    for attr in ("type", "dof"):
        if el.get(attr) is not None:
            fields[attr] = el.get(attr)

    for attr, count in (("count", 3), ("dim", 1)):
        if el.get(attr) is not None:
            v = ints(rc, el, attr, count)
            fields[attr] = v if count > 1 else v[0]

    if "count" in fields:
        n = 1
        for c in fields["count"]:
            n *= max(c, 1)
        limits.check_count(n, "max_flexcomp_count", "flexcomp points (product of count)", *rc.where(el))

    for attr, width in (("spacing", 3), ("scale", 3), ("mass", 1), ("inertiabox", 1), ("point", None)):
        if el.get(attr) is not None:
            numbers = tuple(float(x) for x in floats(rc, el, el.get(attr, ""), attr, width))
            fields[attr] = numbers[0] if width == 1 else numbers

    if el.get("element") is not None:
        fields["element"] = ints(rc, el, "element")

    if el.get("rigid") is not None:
        fields["rigid"] = mjcf_bool(el.get("rigid", ""), "rigid", rc, el)

    if el.get("file") is not None and el.get("type") not in ("mesh", "gmsh"):
        raise rc.fail("flexcomp file is only for types mesh and gmsh", el)

    pins: dict[str, list[int]] = {"id": [], "range": [], "grid": [], "gridrange": []}
    for pin in el.iterchildren("pin"):
        for key in pins:
            if pin.get(key) is not None:
                pins[key] += ints(rc, pin, key)

    return Flexcomp(**fields, pin_id=tuple(pins["id"]), pin_range=tuple(pins["range"]),
                    pin_grid=tuple(pins["grid"]), pin_gridrange=tuple(pins["gridrange"]))


def flexcomp(rc: ReadContext, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
    """The vertex bodies of a ``<flexcomp>``, as ``<body>`` elements made here (see flexcomp.py)."""
    spec = _flexcomp_spec(rc, el)
    pos = vector(rc, el, "flexcomp", "pos", None, (0.0, 0.0, 0.0))
    try:
        # enclosing frames move the flexcomp's pose; its bodies keep the parent body's orientation (MuJoCo)
        R = T[:3, :3] @ rotation(rc, el, "flexcomp", ctx)
        bodies, n_pinned = vertex_bodies(spec, R, T[:3, :3] @ pos + T[:3, 3])
    except ValueError as exc:
        what = "unsupported <flexcomp>: " if "not supported" in str(exc) else "<flexcomp>: "
        raise rc.fail(what + str(exc), el) from None

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
            if el.get(SRC) is not None or rc.where(el)[0] != rc.file:
                child.set(SRC, rc.where(el)[0])
        yield Item("body", body, np.eye(4), ctx)


def attach(rc: ReadContext, el: etree._Element, T: FloatArray, ctx: Ctx) -> Iterator[Item]:
    """A body, a frame or the whole world of a model asset (or of this document), names prefixed."""
    model_name = el.get("model")
    # without a model, a frame of this very document is copied
    doc = ctx.doc if model_name is None else attached_document(rc, el, model_name, ctx.doc)
    prefix = el.get("prefix", "")
    sub = Ctx(doc, None, ctx.prefix + prefix, ctx.suffix)
    target = el.get("body") or el.get("frame")
    tag = "body" if el.get("body") else "frame"

    if target is None:  # the whole world of the model, as if in a frame
        for wb in doc.root.iterchildren("worldbody"):
            yield from body_content(rc, wb, T, sub)
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
        raise rc.fail(f"<attach>: {tag} {target!r} not found in model {model_name!r}", el)

    # the attached element keeps the childclass its own document gave it
    for anc in found.iterancestors():
        if anc.get("childclass"):
            sub = replace(sub, childclass=anc.get("childclass"))
            break

    if tag == "body":
        yield Item("body", found, T, sub)
    else:
        check_attrs(rc, found, "frame")
        inner = replace(sub, childclass=found.get("childclass") or sub.childclass)
        yield from body_content(rc, found, T @ pose(rc, found, "frame", sub), inner)
