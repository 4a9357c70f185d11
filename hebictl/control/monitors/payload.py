"""Model mismatch: an unknown end-effector payload, estimated from the residual at rest.

Why least squares through the end-effector Jacobian: at rest the observer's residual is the
external joint torque, and a payload of mass m at the end effector exerts J_v(q)^T (m g) (g the
gravity vector): m = a·r / a·a with a = J_v^T g. The same vector gives the efforts that hold an
accepted payload (``Arm.set_payload``), the way HEBI users declare end-effector payloads:
-J_v(q, com)^T (m g), hebi-py's gravity sign.

Why the centre of mass too: a load whose centre of mass is off the end effector (a gripper's
fingers 3 cm out) also exerts a moment, J_w^T (p × g) with p = m c its first moment. Fitted as a
point mass alone, part of that moment is read as mass (r6, 1 kg at 3 cm: 0.984 kg) and the rest is
fed forward by no one, so the position loop carries it and the arm creeps ~1 mm once the feed-forward
has ramped in (the jog's start then drifted 13 deg off its direction). Fitting m and p together
(:meth:`ModelMismatchMonitor.check`) gives 1.000 kg and the offset across gravity (6.99 mm of the
true 6.97 mm); p along gravity exerts nothing in that pose and is left 0 (the least-norm fit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors import kernels
from hebictl.control.monitors.base import Monitor
from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from hebictl.hardware.base import Feedback

__all__ = ["MAX_COM_M", "ModelMismatchMonitor", "Payload", "payload_efforts", "payload_torque_direction",
           "payload_uncertainty"]

#: [m] a fitted centre of mass farther than this from the end effector is no end-effector load (a
#: gas spring, an effort offset, wrong link masses read as a moment): the fit falls back to a point
#: mass (the contact bound's default ``payload_lever``, the offset it allows a load's moment)
MAX_COM_M = 0.1


class Payload:
    """A payload the arm's gravity model includes: ``mass`` [kg] at ``com`` [m, end-effector frame]."""

    def __init__(self, mass: float, com: Any = (0.0, 0.0, 0.0)) -> None:
        self.mass = float(mass)
        self.com = np.asarray(com, dtype=np.float64).reshape(3)

    def __repr__(self) -> str:
        return f"Payload(mass={self.mass:.3f} kg, com={self.com.tolist()})"


def payload_torque_direction(model: Any, q: FloatArray, gravity: FloatArray,
                             com: FloatArray | None = None) -> FloatArray:
    """a = J_v(q, com)^T g [N·m per kg]: the joint torque a 1 kg mass at the end effector (``com``
    [m] in its frame) exerts under ``gravity`` [m/s²]."""
    if model.frame_count("end_effector") == 0:  # no end effector: no payload to weigh there
        return np.zeros(model.nv)
    J = model.jacobian_end_effector(q)
    Jv = J[:3]
    if com is not None and np.any(com):
        R = model.end_effector(q)[:3, :3]
        c = R @ com  # J_v at the com = J_v - [c]x J_w
        Jw = J[3:]
        Jv = Jv - np.cross(c, Jw.T).T
    return Jv.T @ gravity


def payload_efforts(model: Any, q: FloatArray, payload: Payload, gravity: FloatArray) -> FloatArray:
    """Efforts [N·m] that hold ``payload`` at ``q`` (to add to the gravity compensation)."""
    return -payload.mass * payload_torque_direction(model, q, gravity, payload.com)


def payload_uncertainty(model: Any, q: FloatArray, gravity: FloatArray, accel: FloatArray, mass: float,
                        sigma: float, lever: float) -> FloatArray:
    """[N·m per joint] what an end-effector payload of ``mass`` [kg] that the model carries as a
    point mass may still exert beyond it: its mass off by ``sigma`` [kg], and its centre of mass up
    to ``lever`` [m] from the end effector (a moment the point mass does not have), both at the
    force it needs, m (g - a), with ``accel`` [m/s²] the end effector's measured acceleration.
    Per joint: σ |J_v,j · (g - a)| + (m + σ) ℓ |g - a| |J_w,j|."""
    J = model.jacobian_end_effector(q)
    load = gravity - accel
    return sigma * np.abs(J[:3].T @ load) + (mass + sigma) * lever * float(np.linalg.norm(load)) * np.sqrt(
        (J[3:] * J[3:]).sum(axis=0))


