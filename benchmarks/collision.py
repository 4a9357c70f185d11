"""Collision benchmark (issue 19.8): MuJoCo's collision pipeline (hebictl.collision) against
hpp-fcl (the alternative installed with pinocchio) on the same shapes and the same pairs.

For each bundled arm with the default table and two boxes it prints, for both libraries in the
same run: collision checks per second at random joint positions; the per-cycle cost of the jog's
distance check (``CollisionWorld.approach_scale``: two queries, now and one look-ahead step) as
median and p99 of single calls in CPU time of the calling thread and in wall time, and the
costliest of the 64 poses on its own (its best of 10 calls), and the CPU p99 of the calls during
which the thread was not switched out (getrusage); the share of
random goals inside the joint limits refused as colliding, and what one goal's path check costs
(``hebictl.collision.path.check_trajectory``, conservative advancement), next to the fixed sample
spacing it replaced (every sample ``step_of`` apart, the check before issue 19's second round).
Target: the per-cycle check <= 100 µs per arm, a typical goal's check < 10 ms. Last, what a
multi-arm cycle pays to put another arm's measured pose into each arm's world
(``CollisionWorld.move_other_arm``: its forward kinematics and one free-joint pose per rigid group).

Why CPU time: on a machine shared by many processes the wall time of a 20 µs call mostly measures
how often the scheduler takes the core away; the CPU time is what a cycle costs on its own core.
Both are printed.
"""

from __future__ import annotations

import argparse
import resource
import time

import hppfcl
import numpy as np
from _common import REPO, table

from hebictl.collision import CollisionWorld, Proximity, workspace_from
from hebictl.collision.path import check_trajectory, step_of
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
        self.pair_reach, self.pair_clearance = world.pair_reach, world.pair_clearance

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

    def pair_gaps(self, q):
        d = self._distances(q)
        return np.array([p.gap for p in d]), any(p.distance < 0 for p in d)

    def violations(self, q):
        return {(p.a, p.b): p for p in self._distances(q) if p.distance < 0}

    def collision(self, q):
        bad = [p for p in self._distances(q) if p.distance < 0]
        return min(bad, key=lambda p: p.distance) if bad else None

    def min_distances(self, q):
        d = self._distances(q)
        return (min((p.distance for p in d if p.kind == "self"), default=np.inf),
                min((p.distance for p in d if p.kind == "workspace"), default=np.inf))


def fixed_spacing(world: CollisionWorld, trajectory) -> int:
    """The path check before conservative advancement: samples every ``step_of`` of motion of any
    point of the arm (the sum over all joints of reach x peak speed). Returns the sample count;
    raises CommandRejected at the first sample closer than a clearance."""
    t0, t1 = float(trajectory.start_time), float(trajectory.end_time)
    speed = float(np.sum(np.abs(trajectory.peak_velocity()) * world.reach))
    count = max(int(np.ceil((t1 - t0) * speed / step_of(world))) + 1, 2)
    positions, _, _ = trajectory.get_states(np.linspace(t0, t1, count))
    for q in positions:
        hit = world.collision(q)
        if hit is not None:
            raise CommandRejected("collision", f"{hit.a} and {hit.b}")
    return count


def goal_checks(check, trajectories) -> tuple[float, float, float, float]:
    """(share refused, median CPU ms per accepted goal, largest, median samples per accepted goal)."""
    refused, times, samples = 0, [], []
    for traj in trajectories:
        t = time.thread_time()
        try:
            n = check(traj)
        except CommandRejected:
            refused += 1
            continue
        times.append((time.thread_time() - t) * 1e3)
        samples.append(n)
    if not times:
        return refused / len(trajectories), float("nan"), float("nan"), float("nan")
    return refused / len(trajectories), float(np.median(times)), float(np.max(times)), float(np.median(samples))


def _switches() -> int:
    """Context switches of this thread so far (voluntary and involuntary)."""
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_nvcsw + usage.ru_nivcsw


def per_call_us(fn, args: list, calls: int) -> tuple[float, float, float, float, float, float]:
    """(CPU median, CPU p99, wall median, wall p99, CPU p99 of the calls the scheduler did not
    interrupt, share of calls interrupted) [µs] of single calls ``fn(*args[i % len(args)])``, the
    clock reads' own cost taken off. An interrupted call pays the other processes' cache refills."""
    cpu, wall, switched = np.empty(calls), np.empty(calls), np.zeros(calls, dtype=bool)
    clock = np.empty(500)
    for i in range(clock.size):  # the same clock reads around nothing
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        clock[i] = c1 - c0
    overhead = float(np.median(clock))
    for a in args[:8]:
        fn(*a)
    for i in range(calls):
        a = args[i % len(args)]
        s0 = _switches()
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        fn(*a)
        w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        switched[i] = _switches() != s0
        cpu[i], wall[i] = c1 - c0 - overhead, w1 - w0
    cpu, wall = np.maximum(cpu, 0.0) / 1e3, wall / 1e3
    quiet = cpu[~switched] if np.any(~switched) else cpu
    return (float(np.median(cpu)), float(np.percentile(cpu, 99)), float(np.median(wall)),
            float(np.percentile(wall, 99)), float(np.percentile(quiet, 99)), float(np.mean(switched)))


def best_us(fn, args: tuple, repeat: int) -> float:
    """The smallest CPU time [µs] of ``repeat`` single calls ``fn(*args)``: the cost of that input on
    its own, which the load of other processes inflates far less than a median or a p99."""
    best = np.inf
    for _ in range(repeat):
        c0 = time.thread_time_ns()
        fn(*args)
        best = min(best, time.thread_time_ns() - c0)
    return best / 1e3


