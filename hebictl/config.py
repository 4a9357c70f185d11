"""HEBI robot-config YAML (``*.cfg.yaml``, versions 1.0 and 1.1): load, check, describe plugins.

A robot config names the modules of an arm (``families``/``names``), points at its HRDF model
and gains files, sets the feedback rate and command lifetime, lists the arm plugins (gravity
compensation, impedance control, ...) and carries free-form ``user_data``. The format is HEBI's
(https://github.com/HebiRobotics/robot-config); the reference reader is ``hebi.config.load_config``
plus the plugin construction in ``hebi.arm.create_from_config``.

hebi-py checks little: only the top-level key set and the shape of ``gains``/``plugins``; a wrong
type, a missing file or a misspelled plugin parameter surfaces later as a ``KeyError`` deep inside
``create_from_config``, or not at all. :func:`load_config` accepts what hebi accepts and resolves
it the same way, but checks every value up front and reports one :class:`ConfigError` naming the
file and the key (``plugins[2].kp``). Where hebi silently ignores something it may legitimately
not know yet (a plugin type newer than this table, an unknown ``version``), hebictl warns instead.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import ConfigError
from hebictl.limits import check_path_text, is_regular_file
from hebictl.yaml_load import describe, load_yaml

if TYPE_CHECKING:
    from hebictl.gains import GroupGains

#: Config format versions published by HEBI; others load with a warning (hebi does not check).
KNOWN_VERSIONS: frozenset[str] = frozenset({"1.0", "1.1"})
#: Top-level keys hebi's ``load_config`` allows; any other key is an error there and here.
TOP_LEVEL_KEYS: frozenset[str] = frozenset({
    "version", "families", "names", "hrdf", "gains", "feedback_frequency", "command_lifetime",
    "plugins", "user_data",
})
#: ``hebi.arm.create`` defaults, used when the config leaves the value out.
DEFAULT_FEEDBACK_FREQUENCY_HZ = 100.0
DEFAULT_COMMAND_LIFETIME_MS = 100.0
#: Keys every plugin entry may carry whatever its type (``hebi.arm.create_from_config``).
COMMON_PLUGIN_KEYS: frozenset[str] = frozenset({"type", "name", "enabled", "ramp_time"})


# --------------------------------------------------------------------------- plugin registry


@dataclass(frozen=True)
class PluginParam:
    """One parameter of a plugin type: its YAML shape, whether required, and hebi's default.

    ``kind`` is one of ``bool``, ``index`` (int >= 0), ``number``, ``positive`` (number > 0),
    ``vector`` (``length`` numbers), ``number_or_vector`` (a number or a list, sized per joint
    by :meth:`RobotConfig.check_against`) and ``single_name`` (a string or a one-string list).
    """

    kind: str
    required: bool = False
    default: Any = None
    length: int | None = None
    doc: str = ""


@dataclass(frozen=True)
class PluginSpec:
    """A plugin type hebi-py's ``create_from_config`` knows, with the parameters it reads."""

    type: str
    default_name: str
    params: Mapping[str, PluginParam]
    doc: str


_IDENTITY_3X3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_CARTESIAN = "[x, y, z, roll, pitch, yaw]"

