"""RobotModel: the public face of a loaded robot (kinematics, Jacobians, dynamics).

Every array function takes ``q`` of shape ``(nq,)`` or a batch ``(B, nq)`` and returns the
result with a leading ``B`` axis for a batch; the batch runs inside the compiled kernels, never
in a Python loop.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl import jit
from hebictl._typing import FloatArray
from hebictl.errors import ModelError
from hebictl.model import kernels
from hebictl.model.fusion import FusedTree, fuse
from hebictl.model.tree import Body, Frame, JointKind

#: Frame-type names accepted by :meth:`RobotModel.forward_kinematics`, with hebi-py's spellings.
FRAME_ALIASES = {
    "output": "output", "com": "com", "centerofmass": "com", "input": "input",
    "end_effector": "end_effector", "endeffector": "end_effector", "ee": "end_effector",
    "link": "link", "mesh": "mesh", "site": "site",
}
#: Frame kinds every model answers, with zero frames when it has none (hebi-py returns empty too).
STANDARD_KINDS = ("output", "com", "input", "end_effector", "link")


class _FrameSet:
    """Kernel tables for the frames of one kind, re-expressed on the fused (moving) bodies.

    ``packed`` is the model packed with these frames (:func:`hebictl.model.kernels.pack`), the
    array the FK and Jacobian kernels take.
    """

    __slots__ = ("R", "body", "frames", "jac_shape", "kind", "p", "packed", "pose_shape")

    def __init__(self, kind: str, frames: Sequence[Frame], fused: FusedTree, armature: FloatArray | None,
                 nv: int) -> None:
        self.kind = kind
        self.frames = tuple(frames)
        mapped = [fused.remap(f) for f in frames]
        self.body = np.array([b for b, _ in mapped], dtype=np.int64).reshape(-1)
        self.R = np.ascontiguousarray(np.array([T[:3, :3] for _, T in mapped]).reshape(-1, 3, 3))
        self.p = np.ascontiguousarray(np.array([T[:3, 3] for _, T in mapped]).reshape(-1, 3))
        self.packed = kernels.pack(fused.tables, self.body, self.R, self.p, armature, nv)
        self.pose_shape = (len(self.frames), 4, 4)
        self.jac_shape = (len(self.frames), 6, nv)


_VEC3 = (3,)
# the single-configuration paths run every control cycle: module-level names and a positional
# dtype save a few attribute and keyword lookups per call (~0.1 µs of a ~1.5 µs call)
_contiguous = np.ascontiguousarray
_empty = np.empty
_F64 = np.float64
_F64_DTYPE = np.dtype(np.float64)
_ndarray = np.ndarray
#: the kernels' compiled entry points without numba's type dispatch (a fifth of a single call): only
#: for arguments validated here as exactly the declared types (C-contiguous float64 inputs of the
#: model's sizes, outputs allocated or checked here); the unchecked ``*_into`` paths use ``kernels``
_direct = jit.direct(kernels.__name__)

#: batches at least this large are split across threads (the kernels release the GIL)
PARALLEL_MIN_BATCH = 2048
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="hebictl-kernels")
    return _POOL


def _run(kernel: Callable[..., None], batched: Sequence[FloatArray], args: Sequence[Any], out: FloatArray) -> None:
    """kernel(*batched, *args, out), split over threads along the batch axis when it is large.

    ``batched`` are the per-configuration inputs (sliced with ``out``); ``args`` are shared.
    """
    B = out.shape[0]
    if B < PARALLEL_MIN_BATCH:
        kernel(*batched, *args, out)
        return
    workers = min(os.cpu_count() or 1, B // (PARALLEL_MIN_BATCH // 2))
    if workers < 2:
        kernel(*batched, *args, out)
        return
    edges = np.linspace(0, B, workers + 1).astype(int)
    futures = [_pool().submit(kernel, *(x[a:b] for x in batched), *args, out[a:b])
               for a, b in itertools.pairwise(edges)]
    for f in futures:
        f.result()


class RobotModel:
    """A kinematic tree with inertias and named frames, built by :class:`~hebictl.model.builder.ModelBuilder`."""

    def __init__(self, *, name: str, bodies: tuple[Body, ...], frames: tuple[Frame, ...],
                 base: FloatArray, gravity: FloatArray, source: str | None, format: str,
                 metadata: Mapping[str, Any]) -> None:
        self.name = name
        self.bodies = bodies
        self.frames = frames
        self.base = base
        self.gravity = gravity
        self.source = source
        self.format = format
        self.metadata = dict(metadata)
        self.nq = sum(b.joint.nq for b in bodies)
        self.nv = sum(b.joint.nv for b in bodies)
        self._fused = fuse(bodies, base)
        armature = [b.joint.armature for b in bodies for _ in range(b.joint.nv)]
        #: reflected rotor inertia per velocity coordinate, or None when every joint has none
        self._armature: FloatArray | None = np.array(armature) if any(armature) else None
        self._t = self._fused.tables
        kinds: dict[str, list[Frame]] = {}
        for f in frames:
            kinds.setdefault(f.kind, []).append(f)
        kinds["link"] = [Frame(kind="link", body=i, offset=np.eye(4), name=b.name)
                         for i, b in enumerate(bodies)]
        for kind in STANDARD_KINDS:
            kinds.setdefault(kind, [])
        self._frame_sets = {k: _FrameSet(k, v, self._fused, self._armature, self.nv) for k, v in kinds.items()}
        # the model as the dynamics kernels take it, packed once: they run every control cycle, and
        # one array argument unboxes in a fraction of the time of the thirteen tables
        self._packed = kernels.pack(self._t, np.zeros(0, dtype=np.int64), np.zeros((0, 3, 3)), np.zeros((0, 3)),
                                    self._armature, self.nv)
        self._q_shape = (self.nq,)
        self._v_shape = (self.nv,)

    # ------------------------------------------------------------------ structure
    @property
    def dof(self) -> int:
        """Degrees of freedom (number of velocity coordinates)."""
        return self.nv

    @cached_property
    def joint_bodies(self) -> tuple[int, ...]:
        """Indices of the bodies whose joint moves, in coordinate order."""
        return tuple(i for i, b in enumerate(self.bodies) if b.joint.kind is not JointKind.FIXED)

    @cached_property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(self.bodies[i].joint.name for i in self.joint_bodies)

    @cached_property
    def q_names(self) -> tuple[str, ...]:
        """One name per position coordinate (1-DoF joints carry the joint's name)."""
        return tuple(n for i in self.joint_bodies
                     for n in _names(self.bodies[i].joint.name, self.bodies[i].joint.kind, "q"))

    @cached_property
    def v_names(self) -> tuple[str, ...]:
        """One name per velocity coordinate; efforts are returned in this order."""
        return tuple(n for i in self.joint_bodies
                     for n in _names(self.bodies[i].joint.name, self.bodies[i].joint.kind, "v"))

    def coordinate_index(self, body: int) -> tuple[int, int]:
        """(first position coordinate, first velocity coordinate) of body ``body``'s joint."""
        return self._fused.q_index[body], self._fused.v_index[body]

    @cached_property
    def link_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bodies)

    def frame_count(self, frame: str = "output") -> int:
        return len(self._frame_set(frame).frames)

    def static_frame_pose(self, frame: str, index: int) -> FloatArray | None:
        """World pose of frame ``index`` of kind ``frame`` if no joint moves it, else None."""
        fs = self._frame_set(frame)
        if fs.body[index] >= 0:
            return None
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = fs.R[index], fs.p[index]
        return self.base @ T

    def frame_names(self, frame: str = "output") -> tuple[str | None, ...]:
        return tuple(f.name for f in self._frame_set(frame).frames)

    @cached_property
    def masses(self) -> FloatArray:
        """Mass [kg] of each body that has a "com" frame, in frame order (hebi-py's order for HRDF)."""
        fs = self._frame_sets.get("com")
        if fs is None or not fs.frames:
            return np.array([b.inertia.mass for b in self.bodies])
        return np.array([self.bodies[f.body].inertia.mass if f.body >= 0 else 0.0 for f in fs.frames])

    @cached_property
    def total_mass(self) -> float:
        return float(sum(b.inertia.mass for b in self.bodies))

    @cached_property
    def position_limits(self) -> tuple[FloatArray, FloatArray]:
        """(lower, upper) per 1-DoF joint coordinate [rad or m]; ±inf for unlimited/multi-DoF."""
        lo, hi = [], []
        for i in self.joint_bodies:
            j = self.bodies[i].joint
            if j.nq == 1:
                lo.append(j.lower)
                hi.append(j.upper)
            else:
                lo.extend([-math.inf] * j.nq)
                hi.extend([math.inf] * j.nq)
        return np.array(lo), np.array(hi)

    @cached_property
    def max_speeds(self) -> FloatArray:
        return np.array([v for i in self.joint_bodies for v in [self.bodies[i].joint.max_velocity]
                         * self.bodies[i].joint.nv])

    @cached_property
    def max_efforts(self) -> FloatArray:
        return np.array([v for i in self.joint_bodies for v in [self.bodies[i].joint.max_effort]
                         * self.bodies[i].joint.nv])

    def neutral_configuration(self) -> FloatArray:
        """Zeros for 1-DoF joints, identity quaternions for ball/free joints."""
        q = np.zeros(self.nq)
        for i in self.joint_bodies:
            b = self.bodies[i]
            k = b.joint.kind
            s = self._fused.q_index[i]
            if k is JointKind.BALL:
                q[s] = 1.0
            elif k is JointKind.FREE:
                q[s:s + 3] = b.metadata.get("default_position", (0.0, 0.0, 0.0))
                q[s + 3:s + 7] = b.metadata.get("default_quaternion", (1.0, 0.0, 0.0, 0.0))
        return q

    # ------------------------------------------------------------------ queries
    def _frame_set(self, frame: str) -> _FrameSet:
        """Frames of one kind: a known alias (hebi-py's spellings included) or any kind the model has."""
        if frame.__class__ is str:  # the common case first: an exact kind name (every single call asks)
            fs = self._frame_sets.get(frame)
            if fs is not None:
                return fs
        if not isinstance(frame, str):
            raise ModelError(f"frame type must be a string, got {frame!r}")
        fs = self._frame_sets.get(frame)
        if fs is None:
            key = FRAME_ALIASES.get(frame.replace("-", "_").lower()) or FRAME_ALIASES.get(
                frame.replace("-", "").replace("_", "").lower())
            fs = self._frame_sets.get(key) if key else None
        if fs is None:
            raise ModelError(f"unknown frame type {frame!r}; this model has {sorted(self._frame_sets)}")
        return fs

    def _batch(self, x: ArrayLike, width: int, what: str) -> tuple[FloatArray, bool]:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 1 and arr.shape[0] == width:
            return arr.reshape(1, width), False
        if arr.ndim == 2 and arr.shape[1] == width:
            return np.ascontiguousarray(arr), True
        if arr.ndim == 0 and width == 1:
            return arr.reshape(1, 1), False
        raise ModelError(f"{what} must have shape ({width},) or (B, {width}); got {arr.shape}")

    @property
    def gravity(self) -> FloatArray:
        """World gravity [m/s²] the dynamics use when a call names none (a C-contiguous float64 (3,))."""
        return self._g

    @gravity.setter
    def gravity(self, value: ArrayLike) -> None:
        self._g = np.array(self._gravity(value), dtype=np.float64)  # own copy: the fast paths pass it unchecked

    def _gravity(self, gravity: ArrayLike | None) -> FloatArray:
        if gravity is None:
            return self.gravity
        g = _contiguous(gravity, _F64)
        if g.shape == _VEC3:  # the common case, checked first: this runs on every single call
            return g
        g = g.reshape(-1)
        if g.shape != _VEC3:
            raise ModelError(f"gravity must be 3 numbers [m/s²], got {gravity!r}")
        return g

    def forward_kinematics(self, q: ArrayLike, frame: str = "output", *, out: FloatArray | None = None) -> FloatArray:
        """World 4x4 poses of every frame of type ``frame``: (n, 4, 4), or (B, n, 4, 4).

        ``out``: an array of the result's shape to fill instead of allocating one (large batches
        spend much of their time faulting in fresh pages otherwise).
        """
        try:  # an exact kind (every control-loop call): no method call
            fs = self._frame_sets[frame]
        except (KeyError, TypeError):
            fs = self._frame_set(frame)
        if q.__class__ is _ndarray and q.dtype is _F64_DTYPE and q.ndim == 1:
            # one configuration as a float64 vector (the control loop's case): the kernel checks the
            # sizes and strides of q and out itself and computes nothing when they do not fit; what
            # it cannot see (class, dtype, dimensions, a read-only out) is checked here
            if out is None:
                buf = _empty(fs.pose_shape)
                if _direct.frame_poses(q, fs.packed, buf):
                    return buf
            elif (out.__class__ is _ndarray and out.dtype is _F64_DTYPE and out.ndim == 3 and out.flags.writeable
                  and _direct.frame_poses(q, fs.packed, out)):
                return out
        x = _contiguous(q, _F64)
        if x.shape == self._q_shape:  # one configuration in another form (a list, a strided view ...)
            buf = _empty(fs.pose_shape) if out is None else self._output(out, (1, *fs.pose_shape), False)[0]
            if not _direct.frame_poses(x, fs.packed, buf):  # C-contiguous, checked: cannot happen
                raise _declined("frame_poses", x, buf)
            return buf
        Q, batched = self._batch(x, self.nq, "q")
        buf = self._output(out, (Q.shape[0], *fs.pose_shape), batched)
        _run(kernels.frame_poses_batch, (Q,), (fs.packed,), buf)
        return buf if batched else buf[0]

    @staticmethod
    def _output(out: FloatArray | None, shape: tuple[int, ...], batched: bool) -> FloatArray:
        """A C-contiguous float64 buffer of ``shape``: ``out`` (checked) or a new one."""
        if out is None:
            return np.empty(shape)
        want = shape if batched else shape[1:]
        if (not isinstance(out, np.ndarray) or out.shape != want or out.dtype != np.float64
                or not out.flags.c_contiguous or not out.flags.writeable):
            raise ModelError(f"out must be a writeable C-contiguous float64 array of shape {want}, "
                             f"got {getattr(out, 'shape', out)!r} {getattr(out, 'dtype', '')}")
        return out if batched else out.reshape(shape)

    def link_poses(self, q: ArrayLike) -> FloatArray:
        """World pose of every body (link) frame: (n_bodies, 4, 4) or batched."""
        return self.forward_kinematics(q, "link")

    def end_effector(self, q: ArrayLike, index: int = 0) -> FloatArray:
        """World pose of end effector ``index``: (4, 4) or (B, 4, 4)."""
        poses = self.forward_kinematics(q, "end_effector")
        return poses[..., index, :, :]

    def jacobians(self, q: ArrayLike, frame: str = "com", *, out: FloatArray | None = None) -> FloatArray:
        """World-frame Jacobians [linear; angular] of each frame's origin: (n, 6, nv) or batched.

        ``out``: optional buffer of the result's shape, as for :meth:`forward_kinematics`.
        """
        try:
            fs = self._frame_sets[frame]
        except (KeyError, TypeError):
            fs = self._frame_set(frame)
        if q.__class__ is _ndarray and q.dtype is _F64_DTYPE and q.ndim == 1:  # as forward_kinematics
            if out is None:
                buf = _empty(fs.jac_shape)
                if _direct.jacobians(q, fs.packed, buf):
                    return buf
            elif (out.__class__ is _ndarray and out.dtype is _F64_DTYPE and out.ndim == 3 and out.flags.writeable
                  and _direct.jacobians(q, fs.packed, out)):
                return out
        x = _contiguous(q, _F64)
        if x.shape == self._q_shape:
            buf = _empty(fs.jac_shape) if out is None else self._output(out, (1, *fs.jac_shape), False)[0]
            if not _direct.jacobians(x, fs.packed, buf):
                raise _declined("jacobians", x, buf)
            return buf
        Q, batched = self._batch(x, self.nq, "q")
        buf = self._output(out, (Q.shape[0], *fs.jac_shape), batched)
        _run(kernels.jacobians_batch, (Q,), (fs.packed,), buf)
        return buf if batched else buf[0]

    def jacobian_end_effector(self, q: ArrayLike, index: int = 0) -> FloatArray:
        """Jacobian of end effector ``index``: (6, nv) or (B, 6, nv)."""
        if q.__class__ is _ndarray and q.dtype is _F64_DTYPE and q.ndim == 1:  # a control-loop call
            fs = self._frame_sets["end_effector"]
            J = _empty(fs.jac_shape)
            if _direct.jacobians(q, fs.packed, J):  # the kernel checks q's length and stride
                return J[index]
        return self.jacobians(q, "end_effector")[..., index, :, :]

    def gravity_compensation(self, q: ArrayLike, gravity: ArrayLike | None = None) -> FloatArray:
        """Efforts [N·m or N] that hold the robot still at ``q`` against ``gravity`` [m/s², world].

        Same sign convention as hebi-py's ``get_grav_comp_efforts``: ``-sum J_com^T m g``.
        """
        g = self._g if gravity is None else gravity
        if (q.__class__ is _ndarray and q.dtype is _F64_DTYPE and q.ndim == 1 and g.__class__ is _ndarray
                and g.dtype is _F64_DTYPE and g.ndim == 1):  # as forward_kinematics: the kernel checks sizes
            tau = _empty(self.nv)
            if _direct.gravity(q, g, self._packed, tau):
                return tau
        g = self._gravity(g)
        x = _contiguous(q, _F64)
        if x.shape == self._q_shape:  # one configuration in another form
            tau = _empty(self.nv)
            if not _direct.gravity(x, g, self._packed, tau):
                raise _declined("gravity", x, tau)
            return tau
        Q, batched = self._batch(x, self.nq, "q")
        out = np.empty((Q.shape[0], self.nv))
        _run(kernels.gravity_batch, (Q,), (g, self._packed), out)
        return out if batched else out[0]

    def inverse_dynamics(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike,
                         gravity: ArrayLike | None = None) -> FloatArray:
        """Full rigid-body inverse dynamics (RNEA, rotational inertia included) [N·m or N].

        ``qd``/``qdd`` are velocity coordinates (local angular/linear velocities for ball and
        free joints, as in pinocchio).
        """
        g = self._g if gravity is None else gravity
        if (q.__class__ is _ndarray and q.dtype is _F64_DTYPE and q.ndim == 1 and qd.__class__ is _ndarray
                and qd.dtype is _F64_DTYPE and qd.ndim == 1 and qdd.__class__ is _ndarray and qdd.dtype is _F64_DTYPE
                and qdd.ndim == 1 and g.__class__ is _ndarray and g.dtype is _F64_DTYPE and g.ndim == 1):
            tau = _empty(self.nv)  # as forward_kinematics: the kernel checks every size and stride
            if _direct.rnea(q, qd, qdd, g, self._packed, tau):
                return tau
        g = self._gravity(g)
        x = _contiguous(q, _F64)
        v = _contiguous(qd, _F64)
        a = _contiguous(qdd, _F64)
        if x.shape == self._q_shape and v.shape == a.shape == self._v_shape:
            tau = _empty(self.nv)
            if not _direct.rnea(x, v, a, g, self._packed, tau):
                raise _declined("rnea", x, tau)
            return tau
        Q, batched = self._batch(x, self.nq, "q")
        V, _ = self._batch(v, self.nv, "qd")
        A, _ = self._batch(a, self.nv, "qdd")
        if not (V.shape[0] == A.shape[0] == Q.shape[0]):
            raise ModelError(f"q, qd and qdd batch sizes differ: {Q.shape[0]}, {V.shape[0]}, {A.shape[0]}")
        out = np.empty((Q.shape[0], self.nv))
        _run(kernels.rnea_batch, (Q, V, A), (g, self._packed), out)
        return out if batched else out[0]

    # ------------------------------------------------------------------ control-loop fast paths
    def gravity_compensation_into(self, q: FloatArray, gravity: FloatArray, out: FloatArray) -> None:
        """:meth:`gravity_compensation` for one configuration into ``out`` (nv,), unchecked.

        For the 1 kHz loop: ``q`` (nq,) and ``gravity`` (3,) must already be C-contiguous float64;
        skipping validation and allocation saves more time than the kernel itself takes. The kernel
        still checks sizes and strides and declines what does not fit; then the checked call runs
        (and raises if the inputs are wrong).
        """
        if not kernels.gravity(q, gravity, self._packed, out):
            self._output(out, (1, self.nv), False)[0] = self.gravity_compensation(q, gravity)

    def forward_kinematics_into(self, q: FloatArray, frame: str, out: FloatArray) -> None:
        """:meth:`forward_kinematics` for one configuration into ``out`` (n, 4, 4), unchecked (see above)."""
        fs = self._frame_set(frame)
        if not kernels.frame_poses(q, fs.packed, out):
            self.forward_kinematics(q, frame, out=out)

    def inverse_dynamics_into(self, q: FloatArray, qd: FloatArray, qdd: FloatArray, gravity: FloatArray,
                              out: FloatArray) -> None:
        """:meth:`inverse_dynamics` for one configuration into ``out`` (nv,), unchecked (see above)."""
        if not kernels.rnea(q, qd, qdd, gravity, self._packed, out):
            self._output(out, (1, self.nv), False)[0] = self.inverse_dynamics(q, qd, qdd, gravity)

    def inverse_dynamics_batch_into(self, Q: FloatArray, V: FloatArray, A: FloatArray, gravity: FloatArray,
                                    out: FloatArray) -> None:
        """:meth:`inverse_dynamics` for a batch (B, nq)/(B, nv) into ``out`` (B, nv), unchecked (see
        above): the execution monitors form the mass matrix from n + 2 rows in one call."""
        kernels.rnea_batch(Q, V, A, gravity, self._packed, out)  # armature included by the kernel

    def inverse_kinematics(self, target: Any = None, seed: ArrayLike | None = None, **kwargs: Any) -> Any:
        """Solve for joint positions reaching ``target``; see :func:`hebictl.model.ik.solve`."""
        from hebictl.model.ik import solve

        return solve(self, target=target, seed=seed, **kwargs)

    def __repr__(self) -> str:
        return (f"RobotModel({self.name!r}, format={self.format!r}, dof={self.dof}, "
                f"bodies={len(self.bodies)}, mass={self.total_mass:.3f} kg)")


def _names(joint: str, kind: JointKind, which: str) -> tuple[str, ...]:
    if kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
        return (joint,)
    if kind is JointKind.BALL:
        return tuple(f"{joint}_{c}" for c in (("qw", "qx", "qy", "qz") if which == "q" else ("wx", "wy", "wz")))
    if kind is JointKind.FREE:
        if which == "q":
            return tuple(f"{joint}_{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
        return tuple(f"{joint}_{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz"))
    return ()


def _declined(kernel: str, x: FloatArray, out: FloatArray) -> ModelError:
    """The error for a kernel that declined inputs its checked path made C-contiguous (cannot happen)."""
    return ModelError(f"{kernel} kernel declined q {x.shape} {x.strides}, out {out.shape} {out.strides}")
