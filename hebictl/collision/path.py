"""A motion checked along its whole path: sampled so that nothing moves farther than the clearance
between two samples.

Why that spacing is enough: a point at distance ``r`` from joint ``j``'s axis moves at most
``r |Δq_j|`` when that joint turns by ``Δq_j``, so no point of the arm moves more than
``Σ_j R_j |Δq_j|`` between samples, with ``R_j`` a bound on how far the arm's shapes reach from
joint ``j`` whatever the other joints do (:attr:`CollisionWorld.reach`: lengths along the tree,
plus each shape's bounding radius). Samples are spaced so that sum is at most the smallest clearance: a pair
that touched between two samples would have been closer than its clearance at one of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hebictl.collision.world import CollisionWorld, Proximity
from hebictl.errors import CommandRejected
from hebictl.trajectory import Trajectory

#: the sample spacing never drops below this [m] of motion (a zero clearance would mean infinitely many)
MIN_STEP = 0.002
#: a pair that starts too close may come closer by this much [m] while the motion leads it out (rounding)
RECOVERY_TOLERANCE = 1e-4
#: at most this many samples per goal (a longer path is refused as too long to check)
MAX_SAMPLES = 200_000


def step_of(world: CollisionWorld) -> float:
    """The motion [m] allowed between two samples: the smallest clearance (at least :data:`MIN_STEP`)."""
    clearances = [world.workspace.self_clearance, *(s.clearance for s in world.workspace.shapes)]
    return max(min(clearances), MIN_STEP)


#: samples between two calls of the keep-alive (a sample costs tens of microseconds)
KEEPALIVE_EVERY = 32


def check_trajectory(world: CollisionWorld, trajectory: Trajectory,
                     keepalive: Callable[[], None] | None = None) -> int:
    """Refuse (``CommandRejected("collision")``) a trajectory whose path comes closer than a clearance.

    The message names the two shapes, the time [s after the start] and the distance or
    penetration. Returns how many samples were checked."""
    reach = world.reach
    t0, t1 = float(trajectory.start_time), float(trajectory.end_time)
    speed = float(np.sum(np.abs(trajectory.peak_velocity()) * reach))  # [m/s] bound on any point's speed
    count = int(np.ceil((t1 - t0) * speed / step_of(world))) + 1 if t1 > t0 else 1
    if count > MAX_SAMPLES:
        raise CommandRejected("collision", f"the path is too long to check for collisions ({count} samples)")
    times = np.linspace(t0, t1, max(count, 2))
    positions, _, _ = trajectory.get_states(times)
    # pairs already too close where the motion starts (switched on there, or the workspace changed)
    # may only get farther apart: the goal that leads out of a collision must stay possible
    start = world.violations(positions[0])
    # an assumed table (the config declares no workspace) that the arm already reaches through where
    # the motion starts is not there (a hanging or wall-mounted kit): it is not checked for this motion
    assumed = {s.name for s in world.workspace.shapes if s.meta.get("default")}
    exempt = {key for key in start if assumed & set(key)}
    for k, (t, q) in enumerate(zip(times, positions, strict=True)):
        if keepalive is not None and k % KEEPALIVE_EVERY == 0:
            keepalive()
        hit = world.collision(q)
        if hit is None:
            continue
        for key, p in world.violations(q).items():
            if key in exempt:
                continue
            before = start.get(key)
            if before is not None and p.distance >= before.distance - RECOVERY_TOLERANCE:
                start[key] = p if p.distance > before.distance else before
                continue
            raise _rejection(p, t - t0, before is not None)
    return len(times)


def _rejection(hit: Proximity, t: float, was_close: bool) -> CommandRejected:
    what = (f"{-hit.gap * 1000:.1f} mm into each other" if hit.gap < 0
            else f"{hit.gap * 1000:.1f} mm apart, closer than the clearance by {-hit.distance * 1000:.1f} mm")
    more = " (they start too close and this motion brings them closer)" if was_close else ""
    return CommandRejected("collision", f"{hit.a} and {hit.b} at t = {t:.3f} s along the trajectory: {what}{more}")
