"""Saved paths of teach and repeat: a JSON file with a version, read back bounded and checked.

HEBI has no file format for taught paths (the C++ double-arm example writes ad-hoc CSV). This one::

    {"format": "hebictl-path", "version": 1,
     "joint_names": ["J1_base", ...],
     "waypoints": [{"kind": "stop", "time": 3.0, "position": [...], "velocity": [0, ...]},
                   {"kind": "flow", "time": 2.5, "position": [...], "velocity": null}]}

``time`` [s] is the segment's duration from the waypoint before (the first: from where the arm
is when the path starts), as HEBI's teach-and-repeat adds them; ``kind`` ``stop`` waypoints have
zero velocity, ``flow`` ones a free velocity (``null``; the trajectory passes through without
stopping). :func:`goal_of` turns a path into a :class:`~hebictl.control.goal.Goal` with cumulative
times, its last waypoint always a stop (a path ends at rest), for ``Arm.set_goal``'s admission.

Reading is bounded (:data:`MAX_PATH_BYTES`, :data:`MAX_WAYPOINTS`) and every error is a
:class:`~hebictl.errors.ConfigError` naming the file and the key (``waypoints[3].position``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.goal import Goal
from hebictl.errors import ConfigError
from hebictl.limits import read_regular_file

FORMAT = "hebictl-path"
VERSION = 1
MAX_PATH_BYTES = 4 << 20
MAX_WAYPOINTS = 10_000
KINDS = ("stop", "flow")


@dataclass(frozen=True)
class Waypoint:
    """One taught waypoint: ``kind`` stop or flow, ``time`` [s] from the waypoint before, ``position``
    [rad], ``velocity`` [rad/s] (zeros for a stop, None for a flow waypoint: free)."""

    kind: str
    time: float
    position: FloatArray
    velocity: FloatArray | None


@dataclass(frozen=True)
class TaughtPath:
    joint_names: tuple[str, ...]
    waypoints: tuple[Waypoint, ...]

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "joint_names": list(self.joint_names),
                "waypoints": [{"kind": w.kind, "time": w.time, "position": w.position.tolist(),
                               "velocity": None if w.velocity is None else w.velocity.tolist()}
                              for w in self.waypoints]}


def save_path(path: TaughtPath, file: str | os.PathLike[str]) -> Path:
    """Write ``path`` (JSON, one waypoint per line), atomically: a crash leaves the old file or the new."""
    out = Path(file)
    body = path.to_json()
    lines = ",\n  ".join(json.dumps(w) for w in body["waypoints"])
    head = {k: v for k, v in body.items() if k != "waypoints"}
    text = json.dumps(head)[:-1] + ', "waypoints": [\n  ' + lines + "\n]}\n"
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(out)
    except OSError as exc:
        raise ConfigError(f"cannot write the path: {exc.strerror or exc}", file=out) from None
    return out


def load_path(file: str | os.PathLike[str], joint_names: Sequence[str] | None = None) -> TaughtPath:
    """Read and check a saved path; ``joint_names``: the arm's, which the file's must equal."""
    data = read_regular_file(file, what="taught path", max_bytes=MAX_PATH_BYTES, error=ConfigError)
    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except ConfigError as exc:
        raise ConfigError(exc.message, file=file) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON: {exc.msg}", file=file, line=exc.lineno) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not JSON: {exc}", file=file) from None
    return _path_of(obj, file, joint_names)


def _no_constant(name: str) -> float:
    raise ConfigError(f"JSON {name} is not a number here")


def _path_of(obj: Any, file: str | os.PathLike[str], joint_names: Sequence[str] | None) -> TaughtPath:
    if not isinstance(obj, dict):
        raise ConfigError("a taught path is a JSON object", file=file)
    unknown = set(obj) - {"format", "version", "joint_names", "waypoints"}
    if unknown:
        raise ConfigError(f"unknown key(s) {sorted(unknown)}", file=file, key=sorted(unknown)[0])
    if obj.get("format") != FORMAT:
        raise ConfigError(f"format must be {FORMAT!r}", file=file, key="format")
    if obj.get("version") != VERSION:
        raise ConfigError(f"version {obj.get('version')!r} is not supported (this hebictl reads {VERSION})",
                          file=file, key="version")
    names = obj.get("joint_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError("joint_names must be a list of joint names", file=file, key="joint_names")
    if joint_names is not None and list(joint_names) != names:
        raise ConfigError(f"the path was taught on joints {names}, this arm has {list(joint_names)}",
                          file=file, key="joint_names")
    wps = obj.get("waypoints")
    if not isinstance(wps, list) or not wps or len(wps) > MAX_WAYPOINTS:
        raise ConfigError(f"waypoints must be a list of 1..{MAX_WAYPOINTS} waypoints", file=file, key="waypoints")
    return TaughtPath(tuple(names), tuple(_waypoint(w, f"waypoints[{i}]", len(names), file)
                                          for i, w in enumerate(wps)))


def _waypoint(w: Any, key: str, dof: int, file: str | os.PathLike[str]) -> Waypoint:
    if not isinstance(w, dict) or set(w) != {"kind", "time", "position", "velocity"}:
        raise ConfigError("a waypoint has exactly kind, time, position and velocity", file=file, key=key)
    if w["kind"] not in KINDS:
        raise ConfigError(f"kind must be stop or flow, got {w['kind']!r}"[:120], file=file, key=f"{key}.kind")
    t = w["time"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
        raise ConfigError(f"time must be a finite number of seconds > 0, got {t!r}"[:120], file=file, key=f"{key}.time")
    position = _vector(w["position"], dof, file, f"{key}.position")
    velocity = None if w["velocity"] is None else _vector(w["velocity"], dof, file, f"{key}.velocity")
    if w["kind"] == "stop" and (velocity is None or np.any(velocity != 0.0)):
        raise ConfigError("a stop waypoint has zero velocity", file=file, key=f"{key}.velocity")
    if w["kind"] == "flow" and velocity is not None:
        raise ConfigError("a flow waypoint's velocity is null (free)", file=file, key=f"{key}.velocity")
    return Waypoint(w["kind"], float(t), position, velocity)


def _vector(v: Any, dof: int, file: str | os.PathLike[str], key: str) -> FloatArray:
    if not isinstance(v, list) or len(v) != dof or not all(
            not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) for x in v):
        raise ConfigError(f"must be a list of {dof} finite numbers", file=file, key=key)
    return np.array(v, dtype=np.float64)


def goal_of(path: TaughtPath, dof: int) -> Goal:
    """The goal that plays ``path`` once from where the arm is: cumulative times; a stop waypoint at
    rest, a flow waypoint with free velocity and acceleration; the last waypoint a stop."""
    goal = Goal(dof)
    t = 0.0
    last = len(path.waypoints) - 1
    for i, w in enumerate(path.waypoints):
        t += w.time
        free = w.kind == "flow" and i != last
        goal.add_waypoint(t=t, position=w.position,
                          velocity=np.full(dof, np.nan) if free else np.zeros(dof),
                          acceleration=np.full(dof, np.nan) if free else np.zeros(dof))
    return goal
