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

import difflib
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import ConfigError, ConfigWarning
from hebictl.limits import check_path_text, is_regular_file
from hebictl.plugin_schema import KNOWN_PLUGINS, PluginParam, PluginSpec
from hebictl.yaml_load import describe, key_line, load_yaml

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
DEFAULT_COMMAND_LIFETIME_S = 0.1
#: Keys every plugin entry may carry whatever its type (``hebi.arm.create_from_config``).
COMMON_PLUGIN_KEYS: frozenset[str] = frozenset({"type", "name", "enabled", "ramp_time"})
#: ``user_data`` keys holding one value per joint (hebictl reads them; HEBI's kits use them).
PER_JOINT_USER_DATA: tuple[str, ...] = ("home_position", "rest_position", "ik_seed_pos")
#: ``user_data`` sections whose list values have one entry per joint, or one for all.
PER_JOINT_SECTIONS: Mapping[str, tuple[str, ...]] = {
    "joint_limits": ("position_min", "position_max", "velocity_max", "acceleration_max"),
    "safety": ("damping",),
}
#: ``user_data`` keys hebictl reads or HEBI's example configs use. ``user_data`` is free-form,
#: so other keys are fine; one *close* to these (``home_positon``) is probably a typo that would
#: silently disable what the key does, and gets a :class:`~hebictl.errors.ConfigWarning`.
KNOWN_USER_DATA_KEYS: frozenset[str] = frozenset({
    *PER_JOINT_USER_DATA, *PER_JOINT_SECTIONS, "sim", "module_safety", "has_gripper", "gripper_family",
    "gripper_name", "gripper_gains", "gripper_open_effort", "gripper_close_effort", "mobile_io_family",
    "mobile_io_name", "mobile_io_layout", "homing_duration", "xyz_scale", "delay_time", "min_travel_time",
    "base_travel_time", "travel_time", "controller_family", "controller_name", "teleop", "fleet",
})


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` (difflib), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(word), sorted(choices), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def yaml_key_line(path: str | Path, key: str | None) -> int | None:
    """Line (1-based) of a key path such as ``plugins[2].ramp_tme`` in a YAML file, or None.

    For messages only; the file's node graph is the one its load kept (no second parse).
    """
    return key_line(path, key)


def config_warning(path: Path, key: str, message: str) -> None:
    """Issue a :class:`ConfigWarning` reading ``file:line [key]: message``."""
    line = yaml_key_line(path, key)
    where = f"{path}:{line}" if line is not None else str(path)
    warnings.warn(f"{where} [{key}]: {message}", ConfigWarning, stacklevel=3)


# --------------------------------------------------------------------------- plugin registry
# The schema of plugin types lives in hebictl.plugin_schema, shared with the plugins and the wiring.


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
    ``command_lifetime`` is in seconds, as in the YAML (hebi's Arm multiplies by 1000 for its API).
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
        raise ConfigError(message, file=self.path, key=key, line=yaml_key_line(self.path, key))


def gains_file(cfg: RobotConfig, role: str) -> Path:
    """The gains file of ``role``, checked to exist: :func:`load_config` keeps a missing one's path
    (as hebi-py does), so whatever sends gains asks here and gets one ConfigError naming the config,
    the key and its line."""
    path = cfg.gains[role]
    if not is_regular_file(path):
        key = f"gains.{role}"
        raise ConfigError(f"file not found: {path} (the gains file; the config loads without it, as in "
                          "hebi-py, but its gains cannot be sent)", file=cfg.path, key=key,
                          line=yaml_key_line(cfg.path, key))
    return path


def load_config(path: str | Path, *, require_files: bool = True) -> RobotConfig:
    """Load and check a HEBI robot-config YAML file.

    ``hrdf`` and ``gains`` are resolved against the YAML's folder, like hebi. With
    ``require_files`` (the default) they must exist; pass ``False`` to inspect a config whose
    model or gains live elsewhere (hebi's own ``load_config`` does not look). Raises
    :class:`ConfigError` naming the file and the key (or the YAML line) of the first problem.
    """
    path = Path(check_path_text(path, error=ConfigError, what="config path")).resolve()
    if not path.name.lower().endswith((".yaml", ".yml")) or path.name.lower().endswith(".dmd.yaml"):
        _refuse_robot_description(path)
    try:
        doc = _read_yaml(path)
    except ConfigError:
        _refuse_robot_description(path)
        raise
    if not isinstance(doc, dict):
        _refuse_robot_description(path)
    return _ConfigReader(path, require_files).read(doc)


def _refuse_robot_description(path: Path) -> None:
    """Raise a ConfigError saying what to do if ``path`` is a robot description (HRDF, URDF, ...).

    Users pass the HRDF where the config goes; YAML would then report "mapping values are not
    allowed here" at some line of the XML. The format is told as ``hebictl model`` tells it (by
    extension, else by the XML root element); anything else returns, for the YAML error to stand.
    """
    from hebictl.errors import FormatError
    from hebictl.formats.registry import detect_format

    try:
        fmt = detect_format(path)
    except FormatError:
        return
    raise ConfigError(f"this is a robot description ({fmt.upper() if len(fmt) <= 4 else fmt}), not a config; "
                      f"try `hebictl model validate {path}`", file=path)


def _read_yaml(path: Path) -> Any:
    """The YAML document, read with hebictl.yaml_load's size, depth, alias and type limits."""
    return load_yaml(path)


class _ConfigReader:
    """Checks one parsed YAML document; holds the file so every error can name it."""

    def __init__(self, path: Path, require_files: bool) -> None:
        self.path = path
        self.require_files = require_files

    def fail(self, message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, file=self.path, key=key, line=yaml_key_line(self.path, key))

    def read(self, doc: Any) -> RobotConfig:
        if doc is None:
            raise self.fail("config is empty")
        if not isinstance(doc, dict):
            raise self.fail(f"top level must be a mapping of keys, got {_kind(doc)}")
        for key in doc:
            if key not in TOP_LEVEL_KEYS:
                raise self.fail(f"unknown key{did_you_mean(key, TOP_LEVEL_KEYS)}; allowed: "
                                f"{', '.join(sorted(TOP_LEVEL_KEYS))} (put extra settings under user_data)",
                                key=str(key))
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

        plugins = self.plugins(doc["plugins"]) if "plugins" in doc else ()
        user_data = self.user_data(doc.get("user_data"))
        try:
            self.per_joint(len(names), plugins, user_data)
        except ConfigError:
            # a user counts joints on the robot first: if names disagrees with the model, say that,
            # not that every per-joint list (sized for the model) disagrees with names
            self.names_against_model(doc.get("hrdf"), len(names))
            raise
        return RobotConfig(
            path=self.path,
            version=self.version(doc["version"]),
            families=tuple(families),
            names=tuple(names),
            hrdf=self.file(doc["hrdf"], "hrdf") if "hrdf" in doc else None,
            gains=self.gains(doc["gains"]) if "gains" in doc else {},
            feedback_frequency=(self.positive(doc["feedback_frequency"], "feedback_frequency")
                                if "feedback_frequency" in doc else DEFAULT_FEEDBACK_FREQUENCY_HZ),
            command_lifetime=(self.number(doc["command_lifetime"], "command_lifetime", minimum=0.0)
                              if "command_lifetime" in doc else DEFAULT_COMMAND_LIFETIME_S),
            plugins=plugins,
            user_data=user_data,
        )

    def names_against_model(self, hrdf: Any, count: int) -> None:
        """Raise the ``names`` error if the config's model has another number of joints than ``names``.

        Only called once a per-joint list disagreed with ``names`` (the model is then worth loading);
        a model that cannot be loaded here leaves that first error standing.
        """
        if not isinstance(hrdf, str) or not hrdf:
            return
        from hebictl.errors import FormatError
        from hebictl.formats import load_model

        path = (self.path.parent / hrdf).resolve()
        if not is_regular_file(path):
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dof = load_model(path).dof
        except FormatError:
            return
        if dof != count:
            raise self.fail(f"{count} module names, but the model has {dof} joints", key="names")

    # -- scalar checks

    def version(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(f"must be a version number like 1.1, got {_kind(value)}", key="version")
        version = str(value)  # YAML reads 1.0 as a float; hebi keeps str(value) too
        if version not in KNOWN_VERSIONS:
            config_warning(self.path, "version", f"config version {version} is not one of "
                           f"{sorted(KNOWN_VERSIONS)}; reading it as 1.1")
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

    def file(self, value: Any, key: str, *, missing_ok: bool = False) -> Path:
        """A path relative to the config's folder (absolute paths stay), checked to exist.

        ``missing_ok``: a missing file is not an error here (gains files: hebi's ``load_config``
        keeps only their paths, and HEBI's own Daisy config names one that is not published).
        Whatever sends the gains asks :func:`gains_file`, whose one error names the file, the key
        and its line; a warning here as well would say "loads" just before that error."""
        if not isinstance(value, str) or not value:
            raise self.fail(f"must be a file path, got {_kind(value)}", key=key)
        try:
            check_path_text(value, error=ConfigError, what="path")
        except ConfigError as exc:
            raise self.fail(exc.message, key=key) from None
        resolved = (self.path.parent / value).resolve()
        if self.require_files and not missing_ok and not is_regular_file(resolved):
            raise self.fail(f"file not found: {value} (looked for {resolved})", key=key)
        return resolved

    # -- sections

    def gains(self, value: Any) -> dict[str, Path]:
        if isinstance(value, str):
            return {"default": self.file(value, "gains", missing_ok=True)}
        if not isinstance(value, dict):
            raise self.fail(f"must be a file path or a mapping of role: file, got {_kind(value)}",
                            key="gains")
        result = {}
        for role, file in value.items():
            if not isinstance(role, str):
                raise self.fail(f"gains role must be a string, got {_kind(role)}", key=f"gains.{role}")
            result[role] = self.file(file, f"gains.{role}", missing_ok=True)
        return result

    def user_data(self, value: Any) -> dict[str, Any]:
        """Free-form, kept as written; a key close to a known one (a likely typo) gets a ConfigWarning."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"must be a mapping, got {_kind(value)}", key="user_data")
        for key in value:
            if isinstance(key, str) and key not in KNOWN_USER_DATA_KEYS:
                hint = did_you_mean(key, KNOWN_USER_DATA_KEYS)
                if hint:
                    config_warning(self.path, f"user_data.{key}", f"user_data key {key!r} is not one hebictl "
                                   f"reads{hint}; as written it is ignored")
        return value

    def per_joint(self, dof: int, plugins: tuple[PluginConfig, ...], user_data: Mapping[str, Any]) -> None:
        """Values with one entry per joint must have ``dof`` (= number of module names) entries."""
        for key in PER_JOINT_USER_DATA:
            value = user_data.get(key)
            if value is not None:
                self.vector(value, f"user_data.{key}", dof, broadcast=False)
        for section, keys in PER_JOINT_SECTIONS.items():
            values = user_data.get(section)
            if isinstance(values, Mapping):
                for key in keys:
                    if isinstance(values.get(key), list):
                        self.vector(values[key], f"user_data.{section}.{key}", dof, broadcast=True)
        for i, plugin in enumerate(plugins):
            offset = plugin.params.get("offset") if plugin.type == "EffortOffset" else None
            if isinstance(offset, list) and len(offset) not in (1, dof):
                raise self.fail(f"{len(offset)} offsets for {dof} joints (one per name in names, or one for all)",
                                key=f"plugins[{i}].offset")
            index = plugin.params.get("index") if plugin.type == "DoubledJointMirror" else None
            if isinstance(index, int) and index >= dof:
                raise self.fail(f"joint index {index} out of range for {dof} joints", key=f"plugins[{i}].index")

    def vector(self, value: Any, key: str, dof: int, *, broadcast: bool) -> None:
        """A list of ``dof`` numbers (or, with ``broadcast``, one number for all joints)."""
        want = f"{dof} numbers, one per joint in names" + (" (or one for all)" if broadcast else "")
        if not isinstance(value, list):
            if broadcast:
                return
            raise self.fail(f"must be a list of {want}, got {_kind(value)}", key=key)
        if len(value) != dof and not (broadcast and len(value) == 1):
            raise self.fail(f"has {len(value)} values, the arm has {dof} joints: needs {want}", key=key)
        for i, item in enumerate(value):
            self.number(item, f"{key}[{i}]")

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
            # hebi-py skips unknown types silently: a misspelt GravityCompensationEffort would run an
            # arm without gravity compensation, so this is an error
            raise self.fail(f"unknown plugin type {type_!r}{did_you_mean(type_, KNOWN_PLUGINS)}; known: "
                            f"{', '.join(sorted(KNOWN_PLUGINS))}", key=f"{key}.type")
        else:
            allowed = COMMON_PLUGIN_KEYS | set(spec.params)
            for param in params:
                if param not in spec.params:
                    raise self.fail(f"unknown key for a {type_} plugin{did_you_mean(param, allowed)}; allowed: "
                                    f"{', '.join(sorted(allowed))}", key=f"{key}.{param}")
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
    "DEFAULT_COMMAND_LIFETIME_S", "DEFAULT_FEEDBACK_FREQUENCY_HZ", "KNOWN_PLUGINS", "KNOWN_VERSIONS",
    "TOP_LEVEL_KEYS", "PluginConfig", "PluginParam", "PluginSpec", "RobotConfig", "load_config",
]
