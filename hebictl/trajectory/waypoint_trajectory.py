"""The :class:`Trajectory` value and its hebi-py compatible factory :func:`create_trajectory`.

A trajectory is fixed by its waypoint constraints (times, and per joint position, velocity and
acceleration at each waypoint, NaN = free); the minimum-jerk quintics are solved once at
construction and kept as unit-interval polynomial coefficients, so sampling in a 1 kHz loop is a
bisection plus one small matrix product. Retiming (:meth:`Trajectory.rescaled`,
:meth:`Trajectory.rescaled_to_limits`) re-solves from the constraints exactly as hebi-py does,
which is why the constraints, not just the polynomials, are part of the value.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np
from numpy.polynomial import polynomial as npoly
from numpy.typing import ArrayLike, NDArray

from hebictl.errors import TrajectoryError
from hebictl.trajectory.min_jerk import check_determined, segment_coefficients, solve_waypoint_states

State = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
"""Position, velocity, acceleration; each (joints,) for one time or (samples, joints) for many."""

_VEL_FACTORS = np.arange(1.0, 6.0)               # d/ds s^k = k s^(k-1), k = 1..5
_ACC_FACTORS = _VEL_FACTORS[1:] * _VEL_FACTORS[:-1]  # d2/ds2 s^k = k (k-1) s^(k-2), k = 2..5


def _readonly(array: NDArray[np.float64]) -> NDArray[np.float64]:
    array.flags.writeable = False
    return array


def _times_vector(times: ArrayLike) -> NDArray[np.float64]:
    try:
        t = np.array(times, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TrajectoryError(f"times must be a vector of numbers, s ({err})") from None
    if t.ndim != 1:
        raise TrajectoryError(f"times must be a vector, got an array of shape {t.shape}")
    if t.size < 2:
        raise TrajectoryError(f"a trajectory needs at least two waypoints, got {t.size} time(s)")
    if np.isfinite(t).all() and (t[1:] > t[:-1]).all():
        return t
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise TrajectoryError(f"times[{bad[0]}] is {t[bad[0]]}; waypoint times must be finite")
    k = np.flatnonzero(t[1:] <= t[:-1])[0] + 1
    raise TrajectoryError(f"waypoint times must strictly increase: times[{k}] = {t[k]!r} is not later "
                          f"than times[{k - 1}] = {t[k - 1]!r}")


def _as_matrix(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """``value`` as a float (joints x waypoints) matrix; a vector is one joint (as in hebi-py)."""
    try:
        m = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TrajectoryError(f"{name} must be a (joints x waypoints) array of numbers ({err})") from None
    if m.ndim == 1:
        return m.reshape(1, -1)
    if m.ndim != 2:
        raise TrajectoryError(f"{name} has shape {m.shape}; expected (joints x waypoints)")
    return m


def _waypoint_matrix(name: str, value: ArrayLike, shape: tuple[int, ...]) -> NDArray[np.float64]:
    """:func:`_as_matrix`, checked against the (joints, waypoints) ``shape`` and for infinities."""
    m = _as_matrix(name, value)
    if m.shape != shape:
        raise TrajectoryError(f"{name} has shape {np.shape(value)} but the trajectory has {shape[0]} joint(s) "
                              f"and {shape[1]} waypoint(s); expected {shape} (joints x waypoints)")
    if np.isinf(m).any():
        joint, waypoint = np.argwhere(np.isinf(m))[0]
        raise TrajectoryError(f"{name}[{joint}, {waypoint}] (joint {joint}, waypoint {waypoint}) "
                              "is infinite; use NaN for a free value")
    return m


def _end_zero_default(shape: tuple[int, ...]) -> NDArray[np.float64]:
    """hebi-py's default for omitted velocities/accelerations: 0 at both ends, free in between."""
    m = np.full(shape, np.nan)
    if shape[1]:
        m[:, 0] = 0.0
        m[:, -1] = 0.0
    return m


