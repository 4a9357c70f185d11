"""A trajectory checked along its whole path by conservative advancement (hebictl.collision.path):
far fewer samples than the fixed spacing it replaced, and still no contact between two samples.

The oracle for "no contact between samples" is a dense re-sampling of every accepted path, every
2 mm of motion of any point of the arm; at its closest sample every pair's distance comes from
hpp-fcl (an independent collision library)."""

from __future__ import annotations

import time

import hppfcl
import numpy as np
import pytest

from hebictl.collision import CollisionWorld, workspace_from
from hebictl.collision.path import GAP_TOLERANCE, check_trajectory, step_of
from hebictl.config import load_config
from hebictl.control.admission import plan
from hebictl.control.goal import Goal
from hebictl.control.settings import limits_from
from hebictl.errors import CommandRejected
from hebictl.formats import load_model
from tests._support.paths import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
GOALS = 40
#: [m] the dense re-check samples every this much motion of any point of the arm
DENSE_STEP = 0.002


def _setup(name):
    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    model = load_model(cfg.hrdf)
    world = CollisionWorld(model, workspace_from(cfg.user_data, cfg.path))
    limits = limits_from(model, cfg.user_data, cfg.path)
    home = np.array(cfg.user_data["home_position"], dtype=float)
    return model, world, limits, home


def _fcl_geometry(shape):
    if shape.kind == "capsule":
        return hppfcl.Capsule(shape.size[0], 2 * shape.size[1])
    if shape.kind == "box":
        return hppfcl.Box(*(2 * np.array(shape.size)))
    if shape.kind == "plane":
        return hppfcl.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    raise AssertionError(shape.kind)


def _fcl_min_gap(world, q) -> tuple[float, str]:
    """The smallest surface distance over the world's checked pairs at ``q``, by hpp-fcl."""
    poses = world.robot.link_poses(q)
    best, which = np.inf, ""
    for a, b in world.checked_pairs():
        sa, sb = world.shapes_by_geom[a], world.shapes_by_geom[b]
        Ta = sa.pose if sa.body < 0 else poses[sa.body] @ sa.pose
        Tb = sb.pose if sb.body < 0 else poses[sb.body] @ sb.pose
        req, res = hppfcl.DistanceRequest(), hppfcl.DistanceResult()
        d = hppfcl.distance(_fcl_geometry(sa), hppfcl.Transform3f(Ta[:3, :3], Ta[:3, 3]),
                            _fcl_geometry(sb), hppfcl.Transform3f(Tb[:3, :3], Tb[:3, 3]), req, res)
        if d < best:
            best, which = d, f"{sa.name} / {sb.name}"
    return best, which


