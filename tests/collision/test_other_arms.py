"""The other arms in an arm's collision world (CollisionWorld.add_other_arm, wiring.multi), checked
against the shared MuJoCo scene of the sim, which places the same arms by another route."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")

from hebictl.cli.run_cmd import home_position
from hebictl.collision.attach import world_of
from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from sim_backend.world import arm_distance
from tests._support.multi import CONFIG_IDS, pair_config, through_the_other_arm
from tests._support.paths import BUNDLED_CONFIGS


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_the_distance_to_the_other_arm_is_the_shared_scenes(tmp_path, config):
    """Left moving from home toward a pose inside right (right at home): the closest distance
    between the arms in left's collision world (right placed by hebictl's FK and the relative base
    pose) equals MuJoCo's mj_geomDistance in the sim's shared scene (right attached at its base by
    MjSpec) to 1 mm, wherever the world reports it (within its horizon)."""
    goal = through_the_other_arm(config, tmp_path)
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=SimClock())
    try:
        left, right = multi.arms["left"], multi.arms["right"]
        world = world_of(left.model)
        start = home_position(multi.config.arms[0].config, left.dof)
        home_r = home_position(multi.config.arms[1].config, right.dof)
        world.move_other_arm(0, home_r)
        d = multi.physics.data
        d.qpos[right.backend.scene.qadr] = home_r
        worst, compared = 0.0, 0
        for s in np.linspace(0.0, 1.0, 41):
            q = start + s * (goal - start)
            geom, gap = world.pairs(q)
            mine = [float(g) for (a, b), g in zip(geom, gap, strict=True)
                    if "right/" in world.shapes_by_geom[a].name + world.shapes_by_geom[b].name]
            d.qpos[left.backend.scene.qadr] = q
            sim = arm_distance(multi.physics, "left", "right")
            if mine and sim < 0.05:
                worst = max(worst, abs(min(mine) - sim))
                compared += 1
            elif sim < 0.05:
                pytest.fail(f"the sim has the arms {sim * 1e3:.1f} mm apart at s={s:.3f}; the world reports no pair")
    finally:
        multi.close()
    print(f"\n{config.name}: {compared} poses within 5 cm: world vs shared scene, worst |difference| "
          f"{worst * 1e6:.2f} µm")
    assert compared >= 5
    assert worst < 0.001
