"""Compiled per-cycle helpers of the collision world: link poses to MuJoCo ``qpos``, the two
nearest distances from MuJoCo's contact list, per-pair gaps and the conservative-advancement step
of a path check, registered with :mod:`hebictl.jit` (compiled in the caller on a cold cache, like the
simulator's: interpreted, a path check's pair loops would take seconds), loaded while the world is built.

Why compiled: the jog checks distances every control cycle (budget 100 µs with a table and two
boxes). Written in numpy, the quaternion conversion and the per-pair clearance bookkeeping took
some twenty calls (~40-60 µs on this machine); as one pass each they take a few µs. No distance
is computed here: the distances are MuJoCo's.
"""

from __future__ import annotations

import math

import numpy as np

from hebictl import jit

#: MuJoCo's contact arrays arrive as strided views (layout ``A``), but as C-contiguous arrays when
#: there is no contact (an empty array is contiguous): numba then compiled a second specialization in
#: the control loop, the first time a query found nothing. Both layouts are declared (compiled once).
_GEOM_ANY, _DIST_ANY = "i4[:, :]", "f8[:]"
_GEOM_EMPTY, _DIST_EMPTY = "i4[:, ::1]", "f8[::1]"


@jit.kernel("f8[:, :, ::1], i8[::1], f8[::1]", cold="compile", cache=jit.CACHE)
def poses_to_qpos(poses, roots, out):  # pragma: no cover - compiled
    """``out`` (7 * len(roots),) = position and unit quaternion (w x y z) of ``poses[roots]``."""
    for k in range(roots.shape[0]):
        T = poses[roots[k]]
        d0, d1, d2 = T[0, 0], T[1, 1], T[2, 2]
        w = 0.5 * math.sqrt(max(0.0, 1.0 + d0 + d1 + d2))
        x = math.copysign(0.5 * math.sqrt(max(0.0, 1.0 + d0 - d1 - d2)), T[2, 1] - T[1, 2])
        y = math.copysign(0.5 * math.sqrt(max(0.0, 1.0 - d0 + d1 - d2)), T[0, 2] - T[2, 0])
        z = math.copysign(0.5 * math.sqrt(max(0.0, 1.0 - d0 - d1 + d2)), T[1, 0] - T[0, 1])
        n = math.sqrt(w * w + x * x + y * y + z * z)
        b = 7 * k
        out[b], out[b + 1], out[b + 2] = T[0, 3], T[1, 3], T[2, 3]
        out[b + 3], out[b + 4], out[b + 5], out[b + 6] = w / n, x / n, y / n, z / n


@jit.kernel(f"{_GEOM_ANY}, {_DIST_ANY}, b1[::1], f8[::1], f8", f"{_GEOM_EMPTY}, {_DIST_EMPTY}, b1[::1], f8[::1], f8",
            cold="compile", cache=jit.CACHE)
def nearest_margins(geom, dist, is_ws, clearance, self_clearance):  # pragma: no cover - compiled
    """(self, workspace) smallest distance beyond the pair's clearance, and the contact index of each (-1: none)."""
    best_self, best_ws = np.inf, np.inf
    k_self, k_ws = -1, -1
    for k in range(dist.shape[0]):
        a, b = geom[k, 0], geom[k, 1]
        if is_ws[a] or is_ws[b]:
            m = dist[k] - clearance[a] - clearance[b]
            if m < best_ws:
                best_ws, k_ws = m, k
        else:
            m = dist[k] - self_clearance
            if m < best_self:
                best_self, k_self = m, k
    return best_self, best_ws, k_self, k_ws


