"""Multi-arm configs for tests: two arms of one bundled robot config side by side, and a run of them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from tests._support.paths import BUNDLED_CONFIGS


def pair_config(folder: Path, config: Path, spacing: float = 0.6, clearance: float = 0.02,
                names: tuple[str, str] = ("left", "right")) -> Path:
    """A multi-arm config in ``folder``: arms ``left`` (y = +spacing/2) and ``right`` (y = -spacing/2)
    of ``config`` (or ``names``), both facing +x, families Left/Right."""
    tag = "" if names == ("left", "right") else "-" + "-".join(names)
    path = folder / f"{config.name.split('.')[0]}-pair{tag}.multi.yaml"
    a, b = names
    path.write_text(
        f"multi_arm: 1\narm_clearance: {clearance}\narms:\n"
        f"  - {{name: {a}, config: {config.as_posix()}, base: {{xyz: [0, {spacing / 2}, 0]}}, families: [Left]}}\n"
        f"  - {{name: {b}, config: {config.as_posix()}, base: {{xyz: [0, {-spacing / 2}, 0]}}, families: [Right]}}\n")
    return path


CONFIG_IDS = [p.name.split(".")[0] for p in BUNDLED_CONFIGS]


def run_args(**flags: Any) -> argparse.Namespace:
    """``hebictl run``'s flags as a multi-arm run reads them."""
    args = argparse.Namespace(no_home=False, arm_goal=None, hold=0.5, stop_hold=0.5, rate=None, goal=None,
                              record=None, plot=None, no_arm_obstacles=False, backend="sim",
                              quiet=False, rt_priority=0, cpu=None)
    vars(args).update(flags)
    return args


def through_the_other_arm(config: Path, tmp_path: Path, away: float | None = None) -> np.ndarray:
    """A goal for arm left whose end pose is >= 2 cm inside arm right at its home, and whose straight
    joint path from left's home is clear of left's own body and its table: found by a seeded random
    search on left's collision world (the admission then decides on the real trajectory). With
    ``away`` [rad], the path is also clear of right at its home turned by ``away`` on its base joint."""
    from hebictl.cli.run_cmd import home_position
    from hebictl.collision.attach import world_of
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import SimClock
    from hebictl.wiring.multi import arms_from_multi_config

    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "mock", clock=SimClock())
    try:
        left, right = multi.arms["left"], multi.arms["right"]
        world = world_of(left.model)
        home = home_position(multi.config.arms[1].config, right.dof)
        world.move_other_arm(0, home)
        rng = np.random.default_rng(1)
        lo, hi = left.limits.position_min, left.limits.position_max
        start = home_position(multi.config.arms[0].config, left.dof)
        best = None
        for _ in range(3000):
            q = lo + (hi - lo) * rng.random(left.dof)
            v = world.violations(q).values()
            theirs = [p.gap for p in v if "right/" in p.a + p.b]
            if not theirs or len(theirs) != len(v) or min(theirs) > -0.02 or (best and min(theirs) > best[0]):
                continue
            path = (start + s * (q - start) for s in np.linspace(0.0, 1.0, 60))
            if all("right/" in p.a + p.b for x in path for p in world.violations(x).values()) and \
                    (away is None or _clear_of(world, start, q, home + np.eye(right.dof)[0] * away, home)):
                best = (min(theirs), q)
        assert best is not None, "no goal through the other arm found"
        return best[1]
    finally:
        multi.close()


def _clear_of(world: Any, start: np.ndarray, q: np.ndarray, other: np.ndarray, back: np.ndarray) -> bool:
    """The straight path start -> q clear of the other arm at ``other`` by 1 cm more than its
    clearance (the other arm is put back at ``back`` after)."""
    world.move_other_arm(0, other)
    try:
        path = (start + s * (q - start) for s in np.linspace(0.0, 1.0, 60))
        return all((p := world.other_arms_distance(x)) is None or p.distance > 0.01 for x in path)
    finally:
        world.move_other_arm(0, back)


def follower_into_leader(config: Path, tmp_path: Path) -> np.ndarray:
    """Joint positions q for a leader (``leader``, the first arm of :func:`pair_config`, y = +0.3 m) and
    its follower (``follower``, y = -0.3 m) of ``config``: the follower at q is >= 2 cm inside the
    leader at q, while the leader's straight joint path from home to q is clear of everything (the
    follower at home included: its own goal is admitted) and the follower's is clear of all but the
    leader. Found by a seeded random search on the two collision worlds (mock backend)."""
    from hebictl.cli.run_cmd import home_position
    from hebictl.collision.attach import world_of
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import SimClock
    from hebictl.wiring.multi import arms_from_multi_config

    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config, names=("leader", "follower")), "mock",
                                   clock=SimClock())
    try:
        leader, follower = multi.arms["leader"], multi.arms["follower"]
        lw, fw = world_of(leader.model), world_of(follower.model)
        home = home_position(multi.config.arms[0].config, leader.dof)
        lw.move_other_arm(0, home)
        rng = np.random.default_rng(2)
        lo, hi = leader.limits.position_min, leader.limits.position_max
        best = None
        for _ in range(4000):
            q = lo + (hi - lo) * rng.random(leader.dof)
            fw.move_other_arm(0, q)
            v = fw.violations(q).values()
            theirs = [p.gap for p in v if "leader/" in p.a + p.b]
            if not theirs or len(theirs) != len(v) or min(theirs) > -0.02 or (best and min(theirs) > best[0]):
                continue
            if _both_paths_clear(lw, fw, home, q):
                best = (min(theirs), q)
        assert best is not None, "no pose found where the follower runs into the leader"
        return best[1]
    finally:
        multi.close()


def _both_paths_clear(lw: Any, fw: Any, home: np.ndarray, q: np.ndarray) -> bool:
    for s in np.linspace(0.0, 1.0, 40):
        x = home + s * (q - home)
        if lw.violations(x):
            return False
        fw.move_other_arm(0, x)
        if any("leader/" not in p.a + p.b for p in fw.violations(x).values()):
            return False
    return True

