"""Can the arm follow a goal? Speed and reach checks of teleop goals against the arm's limits.

The schema (:mod:`~hebictl.teleop.schema`) already refuses numbers that are not finite and
targets outside the joint position limits. That is not enough: a joint with no position limit
(``-inf..inf``, as a continuous joint has) accepts a target of 1e308 rad, and a target 1e6 rad
away "over 600 s" still needs 1,667 rad/s. What bounds every joint is its **rated speed**, so a
goal is checked against it over the time it allows:

* :func:`check_reach` runs in the bridge **before the command is queued**, from the arm's last
  published commanded position: every timed segment's average speed ``|Δq| / Δt`` must be within
  the rated speed (no trajectory through those points can be slower than its average), and an
  untimed goal's path must be coverable at rated speed within ``max_duration``. It is cheap and
  needs no trajectory, so a flood of absurd goals costs the bridge nothing.
* :func:`check_trajectory` runs in the arm thread on the trajectory actually built from the
  arm's state at that moment: every position and velocity finite, the peak speed of every joint
  within its rated speed, the whole path inside the position limits (a minimum-jerk spline may
  overshoot between waypoints), the duration finite and within ``max_duration``.

Both raise :class:`~hebictl.errors.CommandRejected` naming the joint, what the goal needs and
what the joint allows (reasons ``too_fast``, ``too_far``, ``out_of_limits``, ``not_finite``).

* :func:`solve_cartesian` turns a Cartesian goal into joints for the bridge: inverse kinematics
  inside the *config's* joint limits (the arm's :class:`~hebictl.control.safety.Limits`, not only
  the model file's), and the solution checked against the arm's body and workspace
  (``CommandRejected("collision")``); the path to it is checked by the arm's admission like any goal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.control.safety import Limits
from hebictl.errors import CommandRejected
from hebictl.model.robot import RobotModel
from hebictl.trajectory import Trajectory

#: relative slack on the rated speed for rounding (the arm's own rate limiter is the hard stop)
SPEED_TOLERANCE = 1e-6
#: samples per trajectory segment when looking for its peak speed (the peak of a quintic segment
#: is found to well under 1 % with 32 samples; the arm rate-limits every cycle anyway)
SAMPLES_PER_SEGMENT = 32


def _names(joint_names: Sequence[str] | None, i: int) -> str:
    return f"joint {i} ({joint_names[i]})" if joint_names is not None and i < len(joint_names) else f"joint {i}"


def check_reach(start: FloatArray, times: Sequence[float | None], positions: Sequence[FloatArray],
                limits: Limits, *, max_duration: float, joint_names: Sequence[str] | None = None) -> None:
    """Refuse a goal that no trajectory could follow at rated speed (see the module docstring).

    ``start`` [rad] is where the goal will begin (the arm's commanded position); ``times`` [s
    after the goal starts] are all None (the arm times the goal) or all given."""
    vmax = np.asarray(limits.velocity_max, dtype=np.float64)
    rated = np.isfinite(vmax) & (vmax > 0)
    prev = np.asarray(start, dtype=np.float64)
    if not np.all(np.isfinite(prev)):
        return  # no usable arm state yet: the arm thread refuses the goal itself
    if times and times[0] is None:
        path = np.zeros_like(prev)
        for q in positions:
            path += np.abs(q - prev)
            prev = q
        need = np.divide(path, vmax, out=np.zeros_like(path), where=rated)
        i = int(np.argmax(need))
        if need[i] > max_duration:
            raise CommandRejected("too_far", f"{_names(joint_names, i)} would travel {path[i]:.6g} rad, "
                                             f"{need[i]:.3g} s at its rated {vmax[i]:.4g} rad/s "
                                             f"(goals last at most {max_duration:g} s)")
        return
    t_prev = 0.0
    for k, (t, q) in enumerate(zip(times, positions, strict=True)):
        assert t is not None
        dt = t - t_prev
        speed = np.abs(q - prev) / dt
        over = rated & (speed > vmax * (1.0 + SPEED_TOLERANCE))
        if over.any():
            i = int(np.argmax(np.where(over, speed / np.where(rated, vmax, 1.0), 0.0)))
            raise CommandRejected("too_fast", f"waypoint {k}: {_names(joint_names, i)} needs at least "
                                              f"{speed[i]:.6g} rad/s on average ({abs(q[i] - prev[i]):.6g} rad "
                                              f"in {dt:.6g} s), rated {vmax[i]:.4g} rad/s")
        prev, t_prev = q, t


def check_trajectory(trajectory: Trajectory, limits: Limits, *, max_duration: float,
                     joint_names: Sequence[str] | None = None) -> None:
    """Refuse a built trajectory that is not finite, too long, too fast or leaves the limits."""
    duration = float(trajectory.duration)
    if not np.isfinite(duration):
        raise CommandRejected("not_finite", "the goal's duration is not finite")
    if duration > max_duration * (1.0 + SPEED_TOLERANCE):
        raise CommandRejected("too_far", f"the goal would last {duration:.6g} s (at most {max_duration:g} s)")
    knots = np.asarray(trajectory.waypoint_times, dtype=np.float64)
    frac = np.linspace(0.0, 1.0, SAMPLES_PER_SEGMENT + 1)
    t = (knots[:-1, None] + np.diff(knots)[:, None] * frac[None, :]).reshape(-1)
    with np.errstate(all="ignore"):  # overflow shows up as inf/NaN below, not as a warning
        pos, vel, _ = trajectory.get_states(t)
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
        raise CommandRejected("not_finite", "the goal's trajectory is not finite (numbers too large)")
    vmax = np.asarray(limits.velocity_max, dtype=np.float64)
    peak = np.max(np.abs(vel), axis=0)
    over = np.isfinite(vmax) & (peak > vmax * (1.0 + SPEED_TOLERANCE))
    if over.any():
        i = int(np.argmax(np.where(over, peak / np.where(over, vmax, 1.0), 0.0)))
        raise CommandRejected("too_fast", f"{_names(joint_names, i)} would reach {peak[i]:.6g} rad/s, "
                                          f"rated {vmax[i]:.4g} rad/s (give the goal more time)")
    lo, hi = np.min(pos, axis=0), np.max(pos, axis=0)
    # a goal from a start outside the limits (the limits changed under the arm) may lead back in
    allowed_lo, allowed_hi = np.minimum(limits.position_min, pos[0]), np.maximum(limits.position_max, pos[0])
    bad = np.flatnonzero((lo < allowed_lo) | (hi > allowed_hi))
    if bad.size:
        i = int(bad[0])
        raise CommandRejected("out_of_limits", f"{_names(joint_names, i)} would pass through "
                                               f"[{lo[i]:.4f}, {hi[i]:.4f}], limits "
                                               f"[{limits.position_min[i]:.4f}, {limits.position_max[i]:.4f}]")


def solve_cartesian(model: RobotModel, limits: Limits, position: FloatArray, seed: FloatArray,
                    orientation: FloatArray | None = None) -> FloatArray:
    """Joint positions that put the end effector at ``position`` [m, world] (and ``orientation``),
    inside ``limits``; ``ik_failed`` if there are none from ``seed``, ``collision`` if the solution
    puts the arm into itself or its workspace."""
    lo = np.asarray(limits.position_min, dtype=np.float64)
    hi = np.asarray(limits.position_max, dtype=np.float64)
    start = np.clip(np.asarray(seed, dtype=np.float64), lo, hi)  # a seed outside the limits would stay there
    result = model.inverse_kinematics(position, start, orientation=orientation, limits=(lo, hi))
    if not result.converged:
        what = f", orientation error {result.orientation_error:.3g} rad" if orientation is not None else ""
        raise CommandRejected("ik_failed", f"no joint solution within the joint limits: position error "
                                           f"{result.position_error:.3g} m{what} after {result.iterations} iterations")
    q = np.asarray(result.q, dtype=np.float64)
    world = world_of(model)
    hit = world.collision(q) if world is not None else None
    if hit is not None:
        what = (f"{-hit.gap * 1000:.1f} mm into each other" if hit.gap < 0
                else f"{hit.gap * 1000:.1f} mm apart, closer than the clearance by {-hit.distance * 1000:.1f} mm")
        raise CommandRejected("collision", f"the joint solution puts {hit.a} and {hit.b} {what}")
    return q
