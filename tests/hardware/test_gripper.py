"""The simulated gripper spool against the closed-form solution of its first-order model.

Below its speed limit the spool follows b·p' = τ - k·p, so from p0 under a constant effort τ:
p(t) = τ/k + (p0 - τ/k)·exp(-k t / b) (until an end stop).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.errors import ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import SimClock
from hebictl.hardware.gripper import SimulatedGripper


def _effort(tau: float) -> Command:
    cmd = Command.empty(1)
    cmd.effort[0] = tau
    return cmd


def test_first_order_response_matches_closed_form():
    clock = SimClock()
    k, b, travel = 2.0, 1.0, 1.5
    g = SimulatedGripper(clock=clock, spring=k, damping=b, travel=travel, max_speed=100.0, command_lifetime=0.0)
    tau = -2.0                         # settles at p = tau/k = -1 rad, inside the travel
    g.write(_effort(tau))
    fb = Feedback.empty(1)
    for t in (0.1, 0.3, 0.7, 1.5, 3.0):
        clock.sleep_until(t)
        assert g.read(fb)
        expected = tau / k + (0.0 - tau / k) * math.exp(-k * t / b)
        assert fb.position[0] == pytest.approx(expected, abs=2e-3)        # 1 ms explicit Euler steps
    assert g.opening == pytest.approx(1.0 - 1.0 / travel, abs=2e-3)


def test_end_stops_speed_limit_and_command_lifetime():
    clock = SimClock()
    g = SimulatedGripper(clock=clock, max_speed=1.5, command_lifetime=0.25)
    fb = Feedback.empty(1)
    g.write(_effort(-5.0))
    clock.advance(0.1)
    g.read(fb)
    assert fb.velocity[0] == pytest.approx(-1.5)                           # rated speed, not τ/b
    g.write(_effort(-5.0))
    clock.advance(0.2)
    g.write(_effort(-5.0))
    clock.advance(1.0)                 # the command expired 0.25 s after the last write
    g.read(fb)
    assert fb.effort[0] == 0.0 and fb.effort_command[0] == -5.0
    assert -1.5 < fb.position[0] < 0.0                                     # spring reopening it
    for _ in range(20):
        g.write(_effort(-5.0))
        clock.advance(0.1)
    g.read(fb)
    assert fb.position[0] == -1.5 and g.opening == 0.0                     # end stop
    assert np.isnan(fb.position_command[0]) and fb.sequence > 0


def test_bad_settings_and_closed_backend():
    with pytest.raises(ConfigError):
        SimulatedGripper(clock=SimClock(), travel=0.0)
    with pytest.raises(ConfigError):
        SimulatedGripper(("a", "b"), ("F", "F"), clock=SimClock())
    g = SimulatedGripper(clock=SimClock())
    g.close()
    with pytest.raises(HardwareError):
        g.read(Feedback.empty(1))
