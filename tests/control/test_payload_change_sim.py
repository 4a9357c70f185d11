"""A load picked up or let go of in the middle of a goal, on the sim, every bundled config (issue 29's
check: "the unknown-payload rows (0.5-3 kg, centre of mass off axis, picked up and dropped mid-goal)").

The fastest goal from home turning the base alone by 1 rad (the end effector's height does not
change along it, so a vertical travel is the load's doing); 0.6 s into it the simulated tool picks up
a load the controller is not told of (``SimBackend.set_payload``: 0.5, 1.5 or 3 kg, its centre of mass
3 cm off the end-effector axis and 4 cm out), or lets go of one it has carried since before the goal
(1.5 or 3 kg, estimated at rest first, so fed forward). Measured on the physical state: the peak joint
speed against rated, the end effector's vertical travel after the change (down: a sag under the new
load; up: the arm springing up when the load it carries goes), where the arm ends and whether it is
still. The figures are printed. References: MuJoCo's state (the controller's estimates are not used
to judge it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

from hebictl.control.goal import Goal
from tests.control.monitors.rig import CONFIGS, sim_arm

pytest.importorskip("mujoco")

COM = (0.03, 0.0, 0.04)  # [m] the load's centre of mass, end-effector frame
CHANGE_AT = 0.6  # [s] into the goal
PICKED_UP = (0.5, 1.5, 3.0)  # [kg]
LET_GO = (1.5, 3.0)  # [kg]
#: [m] the end effector moves less than this over the last second of the run: the arm holds still
STILL_M = 0.002


@dataclass(frozen=True)
class Change:
    peak: float       # the largest |joint speed| / rated over the run
    down: float       # [m] the end effector's lowest point after the change, below where it was then
    up: float         # [m] its highest point above it
    above: float      # [m] the most the end effector rose above its commanded height after the change
    drift: float      # [m] its travel over the last second
    mode: str
    events: tuple[str, ...]
    let_go: bool      # a model_mismatch event said the estimated load is gone


@functools.cache
def run(config: str, before: float, after: float) -> Change:
    """The goal with ``before`` kg held (estimated at rest first), ``after`` kg from CHANGE_AT on."""
    arm, clock, home = sim_arm(config, payload={"mass": before, "com": COM}, settle=300)
    with arm:
        ff = arm.payload_feedforward
        for _ in range(1200):  # a carried load: its estimate fed forward in full before the goal (r6 with
            if not before or (ff.mass > 0.0 and ff.mass == ff.target):  # 3 kg rings for 2 s before its rest)
                break
            arm.update()
            arm.send()
        assert not before or ff.mass > 0.5 * before, (config, before, ff.mass)
        target = home.copy()
        target[0] += 1.0  # the base alone: the end effector's height is the goal's at every instant
        arm.set_goal(Goal(arm.dof).add_waypoint(position=target))
        start, changed_at = clock.now(), None
        rated = arm.limits.velocity_max
        peak, z, t, ee, above = 0.0, [], [], [], -np.inf
        while clock.now() < start + 6.0:
            arm.update()
            arm.send()
            if changed_at is None and clock.now() - start >= CHANGE_AT:
                arm.backend.set_payload(after, COM)
                changed_at = clock.now()
            q, qd = arm.backend.true_state()
            peak = max(peak, float(np.max(np.abs(qd) / rated)))
            p = arm.model.end_effector(q)[:3, 3]
            ee.append(p)
            t.append(clock.now())
            if changed_at is not None:
                z.append(p[2])
                above = max(above, p[2] - arm.model.end_effector(arm.pending_command.position)[2, 3])
        times, path = np.array(t), np.array(ee)
        last = path[times >= times[-1] - 1.0]
        rise = np.array(z) - z[0]
        return Change(peak, float(-rise.min()), float(rise.max()), float(above),
                      float(np.max(np.linalg.norm(last - last[0], axis=1))), arm.mode.value,
                      tuple(e.kind.value for e in arm.events.events),
                      any("let go of" in e.detail for e in arm.events.events))


def _line(config: str, before: float, after: float, c: Change) -> str:
    return (f"  {config} {before:.1f} -> {after:.1f} kg: peak {c.peak:.2f}x rated, after the change down "
            f"{c.down * 1e3:.1f} mm / up {c.up * 1e3:.1f} mm (at most {c.above * 1e3:.1f} mm above the command), "
            f"last second {c.drift * 1e3:.2f} mm, mode {c.mode}, events {list(c.events)}")


@pytest.mark.parametrize("config", CONFIGS)
def test_a_load_picked_up_mid_goal_is_caught_and_held(config):
    """Picked up mid-goal: named (a contact stop, 15-30 ms after the change), within rated speed, and the
    arm ends still (up to 1.5 kg, the arms' rated range). The sag is printed, not bounded: the latched
    hold carries the load on the position loop (measured 2026-12-04: 30-44 mm at 0.5 kg, 73-110 mm at
    1.5 kg, 137-178 mm at 3 kg; docs/monitors.md states it as not fixed)."""
    rows = [(m, run(config, 0.0, m)) for m in PICKED_UP]
    print(f"\n{config}, a load picked up {CHANGE_AT} s into the fastest goal:\n"
          + "\n".join(_line(config, 0.0, m, c) for m, c in rows))
    for m, c in rows:
        assert c.peak <= 1.05, (m, c)
        assert c.mode in ("hold", "follow"), (m, c)
        assert m > 1.5 or c.drift < STILL_M, (m, c)  # 3 kg is beyond the arms' rated load (docs/supervisor.md)
        assert "contact" in c.events or "model_mismatch" in c.events, (m, c)  # the change is named


@pytest.mark.parametrize("config", CONFIGS)
def test_a_load_let_go_of_mid_goal_is_named_and_the_arm_ends_still(config):
    """Let go of mid-goal: within rated speed, named (a contact or mismatch event), the arm ends still."""
    rows = [(m, run(config, m, 0.0)) for m in LET_GO]
    print(f"\n{config}, a carried load let go of {CHANGE_AT} s into the fastest goal:\n"
          + "\n".join(_line(config, m, 0.0, c) for m, c in rows))
    for m, c in rows:
        assert c.peak <= 1.05, (m, c)
        assert c.drift < STILL_M, (m, c)
        assert any(k in c.events for k in ("contact", "model_mismatch", "tracking_error")), (m, c)


#: [m] after a carried load is let go of, the end effector rises no more than this above its command
#: (the arm may rise toward its command: a load's sag on the position loop gives way)
ABOVE_M = 0.015


@pytest.mark.parametrize("config", CONFIGS)
def test_a_load_let_go_of_does_not_spring_the_arm_up(config):
    """The estimated load's feed-forward leaves with the load (the model-mismatch monitor's ``let_go``,
    three judged samples after the re-baselined residual reads the weight gone: 15-20 ms). Fed forward
    until the estimate's ramp ran out, as before, the vanished weight sprang the end effector up
    79-762 mm (measured 2026-12-04: x6 111 / 762 mm for 1.5 / 3 kg, x5 79 / 616, x7 105 / 505, r6 158;
    now 4.3-52 mm of rise, at most 0.4-10.6 mm above the command)."""
    for m in LET_GO:
        c = run(config, m, 0.0)
        assert c.let_go, (m, c)
        assert c.above <= ABOVE_M, (m, c)
