"""MJCF actuators: which joints they drive, and the force bounds they put on them (``max_effort``).

MuJoCo bounds a joint's force by its actuators' ``forcerange`` times ``|gear|`` (``ctrlrange`` for
motors), summed over the actuators on the joint, and by the joint's own ``actuatorfrcrange``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lxml import etree

from hebictl.formats._xml import elements, local_name
from hebictl.formats.mjcf.attributes import ACTUATORS
from hebictl.formats.mjcf.context import Ctx, Doc, ReadContext
from hebictl.formats.mjcf.defaults import element_class, keyword, vector


def effort_bound(rc: ReadContext, el: etree._Element, name: str, ctx: Ctx, cls: str) -> float:
    """Largest joint effort the file allows: the joint's actuatorfrcrange, its actuators' bounds."""
    bound = math.inf
    frc = vector(rc, el, "joint", "actuatorfrcrange", ctx, None, 2, cls)
    lim = keyword(rc, el, "joint", "actuatorfrclimited", ctx, "auto", cls)
    if frc is not None and (lim == "true" or (lim == "auto" and ctx.doc.compiler.autolimits)):
        bound = float(np.max(np.abs(frc)))
    acts = rc.actuators.get(name)
    if acts:
        total = sum(a["max_effort"] for a in acts)
        bound = min(bound, total)
    return bound


def scan_actuators(rc: ReadContext, doc: Doc) -> None:
    """Actuators acting on joints, by joint name (read before the bodies so joints can carry them)."""
    ctx = Ctx(doc)
    for section in doc.root.iterchildren("actuator"):
        for el in elements(section):
            tag = local_name(el)
            if tag not in ACTUATORS and tag != "plugin":
                raise rc.fail(f"unrecognized element <{tag}> in <actuator>", el)
            joint = el.get("joint") or el.get("jointinparent")
            if joint is None:
                continue
            cls = element_class(rc, el, ctx)
            gear = vector(rc, el, "actuator", "gear", ctx, (1.0,), (1, 2, 3, 4, 5, 6), cls)
            g = abs(float(gear[0]))
            info: dict[str, Any] = {"type": tag, "name": el.get("name"), "gear": float(gear[0]), "elem": el}
            bound = math.inf
            for key in ("forcerange", "ctrlrange"):
                rng = vector(rc, el, "actuator", key, ctx, None, 2, cls)
                lim = keyword(rc, el, "actuator", key.replace("range", "limited"), ctx, "auto", cls)
                limited = lim == "true" or (lim == "auto" and doc.compiler.autolimits)
                if rng is not None and limited:
                    info[key] = (float(rng[0]), float(rng[1]))
                    if key == "forcerange" or tag == "motor":
                        bound = min(bound, g * float(np.max(np.abs(rng))))
            info["max_effort"] = bound
            rc.actuators.setdefault(joint, []).append(info)
