"""Arm plugins, one module per HEBI plugin type.

Each plugin adds its share to the arm's pending command. The plugin *types* and their
parameters are in the one schema :data:`hebictl.plugin_schema.KNOWN_PLUGINS` (also used to
validate configs); the wiring layer's :data:`hebictl.wiring.plugin_table.PLUGIN_TYPES` maps each
implemented type to its class and builds plugins from config entries, so this package knows
nothing of configs. What the Arm may rely on about a plugin is its declared capabilities
(:class:`~hebictl.control.plugins.base.ArmPlugin`), never its type or name.
"""

from __future__ import annotations

from hebictl.control.plugins.base import ArmPlugin, ArmView
from hebictl.control.plugins.doubled_joint import DoubledJointMirror
from hebictl.control.plugins.dynamics import DynamicsCompensationEffort
from hebictl.control.plugins.effort_offset import EffortOffset
from hebictl.control.plugins.gravity import GravityCompensationEffort, gravity_from_quaternion
from hebictl.control.plugins.impedance import ImpedanceController
from hebictl.control.plugins.wrench import EndEffectorWrench

__all__ = ["ArmPlugin", "ArmView", "DoubledJointMirror", "DynamicsCompensationEffort",
           "EffortOffset", "EndEffectorWrench", "GravityCompensationEffort", "ImpedanceController",
           "gravity_from_quaternion"]
