"""The arm's workspace from a robot config: ``user_data.workspace``.

hebi-py keeps ``user_data`` as written, so the section stays loadable by
``hebi.config.load_config``; hebictl reads it here. Every object has a ``clearance`` [m] the arm
must keep from it; all coordinates are in the world (base) frame::

    user_data:
      workspace:
        table: {height: 0.0, clearance: 0.01}   # a plane z = height; default: the base plane; false: none
                                                # (physical: false: checked, but not a geom in the sim)
        self_clearance: 0.0                     # [m] the arm's own non-adjacent bodies
        slowdown: {self: 0.02, workspace: 0.03} # [m] jog/stream speed scaling thresholds (MoveIt Servo style)
        objects:
          - {type: box, name: crate, center: [0.4, 0, 0.1], size: [0.2, 0.3, 0.2], clearance: 0.02}
          - {type: cylinder, name: post, center: [0, 0.5, 0.3], radius: 0.05, height: 0.6}
          - {type: wall, name: fence, point: [-0.3, 0, 0], normal: [1, 0, 0]}    # keep to the normal's side
          - {type: keep_out, name: camera, center: [0.3, 0.3, 0.5], size: [0.1, 0.1, 0.1]}

``table``, ``box`` and ``cylinder`` are physical (the sim adds them as geoms); ``wall`` and
``keep_out`` are virtual (checked, not simulated). Bad values raise
:class:`~hebictl.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.collision.shapes import Shape, segment_pose
from hebictl.errors import ConfigError

#: default clearance [m] of every workspace object and of the table
DEFAULT_CLEARANCE = 0.01
#: default clearance [m] between the arm's own non-adjacent bodies
DEFAULT_SELF_CLEARANCE = 0.01
#: MoveIt Servo-style slow-down thresholds [m]: speed scale 1 at/beyond, 0 at contact
DEFAULT_SLOWDOWN = {"self": 0.02, "workspace": 0.03}
OBJECT_TYPES = ("box", "cylinder", "wall", "keep_out")
PHYSICAL = ("table", "box", "cylinder")
_KEYS = {"table", "self_clearance", "slowdown", "objects"}
_OBJECT_KEYS = {"box": {"center", "size"}, "keep_out": {"center", "size"}, "cylinder": {"center", "radius", "height"},
                "wall": {"point", "normal"}}


@dataclass(frozen=True)
class Workspace:
    """Parsed workspace: world shapes (``body == -1``, each with its clearance) and thresholds."""

    shapes: tuple[Shape, ...] = ()
    self_clearance: float = DEFAULT_SELF_CLEARANCE
    slowdown_self: float = DEFAULT_SLOWDOWN["self"]
    slowdown_workspace: float = DEFAULT_SLOWDOWN["workspace"]
    table_height: float | None = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


class _Reader:
    def __init__(self, path: str | Path | None) -> None:
        self.path = path

    def fail(self, message: str, key: str) -> ConfigError:
        return ConfigError(message, file=self.path, key=f"user_data.workspace.{key}" if key else "user_data.workspace")

    def number(self, obj: Mapping[str, Any], name: str, key: str, default: float | None = None, *,
               low: float = -1e3, high: float = 1e3) -> float:
        value = obj.get(name, default)
        if value is None:
            raise self.fail("is required", f"{key}.{name}".lstrip("."))
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) \
                or not low <= value <= high:
            raise self.fail(f"must be a number in [{low:g}, {high:g}], got {value!r}", f"{key}.{name}".lstrip("."))
        return float(value)

    def vector(self, obj: Mapping[str, Any], name: str, key: str, *, positive: bool = False) -> np.ndarray:
        value = obj.get(name)
        where = f"{key}.{name}"
        if not isinstance(value, list | tuple) or len(value) != 3:
            raise self.fail(f"must be a list of 3 numbers, got {value!r}", where)
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
            raise self.fail(f"must be a list of 3 numbers, got {value!r}", where)
        arr = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > 1e3):
            raise self.fail(f"numbers must be finite and within 1000 m, got {value!r}", where)
        if positive and np.any(arr <= 0):
            raise self.fail(f"sizes must be > 0, got {value!r}", where)
        return arr

    def mapping(self, value: Any, key: str, allowed: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(f"must be a mapping, got {type(value).__name__}", key)
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})",
                            f"{key}.{unknown[0]}".lstrip("."))
        return value

    def obj(self, raw: Any, i: int) -> Shape:
        key = f"objects[{i}]"
        if not isinstance(raw, Mapping):
            raise self.fail(f"must be a mapping, got {type(raw).__name__}", key)
        kind = raw.get("type")
        if kind not in OBJECT_TYPES:
            raise self.fail(f"type must be one of {', '.join(OBJECT_TYPES)}, got {kind!r}", f"{key}.type")
        obj = self.mapping(raw, key, {"type", "name", "clearance"} | _OBJECT_KEYS[kind])
        name = obj.get("name", f"{kind}{i}")
        if not isinstance(name, str) or not name:
            raise self.fail(f"must be a non-empty string, got {name!r}", f"{key}.name")
        clearance = self.number(obj, "clearance", key, DEFAULT_CLEARANCE, low=0.0, high=1.0)
        T = np.eye(4)
        meta = {"type": kind, "virtual": kind not in PHYSICAL}
        if kind in ("box", "keep_out"):
            T[:3, 3] = self.vector(obj, "center", key)
            size = self.vector(obj, "size", key, positive=True)
            return Shape("box", tuple(float(s) / 2 for s in size), T, -1, name, clearance=clearance, meta=meta)
        if kind == "cylinder":
            T[:3, 3] = self.vector(obj, "center", key)
            r = self.number(obj, "radius", key, low=1e-4, high=100.0)
            h = self.number(obj, "height", key, low=1e-4, high=100.0)
            return Shape("cylinder", (r, h / 2), T, -1, name, clearance=clearance, meta=meta)
        point = self.vector(obj, "point", key)
        normal = self.vector(obj, "normal", key)
        length = float(np.linalg.norm(normal))
        if length < 1e-9:
            raise self.fail("must not be zero", f"{key}.normal")
        T, _ = segment_pose(point, point + normal / length)
        T[:3, 3] = point
        return Shape("plane", (), T, -1, name, clearance=clearance, meta=meta)

    def read(self, section: Any) -> Workspace:
        undeclared = section is None  # no workspace in the config: the table is the assumed default
        if section is None:
            section = {}
        ws = self.mapping(section, "", _KEYS)
        shapes: list[Shape] = []
        table = ws.get("table", {})
        height: float | None = None
        if table is not False:
            tab = self.mapping(table if table is not None else {}, "table", {"height", "clearance", "physical"})
            physical = tab.get("physical", True)
            if not isinstance(physical, bool):
                raise self.fail(f"must be true or false, got {physical!r}", "table.physical")
            height = self.number(tab, "height", "table", 0.0)
            T = np.eye(4)
            T[2, 3] = height
            shapes.append(Shape("plane", (), T, -1, "table", clearance=self.number(tab, "clearance", "table",
                                DEFAULT_CLEARANCE, low=0.0, high=1.0),
                                meta={"type": "table", "virtual": not physical, "default": undeclared}))
        objects = ws.get("objects", [])
        if not isinstance(objects, list):
            raise self.fail(f"must be a list, got {type(objects).__name__}", "objects")
        shapes.extend(self.obj(o, i) for i, o in enumerate(objects))
        names = [s.name for s in shapes]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise self.fail(f"two objects are named {dup!r}", "objects")
        slow = self.mapping(ws.get("slowdown", {}), "slowdown", {"self", "workspace"})
        self_clearance = self.number(ws, "self_clearance", "", DEFAULT_SELF_CLEARANCE, low=0.0, high=1.0)
        return Workspace(tuple(shapes), self_clearance,
                         self.number(slow, "self", "slowdown", DEFAULT_SLOWDOWN["self"], low=0.0, high=1.0),
                         self.number(slow, "workspace", "slowdown", DEFAULT_SLOWDOWN["workspace"], low=0.0, high=1.0),
                         height)


def workspace_from(user_data: Mapping[str, Any] | None, path: str | Path | None = None) -> Workspace:
    """The workspace of a config's ``user_data`` (the default table when it declares none)."""
    section = (user_data or {}).get("workspace")
    return _Reader(path).read(None if section is False else section)
