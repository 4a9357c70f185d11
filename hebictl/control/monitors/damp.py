"""A 'damp' stop that sinks: the arm falling faster than a bound under damping alone.

Why: 'damp' commands gravity compensation and damping, no position; with a payload the model
does not know, the arm sinks (and passes joint limits) at a speed only the damping sets. Beyond
``max_speed`` [m/s] of the end effector along gravity the stop switches to holding where the arm
is (reaction ``stop``: the latched stop with behaviour ``hold``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from hebictl.hardware.base import Feedback

__all__ = ["DampSinkingMonitor"]


class DampSinkingMonitor(Monitor):
    """``damp_sinking``: while stopped with ``damp``, end-effector speed along gravity > ``max_speed``."""

    kind = EventKind.DAMP_SINKING

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        if arm.state is not ArmState.STOPPED or arm.stop_behaviour is not StopBehaviour.DAMP:
            return None
        qd = fb.velocity
        if not np.all(np.isfinite(qd)):
            return None
        v = arm.model.jacobian_end_effector(fb.position)[:3] @ qd
        g = arm.model.gravity
        gn = float(np.linalg.norm(g))
        sink = float(v @ g) / gn if gn > 0 else 0.0
        if not sink > self.settings["max_speed"]:
            return None
        return self.finding(f"'damp' stop sinking at {sink:.3f} m/s (bound {self.settings['max_speed']:.3f} m/s); "
                            "holding where the arm is", sink_speed=sink, hold_position=fb.position.copy(),
                            end_effector_speed=float(math.sqrt(float(v @ v))))
