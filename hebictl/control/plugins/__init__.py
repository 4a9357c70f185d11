"""Arm plugins, one module per HEBI plugin type, and their construction from a config entry.

Each plugin adds its share to the arm's pending command. The plugin *types* and their
parameters are in the one table :data:`hebictl.control.plugin_table.KNOWN_PLUGINS` (also used
to validate configs); :data:`PLUGIN_TYPES` maps each implemented type to its class.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hebictl.control.plugin_table import KNOWN_PLUGINS
from hebictl.control.plugins.base import ArmPlugin, ArmView
from hebictl.control.plugins.doubled_joint import DoubledJointMirror
from hebictl.control.plugins.dynamics import DynamicsCompensationEffort
from hebictl.control.plugins.effort_offset import EffortOffset
from hebictl.control.plugins.gravity import GravityCompensationEffort, gravity_from_quaternion
from hebictl.control.plugins.impedance import ImpedanceController
from hebictl.control.plugins.wrench import EndEffectorWrench
from hebictl.errors import ConfigError

if TYPE_CHECKING:
    from hebictl.config import PluginConfig

log = logging.getLogger(__name__)

_CLASSES: tuple[type[ArmPlugin], ...] = (
    GravityCompensationEffort, DynamicsCompensationEffort, EffortOffset, ImpedanceController,
    EndEffectorWrench, DoubledJointMirror)
#: implemented plugin types (keys of the one table whose spec says ``implemented``) -> class
PLUGIN_TYPES: dict[str, type[ArmPlugin]] = {cls.type_name: cls for cls in _CLASSES}
if set(PLUGIN_TYPES) != {t for t, spec in KNOWN_PLUGINS.items() if spec.implemented}:  # pragma: no cover
    raise ImportError("hebictl.control.plugins and plugin_table.KNOWN_PLUGINS disagree on the implemented types")


def plugin_from_config(cfg: PluginConfig) -> ArmPlugin | None:
    """Instantiate a plugin from its config entry; None (logged) for types hebictl lacks.

    Parameters the entry leaves out take the table's (hebi-py's) defaults.
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


__all__ = ["PLUGIN_TYPES", "ArmPlugin", "ArmView", "DoubledJointMirror", "DynamicsCompensationEffort",
           "EffortOffset", "EndEffectorWrench", "GravityCompensationEffort", "ImpedanceController",
           "gravity_from_quaternion", "plugin_from_config"]
