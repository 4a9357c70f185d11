"""How hard each joint can brake, the effort that makes the modules follow a brake ramp, and
whether a module's own (firmware) position limit has taken over from the command.

A brake ramp (:class:`hebictl.control.motion.Brake`) is only safe if the modules can follow it:
a ramp that asks for more torque than an actuator has leaves its position loop behind, and the
hold then starts with the arm still moving and rings around the target. So the braking
deceleration of joint ``i`` at configuration ``q`` is what its effort limit can deliver::

    a_i = MARGIN * (effort_max_i - |gravity_i(q)|) / (M_ii(q) + rotor_i)

(``M`` the model's joint-space mass matrix, from its inverse dynamics; ``rotor_i`` the module's
reflected rotor inertia), min'd with the joint's rated deceleration (``Limits.acceleration_max``,
rated speed / 0.2 s by default). The rotor inertia of a HEBI module is not in its HRDF; it is
estimated from the motor's mechanical time constant as ``ROTOR_TIME_CONSTANT_S * effort_max /
speed_max`` (a geared DC motor's ``J R / (k_t k_e)`` with the torque-speed slope referred to the
output), unless the model gives joint armature.

:func:`minimal_stop_time` is the physical lower bound of a stop from a given speed with the whole
effort margin (a rectangular deceleration at ``a_i / MARGIN``): no controller can stop faster.

The ramp's feed-forward (:func:`brake_effort`) is the model's inverse dynamics along the ramp
plus the rotor inertia times the deceleration, clamped to the effort limit: the modules get the
torque the ramp needs instead of finding it through their position error.

An end-effector load the model does not know (the model-mismatch monitor's estimate at rest, fed
forward in every position mode by :mod:`hebictl.control.payload_feedforward`) is taken into the
brake's plan as a point mass ``m`` at its estimated centre of mass (:attr:`BrakePlanner.payload_mass`
and ``payload_com``, the fed mass and centre of mass when the brake starts): its weight counts against
the spare effort and ``m |J_c,i|^2`` is added to each joint's inertia when the deceleration is planned;
the arm feeds its weight and inertia ``m J_c^T (J_c a + dJ_c v - g)`` forward along the ramp (``J_c``
the centre of mass's linear Jacobian; both were the end effector's until 2026-12-02). Without it the
joints hold the load through their position error only (a sag of 40-60 mrad with 1 kg on the
r-series arm): a brake that lands the command on the measured position drops that error and the load
swings, and the ramp's feed-forward misses the load's inertia, so the arm overruns the ramp and rings for ~1 s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control import cycle_kernels
from hebictl.control.payload_feedforward import MIN_MASS_KG, point_jacobian, point_mass_effort
from hebictl.control.safety import Limits

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

#: [s] motor mechanical time constant used to estimate a module's reflected rotor inertia
ROTOR_TIME_CONSTANT_S = 0.01
#: fraction of the effort left after gravity that a brake may plan to use (the rest is for the
#: position loop's corrections, model error and a payload the model does not know)
MARGIN = 0.65
#: the measured effort may shrink the spare effort to this fraction of the model's, not below
MEASURED_FLOOR = 0.25
#: a joint's acceleration may reach this many times what its own effort and gravity give it alone (the
#: other joints push it through the mass matrix's off-diagonal terms): see :meth:`BrakePlanner.max_acceleration`
COUPLING = 2.0
#: [kg] an estimated unknown load below this is not taken into the brake (estimate noise)
PAYLOAD_MIN_KG = MIN_MASS_KG
_NO_GRAVITY = np.zeros(3)


def rotor_inertia(model: RobotModel) -> FloatArray:
    """Reflected rotor inertia per joint [kg·m²]: the model's armature where it has one, else
    ``ROTOR_TIME_CONSTANT_S * effort / speed`` (0 where the model has no finite rating)."""
    armature = getattr(model, "_armature", None)
    if armature is not None and np.any(armature > 0):
        return np.asarray(armature, dtype=np.float64).copy()
    effort = np.asarray(model.max_efforts, dtype=np.float64)
    speed = np.asarray(model.max_speeds, dtype=np.float64)
    est = ROTOR_TIME_CONSTANT_S * effort / speed
    return np.where(np.isfinite(est) & (est > 0), est, 0.0)


def mass_diagonal(model: RobotModel, q: FloatArray) -> FloatArray:
    """Diagonal of the joint-space mass matrix at ``q`` (RNEA with unit accelerations)."""
    n = model.dof
    eye = np.eye(n)
    m = model.inverse_dynamics(np.broadcast_to(q, (n, n)), np.zeros((n, n)), eye, _NO_GRAVITY)
    return np.diagonal(m).copy()


class BrakePlanner:
    """Per-joint braking deceleration and ramp feed-forward for one arm (see module docstring)."""

    def __init__(self, model: RobotModel, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self.rotor = rotor_inertia(model)
        self._id = np.empty(model.dof)
        #: [kg] the unknown end-effector load the current brake (and the hold after it) carries
        self.payload_mass = 0.0
        #: [m, end-effector frame] its centre of mass (None: at the end effector)
        self.payload_com: FloatArray | None = None
        self._has_ee = model.frame_count("end_effector") > 0

    def set_payload_mass(self, mass: float, com: FloatArray | None = None) -> None:
        """Take an estimated end-effector load [kg] the model does not know, at its centre of mass
        ``com`` [m, end-effector frame; None: the end effector], into the next brake (0 below
        ``PAYLOAD_MIN_KG`` or when the model has no end effector)."""
        m = float(mass) if np.isfinite(mass) else 0.0
        self.payload_mass = m if self._has_ee and abs(m) >= PAYLOAD_MIN_KG else 0.0
        c = None if com is None else np.asarray(com, dtype=np.float64)
        self.payload_com = c.copy() if c is not None and c.shape == (3,) and np.all(np.isfinite(c)) else None

    def payload_inertia(self, q: FloatArray) -> FloatArray:
        """``m |J_c,i(q)|^2`` per joint (``J_c`` the linear Jacobian of the load's centre of mass):
        the unknown load's share of each joint's inertia."""
        if self.payload_mass == 0.0:
            return np.zeros(self.model.dof)
        jc = point_jacobian(self.model, q, self.payload_com)
        return abs(self.payload_mass) * (jc * jc).sum(axis=0)

    def payload_effort(self, q: FloatArray, v: FloatArray, a: FloatArray, gravity: FloatArray) -> FloatArray:
        """Effort [N·m] that holds and moves the unknown load the brake plans with (a point mass at
        its centre of mass) along (q, v, a): :func:`~hebictl.control.payload_feedforward.point_mass_effort`."""
        if self.payload_mass == 0.0:
            return np.zeros(self.model.dof)
        return point_mass_effort(self.model, self.payload_mass, q, v, a, gravity, self.payload_com)

    def effort_deceleration(self, q: FloatArray, gravity: FloatArray | None = None,
                            effort: FloatArray | None = None) -> FloatArray:
        """Deceleration [rad/s²] each joint's effort limit can deliver at ``q`` (no margin).

        ``effort``: what the modules measure now. The effort already in use is the larger of it and
        the model's gravity effort, so a payload the model does not know (it shows in the measured
        effort, not in the model's) leaves the brake less to plan with instead of a ramp the
        modules cannot follow."""
        q = np.asarray(q, dtype=np.float64)
        if not np.all(np.isfinite(q)):
            return np.full(self.model.dof, np.inf)
        g = self.model.gravity_compensation(q, gravity)
        if self.payload_mass != 0.0:  # the unknown load's weight (its inertia is in the denominator)
            zero = np.zeros(self.model.dof)
            g = g + self.payload_effort(q, zero, zero, self.model.gravity if gravity is None else gravity)
        used = np.abs(g)
        spare = np.maximum(self.limits.effort_max - used, 0.0)
        if effort is not None:  # never below a quarter of the model's: a saturated reading is a transient
            measured = np.nan_to_num(np.abs(np.asarray(effort, dtype=np.float64)))
            spare = np.maximum(self.limits.effort_max - np.maximum(used, measured), MEASURED_FLOOR * spare)
        inertia = mass_diagonal(self.model, q) + self.rotor + self.payload_inertia(q)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(inertia > 0, spare / inertia, np.inf)
        return np.where(np.isfinite(self.limits.effort_max), a, np.inf)

    def deceleration(self, q: FloatArray, gravity: FloatArray | None = None,
                     effort: FloatArray | None = None, *, rated: bool = True) -> FloatArray:
        """Braking deceleration per joint: ``MARGIN`` x the effort's (the measured ``effort``
        counted, see :meth:`effort_deceleration`), min'd with the rated one unless ``rated`` is
        False (an arm that moves without a command, e.g. a falling link, is stopped as fast as its
        actuators allow)."""
        rated_a = self.limits.acceleration_max
        assert rated_a is not None
        a = MARGIN * self.effort_deceleration(q, gravity, effort)
        a = np.minimum(rated_a, a) if rated else np.where(np.isfinite(a), a, rated_a)
        # a joint with no effort to spare still gets a (slow) finite ramp rather than none
        return np.where(a > 0, a, np.minimum(rated_a, 1e-3))

    def max_acceleration(self, q: FloatArray, gravity: FloatArray | None = None) -> FloatArray:
        """The largest acceleration [rad/s²] each joint can physically reach at ``q``: its whole effort
        limit plus gravity's pull over its own inertia (and the rotor's), x ``COUPLING`` for the push of
        the other joints through the mass matrix. Inf where a joint has no effort limit: a measured
        velocity that changes faster than this is not a motion of the arm (:mod:`hebictl.control.plausible`)."""
        q = np.asarray(q, dtype=np.float64)
        if not np.all(np.isfinite(q)):
            return np.full(self.model.dof, np.inf)
        pull = np.abs(self.model.gravity_compensation(q, gravity))
        inertia = mass_diagonal(self.model, q) + self.rotor
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(inertia > 0, COUPLING * (self.limits.effort_max + pull) / inertia, np.inf)
        return np.where(np.isfinite(self.limits.effort_max), a, np.inf)

    def minimal_stop_time(self, q: FloatArray, v: FloatArray, gravity: FloatArray | None = None) -> float:
        """Shortest possible stop [s] from ``v`` at ``q``: every joint braked with all its spare effort."""
        a = self.effort_deceleration(q, gravity)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(np.abs(v) > 0, np.abs(v) / a, 0.0)
        return float(np.max(t)) if t.size else 0.0

    def brake_effort(self, p: FloatArray, v: FloatArray, a: FloatArray) -> FloatArray:
        """Effort [N·m] the ramp (p, v, a) needs besides gravity: inverse dynamics + rotor inertia."""
        out = self._id
        self.model.inverse_dynamics_into(np.ascontiguousarray(p, dtype=np.float64),
                                         np.ascontiguousarray(v, dtype=np.float64),
                                         np.ascontiguousarray(a, dtype=np.float64), _NO_GRAVITY, out)
        # the model adds its own armature; otherwise add the estimated rotor inertia
        return out + self.rotor * a if getattr(self.model, "_armature", None) is None else out.copy()

    def missing_effort(self, state: tuple[FloatArray, FloatArray, FloatArray], plugins: Iterable[Any]) -> FloatArray:
        """:meth:`brake_effort` less what the arm's ``feed_forward_effort`` plugins (DynamicsCompensationEffort)
        already added this cycle (they feed the same ramp's rigid-body dynamics forward while the arm holds)."""
        out = self.brake_effort(*state)
        for p in plugins:
            if getattr(p, "feed_forward_effort", False) and p.enabled_ratio > 0.0:
                out -= p.feed_forward_efforts()
        return out


def firmware_limit_acting(state: FloatArray | None, dof: int) -> tuple[int, str] | None:
    """(joint, "lower" | "upper") of the first module whose own position limit is acting, from
    ``Feedback.position_limit_state`` (hebi's values: 0 Below, 1 AtLower (target limited), 2 Inside,
    3 AtUpper, 4 Above, 5 Uninitialized; NaN unknown), else None."""
    if state is None:
        return None
    joint, upper = cycle_kernels.first_firmware_limit(state)
    return cycle_kernels.firmware_limit_side(joint, upper)