#: Every plugin type of hebi-py 2.16 ``hebi.arm.create_from_config``; names and defaults are
#: the ones it uses. Other types are skipped by hebi (so hebictl warns and keeps them as given).
KNOWN_PLUGINS: Mapping[str, PluginSpec] = {spec.type: spec for spec in (
    PluginSpec("GravityCompensationEffort", "gravComp", {
        "imu_feedback_index": PluginParam("index", default=0,
                                          doc="module whose IMU gives the gravity direction"),
        "imu_frame_index": PluginParam("index", default=0,
                                       doc="model frame (output index) the IMU is attached to"),
        "imu_rotation_offset": PluginParam("vector", default=_IDENTITY_3X3, length=9,
                                           doc="3x3 IMU-to-frame rotation, row-major"),
    }, "Adds the joint efforts (N·m) that hold the arm against gravity."),
    PluginSpec("DynamicsCompensationEffort", "dynamicsComp", {},
               "Adds the joint efforts (N·m) for the commanded trajectory's accelerations."),
    PluginSpec("ImpedanceController", "impedanceController", {
        "gains_in_end_effector_frame": PluginParam("bool", required=True,
                                                   doc="gains expressed in the end-effector frame"),
        "kp": PluginParam("vector", required=True, length=6, doc=f"stiffness {_CARTESIAN}, N/m or N·m/rad"),
        "kd": PluginParam("vector", required=True, length=6,
                          doc=f"damping {_CARTESIAN}, N/(m/s) or N·m/(rad/s)"),
        "ki": PluginParam("vector", default=(0.0,) * 6, length=6,
                          doc=f"integral gain {_CARTESIAN}, N/(m·s) or N·m/(rad·s)"),
        "i_clamp": PluginParam("vector", default=(math.nan,) * 6, length=6,
                               doc=f"integrator wrench clamp {_CARTESIAN}, N or N·m (NaN: none)"),
    }, "Virtual spring-damper on the end effector, turned into joint efforts via the Jacobian."),
    PluginSpec("EffortOffset", "effortOffset", {
        "offset": PluginParam("number_or_vector", required=True,
                              doc="constant joint effort added, N·m (scalar or one per joint)"),
    }, "Constant effort offset, e.g. gas-spring shoulder compensation."),
    PluginSpec("DoubledJointMirror", "doubledJoint", {
        "group_family": PluginParam("single_name", required=True, doc="family of the mirror module"),
        "group_name": PluginParam("single_name", required=True, doc="name of the mirror module"),
        "index": PluginParam("index", required=True, doc="joint (0-based) the mirror module doubles"),
        "mirror": PluginParam("bool", default=True, doc="mirror module turns the opposite way"),
    }, "Drives a second module with a copy of one joint's command (double shoulder)."),
    PluginSpec("EndEffectorWrench", "endEffectorWrench", {},
               "Adds joint efforts for a wrench set at run time on the end effector."),
    PluginSpec("OvertorqueFaultMonitor", "overtorqueFaultMonitor", {
        "base_torque_error_limit": PluginParam("positive", required=True,
                                               doc="effort tracking error that trips the fault, N·m"),
    }, "Faults the arm when effort tracking error exceeds a limit (collision detection)."),
)}


@dataclass(frozen=True)
class PluginConfig:
    """One ``plugins`` entry: common settings plus the type's own parameters as written.

    ``name`` falls back to hebi's per-type default (``None`` only for unknown types);
    ``ramp_time`` (s) to hebi's 0.0. ``params`` keeps every other key of the entry verbatim;
    :meth:`param` adds the registry default for parameters the entry leaves out.
    """

    type: str
    name: str | None
    enabled: bool = True
    ramp_time: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> PluginSpec | None:
        """The registry entry of this type, ``None`` for a type hebictl does not know."""
        return KNOWN_PLUGINS.get(self.type)

    def param(self, key: str) -> Any:
        """The parameter as given, else hebi's default; ``KeyError`` if neither exists."""
        if key in self.params:
            return self.params[key]
        spec = self.spec
        if spec is not None and key in spec.params and spec.params[key].default is not None:
            return spec.params[key].default
        raise KeyError(key)


# --------------------------------------------------------------------------- robot config


