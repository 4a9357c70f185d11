"""SDFormat joints: types, axes in the frame each version expresses them in, limits, and Drake's extensions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError
from hebictl.formats._xml import DRAKE_NS, HEBICTL_NS, attr_float, elements, line_of, local_name, namespace
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.elements import (
    DRAKE_JOINT_TYPES,
    SDF_JOINT_TYPES,
    UNBOUNDED,
    bounded_value,
    check_element,
    child_of,
    name_of,
    pose_of,
    sdf_float,
    sdf_floats,
    text_of,
)
from hebictl.formats.sdf.frames import Entity, Scope, parse_bool


def read_joint(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope,
               drake: bool) -> Entity:
    """A ``<joint>`` (``drake``: a ``<drake:joint>``) as a frame of its model, with its type, axes,
    limits and metadata; its frames are resolved later, when the model's frame graph is complete."""
    if not drake:
        check_element(rc, elem, file, version)

    name = name_of(elem, file, version, "joint")
    jtype = elem.get("type")
    if jtype is None:
        raise FormatError(f"joint {name!r} is missing the required attribute 'type'", file, line_of(elem))

    jtype = jtype.strip()
    types = DRAKE_JOINT_TYPES if drake else SDF_JOINT_TYPES
    if jtype not in types:
        raise FormatError(f"joint {name!r} has unknown type {jtype!r}; expected one of {', '.join(types)}", file,
                          line_of(elem))

    pre = f"{{{DRAKE_NS}}}" if drake else ""
    parent_el, child_el = child_of(elem, pre + "parent"), child_of(elem, pre + "child")

    if parent_el is None or child_el is None or not text_of(parent_el) or not text_of(child_el):
        raise FormatError(f"joint {name!r} needs both <parent> and <child>", file, line_of(elem))

    if drake and child_of(elem, "pose") is not None:
        raise FormatError(f"<drake:joint> {name!r}: <pose> is not supported (Drake joins the parent link frame to "
                          "the child link frame)", file, line_of(child_of(elem, "pose")))

    pose, rel, line = pose_of(rc, elem, file, version)
    e = Entity("joint", name, elem, file, pose, rel, line, parent=text_of(parent_el), child=text_of(child_el))
    data = e.data
    data["type"] = jtype
    data["drake"] = drake
    axes: list[np.ndarray | None] = []  # None: no such axis element
    expressed: list[str] = []
    limits: list[dict[str, Any]] = []
    meta: dict[str, Any] = {"sdf_type": jtype, "line": line_of(elem)}

    for tag in ("axis", "axis2"):
        ax = child_of(elem, tag)
        if ax is None:
            axes.append(None)
            expressed.append("")
            limits.append({})
            continue
        xyz, exp, lim = _read_axis(rc, ax, tag, name, jtype, file, version, scope, meta)
        axes.append(xyz)
        expressed.append(exp)
        limits.append(lim)

    needs_axis = {"revolute": 1, "continuous": 1, "prismatic": 1, "screw": 1, "universal": 2, "revolute2": 2,
                  "gearbox": 2}.get(jtype, 0)
    for k in range(needs_axis):
        if axes[k] is None:
            if k == 0:
                raise FormatError(f"joint {name!r} of type {jtype} needs an <axis>", file, line_of(elem))
            axes[k] = np.array([0.0, 0.0, 1.0])

    if drake:
        damping = child_of(elem, f"{{{DRAKE_NS}}}damping")
        if damping is not None:
            meta["damping"] = text_of(damping).split()

    for tag in ("gearbox_ratio", "gearbox_reference_body"):
        c = child_of(elem, tag)
        if c is not None:
            meta[tag] = text_of(c) if tag.endswith("body") else sdf_float(c, file, 1.0)

    if jtype == "screw":
        meta["screw_pitch"] = _screw_pitch(elem, name, file)

    read_drake_joint_extras(elem, file, meta)

    # Drake actuates a one-axis joint unless its effort limit is exactly 0; only an actuator
    # carries rotor inertia, so the reflected inertia is the joint's armature only then
    actuated = (not drake and jtype in ("revolute", "continuous", "prismatic", "screw")
                and limits[0].get("effort", math.inf) != 0)
    if "reflected_inertia" in meta and actuated:
        meta["armature"] = meta["reflected_inertia"]

    scale = child_of(elem, f"{{{HEBICTL_NS}}}scale")
    if scale is not None:
        meta["scale"] = sdf_float(scale, file, 1.0, "hebictl:scale")

    data["axes"] = axes
    data["expressed_in"] = expressed
    data["limits"] = limits
    data["metadata"] = meta
    return e


