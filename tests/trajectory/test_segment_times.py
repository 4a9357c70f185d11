"""hebictl.trajectory.segment_times against hebi-py's estimate_segment_times and time conversions."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.trajectory import (
    SegmentTimeMethod,
    TrajectoryError,
    estimate_segment_times,
    segment_times_to_waypoint_times,
    waypoint_times_to_segment_times,
)

from .references import NAN


@pytest.mark.parametrize("method", list(SegmentTimeMethod))
@pytest.mark.parametrize("seed", range(3))
def test_estimate_segment_times_matches_hebi(hebi, method, seed):
    """Both heuristics, per-joint limits, repeated waypoints and min_segment_time match hebi-py."""
    rng = np.random.default_rng(seed)
    hebi_method = {SegmentTimeMethod.N_FABIAN: hebi.trajectory.TimeEstimationMethod.NFabian,
                   SegmentTimeMethod.VELOCITY_RAMP: hebi.trajectory.TimeEstimationMethod.VelocityRamp}[method]
    for _ in range(10):
        joints, waypoints = int(rng.integers(1, 8)), int(rng.integers(2, 8))
        positions = rng.uniform(-3, 3, (joints, waypoints))
        positions[:, 1] = positions[:, 0]  # a zero-length segment
        positions[:, -1] = positions[:, -2] + 1e-4  # a tiny one
        vmax, amax = rng.uniform(0.2, 4, joints), rng.uniform(0.2, 8, joints)
        kwargs = {"min_segment_time": float(rng.choice([0.0, 0.01, 0.3]))}
        if method is SegmentTimeMethod.N_FABIAN:
            kwargs["fabian_constant"] = float(rng.uniform(1, 10))
        mine = estimate_segment_times(positions, vmax, amax, method, **kwargs)
        ref = hebi.trajectory.estimate_segment_times(hebi_method, positions, vmax, amax, **kwargs)
        np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-15)


def test_segment_and_waypoint_time_conversions_match_hebi(hebi):
    """Segment <-> waypoint time conversions agree with hebi-py's helpers."""
    segments = [0.5, 1.25, 2.0]
    np.testing.assert_array_equal(segment_times_to_waypoint_times(segments),
                                  hebi.trajectory.segment_times_to_waypoint_times(segments))
    waypoint_times = [0.3, 0.8, 2.0, 2.1]
    np.testing.assert_allclose(waypoint_times_to_segment_times(waypoint_times),
                               hebi.trajectory.waypoint_times_to_segment_times(waypoint_times))
    np.testing.assert_allclose(segment_times_to_waypoint_times(segments, start_time=2.0), [2.0, 2.5, 3.75, 5.75])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"positions": [[0.0, NAN]]}, "finite"),
    ({"positions": [[0.0]]}, "at least two waypoints"),
    ({"max_velocities": [0.0]}, r"max_velocities\[0\] is 0.0"),
    ({"max_accelerations": [np.inf]}, r"max_accelerations\[0\] is inf"),
    ({"max_velocities": [1.0, 1.0]}, "one per joint"),
    ({"method": "bogus"}, "unknown segment time method"),
    ({"min_segment_time": -1.0}, "min_segment_time"),
])
def test_bad_segment_time_input_raises(kwargs, message):
    """estimate_segment_times refuses NaN positions, bad limits and unknown methods."""
    args = {"positions": [[0.0, 1.0]], "max_velocities": [1.0], "max_accelerations": [1.0]} | kwargs
    with pytest.raises(TrajectoryError, match=message):
        estimate_segment_times(**args)