@jit.kernel("f8[::1], f8[::1], f8[::1], f8[::1], f8[::1], f8[::1], f8, f8", cold="compile", cache=jit.CACHE)
def approach_scale(gap_now, gap_next, far, clearance, threshold, horizon, lookahead,
                   deceleration):  # pragma: no cover - compiled
    """Speed scale (0..1) of a motion from the ``now`` pair gaps to the ``next`` ones ``lookahead``
    [s] later (per checked pair, :func:`pair_gaps`): per pair that closes in, the linear
    ``distance / threshold`` (not MoveIt Servo's exponential) and the speed that still stops within the distance left at
    ``deceleration`` [m/s²]; pairs that open up are not slowed. Distances are beyond each pair's
    clearance, and at most its ``horizon`` (a pair MuJoCo does not report now is that far)."""
    scale = 1.0
    for p in range(gap_next.shape[0]):
        if gap_next[p] >= far[p]:
            continue  # beyond every horizon at the next step
        d_next = gap_next[p] - clearance[p]
        d = min(horizon[p], gap_now[p] - clearance[p])
        if d_next >= d - 1e-6:
            continue
        servo = 1.0 if threshold[p] <= 0.0 else min(1.0, max(0.0, min(d, d_next) / threshold[p]))
        closing = (d - d_next) / lookahead
        stop = math.sqrt(2.0 * deceleration * max(d, 0.0)) / closing
        scale = min(scale, servo, stop)
    return scale


@jit.kernel(f"{_GEOM_ANY}, {_DIST_ANY}, i4[:, ::1], f8[::1], i8, i8[:, ::1], f8[::1], f8[::1], f8[::1]",
            f"{_GEOM_EMPTY}, {_DIST_EMPTY}, i4[:, ::1], f8[::1], i8, i8[:, ::1], f8[::1], f8[::1], f8[::1]",
            cold="compile", cache=jit.CACHE)
def pair_gaps(geom, dist, box_geom, box_dist, boxes, pair_id, far, clearance, out):  # pragma: no cover
    """``out[p]`` = the closest distance of checked pair ``p`` among MuJoCo's contacts (``geom``,
    ``dist``) and the first ``boxes`` box-pair distances, else ``far[p]``; returns whether any pair
    is closer than its ``clearance``."""
    out[:] = far
    for k in range(dist.shape[0]):
        p = pair_id[geom[k, 0], geom[k, 1]]
        if p >= 0 and dist[k] < out[p]:
            out[p] = dist[k]
    for k in range(boxes):
        p = pair_id[box_geom[k, 0], box_geom[k, 1]]
        if p >= 0 and box_dist[k] < out[p]:
            out[p] = box_dist[k]
    close = False
    for p in range(out.shape[0]):
        close = close or out[p] < clearance[p]
    return close


@jit.kernel("f8[::1], f8[::1], f8[::1], f8[::1], f8, f8", cold="compile", cache=jit.CACHE)
def advance_time(gaps, speed, slope, curve, min_motion, tolerance):  # pragma: no cover - compiled
    """The time [s] no pair can close its gap in (conservative advancement), the smallest over the
    pairs. A pair may move ``max(gap - tolerance, min_motion)``; its surfaces approach by at most
    ``speed * dt`` (the peak joint speeds) and by at most ``slope * dt + curve * dt²`` (the joint
    speeds now and the peak accelerations): either bound holding is enough, so the longer of the
    two times counts. +inf when no pair moves."""
    dt = np.inf
    for k in range(gaps.shape[0]):
        allowed = max(gaps[k] - tolerance, min_motion)
        linear = allowed / speed[k] if speed[k] > 0.0 else np.inf
        if curve[k] > 0.0:
            quadratic = 2.0 * allowed / (slope[k] + math.sqrt(slope[k] * slope[k] + 4.0 * curve[k] * allowed))
        elif slope[k] > 0.0:
            quadratic = allowed / slope[k]
        else:
            quadratic = np.inf
        dt = min(dt, max(linear, quadratic))
    return dt


@jit.kernel("f8[:, ::1], f8[::1], i8[:, ::1], f8[::1], i8[::1]", cold="compile", cache=jit.CACHE)
def sphere_candidates(center, radius, pairs, far, out):  # pragma: no cover - compiled
    """Write into ``out`` the indices of ``pairs`` whose bounding spheres (``center``, ``radius`` per
    geom) come closer than ``far``; return how many. A prefilter: the distance itself is MuJoCo's."""
    n = 0
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        dx = center[a, 0] - center[b, 0]
        dy = center[a, 1] - center[b, 1]
        dz = center[a, 2] - center[b, 2]
        if math.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b] < far[k]:
            out[n] = k
            n += 1
    return n


# the world calls these by name: dispatchers, not wrappers (compiled on first call or the world's preload)
jit.materialize(__name__)