def measure(name: str, goals: int, calls: int) -> tuple[list[str], list[str], list[str]]:
    """Three table rows (per-cycle figures, goal figures, the other arm's pose update): both libraries
    on one bundled arm with the table and two boxes."""
    cfg = load_config(REPO / "configs" / f"{name}.cfg.yaml")
    model = load_model(cfg.hrdf)
    world = CollisionWorld(model, workspace_from({"workspace": {"objects": OBJECTS}}))
    fcl = FclWorld(world)
    limits = limits_from(model, cfg.user_data, cfg.path)
    lo, span = limits.position_min, limits.position_max - limits.position_min
    home = np.array(cfg.user_data["home_position"], float)
    rng = np.random.default_rng(8)
    # jog cycles: random in-limit positions, each with a random joint velocity up to 0.5 rad/s
    # looked ahead 20 ms (the jog's LOOKAHEAD)
    qs = lo + span * rng.random((64, model.dof))
    cycles = [(q, q + 0.02 * rng.uniform(-0.5, 0.5, model.dof), 0.02, 0.5) for q in qs]
    single = [(q,) for q in qs]
    mj_check = per_call_us(world.collision, single, calls)[0]
    fcl_check = per_call_us(fcl.collision, single, max(calls // 20, 64))[0]
    mj_cycle = per_call_us(world.approach_scale, cycles, calls)
    mj_worst = max(best_us(world.approach_scale, c, 10) for c in cycles)
    fcl_cycle = per_call_us(lambda q, q_next, *_: (fcl.min_distances(q), fcl.min_distances(q_next)), cycles,
                            max(calls // 20, 64))
    rest = (home, np.zeros(model.dof), np.zeros(model.dof))
    # the goals' trajectories inside the joint limits (admission of a model without a world)
    trajectories = [plan(Goal(model.dof).add_waypoint(position=q), 0.0, rest, limits, model)
                    for q in lo + span * rng.random((goals, model.dof))]
    mj = goal_checks(lambda tr: check_trajectory(world, tr), trajectories)
    before = goal_checks(lambda tr: fixed_spacing(world, tr), trajectories)
    hpp = goal_checks(lambda tr: check_trajectory(fcl, tr), trajectories)
    arm = f"{name} ({len(world.checked_pairs())} pairs)"
    cycle_row = [arm, f"{1e6 / mj_check:,.0f}", f"{1e6 / fcl_check:,.0f}",
                 f"{mj_cycle[0]:.0f} / {mj_cycle[1]:.0f}", f"{mj_cycle[4]:.0f} ({mj_cycle[5]:.0%})",
                 f"{mj_worst:.0f}",
                 f"{mj_cycle[2]:.0f} / {mj_cycle[3]:.0f}",
                 f"{fcl_cycle[0]:.0f} / {fcl_cycle[1]:.0f}", f"{fcl_cycle[2]:.0f} / {fcl_cycle[3]:.0f}"]
    goal_row = [arm, f"{mj[0]:.0%}", f"{before[0]:.0%}", f"{hpp[0]:.0%}",
                f"{mj[1]:.1f} / {mj[2]:.1f} ({mj[3]:.0f})", f"{before[1]:.1f} / {before[2]:.1f} ({before[3]:.0f})",
                f"{hpp[1]:.0f} / {hpp[2]:.0f} ({hpp[3]:.0f})"]
    other = CollisionWorld(model, workspace_from(cfg.user_data))
    index = other.add_other_arm("other", model, np.eye(4), 0.02)
    other.rebuild()
    moved = per_call_us(other.move_other_arm, [(index, q) for q in qs], calls)
    other_row = [name, str(len(other.others[index].groups)), f"{moved[0]:.1f} / {moved[1]:.1f}",
                 f"{moved[2]:.1f} / {moved[3]:.1f}"]
    return cycle_row, goal_row, other_row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--goals", type=int, default=30, help="random goals per arm (default 30)")
    ap.add_argument("--calls", type=int, default=2000, help="timed jog-cycle calls per arm (default 2000)")
    args = ap.parse_args()
    rows = [measure(name, args.goals, args.calls) for name in CONFIGS]
    table("Collision checks and the jog's per-cycle distance check: MuJoCo (hebictl) vs hpp-fcl, table + 2 boxes, "
          "same shapes and pairs (µs: median / p99 of single calls)",
          ["arm", "checks/s MuJoCo (CPU)", "checks/s hpp-fcl (CPU)", "jog cycle MuJoCo CPU µs",
           "MuJoCo CPU p99 of calls not switched out (share switched)", "costliest pose MuJoCo CPU µs (best of 10)",
           "jog cycle MuJoCo wall µs", "jog cycle hpp-fcl CPU µs",
           "jog cycle hpp-fcl wall µs"], [r[0] for r in rows])
    table(f"{args.goals} random in-limit goals from home per arm: share refused, CPU ms per accepted goal's path "
          "check (median / max, median samples)",
          ["arm", "refused MuJoCo", "refused fixed spacing", "refused hpp-fcl", "MuJoCo conservative advancement",
           "MuJoCo fixed spacing (before)", "hpp-fcl conservative advancement"], [r[1] for r in rows])
    table("Another arm's measured pose into this arm's world, once per multi-arm cycle (µs: median / p99 of "
          "single calls)", ["arm", "rigid groups", "move_other_arm CPU µs", "move_other_arm wall µs"],
          [r[2] for r in rows])


if __name__ == "__main__":
    main()
