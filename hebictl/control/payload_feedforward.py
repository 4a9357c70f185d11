"""The feed-forward of an end-effector load the model does not know, in every position mode.

Why one owner: the model-mismatch monitor (:mod:`hebictl.control.monitors.payload`) estimates, at
rest, the end-effector mass the model lacks. Without its weight fed forward the position loop
alone carries it and the arm sags by load / stiffness (30-80 mm with 1 kg); fed forward by one mode
only (the brake, the jog) the sag came back in the cycle another mode took over (a goal after a
payload hold sagged as it started). So the arm asks this object, every cycle of every mode that
commands positions (follow, jog, brake, hold), for the load's effort, and this object alone decides
how much load that is:

- its mass follows the estimate (refreshed by the monitor only at rest), ramped at
  :data:`MASS_RATE` so a refined estimate never steps the commanded effort;
- it is dropped (ramped out) only when the estimate is;
- :meth:`PayloadFeedForward.model_took` moves mass into the model (``Arm.set_payload``) without a
  step: what the model now includes leaves the feed-forward in the same cycle, so it is never
  counted twice; the monitor's next estimate is of the remaining mismatch.

The effort is the load's weight and inertia as a point mass at its estimated centre of mass ``c``
(the monitor fits it with the mass; 0: at the end effector), ``m J_c^T (J_c a + dJ_c v - g)`` with
``J_c = J_v - [R c]x J_w`` (hebi-py's gravity sign: efforts that hold the load against ``g``),
``dJ_c v`` from a difference along ``v``. The inertia was the end effector's point mass
(``J_v^T (J_v a + dJ_v v)``) until 2026-12-02: a brake with 1.5 kg 5 cm out on x7 ran its base
1.124x v²/2a (see docs/supervisor.md, "The brake ramp"). Modes without an acceleration (hold) pass zeros: weight
only. Why the centre of mass: r6 with 1 kg 3 cm out along its end effector, fed forward as a point
mass, left ~0.07 N·m of moment on the pitch joints to the position loop: the arm crept 1.1 mm after the
ramp, and a jog starting then drifted 0.24 mm sideways in its first millimetre (13.4 deg off).

State table (``mass`` the fed-forward mass, ``target`` the estimate's):

==================  ===========================  ==========================================
state               condition                    per cycle
==================  ===========================  ==========================================
off                 mass == 0 and target == 0    nothing (no Jacobian, no Python work)
ramping             mass != target               mass moves toward target at MASS_RATE
carrying            mass == target != 0          weight (+ inertia) of ``mass`` fed forward
==================  ===========================  ==========================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hebictl._typing import FloatArray

__all__ = ["COM_RATE", "MASS_RATE", "MIN_MASS_KG", "REFINE_DEADBAND", "PayloadFeedForward", "point_jacobian",
           "point_mass_effort"]

#: [kg] an estimated unknown load below this is not fed forward (estimate noise; a negative
#: estimate is never a load, see :meth:`PayloadFeedForward._take`)
MIN_MASS_KG = 0.05
#: [kg/s] how fast the fed-forward mass follows a new estimate (1 kg in 0.25 s: far slower than
#: the position loop, so the arm is carried up or down smoothly instead of jolted)
MASS_RATE = 1.0
#: [m/s] how fast the fed-forward centre of mass follows a refined estimate (5 mm in 0.25 s: no step
#: in the commanded effort, as for the mass)
COM_RATE = 0.02
#: [kg] a refined estimate this close to the one fed forward is not taken (estimate noise)
REFINE_DEADBAND = 0.1
#: [rad, along v per (rad/s)] step of the central difference that gives dJ_v v
_JDOT_STEP = 1e-4


def point_jacobian(model: Any, q: FloatArray, com: FloatArray | None) -> FloatArray:
    """The linear Jacobian (3, n) of the point ``com`` [m, end-effector frame] fixed to the end
    effector: ``J_v - [R c]x J_w`` (``J_v`` itself without a ``com``)."""
    J = model.jacobian_end_effector(q)
    if com is None or not np.any(com):
        return J[:3]
    c = model.end_effector(q)[:3, :3] @ com
    return J[:3] - np.cross(c, J[3:].T).T


def point_mass_effort(model: Any, mass: float, q: FloatArray, v: FloatArray | None,
                      a: FloatArray | None, gravity: FloatArray, com: FloatArray | None = None) -> FloatArray:
    """Effort [N·m] that holds and moves a point ``mass`` [kg] at ``com`` [m, end-effector frame;
    None or 0: the end effector] along (q, v, a): ``m J_c^T (J_c a + dJ_c v - g)``, ``J_c`` the
    point's linear Jacobian (:func:`point_jacobian`); ``a`` None: no acceleration, ``v`` None: no
    velocity-product term. ``dJ_c v`` by a forward difference along ``v`` (one more Jacobian; its
    O(h |v|) error is ~1e-4 of the term). The load's own rotational inertia is not included."""
    jc = point_jacobian(model, q, com)
    acc = np.zeros(3) if a is None else jc @ a
    if v is not None and v.any():
        h = _JDOT_STEP
        acc = acc + (point_jacobian(model, q + h * v, com) - jc) @ v / h
    return mass * (jc.T @ (acc - gravity))