@dataclass(frozen=True)
class RobotConfig:
    """A loaded robot config; paths are absolute, defaults are hebi's.

    ``families`` is broadcast to one entry per name, so ``families[i]``/``names[i]`` address
    module ``i``. ``gains`` maps a role (``default``, ``gripper``, ...) to its XML file; a plain
    string in the YAML becomes the ``default`` role, as in hebi. ``feedback_frequency`` is in Hz;
    ``command_lifetime`` is in **milliseconds** (the YAML gives seconds; hebi multiplies by 1000).
    ``user_data`` is kept as written; use :meth:`resolve` for the paths it holds.
    """

    path: Path
    version: str
    families: tuple[str, ...]
    names: tuple[str, ...]
    hrdf: Path | None
    gains: dict[str, Path]
    feedback_frequency: float
    command_lifetime: float
    plugins: tuple[PluginConfig, ...]
    user_data: dict[str, Any]

    @property
    def folder(self) -> Path:
        """The folder relative paths in the config are resolved against."""
        return self.path.parent

    def resolve(self, relative: str | Path) -> Path:
        """A path from ``user_data`` (layouts, gripper gains), resolved like ``hrdf`` is."""
        return (self.folder / relative).resolve()

    def plugin(self, type_: str) -> PluginConfig | None:
        """The first plugin of a type (hebi's Arm keeps one per type), or ``None``."""
        return next((p for p in self.plugins if p.type == type_), None)

    def check_against(self, dof: int, gains: GroupGains | None = None) -> None:
        """Check the config fits a model of ``dof`` joints and the gains loaded for it.

        Checks the name count, the gains' width (1 broadcasts, like hebi), per-joint plugin
        parameters (``EffortOffset.offset``) and joint indices (``DoubledJointMirror.index``).
        Raises :class:`ConfigError` naming the key on the first mismatch.
        """
        if len(self.names) != dof:
            self._fail(f"{len(self.names)} module names, but the model has {dof} joints", "names")
        if gains is not None and gains.width not in (1, dof):
            key = next((f"gains.{k}" for k, p in self.gains.items() if gains.path is not None
                        and p == Path(gains.path).resolve()), "gains")
            self._fail(f"gains file {gains.path} has {gains.width} values per gain, "
                       f"the model has {dof} joints", key)
        for i, plugin in enumerate(self.plugins):
            offset = plugin.params.get("offset") if plugin.type == "EffortOffset" else None
            if isinstance(offset, list) and len(offset) not in (1, dof):
                self._fail(f"{len(offset)} offsets for {dof} joints", f"plugins[{i}].offset")
            index = plugin.params.get("index") if plugin.type == "DoubledJointMirror" else None
            if index is not None and index >= dof:
                self._fail(f"joint index {index} out of range for {dof} joints", f"plugins[{i}].index")

    def _fail(self, message: str, key: str) -> None:
        raise ConfigError(message, file=self.path, key=key)


def load_config(path: str | Path, *, require_files: bool = True) -> RobotConfig:
    """Load and check a HEBI robot-config YAML file.

    ``hrdf`` and ``gains`` are resolved against the YAML's folder, like hebi. With
    ``require_files`` (the default) they must exist; pass ``False`` to inspect a config whose
    model or gains live elsewhere (hebi's own ``load_config`` does not look). Raises
    :class:`ConfigError` naming the file and the key (or the YAML line) of the first problem.
    """
    path = Path(check_path_text(path, error=ConfigError, what="config path")).resolve()
    return _ConfigReader(path, require_files).read(_read_yaml(path))


def _read_yaml(path: Path) -> Any:
    """The YAML document, read with hebictl.yaml_load's size, depth, alias and type limits."""
    return load_yaml(path)


