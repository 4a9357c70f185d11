"""Goals checked along their whole path against the arm's body and its table (issue 19.2), on the
sim backend with every bundled config; accepted paths are re-checked by an independent capsule model."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.errors import CommandRejected
from hebictl.hardware import SimClock
from tests.conftest import REPO_ROOT

pytest.importorskip("mujoco")

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
#: the independent check's capsule radius [m]: smaller than any of the arm's shapes (>= 18 mm)
RADIUS = 0.01


def sim_arm(name):
    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    arm = Arm.from_config(cfg, backend="sim", clock=SimClock(), initial_position=home)
    arm.update()
    return arm, cfg, home


def segment_distances(p0, p1, q0, q1):
    """Closest distance between segments p0-p1 and q0-q1 (batched over leading axes): the textbook
    clamped closed form (Ericson, Real-Time Collision Detection, 5.1.9), written here as the
    test's own reference, independent of the library under test."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = (d1 * d1).sum(-1), (d2 * d2).sum(-1), (d2 * r).sum(-1)
    c, b = (d1 * r).sum(-1), (d1 * d2).sum(-1)
    denom = a * e - b * b
    eps = 1e-12
    s = np.where(denom > eps, np.clip((b * f - c * e) / np.maximum(denom, eps), 0, 1), 0.0)
    t = np.where(e > eps, (b * s + f) / np.maximum(e, eps), 0.0)
    s = np.where(t < 0, np.where(a > eps, np.clip(-c / np.maximum(a, eps), 0, 1), 0.0), s)
    s = np.where(t > 1, np.where(a > eps, np.clip((b - c) / np.maximum(a, eps), 0, 1), 0.0), s)
    t = np.clip(t, 0, 1)
    return np.linalg.norm(p0 + d1 * s[..., None] - (q0 + d2 * t[..., None]), axis=-1)


def independent_violation(model, qs):
    """First sample where a link frame or the end effector is below the table, or two non-adjacent
    segments between consecutive link frames (capsules of RADIUS) touch; None if none."""
    frames = model.forward_kinematics(qs, "output")[..., :3, 3]   # (S, F, 3) along the serial chain
    ee = model.end_effector(qs)[..., :3, 3]
    z = np.minimum(frames[..., 2].min(-1), ee[..., 2])
    if z.min() < 0:
        return f"a link frame at z = {z.min():.4f} m"
    pts = np.concatenate([np.zeros_like(ee)[:, None], frames, ee[:, None]], axis=1)
    n = pts.shape[1] - 1
    i, j = np.triu_indices(n, k=2)
    d = segment_distances(pts[:, i], pts[:, i + 1], pts[:, j], pts[:, j + 1])
    if d.min() < 2 * RADIUS:
        k = np.unravel_index(np.argmin(d), d.shape)
        return f"segments {i[k[1]]} and {j[k[1]]} {d.min() * 1000:.1f} mm apart"
    return None


@pytest.mark.parametrize("name", CONFIGS)
def test_random_goals_no_accepted_path_hits_the_table_or_itself(name):
    """200 random goals inside the joint limits: every accepted one's path (sampled at 2 ms) keeps
    each link frame and the end effector above the table and non-adjacent segments apart."""
    arm, cfg, home = sim_arm(name)
    lim = arm.limits
    rng = np.random.default_rng(19)
    accepted = refused = 0
    with arm:
        for _ in range(200):
            q = lim.position_min + (lim.position_max - lim.position_min) * rng.random(arm.dof)
            try:
                arm.set_goal(Goal(arm.dof).add_waypoint(position=q))
            except CommandRejected as exc:
                assert exc.reason == "collision", exc
                refused += 1
                continue
            traj = arm.trajectory
            ts = np.arange(traj.start_time, traj.end_time + 0.002, 0.002)
            qs, _, _ = traj.get_states(np.minimum(ts, traj.end_time))
            assert independent_violation(arm.model, qs) is None
            arm.cancel_goal()
            accepted += 1
    print(f"{name}: {accepted} accepted, {refused} refused ({refused / 2:.0f} %) of 200 random in-limit goals")
    assert accepted > 40 and refused > 0


@pytest.mark.parametrize("name", CONFIGS)
def test_goal_through_the_table_names_bodies_time_and_distance(name):
    """A goal whose shoulder swings the arm down into the table is refused before any motion."""
    arm, cfg, home = sim_arm(name)
    s = next(i for i, n in enumerate(arm.model.joint_names) if "shoulder" in n.lower())
    target = home.copy()
    lo, hi = arm.limits.position_min[s], arm.limits.position_max[s]
    # the shoulder limit on the side that lowers the arm: whichever puts the end effector lower
    low = min((lo, hi), key=lambda v: arm.model.end_effector(np.where(np.arange(arm.dof) == s, v, home))[2, 3])
    target[s] = low
    with arm, pytest.raises(CommandRejected) as exc:
        arm.set_goal(Goal(arm.dof).add_waypoint(position=target))
    detail = exc.value.detail
    assert exc.value.reason == "collision" and "table" in detail and " at t = " in detail and " mm " in detail
    assert arm.trajectory is None
    print(f"{name}: {exc.value}")
