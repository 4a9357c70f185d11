"""hebictl: controller for robot arms built from HEBI Robotics modules.

Public API (imported lazily so ``import hebictl`` stays fast and optional extras stay optional)::

    import hebictl
    model = hebictl.load_model("kit.hrdf")
    cfg = hebictl.load_config("arm.cfg.yaml")
    arm = hebictl.Arm.from_config(cfg, backend="mock")
"""

from __future__ import annotations

import importlib
from typing import Any

from hebictl.errors import (
    ClockError,
    CommandRejected,
    ConfigError,
    ConfigWarning,
    FormatError,
    FormatWarning,
    HardwareError,
    HebictlError,
    HebictlWarning,
    HrdfWarning,
    IKFailed,
    InstallationError,
    LimitViolation,
    MjcfWarning,
    ModelError,
    OpenraveWarning,
    RecordingError,
    SdfWarning,
    SkelWarning,
    StateRejected,
    TeleopError,
    TrajectoryError,
    UrdfWarning,
    UsageError,
    XxyWarning,
)
from hebictl.version import __version__ as __version__  # re-exported: hebictl.__version__

_LAZY = {
    "load_model": "hebictl.formats",
    "load_model_string": "hebictl.formats",
    "detect_format": "hebictl.formats",
    "RobotModel": "hebictl.model.robot",
    "ModelBuilder": "hebictl.model.builder",
    "IKResult": "hebictl.model.ik",
    "load_config": "hebictl.config",
    "RobotConfig": "hebictl.config",
    "load_gains": "hebictl.gains",
    "create_trajectory": "hebictl.trajectory",
    "Trajectory": "hebictl.trajectory",
    "Arm": "hebictl.control.arm",
    "Goal": "hebictl.control.goal",
    "open_backend": "hebictl.hardware.registry",
}

__all__ = [
    "ClockError",
    "CommandRejected",
    "ConfigError",
    "ConfigWarning",
    "FormatError",
    "FormatWarning",
    "HardwareError",
    "HebictlError",
    "HebictlWarning",
    "HrdfWarning",
    "IKFailed",
    "InstallationError",
    "LimitViolation",
    "MjcfWarning",
    "ModelError",
    "OpenraveWarning",
    "RecordingError",
    "SdfWarning",
    "SkelWarning",
    "StateRejected",
    "TeleopError",
    "TrajectoryError",
    "UrdfWarning",
    "UsageError",
    "XxyWarning",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hebictl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
