"""The Arm's settings from a robot config's ``user_data``: joint limits and safety behaviour.

hebi-py's ``load_config`` rejects unknown top-level keys, so these live under ``user_data``
(which hebi-py keeps as written) and every bundled config still loads there::

    user_data:
      joint_limits:                      # one value per joint, or one for all; each key optional
        position_min: [-3.14, 0.9, ...]  # rad (m for prismatic joints)
        position_max: [3.14, 3.0, ...]
        velocity_max: [...]              # rad/s; default: the model's rated speed
        acceleration_max: [...]          # rad/s²; default: rated speed / RATED_BRAKE_TIME_S
      safety:
        stop_behaviour: hold             # hold | damp | release: what Arm.stop() does by default
        at_goal_position_tolerance: 0.01 # rad
        at_goal_velocity_tolerance: 0.05 # rad/s
        damping: [...]                   # N·m·s/rad for 'damp'; default DAMPING_FRACTION * effort/speed

Limits from the model file (URDF/SDF/MJCF joint limits) apply too: the arm uses the tighter
of both. Speeds and efforts can only be lowered below the model's ratings, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.safety import Limits, StopBehaviour
from hebictl.errors import ConfigError

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

#: [s] A module brakes from its rated speed to rest in this time, which defines the rated
#: acceleration (= deceleration) per joint: rated speed / 0.2 s. It is a fraction of what the
#: rated effort can do: on the bundled arms (rated effort - gravity at home) / link inertia is
#: >= 38 rad/s² for every joint, while this rule gives <= 20.4 rad/s² for the base, shoulder
#: and elbow, leaving margin for rotor inertia and a payload. Override per joint with
#: ``user_data.joint_limits.acceleration_max``.
RATED_BRAKE_TIME_S = 0.2
#: 'damp' stop: damping = this fraction of rated effort / rated speed [N·m·s/rad] per joint (a
#: joint pushed at rated speed meets a quarter of its rated effort).
DAMPING_FRACTION = 0.25
#: at_goal defaults: position within 0.01 rad of the goal, every joint slower than 0.05 rad/s.
AT_GOAL_POSITION_TOLERANCE = 0.01
AT_GOAL_VELOCITY_TOLERANCE = 0.05

_LIMIT_KEYS = ("position_min", "position_max", "velocity_max", "acceleration_max")
_SAFETY_KEYS = ("stop_behaviour", "at_goal_position_tolerance", "at_goal_velocity_tolerance", "damping")


@dataclass
class SafetySettings:
    """How the arm stops and when it calls a goal reached (see the module docstring)."""

    stop_behaviour: StopBehaviour = StopBehaviour.HOLD
    at_goal_position_tolerance: float = AT_GOAL_POSITION_TOLERANCE
    at_goal_velocity_tolerance: float = AT_GOAL_VELOCITY_TOLERANCE
    damping: FloatArray | None = None


def _fail(message: str, key: str, path: Path | None) -> ConfigError:
    return ConfigError(message, file=path, key=key)


def _per_joint(value: Any, dof: int, key: str, path: Path | None) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
        arr = np.array(np.broadcast_to(arr, (dof,)))
    except (TypeError, ValueError):
        raise _fail(f"needs one number or {dof} numbers, got {value!r}", key, path) from None
    if np.isnan(arr).any():
        raise _fail(f"must not be NaN, got {value!r}", key, path)
    return arr


def _mapping(user_data: Mapping[str, Any], key: str, allowed: tuple[str, ...], path: Path | None) -> Mapping[str, Any]:
    section = user_data.get(key)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise _fail(f"must be a mapping, got {section!r}", f"user_data.{key}", path)
    unknown = sorted(str(k) for k in section if k not in allowed)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], allowed, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _fail(f"unknown key(s) {', '.join(unknown)}{hint}; valid: {', '.join(allowed)}",
                    f"user_data.{key}.{unknown[0]}", path)
    return section


def rated_acceleration(velocity_max: FloatArray) -> FloatArray:
    """Rated acceleration per joint [rad/s²]: rated speed / :data:`RATED_BRAKE_TIME_S`."""
    return np.where(np.isfinite(velocity_max), velocity_max / RATED_BRAKE_TIME_S, np.inf)


def limits_from(model: RobotModel, user_data: Mapping[str, Any], path: Path | None = None) -> Limits:
    """The arm's limits: the model's, tightened by ``user_data.joint_limits``."""
    dof = model.dof
    section = _mapping(user_data, "joint_limits", _LIMIT_KEYS, path)
    lo, hi = (np.array(a, dtype=np.float64) for a in model.position_limits)
    vmax = np.array(model.max_speeds, dtype=np.float64)
    emax = np.array(model.max_efforts, dtype=np.float64)
    given = {k: _per_joint(section[k], dof, f"user_data.joint_limits.{k}", path) for k in section}
    if "position_min" in given:
        lo = np.maximum(lo, given["position_min"])
    if "position_max" in given:
        hi = np.minimum(hi, given["position_max"])
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        j = int(bad[0])
        raise _fail(f"joint {j} ({model.joint_names[j]}): minimum {lo[j]} above maximum {hi[j]} "
                    "(the model's limits count too)", "user_data.joint_limits", path)
    for key in ("velocity_max", "acceleration_max"):
        if key in given and not np.all(given[key] > 0):
            raise _fail("must be positive", f"user_data.joint_limits.{key}", path)
    if "velocity_max" in given:
        vmax = np.minimum(vmax, given["velocity_max"])
    amax = rated_acceleration(vmax)
    if "acceleration_max" in given:
        amax = given["acceleration_max"]
    return Limits(lo, hi, vmax, emax, acceleration_max=amax)


def safety_from(model: RobotModel, user_data: Mapping[str, Any], path: Path | None = None) -> SafetySettings:
    """Stop behaviour, at_goal tolerances and 'damp' damping from ``user_data.safety``."""
    section = _mapping(user_data, "safety", _SAFETY_KEYS, path)
    out = SafetySettings()
    if "stop_behaviour" in section:
        try:
            out.stop_behaviour = StopBehaviour(section["stop_behaviour"])
        except ValueError:
            raise _fail(f"must be one of {', '.join(b.value for b in StopBehaviour)}, got "
                        f"{section['stop_behaviour']!r}", "user_data.safety.stop_behaviour", path) from None
    for key in ("at_goal_position_tolerance", "at_goal_velocity_tolerance"):
        if key in section:
            value = section[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise _fail(f"must be a positive number, got {value!r}", f"user_data.safety.{key}", path)
            setattr(out, key, float(value))
    if "damping" in section:
        out.damping = _per_joint(section["damping"], model.dof, "user_data.safety.damping", path)
    return out


def default_damping(limits: Limits) -> FloatArray:
    """'damp' stop damping [N·m·s/rad]: :data:`DAMPING_FRACTION` x rated effort / rated speed."""
    d = DAMPING_FRACTION * limits.effort_max / limits.velocity_max
    return np.where(np.isfinite(d), d, 1.0)
