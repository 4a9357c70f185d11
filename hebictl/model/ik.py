"""Inverse kinematics: damped least squares (Levenberg-Marquardt) with joint limits.

Objectives mirror hebi-py's (end-effector position, full orientation, tip axis) so HEBI users
can move their code over; limits are enforced by projecting every step onto the joint range,
which keeps iterates feasible instead of penalising violations after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from hebictl._typing import FloatArray
from hebictl.errors import IKFailed, ModelError
from hebictl.model import kernels

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel



@dataclass(frozen=True)
class IKResult:
    """Outcome of an IK solve; ``q`` is the best configuration found even when not converged."""

    q: FloatArray
    converged: bool
    iterations: int
    position_error: float      # m, norm
    orientation_error: float   # rad (orientation objective) or tip-axis angle; 0 when unused


def damped_least_squares(jacobian: ArrayLike, residual: ArrayLike, damping_sq: float) -> FloatArray:
    """``J^T (J J^T + damping_sq I)^-1 residual``: the damped least-squares step (IK's, the jog's).

    Compiled (:func:`hebictl.model.kernels.damped_least_squares`): no LAPACK call, so no OpenBLAS
    thread pool in the control loop. Where its Cholesky factorization fails (``damping_sq`` 0 at a
    singularity, non-finite input) numpy's LU solve answers, as before."""
    J = np.ascontiguousarray(jacobian, dtype=np.float64)  # the kernel's one declared layout (no compile
    w = np.ascontiguousarray(residual, dtype=np.float64)  # of another in the control loop)
    if J.ndim != 2 or w.shape != (J.shape[0],):
        raise ModelError(f"damped least squares needs J (m, n) and a residual (m,), got {J.shape} and {w.shape}")
    out = np.empty(J.shape[1])
    if kernels.damped_least_squares(J, w, float(damping_sq), out):
        return out
    JJt = J @ J.T
    JJt[np.diag_indices_from(JJt)] += damping_sq
    try:
        return J.T @ np.linalg.solve(JJt, w)
    except np.linalg.LinAlgError as exc:
        raise ModelError(f"damped least squares: J J^T + {damping_sq:g} I is singular (a damping > 0 "
                         "keeps it solvable at a singularity)") from exc


def _skew(v: FloatArray) -> FloatArray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def solve(model: RobotModel, target: ArrayLike | None = None, seed: ArrayLike | None = None, *,  # noqa: C901 (the damped Newton loop with its stop rules in one place)
          orientation: ArrayLike | None = None, tip_axis: ArrayLike | None = None,
          frame: str = "end_effector", index: int = 0, limits: tuple[ArrayLike, ArrayLike] | None = None,
          respect_limits: bool = True, tolerance: float = 1e-10, max_iterations: int = 200,
          orientation_weight: float = 1.0, raise_on_failure: bool = False) -> IKResult:
    """Find q that puts frame ``frame``[``index``] at ``target``.

    target: xyz position [m] (world), or a 4x4 pose (sets ``orientation`` too).
    orientation: 3x3 rotation or quaternion w x y z of the frame in the world.
    tip_axis: unit vector [world] that the frame's z axis should point along.
    limits: (lower, upper) [rad or m]; defaults to the model's joint limits.
    Returns an :class:`IKResult`; raises :class:`IKFailed` only if ``raise_on_failure``.
    """
    if model.nq != model.nv:
        raise ModelError("inverse kinematics supports models with 1-DoF joints only (no ball/free joints)")
    q = np.array(model.neutral_configuration() if seed is None else seed, dtype=np.float64).reshape(-1)
    if q.shape != (model.nq,):
        raise ModelError(f"seed must have shape ({model.nq},), got {q.shape}")
    pos_target: FloatArray | None = None
    R_target: FloatArray | None = None
    if target is not None:
        t = np.asarray(target, dtype=np.float64)
        if t.shape == (4, 4):
            pos_target, R_target = t[:3, 3].copy(), t[:3, :3].copy()
        elif t.shape == (3,):
            pos_target = t.copy()
        else:
            raise ModelError(f"target must be xyz (3,) or a 4x4 pose, got shape {t.shape}")
    if orientation is not None:
        o = np.asarray(orientation, dtype=np.float64)
        if o.shape == (4,):
            R_target = Rotation.from_quat(o, scalar_first=True).as_matrix()
        elif o.shape == (3, 3):
            R_target = o
        else:
            raise ModelError("orientation must be a 3x3 rotation or a quaternion w x y z")
    axis_target = None
    if tip_axis is not None:
        axis_target = np.asarray(tip_axis, dtype=np.float64).reshape(3)
        axis_target = axis_target / np.linalg.norm(axis_target)
    if pos_target is None and R_target is None and axis_target is None:
        raise ModelError("give at least one objective: target position/pose, orientation or tip_axis")
    if limits is None:
        lo, hi = model.position_limits
    else:
        lo, hi = (np.broadcast_to(np.asarray(x, dtype=np.float64), (model.nq,)) for x in limits)
    if respect_limits:
        q = np.clip(q, lo, hi)

    def residual(q: FloatArray) -> tuple[FloatArray, FloatArray, float, float]:
        T = model.forward_kinematics(q, frame)[index]
        J = model.jacobians(q, frame)[index]
        rows, jac = [], []
        pe = oe = 0.0
        if pos_target is not None:
            e = pos_target - T[:3, 3]
            rows.append(e)
            jac.append(J[:3])
            pe = float(np.linalg.norm(e))
        if R_target is not None:
            e = Rotation.from_matrix(R_target @ T[:3, :3].T).as_rotvec()
            rows.append(orientation_weight * e)
            jac.append(orientation_weight * J[3:])
            oe = float(np.linalg.norm(e))
        elif axis_target is not None:
            z = T[:3, 2]
            e = axis_target - z
            rows.append(orientation_weight * e)
            jac.append(orientation_weight * (-_skew(z) @ J[3:]))
            oe = float(np.arccos(np.clip(z @ axis_target, -1.0, 1.0)))
        return np.concatenate(rows), np.vstack(jac), pe, oe

    e, J, pe, oe = residual(q)
    cost = float(e @ e)
    lam = 1e-3
    it = 0
    for it in range(1, max_iterations + 1):  # noqa: B007 - iteration count is reported
        if cost < tolerance**2:
            break
        step = damped_least_squares(J, e, lam)
        q_new = q + step
        if respect_limits:
            q_new = np.clip(q_new, lo, hi)
        e_new, J_new, pe_new, oe_new = residual(q_new)
        cost_new = float(e_new @ e_new)
        if cost_new < cost:
            q, e, J, pe, oe, cost = q_new, e_new, J_new, pe_new, oe_new, cost_new
            lam = max(lam * 0.3, 1e-12)
        else:
            lam *= 10.0
            if lam > 1e8:
                break
    converged = cost < max(tolerance, 1e-12) ** 2 * 1e4 and pe < 1e-7 and oe < 1e-6
    result = IKResult(q=q, converged=bool(converged), iterations=it, position_error=pe, orientation_error=oe)
    if raise_on_failure and not converged:
        raise IKFailed(f"IK did not converge: position error {pe:.3g} m, orientation error {oe:.3g} rad "
                       f"after {it} iterations", result)
    return result
