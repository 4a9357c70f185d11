"""Contact and collision: the generalized-momentum observer's residual against per-joint bounds.

Why a momentum observer (De Luca & Mattone, 2003; :mod:`.observer`) rather than measured minus
commanded effort (hebi-py's ``OvertorqueFaultMonitor``): the residual needs no joint acceleration
(which the modules do not measure), is a first-order filtered estimate of the external joint
torque with one tunable time constant (1/``observer_gain``), and is exact for any motion of a
correct model; the commanded effort differs from the applied one by the modules' own PID output,
so hebi's check must be set far above a light contact. The efforts are what the modules measure
through their series-elastic springs (``Feedback.effort``).

The bound per joint: the threshold (per joint as Franka's users set theirs, ``thresholds`` [N·m];
by default max(``threshold_min``, ``threshold_fraction`` x rated effort)), widened by what the
model knows it does not know: an end-effector payload's uncertainty (:mod:`.payload`: the
estimate's mass error and an unknown lever arm, at the payload's measured acceleration) and what
a late cycle explains (the observer's ``slack``). Model: the arm's model plus the reflected rotor
inertia of each module (``motor_time_constant`` x rated effort / rated speed, as the simulator's
actuator model and a geared DC motor's mechanics give) and the payloads as point masses (weight
and inertia), so an unknown load is a model mismatch, not a contact. Detection is armed after the
first rest estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Feedback

__all__ = ["ContactMonitor"]


class ContactMonitor(Monitor):
    """``contact``: a joint's residual beyond its bound (see the module docstring). Reaction
    (default ``stop``) holds at the measured position of detection (``values['hold_position']``),
    so the hold does not drive through the obstacle."""

    kind = EventKind.CONTACT

    def __init__(self, settings: dict[str, Any], effort_max: FloatArray) -> None:
        super().__init__(settings)
        self.threshold = contact_thresholds(settings, effort_max)
        self.armed = False
        self.latched = False
        self.detected_at: float | None = None
        self.bound = self.threshold.copy()  # [N·m] the last check's bound per joint
        self.external = np.zeros(len(effort_max))  # the residual judged [N·m]

    def check(self, arm: Any, fb: Feedback, now: float, residual: FloatArray,
              widen: FloatArray | None = None) -> Finding | None:
        """``residual``: the external torque estimate (payloads already modelled); ``widen``
        [N·m per joint]: what the bound grows by this cycle (None: nothing)."""
        ext = self.external
        np.copyto(ext, residual)
        if not self.armed:
            return None
        bound = self.bound
        np.copyto(bound, self.threshold)
        if widen is not None:
            bound += widen
        over = np.abs(ext) - bound
        j = int(np.argmax(over))
        if self.latched:  # one event per contact: re-arm once the arm runs again and the push is gone
            if arm.state is ArmState.RUNNING and over[j] < -0.5 * bound[j]:
                self.latched = False
            return None
        if over[j] <= 0.0:
            return None
        self.latched = True
        self.detected_at = now
        force = _end_effector_force(arm.model, fb.position, ext)
        return self.finding(
            f"joint {j} ({arm.model.joint_names[j]}): effort residual {ext[j]:+.2f} N·m beyond "
            f"±{bound[j]:.2f} N·m (end-effector force estimate {force:.1f} N)",
            joint=j, residual=ext.tolist(), threshold=bound.tolist(), force_estimate_N=force,
            hold_position=fb.position.copy(), time=now)


def contact_thresholds(settings: dict[str, Any], effort_max: FloatArray) -> FloatArray:
    """[N·m per joint] the configured ``thresholds``, else max(``threshold_min``,
    ``threshold_fraction`` x rated effort) (a joint without a rated effort: ``threshold_min``)."""
    given = settings.get("thresholds")
    if given is not None:
        return np.array(np.broadcast_to(np.asarray(given, dtype=np.float64), (len(effort_max),)))
    emax = np.where(np.isfinite(effort_max), effort_max, 0.0)
    return np.maximum(settings["threshold_min"], settings["threshold_fraction"] * emax)


def _end_effector_force(model: Any, q: FloatArray, tau: FloatArray) -> float:
    """Least-squares end-effector force [N] explaining the joint torques ``tau`` (J_v^T F = tau)."""
    try:
        J = model.jacobian_end_effector(q)[:3]
    except Exception:  # a model without an end effector: no force estimate
        return float("nan")
    F, *_ = np.linalg.lstsq(J.T, tau, rcond=None)
    return float(np.linalg.norm(F))
