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
a late cycle explains (the observer's ``slack``). Beside it the observer's re-baselined residual
(``r_on``: on-time intervals only) is judged against the threshold widened by the payload's
uncertainty and the on-time intervals' share of the slack alone: a push that goes on after a gap
is caught as on time instead of waiting for the gap's widening to decay. Model: the arm's model plus the reflected rotor
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
        n = len(effort_max)
        self.bound = self.threshold.copy()  # [N·m] the last check's bound per joint
        self.external = np.zeros(n)  # the residual judged [N·m]
        self.rebased = np.zeros(n)  # [N·m] the re-baselined residual judged (on-time intervals only)
        self.bound_rebased = self.threshold.copy()  # [N·m] its bound
        self.over = np.zeros(n)  # [N·m] per joint, |residual| - bound (> 0: beyond)
        self.over_rebased = np.zeros(n)  # the same for the re-baselined residual

    @property
    def ratio(self) -> float:
        """The last check's largest residual / bound of both checks (>= 1: a contact)."""
        return max(float(np.max(np.abs(self.external) / self.bound)),
                   float(np.max(np.abs(self.rebased) / self.bound_rebased)))

    def check(self, arm: Any, fb: Feedback, now: float, residual: FloatArray,
              widen: FloatArray | None = None, rebased: FloatArray | None = None,
              widen_rebased: FloatArray | None = None) -> Finding | None:
        """``residual``: the external torque estimate (payloads already modelled); ``widen``
        [N·m per joint]: what the bound grows by this cycle (None: nothing). ``rebased``: the
        residual of on-time intervals only, judged against the threshold plus ``widen_rebased``
        (None: judged like ``residual``)."""
        ext = self.external
        np.copyto(ext, residual)
        np.copyto(self.rebased, residual if rebased is None else rebased)
        if not self.armed:
            return None
        bound = self._bound(self.bound, widen)
        bound_on = self._bound(self.bound_rebased, widen if rebased is None else widen_rebased)
        over, over_on = self.over, self.over_rebased
        np.subtract(np.abs(ext), bound, out=over)
        np.subtract(np.abs(self.rebased), bound_on, out=over_on)
        j = int(np.argmax(over))
        k = int(np.argmax(over_on))
        if self.latched:  # one event per contact: re-arm once the arm runs again and the push is gone
            if arm.state is ArmState.RUNNING and over[j] < -0.5 * bound[j] and over_on[k] < -0.5 * bound_on[k]:
                self.latched = False
            return None
        on = over_on[k] > over[j]  # the re-baselined residual is the one beyond (or nearer) its bound
        if on:
            j, ext, bound, over = k, self.rebased, bound_on, over_on
        if over[j] <= 0.0:
            return None
        self.latched = True
        self.detected_at = now
        force = _end_effector_force(arm.model, fb.position, ext)
        return self.finding(
            f"joint {j} ({arm.model.joint_names[j]}): effort residual {ext[j]:+.2f} N·m beyond "
            f"±{bound[j]:.2f} N·m{' (on-time samples since a late cycle)' if on else ''} "
            f"(end-effector force estimate {force:.1f} N)",
            joint=j, residual=ext.tolist(), threshold=bound.tolist(), force_estimate_N=force,
            hold_position=fb.position.copy(), time=now, rebased=on)

    def _bound(self, out: FloatArray, widen: FloatArray | None) -> FloatArray:
        """The threshold plus ``widen``, written into ``out`` (kept: the tests and the status read it)."""
        np.copyto(out, self.threshold)
        if widen is not None:
            out += widen
        return out


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
