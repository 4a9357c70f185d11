"""Contact and collision: the generalized-momentum observer's residual against per-joint bounds.

Why a momentum observer (De Luca & Mattone, 2003) rather than measured minus commanded effort
(hebi-py's ``OvertorqueFaultMonitor``): the residual needs no joint acceleration (which the
modules do not measure), is a first-order filtered estimate of the external joint torque with one
tunable time constant (1/``observer_gain``), and is exact for any motion of a correct model; the
commanded effort differs from the applied one by the modules' own PID output, so hebi's check
must be set far above a light contact. The efforts are what the modules measure through their
series-elastic springs (``Feedback.effort``).

Model: the arm's model (mass matrix and RNEA from one batched inverse-dynamics call) plus the
reflected rotor inertia of each module (``motor_time_constant`` x rated effort / rated speed, as
the simulator's actuator model and a geared DC motor's mechanics give) and the payload set with
``Arm.set_payload`` (its gravity; its inertia is neglected). An estimated but not applied payload
(:mod:`.payload`) is subtracted from the residual, so an unknown load is a model mismatch, not a
contact. Detection is armed after the first rest estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware.base import Feedback

__all__ = ["ContactMonitor", "MomentumObserver"]


class MomentumObserver:
    """The residual ``r`` [N·m per joint]: external joint torque, filtered at ``gain`` [1/s].

    Per sample two inverse-dynamics calls of the model: RNEA(q, qd, 0) with gravity, and M qd at
    q and at the previous q (RNEA without gravity, zero velocity, qd as acceleration)."""

    def __init__(self, model: Any, gain: float, rotor: FloatArray) -> None:
        n = model.dof
        self.model = model
        self.gain = float(gain)
        self.rotor = np.ascontiguousarray(rotor, dtype=np.float64)
        # call A: one row (q, qd, 0) with gravity; call B: rows (q, 0, qd), (q_prev, 0, qd) without
        self.QA, self.VA, self.AA, self.RA = (np.zeros((1, model.nq)), *(np.zeros((1, n)) for _ in range(3)))
        self.QB, self.VB, self.AB, self.RB = (np.zeros((2, model.nq)), *(np.zeros((2, n)) for _ in range(3)))
        self.zero_g = np.zeros(3)
        self.p0 = np.zeros(n)
        self.integral = np.zeros(n)
        self.r = np.zeros(n)
        self.valid = False  # r is meaningful (the observer has run since its last restart)
        kernels.load(n)

    def restart(self) -> None:
        self.valid = False
        self.r.fill(0.0)

    def update(self, q: FloatArray, qd: FloatArray, tau: FloatArray, gravity: FloatArray, dt: float) -> bool:
        """One sample; False (and a restart at the next good one) when any input is not finite."""
        if not np.isfinite(q.sum() + qd.sum() + tau.sum()):
            self.restart()
            return False
        QB, AB = self.QB, self.AB
        if not self.valid:
            QB[1] = q
        else:
            QB[1] = QB[0]  # the previous q
        QB[0] = q
        AB[0] = qd
        AB[1] = qd
        self.QA[0] = q
        self.VA[0] = qd
        model = self.model
        model.inverse_dynamics_batch_into(self.QA, self.VA, self.AA, gravity, self.RA)
        model.inverse_dynamics_batch_into(QB, self.VB, AB, self.zero_g, self.RB)
        kernels.observer_step(self.RA[0], self.RB[0], self.RB[1], self.rotor, qd, tau, dt, self.gain, self.p0,
                              self.integral, self.r, not self.valid)
        self.valid = True
        return True


class ContactMonitor(Monitor):
    """``contact``: a joint's residual beyond max(``threshold_min`` [N·m], ``threshold_fraction``
    x rated effort). Reaction (default ``stop``) holds at the measured position of detection
    (``values['hold_position']``), so the hold does not drive through the obstacle."""

    kind = EventKind.CONTACT

    def __init__(self, settings: dict[str, Any], effort_max: FloatArray) -> None:
        super().__init__(settings)
        emax = np.where(np.isfinite(effort_max), effort_max, 0.0)
        self.threshold = np.maximum(settings["threshold_min"], settings["threshold_fraction"] * emax)
        self.armed = False
        self.latched = False
        self.detected_at: float | None = None
        self.external = np.zeros(len(emax))  # residual minus the estimated payload's share [N·m]

    def check(self, arm: Any, fb: Feedback, now: float, residual: FloatArray,
              expected: FloatArray | None, allowance: FloatArray | None = None) -> Finding | None:
        """``expected``: the residual an estimated payload explains; ``allowance``: what its
        unmodelled inertia may add (both None without one)."""
        ext = self.external
        np.subtract(residual, expected, out=ext) if expected is not None else np.copyto(ext, residual)
        if not self.armed:
            return None
        bound = self.threshold if allowance is None else self.threshold + allowance
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


def _end_effector_force(model: Any, q: FloatArray, tau: FloatArray) -> float:
    """Least-squares end-effector force [N] explaining the joint torques ``tau`` (J_v^T F = tau)."""
    try:
        J = model.jacobian_end_effector(q)[:3]
    except Exception:  # a model without an end effector: no force estimate
        return float("nan")
    F, *_ = np.linalg.lstsq(J.T, tau, rcond=None)
    return float(np.linalg.norm(F))