class PayloadFeedForward:
    """The unknown end-effector load's feed-forward for one arm (see the module docstring)."""

    def __init__(self, model: Any, *, measured: bool = True) -> None:
        """``measured``: the backend's effort feedback is what the joints exert (sim, real modules); an
        echo of the command (hebi's imitation group, the mock) makes the estimate a measure of the
        command, fed forward again in a loop, so there the Arm does not follow it (:attr:`measured`)."""
        self.model = model
        #: the estimate is of a real load (the backend measures effort): the Arm follows it
        self.measured = measured
        self._has_ee = model.frame_count("end_effector") > 0
        #: [kg] the mass fed forward this cycle (ramps toward :attr:`target`)
        self.mass = 0.0
        #: [kg] the estimate's unmodelled mass (0: none, or too small to feed forward)
        self.target = 0.0
        #: [m, end-effector frame] the centre of mass fed forward (ramps toward :attr:`com_target`)
        self.com = np.zeros(3)
        #: [m, end-effector frame] the estimate's centre of mass
        self.com_target = np.zeros(3)
        self._estimate: Any = None  # the estimate dict last taken (the monitor replaces it when it refines)
        #: acceleration [rad/s²] a mode that is not a trajectory (the jog) commands this cycle
        self._accel: FloatArray | None = None
        #: the fraction of the way to the target the last :meth:`follow` went (see :meth:`carry_over`)
        self.taken = 0.0

    @property
    def active(self) -> bool:
        """Anything to feed forward (or to ramp out) this cycle."""
        return self.mass != 0.0 or self.target != 0.0

    def follow(self, estimate: dict[str, Any] | None, dt: float) -> None:
        """Take the monitor's estimate (``Arm.payload_estimate``; refreshed at rest only) as the target
        and ramp :attr:`mass` toward it over ``dt`` [s]. Cheap when nothing changed. A refinement
        within :data:`REFINE_DEADBAND` of the target is not taken (each such change moves the arm: the
        r-series arm sags ~55 mm per kg on its position loop, and a stopped jog drifted 1 mm)."""
        if estimate is not self._estimate:
            self._take(estimate, REFINE_DEADBAND)
        self._follow_com(dt)
        d = self.target - self.mass
        step = MASS_RATE * max(dt, 0.0)
        if d == 0.0:
            self.taken = 0.0
        elif abs(d) <= step:
            self.mass = self.target
            self.taken = 1.0
        else:
            self.mass += step if d > 0 else -step
            self.taken = step / abs(d)

    def _take(self, estimate: dict[str, Any] | None, deadband: float) -> None:
        self._estimate = estimate
        m = float(estimate.get("extra_mass_kg", 0.0)) if estimate is not None else 0.0
        # a load has positive mass: a residual that reads as a negative one is something else the model
        # lacks (a gas spring, an effort offset, wrong link masses). Fed forward, a point mass of negative
        # weight unloaded the elbow and wrist and the hold followed the sag: rosie-t with its 7 N·m
        # shoulder spring estimated -1.5 kg, then -2.4 kg, and drove itself 0.7 rad in 3 s.
        m = m if self._has_ee and np.isfinite(m) and m >= MIN_MASS_KG else 0.0
        if m == 0.0 or self.target == 0.0 or abs(m - self.target) >= deadband:
            self.target = m
        com = np.asarray(estimate.get("com_m", (0.0, 0.0, 0.0)) if estimate is not None else (0.0, 0.0, 0.0),
                         dtype=float).reshape(3)
        # a refinement of the centre of mass is taken even within the mass's deadband: it is what the
        # point mass could not carry (the estimate's mass moved with it)
        self.com_target = com if m != 0.0 and np.all(np.isfinite(com)) else np.zeros(3)
        if self.mass == 0.0:
            self.com = self.com_target.copy()  # nothing fed forward yet: the ramp of the mass carries it in

    def _follow_com(self, dt: float) -> None:
        d = self.com_target - self.com
        n = float(np.linalg.norm(d))
        if n == 0.0:
            return
        step = COM_RATE * max(dt, 0.0)
        self.com = self.com_target.copy() if n <= step else self.com + d * (step / n)

    def retarget(self, estimate: dict[str, Any] | None) -> None:
        """A brake starts: the arm is about to move anyway, so the latest estimate is taken whatever
        its difference (still ramped). A first estimate made while the arm rang under the new load
        (r6 with 0.5 kg: 0.44 kg, refined to 0.48 kg at rest) left under-fed, the arm settled 4 mm
        after the brake."""
        self._take(estimate, 0.0)

    def carry_over(self, command: FloatArray, measured: FloatArray) -> None:
        """Move a hold's ``command`` the fraction of the way to ``measured`` that this cycle's ramp step
        took (:meth:`follow`), in place. The arm's offset from its hold is the unfed load over the
        position loop's stiffness; with a linear loop the load its error carries shrinks exactly as the
        feed-forward takes it over, so the arm stays where it is (a latched hold moves nothing) instead
        of being lifted back (or, for an estimate that went down, dropped)."""
        if self.taken > 0.0:
            command += self.taken * (measured - command)

    def model_took(self, mass: float) -> None:
        """``mass`` [kg] was just added to the model (``Arm.set_payload``; negative: removed): it leaves
        the feed-forward at once (the model's gravity now carries it: no step, no double count), and the
        estimate it came from is void until the monitor's next rest (target 0)."""
        if self.mass != 0.0 or self.target != 0.0:
            self.mass -= mass
            if abs(self.mass) < MIN_MASS_KG:
                self.mass = 0.0
        self.target = 0.0
        self.com_target = np.zeros(3)  # (ramped out with what mass is left)

    def let_go(self) -> None:
        """The load is gone (the model-mismatch monitor's ``let_go`` finding): nothing of it is fed
        forward from this cycle on. A step, as the physics took one: ramped out at MASS_RATE, the
        vanished weight lifted the arm while the ramp lasted."""
        self.mass = self.target = 0.0
        self.com = np.zeros(3)
        self.com_target = np.zeros(3)
        self.taken = 0.0

    def accelerate(self, acceleration: FloatArray) -> None:
        """The jog's commanded acceleration this cycle (its inertia is fed forward with the weight);
        used by the next :meth:`effort` only (nothing kept while there is nothing to feed forward)."""
        if self.mass != 0.0:
            self._accel = acceleration

    def effort(self, q: FloatArray, v: FloatArray | None, a: FloatArray | None,
               gravity: FloatArray) -> FloatArray:
        """The load's effort [N·m] at ``q`` moving with (``v``, ``a``), or with the acceleration the
        jog gave (:meth:`accelerate`) when ``a`` is None."""
        if a is None:
            a = self._accel
        self._accel = None
        return point_mass_effort(self.model, self.mass, q, v, a, gravity, self.com)
