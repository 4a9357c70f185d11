"""The schema of a config's ``plugins:`` entries: every arm-plugin type hebi-py knows, its parameters and defaults.

Config validation (:mod:`hebictl.config`) checks ``plugins:`` entries against :data:`KNOWN_PLUGINS`,
the plugin classes (:mod:`hebictl.control.plugins`) take their default names from it and the wiring
layer (:mod:`hebictl.wiring.plugin_table`) builds plugins with its defaults, so a plugin type or
parameter is written down once. It is a neutral module below all three (it imports nothing of
hebictl): loading a config imports neither the plugins' numerical dependencies nor the control
package, and the control package does not import config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
    """A plugin type hebi-py's ``create_from_config`` knows, with the parameters it reads.

    ``implemented``: hebictl has a plugin class for it (others are skipped with a warning).
    """

    type: str
    default_name: str
    params: Mapping[str, PluginParam]
    doc: str
    implemented: bool = True


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
    }, "Faults the arm when effort tracking error exceeds a limit (collision detection).", implemented=False),
)}

__all__ = ["KNOWN_PLUGINS", "PluginParam", "PluginSpec"]
