"""Brake profiles: the sampled position is the integral of the sampled velocity, all joints stop together."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import cumulative_trapezoid

from hebictl.teleop.braking import brake_profile

CASES = [
    (np.array([0.1, -0.2, 0.3]), np.array([0.5, -1.0, 0.0]), 4.0, 0.25),   # T = 0.25 (joint 1)
    (np.array([0.0, 0.0]), np.array([2.0, 0.2]), 4.0, 0.25),               # capped: needs 0.5 s
    (np.array([1.0]), np.array([-0.04]), 4.0, 0.25),                       # short: 10 ms
]


@pytest.mark.parametrize(("p0", "v0", "decel", "cap"), CASES)
def test_profile_integrates_and_stops(p0, v0, decel, cap):
    """p(t) equals p0 + ∫v dt (trapezoid), v ramps linearly to 0 at T, p(T) = p0 + v0 T / 2."""
    prof = brake_profile(10.0, p0, v0, decel, cap)
    expected_T = min(float(np.max(np.abs(v0) / decel)), cap)
    assert prof.duration == pytest.approx(expected_T, rel=1e-12)
    t = np.linspace(10.0, 10.0 + prof.duration + 0.05, 4001)
    P = np.empty((t.size, p0.size))
    V = np.empty_like(P)
    for i, ti in enumerate(t):
        prof.sample(ti, P[i], V[i])
    integral = p0 + cumulative_trapezoid(V, t, axis=0, initial=0.0)
    np.testing.assert_allclose(P, integral, atol=1e-7)
    np.testing.assert_allclose(P[0], p0, atol=1e-15)
    np.testing.assert_allclose(V[0], v0, atol=1e-15)
    after = t >= prof.end
    np.testing.assert_array_equal(V[after], 0.0)
    np.testing.assert_allclose(P[after], np.broadcast_to(p0 + 0.5 * prof.duration * v0, P[after].shape), atol=1e-15)
    np.testing.assert_allclose(prof.final_position, p0 + 0.5 * prof.duration * v0)
    if prof.duration < cap:  # not capped: no joint decelerates harder than decel
        dv = np.abs(np.diff(V, axis=0)) / np.diff(t)[:, None]
        assert dv.max() <= decel * (1 + 1e-9)


def test_profile_at_rest_and_nan_velocity():
    """No motion (or NaN velocity: nothing commanded) gives a zero-length profile ending where it starts."""
    prof = brake_profile(0.0, [0.3, 0.4], [0.0, np.nan], 4.0)
    assert prof.duration == 0.0
    p, v = np.empty(2), np.empty(2)
    assert prof.sample(0.0, p, v) is False
    np.testing.assert_array_equal(p, [0.3, 0.4])
    np.testing.assert_array_equal(v, 0.0)
