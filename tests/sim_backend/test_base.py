"""sim_backend.base: the simulated mobile base (a chassis on wheel modules in their velocity loop)
is physical: wheels driven alike turn the chassis in place at the rim speed over the wheels'
radius, an expired command switches the motors off (the wheels coast down through the floor's
friction rather than stop at once), and it takes velocity commands only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.errors import CommandRejected
from hebictl.hardware import SimClock
from hebictl.hardware.base import Command, Feedback

pytest.importorskip("mujoco")

from sim_backend.base import open_sim_base


def make(lifetime: float = 0.25):
    clock = SimClock()
    base = open_sim_base(names=["W1", "W2", "W3"], families="Rosie", clock=clock, rated_speed=11.52, rated_effort=8.0,
                         feedback_frequency=200.0, command_lifetime=lifetime)
    return base, clock


def drive(base, clock, v: float, seconds: float) -> Feedback:
    fb = Feedback.empty(3)
    cmd = Command(np.full(3, np.nan), np.full(3, v), np.full(3, np.nan))
    for _ in range(round(seconds * 200)):
        base.read(fb)
        base.write(cmd)
    return fb


def test_wheels_driven_alike_turn_the_chassis_in_place():
    base, clock = make()
    fb = drive(base, clock, 5.0, 1.0)
    yaw0 = base.chassis()[1]
    drive(base, clock, 5.0, 0.2)
    xyz, yaw1 = base.chassis()
    rate = ((yaw1 - yaw0 + math.pi) % (2 * math.pi) - math.pi) / 0.2
    rim = 5.0 * 0.0762 / 0.158   # [rad/s] the wheels' rim speed over their distance from the centre
    print(f"\n[sim] wheels at {fb.velocity.round(3)} rad/s turn the chassis at {rate:.3f} rad/s "
          f"(rim speed / radius {rim:.3f}); chassis moved {np.linalg.norm(xyz[:2]) * 1e3:.1f} mm")
    assert np.allclose(fb.velocity, 5.0, atol=0.1)
    assert abs(abs(rate) - rim) < 0.1 * rim and np.linalg.norm(xyz[:2]) < 0.02


def test_an_expired_command_switches_the_motors_off_and_the_wheels_coast():
    base, clock = make(lifetime=0.1)
    fb = drive(base, clock, 5.0, 1.0)
    t0 = clock.now()
    speeds = []
    while clock.now() - t0 < 1.0:   # no more commands
        base.read(fb)
        speeds.append((clock.now() - t0, float(fb.velocity.mean())))
    at_expiry = [v for t, v in speeds if t <= 0.1][-1]
    after = [v for t, v in speeds if 0.15 <= t <= 0.2]
    print(f"\n[sim] command expired after 0.1 s: wheels at {at_expiry:.2f} rad/s then, {after[-1]:.2f} rad/s "
          f"0.1 s later, {speeds[-1][1]:.2f} rad/s after 1 s; echo {fb.velocity_command}")
    assert at_expiry > 4.5 and 0.0 < after[-1] < at_expiry and np.isnan(fb.velocity_command).all()


def test_it_takes_velocity_commands_only_and_drops_feedback_when_told():
    base, clock = make()
    with pytest.raises(CommandRejected, match="not_velocity"):
        base.write(Command(np.zeros(3), np.zeros(3), np.full(3, np.nan)))
    fb = Feedback.empty(3)
    assert base.read(fb)
    base.faults.drop_feedback(start=clock.now(), duration=0.05)
    assert not base.read(fb, 0.01) and not base.read(fb, 0.01)
    clock.advance(0.05)
    assert base.read(fb)
