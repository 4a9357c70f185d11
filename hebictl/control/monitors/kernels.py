"""Compiled per-cycle arithmetic of the execution monitors: the generalized-momentum observer.

Why compiled: the observer forms the mass matrix from the inverse-dynamics rows and updates n
momenta and residuals every cycle; as numpy that is some twenty calls (~20 µs on a 6-DoF arm),
as one pass over the joints about one. The kernels use the model kernels' start-up machinery
(:mod:`hebictl.model.warmup`: loaded from numba's cache, interpreted while that is cold).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from hebictl.model import warmup as _warmup

njit = _warmup.lazy_njit
_CACHE = os.environ.get("HEBICTL_NUMBA_CACHE", "1") != "0"

#: what :func:`hebictl.model.warmup.install` wraps (compiled from the cache or interpreted while cold)
ENTRY_KERNELS = ("observer_step", "echo_status", "mark_repeat")


@njit(cache=_CACHE)
def observer_step(R, qd, tau, dt, gain, rotor, M, M_prev, p0, integral, r, start):
    """One step of the momentum observer (De Luca's residual) at feedback rate.

    ``R`` (n+2, n): inverse dynamics rows at q with gravity: row 0 = RNEA(q, qd, 0) = C qd + g,
    row 1 = RNEA(q, 0, 0) = g, row 2+j = RNEA(q, 0, e_j) = M e_j + g. ``rotor``: reflected rotor
    inertia added to M's diagonal. With p = M qd and p_dot = tau + Mdot qd - RNEA(q, qd, 0) for
    the measured efforts ``tau``, the residual r = K (p - p0 - ∫(tau + Mdot qd - RNEA + r) dt) is
    a first-order filtered estimate (time constant 1/K) of the external joint torque. ``start``:
    (re)initialise at this sample (r = 0). Mdot is the backward difference of M over ``dt``.
    """
    n = qd.shape[0]
    for i in range(n):
        for j in range(n):
            M[i, j] = R[2 + j, i] - R[1, i]
        M[i, i] += rotor[i]
    if start or dt <= 0.0:
        for i in range(n):
            p = 0.0
            for j in range(n):
                p += M[i, j] * qd[j]
                M_prev[i, j] = M[i, j]
            p0[i] = p
            integral[i] = 0.0
            r[i] = 0.0
        return
    for i in range(n):
        p = 0.0
        mdq = 0.0
        for j in range(n):
            p += M[i, j] * qd[j]
            mdq += (M[i, j] - M_prev[i, j]) * qd[j]
        integral[i] += (tau[i] + mdq / dt - R[0, i] + r[i]) * dt
        r[i] = gain * (p - p0[i] - integral[i])
    for i in range(n):
        for j in range(n):
            M_prev[i, j] = M[i, j]


@njit(cache=_CACHE)
def echo_status(pos, vel, eff, ring, count, head, tol_abs, tol_rel):
    """Which of the last ``count`` commands sent (``ring`` (K, 3, n), newest at ``head``) the
    modules' echo (``pos``/``vel``/``eff``) shows: its age in commands (0 = the newest) if one
    matches, -1 if none does, -2 if none does and a field sent finite in the newest echoes NaN
    (the command did not arrive or expired). A field sent as NaN (not commanded) is not compared; field f
    matches within ``tol_abs[f] + tol_rel[f] * |value|``."""
    size = ring.shape[0]
    n = pos.shape[0]
    nan_echo = False
    for c in range(count):
        k = (head - c) % size
        ok = True
        nan_here = False
        for i in range(n):
            for f in range(3):
                sent = ring[k, f, i]
                if sent != sent:
                    continue
                echo = pos[i] if f == 0 else (vel[i] if f == 1 else eff[i])
                if echo != echo:
                    nan_here = True
                    ok = False
                elif abs(echo - sent) > tol_abs[f] + tol_rel[f] * abs(sent):
                    ok = False
            if not ok and not nan_here:
                break
        if ok:
            return c
        if c == 0:
            nan_echo = nan_here
    return -2 if nan_echo else -1


@njit(cache=_CACHE)
def mark_repeat(pos, vel, eff, prev, k, step, marks, tol_abs, tol_rel):
    """If the command (``pos``/``vel``/``eff``) repeats the previous one (``prev`` (3, n), its
    unmarked copy) within the echo tolerances (as :func:`echo_status`; NaN equal to NaN), add
    mark ``k + 1`` (of ``marks``, ``step`` apart, centred on 0) to its finite efforts and return
    ``k + 1``; else return ``k``. ``prev`` becomes this command unmarked (the caller takes the
    mark off the arm's copy again after the write)"""
    n = pos.shape[0]
    same = True
    for i in range(n):
        for f in range(3):
            x = pos[i] if f == 0 else (vel[i] if f == 1 else eff[i])
            y = prev[f, i]
            if x != x or y != y:
                if not (x != x and y != y):
                    same = False
            elif abs(x - y) > tol_abs[f] + tol_rel[f] * abs(y):
                same = False
            prev[f, i] = x
    if not same:
        return k
    k = (k + 1) % marks
    offset = (k - 0.5 * (marks - 1)) * step
    for i in range(n):
        eff[i] += offset
    return k


def load(dof: int) -> None:
    """Call every kernel once on scratch arrays (numba loads them now, not in a control cycle)."""
    x = np.zeros(dof)
    m = np.zeros((dof, dof))
    observer_step(np.zeros((dof + 2, dof)), x, x, 0.005, 1.0, x, m, m.copy(), x.copy(), x.copy(), x.copy(), True)
    echo_status(x, x, x, np.zeros((2, 3, dof)), 1, 0, np.zeros(3), np.zeros(3))
    mark_repeat(x.copy(), x.copy(), x.copy(), np.zeros((3, dof)), 0, 1e-3, 8, np.zeros(3), np.zeros(3))


_warmup.install(sys.modules[__name__])
