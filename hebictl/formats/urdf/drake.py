"""Drake's URDF extensions (``xmlns:drake="http://drake.mit.edu"``) as the URDF reader needs them.

Element by element as Drake's parser documentation and Drake 1.51 define them (the tests load
the same text in Drake): what changes kinematics or dynamics goes into the model (``drake:joint``
types, reflected rotor inertia as joint armature); the rest is validated as Drake validates it
and kept as metadata (collision filter groups, ball constraints, bushings, proximity properties,
capsule/ellipsoid shapes). Nothing here builds bodies: :mod:`hebictl.formats.urdf` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError
from hebictl.formats._xml import DRAKE_NS, attr_float, attr_floats, elements, line_of, local_name, namespace

#: types a ``<drake:joint>`` may have (planar is also a standard URDF type; Drake takes both spellings)
DRAKE_JOINT_TYPES = ("ball", "planar", "screw", "universal")
#: Drake joint types hebictl's kernels cannot express
UNSUPPORTED_JOINT_TYPES = ("curvilinear",)
#: robot-level elements kept in ``model.metadata["drake"]``
MODEL_ELEMENTS = ("collision_filter_group", "ball_constraint", "linear_bushing_rpy", "tendon_constraint",
                  "linear_spring_damper")
_BUSHING_VECTORS = ("bushing_torque_stiffness", "bushing_torque_damping", "bushing_force_stiffness",
                    "bushing_force_damping")


def is_drake(elem: etree._Element) -> bool:
    return namespace(elem) == DRAKE_NS


def dattr(name: str) -> str:
    """Clark notation of a ``drake:`` attribute (``drake:acceleration`` -> ``{ns}acceleration``)."""
    return f"{{{DRAKE_NS}}}{name}"


def drake_child(elem: etree._Element, tag: str) -> etree._Element | None:
    return elem.find(f"{{{DRAKE_NS}}}{tag}")


def closest_rotation_from_z(n: np.ndarray) -> np.ndarray:
    """The rotation taking z to unit ``n`` that is closest to the identity (Drake's
    ``RotationMatrix::MakeClosestRotationToIdentityFromUnitZ``): how Drake orients a planar joint's
    plane from a URDF axis."""
    z = np.array([0.0, 0.0, 1.0])
    w = np.cross(z, n)
    s, c = float(np.linalg.norm(w)), float(z @ n)
    if s < 1e-14:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = w / s
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    angle = math.atan2(s, c)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _fail(message: str, elem: etree._Element | None, file: str) -> FormatError:
    return FormatError(message, file, line_of(elem))


def _value(elem: etree._Element, file: str, what: str, *, nonneg: bool = True) -> float:
    """The required ``value`` attribute of a ``<drake:...>`` element (one number)."""
    if elem.get("value") is None:
        raise _fail(f"<drake:{what}> needs a 'value' attribute", elem, file)
    v = attr_float(elem, "value", file)
    assert v is not None
    if nonneg and not v >= 0:
        raise _fail(f"<drake:{what}> must be >= 0, got {v}", elem, file)
    return v


def acceleration_limit(limit: etree._Element, file: str) -> float | None:
    """``<limit drake:acceleration>`` [rad/s² or m/s²], or None when absent."""
    if limit.get(dattr("acceleration")) is None:
        return None
    v = attr_float(limit, dattr("acceleration"), file, allow_inf=True)
    assert v is not None
    if not v >= 0:
        raise _fail(f"<limit drake:acceleration> must be >= 0, got {v}", limit, file)
    return v


def screw_pitch(joint: etree._Element, name: str, file: str) -> float:
    """A screw ``<drake:joint>``'s ``<drake:screw_thread_pitch value>`` [m/rev] (required)."""
    el = drake_child(joint, "screw_thread_pitch")
    if el is None:
        raise _fail(f"screw joint {name!r} needs a <drake:screw_thread_pitch value=...> element", joint, file)
    return _value(el, file, "screw_thread_pitch", nonneg=False)


def actuator_extensions(actuator: etree._Element, file: str) -> dict[str, Any]:
    """``drake:rotor_inertia`` [kg·m² or kg], ``drake:gear_ratio`` and ``drake:controller_gains``
    of a transmission's ``<actuator>`` (only the ones present)."""
    out: dict[str, Any] = {}
    for tag in ("rotor_inertia", "gear_ratio"):
        el = drake_child(actuator, tag)
        if el is not None:
            out[tag] = _value(el, file, tag)
    gains = drake_child(actuator, "controller_gains")
    if gains is not None:
        g: dict[str, float] = {}
        for key in ("p", "d"):
            value = attr_float(gains, key, file)
            if value is None:
                raise _fail(f"<drake:controller_gains> needs both 'p' and 'd' attributes; '{key}' is missing", gains,
                            file)
            g[key] = value
        if not (g["p"] > 0 and g["d"] >= 0):
            raise _fail(f"<drake:controller_gains> needs p > 0 and d >= 0, got p={g['p']}, d={g['d']}", gains, file)
        out["controller_gains"] = g
    return out


