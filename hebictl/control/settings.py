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
        monitors:                        # execution monitors (docs/monitors.md): per monitor, each key optional
          contact: {reaction: stop, threshold_fraction: 0.1}   # or thresholds: [2, 4, 2, 2, 0.5, 0.5] N·m
          tracking_error: {reaction: hold}

A plugin entry ``type: OvertorqueFaultMonitor`` (hebi-py 2.16) with ``base_torque_error_limit``
[N·m] sets the contact monitor's residual threshold floor, so configs written for hebi.arm keep
their collision sensitivity.

Limits from the model file (URDF/SDF/MJCF joint limits) apply too: the arm uses the tighter
of both. Speeds and efforts can only be lowered below the model's ratings, never raised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
_SAFETY_KEYS = ("stop_behaviour", "at_goal_position_tolerance", "at_goal_velocity_tolerance", "damping",
                "monitors")
#: what a monitor's finding may make the arm do (Arm.react): record only, brake then hold, latched
#: stop holding, latched stop damping
REACTIONS = ("event", "hold", "stop", "damp")
#: every execution monitor's settings and defaults (``user_data.safety.monitors.<name>.<key>``);
#: the one table the monitors, the config check and docs/monitors.md (checked by a test) follow.
#: Units: s, rad, rad/s, kg, m/s, and "fraction" of a joint's rated effort.
MONITOR_DEFAULTS: dict[str, dict[str, Any]] = {
    "contact": {"reaction": "stop", "observer_gain": 60.0, "threshold_fraction": 0.05, "threshold_min": 0.5,
                "thresholds": None, "payload_mass_uncertainty": 0.25, "payload_lever": 0.1, "late_widening": 4.0,
                "motor_time_constant": 0.01},
    "tracking_error": {"reaction": "hold", "base_error": 0.15, "error_per_speed": 0.25, "sustain_time": 0.5},
    "model_mismatch": {"reaction": "event", "rest_speed": 0.5, "rest_time": 0.3, "min_mass": 0.2},
    "command_lost": {"reaction": "stop", "echo_tolerance": 1e-5, "tolerated_failures": 2},
    "control_gap": {"reaction": "stop"},
    "imu_implausible": {"reaction": "event", "max_angle": 0.2},
    "feedback_late": {"reaction": "event", "max_age": 0.25},
    "damp_sinking": {"reaction": "stop", "max_speed": 0.15},
    "gravcomp_sinking": {"reaction": "hold", "max_speed": 0.05, "sustain_time": 0.1, "min_force": 2.0},
    "mirror_lost": {"reaction": "event", "echo_tolerance": 1e-5, "tolerated_failures": 2},
}


#: per-joint settings (a list of one positive number per joint, or one number for all; default None:
#: derived from the scalar keys), as Franka's users set collision thresholds per joint
PER_JOINT_KEYS: frozenset[tuple[str, str]] = frozenset({("contact", "thresholds")})


@dataclass
class SafetySettings:
    """How the arm stops and when it calls a goal reached (see the module docstring)."""

    stop_behaviour: StopBehaviour = StopBehaviour.HOLD
    at_goal_position_tolerance: float = AT_GOAL_POSITION_TOLERANCE
    at_goal_velocity_tolerance: float = AT_GOAL_VELOCITY_TOLERANCE
    damping: FloatArray | None = None
    #: per monitor, its settings (every key of MONITOR_DEFAULTS filled in)
    monitors: dict[str, dict[str, Any]] = field(default_factory=lambda: monitor_settings({}))


def monitor_settings(section: Mapping[str, Any], path: Path | None = None,
                     plugins: Sequence[Any] = (), dof: int | None = None) -> dict[str, dict[str, Any]]:
    """``user_data.safety.monitors`` checked against :data:`MONITOR_DEFAULTS` and filled in;
    ``plugins``: the config's plugin entries (an ``OvertorqueFaultMonitor``'s
    ``base_torque_error_limit`` [N·m] becomes ``contact.threshold_min``); ``dof``: the arm's joint
    count, which a per-joint key (:data:`PER_JOINT_KEYS`) must match."""
    out = {name: dict(defaults) for name, defaults in MONITOR_DEFAULTS.items()}
    for p in plugins:
        if getattr(p, "type", None) == "OvertorqueFaultMonitor" and getattr(p, "enabled", True):
            limit = dict(getattr(p, "params", None) or {}).get("base_torque_error_limit")
            if isinstance(limit, int | float) and not isinstance(limit, bool) and limit > 0:
                out["contact"]["threshold_min"] = float(limit)
    for name, given in section.items():
        key = f"user_data.safety.monitors.{name}"
        if name not in MONITOR_DEFAULTS:
            raise _fail(f"unknown monitor {name!r}; monitors: {', '.join(MONITOR_DEFAULTS)}", key, path)
        if not isinstance(given, Mapping):
            raise _fail(f"must be a mapping, got {given!r}", key, path)
        for k, value in given.items():
            if k not in MONITOR_DEFAULTS[name]:
                raise _fail(f"unknown key {k!r}; valid: {', '.join(MONITOR_DEFAULTS[name])}", f"{key}.{k}", path)
            out[name][k] = _monitor_value(name, k, value, dof, f"{key}.{k}", path)
    return out


def _monitor_value(name: str, k: str, value: Any, dof: int | None, key: str, path: Path | None) -> Any:
    """One monitor setting, checked: a reaction, a per-joint list of positive numbers, or a number >= 0."""
    if k == "reaction":
        if value not in REACTIONS:
            raise _fail(f"must be one of {', '.join(REACTIONS)}, got {value!r}", key, path)
        return value
    if (name, k) in PER_JOINT_KEYS:
        return _per_joint_positive(value, dof, key, path)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0 or not math.isfinite(value):
        raise _fail(f"must be a finite number >= 0, got {value!r}", key, path)
    return float(value)


def _per_joint_positive(value: Any, dof: int | None, key: str, path: Path | None) -> list[float]:
    """A per-joint setting: one finite positive number per joint (``dof`` of them), or one for all."""
    items = value if isinstance(value, list | tuple) else [value]
    want = f"{dof} numbers (one per joint)" if dof is not None else "one number per joint"
    if not items or any(isinstance(v, bool) or not isinstance(v, int | float) for v in items):
        raise _fail(f"needs {want} or one for all, got {value!r}", key, path)
    if len(items) != 1 and dof is not None and len(items) != dof:
        raise _fail(f"needs {want} or one for all, got {len(items)}: {value!r}", key, path)
    bad = [v for v in items if not (math.isfinite(v) and v > 0)]
    if bad:
        raise _fail(f"every value must be a finite number > 0, got {bad[0]!r} in {value!r}", key, path)
    vals = [float(v) for v in items]
    return vals * dof if len(vals) == 1 and dof is not None else vals


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


def safety_from(model: RobotModel, user_data: Mapping[str, Any], path: Path | None = None,
                plugins: Sequence[Any] = ()) -> SafetySettings:
    """Stop behaviour, at_goal tolerances, 'damp' damping and the monitors from ``user_data.safety``
    (``plugins``: the config's plugin entries, see :func:`monitor_settings`)."""
    section = _mapping(user_data, "safety", _SAFETY_KEYS, path)
    out = SafetySettings()
    monitors = section.get("monitors") or {}
    if not isinstance(monitors, Mapping):
        raise _fail(f"must be a mapping, got {monitors!r}", "user_data.safety.monitors", path)
    out.monitors = monitor_settings(monitors, path, plugins, model.dof)
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
