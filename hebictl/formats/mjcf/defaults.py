"""MJCF default classes: the ``<default>`` tree, and an attribute resolved through an element's class.

Nested classes copy their parent's values, then override; an element uses its ``class``, else
the nearest ``childclass`` of an enclosing body or frame (carried in :class:`Ctx`), else ``main``.
"""

from __future__ import annotations

import copy
from typing import overload

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.formats._xml import elements, local_name
from hebictl.formats.mjcf.attributes import ACTUATORS, ORIENT, floats
from hebictl.formats.mjcf.context import Ctx, Doc, ReadContext


def read_defaults(rc: ReadContext, el: etree._Element, doc: Doc, name: str, parent: str | None) -> None:
    """One ``<default>`` (and its nested classes) into ``doc.defaults``: class -> element -> attributes."""
    cls_name = el.get("class") or name
    if parent is not None and el.get("class") is None:
        raise rc.fail("nested <default> needs a class attribute", el)
    if parent is not None and cls_name in doc.defaults:
        raise rc.fail(f"repeated default class name {cls_name!r}", el)
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
            # a class's own orientation replaces the one it inherited, whichever attribute either uses
            for a in ORIENT:
                attrs.pop(a, None)
        attrs.update({k: v for k, v in child.attrib.items() if not k.startswith("{")})
    for child in nested:
        read_defaults(rc, child, doc, child.get("class", ""), cls_name)


def element_class(rc: ReadContext, elem: etree._Element, ctx: Ctx) -> str:
    """The default class an element reads its missing attributes from."""
    name = elem.get("class") or ctx.childclass or "main"
    if name not in ctx.doc.defaults:
        raise rc.fail(f"unknown default class name {name!r}", elem)
    return name


def lookup(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None,
           cls: str | None = None) -> str | None:
    """An attribute from the element, else from its default class (``ctx`` None: the element only)."""
    v = elem.get(attr)
    if v is not None or ctx is None:
        return v
    return ctx.doc.defaults[cls or element_class(rc, elem, ctx)].get(tag, {}).get(attr)


def number(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: float,
           cls: str | None = None) -> float:
    """One number, through the defaults."""
    text = lookup(rc, elem, tag, attr, ctx, cls)
    return default if text is None else float(floats(rc, elem, text, attr, 1)[0])


# The overloads tell the checker what the code does: with a default the result is never None.
@overload
def vector(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None,
           default: tuple[float, ...], count: int | tuple[int, ...] | None = 3,
           cls: str | None = None) -> FloatArray: ...


@overload
def vector(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None,
           default: None, count: int | tuple[int, ...] | None = 3,
           cls: str | None = None) -> FloatArray | None: ...


def vector(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None,
           default: tuple[float, ...] | None, count: int | tuple[int, ...] | None = 3,
           cls: str | None = None) -> FloatArray | None:
    """A list of numbers, through the defaults; ``default`` (or None) when neither has it."""
    text = lookup(rc, elem, tag, attr, ctx, cls)
    if text is None:
        return None if default is None else np.array(default, dtype=np.float64)
    return floats(rc, elem, text, attr, count)


def keyword(rc: ReadContext, elem: etree._Element, tag: str, attr: str, ctx: Ctx | None, default: str,
            cls: str | None = None) -> str:
    """A word-valued attribute (``type``, ``limited``, ...), through the defaults."""
    return lookup(rc, elem, tag, attr, ctx, cls) or default
