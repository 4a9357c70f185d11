"""hebictl.wiring.multi on the sim: a jog of one arm toward the other slows and stops short of it
(the other arm is in its collision world at its measured pose), and without that the arms touch."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")

from hebictl.cli.run_cmd import home_position
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.group import ArmGroup
from hebictl.control.jog_law import JogLaw, JogSample
from hebictl.control.modes import Jogging
from hebictl.hardware.clock import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from sim_backend.world import arm_distance, contacts_between
from tests._support.multi import CONFIG_IDS, pair_config, through_the_other_arm
from tests._support.paths import BUNDLED_CONFIGS

SPEED = 0.6  # [rad/s] along the jog's joint-space direction (a unit vector)


class Stream:
    """A jog stream holding one sample with the dead-man down (it never expires)."""

    def __init__(self, sample: JogSample) -> None:
        self.latest = sample


def _jog_toward(tmp_path, config, target, obstacles):
    """Both arms home, then left jogs at SPEED in joint space from its home toward ``target`` until it
    has been still (every joint under 5 mrad/s) for 0.5 s, at most 30 s (simulated). Returns the
    distance [m] between the arms in the sim at the end, the cycles in contact, the deepest contact
    [m], left's final joint speed [rad/s], the jog's smallest collision scale and the group's trip."""
    clock = SimClock()
    multi = arms_from_multi_config(Arm, pair_config(tmp_path, config), "sim", clock=clock, obstacles=obstacles)
    try:
        group = ArmGroup(multi.arms)
        left = multi.arms["left"]
        homes = {e.name: home_position(e.config, multi.arms[e.name].dof) for e in multi.config.arms}
        jog, touching, deepest, scale = None, 0, 0.0, 1.0
        for k in range(int(40.0 * 200)):
            group.update()
            multi.observe()
            group.supervise()
            if k == 2:
                for name, arm in multi.arms.items():
                    g = Goal(arm.dof)
                    g.add_waypoint(position=homes[name])
                    arm.set_goal(g)
            if jog is None and k > 2 and all(a.at_goal for a in multi.arms.values()):
                way = target - homes["left"]
                direction = way / np.linalg.norm(way)
                sample = JogSample(1, "joint", SPEED * direction, True, np.inf, 1, "test")
                jog = Jogging.begin(JogLaw(left.model, left.limits), Stream(sample), sample,
                                    left.pending_command.position, measured=left.last_feedback.position)
                left.start_jog(jog)
                begun, end, still = clock.now(), clock.now() + 30.0, 0
            group.send()
            if jog is not None:
                scale = min(scale, jog.scales["collision"])
                n, depth = contacts_between(multi.physics, "left", "right")
                touching, deepest = touching + (n > 0), max(deepest, depth)
                moving = np.max(np.abs(left.last_feedback.velocity)) >= 0.005 or clock.now() - begun < 1.0
                still = 0 if moving else still + 1
                if clock.now() >= end or group.tripped is not None or still >= 100:
                    break
        speed = float(np.max(np.abs(left.last_feedback.velocity)))
        return arm_distance(multi.physics, "left", "right"), touching, deepest, speed, scale, group.tripped
    finally:
        multi.close()


@pytest.mark.parametrize("config", BUNDLED_CONFIGS, ids=CONFIG_IDS)
def test_a_jog_toward_the_other_arm_slows_and_stops_short_of_it(tmp_path, config):
    goal = through_the_other_arm(config, tmp_path)

    closest, touching, _, speed, scale, tripped = _jog_toward(tmp_path, config, goal, obstacles=True)
    _, bare_touching, bare_depth, _, _, bare_trip = _jog_toward(tmp_path, config, goal, obstacles=False)
    print(f"\n{config.name}: jog at {SPEED} rad/s toward a pose inside the other arm: stopped {closest * 1e3:.1f} mm "
          f"from it (sim), final speed {speed:.4f} rad/s, collision scale down to {scale:.3f}, {touching} cycles in "
          f"contact, group {'tripped' if tripped else 'running'}. Without the other arm as an obstacle: "
          f"{bare_touching} cycles in contact, deepest {bare_depth * 1e3:.1f} mm, group "
          f"{bare_trip.kind + ' ' + bare_trip.arm + ': ' + bare_trip.detail if bare_trip else 'running'}")
    assert tripped is None and touching == 0
    assert closest > 0.0 and scale < 0.01 and speed < 0.01
    assert bare_touching > 0
