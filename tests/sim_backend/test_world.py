"""sim_backend.world: several arms in one MuJoCo scene; each moves there as it does alone."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from sim_backend.world import arm_geoms, contacts_between
from tests._support.multi import CONFIG_IDS, pair_config
from tests._support.paths import BUNDLED_CONFIGS


def _goal_run(arm_of, cycles, goal_q):
    """Drive the arm(s): update all, give arm 'left' (or the lone arm) a goal once it has feedback,
    send all; returns the lone/left arm's true joint positions per cycle."""
    trace = []
    for k in range(cycles):
        arms = arm_of()
        for a in arms.values():
            a.update()
        lead = arms.get("left", next(iter(arms.values())))
        if k == 1:
            g = Goal(lead.dof)
            g.add_waypoint(t=1.5, position=goal_q(lead))
            lead.set_goal(g)
        for a in arms.values():
            a.send()
        trace.append(lead.backend.true_state()[0])
    return np.array(trace)


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_an_arm_in_the_shared_scene_moves_as_it_does_alone(tmp_path, config):
    """The shared scene changes nothing for an arm that touches nothing: the left arm's true joint
    trajectory through a 1.5 s goal (0.3 rad on every joint) in the two-arm scene (the other arm
    holding 1.5 m away) equals that of the same arm simulated alone, to 0.1 mrad (measured: identical
    for the first 0.245 s, then apart by at most 1.7e-5 rad (x-series-6dof); the source of that
    difference is not identified: the two models' masses, inertias, armature, options and
    contacts (none) were compared equal)."""
    def goal_q(arm):   # 0.3 rad on every joint, toward the middle of its range
        q = arm.last_feedback.position
        mid = 0.5 * (arm.limits.position_min + arm.limits.position_max)
        return q + 0.3 * np.where(mid >= q, 1.0, -1.0)

    alone = Arm.from_config(load_config(config), backend="sim", clock=SimClock())
    try:
        solo = _goal_run(lambda: {"left": alone}, 500, goal_q)
    finally:
        alone.close()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config, spacing=1.5), "sim", clock=SimClock())
    try:
        shared = _goal_run(lambda: multi.arms, 500, goal_q)
        assert contacts_between(multi.physics, "left", "right") == (0, 0.0)
        assert len(arm_geoms(multi.physics, "left")) > 5 and len(arm_geoms(multi.physics, "right")) > 5
        assert multi.arms["right"].backend.scene.actuator_offset == multi.arms["left"].backend.scene.qadr.shape[0]
    finally:
        multi.close()
    moved = float(np.max(np.abs(solo[-1] - solo[0])))
    diff = float(np.max(np.abs(shared - solo)))
    print(f"\n{config.name}: alone vs in the two-arm scene over 2.5 s: max |dq| {diff:.2e} rad (moved {moved:.3f} rad)")
    assert moved > 0.25
    assert diff < 1e-4
