"""Compiled kinematics and dynamics kernels over a flat, array-encoded kinematic tree.

Why compiled: the controller calls gravity compensation, Jacobians and FK every millisecond
with one configuration, where numpy's per-call overhead on 3x3 matrices would dominate; and
planners call them on batches of thousands of configurations. numba gives one implementation
that is fast for both (no Python loop over bodies or over the batch).

Why packed: a single call on a 6-DoF arm does well under a microsecond of arithmetic, while numba
spends a few hundredths of a µs unboxing each array argument. So the entry kernels take a model
as one float64 array (:func:`pack`; its integer tables stored as exact floats), not the 13-16
arrays of :class:`Tables`, and unpack it into views inside the compiled code (:func:`_unpack`,
free there). The per-configuration math lives in the ``_*_one`` functions;
each query has a single-configuration entry kernel (``gravity``) and a batch one
(``gravity_batch``) that loops over it, so neither pays for the other's reshaping.

Kernels write into preallocated outputs. Spatial vectors are ordered ``[angular; linear]``
internally; Jacobians returned to users are ``[linear; angular]`` like hebi-py.

One kernel here is not over the packed tree: :func:`damped_least_squares`, the step of IK and of the
Cartesian jog (``J^T (J J^T + λ² I)^-1 w`` by Cholesky), compiled so that no LAPACK call (and no
OpenBLAS thread) runs in a control cycle.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from hebictl import jit

FIXED, REVOLUTE, PRISMATIC, BALL, FREE = 0, 1, 2, 3, 4
#: position coordinates of each joint kind (in :func:`pack`'s header: the single calls check q's length)
_NQ = {FIXED: 0, REVOLUTE: 1, PRISMATIC: 1, BALL: 4, FREE: 7}
#: 3x3 scratch slots at the end of every packed model, per body and fixed: the most a single-call
#: kernel cuts (:func:`_held_scratch`; rnea: body poses 2n + 2, per-body vectors 6n, two 3x3)
HELD_PER_BODY, HELD_FIXED = 8, 8

# numba types of the entry kernels' arguments (hebictl.jit compiles and loads these signatures)
_VEC = "f8[::1]"  # q, qd, qdd, gravity, tau
_MAT = "f8[:, ::1]"  # a batch of vectors (B, nq)
_MODEL = "f8[:, :, ::1]"  # the packed model (pack)


class Tables(NamedTuple):
    """Array encoding of a model (body i's parent always precedes it)."""

    parent: NDArray[np.int64]      # (n,) -1 = base
    kind: NDArray[np.int64]        # (n,) JointKind values
    qi: NDArray[np.int64]          # (n,) first position coordinate of the body's joint
    vi: NDArray[np.int64]          # (n,) first velocity coordinate
    place_R: NDArray[np.float64]   # (n,3,3) joint frame in parent frame
    place_p: NDArray[np.float64]   # (n,3)
    axis: NDArray[np.float64]      # (n,3) unit axis in joint frame
    scale: NDArray[np.float64]     # (n,) motion per unit coordinate
    mass: NDArray[np.float64]      # (n,)
    com: NDArray[np.float64]       # (n,3) body frame
    inertia: NDArray[np.float64]   # (n,3,3) about com, body axes
    base_R: NDArray[np.float64]    # (3,3)
    base_p: NDArray[np.float64]    # (3,)


def pack(t: Tables, f_body: NDArray[np.int64], f_R: NDArray[np.float64], f_p: NDArray[np.float64],
         armature: NDArray[np.float64] | None, nv: int) -> NDArray[np.float64]:
    """Tables ``t``, frames (body, offset R, offset p) and per-coordinate armature as the one array
    every entry kernel takes: float64 of shape (k, 3, 3), one 3x3 slot per matrix, vector (its
    first row) or few numbers, in the order

    * a header slot: ``n, m, nv`` (first row), ``has_armature, nq`` (second row);
    * per body, one slot of integers stored as floats (exact below 2**53): ``parent, kind, qi``
      (first row) and ``vi`` (second row's first);
    * ``base_R, base_p, place_R(n), place_p(n), axis(n), com(n), inertia(n), [scale, mass](n),
      armature(nv or 0), f_R(m)``, and ``f_p(m)`` with each frame's body in the second row;
    * scratch slots the single-call kernels reuse (:func:`_held_scratch`).

    Why one array of 3x3 slots: numba unboxes each array argument of a call (~0.03 µs each, a
    separate int array took one more), and :func:`_unpack` takes every table as a plain slice,
    which numba makes for free; reshaping a flat array instead cost 0.24 µs a call.
    """
    n, m = t.parent.shape[0], f_body.shape[0]
    nq = sum(_NQ[k] for k in t.kind.tolist())

    def rows(x: NDArray[np.float64], k: int) -> NDArray[np.float64]:
        slots = np.zeros((k, 3, 3))
        slots[:, 0, :] = np.reshape(x, (k, 3))
        return slots

    header = np.zeros((1, 3, 3))
    header[0, 0], header[0, 1, :2] = (n, m, nv), (0 if armature is None else 1, nq)
    ints = np.zeros((n, 3, 3))
    ints[:, 0, 0], ints[:, 0, 1], ints[:, 0, 2], ints[:, 1, 0] = t.parent, t.kind, t.qi, t.vi
    scalars = np.zeros((n, 3, 3))
    scalars[:, 0, 0], scalars[:, 0, 1] = t.scale, t.mass
    arm = np.zeros((0 if armature is None else nv, 3, 3))
    if armature is not None:
        arm[:, 0, 0] = armature
    frame_p = rows(f_p, m)
    frame_p[:, 1, 0] = f_body
    floats = np.concatenate([header, ints, np.reshape(t.base_R, (1, 3, 3)), rows(t.base_p, 1),
                             np.reshape(t.place_R, (n, 3, 3)), rows(t.place_p, n), rows(t.axis, n), rows(t.com, n),
                             np.reshape(t.inertia, (n, 3, 3)), scalars, arm, np.reshape(f_R, (m, 3, 3)), frame_p,
                             np.zeros((HELD_PER_BODY * n + HELD_FIXED, 3, 3))])
    return np.ascontiguousarray(floats, dtype=np.float64)


@jit.helper(cache=jit.CACHE, inline="always")
def _header(F):
    """(n bodies, m frames, nv, nq) of packed model F."""
    return int(F[0, 0, 0]), int(F[0, 0, 1]), int(F[0, 0, 2]), int(F[0, 1, 1])


@jit.helper(cache=jit.CACHE, inline="always")
def _unpack(F):
    """Views of the tables inside packed model F (:func:`pack`; slices only: no copy, no reshape).

    The integer tables are float views: their users convert an element with ``int()`` where it indexes.
    """
    n = int(F[0, 0, 0])
    m = int(F[0, 0, 1])
    na = int(F[0, 0, 2]) if F[0, 1, 0] != 0.0 else 0
    parent = F[1:1 + n, 0, 0]
    kind = F[1:1 + n, 0, 1]
    qi = F[1:1 + n, 0, 2]
    vi = F[1:1 + n, 1, 0]
    o = 1 + n
    base_R = F[o]
    base_p = F[o + 1, 0]
    o += 2
    place_R = F[o:o + n]
    o += n
    place_p = F[o:o + n, 0]
    o += n
    axis = F[o:o + n, 0]
    o += n
    com = F[o:o + n, 0]
    o += n
    inertia = F[o:o + n]
    o += n
    scale = F[o:o + n, 0, 0]
    mass = F[o:o + n, 0, 1]
    o += n
    armature = F[o:o + na, 0, 0]
    o += na
    f_R = F[o:o + m]
    o += m
    f_p = F[o:o + m, 0]
    f_body = F[o:o + m, 1, 0]
    return (parent, kind, qi, vi, f_body, base_R, base_p, place_R, place_p, axis, scale, mass, com, inertia,
            armature, f_R, f_p)


@jit.helper(cache=jit.CACHE, inline="always")
def _contiguous(t):
    """C-contiguous copies of a tuple of arrays: for the batch kernels, whose loop over thousands of
    configurations runs ~20% faster on contiguous tables than on the strided views of a slot array."""
    return (np.ascontiguousarray(t[0]), np.ascontiguousarray(t[1]), np.ascontiguousarray(t[2]),
            np.ascontiguousarray(t[3]), np.ascontiguousarray(t[4]), np.ascontiguousarray(t[5]),
            np.ascontiguousarray(t[6]), np.ascontiguousarray(t[7]), np.ascontiguousarray(t[8]),
            np.ascontiguousarray(t[9]), np.ascontiguousarray(t[10]), np.ascontiguousarray(t[11]),
            np.ascontiguousarray(t[12]), np.ascontiguousarray(t[13]), np.ascontiguousarray(t[14]),
            np.ascontiguousarray(t[15]), np.ascontiguousarray(t[16]))


@jit.helper(cache=jit.CACHE, inline="always")
def _quat_to_R(w, x, y, z, R):
    n = np.sqrt(w * w + x * x + y * y + z * z)
    w /= n
    x /= n
    y /= n
    z /= n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@jit.helper(cache=jit.CACHE, inline="always")
def _pose_of(bR, bp, base_R, base_p, k):
    """Body ``k``'s pose, or the base's when ``k < 0``, as 12 scalars: the rotation row by row, then
    the translation (shared by body_poses and the frames, which both compose onto a parent)."""
    if k < 0:
        return (base_R[0, 0], base_R[0, 1], base_R[0, 2], base_R[1, 0], base_R[1, 1], base_R[1, 2],
                base_R[2, 0], base_R[2, 1], base_R[2, 2], base_p[0], base_p[1], base_p[2])
    return (bR[k, 0, 0], bR[k, 0, 1], bR[k, 0, 2], bR[k, 1, 0], bR[k, 1, 1], bR[k, 1, 2],
            bR[k, 2, 0], bR[k, 2, 1], bR[k, 2, 2], bp[k, 0], bp[k, 1], bp[k, 2])


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: ~8% off every single call
def body_poses(q, parent, kind, qi, place_R, place_p, axis, scale, base_R, base_p, bR, bp, Rj, pj):
    """World pose (bR (n,3,3), bp (n,3)) of every body frame at configuration q.

    Written out in scalars (no temporaries, no array views): this is the innermost loop of every
    query. ``Rj`` (3,3) and ``pj`` (3,) are scratch for ball/free joints, passed in so batch loops
    allocate nothing.
    """
    n = parent.shape[0]
    for i in range(n):
        k = int(kind[i])
        m00 = m11 = m22 = 1.0
        m01 = m02 = m10 = m12 = m20 = m21 = 0.0
        t0 = t1 = t2 = 0.0
        if k == REVOLUTE:
            th = scale[i] * q[int(qi[i])]
            c = np.cos(th)
            s = np.sin(th)
            v = 1.0 - c
            x = axis[i, 0]
            y = axis[i, 1]
            z = axis[i, 2]
            m00 = c + x * x * v
            m01 = x * y * v - z * s
            m02 = x * z * v + y * s
            m10 = y * x * v + z * s
            m11 = c + y * y * v
            m12 = y * z * v - x * s
            m20 = z * x * v - y * s
            m21 = z * y * v + x * s
            m22 = c + z * z * v
        elif k == PRISMATIC:
            d = scale[i] * q[int(qi[i])]
            t0 = axis[i, 0] * d
            t1 = axis[i, 1] * d
            t2 = axis[i, 2] * d
        elif k in (BALL, FREE):
            o = int(qi[i])
            if k == FREE:
                t0 = q[o]
                t1 = q[o + 1]
                t2 = q[o + 2]
                o += 3
            _quat_to_R(q[o], q[o + 1], q[o + 2], q[o + 3], Rj)
            m00 = Rj[0, 0]
            m01 = Rj[0, 1]
            m02 = Rj[0, 2]
            m10 = Rj[1, 0]
            m11 = Rj[1, 1]
            m12 = Rj[1, 2]
            m20 = Rj[2, 0]
            m21 = Rj[2, 1]
            m22 = Rj[2, 2]
        p00 = place_R[i, 0, 0]
        p01 = place_R[i, 0, 1]
        p02 = place_R[i, 0, 2]
        p10 = place_R[i, 1, 0]
        p11 = place_R[i, 1, 1]
        p12 = place_R[i, 1, 2]
        p20 = place_R[i, 2, 0]
        p21 = place_R[i, 2, 1]
        p22 = place_R[i, 2, 2]
        l00 = p00 * m00 + p01 * m10 + p02 * m20
        l01 = p00 * m01 + p01 * m11 + p02 * m21
        l02 = p00 * m02 + p01 * m12 + p02 * m22
        l10 = p10 * m00 + p11 * m10 + p12 * m20
        l11 = p10 * m01 + p11 * m11 + p12 * m21
        l12 = p10 * m02 + p11 * m12 + p12 * m22
        l20 = p20 * m00 + p21 * m10 + p22 * m20
        l21 = p20 * m01 + p21 * m11 + p22 * m21
        l22 = p20 * m02 + p21 * m12 + p22 * m22
        lt0 = place_p[i, 0] + p00 * t0 + p01 * t1 + p02 * t2
        lt1 = place_p[i, 1] + p10 * t0 + p11 * t1 + p12 * t2
        lt2 = place_p[i, 2] + p20 * t0 + p21 * t1 + p22 * t2
        par = int(parent[i])
        a00, a01, a02, a10, a11, a12, a20, a21, a22, b0, b1, b2 = _pose_of(bR, bp, base_R, base_p, par)
        bR[i, 0, 0] = a00 * l00 + a01 * l10 + a02 * l20
        bR[i, 0, 1] = a00 * l01 + a01 * l11 + a02 * l21
        bR[i, 0, 2] = a00 * l02 + a01 * l12 + a02 * l22
        bR[i, 1, 0] = a10 * l00 + a11 * l10 + a12 * l20
        bR[i, 1, 1] = a10 * l01 + a11 * l11 + a12 * l21
        bR[i, 1, 2] = a10 * l02 + a11 * l12 + a12 * l22
        bR[i, 2, 0] = a20 * l00 + a21 * l10 + a22 * l20
        bR[i, 2, 1] = a20 * l01 + a21 * l11 + a22 * l21
        bR[i, 2, 2] = a20 * l02 + a21 * l12 + a22 * l22
        bp[i, 0] = b0 + a00 * lt0 + a01 * lt1 + a02 * lt2
        bp[i, 1] = b1 + a10 * lt0 + a11 * lt1 + a12 * lt2
        bp[i, 2] = b2 + a20 * lt0 + a21 * lt1 + a22 * lt2


@jit.helper(cache=jit.CACHE, inline="always")
def _frames_from_bodies(bR, bp, base_R, base_p, f_body, f_R, f_p, out):
    """out[f] = pose(body f) @ offset(f) as 4x4 homogeneous matrices (scalar code, as body_poses)."""
    m = f_body.shape[0]
    for f in range(m):
        b = int(f_body[f])
        a00, a01, a02, a10, a11, a12, a20, a21, a22, t0, t1, t2 = _pose_of(bR, bp, base_R, base_p, b)
        o00 = f_R[f, 0, 0]
        o01 = f_R[f, 0, 1]
        o02 = f_R[f, 0, 2]
        o10 = f_R[f, 1, 0]
        o11 = f_R[f, 1, 1]
        o12 = f_R[f, 1, 2]
        o20 = f_R[f, 2, 0]
        o21 = f_R[f, 2, 1]
        o22 = f_R[f, 2, 2]
        u0 = f_p[f, 0]
        u1 = f_p[f, 1]
        u2 = f_p[f, 2]
        out[f, 0, 0] = a00 * o00 + a01 * o10 + a02 * o20
        out[f, 0, 1] = a00 * o01 + a01 * o11 + a02 * o21
        out[f, 0, 2] = a00 * o02 + a01 * o12 + a02 * o22
        out[f, 0, 3] = t0 + a00 * u0 + a01 * u1 + a02 * u2
        out[f, 1, 0] = a10 * o00 + a11 * o10 + a12 * o20
        out[f, 1, 1] = a10 * o01 + a11 * o11 + a12 * o21
        out[f, 1, 2] = a10 * o02 + a11 * o12 + a12 * o22
        out[f, 1, 3] = t1 + a10 * u0 + a11 * u1 + a12 * u2
        out[f, 2, 0] = a20 * o00 + a21 * o10 + a22 * o20
        out[f, 2, 1] = a20 * o01 + a21 * o11 + a22 * o21
        out[f, 2, 2] = a20 * o02 + a21 * o12 + a22 * o22
        out[f, 2, 3] = t2 + a20 * u0 + a21 * u1 + a22 * u2
        out[f, 3, 0] = 0.0
        out[f, 3, 1] = 0.0
        out[f, 3, 2] = 0.0
        out[f, 3, 3] = 1.0


@jit.helper(cache=jit.CACHE, inline="always")
def _cut(s, n):
    """Scratch of body_poses (body rotations and positions, one joint rotation and translation)
    cut from 3x3 slots ``s`` like :func:`_unpack`, and the slots after it for the caller."""
    return (s[:n], s[n:2 * n, 0], s[2 * n], s[2 * n + 1, 0]), s[2 * n + 2:]


@jit.helper(cache=jit.CACHE, inline="always")
def _scratch(n, extra):
    """:func:`_cut` of one allocation with ``extra`` slots for the caller (the batch kernels, once
    per batch; an allocation per array cost a gravity call ~0.2 µs)."""
    return _cut(np.empty((2 * n + 2 + extra, 3, 3)), n)


@jit.helper(cache=jit.CACHE, inline="always")
def _held_scratch(F, n):
    """:func:`_cut` of the scratch slots at the end of packed model ``F`` (:data:`HELD_PER_BODY`),
    for the single-call kernels: no allocation per call (~0.04 µs of a 0.6 µs FK call).

    Only kernels that keep the GIL may use it (:func:`hebictl.jit.exclusive`): no two of them run
    at once, in any thread. The batch kernels release the GIL and allocate their own.
    """
    return _cut(jit.exclusive(F[F.shape[0] - (HELD_PER_BODY * n + HELD_FIXED):]), n)


@jit.helper(cache=jit.CACHE, inline="always")
def _pose_scratch(n):
    """Scratch of body_poses alone."""
    return _scratch(n, 0)[0]


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: called with the unpacked tables, a call took 2x as long
def _frame_poses_one(q, t, scr, out):
    """out (m, 4, 4): world pose of each frame of unpacked model ``t`` at configuration q."""
    parent, kind, qi, _, f_body, base_R, base_p, place_R, place_p, axis, scale, _, _, _, _, f_R, f_p = t
    bR, bp, Rj, pj = scr
    body_poses(q, parent, kind, qi, place_R, place_p, axis, scale, base_R, base_p, bR, bp, Rj, pj)
    _frames_from_bodies(bR, bp, base_R, base_p, f_body, f_R, f_p, out)


@jit.helper(cache=jit.CACHE, inline="always")
def _vec_fits(x, n):
    """True if vector x has n elements at unit stride (numpy's contiguity: a stride of a length 0 or 1 is unused)."""
    return x.shape[0] == n and (n <= 1 or x.strides[0] == 8)


@jit.helper(cache=jit.CACHE, inline="always")
def _fits(q, F, out, rows, cols):
    """True if q is (nq,) at unit stride and out is a C-contiguous (m, rows, cols) array of packed model F.

    Why in the kernel: the single-configuration paths check only an argument's class, dtype and
    number of dimensions in Python (what unboxing cannot) and leave its sizes and strides, which
    the unboxed array carries, to this test: a Python shape check and ``np.ascontiguousarray`` took
    a tenth of an FK call. A kernel that does not fit computes nothing and returns False.
    Contiguity as numpy defines it: the stride of a dimension of length 0 or 1 is never used.
    """
    _, m, _, nq = _header(F)
    if not _vec_fits(q, nq):
        return False
    if out.shape[0] != m or out.shape[1] != rows or out.shape[2] != cols:
        return False
    if out.shape[0] == 0 or rows == 0 or cols == 0:  # empty: any strides (a model without such frames)
        return True
    return ((cols <= 1 or out.strides[2] == 8) and (rows <= 1 or out.strides[1] == 8 * cols)
            and (out.shape[0] <= 1 or out.strides[0] == 8 * rows * cols))


# keeps the GIL (releasing it costs more than the call), which its held scratch relies on
@jit.kernel(f"{_VEC}, {_MODEL}, f8[:, :, ::1]", cache=jit.CACHE)
def frame_poses(q, F, out):
    """out (m, 4, 4): world pose of each frame of packed model F at configuration q (nq,).

    Returns False, computing nothing, if q or out do not have the model's sizes at unit strides (:func:`_fits`).
    """
    if not _fits(q, F, out, 4, 4):
        return False
    F = jit.borrowed(F)
    _frame_poses_one(q, _unpack(F), _held_scratch(F, _header(F)[0])[0], out)
    return True


@jit.kernel(f"{_MAT}, {_MODEL}, f8[:, :, :, ::1]", batch=0, cache=jit.CACHE, nogil=True)
def frame_poses_batch(Q, F, out):
    """out (B, m, 4, 4): :func:`frame_poses` for each configuration in Q (B, nq)."""
    t = _contiguous(_unpack(F))
    scr = _pose_scratch(_header(F)[0])
    Q, out = jit.borrowed(Q), jit.borrowed(out)  # rows cut per configuration: no counting (~4%)
    for k in range(Q.shape[0]):
        _frame_poses_one(Q[k], t, scr, out[k])


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: ~8% off a gravity or RNEA call (no view per call)
def _motion_columns(kind, axis, scale, bR, i, col):
    """World-frame motion subspace of body ``i``'s joint at the child body (bR[i] = its world rotation).

    col (6, nv_j) rows [angular; linear-at-child-origin]. Returns nv_j. Takes the tables and ``i``
    rather than rows: a row is an array view, and each costs two reference-count updates.
    """
    k = int(kind[i])
    if k == REVOLUTE:
        s = scale[i]
        for a in range(3):
            col[a, 0] = s * (bR[i, a, 0] * axis[i, 0] + bR[i, a, 1] * axis[i, 1] + bR[i, a, 2] * axis[i, 2])
            col[3 + a, 0] = 0.0
        return 1
    if k == PRISMATIC:
        s = scale[i]
        for a in range(3):
            col[a, 0] = 0.0
            col[3 + a, 0] = s * (bR[i, a, 0] * axis[i, 0] + bR[i, a, 1] * axis[i, 1] + bR[i, a, 2] * axis[i, 2])
        return 1
    if k == BALL:
        for c in range(3):
            for a in range(3):
                col[a, c] = bR[i, a, c]
                col[3 + a, c] = 0.0
        return 3
    if k == FREE:
        # pinocchio order: v = [linear local; angular local]
        for c in range(3):
            for a in range(3):
                col[a, c] = 0.0
                col[3 + a, c] = bR[i, a, c]
                col[a, 3 + c] = bR[i, a, c]
                col[3 + a, 3 + c] = 0.0
        return 6
    return 0


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: called with the unpacked tables, a call took 2x as long
def _jacobians_one(q, t, scr, col, fp, J):
    """J (m, 6, nv): world-frame [linear; angular] Jacobian of each frame's origin at q."""
    parent, kind, qi, vi, f_body, base_R, base_p, place_R, place_p, axis, scale, _, _, _, _, _, f_p = t
    bR, bp, Rj, pj = scr
    m = f_body.shape[0]
    body_poses(q, parent, kind, qi, place_R, place_p, axis, scale, base_R, base_p, bR, bp, Rj, pj)
    J[:] = 0.0
    for f in range(m):
        b = int(f_body[f])
        if b < 0:
            continue
        for a in range(3):
            fp[a] = bp[b, a] + bR[b, a, 0] * f_p[f, 0] + bR[b, a, 1] * f_p[f, 1] + bR[b, a, 2] * f_p[f, 2]
        j = b
        while j >= 0:
            r0 = fp[0] - bp[j, 0]
            r1 = fp[1] - bp[j, 1]
            r2 = fp[2] - bp[j, 2]
            if int(kind[j]) == REVOLUTE:  # the common case, written out: world axis times scale
                s = scale[j]
                x, y, z = axis[j, 0], axis[j, 1], axis[j, 2]
                w0 = s * (bR[j, 0, 0] * x + bR[j, 0, 1] * y + bR[j, 0, 2] * z)
                w1 = s * (bR[j, 1, 0] * x + bR[j, 1, 1] * y + bR[j, 1, 2] * z)
                w2 = s * (bR[j, 2, 0] * x + bR[j, 2, 1] * y + bR[j, 2, 2] * z)
                vc = int(vi[j])
                J[f, 0, vc] = w1 * r2 - w2 * r1
                J[f, 1, vc] = w2 * r0 - w0 * r2
                J[f, 2, vc] = w0 * r1 - w1 * r0
                J[f, 3, vc] = w0
                J[f, 4, vc] = w1
                J[f, 5, vc] = w2
                j = int(parent[j])
                continue
            nvj = _motion_columns(kind, axis, scale, bR, j, col)
            for c in range(nvj):
                w0, w1, w2 = col[0, c], col[1, c], col[2, c]
                vc = int(vi[j]) + c
                J[f, 0, vc] = col[3, c] + w1 * r2 - w2 * r1
                J[f, 1, vc] = col[4, c] + w2 * r0 - w0 * r2
                J[f, 2, vc] = col[5, c] + w0 * r1 - w1 * r0
                J[f, 3, vc] = w0
                J[f, 4, vc] = w1
                J[f, 5, vc] = w2
            j = int(parent[j])


# keeps the GIL (releasing it costs more than the call), which its held scratch relies on
@jit.kernel(f"{_VEC}, {_MODEL}, f8[:, :, ::1]", cache=jit.CACHE)
def jacobians(q, F, out):
    """out (m, 6, nv): world-frame [linear; angular] Jacobian of each frame's origin at q (nq,).

    Returns False, computing nothing, if q or out do not have the model's sizes at unit strides (:func:`_fits`).
    """
    if not _fits(q, F, out, 6, _header(F)[2]):
        return False
    F = jit.borrowed(F)
    scr, s = _held_scratch(F, _header(F)[0])
    _jacobians_one(q, _unpack(F), scr, np.empty((6, 6)), s[0, 0], out)
    return True


@jit.kernel(f"{_MAT}, {_MODEL}, f8[:, :, :, ::1]", batch=0, cache=jit.CACHE, nogil=True)
def jacobians_batch(Q, F, out):
    """out (B, m, 6, nv): :func:`jacobians` for each configuration in Q (B, nq)."""
    t = _contiguous(_unpack(F))
    scr = _pose_scratch(_header(F)[0])
    col = np.empty((6, 6))
    fp = np.empty(3)
    Q, out = jit.borrowed(Q), jit.borrowed(out)  # rows cut per configuration: no counting
    for k in range(Q.shape[0]):
        _jacobians_one(Q[k], t, scr, col, fp, out[k])


@jit.helper(cache=jit.CACHE, inline="always")
def _gravity_scratch(cut, n):
    """Scratch of _gravity_one from :func:`_cut` slots: body_poses', then subtree forces, moments
    about the world origin, a motion subspace."""
    scr, s = cut
    return scr, (s[:n, 0], s[n:2 * n, 0], np.empty((6, 6)))


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: called with the unpacked tables, a call took 2x as long
def _gravity_one(q, g, t, scr, gscr, tau):
    """tau (nv,): efforts that hold the tree still against ``g`` (world, m/s²).

    Subtree forces and moments are accumulated leaf to root in world coordinates, then
    projected on each joint's motion subspace: tau_j = S_j^T (subtree wrench at joint j).
    """
    parent, kind, qi, vi, _, base_R, base_p, place_R, place_p, axis, scale, mass, com, _, _, _, _ = t
    bR, bp, Rj, pj = scr
    F, M, col = gscr  # M: moment about the world origin
    n = parent.shape[0]
    body_poses(q, parent, kind, qi, place_R, place_p, axis, scale, base_R, base_p, bR, bp, Rj, pj)
    for i in range(n):
        c0 = bp[i, 0] + bR[i, 0, 0] * com[i, 0] + bR[i, 0, 1] * com[i, 1] + bR[i, 0, 2] * com[i, 2]
        c1 = bp[i, 1] + bR[i, 1, 0] * com[i, 0] + bR[i, 1, 1] * com[i, 1] + bR[i, 1, 2] * com[i, 2]
        c2 = bp[i, 2] + bR[i, 2, 0] * com[i, 0] + bR[i, 2, 1] * com[i, 1] + bR[i, 2, 2] * com[i, 2]
        f0 = -mass[i] * g[0]
        f1 = -mass[i] * g[1]
        f2 = -mass[i] * g[2]
        F[i, 0] = f0
        F[i, 1] = f1
        F[i, 2] = f2
        M[i, 0] = c1 * f2 - c2 * f1
        M[i, 1] = c2 * f0 - c0 * f2
        M[i, 2] = c0 * f1 - c1 * f0
    for i in range(n - 1, -1, -1):
        par = int(parent[i])
        if par >= 0:
            for a in range(3):
                F[par, a] += F[i, a]
                M[par, a] += M[i, a]
    for i in range(n):
        nvj = _motion_columns(kind, axis, scale, bR, i, col)
        if nvj == 0:
            continue
        # moment about the joint's child origin
        m0 = M[i, 0] - (bp[i, 1] * F[i, 2] - bp[i, 2] * F[i, 1])
        m1 = M[i, 1] - (bp[i, 2] * F[i, 0] - bp[i, 0] * F[i, 2])
        m2 = M[i, 2] - (bp[i, 0] * F[i, 1] - bp[i, 1] * F[i, 0])
        for c in range(nvj):
            tau[int(vi[i]) + c] = (col[0, c] * m0 + col[1, c] * m1 + col[2, c] * m2
                              + col[3, c] * F[i, 0] + col[4, c] * F[i, 1] + col[5, c] * F[i, 2])


# keeps the GIL (releasing it costs more than the call), which its held scratch relies on
@jit.kernel(f"{_VEC}, {_VEC}, {_MODEL}, {_VEC}", cache=jit.CACHE)
def gravity(q, g, F, out):
    """out (nv,): efforts that hold packed model F still at q (nq,) against g (world, m/s²).

    Returns False, computing nothing, unless q, g and out have their sizes at unit strides (:func:`_vec_fits`).
    """
    n, _, nv, nq = _header(F)
    if not (_vec_fits(q, nq) and _vec_fits(g, 3) and _vec_fits(out, nv)):
        return False
    F = jit.borrowed(F)
    scr, gscr = _gravity_scratch(_held_scratch(F, n), n)
    _gravity_one(q, g, _unpack(F), scr, gscr, out)
    return True


@jit.kernel(f"{_MAT}, {_VEC}, {_MODEL}, {_MAT}", batch=0, cache=jit.CACHE, nogil=True)
def gravity_batch(Q, g, F, out):
    """out (B, nv): :func:`gravity` for each configuration in Q (B, nq)."""
    t = _contiguous(_unpack(F))
    n = _header(F)[0]
    scr, gscr = _gravity_scratch(_scratch(n, 2 * n), n)
    Q, out = jit.borrowed(Q), jit.borrowed(out)  # rows cut per configuration: no counting
    for k in range(Q.shape[0]):
        _gravity_one(Q[k], g, t, scr, gscr, out[k])


@jit.helper(cache=jit.CACHE, inline="always")
def _rnea_scratch(cut, n):
    """Scratch of _rnea_one from :func:`_cut` slots: body_poses', then per-body w, v, dw, dv,
    force, moment; a motion subspace; two 3x3."""
    scr, s = cut
    return scr, (s[:n, 0], s[n:2 * n, 0], s[2 * n:3 * n, 0], s[3 * n:4 * n, 0], s[4 * n:5 * n, 0], s[5 * n:6 * n, 0],
                 np.empty((6, 6)), s[6 * n], s[6 * n + 1])


@jit.helper(cache=jit.CACHE, inline="always")  # inlined: called with the unpacked tables, a call took 2x as long
def _rnea_one(q, qd, qdd, g, t, scr, rscr, tau):
    """tau (nv,): inverse dynamics tau = M(q) qdd + C(q, qd) qd + g(q) (recursive Newton-Euler).

    Computed in world coordinates about each body's origin: with w the body's angular
    velocity and the joint's world motion subspace S (angular s_w, linear s_v at the child
    origin), w_i = w_p + S_w qd, v_i = v_p + w_p x r + S_v qd, and the derivatives pick up the
    w_p x (S qd) terms that a moving parent frame adds. Gravity enters as the base
    accelerating at -g. Armature (reflected rotor inertia) adds ``armature * qdd``.
    """
    parent, kind, qi, vi, _, base_R, base_p, place_R, place_p, axis, scale, mass, com, inertia, armature, _, _ = t
    bR, bp, Rj, pj = scr
    w, v, dw, dv, F, Nm, col, Iw, tmp = rscr  # Nm: moment about the body origin
    n = parent.shape[0]
    body_poses(q, parent, kind, qi, place_R, place_p, axis, scale, base_R, base_p, bR, bp, Rj, pj)
    for i in range(n):
        par = int(parent[i])
        if par < 0:
            wp0 = wp1 = wp2 = 0.0
            vp0 = vp1 = vp2 = 0.0
            dwp0 = dwp1 = dwp2 = 0.0
            dvp0 = -g[0]
            dvp1 = -g[1]
            dvp2 = -g[2]
            r0 = r1 = r2 = 0.0
        else:
            wp0, wp1, wp2 = w[par, 0], w[par, 1], w[par, 2]
            vp0, vp1, vp2 = v[par, 0], v[par, 1], v[par, 2]
            dwp0, dwp1, dwp2 = dw[par, 0], dw[par, 1], dw[par, 2]
            dvp0, dvp1, dvp2 = dv[par, 0], dv[par, 1], dv[par, 2]
            r0 = bp[i, 0] - bp[par, 0]
            r1 = bp[i, 1] - bp[par, 1]
            r2 = bp[i, 2] - bp[par, 2]
        # rigid transport of parent motion to the child origin
        v0 = vp0 + wp1 * r2 - wp2 * r1
        v1 = vp1 + wp2 * r0 - wp0 * r2
        v2 = vp2 + wp0 * r1 - wp1 * r0
        # d/dt(w x r) = dw x r + w x (w x r)
        wr0 = wp1 * r2 - wp2 * r1
        wr1 = wp2 * r0 - wp0 * r2
        wr2 = wp0 * r1 - wp1 * r0
        a0 = dvp0 + dwp1 * r2 - dwp2 * r1 + wp1 * wr2 - wp2 * wr1
        a1 = dvp1 + dwp2 * r0 - dwp0 * r2 + wp2 * wr0 - wp0 * wr2
        a2 = dvp2 + dwp0 * r1 - dwp1 * r0 + wp0 * wr1 - wp1 * wr0
        ww0, ww1, ww2 = wp0, wp1, wp2
        aw0, aw1, aw2 = dwp0, dwp1, dwp2
        nvj = _motion_columns(kind, axis, scale, bR, i, col)
        # relative velocity/acceleration of the joint (world)
        sw0 = sw1 = sw2 = sv0 = sv1 = sv2 = 0.0
        tw0 = tw1 = tw2 = tv0 = tv1 = tv2 = 0.0
        for c in range(nvj):
            x = qd[int(vi[i]) + c]
            y = qdd[int(vi[i]) + c]
            sw0 += col[0, c] * x
            sw1 += col[1, c] * x
            sw2 += col[2, c] * x
            sv0 += col[3, c] * x
            sv1 += col[4, c] * x
            sv2 += col[5, c] * x
            tw0 += col[0, c] * y
            tw1 += col[1, c] * y
            tw2 += col[2, c] * y
            tv0 += col[3, c] * y
            tv1 += col[4, c] * y
            tv2 += col[5, c] * y
        if int(kind[i]) == BALL or int(kind[i]) == FREE:
            # local (child-frame) coordinates: the subspace rotates with the child,
            # d/dt(R s) = (w_child) x (R s) = (w_p + sw) x (R s)
            cw0 = ww0 + sw0
            cw1 = ww1 + sw1
            cw2 = ww2 + sw2
        else:
            # 1-DoF axes are fixed in the parent's joint frame and rotate with the parent
            cw0, cw1, cw2 = ww0, ww1, ww2
        w[i, 0] = ww0 + sw0
        w[i, 1] = ww1 + sw1
        w[i, 2] = ww2 + sw2
        v[i, 0] = v0 + sv0
        v[i, 1] = v1 + sv1
        v[i, 2] = v2 + sv2
        dw[i, 0] = aw0 + tw0 + (cw1 * sw2 - cw2 * sw1)
        dw[i, 1] = aw1 + tw1 + (cw2 * sw0 - cw0 * sw2)
        dw[i, 2] = aw2 + tw2 + (cw0 * sw1 - cw1 * sw0)
        # linear: d/dt(sv) plus the parent's rotation carrying the relative velocity
        dv[i, 0] = a0 + tv0 + (cw1 * sv2 - cw2 * sv1) + (wp1 * sv2 - wp2 * sv1)
        dv[i, 1] = a1 + tv1 + (cw2 * sv0 - cw0 * sv2) + (wp2 * sv0 - wp0 * sv2)
        dv[i, 2] = a2 + tv2 + (cw0 * sv1 - cw1 * sv0) + (wp0 * sv1 - wp1 * sv0)
    for i in range(n):
        m = mass[i]
        c0 = bR[i, 0, 0] * com[i, 0] + bR[i, 0, 1] * com[i, 1] + bR[i, 0, 2] * com[i, 2]
        c1 = bR[i, 1, 0] * com[i, 0] + bR[i, 1, 1] * com[i, 1] + bR[i, 1, 2] * com[i, 2]
        c2 = bR[i, 2, 0] * com[i, 0] + bR[i, 2, 1] * com[i, 1] + bR[i, 2, 2] * com[i, 2]
        W0, W1, W2 = w[i, 0], w[i, 1], w[i, 2]
        D0, D1, D2 = dw[i, 0], dw[i, 1], dw[i, 2]
        # acceleration of the com: a + dw x c + w x (w x c)
        wc0 = W1 * c2 - W2 * c1
        wc1 = W2 * c0 - W0 * c2
        wc2 = W0 * c1 - W1 * c0
        ac0 = dv[i, 0] + D1 * c2 - D2 * c1 + W1 * wc2 - W2 * wc1
        ac1 = dv[i, 1] + D2 * c0 - D0 * c2 + W2 * wc0 - W0 * wc2
        ac2 = dv[i, 2] + D0 * c1 - D1 * c0 + W0 * wc1 - W1 * wc0
        f0 = m * ac0
        f1 = m * ac1
        f2 = m * ac2
        # world inertia about com: R I R^T
        for a in range(3):
            for b in range(3):
                tmp[a, b] = (bR[i, a, 0] * inertia[i, 0, b] + bR[i, a, 1] * inertia[i, 1, b]
                             + bR[i, a, 2] * inertia[i, 2, b])
        for a in range(3):
            for b in range(3):
                Iw[a, b] = tmp[a, 0] * bR[i, b, 0] + tmp[a, 1] * bR[i, b, 1] + tmp[a, 2] * bR[i, b, 2]
        h0 = Iw[0, 0] * W0 + Iw[0, 1] * W1 + Iw[0, 2] * W2
        h1 = Iw[1, 0] * W0 + Iw[1, 1] * W1 + Iw[1, 2] * W2
        h2 = Iw[2, 0] * W0 + Iw[2, 1] * W1 + Iw[2, 2] * W2
        n0 = Iw[0, 0] * D0 + Iw[0, 1] * D1 + Iw[0, 2] * D2 + (W1 * h2 - W2 * h1)
        n1 = Iw[1, 0] * D0 + Iw[1, 1] * D1 + Iw[1, 2] * D2 + (W2 * h0 - W0 * h2)
        n2 = Iw[2, 0] * D0 + Iw[2, 1] * D1 + Iw[2, 2] * D2 + (W0 * h1 - W1 * h0)
        F[i, 0] = f0
        F[i, 1] = f1
        F[i, 2] = f2
        # moment about the body origin
        Nm[i, 0] = n0 + c1 * f2 - c2 * f1
        Nm[i, 1] = n1 + c2 * f0 - c0 * f2
        Nm[i, 2] = n2 + c0 * f1 - c1 * f0
    for i in range(n - 1, -1, -1):
        nvj = _motion_columns(kind, axis, scale, bR, i, col)
        for c in range(nvj):
            tau[int(vi[i]) + c] = (col[0, c] * Nm[i, 0] + col[1, c] * Nm[i, 1] + col[2, c] * Nm[i, 2]
                              + col[3, c] * F[i, 0] + col[4, c] * F[i, 1] + col[5, c] * F[i, 2])
        par = int(parent[i])
        if par >= 0:
            r0 = bp[i, 0] - bp[par, 0]
            r1 = bp[i, 1] - bp[par, 1]
            r2 = bp[i, 2] - bp[par, 2]
            F[par, 0] += F[i, 0]
            F[par, 1] += F[i, 1]
            F[par, 2] += F[i, 2]
            Nm[par, 0] += Nm[i, 0] + r1 * F[i, 2] - r2 * F[i, 1]
            Nm[par, 1] += Nm[i, 1] + r2 * F[i, 0] - r0 * F[i, 2]
            Nm[par, 2] += Nm[i, 2] + r0 * F[i, 1] - r1 * F[i, 0]
    for c in range(armature.shape[0]):  # empty when no joint has armature
        tau[c] += armature[c] * qdd[c]


# keeps the GIL: releasing it costs more than the call
@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, {_VEC}, {_MODEL}, {_VEC}", cache=jit.CACHE)
def rnea(q, qd, qdd, g, F, out):
    """out (nv,): inverse dynamics of packed model F at one configuration (q, qd, qdd) under g.

    Returns False, computing nothing, unless every vector has its size at unit stride (:func:`_vec_fits`).
    """
    n, _, nv, nq = _header(F)
    if not (_vec_fits(q, nq) and _vec_fits(qd, nv) and _vec_fits(qdd, nv) and _vec_fits(g, 3)
            and _vec_fits(out, nv)):
        return False
    # allocated, not held: on the packed model's slots (one base pointer with the tables it reads)
    # a call took ~0.05 µs longer than with the allocation (measured), unlike the other three kernels
    scr, rscr = _rnea_scratch(_scratch(n, 6 * n + 2), n)
    _rnea_one(q, qd, qdd, g, _unpack(jit.borrowed(F)), scr, rscr, out)
    return True


@jit.kernel(f"{_MAT}, {_MAT}, {_MAT}, {_VEC}, {_MODEL}, {_MAT}", batch=0, cache=jit.CACHE, nogil=True)
def rnea_batch(Q, V, A, g, F, out):
    """out (B, nv): :func:`rnea` for each configuration in Q, V, A (B, nq), (B, nv), (B, nv)."""
    t = _contiguous(_unpack(F))
    n = _header(F)[0]
    scr, rscr = _rnea_scratch(_scratch(n, 6 * n + 2), n)
    Q, V, A, out = jit.borrowed(Q), jit.borrowed(V), jit.borrowed(A), jit.borrowed(out)  # rows: no counting
    for k in range(Q.shape[0]):
        _rnea_one(Q[k], V[k], A[k], g, t, scr, rscr, out[k])


@jit.kernel("f8[:, ::1], f8[::1], f8, f8[::1]", cache=jit.CACHE)
def damped_least_squares(J, w, lam2, out):  # pragma: no cover - compiled
    """out (n,) = ``J^T (J J^T + lam2 I)^-1 w`` for J (m, n), w (m,), by a Cholesky factorization.

    Why here and not ``np.linalg.solve``: the jog solves this every control cycle and IK every
    iteration, on a 6x6 matrix. Through LAPACK that is a call into OpenBLAS, whose threads made a
    6x6 solve take 92 µs instead of 7 on a loaded 2-core machine (655 µs inside a jog cycle, measured
    2026-11-27): control-loop jitter out of a library's thread pool. Compiled, it takes no thread.
    Returns False, computing nothing, if the sizes do not fit or the matrix is not positive definite
    (lam2 = 0 at a singularity, or a non-finite J): the caller then decides (numpy's solve)."""
    m, n = J.shape
    if w.shape[0] != m or out.shape[0] != n:
        return False
    L = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for k in range(n):
                s += J[i, k] * J[j, k]
            if i == j:
                s += lam2
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    y = np.empty(m)
    for i in range(m):  # L y = w
        s = w[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    for i in range(m - 1, -1, -1):  # L^T x = y
        s = y[i]
        for k in range(i + 1, m):
            s -= L[k, i] * y[k]
        y[i] = s / L[i, i]
    for k in range(n):  # out = J^T x
        s = 0.0
        for i in range(m):
            s += J[i, k] * y[i]
        out[k] = s
    return True


#: the entry kernels, in declaration order (what hebictl.jit compiles and loads)
ENTRY_KERNELS = jit.entry_kernels(__name__)
