"""Collision benchmark (issue 19.8): MuJoCo's collision pipeline (hebictl.collision) against
hpp-fcl (the alternative installed with pinocchio) on the same shapes and the same pairs.

For each bundled arm with the default table and two boxes it prints, for both libraries in the
same run: collision checks per second at random joint positions, the per-cycle cost of the jog's
distance check (two queries: now and one look-ahead step), and the share of random goals inside the
joint limits refused as colliding (the same goals, the same path sampling,
``hebictl.collision.path.check_trajectory``). Target: the per-cycle check <= 100 µs per arm.
"""

from __future__ import annotations

import argparse
import time

import hppfcl
import numpy as np
from _common import REPO, median_us, table

from hebictl.collision import CollisionWorld, Proximity, workspace_from
from hebictl.collision.path import check_trajectory
from hebictl.config import load_config
from hebictl.control.admission import plan
from hebictl.control.goal import Goal
from hebictl.control.settings import limits_from
from hebictl.errors import CommandRejected
from hebictl.formats import load_model

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
OBJECTS = [{"type": "box", "name": "crate", "center": [0.35, 0.25, 0.1], "size": [0.15, 0.15, 0.2]},
           {"type": "box", "name": "shelf", "center": [-0.2, -0.35, 0.3], "size": [0.3, 0.1, 0.05]}]


class FclWorld:
    """The same shapes and pairs as a CollisionWorld, every distance from hpp-fcl (one call per pair)."""

    def __init__(self, world: CollisionWorld) -> None:
        self.robot, self.workspace, self.reach = world.robot, world.workspace, world.reach
        self.shapes = world.shapes_by_geom
        self.pairs = world.checked_pairs()
        self.geoms = [self._geom(s) for s in self.shapes]
        self.request, self.result = hppfcl.DistanceRequest(), hppfcl.DistanceResult()
        self.is_ws = [s.body < 0 and s in world.workspace.shapes for s in self.shapes]

    @staticmethod
    def _geom(s):
        if s.kind == "capsule":
            return hppfcl.Capsule(s.size[0], 2 * s.size[1])
        if s.kind == "box":
            return hppfcl.Box(*(2 * np.array(s.size)))
        if s.kind == "sphere":
            return hppfcl.Sphere(s.size[0])
        if s.kind == "cylinder":
            return hppfcl.Cylinder(s.size[0], 2 * s.size[1])
        return hppfcl.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)

    def _distances(self, q):
        poses = self.robot.link_poses(q)
        tf = []
        for s in self.shapes:
            T = s.pose if s.body < 0 else poses[s.body] @ s.pose
            tf.append(hppfcl.Transform3f(T[:3, :3], T[:3, 3]))
        out = []
        for i, j in self.pairs:
            self.result.clear()
            d = hppfcl.distance(self.geoms[i], tf[i], self.geoms[j], tf[j], self.request, self.result)
            ws = self.is_ws[i] or self.is_ws[j]
            clearance = self.shapes[i].clearance + self.shapes[j].clearance if ws else self.workspace.self_clearance
            out.append(Proximity(d - clearance, d, self.shapes[i].name, self.shapes[j].name,
                                 "workspace" if ws else "self"))
        return out

    def violations(self, q):
        return {(p.a, p.b): p for p in self._distances(q) if p.distance < 0}

    def collision(self, q):
        bad = [p for p in self._distances(q) if p.distance < 0]
        return min(bad, key=lambda p: p.distance) if bad else None

    def min_distances(self, q):
        d = self._distances(q)
        return (min((p.distance for p in d if p.kind == "self"), default=np.inf),
                min((p.distance for p in d if p.kind == "workspace"), default=np.inf))


def refused_share(checker, trajectories) -> float:
    refused = 0
    for traj in trajectories:
        try:
            check_trajectory(checker, traj)
        except CommandRejected:
            refused += 1
    return refused / len(trajectories)


def measure(name: str, goals: int) -> list[str]:
    """One table row: both libraries on one bundled arm with the table and two boxes."""
    cfg = load_config(REPO / "configs" / f"{name}.cfg.yaml")
    model = load_model(cfg.hrdf)
    world = CollisionWorld(model, workspace_from({"workspace": {"objects": OBJECTS}}))
    fcl = FclWorld(world)
    limits = limits_from(model, cfg.user_data, cfg.path)
    lo, span = limits.position_min, limits.position_max - limits.position_min
    home = np.array(cfg.user_data["home_position"], float)
    rng = np.random.default_rng(8)
    cycle = iter(np.tile(lo + span * rng.random((64, model.dof)), (400, 1)))
    mj_check = median_us(lambda: world.collision(next(cycle)), number=500, repeat=5)
    fcl_check = median_us(lambda: fcl.collision(next(cycle)), number=100, repeat=5)
    ahead = home + np.full(model.dof, 0.01)
    mj_cycle = median_us(lambda: world.approach_scale(home, ahead, 0.02, 0.5), number=500, repeat=5)
    fcl_cycle = median_us(lambda: (fcl.min_distances(home), fcl.min_distances(ahead)), number=100, repeat=5)
    rest = (home, np.zeros(model.dof), np.zeros(model.dof))
    # the goals' trajectories inside the joint limits (admission of a model without a world)
    trajectories = [plan(Goal(model.dof).add_waypoint(position=q), 0.0, rest, limits, model)
                    for q in lo + span * rng.random((goals, model.dof))]
    t = time.perf_counter()
    mj_refused = refused_share(world, trajectories)
    mj_time = time.perf_counter() - t
    t = time.perf_counter()
    fcl_refused = refused_share(fcl, trajectories)
    fcl_time = time.perf_counter() - t
    return [f"{name} ({len(world.checked_pairs())} pairs)", f"{1e6 / mj_check:,.0f}", f"{1e6 / fcl_check:,.0f}",
            f"{mj_cycle:.0f}", f"{fcl_cycle:.0f}", f"{mj_refused:.0%} ({mj_time:.1f} s)",
            f"{fcl_refused:.0%} ({fcl_time:.1f} s)"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--goals", type=int, default=30, help="random goals per arm (default 30)")
    args = ap.parse_args()
    rows = [measure(name, args.goals) for name in CONFIGS]
    table("Collision checking: MuJoCo (hebictl) vs hpp-fcl, table + 2 boxes, same shapes and pairs",
          ["arm", "checks/s MuJoCo", "checks/s hpp-fcl", "jog cycle µs MuJoCo", "jog cycle µs hpp-fcl",
           "goals refused MuJoCo", "goals refused hpp-fcl"], rows)


if __name__ == "__main__":
    main()
