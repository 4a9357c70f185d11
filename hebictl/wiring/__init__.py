"""Wiring: a robot config turned into a running Arm, the layer above control, config, formats and hardware.

:func:`~hebictl.wiring.assembly.assemble` loads the config once and builds the parts (model, gains,
backend, plugins, limits, the collision world); :func:`~hebictl.wiring.assembly.arm_from_config` builds
the Arm from them (``Arm.from_config`` forwards here); :mod:`~hebictl.wiring.plugin_table` maps the
config's plugin types to the plugin classes. Nothing below this package imports it, except the Arm's
one forwarding classmethod (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from hebictl.wiring.assembly import ArmParts, arm_from_config, assemble
from hebictl.wiring.plugin_table import PLUGIN_TYPES, plugin_from_config

__all__ = ["PLUGIN_TYPES", "ArmParts", "arm_from_config", "assemble", "plugin_from_config"]