def _joint_limits(name: str, value: ArrayLike | None, joints: int) -> NDArray[np.float64] | None:
    if value is None:
        return None
    limit = np.array(value, dtype=np.float64).reshape(-1)
    if limit.size != joints:
        raise TrajectoryError(f"{name} has {limit.size} entries, expected one per joint ({joints})")
    bad = np.flatnonzero(~(limit > 0.0))
    if bad.size:
        raise TrajectoryError(f"{name}[{bad[0]}] is {limit[bad[0]]}; limits must be positive (inf = none)")
    return limit


def create_trajectory(times: ArrayLike, positions: ArrayLike, velocities: ArrayLike | None = None,
                      accelerations: ArrayLike | None = None) -> Trajectory:
    """Minimum-jerk trajectory through waypoints, matching ``hebi.trajectory.create_trajectory``.

    :param times: (W,) strictly increasing waypoint times, s (W >= 2).
    :param positions: (J, W) joint positions at the waypoints, rad or m; a (W,) vector is one
        joint. NaN leaves a position free.
    :param velocities: (J, W) waypoint velocities, rad/s or m/s, NaN = free. ``None`` means
        hebi-py's default: zero at the first and last waypoint, free in between.
    :param accelerations: (J, W) waypoint accelerations, rad/s^2 or m/s^2, NaN = free; ``None``
        as for velocities.
    :raises TrajectoryError: bad shapes, non-finite or non-increasing times, infinite values, or
        a joint whose constraints do not determine a unique trajectory.
    """
    p = _as_matrix("positions", positions)
    v = _end_zero_default(p.shape) if velocities is None else velocities
    a = _end_zero_default(p.shape) if accelerations is None else accelerations
    return Trajectory(times, p, v, a)  # type: ignore[arg-type]  # validated in __post_init__


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Multi-joint minimum-jerk trajectory; build it with :func:`create_trajectory`.

    The four constraint arrays are the waypoint data the trajectory was solved from (NaN = was
    free); they are validated and solved in ``__post_init__``, so every instance is usable, and
    they are read-only. Times outside ``[start_time, end_time]`` clamp to the ends (the state at
    the end, velocity included, as hebi-py does).
    """

    waypoint_times: NDArray[np.float64]
    """(W,) waypoint times, s."""
    positions: NDArray[np.float64]
    """(J, W) position constraints, rad or m (NaN = free)."""
    velocities: NDArray[np.float64]
    """(J, W) velocity constraints, rad/s or m/s (NaN = free)."""
    accelerations: NDArray[np.float64]
    """(J, W) acceleration constraints, rad/s^2 or m/s^2 (NaN = free)."""
    _coefficients: NDArray[np.float64] = field(init=False, repr=False)
    _knots: list[float] = field(init=False, repr=False)
    _inv_durations: list[float] = field(init=False, repr=False)
    _segments: list[NDArray[np.float64]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        t = _times_vector(self.waypoint_times)
        p = _as_matrix("positions", self.positions)
        if p.shape[1] != t.size:
            raise TrajectoryError(f"positions has {p.shape[1]} waypoint(s) (columns) but times has {t.size}")
        if p.shape[0] == 0:
            raise TrajectoryError("positions has no joints (rows)")
        shape = p.shape
        p = _waypoint_matrix("positions", p, shape)
        v = _waypoint_matrix("velocities", self.velocities, shape)
        a = _waypoint_matrix("accelerations", self.accelerations, shape)
        constraints = np.stack([p, v, a], axis=2)
        check_determined(t, constraints)
        coefficients = segment_coefficients(t, solve_waypoint_states(t, constraints))
        setter = object.__setattr__
        for name, value in (("waypoint_times", t), ("positions", p), ("velocities", v),
                            ("accelerations", a), ("_coefficients", coefficients)):
            setter(self, name, _readonly(value))
        setter(self, "_knots", t.tolist())
        setter(self, "_inv_durations", (1.0 / (t[1:] - t[:-1])).tolist())
        setter(self, "_segments", list(coefficients))

    # -- hebi-py's read-only properties -----------------------------------------------------

    @property
    def number_of_joints(self) -> int:
        """J, the rows of the constraint arrays."""
        return self.positions.shape[0]

    @property
    def number_of_waypoints(self) -> int:
        """W, including the first and the last waypoint."""
        return self.waypoint_times.size

    @property
    def start_time(self) -> float:
        """Time of the first waypoint, s."""
        return self._knots[0]

    @property
    def end_time(self) -> float:
        """Time of the last waypoint, s."""
        return self._knots[-1]

    @property
    def duration(self) -> float:
        """``end_time - start_time``, s."""
        return self._knots[-1] - self._knots[0]

    # -- sampling ---------------------------------------------------------------------------

    def get_state(self, t: float) -> State:
        """Position, velocity and acceleration of every joint at time ``t`` (s), each (J,).

        Cheap enough for a 1 kHz loop: one bisection and one (3x6)@(6xJ) product.
        """
        knots = self._knots
        if t != t:
            raise TrajectoryError("get_state time is NaN")
        if t <= knots[0]:
            seg, s = 0, 0.0
        elif t >= knots[-1]:
            seg, s = len(knots) - 2, 1.0
        else:
            seg = bisect_right(knots, t) - 1
            s = (t - knots[seg]) * self._inv_durations[seg]
        r = self._inv_durations[seg]
        r2 = r * r
        s2 = s * s
        s3 = s2 * s
        basis = np.array(((1.0, s, s2, s3, s2 * s2, s3 * s2),
                          (0.0, r, 2.0 * r * s, 3.0 * r * s2, 4.0 * r * s3, 5.0 * r * s2 * s2),
                          (0.0, 0.0, 2.0 * r2, 6.0 * r2 * s, 12.0 * r2 * s2, 20.0 * r2 * s3)))
        out = basis @ self._segments[seg]
        return out[0], out[1], out[2]

    def get_states(self, times: ArrayLike) -> State:
        """Vectorised :meth:`get_state`: for (N,) times (s) returns three (N, J) arrays."""
        t = np.asarray(times, dtype=np.float64)
        if t.ndim != 1:
            raise TrajectoryError(f"get_states expects a vector of times, got shape {t.shape}")
        if np.isnan(t).any():
            raise TrajectoryError("get_states times contain NaN")
        knots = self.waypoint_times
        t = np.clip(t, knots[0], knots[-1])
        seg = np.clip(np.searchsorted(knots, t, side="right") - 1, 0, knots.size - 2)
        inv_h = 1.0 / np.diff(knots)[seg]
        s = (t - knots[seg]) * inv_h
        powers = np.empty((s.size, 6))                                   # s^0 .. s^5
        powers[:, 0] = 1.0
        powers[:, 1] = s
        for k in range(2, 6):  # products, not **: float pow is several times slower
            np.multiply(powers[:, k - 1], s, out=powers[:, k])
        coeffs = self._coefficients[seg]                                 # (N, 6, J)
        pos = np.einsum("nk,nkj->nj", powers, coeffs)
        vel = np.einsum("nk,nkj->nj", powers[:, :5] * _VEL_FACTORS, coeffs[:, 1:]) * inv_h[:, None]
        acc = np.einsum("nk,nkj->nj", powers[:, :4] * _ACC_FACTORS, coeffs[:, 2:]) * (inv_h * inv_h)[:, None]
        return pos, vel, acc

    # -- extrema (hebi-py get_min_max_position / get_max_velocity / get_max_acceleration) ------

    def _extrema(self, order: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per joint (min, max) over the whole trajectory of the ``order``-th time derivative.

        Exact up to root-finding precision: candidates are the segment ends and the real roots of
        the next derivative inside each segment.
        """
        derivative = npoly.polyder(self._coefficients, m=order, axis=1) if order else self._coefficients
        slope = npoly.polyder(derivative, axis=1)
        scale = np.asarray(self._inv_durations) ** order
        joints = self.number_of_joints
        lo = np.full(joints, np.inf)
        hi = np.full(joints, -np.inf)
        for seg in range(derivative.shape[0]):
            for j in range(joints):
                roots = npoly.polyroots(slope[seg, :, j]) if np.any(slope[seg, :, j]) else np.empty(0)
                # Nearly real roots count too: any point of [0, 1] is a safe candidate (its value is
                # attained), and a close pair of real roots can come back as a complex pair.
                real = roots.real[(np.abs(roots.imag) <= 1e-6) & (roots.real > 0.0) & (roots.real < 1.0)]
                values = npoly.polyval(np.concatenate(([0.0, 1.0], real)), derivative[seg, :, j]) * scale[seg]
                lo[j] = min(lo[j], values.min())
                hi[j] = max(hi[j], values.max())
        return lo, hi

    def position_range(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per joint minimum and maximum position reached, each (J,) (hebi-py ``get_min_max_position``)."""
        return self._extrema(0)

    def peak_velocity(self) -> NDArray[np.float64]:
        """Per joint maximum of |velocity|, (J,) (hebi-py ``get_max_velocity``)."""
        lo, hi = self._extrema(1)
        return np.maximum(-lo, hi)

    def peak_acceleration(self) -> NDArray[np.float64]:
        """Per joint maximum of |acceleration|, (J,) (hebi-py ``get_max_acceleration``)."""
        lo, hi = self._extrema(2)
        return np.maximum(-lo, hi)

    # -- retiming ---------------------------------------------------------------------------

    def shifted(self, dt: float) -> Trajectory:
        """The same trajectory ``dt`` seconds later, without solving it again.

        The segment polynomials are in normalised segment time, so a shift moves only the
        knots. A trajectory planned (and checked) ahead of time starts when it is needed."""
        if not math.isfinite(dt):
            raise TrajectoryError(f"shift must be finite, got {dt}")
        out = object.__new__(Trajectory)
        for name in ("positions", "velocities", "accelerations", "_coefficients", "_inv_durations", "_segments"):
            object.__setattr__(out, name, getattr(self, name))
        object.__setattr__(out, "waypoint_times", _readonly(self.waypoint_times + dt))
        object.__setattr__(out, "_knots", [t + dt for t in self._knots])
        return out

    def rescaled(self, scale: float) -> Trajectory:
        """The trajectory re-solved with its segments ``scale`` times as long (hebi-py ``rescale``).

        Waypoint times stretch about ``start_time``; the waypoint constraints are kept as they
        are, so free values slow down by ``scale`` (velocities) and ``scale**2`` (accelerations)
        while given nonzero velocities/accelerations stay what they were.
        """
        if not (math.isfinite(scale) and scale > 0.0):
            raise TrajectoryError(f"scale must be finite and positive, got {scale}")
        t0 = self.waypoint_times[0]
        return Trajectory(t0 + scale * (self.waypoint_times - t0), self.positions, self.velocities,
                          self.accelerations)

    def rescaled_to_limits(self, max_velocity: ArrayLike | None = None,
                           max_acceleration: ArrayLike | None = None) -> Trajectory:
        """Slow the trajectory down so it roughly respects per-joint limits (hebi-py ``rescale_with_limits``).

        One pass of hebi's heuristic: ``scale = max(1, max_j peak_v_j / vmax_j,
        sqrt(max_j peak_a_j / amax_j))`` from this trajectory, given waypoint velocities and
        accelerations clipped to ``[-limit, limit]``, then :meth:`rescaled` by ``scale``. The result
        can still exceed the limits slightly where clipped or given constraints reshape it; it is
        never sped up.

        :param max_velocity: (J,) velocity limits, rad/s or m/s, positive (inf = none); None = no limit.
        :param max_acceleration: (J,) acceleration limits, rad/s^2 or m/s^2; None = no limit.
        """
        joints = self.number_of_joints
        vmax = _joint_limits("max_velocity", max_velocity, joints)
        amax = _joint_limits("max_acceleration", max_acceleration, joints)
        scale = 1.0
        velocities, accelerations = self.velocities, self.accelerations
        if vmax is not None:
            scale = max(scale, float(np.max(self.peak_velocity() / vmax)))
            velocities = np.clip(velocities, -vmax[:, None], vmax[:, None])
        if amax is not None:
            scale = max(scale, math.sqrt(float(np.max(self.peak_acceleration() / amax))))
            accelerations = np.clip(accelerations, -amax[:, None], amax[:, None])
        t0 = self.waypoint_times[0]
        return Trajectory(t0 + scale * (self.waypoint_times - t0), self.positions, velocities, accelerations)