class ModelMismatchMonitor(Monitor):
    """``model_mismatch``: after ``rest_time`` [s] with the command still and every joint slower
    than ``rest_speed`` [rad/s], the residual is explained as an end-effector mass; beyond ``min_mass`` [kg] it is an
    event with the estimate (``values['mass_kg']``: total payload, the one applied included)."""

    kind = EventKind.MODEL_MISMATCH

    def __init__(self, settings: dict[str, Any]) -> None:
        super().__init__(settings)
        self.rest = 0.0               # [s] of the current rest
        self.rested_once = False      # at least one estimate was made (arms the contact monitor)
        self.extra_mass = 0.0         # [kg] estimated, not applied to the model
        self.direction: FloatArray | None = None
        self.estimate: dict[str, Any] | None = None  # what Arm.payload_estimate shows
        self.reported = 0.0           # [kg] the extra mass last reported
        self._ar = self._aa = 0.0     # least-squares sums over the current rest
        self._AtA = np.zeros((4, 4))  # normal equations of the (m, p) fit over the current rest
        self._Atr = np.zeros(4)
        self._R = np.eye(3)           # the end effector's orientation at the last rest sample
        #: [m, end-effector frame] the estimated load's centre of mass (0: a point mass)
        self.com = np.zeros(3)
        self._m2 = 0.0                # Σ a·a (a·r / a·a)²: the per-sample masses' spread
        #: [kg] the spread of the per-sample masses over the rest the estimate came from (the arm
        #: still settling under the load, ringing): how far the estimate may be off
        self.spread = 0.0
        self._next = float(settings["rest_time"])  # [s] of rest at which to estimate next

    def reset_extra(self) -> None:
        """The model changed (a payload set): the unapplied estimate is void until the next rest."""
        self.extra_mass = 0.0
        self.spread = 0.0
        self.com = np.zeros(3)
        self.estimate = None
        self.reported = 0.0
        self.rest = 0.0
        self._next = self.settings["rest_time"]
        self._restart_sums()

    def _restart_sums(self) -> None:
        self._ar = self._aa = self._m2 = 0.0
        self._AtA.fill(0.0)
        self._Atr.fill(0.0)

    def unapplied_mass(self) -> float:
        """[kg] the estimated load the model does not carry (0 below 0.05 kg: noise, not a load)."""
        return self.extra_mass if abs(self.extra_mass) >= 0.05 else 0.0

    def check(self, arm: Any, fb: Feedback, dt: float, residual: FloatArray, direction: FloatArray,
              valid: bool, in_contact: bool, gravity: FloatArray | None = None) -> Finding | None:
        """Accumulate the least-squares fit m = Σ a·r / Σ a·a over a rest (the command still, every
        joint slower than ``rest_speed``: an arm that sags and rings under an unknown load counts,
        the ringing averages out) and judge it once ``rest_time`` has passed. ``residual``: the
        observer's, which models the load estimated so far (:meth:`unapplied_mass`), so the load
        is that plus what the residual still shows; ``direction``: the torque per kg of load now,
        filtered as the residual (:attr:`.observer.MomentumObserver.load_dir`: J_v^T (g - a), the
        load's inertia counted while the arm settles); ``valid``: a residual on a judged interval;
        ``gravity``: the gravity vector the moment is fitted under (None: the model's). The load's
        first moment is fitted with its mass (the module docstring)."""
        still = (valid and not in_contact and kernels.all_below(arm.pending_command.velocity, 1e-3)
                 and kernels.all_below(fb.velocity, self.settings["rest_speed"]))
        if still and arm.state is ArmState.STOPPED and arm.stop_behaviour is not StopBehaviour.HOLD:
            still = False  # damp/release: the modules do not hold, the residual is not a load
        if not still:
            if self.rest:
                self.rest = 0.0
                self._next = self.settings["rest_time"]
                self._restart_sums()
            return None
        a = direction
        carried = self.unapplied_mass()  # the observer models it: the residual is of the rest
        aa = float(a @ a)
        ar = float(a @ residual) + carried * aa
        self._ar += ar
        self._aa += aa
        if aa > 1e-9:
            self._m2 += ar * ar / aa  # Σ aa (ar/aa)²
            self._add_moment(arm, fb.position, residual + carried * a, a, gravity)
        self.rest += dt
        if self.rest < self._next or self._aa < 1e-9:
            return None
        self._next += self.settings["rest_time"]  # refined every rest_time while the rest lasts
        self.rested_once = True
        m = self._ar / self._aa
        self.spread = math.sqrt(max(self._m2 / self._aa - m * m, 0.0))
        m, self.com = self._with_moment(m)
        self.extra_mass = m  # the whole unapplied load
        applied = arm.payload.mass if getattr(arm, "payload", None) is not None else 0.0
        unexplained = float(np.linalg.norm(residual + (carried - m) * a))
        self.estimate = {"mass_kg": applied + self.extra_mass, "extra_mass_kg": self.extra_mass,
                         "applied_mass_kg": applied, "unexplained_Nm": unexplained, "spread_kg": self.spread,
                         "com_m": [float(c) for c in self.com]}
        if abs(self.extra_mass - self.reported) < self.settings["min_mass"]:
            return None  # nothing new since the last report (or nothing at all)
        self.reported = self.extra_mass
        return self.finding(
            f"steady effort residual at rest: an end-effector load of {self.extra_mass:+.2f} kg the model "
            f"does not know (total {applied + self.extra_mass:.2f} kg; Arm.set_payload takes it)",
            **self.estimate)

    def _add_moment(self, arm: Any, q: FloatArray, r: FloatArray, a: FloatArray,
                    gravity: FloatArray | None) -> None:
        """Add one rest sample to the (m, p) fit: r = m a + J_w^T (p × g) = m a - J_w^T [g]x p."""
        model = arm.model
        if model.frame_count("end_effector") == 0:
            return
        g = model.gravity if gravity is None else gravity
        Jw = model.jacobian_end_effector(q)[3:]
        gx = np.array([[0.0, -g[2], g[1]], [g[2], 0.0, -g[0]], [-g[1], g[0], 0.0]])
        A = np.column_stack([a, -Jw.T @ gx])
        self._AtA += A.T @ A
        self._Atr += A.T @ r
        self._R = model.end_effector(q)[:3, :3]

    def _with_moment(self, point_mass: float) -> tuple[float, FloatArray]:
        """(m, com [m, end-effector frame]) of the joint fit; the point mass and no offset when the fit
        has no samples, no mass, or puts the centre of mass beyond :data:`MAX_COM_M`."""
        if not np.any(self._AtA):
            return point_mass, np.zeros(3)
        x = np.linalg.pinv(self._AtA, rcond=1e-10) @ self._Atr  # least-norm: p along g stays 0
        m, p = float(x[0]), x[1:]
        if not (np.isfinite(m) and abs(m) >= 0.05 and np.all(np.isfinite(p))):
            return point_mass, np.zeros(3)
        com = self._R.T @ (p / m)
        if float(np.linalg.norm(com)) > MAX_COM_M:
            return point_mass, np.zeros(3)
        return m, com