class _ConfigReader:
    """Checks one parsed YAML document; holds the file so every error can name it."""

    def __init__(self, path: Path, require_files: bool) -> None:
        self.path = path
        self.require_files = require_files

    def fail(self, message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, file=self.path, key=key)

    def read(self, doc: Any) -> RobotConfig:
        if doc is None:
            raise self.fail("config is empty")
        if not isinstance(doc, dict):
            raise self.fail(f"top level must be a mapping of keys, got {_kind(doc)}")
        for key in doc:
            if key not in TOP_LEVEL_KEYS:
                raise self.fail(f"unknown key (allowed: {', '.join(sorted(TOP_LEVEL_KEYS))}; "
                                "put extra settings under user_data)", key=str(key))
        for key in ("version", "families", "names"):
            if key not in doc:
                raise self.fail("required key is missing", key=key)

        names = self.strings(doc["names"], "names")
        families = self.strings(doc["families"], "families")
        if len(families) == 1:
            families = families * len(names)
        elif len(families) != len(names):
            raise self.fail(f"{len(families)} families for {len(names)} names (give one family, "
                            "or one per name)", key="families")
        pairs = list(zip(families, names, strict=True))
        for i, pair in enumerate(pairs):
            if pair in pairs[:i]:
                raise self.fail(f"module {pair[0]}/{pair[1]} listed twice", key=f"names[{i}]")

        return RobotConfig(
            path=self.path,
            version=self.version(doc["version"]),
            families=tuple(families),
            names=tuple(names),
            hrdf=self.file(doc["hrdf"], "hrdf") if "hrdf" in doc else None,
            gains=self.gains(doc["gains"]) if "gains" in doc else {},
            feedback_frequency=(self.positive(doc["feedback_frequency"], "feedback_frequency")
                                if "feedback_frequency" in doc else DEFAULT_FEEDBACK_FREQUENCY_HZ),
            command_lifetime=(1000.0 * self.number(doc["command_lifetime"], "command_lifetime", minimum=0.0)
                              if "command_lifetime" in doc else DEFAULT_COMMAND_LIFETIME_MS),
            plugins=self.plugins(doc["plugins"]) if "plugins" in doc else (),
            user_data=self.user_data(doc.get("user_data")),
        )

    # -- scalar checks

    def version(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(f"must be a version number like 1.1, got {_kind(value)}", key="version")
        version = str(value)  # YAML reads 1.0 as a float; hebi keeps str(value) too
        if version not in KNOWN_VERSIONS:
            warnings.warn(f"{self.path}: config version {version} is not one of "
                          f"{sorted(KNOWN_VERSIONS)}; reading it as 1.1", stacklevel=4)
        return version

    def strings(self, value: Any, key: str) -> list[str]:
        """A string or a non-empty list of non-empty strings (hebi wraps a lone string)."""
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.fail("must not be empty", key=key)
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item:
                where = f"{key}[{i}]" if isinstance(value, list) else key
                raise self.fail(f"must be a non-empty string, got {_kind(item)}", key=where)
        return items

    def number(self, value: Any, key: str, minimum: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise self.fail(f"must be a number, got {_kind(value)}", key=key)
        if minimum is not None and value < minimum:
            raise self.fail(f"must be >= {minimum:g}, got {value}", key=key)
        return float(value)

    def positive(self, value: Any, key: str) -> float:
        number = self.number(value, key)
        if not 0.0 < number < math.inf:
            raise self.fail(f"must be a positive finite number, got {value}", key=key)
        return number

    def file(self, value: Any, key: str) -> Path:
        """A path relative to the config's folder (absolute paths stay), checked to exist."""
        if not isinstance(value, str) or not value:
            raise self.fail(f"must be a file path, got {_kind(value)}", key=key)
        try:
            check_path_text(value, error=ConfigError, what="path")
        except ConfigError as exc:
            raise self.fail(exc.message, key=key) from None
        resolved = (self.path.parent / value).resolve()
        if self.require_files and not is_regular_file(resolved):
            raise self.fail(f"file not found: {value} (looked for {resolved})", key=key)
        return resolved

    # -- sections

    def gains(self, value: Any) -> dict[str, Path]:
        if isinstance(value, str):
            return {"default": self.file(value, "gains")}
        if not isinstance(value, dict):
            raise self.fail(f"must be a file path or a mapping of role: file, got {_kind(value)}",
                            key="gains")
        result = {}
        for role, file in value.items():
            if not isinstance(role, str):
                raise self.fail(f"gains role must be a string, got {_kind(role)}", key=f"gains.{role}")
            result[role] = self.file(file, f"gains.{role}")
        return result

    def user_data(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"must be a mapping, got {_kind(value)}", key="user_data")
        return value

    def plugins(self, value: Any) -> tuple[PluginConfig, ...]:
        if not isinstance(value, list):
            raise self.fail(f"must be a list of plugins, got {_kind(value)}", key="plugins")
        plugins = tuple(self.plugin(entry, f"plugins[{i}]") for i, entry in enumerate(value))
        for i, plugin in enumerate(plugins):
            if plugin.name is not None and plugin.name in [p.name for p in plugins[:i]]:
                raise self.fail(f"plugin name {plugin.name!r} used twice", key=f"plugins[{i}].name")
        return plugins

    def plugin(self, entry: Any, key: str) -> PluginConfig:
        if not isinstance(entry, dict):
            raise self.fail(f"must be a mapping with a 'type', got {_kind(entry)}", key=key)
        if "type" not in entry:
            raise self.fail("plugin has no type", key=f"{key}.type")
        type_ = entry["type"]
        if not isinstance(type_, str) or not type_:
            raise self.fail(f"must be a plugin type name, got {_kind(type_)}", key=f"{key}.type")
        spec = KNOWN_PLUGINS.get(type_)
        name = entry.get("name", spec.default_name if spec else None)
        if name is not None and (not isinstance(name, str) or not name):
            raise self.fail(f"must be a non-empty string, got {_kind(name)}", key=f"{key}.name")
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            raise self.fail(f"must be true or false, got {_kind(enabled)}", key=f"{key}.enabled")
        ramp_time = self.number(entry.get("ramp_time", 0.0), f"{key}.ramp_time", minimum=0.0)
        params = {k: v for k, v in entry.items() if k not in COMMON_PLUGIN_KEYS}

        if spec is None:
            warnings.warn(f"{self.path} [{key}]: unknown plugin type {type_!r} (known: "
                          f"{', '.join(sorted(KNOWN_PLUGINS))}); hebi-py skips it", stacklevel=6)
        else:
            for param in params:
                if param not in spec.params:
                    raise self.fail(f"unknown parameter for {type_} (known: "
                                    f"{', '.join(sorted(spec.params)) or 'none'})", key=f"{key}.{param}")
            for param, rule in spec.params.items():
                if param in params:
                    self.plugin_param(params[param], rule, f"{key}.{param}")
                elif rule.required:
                    raise self.fail(f"{type_} requires this parameter", key=f"{key}.{param}")
        return PluginConfig(type_, name, enabled, ramp_time, params)

    def plugin_param(self, value: Any, rule: PluginParam, key: str) -> None:
        """Check one plugin parameter's shape; the value itself is kept as written."""
        if rule.kind == "bool":
            if not isinstance(value, bool):
                raise self.fail(f"must be true or false, got {_kind(value)}", key=key)
        elif rule.kind == "index":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise self.fail(f"must be an integer >= 0, got {_kind(value)}", key=key)
        elif rule.kind == "number":
            self.number(value, key)
        elif rule.kind == "positive":
            self.positive(value, key)
        elif rule.kind in ("vector", "number_or_vector"):
            if rule.kind == "number_or_vector" and not isinstance(value, list):
                self.number(value, key)
                return
            if not isinstance(value, list):
                raise self.fail(f"must be a list of {rule.length} numbers, got {_kind(value)}", key=key)
            if rule.length is not None and len(value) != rule.length:
                raise self.fail(f"must have {rule.length} numbers, got {len(value)}", key=key)
            if not value:
                raise self.fail("must not be empty", key=key)
            for i, item in enumerate(value):
                self.number(item, f"{key}[{i}]")
        elif rule.kind == "single_name":
            items = self.strings(value, key)
            if len(items) != 1:
                raise self.fail(f"must name one module, got {len(items)}", key=key)
        else:  # pragma: no cover - registry typo
            raise AssertionError(f"unknown parameter kind {rule.kind!r}")


def _kind(value: Any) -> str:
    """How a wrong value reads in an error message: its YAML-ish type and a short, bounded repr."""
    return describe(value)


__all__ = [
    "DEFAULT_COMMAND_LIFETIME_MS", "DEFAULT_FEEDBACK_FREQUENCY_HZ", "KNOWN_PLUGINS", "KNOWN_VERSIONS",
    "TOP_LEVEL_KEYS", "PluginConfig", "PluginParam", "PluginSpec", "RobotConfig", "load_config",
]
