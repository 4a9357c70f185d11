"""A motion checked along its whole path, by conservative advancement: sampled so that no pair of
bodies can touch between two samples.

Why that spacing is enough: a point at distance ``r`` from joint ``j``'s axis moves at most
``r |Δq_j|`` when that joint turns by ``Δq_j``, and the distance between two bodies depends only
on the joints between them (a joint above both moves them together). So the surfaces of a pair
approach each other by at most ``Σ_j R_j |Δq_j|`` over those joints, with ``R_j`` a bound on how
far the arm's shapes reach from joint ``j`` whatever the other joints do
(:attr:`CollisionWorld.pair_reach`). With every joint's speed bounded by the trajectory's peak (or
by its speed at the sample plus the peak acceleration times the time since, whichever allows
more: near the start and the end of a motion the arm is slow), the next sample is placed where
no pair can have closed its current gap (MuJoCo's distance, or
the distance beyond which MuJoCo reports it), and never closer than the fixed spacing the check
used before: the motion allowed between samples is at least the smallest clearance
(:func:`step_of`), so a pair that touched between two samples would have been closer than its
clearance at one of them. Far from everything the steps are long; near a body they shrink to
that fixed spacing. Measured: ~40x fewer samples than the fixed spacing on the bundled arms
(``benchmarks/collision.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hebictl.collision.kernels import advance_time
from hebictl.collision.world import CollisionWorld, Proximity
from hebictl.errors import CommandRejected
from hebictl.trajectory import Trajectory

#: the sample spacing never drops below this [m] of motion (a zero clearance would mean infinitely many)
MIN_STEP = 0.002
#: a pair that starts too close may come closer by this much [m] while the motion leads it out (rounding)
RECOVERY_TOLERANCE = 1e-4
#: [m] taken off every gap before it sets a step: the world's distances match hpp-fcl's to 0.2 mm
#: (tests/collision/test_world.py), this covers that five times over
GAP_TOLERANCE = 0.001
#: at most this many samples per goal (a longer path is refused as too long to check)
MAX_SAMPLES = 200_000


def step_of(world: CollisionWorld) -> float:
    """The motion [m] always allowed between two samples: the smallest clearance (at least :data:`MIN_STEP`)."""
    clearances = [world.workspace.self_clearance, *(s.clearance for s in world.workspace.shapes)]
    return max(min(clearances), MIN_STEP)


#: samples between two calls of the keep-alive (a sample costs tens of microseconds)
KEEPALIVE_EVERY = 32


def check_trajectory(world: CollisionWorld, trajectory: Trajectory,
                     keepalive: Callable[[], None] | None = None) -> int:
    """Refuse (``CommandRejected("collision")``) a trajectory whose path comes closer than a clearance.

    The message names the two shapes, the time [s after the start] and the distance or
    penetration. Returns how many samples were checked."""
    t0, t1 = float(trajectory.start_time), float(trajectory.end_time)
    # per pair: bounds on how fast its surfaces approach anywhere along the trajectory [m/s], and on
    # how fast that speed can grow [m/s², halved: the dt² term of the distance]
    speeds = world.pair_reach @ np.abs(trajectory.peak_velocity())
    curves = 0.5 * (world.pair_reach @ np.abs(trajectory.peak_acceleration()))
    step = step_of(world)
    # pairs already too close where the motion starts (switched on there, or the workspace changed)
    # may only get farther apart: the goal that leads out of a collision must stay possible
    start = world.violations(trajectory.get_state(t0)[0])
    # an assumed table (the config declares no workspace) that the arm already reaches through where
    # the motion starts is not there (a hanging or wall-mounted kit): it is not checked for this motion
    assumed = {s.name for s in world.workspace.shapes if s.meta.get("default")}
    exempt = {key for key in start if assumed & set(key)}
    t, count = t0, 0
    while True:
        if keepalive is not None and count % KEEPALIVE_EVERY == 0:
            keepalive()
        q, qd, _ = trajectory.get_state(t)
        gaps, close = world.pair_gaps(q)
        if close:
            _check_sample(world, q, t - t0, start, exempt)
        count += 1
        if t >= t1:
            return count
        if count >= MAX_SAMPLES:
            raise CommandRejected("collision", f"the path is too long to check for collisions (over {count} samples)")
        slopes = world.pair_reach @ np.abs(qd)  # [m/s] how fast each pair can approach right now
        t = min(t + advance_time(gaps, speeds, slopes, curves, step, GAP_TOLERANCE), t1)


def _check_sample(world: CollisionWorld, q: np.ndarray, t: float, start: dict[tuple[str, str], Proximity],
                  exempt: set[tuple[str, str]]) -> None:
    """Refuse the pair too close at ``q``, unless exempt or already too close at the start and not closer."""
    for key, p in world.violations(q).items():
        if key in exempt:
            continue
        before = start.get(key)
        if before is not None and p.distance >= before.distance - RECOVERY_TOLERANCE:
            start[key] = p if p.distance > before.distance else before
            continue
        raise _rejection(p, t, before is not None)


def _rejection(hit: Proximity, t: float, was_close: bool) -> CommandRejected:
    what = (f"{-hit.gap * 1000:.1f} mm into each other" if hit.gap < 0
            else f"{hit.gap * 1000:.1f} mm apart, closer than the clearance by {-hit.distance * 1000:.1f} mm")
    more = " (they start too close and this motion brings them closer)" if was_close else ""
    return CommandRejected("collision", f"{hit.a} and {hit.b} at t = {t:.3f} s along the trajectory: {what}{more}")
