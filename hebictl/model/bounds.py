"""Physical ranges every loaded model must lie in, defined once: finite, and no bigger than any robot.

A number can be finite and still useless: a mass of 1.8e308 kg or a centre of mass 1e308 m away
makes gravity compensation overflow to NaN without any error. So a model is checked when it is
built (:class:`~hebictl.model.builder.ModelBuilder`), whatever format it came from, against
bounds far beyond any real machine yet small enough that kinematics and dynamics stay finite for
every configuration: at most ``MAX_BODIES`` links of ``MAX_LENGTH`` give lever arms below 1e8 m,
times ``MAX_MASS`` and ``MAX_GRAVITY`` torques stay below 1e17 N·m.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import ModelError

#: |translation| of a placement, frame, centre of mass, base, and |prismatic limit| [m] (1 km)
MAX_LENGTH = 1e3
#: mass of one body [kg]
MAX_MASS = 1e6
#: any entry of a body's rotational inertia, and armature [kg·m²] (MAX_MASS · MAX_LENGTH²)
MAX_INERTIA = MAX_MASS * MAX_LENGTH**2
#: |gear ratio| of a joint (its ``scale`` is between 1/MAX_GEAR_RATIO and MAX_GEAR_RATIO)
MAX_GEAR_RATIO = 1e6
#: |gravity| [m/s²]
MAX_GRAVITY = 1e3
#: joint damping [N·m·s/rad or N·s/m] and friction [N·m or N]
MAX_DAMPING = 1e9


def _where(name: str, metadata: Mapping[str, Any] | None) -> str:
    line = (metadata or {}).get("line")
    return f"{name} (line {line})" if isinstance(line, int) else name


def _length(value: float, what: str) -> None:
    if not abs(value) <= MAX_LENGTH:
        raise ModelError(f"{what} is {value:g} m; lengths must be finite and at most {MAX_LENGTH:g} m")


def _norm(v: Iterable[float]) -> float:
    """``np.linalg.norm`` of a 3-vector, bit for bit (same sum of squares, overflows to inf alike).

    Scalar math: numpy's per-call overhead on 3 numbers was ~20 ms of a 514-body model's load.
    """
    x, y, z = v
    return math.sqrt(x * x + y * y + z * z)


def _translation_norm(T: FloatArray) -> float:
    return _norm(np.asarray(T, dtype=np.float64)[:3, 3].tolist())


def check_translation(T: FloatArray, what: str) -> None:
    """The translation of a 4x4 transform is within MAX_LENGTH."""
    _length(_translation_norm(T), f"the offset of {what}")


def check_body(name: str, placement: FloatArray, joint: Any, inertia: Any,
               metadata: Mapping[str, Any] | None = None) -> None:
    """One body: placement, joint (gear ratio, limits, damping, armature) and inertia within range.

    The names for the messages are only formatted when a check fails: this runs once per body of
    every model loaded.
    """
    def who() -> str:
        return _where(f"body {name!r}", metadata)

    def jwho() -> str:
        return _where(f"joint {joint.name!r}", metadata)

    offset = _translation_norm(placement)
    if not abs(offset) <= MAX_LENGTH:
        _length(offset, f"the offset of {who()}")
    mass = float(inertia.mass)
    if not 0.0 <= mass <= MAX_MASS:
        raise ModelError(f"{who()}: mass {mass:g} kg is outside [0, {MAX_MASS:g}] kg")
    com = _norm([float(c) for c in inertia.com])
    if not abs(com) <= MAX_LENGTH:
        _length(com, f"{who()}: the centre of mass offset")
    if not all(abs(float(v)) <= MAX_INERTIA for row in inertia.rotational for v in row):
        raise ModelError(f"{who()}: rotational inertia entries must be finite and at most {MAX_INERTIA:g} kg·m²")
    scale = float(joint.scale)
    if not 1.0 / MAX_GEAR_RATIO <= abs(scale) <= MAX_GEAR_RATIO:
        raise ModelError(f"{jwho()}: gear ratio {1.0 / scale if scale else math.inf:g} is outside "
                         f"[{1.0 / MAX_GEAR_RATIO:g}, {MAX_GEAR_RATIO:g}] in magnitude")
    for what, value, top in (("damping", joint.damping, MAX_DAMPING), ("friction", joint.friction, MAX_DAMPING),
                             ("armature", joint.armature, MAX_INERTIA)):
        if not 0.0 <= float(value) <= top:
            raise ModelError(f"{jwho()}: {what} {value:g} is outside [0, {top:g}]")
    for what, value in (("max_velocity", joint.max_velocity), ("max_effort", joint.max_effort)):
        if math.isnan(value) or value < 0.0:
            raise ModelError(f"{jwho()}: {what} {value:g} must be >= 0 (inf: unknown)")
    prismatic = joint.kind.name == "PRISMATIC"
    for what, value in (("lower limit", joint.lower), ("upper limit", joint.upper)):
        if math.isnan(value):
            raise ModelError(f"{jwho()}: {what} is NaN")
        if prismatic and math.isfinite(value) and not abs(value) <= MAX_LENGTH:
            _length(value, f"{jwho()}: the {what}")


def check_gravity(gravity: FloatArray) -> None:
    """Gravity finite and at most MAX_GRAVITY in magnitude."""
    g = float(np.linalg.norm(gravity))
    if not g <= MAX_GRAVITY:
        raise ModelError(f"gravity of {g:g} m/s² is beyond {MAX_GRAVITY:g} m/s²")
