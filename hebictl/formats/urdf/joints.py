"""URDF joints and transmissions: types (URDF's and Drake's), axes, limits, dynamics, mimic, and the
actuator extensions a Drake transmission puts on its joint (reflected rotor inertia as armature).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl.formats._xml import attr_float, attr_floats, elements, local_name, namespace, require
from hebictl.formats.urdf.context import ReadContext
from hebictl.formats.urdf.links import origin

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_ONE_DOF = ("revolute", "continuous", "prismatic", "screw")
_JOINT_CHILDREN = {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic", "safety_controller",
                   "calibration"}
DBL_MAX = 1.7976931348623157e308


@dataclass
class UrdfJoint:
    """One ``<joint>`` (or ``<drake:joint>``) as read, before the tree is built."""

    name: str
    type: str
    elem: etree._Element
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    drake: bool = False  # a <drake:joint>
    armature: float = 0.0  # reflected rotor inertia of the actuators on it [kg·m² or kg]
    metadata: dict[str, Any] = field(default_factory=dict)


def read_joint(rc: ReadContext, el: etree._Element, is_drake: bool = False) -> UrdfJoint:
    """A ``<joint>`` (``is_drake``: a ``<drake:joint>``): type, frames, axis, limits, dynamics, mimic."""
    f = rc.file
    name = require(el, "name", f)
    jtype = require(el, "type", f)
    if jtype in drake.UNSUPPORTED_JOINT_TYPES:
        raise rc.fail(f"joint {name!r}: Drake's {jtype} joint is not supported by hebictl", el)

    if is_drake and jtype not in drake.DRAKE_JOINT_TYPES:
        hint = " (a standard type: write it as <joint>)" if jtype in _JOINT_TYPES else ""
        raise rc.fail(f"<drake:joint> {name!r} has type {jtype!r}{hint}; expected one of "
                      f"{', '.join(drake.DRAKE_JOINT_TYPES)}", el)

    if not is_drake and jtype in drake.DRAKE_JOINT_TYPES and jtype not in _JOINT_TYPES:
        raise rc.fail(f"joint {name!r} of type {jtype} is one of Drake's joint types: write it as <drake:joint> "
                      f"(xmlns:drake=\"{drake.DRAKE_NS}\")", el)

    if jtype not in _JOINT_TYPES + drake.DRAKE_JOINT_TYPES:
        raise rc.fail(f"joint {name!r} has unknown type {jtype!r}; expected one of {', '.join(_JOINT_TYPES)} "
                      f"(or, as <drake:joint>, {', '.join(drake.DRAKE_JOINT_TYPES)})", el)

    parent_el, child_el = el.find("parent"), el.find("child")

    if parent_el is None or child_el is None:
        raise rc.fail(f"joint {name!r} needs both <parent link=...> and <child link=...>", el)

    parent, child = require(parent_el, "link", f), require(child_el, "link", f)
    axis_el = el.find("axis")
    axis = np.array([1.0, 0.0, 0.0])
    if axis_el is not None:
        axis = attr_floats(axis_el, "xyz", f, 3, (1.0, 0.0, 0.0))
        norm = float(np.linalg.norm(axis))
        if jtype not in ("fixed", "floating", "ball", "universal") and norm < 1e-12:
            raise rc.fail(f"joint {name!r} has a zero axis", axis_el)
        if norm > 0:
            axis = axis / norm

    j = UrdfJoint(name, jtype, el, parent, child, origin(rc, el), axis, drake=is_drake)
    _read_limit(rc, j, el)
    dyn = el.find("dynamics")
    if dyn is not None:
        if jtype == "planar" and dyn.get("damping") is not None:  # Drake: translation x, y and rotation
            damping = attr_floats(dyn, "damping", f, (1, 3))
            assert damping is not None
            j.metadata["planar_damping"] = tuple(float(d) for d in np.broadcast_to(damping, 3))
        else:
            j.damping = attr_float(dyn, "damping", f, 0.0)
        j.friction = attr_float(dyn, "friction", f, 0.0)

    if jtype == "screw":
        j.metadata["screw_pitch"] = drake.screw_pitch(el, name, f)

    for tag, mimic in (("mimic", el.find("mimic")), ("drake:mimic", drake.drake_child(el, "mimic"))):
        if mimic is not None:
            j.metadata["mimic"] = {"joint": require(mimic, "joint", f),
                                   "multiplier": attr_float(mimic, "multiplier", f, 1.0),
                                   "offset": attr_float(mimic, "offset", f, 0.0), "line": mimic.sourceline,
                                   "element": tag}

    for key in ("safety_controller", "calibration"):
        sub = el.find(key)
        if sub is not None:
            j.metadata[key] = dict(sub.attrib)

    for child in elements(el):
        if drake.is_drake(child) and local_name(child) in ("mimic", "screw_thread_pitch"):
            continue
        if namespace(child) is not None:
            rc.note_extension(child)
        elif local_name(child) not in _JOINT_CHILDREN:
            rc.ignore(f"<joint><{local_name(child)}>")

    j.metadata["line"] = el.sourceline
    return j


def _read_limit(rc: ReadContext, j: UrdfJoint, el: etree._Element) -> None:
    """A joint's ``<limit>``: effort and velocity ratings, and the position range of revolute and
    prismatic joints (which must have one)."""
    f = rc.file
    limit = el.find("limit")
    if limit is not None and j.drake:
        # Drake reads no <limit> of its own joint types (a standard planar joint keeps its ratings)
        rc.ignore(f"<{j.type} joint><limit>")
        limit = None

    if limit is None and j.type in ("revolute", "prismatic"):
        raise rc.fail(f"joint {j.name!r} of type {j.type} needs a <limit effort=... velocity=...> element", el)

    if limit is not None:
        for key in ("effort", "velocity"):
            if limit.get(key) is None:
                raise rc.fail(f"joint {j.name!r}: <limit> is missing the required attribute {key!r}", limit)
        j.effort = _unbounded(attr_float(limit, "effort", f))
        j.velocity = _unbounded(attr_float(limit, "velocity", f))
        if j.effort < 0 or j.velocity < 0:
            raise rc.fail(f"joint {j.name!r}: effort and velocity limits must be >= 0", limit)
        if j.type in ("revolute", "prismatic"):
            j.lower = _unbounded(attr_float(limit, "lower", f, 0.0))
            j.upper = _unbounded(attr_float(limit, "upper", f, 0.0))
            if j.lower > j.upper:
                raise rc.fail(f"joint {j.name!r}: lower limit {j.lower} > upper limit {j.upper}", limit)
        acc = drake.acceleration_limit(limit, f)
        if acc is not None:
            j.metadata["max_acceleration"] = acc


def apply_transmission(rc: ReadContext, el: etree._Element, info: dict[str, Any],
                       joints: dict[str, UrdfJoint]) -> None:
    """Apply a transmission's Drake actuator extensions to its joint, with Drake's rules: only a
    SimpleTransmission makes an actuator, not on a fixed joint or one with a zero effort limit,
    and only on a one-degree-of-freedom joint; reflected inertia = gear_ratio² · rotor_inertia."""
    actuator = el.find("actuator")
    ext = drake.actuator_extensions(actuator, rc.file) if actuator is not None else {}
    if actuator is not None:
        info["actuators"][0].update(ext)

    if not ext:
        return

    where = f"transmission {info['name']!r} (line {el.sourceline})"
    if "SimpleTransmission" not in (info.get("type") or el.get("type") or ""):
        rc.drake_notes.append(f"{where} is not a SimpleTransmission: Drake ignores it, and its actuator's "
                              "drake: settings")
        return

    jel = el.find("joint")
    jname = jel.get("name") if jel is not None else None
    if not jname:
        raise rc.fail(f"{where} needs a <joint name=...> for its drake: actuator settings", el)

    if jname not in joints:
        raise rc.fail(f"transmission {info['name']!r} names joint {jname!r}, which does not exist", jel)

    j = joints[jname]
    if j.type == "fixed":
        rc.drake_notes.append(f"{where} acts on fixed joint {jname!r}: Drake skips it")
        return

    if j.type not in _ONE_DOF:
        raise rc.fail(f"transmission {info['name']!r}: Drake actuates only one-degree-of-freedom joints, and "
                      f"joint {jname!r} is {j.type}", jel)

    if j.effort == 0:
        rc.drake_notes.append(f"{where} acts on joint {jname!r}, whose effort limit is 0: Drake skips it")
        return

    j.metadata.update({k: v for k, v in ext.items()})
    j.metadata["actuator"] = actuator.get("name") if actuator is not None else None

    if "rotor_inertia" in ext:
        ratio = ext.get("gear_ratio", 1.0)
        reflected = ext["rotor_inertia"] * ratio * ratio  # inf, not OverflowError, when it overflows
        if not math.isfinite(reflected):
            raise rc.fail(f"transmission {info['name']!r}: rotor_inertia {ext['rotor_inertia']:.3g} times "
                          f"gear_ratio {ratio:.3g} squared overflows", actuator)
        j.metadata["reflected_inertia"] = j.metadata.get("reflected_inertia", 0.0) + reflected
        j.armature += reflected


def _unbounded(value: float | None) -> float:
    """urdfdom's limits: absent, or at the largest double, is no limit."""
    if value is None:
        return math.inf
    if value >= DBL_MAX:
        return math.inf
    if value <= -DBL_MAX:
        return -math.inf
    return value


def read_transmission(el: etree._Element) -> dict[str, Any]:
    """A ``<transmission>`` as metadata: name, type, joints and actuators (with their reduction)."""
    out: dict[str, Any] = {"name": el.get("name"), "line": el.sourceline}
    t = el.find("type")
    if t is not None and t.text:
        out["type"] = t.text.strip()
    out["joints"] = [j.get("name") for j in el.findall("joint")]
    out["actuators"] = []
    for a in el.findall("actuator"):
        red = a.find("mechanicalReduction")
        out["actuators"].append({"name": a.get("name"),
                                 "reduction": red.text.strip() if red is not None and red.text else None})
    return out
