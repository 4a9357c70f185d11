"""The plugin table: config plugin types to the classes that implement them, and plugins built from entries.

The schema of the entries (types, parameters, hebi-py's defaults) is :data:`hebictl.plugin_schema.KNOWN_PLUGINS`,
which config validation reads; the classes live in :mod:`hebictl.control.plugins` and know nothing of
configs. This module joins the two, in the wiring layer above both: importing it fails if the schema's
implemented types and the classes disagree, so neither can drift from the other unnoticed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hebictl.control.plugins import (
    ArmPlugin,
    DoubledJointMirror,
    DynamicsCompensationEffort,
    EffortOffset,
    EndEffectorWrench,
    GravityCompensationEffort,
    ImpedanceController,
)
from hebictl.errors import ConfigError
from hebictl.plugin_schema import KNOWN_PLUGINS

if TYPE_CHECKING:
    from hebictl.config import PluginConfig

log = logging.getLogger(__name__)

#: implemented plugin types (keys of the schema whose spec says ``implemented``) -> class
PLUGIN_TYPES: Mapping[str, type[ArmPlugin]] = {cls.type_name: cls for cls in (
    GravityCompensationEffort, DynamicsCompensationEffort, EffortOffset, ImpedanceController,
    EndEffectorWrench, DoubledJointMirror)}
if set(PLUGIN_TYPES) != {t for t, spec in KNOWN_PLUGINS.items() if spec.implemented}:  # pragma: no cover
    raise ImportError("hebictl.wiring.plugin_table.PLUGIN_TYPES and hebictl.plugin_schema.KNOWN_PLUGINS "
                      "disagree on the implemented types")


def plugin_from_config(cfg: PluginConfig) -> ArmPlugin | None:
    """Instantiate a plugin from its config entry; None (logged) for types hebictl lacks.

    Parameters the entry leaves out take the schema's (hebi-py's) defaults.
    """
    cls = PLUGIN_TYPES.get(cfg.type)
    if cls is None:
        log.warning("plugin type %s (%s) is not implemented by hebictl; skipped", cfg.type, cfg.name)
        return None
    spec = KNOWN_PLUGINS[cfg.type]
    params = {k: p.default for k, p in spec.params.items() if p.default is not None}
    params.update(cfg.params)
    kwargs: dict[str, Any] = {"enabled": cfg.enabled, "ramp_time": cfg.ramp_time, **params}
    if cfg.name:
        kwargs["name"] = cfg.name
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"plugin {cfg.type}: {exc}", key=f"plugins.{cfg.name or cfg.type}") from exc


__all__ = ["KNOWN_PLUGINS", "PLUGIN_TYPES", "plugin_from_config"]
