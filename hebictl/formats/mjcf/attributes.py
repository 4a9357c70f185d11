"""MJCF attribute values: numbers, integers and booleans as MuJoCo parses them, and which attributes exist.

An attribute the element does not define is an error (a misspelt ``rnage`` would otherwise leave a
joint unlimited); values are checked here once, with the element's file and line in the message.
"""

from __future__ import annotations

import math

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.formats._xml import local_name
from hebictl.formats.mjcf.context import ReadContext
from hebictl.formats.mjcf.flexcomp import parse_ints

#: orientation attributes (at most one per element)
ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
#: actuator elements: they share the ``actuator`` defaults of a class
ACTUATORS = {"general", "motor", "position", "velocity", "intvelocity", "orientation", "pid", "damper", "cylinder",
             "muscle", "adhesion", "dcmotor"}

_POSE = ("pos", *ORIENT)
#: attributes each element of a body may have (MuJoCo's schema)
_ATTRS: dict[str, set[str]] = {
    "body": {"name", "childclass", "mocap", "gravcomp", "sleep", "user", *_POSE},
    "inertial": {"mass", "diaginertia", "fullinertia", *_POSE},
    "joint": {"name", "class", "type", "group", "pos", "axis", "springdamper", "limited", "actuatorfrclimited",
              "solreflimit", "solimplimit", "solreffriction", "solimpfriction", "stiffness", "range",
              "actuatorfrcrange", "actuatorgravcomp", "margin", "ref", "springref", "armature", "damping",
              "frictionloss", "user"},
    "freejoint": {"name", "group", "align"},
    "geom": {"name", "class", "type", "contype", "conaffinity", "condim", "group", "priority", "size", "material",
             "friction", "mass", "density", "shellinertia", "solmix", "solref", "solimp", "margin", "gap", "fromto",
             "hfield", "mesh", "fitscale", "rgba", "fluidshape", "fluidcoef", "surfacevel", "adhesion", "user",
             *_POSE},
    "site": {"name", "class", "type", "group", "material", "size", "fromto", "rgba", "user", *_POSE},
    "frame": {"name", "childclass", *_POSE},
    "replicate": {"count", "offset", "euler", "sep", "prefix"},
    "attach": {"model", "body", "frame", "prefix"},
}


def floats(rc: ReadContext, elem: etree._Element, text: str, attr: str,
           count: int | tuple[int, ...] | None = None) -> FloatArray:
    """The numbers of an attribute's text, all finite, ``count`` of them (one of ``count``) if given."""
    try:
        parsed = [float(t) for t in text.split()]
    except ValueError:
        raise rc.fail(f"<{local_name(elem)}> attribute {attr}={text!r} is not a list of numbers", elem) from None
    if not all(map(math.isfinite, parsed)):
        raise rc.fail(f"<{local_name(elem)}> attribute {attr}={text!r} has non-finite numbers", elem)
    values = np.array(parsed)
    if count is not None:
        allowed = (count,) if isinstance(count, int) else count
        if len(values) not in allowed:
            want = " or ".join(str(c) for c in allowed)
            raise rc.fail(f"<{local_name(elem)}> attribute {attr} needs {want} numbers, got {len(values)}", elem)
    return values


def ints(rc: ReadContext, el: etree._Element, attr: str, count: int | None = None) -> tuple[int, ...]:
    """Integers written as numbers (``count="3 4 5"``), each whole and within ±2**31 like MuJoCo's int."""
    values = floats(rc, el, el.get(attr, ""), attr, count)
    if any(not (abs(v) < 2**31 and v == int(v)) for v in values):
        raise rc.fail(f"<{local_name(el)}> attribute {attr} needs integers (|value| < 2**31), got "
                      f"{el.get(attr)!r}", el)
    return parse_ints(values)


def mjcf_bool(text: str, what: str, rc: ReadContext, el: etree._Element) -> bool:
    """MuJoCo's booleans are the words ``true`` and ``false`` only."""
    if text not in ("true", "false"):
        raise rc.fail(f"{what} must be 'true' or 'false', got {text!r}", el)
    return text == "true"


def check_attrs(rc: ReadContext, elem: etree._Element, tag: str) -> None:
    """Every un-namespaced attribute of a body's element is one MuJoCo defines for it."""
    allowed = _ATTRS.get(tag)
    if allowed is None:
        return
    for a in elem.attrib:
        if a.startswith("{"):
            continue
        if a not in allowed:
            raise rc.fail(f"unrecognized attribute {a!r} in <{tag}>", elem)
