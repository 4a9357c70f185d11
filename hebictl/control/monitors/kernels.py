"""Compiled per-cycle arithmetic of the execution monitors: the generalized-momentum observer.

Why compiled: the observer, the tracking bound and the echo comparison run every cycle on a
handful of joints, where each numpy call costs about a microsecond whatever the array size; as
one pass over the joints each takes about one. The kernels are registered with :mod:`hebictl.jit`
(loaded from numba's cache, interpreted while that is cold).
"""

from __future__ import annotations

import math

from hebictl import jit

_VEC = "f8[::1]"


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, {_VEC}, {_VEC}, {_VEC}, f8, f8, {_VEC}, {_VEC}, {_VEC}, {_VEC}, b1, b1",
            cache=jit.CACHE)
def observer_step(n_row, Md, Md_prev, rotor, dqd, tau, dt, gain, f_prev, jump, r, r_on, start, on_time):
    """One step of the momentum observer (De Luca's residual) over the interval ``dt`` [s]
    between two samples, however long.

    ``n_row`` = RNEA(q, qd, 0) = C qd + g at the new sample; ``Md`` = M(q) dqd and ``Md_prev`` =
    M(q_prev) dqd (RNEA without gravity at zero velocity with the velocity change ``dqd`` as
    acceleration); ``rotor``: reflected rotor inertia added to M's diagonal; ``tau``: the measured
    efforts. Over the interval the momentum changes by ∫(tau + tau_ext + Mdot qd - RNEA) dt, so the
    mean external torque is ``e`` = (M̄ dqd) / dt - (tau - RNEA) with M̄ the mean of both mass
    matrices (the trapezoid rule for ∫Mdot qd) and the efforts of the new sample: a command is
    written just after a sample is read, and the modules' efforts step to it early in the
    interval, so its end shows them better than the mean of both ends (on the sim, a brake that
    ends in a hold stepped the shoulder's effort by 22 N·m in one period; the mean read 2.4 N·m of
    that as external). The residual is ``e`` low-passed at ``gain`` [1/s] exactly for the
    interval: r = α r + (1 - α) e, α = exp(-gain dt): the continuous observer's first-order
    filter, stable for any interval (an explicit step, r += gain dt (e - r), overshoots once
    gain dt > 1 and diverges beyond 2: 17 and 33 ms at the default gain). ``jump`` [N·m] is the
    change of tau - RNEA over the interval, per joint: what the end-point rule may be off by when
    the efforts changed in ways the two samples do not show (``f_prev`` keeps the previous value).
    ``r_on``: the same filter fed by on-time intervals only (``on_time``); over any other interval
    it decays as without input, so it holds nothing of what a late interval's two samples cannot
    show (the re-baselined residual the contact check judges beside ``r``).
    ``start``: (re)initialise here (r = r_on = 0, nothing judged).
    Three inverse-dynamics rows instead of the n + 2 the full mass matrix would take.
    """
    n = dqd.shape[0]
    if start or dt <= 0.0:
        for i in range(n):
            f_prev[i] = tau[i] - n_row[i]
            jump[i] = 0.0
            if start:
                r[i] = 0.0
                r_on[i] = 0.0
        return
    alpha = math.exp(-gain * dt)
    for i in range(n):
        f = tau[i] - n_row[i]
        e = (0.5 * (Md[i] + Md_prev[i]) + rotor[i] * dqd[i]) / dt - f
        jump[i] = abs(f - f_prev[i])
        r[i] = alpha * r[i] + (1.0 - alpha) * e
        r_on[i] = alpha * r_on[i] + ((1.0 - alpha) * e if on_time else 0.0)
        f_prev[i] = f


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, f8, f8", cache=jit.CACHE)
def worst_excess(x, ref, rate, base, per_rate):
    """Index of the joint whose |x - ref| most exceeds ``base`` + ``per_rate`` x |rate| (NaN
    entries skipped; -1 if none is finite), its error and its bound: the tracking check."""
    best = -1
    worst = -1e300
    err_b = 0.0
    bound_b = 0.0
    for i in range(x.shape[0]):
        e = abs(x[i] - ref[i])
        v = rate[i]
        b = base + per_rate * (abs(v) if v == v else 0.0)
        if e == e and e - b > worst:
            worst = e - b
            best = i
            err_b = e
            bound_b = b
    return best, err_b, bound_b


