"""Waypoint trajectories with hebi-py's semantics, in numpy.

Why not call hebi-py: its trajectories live in the C core (only reachable through ctypes, one
call per sample), cannot be sampled vectorised, and a few corner cases are unusable (below).
:func:`create_trajectory` reproduces ``hebi.trajectory.create_trajectory`` (hebi-py 2.16.1) to
rounding error on well-conditioned input: a per-joint minimum-jerk quintic spline
(:mod:`~hebictl.trajectory.min_jerk` explains the maths), the same argument layout (joints x
waypoints, NaN = free), the same defaults (omitted velocities/accelerations are zero at both ends
and free in between) and the same clamping outside ``[start_time, end_time]`` (the end state,
velocity and acceleration included). :meth:`Trajectory.rescaled`,
:meth:`Trajectory.rescaled_to_limits`, :meth:`Trajectory.position_range`,
:meth:`Trajectory.peak_velocity`, :meth:`Trajectory.peak_acceleration` and
:func:`estimate_segment_times` mirror hebi-py's ``rescale``, ``rescale_with_limits``,
``get_min_max_position``, ``get_max_velocity``, ``get_max_acceleration`` and
``estimate_segment_times``; hebictl trajectories are immutable, so the retiming methods return
a new trajectory instead of changing this one.

Where hebictl deliberately differs from hebi-py (all are input hebi-py does not reject):

* Under-constrained joints (e.g. two waypoints with positions only, or no position at all): the
  minimum-jerk problem has a family of solutions. hebi-py then either fails ("Failed to decompose
  Rfree") or, depending on the pattern, returns an arbitrary member (all positions NaN -> a
  trajectory starting at 0; one position with free velocities -> a numerically arbitrary
  parabola). hebictl raises :class:`TrajectoryError` naming the joint.
* Infinite positions/velocities/accelerations: hebi-py returns an all-NaN trajectory; hebictl
  raises. One waypoint: both raise.
* Limits that are zero, negative or NaN (``rescaled_to_limits``, ``estimate_segment_times``):
  hebi-py produces infinite times, clips with the wrong sign or ignores the joint; hebictl raises.
  ``estimate_segment_times`` also rejects infinite limits (hebi-py: NaN times for ``N_FABIAN``).
* hebi-py 2.16.1's ``get_min_max_position``, ``get_max_velocity`` and ``get_max_acceleration``
  wrappers fail (``len()`` of an int; the last also calls the velocity routine); the hebictl
  versions return the extrema hebi's C core computes when called directly.

Where hebictl is more accurate than hebi-py: with free positions next to much shorter segments
the system is ill-conditioned (segment ratio 100 -> condition number ~3e11). hebi-py's solve then
loses up to ~2e-5 rad; hebictl refines in extended precision and stays within ~1e-8 of the exact
rational solution (tested). On well-conditioned input both agree to ~1e-10.

``create_jerkazoidal_trajectory`` (constant-velocity moves with minimum-jerk ramps) is not
mirrored.
"""

from __future__ import annotations

from hebictl.errors import TrajectoryError
from hebictl.trajectory.segment_times import (
    SegmentTimeMethod,
    estimate_segment_times,
    segment_times_to_waypoint_times,
    waypoint_times_to_segment_times,
)
from hebictl.trajectory.waypoint_trajectory import State, Trajectory, create_trajectory

__all__ = [
    "SegmentTimeMethod",
    "State",
    "Trajectory",
    "TrajectoryError",
    "create_trajectory",
    "estimate_segment_times",
    "segment_times_to_waypoint_times",
    "waypoint_times_to_segment_times",
]