@pytest.mark.parametrize("name", CONFIGS)
def test_fewer_samples_and_no_contact_between_them(name):
    """40 random in-limit goals from home on each bundled config (its own workspace): the check takes
    at least 10x fewer samples than spacing them by the smallest clearance, and no accepted path
    touches anything between its samples (dense re-check, hpp-fcl at its closest sample)."""
    model, world, limits, home = _setup(name)
    lo, span = limits.position_min, limits.position_max - limits.position_min
    rest = (home, np.zeros(model.dof), np.zeros(model.dof))
    rng = np.random.default_rng(1919)
    samples = fixed = accepted = 0
    cpu = []
    closest = (np.inf, "")
    # the guarantee: between samples nothing moves farther than the fixed spacing beyond a pair's
    # clearance, so a zero-clearance table (the bundled configs') may be grazed by < MIN_STEP
    clearances = [world.workspace.self_clearance, *(s.clearance for s in world.workspace.shapes)]
    allowed = min(0.0, min(clearances) - step_of(world))
    for q in lo + span * rng.random((GOALS, model.dof)):
        traj = plan(Goal(model.dof).add_waypoint(position=q), 0.0, rest, limits, model)
        t = time.thread_time()
        try:
            n = check_trajectory(world, traj)
        except CommandRejected as exc:
            assert exc.reason == "collision" and " at t = " in exc.detail, exc
            continue
        cpu.append(time.thread_time() - t)
        accepted += 1
        reach_speed = float(np.sum(np.abs(traj.peak_velocity()) * world.reach))
        duration = traj.end_time - traj.start_time
        samples += n
        fixed += int(np.ceil(duration * reach_speed / step_of(world))) + 1
        dense = np.linspace(traj.start_time, traj.end_time, int(np.ceil(duration * reach_speed / DENSE_STEP)) + 2)
        # the dense sample where MuJoCo sees the closest pair: the independent library's distance there
        lowest = min(((float(world.pair_gaps(qd)[0].min()), i) for i, qd in enumerate(traj.get_states(dense)[0])))
        gap, pair = _fcl_min_gap(world, traj.get_state(dense[lowest[1]])[0])
        closest = min(closest, (gap, pair))
        assert gap > allowed, f"accepted path touches between samples: {pair} {gap * 1000:.1f} mm"
    print(f"{name}: {accepted}/{GOALS} accepted, {samples} samples where the fixed spacing takes {fixed} "
          f"({fixed / max(samples, 1):.1f}x fewer), median {np.median(cpu) * 1e3:.1f} ms CPU per accepted goal; "
          f"closest approach on the dense re-check {closest[0] * 1000:.1f} mm ({closest[1]})")
    assert accepted >= 5
    assert samples * 10 <= fixed


def test_a_far_pair_sets_a_long_step_and_a_near_one_the_fixed_spacing():
    """Conservative advancement: the step is each pair's gap (less the tolerance) over its approach
    speed, never below the smallest clearance's spacing; a pair at rest now, whose speed can only
    grow at the peak acceleration, may step until ``curve dt²`` reaches its gap."""
    from hebictl.collision.kernels import advance_time

    speeds, zero = np.array([1.0, 2.0, 0.0]), np.zeros(3)
    gaps = np.array([0.3, 0.9, 0.0])
    assert advance_time(gaps, speeds, speeds, zero, 0.01, GAP_TOLERANCE) == pytest.approx(0.3 - GAP_TOLERANCE)
    near = np.array([0.003, 0.9, 0.0])
    assert advance_time(near, speeds, speeds, zero, 0.01, GAP_TOLERANCE) == pytest.approx(0.01)
    assert advance_time(gaps[:2], np.zeros(2), np.zeros(2), np.zeros(2), 0.01, GAP_TOLERANCE) == np.inf
    # at rest now, curve 0.5 m/s² (peak acceleration 1 m/s²): 0.5 dt² = 0.2985 m -> dt = 0.773 s,
    # longer than the 0.2985 s the peak speed of 1 m/s allows
    curve = np.array([0.5, 0.5, 0.0])
    dt = advance_time(gaps, speeds, zero, curve, 0.01, GAP_TOLERANCE)
    assert dt == pytest.approx(np.sqrt((0.3 - GAP_TOLERANCE) / 0.5))
    # moving at the peak speed already: the quadratic bound allows less than the linear one
    assert advance_time(gaps, speeds, speeds, curve, 0.01, GAP_TOLERANCE) == pytest.approx(0.3 - GAP_TOLERANCE)


def test_a_pair_moves_only_with_the_joints_between_its_bodies():
    """x6: the table and the end effector approach with every joint; a self pair two groups apart
    with only the two joints between them."""
    model, world, _, _ = _setup("x-series-6dof")
    names = world.pair_names()
    reach = {pair: world.pair_reach[k] for k, pair in enumerate(names)}
    table_tool = next(v for (a, b), v in reach.items() if {a, b} & {"table"} and ({a, b} - {"table"}).pop()
                      .startswith("tool"))
    assert np.all(table_tool > 0)
    for (a, b), v in reach.items():
        assert np.count_nonzero(v) >= 1, (a, b)
    # a self pair two groups apart moves with exactly the two joints between them
    counts = sorted({int(np.count_nonzero(v)) for (a, b), v in reach.items() if "table" not in (a, b)})
    assert counts[0] == 2
