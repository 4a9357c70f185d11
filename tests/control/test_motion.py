"""The per-cycle rate limiter and the brake ramp (hebictl.control.motion)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.motion import Brake, RateLimiter, shrink_recovery
from hebictl.control.safety import Limits


def test_rate_limiter_moves_at_most_rated_speed_and_starts_from_the_measurement():
    lim = RateLimiter(np.array([2.0, 1.0]))
    measured = np.array([0.0, 0.0])
    pos, vel = np.array([1.0, -1.0]), np.zeros(2)
    assert lim.apply(pos, vel, 0.01, measured)  # first call: from the measured position
    np.testing.assert_allclose(pos, [0.02, -0.01])
    np.testing.assert_allclose(vel, [2.0, -1.0])  # the speed the joint is really moved at
    for _ in range(200):
        pos, vel = np.array([1.0, -1.0]), np.zeros(2)
        lim.apply(pos, vel, 0.01, measured)
    np.testing.assert_allclose(pos, [1.0, -1.0])  # reached after 0.5 s / 1 s, never faster
    pos = np.array([np.nan, -1.0])
    assert not lim.apply(pos, np.zeros(2), 0.01, measured)
    assert np.isnan(pos[0]) and np.isnan(lim.last[0])  # not commanded: passes, forgets
    pos = np.array([1.0, -1.0])
    lim.apply(pos, np.zeros(2), 0.01, np.array([0.5, 0.0]))
    assert pos[0] == 0.52  # restarts from the new measurement: no step back to the old command


def test_brake_decelerates_at_the_planned_rate_synchronised_and_stops_within_its_distance():
    """Every joint's deceleration stays within its planned one, the joint that sets the ramp's length
    brakes at exactly its own (x6 0.2 s at a = 10 rad/s², v = 2 rad/s) and the travel is the
    constant-deceleration distance v² / (2a) plus the end taper's TAPER² / 12 of it (computed here
    from the kinematics of the profile: constant a, then a falling linearly to 0 over TAPER v / a)."""
    p0, v0 = np.array([0.0, 1.0, 2.0]), np.array([2.0, -1.0, 0.5])
    amax, vmax = np.array([10.0, 10.0, 1.0]), np.array([4.0, 4.0, 4.0])
    b = Brake(5.0, p0, v0, amax, vmax, np.full(3, -np.inf), np.full(3, np.inf))
    t = np.linspace(5.0, b.end_time, 20001)
    states = [b.state(x) for x in t]
    p = np.array([s[0] for s in states])
    v = np.array([s[1] for s in states])
    a = np.array([s[2] for s in states])
    np.testing.assert_allclose(v[0], v0)
    np.testing.assert_allclose(v[-1], 0.0, atol=1e-6)  # every joint at rest at the same moment
    assert np.all(np.abs(a).max(axis=0) <= amax * (1 + 1e-9))
    np.testing.assert_allclose(a[0, 2], -amax[2] * np.sign(v0[2]))  # the setting joint brakes at its own a at once
    t_const = 0.5 / 1.0  # joint 2: |v| / a, the longest
    assert b.duration == pytest.approx(t_const * (1.0 + Brake.TAPER / 2.0))
    np.testing.assert_allclose(np.gradient(p, t, axis=0)[1:-1], v[1:-1], atol=1e-3)  # p, v consistent
    np.testing.assert_allclose(np.gradient(v, t, axis=0)[2:-2], a[2:-2], atol=2e-2 * amax.max())  # v, a consistent
    distance = v0 * t_const / 2.0 * (1.0 + Brake.TAPER ** 2 / 12.0)
    np.testing.assert_allclose(b.state(b.end_time + 1.0)[0] - p0, distance, rtol=1e-12)
    np.testing.assert_allclose(p[-1] - p0, distance, rtol=1e-6)
    assert abs(distance[2]) <= v0[2] ** 2 / (2 * amax[2]) * (1.0 + Brake.TAPER ** 2 / 12.0 + 1e-12)
    assert np.all(np.sign(v[:-1]) == np.sign(v0))  # never reverses
    assert Brake.TAPER ** 2 / 12.0 < 0.005  # the taper costs under 0.5 % of the distance


def test_brake_speed_fraction_is_every_joints_speed_over_its_start_speed():
    p0, v0 = np.array([0.0, 1.0]), np.array([2.0, -0.5])
    b = Brake(1.0, p0, v0, np.array([10.0, 10.0]), np.full(2, 4.0), np.full(2, -np.inf), np.full(2, np.inf))
    for t in np.linspace(1.0, b.end_time, 101):
        np.testing.assert_allclose(b.state(t)[1] / v0, b.speed_fraction(t), atol=1e-12)  # synchronised
    assert b.speed_fraction(0.0) == 1.0 and b.speed_fraction(b.end_time + 1.0) == 0.0
    assert Brake(0.0, p0, np.zeros(2), np.ones(2), np.ones(2), -np.ones(2), np.ones(2)).speed_fraction(0.0) == 0.0


def test_brake_from_rest_and_stop_point_clamped_to_limits():
    b = Brake(0.0, np.zeros(2), np.zeros(2), np.ones(2), np.ones(2), -np.ones(2), np.ones(2))
    assert b.duration == 0.0 and np.all(b.state(0.0)[0] == 0.0)
    b = Brake(0.0, np.array([0.95]), np.array([1.0]), np.array([1.0]), np.array([2.0]),
              np.array([-1.0]), np.array([1.0]))
    assert b.target[0] == 1.0


def test_recovery_range_keeps_the_command_while_the_joint_swings_back():
    """A joint held outside its limits that swings back inward narrows the recovery range only to the
    larger of where it is and where it is commanded: the clamp never drags the hold along with the arm."""
    lim = Limits(np.full(2, -1.0), np.full(2, 1.0), np.full(2, 2.0), np.full(2, 5.0))
    recovery = (np.array([-1.0, -1.0]), np.array([3.0, 1.0]))  # joint 0 was let out to 3 rad
    measured, held = np.array([2.0, 0.0]), np.array([2.8, 0.0])
    lo, hi = shrink_recovery(recovery, lim, measured, held)
    assert hi[0] == 2.8 and lo[0] == -1.0  # the held command stays inside the range
    lo, hi = shrink_recovery((lo, hi), lim, measured)  # without the command: down to where the arm is
    assert hi[0] == 2.0
    assert shrink_recovery((lo, hi), lim, np.zeros(2), np.zeros(2)) is None  # all back inside


def test_brake_feeds_forward_the_mean_deceleration_over_the_cycle_the_command_is_held():
    """With ``hold`` (the control period) the acceleration is the ramp's velocity change over the next
    ``hold`` seconds / ``hold``: a ramp shorter than a cycle (from a nearly still arm) feeds forward that
    small change, not its whole deceleration for the cycle, and the last cycle of a ramp only its rest."""
    v0, amax = np.array([1e-4, -2e-4]), np.array([50.0, 50.0])
    b = Brake(0.0, np.zeros(2), v0, amax, np.ones(2), np.full(2, -1.0), np.full(2, 1.0), hold=0.005)
    assert b.duration < 1e-5
    np.testing.assert_allclose(b.state(0.0)[2], -v0 / 0.005)  # v0 -> 0 within the cycle held
    v0 = np.array([2.0, -1.0])
    b = Brake(0.0, np.zeros(2), v0, np.array([10.0, 10.0]), np.full(2, 4.0), np.full(2, -9.0), np.full(2, 9.0),
              hold=0.005)
    for t in np.linspace(0.0, b.end_time - 1e-9, 57):
        after = b.state(t + 0.005)[1] if t + 0.005 < b.end_time else np.zeros(2)
        np.testing.assert_allclose(b.state(t)[2], (after - b.state(t)[1]) / 0.005, atol=1e-9)
        assert np.all(np.abs(b.state(t)[2]) <= 10.0 * (1 + 1e-9))