def _read_axis(rc: ReadContext, ax: etree._Element, tag: str, name: str, jtype: str, file: str,
               version: tuple[int, int], scope: Scope,
               meta: dict[str, Any]) -> tuple[np.ndarray, str, dict[str, float]]:
    """One ``<axis>``/``<axis2>``: its direction, the frame it is expressed in ('' = the joint frame) and
    its limits and dynamics; accelerations, springs and mimic go to ``meta``."""
    check_element(rc, ax, file, version)
    xyz_el = child_of(ax, "xyz")
    xyz = sdf_floats(xyz_el, file, 3) if xyz_el is not None else np.array([0.0, 0.0, 1.0])
    if np.linalg.norm(xyz) < 1e-12 and jtype not in ("fixed", "ball"):
        raise FormatError(f"joint {name!r}: <{tag}><xyz> is the zero vector", file, line_of(xyz_el))

    exp = (xyz_el.get("expressed_in") or "").strip() if xyz_el is not None and version >= (1, 7) else ""
    upmf = child_of(ax, "use_parent_model_frame")
    if upmf is not None and version < (1, 7):  # (in 1.4 a 1.5 element, read as Drake reads it)
        if parse_bool(text_of(upmf), upmf, file, "<use_parent_model_frame>"):
            exp = "__model__"
    elif version < (1, 5) and getattr(scope, "file_root", False):
        exp = "__model__"  # libsdformat's 1.4 -> 1.5 conversion adds it (top-level models, if absent)

    lim: dict[str, float] = {}
    limit = child_of(ax, "limit")
    if limit is not None:
        check_element(rc, limit, file, version)
        lim["lower"] = bounded_value(sdf_float(child_of(limit, "lower"), file, -UNBOUNDED))
        lim["upper"] = bounded_value(sdf_float(child_of(limit, "upper"), file, UNBOUNDED))
        eff = sdf_float(child_of(limit, "effort"), file, -1.0)
        vel = sdf_float(child_of(limit, "velocity"), file, -1.0)
        lim["effort"] = math.inf if eff < 0 else eff
        lim["velocity"] = math.inf if vel < 0 else vel
        acc = child_of(limit, f"{{{DRAKE_NS}}}acceleration")
        if acc is not None:
            meta[f"{tag}_max_acceleration"] = sdf_float(acc, file, math.inf, "drake:acceleration")
        if lim["lower"] > lim["upper"] and jtype not in ("continuous",):
            raise FormatError(f"joint {name!r}: lower limit {lim['lower']} > upper limit {lim['upper']}", file,
                              line_of(limit))

    dyn = child_of(ax, "dynamics")
    if dyn is not None:
        check_element(rc, dyn, file, version)
        lim["damping"] = sdf_float(child_of(dyn, "damping"), file, 0.0)
        lim["friction"] = sdf_float(child_of(dyn, "friction"), file, 0.0)
        for key in ("spring_reference", "spring_stiffness"):
            if child_of(dyn, key) is not None:
                meta[f"{tag}_{key}"] = sdf_float(child_of(dyn, key), file, 0.0)

    mimic = child_of(ax, "mimic")
    if mimic is not None:
        meta["mimic"] = {"joint": mimic.get("joint"), "axis": mimic.get("axis", "axis"),
                         "multiplier": sdf_float(child_of(mimic, "multiplier"), file, 1.0),
                         "offset": sdf_float(child_of(mimic, "offset"), file, 0.0),
                         "reference": sdf_float(child_of(mimic, "reference"), file, 0.0)}

    return xyz, exp, lim


def _screw_pitch(elem: etree._Element, name: str, file: str) -> float:
    """A screw joint's pitch [m/rev]: ``screw_thread_pitch`` (1.10+, or Drake's), else the older
    ``thread_pitch`` as libsdformat converts it (-2π / thread_pitch), else 1."""
    # `is None`, not `or`: an lxml element without children is false, so `or` skipped a given pitch
    stp = child_of(elem, "screw_thread_pitch")
    if stp is None:
        stp = child_of(elem, f"{{{DRAKE_NS}}}screw_thread_pitch")
    tp = child_of(elem, "thread_pitch")
    if stp is not None:
        return sdf_float(stp, file, 1.0)
    if tp is not None:
        tpv = sdf_float(tp, file, 1.0)
        if tpv == 0:
            raise FormatError(f"joint {name!r}: thread_pitch must not be 0", file, line_of(tp))
        return -2.0 * math.pi / tpv
    return 1.0


def read_drake_joint_extras(elem: etree._Element, file: str, meta: dict[str, Any]) -> None:
    for c in elements(elem):
        if namespace(c) != DRAKE_NS:
            continue
        tag = local_name(c)
        if tag in ("gear_ratio", "rotor_inertia"):
            meta[tag] = sdf_float(c, file, 0.0, f"drake:{tag}")
            if tag == "rotor_inertia" and meta[tag] < 0:
                raise FormatError(f"<drake:rotor_inertia> must be >= 0, got {meta[tag]}", file, line_of(c))
        elif tag == "mimic":
            meta["mimic"] = {"joint": c.get("joint"), "multiplier": attr_float(c, "multiplier", file, 1.0),
                             "offset": attr_float(c, "offset", file, 0.0)}
        elif tag == "controller_gains":
            meta["controller_gains"] = {k: attr_float(c, k, file) for k in c.attrib}
        elif tag not in ("parent", "child", "damping", "screw_thread_pitch"):
            meta[f"drake:{tag}"] = text_of(c) or dict(c.attrib)

    if "rotor_inertia" in meta:
        ratio = meta.get("gear_ratio", 1.0)
        meta["reflected_inertia"] = meta["rotor_inertia"] * ratio * ratio  # inf, not OverflowError
        if not math.isfinite(meta["reflected_inertia"]):
            raise FormatError(f"<drake:rotor_inertia> {meta['rotor_inertia']:.3g} times <drake:gear_ratio> "
                              f"{ratio:.3g} squared overflows", file, line_of(elem))
