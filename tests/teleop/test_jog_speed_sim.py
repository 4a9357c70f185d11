"""Issue 29 (no catch-up after a late cycle), every bundled config on the sim backend, in simulated time:
a joint or Cartesian jog, from rest and after a 20/100/300/800 ms stall before the read or between
update() and send(); the end effector's speed measured on the sim's physics (its true joint state, one
sample per cycle) never exceeds 1.05x the commanded jog speed at the end effector.

The commanded speed: the Cartesian twist's (5 cm/s), or for a joint jog the end-effector speed the
jogged joint velocity gives at the arm's measured pose (``|J(q) qdot_cmd|``). A stall longer than the
command lifetime ends the jog in a latched ``control_gap`` stop: the brake's speed is then judged
against the same bound."""

from __future__ import annotations

import numpy as np
import pytest

from tests.teleop.jog_rig import CONFIGS, jog_arm, start

pytest.importorskip("mujoco")

SPEED = 0.05  # [m/s] the Cartesian jog's commanded end-effector speed
TWIST = np.array([0.0, 0.0, SPEED, 0.0, 0.0, 0.0])  # straight up: away from the table
JOINT_SPEED = 0.15  # [rad/s] the joint jog: the base (a sweep about the vertical: no limit, no table)
STALLS = (0.0, 0.02, 0.1, 0.2, 0.3, 0.8)
LIFETIME = 0.25  # [s] every bundled config's command_lifetime
BOUND = 1.05


def trace(arm, clock, seconds, rows, stall=0.0, where=""):
    """Run ``seconds`` of cycles (the first one stalled ``stall`` [s] ``where``), appending (time, true q)."""
    end = clock.now() + stall + seconds
    first = True
    while clock.now() < end - 1e-9:
        if first and stall and where == "before the read":
            clock.advance(stall)
        arm.update()
        if first and stall and where == "between update and send":
            clock.advance(stall)
        arm.send()
        first = False
        rows.append((clock.now(), arm.backend.true_state()[0][:arm.dof].copy()))


def speed_ratio(arm, rows, commanded):
    """The measured end-effector speed over the commanded one (``commanded(q)`` [m/s]), per cycle."""
    t = np.array([r[0] for r in rows])
    q = np.array([r[1] for r in rows])
    keep = np.concatenate([[True], np.diff(t) > 1e-9])
    t, q = t[keep], q[keep]
    ee = np.array([arm.model.end_effector(qi)[:3, 3] for qi in q])
    v = np.linalg.norm(np.diff(ee, axis=0), axis=1) / np.diff(t)
    c = np.array([commanded(qi) for qi in q[1:]])
    return v / c


@pytest.mark.parametrize("space", ["cartesian", "joint"])
@pytest.mark.parametrize("where", ["before the read", "between update and send"])
@pytest.mark.parametrize("name", CONFIGS)
def test_end_effector_speed_after_a_stall_is_within_1_05x_the_commanded(name, where, space):
    figures = []
    for stall in STALLS:
        arm, clock, jog, mailbox, _ = jog_arm(name)
        with arm:
            if space == "cartesian":
                velocity = TWIST

                def commanded(q):
                    return SPEED
            else:
                velocity = np.zeros(arm.dof)
                velocity[0] = JOINT_SPEED

                def commanded(q, v=velocity, model=arm.model):
                    return float(np.linalg.norm((model.jacobian_end_effector(q) @ v)[:3]))
            start(arm, jog, mailbox, space, velocity)
            rows: list = []
            trace(arm, clock, 0.6, rows)  # from rest, to full speed
            if stall:
                rows = []  # from the first sample after the gap (the gap is the modules', not the jog's)
                trace(arm, clock, 0.5, rows, stall, where)
            assert arm.command_lifetime == LIFETIME
            events = [e.kind.value for e in arm.events.events]
            figures.append((stall, speed_ratio(arm, rows, commanded), jog.active, events))
    for stall, ratio, active, events in figures:
        what = "from rest" if not stall else f"after a {stall * 1e3:.0f} ms stall {where}"
        print(f"\n{name} {space} jog {what}: EE peak {ratio.max():.3f}x commanded, first cycle "
              f"{ratio[0]:.3f}x, later {ratio[1:].max():.3f}x ({'jogging' if active else 'stopped'}; events {events})",
              end="")
    for stall, ratio, active, events in figures:
        if stall < LIFETIME:  # the modules held the jog's last command: the jog goes on, no catch-up
            assert active and not events
            assert ratio.max() <= BOUND
        else:  # the modules went limp (the arm fell): a latched control_gap stop brakes from that speed
            assert not active and "control_gap" in events
            assert ratio[1:].max() <= max(ratio[0], BOUND)
