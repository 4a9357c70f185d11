"""IMU plausibility: the base orientation the IMU reports against the configured mounting.

Why: gravity compensation takes gravity's direction from the base module's IMU (as hebi-py
does). A module mounted, or reporting, 90° off gives finite but wrong gravity, and the arm is
pushed with the full weight in the wrong direction. The configured gravity (the model's base
orientation, or the plugin's ``gravity``) is the reference; beyond ``max_angle`` [rad] the
gravity plugin is switched to it for good (``use_imu = False``) and the event says by how much
the IMU disagreed.
"""

from __future__ import annotations

import math
from typing import Any

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.hardware.base import Feedback

__all__ = ["ImuMonitor"]


class ImuMonitor(Monitor):
    """``imu_implausible``: angle between IMU-derived and configured gravity > ``max_angle`` [rad]."""

    kind = EventKind.IMU_IMPLAUSIBLE

    def __init__(self, settings: dict[str, Any], gravity_plugin: Any) -> None:
        super().__init__(settings)
        self.plugin = gravity_plugin
        self.angle = math.nan

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        p = self.plugin
        if not p.use_imu:
            return None
        o = fb.orientation[p.imu_feedback_index]
        if not math.isfinite(o[0] + o[1] + o[2] + o[3]):
            return None  # no IMU: the plugin uses the configured gravity already
        g = p.world_gravity(arm)
        ref = p.fallback_gravity
        dot = float(g[0] * ref[0] + g[1] * ref[1] + g[2] * ref[2])
        norm = math.sqrt(float(g @ g) * float(ref @ ref))
        self.angle = math.acos(max(-1.0, min(1.0, dot / norm))) if norm > 0.0 else math.pi
        if self.angle <= self.settings["max_angle"]:
            return None
        p.use_imu = False
        return self.finding(f"module {p.imu_feedback_index}'s IMU puts gravity {math.degrees(self.angle):.1f}° "
                            f"from the configured mounting (bound {math.degrees(self.settings['max_angle']):.1f}°); "
                            "using the configured gravity", angle_rad=self.angle,
                            imu_gravity=[float(x) for x in g], configured_gravity=[float(x) for x in ref])
