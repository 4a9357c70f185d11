"""Idle gravity compensation that sinks: an end-effector load the compensation does not carry.

Why: with ``idle="gravcomp"`` (hand-guiding) the arm commands only the plugins' efforts, no
position; a load the model does not know (an unknown gripper, a part picked up) pulls the arm
down at a speed only friction and the modules' damping set: 153-864 mm on the sim with 0.5-1 kg,
x7 601 mm in 5 s and still moving at 98 mm/s, with no event (issue 29).

How it tells a sinking arm from an operator moving it: the damp stop's rule (end-effector speed
along gravity beyond ``max_speed``) over ``sustain_time`` (a hand-guided arm changes direction;
a sinking one keeps falling), and only while something heavy pulls the end effector down: the
model-mismatch monitor's estimated load, plus the downward end-effector force the residual still
shows, at least ``min_force`` [N]. An arm pushed down by hand faster than ``max_speed`` for
``sustain_time`` is held too (a push and a load look alike to the joints); one that is moved and
let go coasts without a pull and is not. Reaction (default ``hold``): brake from the measured
state and hold where the arm is; a new goal, or ``set_idle("gravcomp")`` again, leaves the hold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Feedback

__all__ = ["GravcompSinkingMonitor"]


class GravcompSinkingMonitor(Monitor):
    """``gravcomp_sinking``: idle gravity compensation with the end effector falling faster than
    ``max_speed`` [m/s] for ``sustain_time`` [s] under a downward pull of ``min_force`` [N] or more."""

    kind = EventKind.GRAVCOMP_SINKING

    def __init__(self, settings: dict[str, Any]) -> None:
        super().__init__(settings)
        self.sinking = 0.0  # [s] the end effector has been falling faster than max_speed for this long
        self.pull = 0.0     # [N] the last downward pull estimate
        self.residual: FloatArray | None = None  # the observer's residual (the suite sets it)
        self.load = 0.0     # [kg] the estimated load the modules do not carry (the suite sets it)

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        if not _hand_guiding(arm):
            self.sinking = 0.0
            return None
        qd = fb.velocity
        if not np.all(np.isfinite(qd)):
            return None
        J = arm.model.jacobian_end_effector(fb.position)[:3]
        g = arm.model.gravity
        gn = float(np.linalg.norm(g))
        if gn <= 0.0:
            return None
        down = g / gn
        sink = float((J @ qd) @ down)
        s = self.settings
        if not sink > s["max_speed"]:
            self.sinking = 0.0
            return None
        self.sinking += dt
        self.pull = self.load * gn + self._residual_pull(J, down)
        if self.sinking < s["sustain_time"] or self.pull < s["min_force"]:
            return None
        self.sinking = -math.inf  # one event per sink: re-armed once the arm is not falling
        return self.finding(
            f"idle gravity compensation sinking at {sink:.3f} m/s for {s['sustain_time']:.2f} s (bound "
            f"{s['max_speed']:.3f} m/s) under a {self.pull:.1f} N downward pull (estimated load {self.load:.2f} kg; "
            "Arm.set_payload takes it); holding where the arm is",
            sink_speed=sink, pull_N=self.pull, hold_position=fb.position.copy())

    def _residual_pull(self, J: FloatArray, down: FloatArray) -> float:
        """[N] the downward part of the end-effector force explaining the residual (J_v^T F = r)."""
        r = self.residual
        if r is None or not np.all(np.isfinite(r)):
            return 0.0
        F, *_ = np.linalg.lstsq(J.T, r, rcond=None)
        return float(F @ down)


def _hand_guiding(arm: Any) -> bool:
    """The arm is idle in gravity compensation: running, idle ``gravcomp``, no position commanded."""
    if getattr(arm, "idle", None) != "gravcomp" or arm.state is not ArmState.RUNNING:
        return False
    return not bool(np.any(np.isfinite(arm.pending_command.position)))
