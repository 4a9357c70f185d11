"""Goal admission: a goal becomes a trajectory only if the arm can follow it.

Checked before any motion, against :class:`~hebictl.control.safety.Limits`:

* every waypoint, and every position the trajectory passes through, inside the joint limits
  (:class:`~hebictl.errors.LimitViolation`);
* with explicit waypoint times: peak speed <= rated speed, peak acceleration <= rated
  acceleration and, where the model gives efforts, the inverse-dynamics effort (gravity
  included) <= rated effort along the way; otherwise ``CommandRejected("too_fast" |
  "too_strong")`` naming the joint, what it needs and what it is allowed;
* the whole path clear of the arm's own body and its workspace, when the arm has a collision
  world (``CommandRejected("collision")``, see :func:`plan`);
* without times: segment times come from the limits as in hebi-py (``estimate_segment_times``
  at half the rated speed, then ``rescale_with_limits`` until every peak fits), and the
  trajectory is slowed further while an effort would exceed its rating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from hebictl._typing import FloatArray
from hebictl.collision.attach import world_of
from hebictl.collision.path import check_trajectory
from hebictl.control.goal import Goal
from hebictl.control.safety import Limits
from hebictl.errors import CommandRejected, LimitViolation
from hebictl.trajectory import Trajectory, create_trajectory, estimate_segment_times

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel

#: relative slack on speed/acceleration/effort checks (rounding of the trajectory's extrema)
TOLERANCE = 1e-6
#: untimed goals are planned at this fraction of the rated speed (as hebictl always did)
PLANNING_SPEED_FRACTION = 0.5
#: effort is checked on this many samples of the trajectory
EFFORT_SAMPLES = 64


def _joint(model: RobotModel, j: int) -> str:
    return f"joint {j} ({model.joint_names[j]})"


def check_positions(goal: Goal, limits: Limits, model: RobotModel) -> None:
    """Refuse a goal whose waypoints leave the joint limits."""
    lo, hi = limits.position_min, limits.position_max
    for i, p in enumerate(goal.positions):
        for j in np.flatnonzero((p < lo) | (p > hi)):
            limit = float(lo[j] if p[j] < lo[j] else hi[j])
            raise LimitViolation(f"waypoint {i}: {_joint(model, int(j))} to {p[j]:.4f} is beyond its limit "
                                 f"{limit:.4f} (allowed [{lo[j]:.4f}, {hi[j]:.4f}])",
                                 joint=model.joint_names[j], value=float(p[j]), limit=limit)


def _excess(trajectory: Trajectory, limits: Limits, model: RobotModel) -> tuple[str, int, float, float] | None:
    """The worst limit the trajectory breaks: (what, joint, needed, allowed), else None."""
    lo, hi = trajectory.position_range()
    # a joint that starts outside its limits (switched on there) may move back in, not further out
    start = trajectory.positions[:, 0]
    pmin, pmax = np.minimum(limits.position_min, start), np.maximum(limits.position_max, start)
    over = np.maximum(pmin - lo, hi - pmax)
    if np.any(over > 1e-9):
        j = int(np.argmax(over))
        below = pmin[j] - lo[j] > 0
        return "position", j, float(lo[j] if below else hi[j]), float(pmin[j] if below else pmax[j])
    for what, peak, allowed in (("speed", trajectory.peak_velocity(), limits.velocity_max),
                                ("acceleration", trajectory.peak_acceleration(), limits.acceleration_max)):
        ratio = peak / allowed
        if np.any(ratio > 1.0 + TOLERANCE):
            j = int(np.argmax(ratio))
            return what, j, float(peak[j]), float(allowed[j])
    return _effort_excess(trajectory, limits, model)


def _effort_excess(trajectory: Trajectory, limits: Limits, model: RobotModel) -> tuple[str, int, float, float] | None:
    emax = limits.effort_max
    if not np.any(np.isfinite(emax)):
        return None
    times = np.linspace(trajectory.start_time, trajectory.end_time, EFFORT_SAMPLES)
    p, v, a = trajectory.get_states(times)
    peak = np.abs(model.inverse_dynamics(p, v, a)).max(axis=0)
    ratio = peak / emax
    if np.any(ratio > 1.0 + TOLERANCE):
        j = int(np.argmax(ratio))
        return "effort", j, float(peak[j]), float(emax[j])
    return None


_UNITS = {"speed": "rad/s", "acceleration": "rad/s²", "effort": "N·m", "position": "rad"}


def _reject(excess: tuple[str, int, float, float], model: RobotModel) -> CommandRejected:
    what, j, needed, allowed = excess
    unit = _UNITS[what]
    if what == "position":
        return LimitViolation(f"the trajectory takes {_joint(model, j)} to {needed:.4f} {unit}, beyond its "
                              f"limit {allowed:.4f} {unit}", joint=model.joint_names[j], value=needed,
                              limit=allowed)
    reason = "too_strong" if what == "effort" else "too_fast"
    rated = "allowed" if what != "effort" else "rated"
    return CommandRejected(reason, f"{_joint(model, j)} needs {needed:.3f} {unit} of {what}, {rated} "
                                   f"{allowed:.3f} {unit}; give the waypoints more time (or no times)")


def plan(goal: Goal, start_time: float, start: tuple[FloatArray, FloatArray, FloatArray],
         limits: Limits, model: RobotModel, keepalive: Callable[[], None] | None = None) -> Trajectory:
    """The trajectory the arm will follow for ``goal`` from ``start``, or CommandRejected.

    When the model has a collision world (:mod:`hebictl.collision.attach`, set from the config's
    ``user_data.workspace`` when the arm is assembled), the whole path is checked against it
    (:func:`hebictl.collision.path.check_trajectory`): ``CommandRejected("collision")`` names the
    two bodies, the time along the trajectory and the distance or penetration. ``keepalive`` is
    called now and then during that check (a long path takes longer than the modules' command
    lifetime: the Arm re-sends its command meanwhile)."""
    trajectory = _plan_within_limits(goal, start_time, start, limits, model)
    world = world_of(model)
    if world is not None:
        check_trajectory(world, trajectory, keepalive)
    return trajectory


def _plan_within_limits(goal: Goal, start_time: float, start: tuple[FloatArray, FloatArray, FloatArray],
                        limits: Limits, model: RobotModel) -> Trajectory:
    if not goal.positions:
        raise CommandRejected("empty_goal", "the goal has no waypoints")
    check_positions(goal, limits, model)
    position, velocity, acceleration = start
    pos = np.column_stack([position, *goal.positions])
    vel = np.column_stack([np.clip(velocity, -limits.velocity_max, limits.velocity_max), *goal.velocities])
    acc = np.column_stack([acceleration, *goal.accelerations])
    vmax = np.where(np.isfinite(limits.velocity_max), limits.velocity_max, 1.0)
    amax = np.where(np.isfinite(limits.acceleration_max), limits.acceleration_max, 2.0 * vmax)
    if goal.times[0] is not None:
        rel = np.array([0.0, *goal.times], dtype=np.float64)
        trajectory = create_trajectory(start_time + rel, pos, vel, acc)
        excess = _excess(trajectory, limits, model)
        if excess is not None:
            raise _reject(excess, model)
        return trajectory
    seg = estimate_segment_times(pos, PLANNING_SPEED_FRACTION * vmax, np.minimum(amax, vmax))
    rel = np.concatenate([[0.0], np.cumsum(seg)])
    trajectory = create_trajectory(start_time + rel, pos, vel, acc)
    for _ in range(20):
        excess = _excess(trajectory, limits, model)
        if excess is None:
            return trajectory
        what, _j, needed, allowed = excess
        if what == "position":
            raise _reject(excess, model)
        ratio = needed / allowed
        # speed scales with 1/s, acceleration with 1/s², effort only in its dynamic part
        scale = ratio if what == "speed" else max(np.sqrt(ratio), 1.1)
        trajectory = trajectory.rescaled(float(min(max(scale * (1.0 + 1e-3), 1.01), 10.0)))
    excess = _excess(trajectory, limits, model)
    if excess is not None:
        raise _reject(excess, model)
    return trajectory