@jit.kernel(f"{_VEC}, f8", cache=jit.CACHE)
def all_below(x, limit):
    """True when every |x| < ``limit`` (a NaN entry counts as below: not measured or not commanded)."""
    for i in range(x.shape[0]):  # noqa: SIM110  (a loop numba compiles; all() of a generator it does not)
        if abs(x[i]) >= limit:
            return False
    return True


@jit.kernel(f"{_VEC}, {_VEC}", cache=jit.CACHE)
def any_beyond(x, bound):
    """True when some |x[i]| > ``bound[i]`` (a NaN entry is not beyond: not measured)."""
    for i in range(x.shape[0]):  # noqa: SIM110  (a loop numba compiles; any() of a generator it does not)
        if abs(x[i]) > bound[i]:
            return True
    return False


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, f8[:, :, ::1], i8, i8, {_VEC}, {_VEC}", cache=jit.CACHE)
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


@jit.helper(cache=jit.CACHE, inline="always")
def _same(x, y, tol_abs, tol_rel):
    """``x`` repeats ``y`` within ``tol_abs + tol_rel * |y|`` (NaN equal to NaN only)."""
    if x != x or y != y:
        return x != x and y != y
    return not abs(x - y) > tol_abs + tol_rel * abs(y)


@jit.helper(cache=jit.CACHE)
def _repeats(pos, vel, eff, prev, tol_abs, tol_rel):
    """``(same, held)``: the command repeats ``prev`` (3, n) field by field within the echo
    tolerances; some joint has both its position and its effort commanded. ``prev`` becomes the
    command."""
    same = True
    held = False
    for i in range(pos.shape[0]):
        if pos[i] == pos[i] and eff[i] == eff[i]:
            held = True
        for f in range(3):
            x = pos[i] if f == 0 else (vel[i] if f == 1 else eff[i])
            if not _same(x, prev[f, i], tol_abs[f], tol_rel[f]):
                same = False
            prev[f, i] = x
    return same, held


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, f8[:, ::1], i8, f8, i8, {_VEC}, {_VEC}", cache=jit.CACHE)
def mark_repeat(pos, vel, eff, prev, k, step, marks, tol_abs, tol_rel):
    """If the command (``pos``/``vel``/``eff``) repeats the previous one (``prev`` (3, n), its
    unmarked copy) within the echo tolerances (as :func:`echo_status`; NaN equal to NaN), add
    mark ``k + 1`` (``marks`` distinct values ±``step`` x 1..marks/2, alternating in sign) to the
    effort of every joint whose position is commanded and return ``k + 1``; else (or with no
    position commanded) return ``k``.
    ``prev`` becomes this command unmarked (the caller takes the mark off the arm's copy again
    after the write)."""
    same, held = _repeats(pos, vel, eff, prev, tol_abs, tol_rel)
    if not same or not held:
        return k
    k = (k + 1) % marks
    offset = (k // 2 + 1) * step  # alternating sign: no net torque, nothing for the arm to follow
    if k % 2:
        offset = -offset
    for i in range(pos.shape[0]):
        if pos[i] == pos[i]:
            eff[i] += offset
    return k


@jit.kernel(f"f8[:, ::1], {_VEC}, {_VEC}, {_VEC}", cache=jit.CACHE)
def store(row, pos, vel, eff):
    """Copy a command into ``row`` (3, n): one call instead of three numpy assignments."""
    for i in range(pos.shape[0]):
        row[0, i] = pos[i]
        row[1, i] = vel[i]
        row[2, i] = eff[i]


def load(dof: int) -> None:
    """Load every kernel from numba's cache now (or start the background compile on a cold cache),
    not in a control cycle. ``dof`` is unused (the signatures say what to load); kept for callers."""
    jit.preload(__name__)


#: the entry kernels, in declaration order (what hebictl.jit compiles and loads)
ENTRY_KERNELS = jit.entry_kernels(__name__)
