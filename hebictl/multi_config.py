"""A multi-arm config (``*.multi.yaml``): several HEBI robot configs placed in one shared world frame.

HEBI has no file for several arms: its leader-follower and bimanual kits keep one robot config per
arm (``tready_sub_leader_arm.cfg.yaml`` and ``tready_sub_follower_arm.cfg.yaml``, families
``Tready-Sub-Leader`` / ``Tready-Sub-Follower``) and the program opens each. This file lists those
robot configs, unchanged, with what they cannot say: each arm's name, where its base stands in the
shared world frame, and (optionally) other module families, so one robot config can serve two arms
(on hardware two arms must not address the same modules)::

    multi_arm: 1                            # this format's version
    arm_clearance: 0.02                     # [m] every arm keeps this far from every other arm
    arms:
      - name: left                          # [A-Za-z0-9_-], unique
        config: x-series-6dof.cfg.yaml      # a HEBI robot config, relative to this file
        base: {xyz: [0, 0.3, 0], rpy: [0, 0, 0]}   # [m], [rad]: the arm's base frame in the world
        families: [Left]                    # optional: replaces the robot config's families
      - name: right
        config: x-series-6dof.cfg.yaml
        base: {xyz: [0, -0.3, 0]}
    base:                                   # optional: a mobile base, a plain velocity group
      name: base                            # [A-Za-z0-9_-], not an arm's name
      families: [Rosie]                     # HEBI's words: one family, or one per wheel
      names: [W1, W2, W3]                   # the wheel modules
      actuator: T8-3                        # the wheels' actuator type: its rated speed bounds them
      max_velocity: 9.6                     # [rad/s] per wheel (one, or one per wheel); default rated
      max_acceleration: 19                  # [rad/s^2] per wheel; default rated speed / 0.5 s
      command_ttl: 0.25                     # [s] a velocity command's life (dead-man)
      gains: gains/A-2592-01.xml            # optional HEBI gains XML, relative to this file

Everything else of an arm (names, hrdf, gains, plugins, ``user_data``: limits, workspace,
safety, home position, a gripper with ``has_gripper``) is its robot config's, read by
:func:`hebictl.config.load_config` with its own checks. The YAML is read with the same bounds as a
robot config (:mod:`hebictl.yaml_load`); every error is a :class:`~hebictl.errors.ConfigError`
naming the file, the line and the key (``arms[1].base.xyz``). See docs/multi_arm.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.config import RobotConfig, did_you_mean, load_config, yaml_key_line
from hebictl.errors import ConfigError, FormatError, ModelError
from hebictl.formats.hrdf.library import element_spec, known_types
from hebictl.gains import GroupGains, load_gains
from hebictl.limits import check_path_text, is_regular_file
from hebictl.yaml_load import describe, load_yaml

#: versions of this format
MULTI_VERSIONS = frozenset({1})
TOP_KEYS = frozenset({"multi_arm", "arms", "arm_clearance", "base"})
ARM_KEYS = frozenset({"name", "config", "base", "families"})
BASE_KEYS = frozenset({"xyz", "rpy"})
#: at most this many arms in one file (one process, one loop)
MAX_ARMS = 16
#: [m] default clearance between two arms
DEFAULT_ARM_CLEARANCE = 0.02
#: [m] a base further than this from the world origin is a typo (mm for m), not a cell
MAX_BASE_OFFSET = 20.0
_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: keys of the optional mobile base (a velocity group): HEBI's ``families``/``names``/``gains``
#: (its ``kits/bases`` configs), the wheels' ``actuator`` type and the command's bounds
BASE_GROUP_KEYS = frozenset({"name", "families", "names", "actuator", "max_velocity", "max_acceleration",
                             "command_ttl", "gains"})
#: at most this many wheels (HEBI's bases have 2-4: diff drive, omni, mecanum)
MAX_WHEELS = 8
#: [s] the default ``max_acceleration`` takes a wheel from its rated speed to rest in this time.
#: HEBI's omni example (``kits/bases/omni_base.py``, ``build_smooth_velocity_trajectory``) ramps
#: to the joystick's velocity in 0.15 s and back to rest in 0.3 s; its joystick asks for a fraction
#: of the rated speed, so a full-speed stop in 0.5 s asks for an acceleration of the same order
#: (T8-3: 23 rad/s^2, 1.75 m/s^2 at a 76 mm wheel's rim), gentler on a base carrying an arm.
DEFAULT_STOP_TIME = 0.5
#: [s] default and bounds of a base command's life: the velocity holds this long without a fresh
#: one (HEBI's modules' own ``command_lifetime`` default is 0.25 s, as hebictl's backends)
DEFAULT_COMMAND_TTL = 0.25
COMMAND_TTL_RANGE = (0.005, 1.0)


@dataclass(frozen=True)
class ArmEntry:
    """One arm: its ``name``, its robot ``config`` (families replaced if the entry says so) and
    ``base``, the 4x4 pose of its base frame in the shared world frame."""

    name: str
    config: RobotConfig
    base: FloatArray


@dataclass(frozen=True, eq=False)
class BaseEntry:
    """A mobile base: a group of wheel modules commanded in velocity, with no kinematic model.

    ``max_velocity`` [rad/s] and ``max_acceleration`` [rad/s^2] are per wheel; ``rated_speed``
    [rad/s] and ``rated_effort`` [N m] are the ``actuator`` type's (HEBI's library table);
    ``command_ttl`` [s] how long a velocity command holds; ``gains`` the loaded gains XML, or None."""

    name: str
    families: tuple[str, ...]
    names: tuple[str, ...]
    actuator: str
    rated_speed: float
    rated_effort: float
    max_velocity: FloatArray
    max_acceleration: FloatArray
    command_ttl: float
    gains: GroupGains | None = None

    @property
    def size(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class MultiArmConfig:
    """A loaded multi-arm config: the arms in file order, the clearance [m] between any two, and
    the mobile base (None: none)."""

    path: Path
    arms: tuple[ArmEntry, ...]
    arm_clearance: float
    base: BaseEntry | None = None

    def arm(self, name: str) -> ArmEntry:
        for a in self.arms:
            if a.name == name:
                return a
        raise KeyError(name)


def rpy_matrix(rpy: Any) -> FloatArray:
    """Rotation ``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` of roll, pitch, yaw [rad] (URDF's and HEBI's convention)."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def is_multi_arm_config(path: str | Path) -> bool:
    """True if ``path`` is a YAML mapping with this format's ``multi_arm`` (or ``arms``) key: what
    ``hebictl run`` asks before choosing the one-arm or the multi-arm reader."""
    p = Path(path)
    if not p.name.lower().endswith((".yaml", ".yml")):
        return False
    try:
        doc = load_yaml(p)
    except ConfigError:
        return False
    return isinstance(doc, dict) and ("multi_arm" in doc or "arms" in doc)


def load_multi_arm_config(path: str | Path, *, require_files: bool = True) -> MultiArmConfig:
    """Load and check a multi-arm config; each arm's robot config is loaded with :func:`load_config`."""
    path = Path(check_path_text(path, error=ConfigError, what="config path")).resolve()
    return _Reader(path, require_files).read(load_yaml(path))


class _Reader:
    def __init__(self, path: Path, require_files: bool) -> None:
        self.path, self.require_files = path, require_files

    def fail(self, message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, file=self.path, key=key, line=yaml_key_line(self.path, key))

    def read(self, doc: Any) -> MultiArmConfig:
        self.doc = doc
        if not isinstance(doc, dict):
            raise self.fail(f"top level must be a mapping with multi_arm and arms, got {describe(doc)}")
        self.keys(doc, TOP_KEYS, "")
        version = doc.get("multi_arm")
        if version is None:
            raise self.fail("required key is missing (the format's version: multi_arm: 1)", "multi_arm")
        if isinstance(version, bool) or version not in MULTI_VERSIONS:
            raise self.fail(f"unknown version {describe(version)}; known: {sorted(MULTI_VERSIONS)}", "multi_arm")
        arms = doc.get("arms")
        if not isinstance(arms, list) or not arms:
            raise self.fail(f"must be a non-empty list of arms, got {describe(arms)}", "arms")
        if len(arms) > MAX_ARMS:
            raise self.fail(f"{len(arms)} arms; at most {MAX_ARMS} run in one process", "arms")
        clearance = doc.get("arm_clearance", DEFAULT_ARM_CLEARANCE)
        if isinstance(clearance, bool) or not isinstance(clearance, int | float) or not 0.0 <= clearance <= 0.5:
            raise self.fail(f"must be a number of metres in [0, 0.5], got {describe(clearance)}", "arm_clearance")
        entries = tuple(self.arm(a, f"arms[{i}]") for i, a in enumerate(arms))
        self.distinct(entries)
        base = BaseReader(self).read(doc["base"], entries) if "base" in doc else None
        return MultiArmConfig(self.path, entries, float(clearance), base)

    def keys(self, obj: dict[Any, Any], allowed: frozenset[str], key: str) -> None:
        for k in obj:
            if k not in allowed:
                where = f"{key}.{k}" if key else str(k)
                raise self.fail(f"unknown key{did_you_mean(str(k), allowed)}; allowed: {', '.join(sorted(allowed))}",
                                where)

    def arm(self, entry: Any, key: str) -> ArmEntry:
        if not isinstance(entry, dict):
            raise self.fail(f"must be a mapping with name, config and base, got {describe(entry)}", key)
        self.keys(entry, ARM_KEYS, key)
        for required in ("name", "config"):
            if required not in entry:
                raise self.fail("required key is missing", f"{key}.{required}")
        name = entry["name"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise self.fail(f"must be 1-32 characters of A-Z a-z 0-9 _ -, got {describe(name)}", f"{key}.name")
        cfg = self.robot_config(entry["config"], f"{key}.config")
        if "families" in entry:
            cfg = self.families(cfg, entry["families"], f"{key}.families")
        return ArmEntry(name, cfg, self.base(entry.get("base", {}), f"{key}.base"))

    def robot_config(self, value: Any, key: str) -> RobotConfig:
        if not isinstance(value, str) or not value:
            raise self.fail(f"must be the path of a robot config, got {describe(value)}", key)
        try:
            check_path_text(value, error=ConfigError, what="path")
        except ConfigError as exc:
            raise self.fail(exc.message, key) from None
        resolved = (self.path.parent / value).resolve()
        if not is_regular_file(resolved):
            raise self.fail(f"file not found: {value} (looked for {resolved})", key)
        try:
            return load_config(resolved, require_files=self.require_files)
        except ConfigError as exc:  # the robot config's own error, and which arm it is
            raise ConfigError(f"{exc} (the robot config of {key})", file=self.path, key=key,
                              line=yaml_key_line(self.path, key)) from exc

    def families(self, cfg: RobotConfig, value: Any, key: str) -> RobotConfig:
        items = value if isinstance(value, list) else [value]
        if not items or any(not isinstance(f, str) or not f for f in items):
            raise self.fail(f"must be a family name or a list of them, got {describe(value)}", key)
        if len(items) == 1:
            items = items * len(cfg.names)
        elif len(items) != len(cfg.names):
            raise self.fail(f"{len(items)} families for the robot config's {len(cfg.names)} names "
                            "(give one family, or one per name)", key)
        return replace(cfg, families=tuple(items))

    def base(self, value: Any, key: str) -> FloatArray:
        if not isinstance(value, dict):
            raise self.fail(f"must be a mapping {{xyz: [x, y, z], rpy: [r, p, y]}}, got {describe(value)}", key)
        self.keys(value, BASE_KEYS, key)
        T = np.eye(4)
        T[:3, 3] = self.triple(value.get("xyz", [0, 0, 0]), f"{key}.xyz", MAX_BASE_OFFSET, "m")
        T[:3, :3] = rpy_matrix(self.triple(value.get("rpy", [0, 0, 0]), f"{key}.rpy", 2 * math.pi, "rad"))
        return T

    def triple(self, value: Any, key: str, bound: float, unit: str) -> list[float]:
        if not isinstance(value, list) or len(value) != 3:
            raise self.fail(f"must be a list of 3 numbers [{unit}], got {describe(value)}", key)
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or abs(v) > bound:
                raise self.fail(f"must be a finite number within ±{bound:g} {unit}, got {describe(v)}", f"{key}[{i}]")
        return [float(v) for v in value]

    def distinct(self, arms: tuple[ArmEntry, ...]) -> None:
        """Arm names unique; no module (family/name) in two arms: on hardware both would command it."""
        seen: dict[tuple[str, str], str] = {}
        for i, a in enumerate(arms):
            if a.name in [b.name for b in arms[:i]]:
                raise self.fail(f"arm name {a.name!r} used twice", f"arms[{i}].name")
            for pair in zip(a.config.families, a.config.names, strict=True):
                if pair in seen:
                    raise self.fail(f"module {pair[0]}/{pair[1]} is in arm {seen[pair]!r} and in arm {a.name!r}: "
                                    "two arms must not command the same module (give this arm other families: "
                                    "families: [...])", f"arms[{i}].families" if "families" in self.doc["arms"][i]
                                    else f"arms[{i}].config")
                seen[pair] = a.name


class BaseReader:
    """The ``base`` entry (module doc): names and families as HEBI's base configs give them, the
    wheels' actuator type from HEBI's library, bounds defaulted from its rated speed and checked
    against it."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader

    def fail(self, message: str, key: str) -> ConfigError:
        return self.reader.fail(message, key)

    def read(self, value: Any, arms: tuple[ArmEntry, ...]) -> BaseEntry:
        if not isinstance(value, dict):
            raise self.fail(f"must be a mapping with name, families, names and actuator, got {describe(value)}",
                            "base")
        self.reader.keys(value, BASE_GROUP_KEYS, "base")
        for required in ("name", "families", "names", "actuator"):
            if required not in value:
                raise self.fail("required key is missing", f"base.{required}")
        name = value["name"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise self.fail(f"must be 1-32 characters of A-Z a-z 0-9 _ -, got {describe(name)}", "base.name")
        if name in [a.name for a in arms]:
            raise self.fail(f"{name!r} is an arm's name too: the base needs its own", "base.name")
        names = self.names(value["names"])
        families = self.families(value["families"], len(names))
        self.not_an_arms(families, names, arms)
        actuator, rated, effort = self.actuator(value["actuator"])
        vmax = self.per_wheel(value.get("max_velocity", rated), "base.max_velocity", len(names), rated, "rad/s")
        amax = self.per_wheel(value.get("max_acceleration", rated / DEFAULT_STOP_TIME), "base.max_acceleration",
                              len(names), math.inf, "rad/s^2")
        ttl = value.get("command_ttl", DEFAULT_COMMAND_TTL)
        lo, hi = COMMAND_TTL_RANGE
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not lo <= ttl <= hi:
            raise self.fail(f"must be a number of seconds in [{lo:g}, {hi:g}], got {describe(ttl)}",
                            "base.command_ttl")
        gains = self.gains(value["gains"], len(names)) if "gains" in value else None
        return BaseEntry(name, families, names, actuator, rated, effort, vmax, amax, float(ttl), gains)

    def names(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or any(not isinstance(n, str) or not n for n in value):
            raise self.fail(f"must be a non-empty list of module names, got {describe(value)}", "base.names")
        if len(value) > MAX_WHEELS:
            raise self.fail(f"{len(value)} wheels; at most {MAX_WHEELS}", "base.names")
        return tuple(value)

    def families(self, value: Any, n: int) -> tuple[str, ...]:
        items = value if isinstance(value, list) else [value]
        if not items or any(not isinstance(f, str) or not f for f in items):
            raise self.fail(f"must be a family name or a list of them, got {describe(value)}", "base.families")
        if len(items) == 1:
            items = items * n
        elif len(items) != n:
            raise self.fail(f"{len(items)} families for {n} names (give one family, or one per name)",
                            "base.families")
        return tuple(items)

    def not_an_arms(self, families: tuple[str, ...], names: tuple[str, ...], arms: tuple[ArmEntry, ...]) -> None:
        """No wheel is an arm's module (both would command it), nor named twice."""
        pairs = list(zip(families, names, strict=True))
        for i, pair in enumerate(pairs):
            if pair in pairs[:i]:
                raise self.fail(f"module {pair[0]}/{pair[1]} is named twice", "base.names")
            for a in arms:
                if pair in zip(a.config.families, a.config.names, strict=True):
                    raise self.fail(f"module {pair[0]}/{pair[1]} is in arm {a.name!r} and in the base: "
                                    "two groups must not command the same module", "base.names")

    def actuator(self, value: Any) -> tuple[str, float, float]:
        """The type's canonical name, rated speed [rad/s] and rated effort [N m] (HEBI's library)."""
        types = known_types("actuator")
        match = next((t for t in types if isinstance(value, str) and t.lower() == value.lower()), None)
        if match is None:
            raise self.fail(f"unknown actuator type {describe(value)}{did_you_mean(str(value), types)}; "
                            f"known: {', '.join(types)}", "base.actuator")
        try:
            spec = element_spec("actuator", match)
        except ModelError as exc:   # a library entry without ratings
            raise self.fail(str(exc), "base.actuator") from None
        if spec.max_speed is None or spec.max_effort is None:
            raise self.fail(f"HEBI's library gives {match} no rated speed", "base.actuator")
        return match, float(spec.max_speed), float(spec.max_effort)

    def per_wheel(self, value: Any, key: str, n: int, bound: float, unit: str) -> FloatArray:
        items = value if isinstance(value, list) else [value]
        if len(items) not in (1, n):
            raise self.fail(f"{len(items)} values for {n} wheels (give one, or one per wheel)", key)
        for v in items:
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                raise self.fail(f"must be positive finite numbers [{unit}], got {describe(v)}", key)
            if v > bound * (1 + 1e-9):
                raise self.fail(f"{v:g} {unit} is over the actuator's rated {bound:.4g} {unit}", key)
        arr = np.array(np.broadcast_to(np.asarray(items, dtype=np.float64), (n,)))
        arr.setflags(write=False)
        return arr

    def gains(self, value: Any, n: int) -> GroupGains:
        if not isinstance(value, str) or not value:
            raise self.fail(f"must be the path of a HEBI gains XML, got {describe(value)}", "base.gains")
        resolved = (self.reader.path.parent / value).resolve()
        if not is_regular_file(resolved):
            raise self.fail(f"file not found: {value} (looked for {resolved})", "base.gains")
        try:
            gains = load_gains(resolved)
        except (ConfigError, FormatError) as exc:
            raise self.fail(f"{exc} (the gains of the base)", "base.gains") from exc
        if gains.width not in (1, n):
            raise self.fail(f"the gains file has {gains.width} values per field, the base {n} wheels", "base.gains")
        return gains


__all__ = ["DEFAULT_ARM_CLEARANCE", "DEFAULT_COMMAND_TTL", "DEFAULT_STOP_TIME", "ArmEntry", "BaseEntry",
           "MultiArmConfig", "is_multi_arm_config", "load_multi_arm_config",
           "rpy_matrix"]
