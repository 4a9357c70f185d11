"""How long each segment between waypoints should take, before any trajectory exists.

Mirrors hebi-py's ``estimate_segment_times`` (its C core); both heuristics are the ones of ETH's
``mav_trajectory_generation`` applied per joint, and a segment takes as long as its slowest joint:

* ``N_FABIAN``: ``t = 2 d / v (1 + c v / a exp(-2 d / v))`` with ``c = 6.5`` by default, an
  empirical fit that pads short moves (rest-to-rest minimum-jerk segments need more time than a
  trapezoid);
* ``VELOCITY_RAMP``: the duration of a rest-to-rest trapezoidal (or, for short moves, triangular)
  velocity profile with acceleration ``a`` and cruise velocity ``v``.

Every estimate is raised to ``min_segment_time`` (so zero-length segments still get a duration).
"""

from __future__ import annotations

import math
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl.errors import TrajectoryError


class SegmentTimeMethod(StrEnum):
    """Heuristic used by :func:`estimate_segment_times` (hebi-py ``TimeEstimationMethod``)."""

    N_FABIAN = "n_fabian"
    VELOCITY_RAMP = "velocity_ramp"


def _positive_per_joint(name: str, value: ArrayLike, joints: int) -> NDArray[np.float64]:
    limit = np.array(value, dtype=np.float64).reshape(-1)
    if limit.size != joints:
        raise TrajectoryError(f"{name} has {limit.size} entries, expected one per joint ({joints})")
    bad = np.flatnonzero(~(np.isfinite(limit) & (limit > 0.0)))
    if bad.size:
        raise TrajectoryError(f"{name}[{bad[0]}] is {limit[bad[0]]}; limits must be finite and positive")
    return limit


def estimate_segment_times(positions: ArrayLike, max_velocities: ArrayLike, max_accelerations: ArrayLike,
                           method: SegmentTimeMethod | str = SegmentTimeMethod.N_FABIAN, *,
                           fabian_constant: float = 6.5, min_segment_time: float = 0.01) -> NDArray[np.float64]:
    """Estimated duration of each segment, s, matching ``hebi.trajectory.estimate_segment_times``.

    :param positions: (J, W) waypoint positions, rad or m (a (W,) vector is one joint); all finite.
    :param max_velocities: (J,) velocity limits, rad/s or m/s, finite and positive.
    :param max_accelerations: (J,) acceleration limits, rad/s^2 or m/s^2, finite and positive.
    :param method: which heuristic (see the module docstring).
    :param fabian_constant: the ``c`` of ``N_FABIAN``.
    :param min_segment_time: lower bound of every estimate, s (finite, >= 0).
    :return: (W-1,) segment durations; feed them to :func:`segment_times_to_waypoint_times`.
    """
    try:
        method = SegmentTimeMethod(method)
    except ValueError:
        raise TrajectoryError(f"unknown segment time method {method!r}; use one of "
                              f"{[m.value for m in SegmentTimeMethod]}") from None
    p = np.array(positions, dtype=np.float64)
    if p.ndim == 1:
        p = p.reshape(1, -1)
    if p.ndim != 2 or p.shape[1] < 2:
        raise TrajectoryError(f"positions has shape {np.shape(positions)}; expected (joints x waypoints) "
                              "with at least two waypoints")
    if not np.isfinite(p).all():
        raise TrajectoryError("positions must all be finite to estimate segment times")
    v = _positive_per_joint("max_velocities", max_velocities, p.shape[0])[:, None]
    a = _positive_per_joint("max_accelerations", max_accelerations, p.shape[0])[:, None]
    if not (math.isfinite(min_segment_time) and min_segment_time >= 0.0):
        raise TrajectoryError(f"min_segment_time must be finite and >= 0, got {min_segment_time}")
    distance = np.abs(np.diff(p, axis=1))
    if method is SegmentTimeMethod.N_FABIAN:
        per_joint = 2.0 * distance / v * (1.0 + fabian_constant * v / a * np.exp(-2.0 * distance / v))
    else:
        ramp_time = v / a                  # to reach v from rest
        ramp_distance = 0.5 * v * ramp_time
        per_joint = np.where(distance < 2.0 * ramp_distance, 2.0 * np.sqrt(distance / a),
                             2.0 * ramp_time + (distance - 2.0 * ramp_distance) / v)
    return np.maximum(per_joint.max(axis=0), min_segment_time)


def segment_times_to_waypoint_times(segment_times: ArrayLike, start_time: float = 0.0) -> NDArray[np.float64]:
    """Waypoint times (s) from segment durations (s): ``start_time`` then the running sums."""
    d = np.array(segment_times, dtype=np.float64).reshape(-1)
    if d.size < 1 or not np.isfinite(d).all():
        raise TrajectoryError("segment_times needs at least one value, all finite")
    return start_time + np.concatenate(([0.0], np.cumsum(d)))


def waypoint_times_to_segment_times(waypoint_times: ArrayLike) -> NDArray[np.float64]:
    """Segment durations (s) between consecutive waypoint times (s)."""
    t = np.array(waypoint_times, dtype=np.float64).reshape(-1)
    if t.size < 2 or not np.isfinite(t).all():
        raise TrajectoryError("waypoint_times needs at least two values, all finite")
    return np.diff(t)
