"""The generalized-momentum observer (De Luca & Mattone, 2003): the external joint torque the
model does not explain, from measured positions, velocities and efforts, with no acceleration.

Discrete and timed by the samples: each step covers the interval since the previous judged
sample on the samples' own timestamps (:mod:`.timing`), however long. Over an interval the
momentum changes by ∫(tau + tau_ext + Mdot qd - RNEA) dt, so its mean external torque is
(M̄ dqd) / dt - (tau - RNEA), and the residual is that mean low-passed at ``gain`` exactly for
the interval (:func:`.kernels.observer_step`): the continuous observer's first-order filter at any
interval. The explicit step it replaces (r += gain dt (e - r), on the loop's clock) overshoots
once an interval is longer than 1/gain (17 ms), so it was restarted beyond 15 ms, and it read a
sample that arrived late, which shows the arm as it was before the previous one, as a momentum
jump backwards.

What two samples cannot tell: how the efforts went between them. At the nominal period they
change smoothly; across a late cycle the modules hold a stale command and take up the late one
with a step of effort. So an interval longer than 1.5 nominal periods is judged with its own error
bound, its change of tau - RNEA plus ``late_widening`` (pro rata to its lateness), and for
:data:`SETTLE_S` after it each interval's change of tau - RNEA counts too; both are kept, filtered
like the residual, as ``slack`` for the contact bound: what the late cycle explains. Beside ``r``
the observer keeps ``r_on``, the same filter fed by on-time intervals only (a late one only decays
it, as the filter does without input: the residual re-baselined on the first on-time sample after
a gap), and ``slack_on``, the effort changes of the on-time intervals in the SETTLE_S after the
gap's end. The late interval's widening decays at the filter's rate, as its error in ``r`` does,
so a push after a gap had to outgrow it for several cycles; ``r_on`` holds none of that error, so
it needs none of that widening: a push that goes on after a gap shows in ``r_on`` against the
threshold as it would on time, while ``r`` still sees an impact inside the gap.
Measured (tests/control/monitors/test_contact_stalls.py, a 5 cm sphere with 20-100 ms stalls and
runs of late cycles around the touch, every bundled config): the event within the cycle after the
first sample showing the touch in 51 of 60 rows, 44 with the widened residual alone; the rest is
docs/monitors.md's.

Payloads: the end-effector point masses the suite sets in ``point_mass`` (the estimated unknown
load and the one declared with ``Arm.set_payload``) enter with their inertia, m J_v^T Δv over the
interval (Δv the end effector's velocity change); their weight enters through the efforts the
suite hands in. ``accel`` keeps the end effector's mean acceleration over the interval [m/s²], for
the payload's uncertainty in the contact bound, and ``load_dir`` the torque per kg of load,
J_v^T (g - a), filtered as the residual is: an arm sagging under an unknown load accelerates it,
and a fit against J_v^T g alone read 2.09 kg for 1.5 kg on x6 (the load's inertia counted as weight).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.monitors import kernels

__all__ = ["SETTLE_S", "MomentumObserver"]

#: [s] after a late interval, the error bound of each interval widens the contact bound
#: (the modules' loops take up the late command within a few periods; 3/gain at the default gain)
SETTLE_S = 0.05
#: [s] lateness at which a late interval's own widening (``late_widening``) is in full
LATE_FULL_S = 0.05


class MomentumObserver:
    """The residual ``r`` [N·m per joint]: external joint torque, filtered at ``gain`` [1/s].

    Per sample two inverse-dynamics calls of the model: RNEA(q, qd, 0) with gravity, and M dqd at
    q and at the previous q (RNEA without gravity, zero velocity, the velocity change as
    acceleration); with a payload one end-effector Jacobian."""

    def __init__(self, model: Any, gain: float, rotor: FloatArray) -> None:
        n = model.dof
        self.model = model
        self.gain = float(gain)
        self.rotor = np.ascontiguousarray(rotor, dtype=np.float64)
        # call A: one row (q, qd, 0) with gravity; call B: rows (q, 0, dqd), (q_prev, 0, dqd) without
        self.QA, self.VA, self.AA, self.RA = (np.zeros((1, model.nq)), *(np.zeros((1, n)) for _ in range(3)))
        self.QB, self.VB, self.AB, self.RB = (np.zeros((2, model.nq)), *(np.zeros((2, n)) for _ in range(3)))
        self.zero_g = np.zeros(3)
        self.qd_prev = np.zeros(n)
        self.f_prev = np.zeros(n)
        self.jump = np.zeros(n)   # [N·m] the change of tau - RNEA over the last interval
        self.r = np.zeros(n)
        #: [N·m] the residual of on-time intervals only (see the module docstring)
        self.r_on = np.zeros(n)
        #: [N·m per joint] what the last late interval explains (see the module docstring)
        self.slack = np.zeros(n)
        #: [N·m per joint] the on-time intervals' share of ``slack`` (what bounds ``r_on``'s error)
        self.slack_on = np.zeros(n)
        #: [N·m per joint] what a late interval may hide beyond its effort change, at LATE_FULL_S
        #: of lateness or more (pro rata below); the suite sets it from the contact thresholds
        self.late_widening = np.zeros(n)
        #: [kg] end-effector point mass whose inertia the model lacks (estimated and declared payloads)
        self.point_mass = 0.0
        self.accel = np.zeros(3)  # [m/s²] the end effector's mean acceleration over the last interval
        #: follow the end effector without a point mass too (the model-mismatch fit at rest needs the
        #: load direction); with neither, no Jacobian is taken
        self.track_load = False
        #: a model without an end effector (a bare chain of modules) has no load point to follow
        self.has_end_effector = model.frame_count("end_effector") > 0
        #: [N·m per kg] J_v^T (g - a): the torque 1 kg at the end effector exerts, filtered like the
        #: residual (a load's share of the residual is its mass times this, also while it moves)
        self.load_dir = np.zeros(n)
        self.load_ok = False
        self.v_prev = np.full(3, np.nan)
        self.since_late = math.inf  # [s] of judged intervals since the last late one began
        #: [s] of on-time intervals since the last late one ended: ``slack_on`` takes their effort
        #: changes for SETTLE_S of them (counted from its start, as ``since_late`` is, a 135 ms late
        #: interval used up the window itself, and the first on-time interval after it, whose
        #: effort stepped 7.6 N·m on the x6 base with 1.5 kg unknown, widened nothing: r_on reached
        #: 0.89 of its bound in a no-contact run; the residual's own bound has ``late_widening`` for
        #: that and keeps the window as it was)
        self.since_gap = math.inf
        self.alpha = 1.0  # the filter's decay over the last interval, exp(-gain dt)
        self.valid = False  # r is meaningful (the observer has run since its last restart)
        kernels.load(n)

    def restart(self) -> None:
        self.valid = False
        self.r.fill(0.0)
        self.r_on.fill(0.0)
        self.jump.fill(0.0)
        self.slack.fill(0.0)
        self.slack_on.fill(0.0)
        self.accel.fill(0.0)
        self.v_prev.fill(np.nan)
        self.load_ok = False

    def take_load(self, mass: float, static: FloatArray) -> None:
        """From the next sample on, the model carries ``mass`` [kg] more at the end effector, whose
        weight is ``mass`` x ``static`` (J_v^T g) in the efforts handed in: the residual drops what
        that load exerts now and the previous efforts are counted with it, so nothing steps (the
        residual of the arm with the load unmodelled and modelled is the same external torque)."""
        if not self.valid:
            return
        drop = mass * (self.load_dir if self.load_ok else static)
        self.r -= drop
        self.r_on -= drop
        self.f_prev += mass * static

    def update(self, q: FloatArray, qd: FloatArray, tau: FloatArray, gravity: FloatArray, dt: float,
               late: float = 0.0, skip: bool = False) -> bool:
        """One sample ``dt`` [s] after the previous one; False (and a restart at the next good one)
        when any input is not finite. ``late`` [s]: how much longer than the nominal one the
        interval is (it widens the contact bound, see the module docstring); ``skip``: the sample's
        efforts are not all of one moment: the interval is not judged (the residual decays over
        it as the filter does without input) and the next one starts here."""
        if not np.isfinite(q.sum() + qd.sum() + tau.sum()):
            self.restart()
            return False
        QB, AB = self.QB, self.AB
        start = not self.valid
        if start:
            QB[1] = q
            self.qd_prev[:] = qd
        else:
            QB[1] = QB[0]  # the previous q
        QB[0] = q
        np.subtract(qd, self.qd_prev, out=AB[0])
        AB[1] = AB[0]
        self.qd_prev[:] = qd
        self.QA[0] = q
        self.VA[0] = qd
        model = self.model
        model.inverse_dynamics_batch_into(self.QA, self.VA, self.AA, gravity, self.RA)
        model.inverse_dynamics_batch_into(QB, self.VB, AB, self.zero_g, self.RB)
        judged = not start and not skip and dt > 0.0
        on_time = judged and not late > 0.0
        self.alpha = alpha = math.exp(-self.gain * dt) if dt > 0.0 else 1.0
        self._end_effector(q, qd, gravity, dt if judged else 0.0, alpha, start)
        if skip and not start:
            self.r *= alpha  # the filter without input over the interval
            self.r_on *= alpha
        kernels.observer_step(self.RA[0], self.RB[0], self.RB[1], self.rotor, AB[0], tau, dt if judged else 0.0,
                              self.gain, self.f_prev, self.jump, self.r, self.r_on, start, on_time)
        self.slack *= alpha
        self.slack_on *= alpha
        if judged:
            if late > 0.0:
                self.since_late = self.since_gap = 0.0
            if self.since_late < SETTLE_S:
                self.slack += (1.0 - alpha) * self.jump
            if on_time and self.since_gap < SETTLE_S:
                self.slack_on += (1.0 - alpha) * self.jump
            if late > 0.0:
                self.slack += (1.0 - alpha) * min(1.0, late / LATE_FULL_S) * self.late_widening
            else:
                self.since_gap += dt
            self.since_late += dt
        self.valid = True
        return True

    def _end_effector(self, q: FloatArray, qd: FloatArray, gravity: FloatArray, dt: float, alpha: float,
                      start: bool) -> None:
        """The end effector's mean acceleration over the interval (``dt`` 0: not judged), the load
        direction J_v^T (g - a) filtered like the residual, and the point mass's m J_v^T Δv added
        to both mass rows (their mean is what the step uses)."""
        if not self.has_end_effector or (not self.track_load and self.point_mass == 0.0):
            self.v_prev.fill(np.nan)
            self.accel.fill(0.0)
            return
        Jv = self.model.jacobian_end_effector(q)[:3]
        v = Jv @ qd
        dv = v - self.v_prev
        np.copyto(self.v_prev, v)
        judged = dt > 0.0 and bool(np.isfinite(dv.sum()))
        if judged:
            np.multiply(dv, 1.0 / dt, out=self.accel)
        else:
            self.accel.fill(0.0)
        now = Jv.T @ (gravity - self.accel)
        if start:  # the residual starts at 0 here: so does its load direction (both then rise alike)
            self.load_dir.fill(0.0)
        elif judged and self.load_ok:
            self.load_dir *= alpha
            self.load_dir += (1.0 - alpha) * now
        else:  # followed again after a while: taken as steady
            np.copyto(self.load_dir, now)
        self.load_ok = True
        if judged and self.point_mass != 0.0:
            extra = self.point_mass * (Jv.T @ dv)
            self.RB[0] += extra
            self.RB[1] += extra
