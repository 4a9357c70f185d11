"""Contact monitor on the sim with MuJoCo contacts: a fixed box in the path and a table below,
every bundled config, the fastest accepted goal (untimed: retimed to the rated speed).

Targets (issue 18): detected within 50 ms of the first touch at the config's feedback rate; after
detection a steady push of at most 20 N, and a stop releases it (<= 20 N). The contact force is
MuJoCo's (an independent measurement, not the controller's estimate); the figures are printed."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.collision.attach import attach
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from sim_backend.obstacles import Box, add_contact_boxes, contact_force
from tests._support.corpus import CORPUS_DIR
from tests.control.monitors.rig import CONFIGS, Trace, first_event, sim_arm

pytest.importorskip("mujoco")

TOOL = 0.03  # [m] tool sphere radius


def _box_in_path(arm) -> None:
    """A 8 x 8 x 30 cm post 0.6 rad ahead of the tool along the base rotation."""
    q = arm.backend.true_state()[0]
    ee = arm.model.end_effector(q)[:3, 3]
    c, s = np.cos(0.6), np.sin(0.6)
    add_contact_boxes(arm.backend, [Box((c * ee[0] - s * ee[1], s * ee[0] + c * ee[1], ee[2]), (0.04, 0.04, 0.15))],
                      tool_radius=TOOL)


def _lowering_goal(arm, home: np.ndarray) -> np.ndarray:
    """Home with the shoulder, elbow or wrist moved up to 0.5 rad, the way that lowers the end
    effector most within the limits."""
    z0 = arm.model.end_effector(home)[2, 3]
    best, drop = home, 0.0
    for j in (1, 2, 3):
        for d in (-0.5, -0.3, 0.3, 0.5):
            q = home.copy()
            q[j] += d
            if not (arm.limits.position_min[j] <= q[j] <= arm.limits.position_max[j]):
                continue
            dz = z0 - arm.model.end_effector(q)[2, 3]
            if dz > drop:
                best, drop = q, dz
    assert drop > 0.06, "no lowering move found"
    return best


def _table(arm) -> None:
    """A table top 3 cm below the tool that nobody declared: the config's collision world is taken
    off, as the contact monitor is there for what the collision model does not know (a goal into
    the declared table is refused before it moves: tests/control/test_admission_collision.py)."""
    attach(arm.model, None)
    q = arm.backend.true_state()[0]
    ee = arm.model.end_effector(q)[:3, 3]
    top = ee[2] - TOOL - 0.03
    add_contact_boxes(arm.backend, [Box((ee[0], ee[1], top - 0.02), (0.6, 0.6, 0.02), "table")], tool_radius=TOOL)


def _run(config: str, scene, goal, behaviour: str = "stop"):
    opts = {}
    arm, clock, home = sim_arm(config, before_start=scene, **opts)
    arm.safety.monitors["contact"]["reaction"] = behaviour
    arm.monitors.contact.reaction = behaviour
    arm.set_goal(Goal(arm.dof).add_waypoint(position=goal(arm, home)))
    tr = Trace()
    tr.run(arm, clock, 2.0, probe=lambda: contact_force(arm.backend))
    t, _, _, _, F = tr.arrays()
    touched = F > 1.0
    assert touched.any(), f"{config}: the tool never touched the obstacle"
    t_touch = float(t[np.argmax(touched)])
    t_detect = first_event(arm, EventKind.CONTACT)
    assert t_detect is not None, f"{config}: contact not detected; peak {F.max():.1f} N"
    steady = float(F[t > t[-1] - 0.5].max())
    arm.stop()
    tr2 = Trace()
    tr2.run(arm, clock, 1.0, probe=lambda: contact_force(arm.backend))
    after_stop = float(tr2.arrays()[4][-40:].max())
    return arm, t_touch, t_detect, float(F.max()), steady, after_stop


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("where", ["box", "table"])
def test_contact_detected_within_50ms_and_push_released(config, where):
    scene, goal = ((_box_in_path, lambda arm, home: home + np.eye(arm.dof)[0] * 1.5) if where == "box"
                   else (_table, _lowering_goal))
    arm, t_touch, t_detect, peak, steady, after_stop = _run(config, scene, goal)
    with arm:
        delay = t_detect - t_touch
        print(f"\n{config} {where}: detected {delay * 1e3:.0f} ms after the touch "
              f"(feedback {arm.backend.feedback_frequency:.0f} Hz), peak {peak:.1f} N, steady {steady:.1f} N, "
              f"after stop() {after_stop:.1f} N")
        assert delay <= 0.050
        assert steady <= 20.0 and after_stop <= 20.0
        assert arm.state is ArmState.STOPPED and arm.stop_behaviour is StopBehaviour.HOLD
        ev = next(e for e in arm.events.events if e.kind is EventKind.CONTACT)
        assert "residual" in ev.detail and "N·m" in ev.detail


def test_contact_reaction_damp_lets_go():
    """reaction: damp: the latched stop damps (no position target), the push goes away."""
    arm, t_touch, t_detect, peak, steady, after_stop = _run(
        "x-series-6dof", _box_in_path, lambda arm, home: home + np.eye(arm.dof)[0] * 1.5, behaviour="damp")
    with arm:
        print(f"\nx-series-6dof box, damp: detected {(t_detect - t_touch) * 1e3:.0f} ms after the touch, "
              f"steady {steady:.1f} N")
        assert arm.events.kinds()[-2] is EventKind.CONTACT or EventKind.CONTACT in arm.events.kinds()
        assert steady <= 20.0
        contact = next(e for e in arm.events.events if e.kind is EventKind.CONTACT)
        assert contact.detail.endswith("[damp]")


def test_no_contact_event_in_free_motion():
    """The fastest accepted goal through free space on x6: no contact, residual well under the bound."""
    arm, clock, home = sim_arm("x-series-6dof")
    with arm:
        target = home.copy()
        target[0] += 2.0
        target[1] += 0.4
        arm.set_goal(Goal(arm.dof).add_waypoint(position=target))
        peak = np.zeros(arm.dof)
        while arm.goal_progress < 1.0:
            arm.update()
            arm.send()
            peak = np.maximum(peak, np.abs(arm.monitors.residual))
        ratio = float(np.max(peak / arm.monitors.contact.threshold))
        print(f"\nfree motion: peak residual / threshold = {ratio:.3f}")
        assert EventKind.CONTACT not in arm.events.kinds()
        assert ratio < 0.5


ROSIE = CORPUS_DIR / "hebi" / "hebi-python-examples" / "kits" / "rosie" / "config" / "rosie-t.cfg.yaml"


@pytest.mark.skipif(not ROSIE.is_file(), reason="../shared/corpus not found: the rosie-t comparison is skipped")
def test_a_torque_no_load_explains_is_no_contact_and_a_push_is_still_caught():
    """rosie-t on the sim with its gas spring (7 N·m on the shoulder the model lacks, cancelled by
    the config's EffortOffset) rests: the rest estimate reads it as a negative load (no load fits
    a torque on one joint), which must not stop the arm as a contact (the elbow's share of the
    misfit, 3.6 N·m, stopped it 10 ms after the estimate); a 20 N push on the tool, measured by
    MuJoCo, is still caught within 50 ms. Figures printed."""
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import SimClock

    q0 = np.array([0.01, 1.0, 1.5, 1.5, -1.5, 0.01])
    arm = Arm.from_config(ROSIE, backend="sim", clock=SimClock(), initial_position=q0, gas_spring=[0, 7, 0, 0, 0, 0])
    try:
        data, tool = arm.backend.mj_data, arm.backend.mj_model.nbody - 1
        ratio, t_push = 0.0, None
        for i in range(300):
            if i == 150:
                data.xfrc_applied[tool, :3] = (0.0, 0.0, -20.0)
                t_push = arm.clock.now()
            arm.update()
            arm.send()
            if t_push is None and arm.monitors.contact.armed:
                ratio = max(ratio, arm.monitors.contact.ratio)
        mass = arm.payload_estimate["extra_mass_kg"]
        t_contact = first_event(arm, EventKind.CONTACT)
        print(f"rosie-t + gas spring: estimate {mass:+.2f} kg, residual/bound at rest {ratio:.2f}; "
              f"20 N push caught {None if t_contact is None else round((t_contact - t_push) * 1e3)} ms after it")
        assert mass < -0.5 and ratio < 1.0  # the spring read as no load, and no contact at rest
        assert t_contact is not None and 0.0 <= t_contact - t_push <= 0.05
    finally:
        arm.close()
