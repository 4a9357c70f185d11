"""Minimum-jerk spline through waypoints: the numerical core of :mod:`hebictl.trajectory`.

Per joint the trajectory is one quintic per segment, C2 (position, velocity, acceleration
continuous), and among all such curves the one minimising the integrated squared jerk subject to
the waypoint constraints that are given (finite). That is what hebi-py's
``hebiGroupTrajectoryCreateUnconstrainedQp`` computes (verified numerically, see the tests). Its
optimality conditions: at an interior waypoint a free acceleration makes the jerk continuous, a
free velocity the snap, a free position the crackle; at an end a free quantity makes the
matching derivative (5 - its order) vanish, so free velocities and accelerations at both ends
give zero jerk everywhere, i.e. a plain parabola.

Why a Hermite formulation: each quintic is determined by its end states (x, v, a), so the state
at every waypoint is the unknown and C2 continuity holds by construction. The jerk cost of a
segment of duration h is then ``z^T Q(h) z`` with ``z`` the 6 end states and
``Q(h) = S JERK_GRAM S / h^5`` (``S = diag(1, h, h^2, 1, h, h^2)``, ``JERK_GRAM`` a constant
integer 6x6 matrix), the global Hessian ``H`` is block tridiagonal in 3x3 blocks, and the QP is
one small symmetric solve per joint in the free states only, ``H_ff z_f = -H_fg z_g``. All joints
share the times, hence ``H``, so joints sharing a free/given pattern (usually all of them) share
one LU; long trajectories are solved per joint in band storage. Each solve is refined in
extended precision because these systems can be very ill-conditioned (see
:func:`solve_waypoint_states`).
"""

from __future__ import annotations

from functools import lru_cache
from math import factorial

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
from numpy.typing import NDArray

from hebictl.errors import TrajectoryError

DENSE_MAX_WAYPOINTS = 40
"""Above this many waypoints the per-joint systems are solved in band storage (O(W), not O(W^3))."""

_BAND = 5
"""Half bandwidth of the global Hessian (3x3 blocks, neighbours only) in state ordering."""


def _derivative_row(s: float, order: int) -> list[float]:
    """d^order/ds^order of the monomials s^0..s^5 at s."""
    return [factorial(k) / factorial(k - order) * s ** (k - order) if k >= order else 0.0 for k in range(6)]