def shape(elem: etree._Element, file: str) -> dict[str, Any]:
    """A ``<drake:capsule radius length>`` or ``<drake:ellipsoid a b c>`` [m] geometry."""
    kind = local_name(elem)
    keys = ("radius", "length") if kind == "capsule" else ("a", "b", "c")
    vals = {}
    for k in keys:
        if elem.get(k) is None:
            raise _fail(f"<drake:{kind}> is missing the attribute {k!r}", elem, file)
        v = attr_float(elem, k, file)
        assert v is not None
        if not (v > 0 if kind == "ellipsoid" else v >= 0):
            raise _fail(f"<drake:{kind}> {k} must be {'> 0' if kind == 'ellipsoid' else '>= 0'}, got {v}", elem, file)
        vals[k] = v
    if kind == "capsule":
        return {"type": "drake:capsule", **vals}
    return {"type": "drake:ellipsoid", "radii": [vals["a"], vals["b"], vals["c"]]}


def proximity_properties(elem: etree._Element, file: str) -> dict[str, Any]:
    """``<drake:proximity_properties>``: each child's ``value`` (a number), or True for the flags
    (``drake:rigid_hydroelastic``, ``drake:compliant_hydroelastic``)."""
    out: dict[str, Any] = {}
    for c in elements(elem):
        key = local_name(c)
        out[key] = _value(c, file, key) if c.get("value") is not None else True
    return out


def _name_of(elem: etree._Element, tag: str, attr: str, file: str, known: Collection[str] | None,
             what: str) -> str:
    el = drake_child(elem, tag)
    if el is None:
        raise _fail(f"<drake:{local_name(elem)}> needs a <drake:{tag} {attr}=...> element", elem, file)
    name = el.get(attr)
    if not name:
        raise _fail(f"<drake:{tag}> needs a '{attr}' attribute", el, file)
    if known is not None and name not in known:
        raise _fail(f"<drake:{tag}> names {what} {name!r}, which the model does not have", el, file)
    return name


def _vector(elem: etree._Element, tag: str, file: str) -> list[float]:
    el = drake_child(elem, tag)
    if el is None:
        raise _fail(f"<drake:{local_name(elem)}> needs a <drake:{tag} value=...> element", elem, file)
    if el.get("value") is None:
        raise _fail(f"<drake:{tag}> needs a 'value' attribute", el, file)
    v = attr_floats(el, "value", file, 3)
    assert v is not None
    return v.tolist()


def model_elements(found: list[etree._Element], links: Collection[str], frames: Collection[str],
                   file: str, note_ignored: Callable[[etree._Element], None]) -> dict[str, list[Any]]:
    """Robot-level Drake elements, checked against the model's links and frames as Drake checks them."""
    out: dict[str, list[Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for el in found:
        tag = local_name(el)
        if tag == "collision_filter_group":
            name = el.get("name")
            if not name:
                raise _fail("<drake:collision_filter_group> needs a 'name' attribute", el, file)
            group = {"name": name, "ignore": el.get("ignore", "false").strip() == "true", "members": [],
                     "member_groups": [], "ignored_groups": [], "line": el.sourceline}
            for c in elements(el):
                key, attr = {"member": ("members", "link"), "member_group": ("member_groups", "name"),
                             "ignored_collision_filter_group": ("ignored_groups", "name")}.get(local_name(c),
                                                                                                ("", ""))
                if not key or not is_drake(c):
                    note_ignored(c)
                    continue
                value = c.get(attr)
                if not value:
                    raise _fail(f"<drake:{local_name(c)}> needs a '{attr}' attribute", c, file)
                if key == "members" and not group["ignore"] and value not in links:
                    raise _fail(f"<drake:member> names link {value!r}, which the model does not have", c, file)
                group[key].append(value)
            groups[name] = group
            out.setdefault("collision_filter_groups", []).append(group)
        elif tag == "ball_constraint":
            out.setdefault("ball_constraint", []).append({
                "body_A": _name_of(el, "ball_constraint_body_A", "name", file, links, "link"),
                "body_B": _name_of(el, "ball_constraint_body_B", "name", file, links, "link"),
                "p_AP": _vector(el, "ball_constraint_p_AP", file), "p_BQ": _vector(el, "ball_constraint_p_BQ", file),
                "line": el.sourceline})
        elif tag == "linear_bushing_rpy":
            item: dict[str, Any] = {"frameA": _name_of(el, "bushing_frameA", "name", file, frames, "frame"),
                                    "frameC": _name_of(el, "bushing_frameC", "name", file, frames, "frame")}
            for key in _BUSHING_VECTORS:
                item[key.removeprefix("bushing_")] = _vector(el, key, file)
            item["line"] = el.sourceline
            out.setdefault("linear_bushing_rpy", []).append(item)
        else:  # tendon constraints, linear spring-dampers: kept as written
            out.setdefault(tag, []).append({local_name(c): dict(c.attrib) for c in elements(el)}
                                           | {"line": el.sourceline})
    for g in groups.values():
        if g["ignore"]:
            continue
        for ref in g["member_groups"] + g["ignored_groups"]:
            if ref not in groups:
                raise FormatError(f"collision filter group {g['name']!r} refers to group {ref!r}, which is not "
                                  "defined", file, g["line"])
    return out