def _hermite_and_jerk_gram() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Quintic Hermite map and jerk Gram matrix on the unit interval.

    ``HERMITE @ (x0, x0', x0'', x1, x1', x1'')`` gives the monomial coefficients ``a_k`` of
    ``x(s) = sum a_k s^k`` (derivatives with respect to ``s``); ``JERK_GRAM`` is
    ``int_0^1 x'''(s)^2 ds`` as a quadratic form in those six end states.
    """
    ends = np.array([_derivative_row(s, d) for s in (0.0, 1.0) for d in range(3)])
    # Both are exactly half-integers (e.g. JERK_GRAM[0, 0] = 720); rounding removes the inversion
    # noise (~1e-13), which would otherwise bound the solver's accuracy and break symmetry.
    hermite = np.round(2.0 * np.linalg.inv(ends)) / 2.0
    k = np.arange(6, dtype=np.float64)
    falling = k * (k - 1) * (k - 2)  # d^3/ds^3 s^k = falling * s^(k-3)
    with np.errstate(divide="ignore", invalid="ignore"):
        gram = np.where((k[:, None] >= 3) & (k[None, :] >= 3),
                        np.outer(falling, falling) / (k[:, None] + k[None, :] - 5), 0.0)
    return hermite, np.round(2.0 * (hermite.T @ gram @ hermite)) / 2.0


HERMITE, JERK_GRAM = _hermite_and_jerk_gram()


_STATE_ORDER = np.array([0, 1, 2, 0, 1, 2])
_INVERSE_POWER = 5 - (_STATE_ORDER[:, None] + _STATE_ORDER[None, :])
"""Power of 1/h in each entry of a segment Hessian: ``Q(h)[r, c] = JERK_GRAM[r, c] / h^(5 - o_r - o_c)``."""


def _end_state_scale(durations: NDArray[np.float64]) -> NDArray[np.float64]:
    """(n, 6) factors turning physical end states (x, v, a) into unit-interval ones (x, v h, a h^2)."""
    return durations[:, None] ** _STATE_ORDER


def segment_hessians(durations: NDArray[np.floating]) -> NDArray[np.floating]:
    """(n, 6, 6) jerk-cost Hessians of the segments in physical end states (x0, v0, a0, x1, v1, a1).

    Computed in the dtype of ``durations`` (``np.longdouble`` for the refinement residual).
    """
    inverse = 1.0 / durations
    powers = np.empty((durations.size, 6), dtype=durations.dtype)  # 1/h^0 .. 1/h^5 by products
    powers[:, 0] = 1.0
    powers[:, 1] = inverse
    for k in range(2, 6):
        np.multiply(powers[:, k - 1], inverse, out=powers[:, k])
    return JERK_GRAM * powers[:, _INVERSE_POWER]


@lru_cache(maxsize=64)
def _block_indices(segments: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Flat indices of the 6x6 blocks of the even and of the odd segments in the row-major
    (3W x 3W) global Hessian; blocks within each group do not overlap."""
    size = 3 * (segments + 1)
    start = 3 * np.arange(segments)[:, None, None]
    row = np.arange(6)[None, :, None]
    col = np.arange(6)[None, None, :]
    indices = (start + row) * size + start + col
    even, odd = indices[0::2].ravel(), indices[1::2].ravel()
    even.flags.writeable = odd.flags.writeable = False
    return even, odd


def _dense_hessian(hessians: NDArray[np.floating]) -> NDArray[np.floating]:
    """(3W, 3W) global Hessian from the segment blocks; states ordered waypoint-major (x, v, a)."""
    size = 3 * (hessians.shape[0] + 1)
    flat = np.zeros(size * size, dtype=hessians.dtype)
    even, odd = _block_indices(hessians.shape[0])
    flat[even] += hessians[0::2].ravel()
    flat[odd] += hessians[1::2].ravel()
    return flat.reshape(size, size)


def _banded_hessian(hessians: NDArray[np.float64]) -> NDArray[np.float64]:
    """The global Hessian in LAPACK band storage, ``band[_BAND + i - j, j] = H[i, j]``."""
    n = hessians.shape[0]
    band = np.zeros((2 * _BAND + 1, 3 * (n + 1)))
    row, col = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
    start = 3 * np.arange(n)[:, None, None]
    np.add.at(band, (_BAND + row - col, start + col), hessians)
    return band


def _hessian_times(hessians: NDArray[np.floating], states: NDArray[np.floating]) -> NDArray[np.floating]:
    """Global Hessian times ``states`` (J, W, 3), summed segment by segment; returns (J, 3W)."""
    ends = np.concatenate([states[:, :-1, :], states[:, 1:, :]], axis=2)  # (J, n, 6)
    local = np.einsum("nrc,jnc->jnr", hessians, ends)
    out = np.zeros_like(states)
    out[:, :-1, :] += local[:, :, :3]
    out[:, 1:, :] += local[:, :, 3:]
    return out.reshape(states.shape[0], -1)


_MAX_SOLVES = 4
"""Initial solve plus up to three refinement steps (one suffices unless cond(H_ff) > ~1e8)."""


def _converged(correction: NDArray[np.float64], states: NDArray[np.float64]) -> bool:
    """The last correction was at rounding level (so the next would change nothing that matters)."""
    return bool(np.abs(correction).max() <= 1e-14 * np.abs(states).max())


def solve_waypoint_states(times: NDArray[np.float64], constraints: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fill the free (NaN) waypoint states with the minimum-jerk solution.

    Every branch solves ``H_ff z_f = -H_fg z_g`` in double precision and then refines the result
    against residuals computed in extended precision (``np.longdouble``, from a Hessian built in
    it): with free positions next to short segments the systems are ill-conditioned (condition
    numbers ~1e7 are ordinary, 1e12 possible), and each refinement step shrinks the error by about
    cond * eps, from ~cond * eps towards ~eps of the exact solution. Where ``np.longdouble`` is
    plain double (e.g. on arm64 macOS) this degrades gracefully to ordinary refinement.

    :param times: (W,) strictly increasing waypoint times, s (validated by the caller).
    :param constraints: (J, W, 3) position, velocity, acceleration at each waypoint in the
        joint's SI units; NaN marks a free value. Every joint must be fully determined
        (see :func:`check_determined`).
    :return: (J, W, 3) states with every entry finite.
    """
    joints, waypoints, _ = constraints.shape
    flat = constraints.reshape(joints, -1)
    given = ~np.isnan(flat)
    states = np.where(given, flat, 0.0)
    if not given.all():
        wide = times.astype(np.longdouble)
        exact_hessians = segment_hessians(wide[1:] - wide[:-1])
        if waypoints > DENSE_MAX_WAYPOINTS:
            _solve_banded(exact_hessians, given, states)
        else:
            exact_hessian = _dense_hessian(exact_hessians)
            patterns: dict[bytes, list[int]] = {}
            for joint, row in enumerate(given):
                patterns.setdefault(row.tobytes(), []).append(joint)
            for group in patterns.values():  # usually a single pattern shared by every joint
                free = ~given[group[0]]
                if not free.any():
                    continue
                if len(group) == joints:
                    _solve_shared(exact_hessian, free, states)
                else:
                    block = states[group]
                    _solve_shared(exact_hessian, free, block)
                    states[group] = block
    return states.reshape(constraints.shape)


def _solve_shared(exact_hessian: NDArray[np.longdouble], free: NDArray[np.bool_],
                  states: NDArray[np.float64]) -> None:
    """Joints sharing one free/given pattern: one LU of ``H_ff`` and a column per joint.
    ``states`` (joints, 3W), zero where free, is completed in place."""
    exact_columns = exact_hessian[:, free]
    lu, pivots, info = scipy.linalg.lapack.dgetrf(exact_columns[free].astype(np.float64))
    if info != 0:
        raise TrajectoryError(f"minimum-jerk system is singular (LAPACK dgetrf info={info})")
    for step in range(_MAX_SOLVES):  # solve from zero, then refine
        # residual of the free rows: H_ff z_f + H_fg z_g = (H z)_f (H is symmetric)
        residual = -(states.astype(np.longdouble) @ exact_columns)
        correction = scipy.linalg.lapack.dgetrs(lu, pivots, residual.astype(np.float64).T)[0].T
        states[:, free] += correction
        if step and _converged(correction, states):
            break


def _solve_banded(exact_hessians: NDArray[np.longdouble], given: NDArray[np.bool_],
                  states: NDArray[np.float64]) -> None:
    """Long trajectories, in band storage: per joint, ``H`` with the given rows and columns
    replaced by identity (keeps the band and the symmetry), one LAPACK ``gbsv`` per joint."""
    joints = states.shape[0]
    band = _banded_hessian(exact_hessians.astype(np.float64))
    offsets = np.arange(-_BAND, _BAND + 1)
    systems = []
    for j in range(joints):
        system = band.copy()
        fixed = np.flatnonzero(given[j])
        system[:, fixed] = 0.0  # columns
        cols = fixed[:, None] + offsets[None, :]
        inside = (cols >= 0) & (cols < system.shape[1])
        band_rows = np.broadcast_to(_BAND - offsets, cols.shape)
        system[band_rows[inside], cols[inside]] = 0.0  # rows
        system[_BAND, fixed] = 1.0
        systems.append(system)
    for step in range(_MAX_SOLVES):
        residual = -_hessian_times(exact_hessians, states.astype(np.longdouble).reshape(joints, -1, 3))
        residual[given] = 0.0
        residual = residual.astype(np.float64)
        correction = np.array([scipy.linalg.solve_banded((_BAND, _BAND), systems[j], residual[j],
                                                         check_finite=False) for j in range(joints)])
        states += correction
        if step and _converged(correction, states):
            break


def check_determined(times: NDArray[np.float64], constraints: NDArray[np.float64]) -> None:
    """Raise unless every joint's constraints single out one minimum-jerk trajectory.

    The jerk cost vanishes exactly on parabolas ``q(t) = c0 + c1 t + c2 t^2``, so the solution is
    unique iff the only parabola meeting the given constraints with zero data is zero, i.e. the
    rows ``[1, t, t^2]`` (given position), ``[0, 1, 2t]`` (velocity), ``[0, 0, 2]`` (acceleration)
    have rank 3. Counting settles almost every joint: three positions; or an acceleration
    (c2 = 0) with two positions or a velocity and a position; or two velocities (c1 = c2 = 0)
    and a position. Only the rest (e.g. two positions and one velocity, degenerate when the
    velocity sits midway) get the rank test.
    """
    given = ~np.isnan(constraints)
    unsettled = [
        joint for joint, (n_pos, n_vel, n_acc) in enumerate(given.sum(axis=1).tolist())
        if not (n_pos >= 3 or (n_acc >= 1 and (n_pos >= 2 or (n_vel >= 1 and n_pos >= 1)))
                or (n_vel >= 2 and n_pos >= 1))
    ]
    if not unsettled:
        return
    tn = (times - times[0]) / (times[-1] - times[0])
    rows_per_kind = (
        np.stack([np.ones_like(tn), tn, tn * tn], axis=1),
        np.stack([np.zeros_like(tn), np.ones_like(tn), 2 * tn], axis=1),
        np.tile([0.0, 0.0, 2.0], (tn.size, 1)),
    )
    for joint in unsettled:
        rows = np.concatenate([rows_per_kind[k][given[joint, :, k]] for k in range(3)])
        if rows.shape[0] < 3 or np.linalg.matrix_rank(rows) < 3:
            raise TrajectoryError(
                f"joint {joint} is under-constrained: its given positions, velocities and "
                "accelerations leave a family of equally smooth trajectories (a parabola can be added "
                "without changing the jerk); fix at least one more position, velocity or acceleration")


def segment_coefficients(times: NDArray[np.float64], states: NDArray[np.float64]) -> NDArray[np.float64]:
    """(n, 6, J) monomial coefficients ``a_k`` of ``x(s) = sum_k a_k s^k``, ``s = (t - t_i) / h_i``.

    Unit-interval coefficients (rather than powers of seconds) keep evaluation well conditioned
    for long segments.
    """
    ends = np.concatenate([states[:, :-1, :], states[:, 1:, :]], axis=2) * _end_state_scale(times[1:] - times[:-1])
    return np.ascontiguousarray((ends @ HERMITE.T).transpose(1, 2, 0))
