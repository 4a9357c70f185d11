"""hebictl.trajectory.waypoint_trajectory (create_trajectory, Trajectory) side by side with hebi-py 2.16.1.

hebi-py's C core is the reference: sampling, defaults, clamping, properties, extrema, retiming,
and the documented differences (errors where hebi-py returns NaN or an arbitrary solution).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hebictl.trajectory import Trajectory, TrajectoryError, create_trajectory

from .references import NAN, assert_states_close, hebi_core_extrema, hebi_states, random_case, sample_times


@pytest.mark.parametrize("seed", range(8))
def test_random_waypoints_match_hebi(hebi, seed):
    """Random waypoints, joints and NaN/given velocity-acceleration mixes sample like hebi-py's."""
    rng = np.random.default_rng(seed)
    compared = 0
    for case in range(25):
        times, positions, velocities, accelerations = random_case(rng)
        try:
            mine = create_trajectory(times, positions, velocities, accelerations)
        except TrajectoryError as err:
            assert "under-constrained" in str(err)
            continue
        ref = hebi.trajectory.create_trajectory(times, positions, velocities, accelerations)
        ts = sample_times(rng, times)
        expected = hebi_states(ref, ts)
        for i, t in enumerate(ts):
            assert_states_close(mine.get_state(t), tuple(e[i] for e in expected), f"case {case} t={t}")
        assert_states_close(mine.get_states(ts), expected, f"case {case} get_states")
        compared += 1
    assert compared >= 18, "too many random cases were under-constrained to be a meaningful comparison"


@pytest.mark.parametrize("which", ["velocities", "accelerations", "both"])
def test_default_constraints_match_hebi(hebi, which):
    """Omitted velocities/accelerations behave as in hebi-py: zero at both ends, free inside."""
    times = np.array([0.0, 1.0, 2.5, 3.0, 4.2])
    positions = np.array([[0.0, 1.0, 0.2, -0.5, 0.3], [1.0, 0.0, 0.0, 2.0, 1.0]])
    given = np.array([[1.0, -0.5, NAN, 0.5, 1.0], [NAN, 2.0, 1.0, NAN, -1.0]])
    velocities = None if which in ("velocities", "both") else given
    accelerations = None if which in ("accelerations", "both") else given
    mine = create_trajectory(times, positions, velocities, accelerations)
    ref = hebi.trajectory.create_trajectory(times, positions, velocities, accelerations)
    ts = np.linspace(-0.5, 4.5, 77)
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), which)
    explicit_default = np.full(positions.shape, NAN)
    explicit_default[:, [0, -1]] = 0.0
    assert np.array_equal(mine.velocities, explicit_default if velocities is None else given,
                          equal_nan=True)


def test_single_joint_vector_positions_match_hebi(hebi):
    """A (W,) positions vector is one joint, as in hebi-py."""
    times, positions = [0.0, 1.0, 2.0], [0.0, 1.0, 0.5]
    mine = create_trajectory(times, positions)
    ref = hebi.trajectory.create_trajectory(times, positions)
    assert mine.number_of_joints == 1
    ts = np.linspace(0.0, 2.0, 21)
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), "vector positions")


def test_clamps_outside_the_time_range_like_hebi(hebi):
    """Before the start / after the end the state is the one at the start / end, velocity included."""
    times, positions, free = [1.0, 2.0, 4.0], [[0.0, 1.0, -1.0]], [[NAN, NAN, NAN]]
    mine = create_trajectory(times, positions, free, free)
    ref = hebi.trajectory.create_trajectory(times, positions, np.array(free), np.array(free))
    for outside, end in ((-3.0, 1.0), (0.999, 1.0), (4.001, 4.0), (100.0, 4.0)):
        state = mine.get_state(outside)
        assert_states_close(state, ref.get_state(outside), f"t={outside}")
        np.testing.assert_array_equal(np.array(state), np.array(mine.get_state(end)))
    assert abs(mine.get_state(100.0)[1][0]) > 1.0  # the held end velocity is not zeroed


def test_properties_match_hebi(hebi):
    """start/end time, duration, waypoint and joint counts, waypoint times are hebi-py's."""
    times = [0.5, 1.0, 2.25, 4.0]
    positions = np.arange(12.0).reshape(3, 4)
    mine = create_trajectory(times, positions)
    ref = hebi.trajectory.create_trajectory(times, positions)
    for name in ("start_time", "end_time", "duration", "number_of_waypoints", "number_of_joints"):
        assert getattr(mine, name) == pytest.approx(getattr(ref, name), abs=1e-15), name
    np.testing.assert_array_equal(mine.waypoint_times, ref.waypoint_times)
    assert mine.get_state(1.0)[0].shape == (3,)
    assert [a.shape for a in mine.get_states([0.0, 1.0])] == [(2, 3)] * 3


def test_trajectory_is_immutable():
    """The constraint arrays are read-only copies and attributes cannot be reassigned."""
    positions = np.array([[0.0, 1.0]])
    traj = create_trajectory([0.0, 1.0], positions)
    positions[0, 1] = 5.0
    assert traj.positions[0, 1] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        traj.positions[0, 0] = 2.0
    with pytest.raises(AttributeError):
        traj.waypoint_times = np.array([0.0, 2.0])  # type: ignore[misc]


@pytest.mark.parametrize("seed", range(3))
def test_extrema_match_hebi_core(hebi, seed):
    """position_range, peak_velocity and peak_acceleration equal hebi's C core extrema."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(15):
        times, positions, velocities, accelerations = random_case(rng, free_positions=0.0)
        try:
            mine = create_trajectory(times, positions, velocities, accelerations)
        except TrajectoryError:
            continue
        ref = hebi_core_extrema(hebi.trajectory.create_trajectory(times, positions, velocities, accelerations))
        lo, hi = mine.position_range()
        np.testing.assert_allclose(lo, ref["min"], atol=1e-9)
        np.testing.assert_allclose(hi, ref["max"], atol=1e-9)
        np.testing.assert_allclose(mine.peak_velocity(), ref["vel"], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(mine.peak_acceleration(), ref["acc"], rtol=1e-9, atol=1e-9)


RETIME_CASE = dict(
    times=np.array([1.0, 2.0, 4.0]),
    positions=np.array([[0.0, 1.0, -1.0], [0.0, -2.0, 0.5]]),
    velocities=np.array([[0.0, 1.5, 0.0], [0.0, NAN, 0.0]]),
    accelerations=np.array([[0.0, 3.0, 0.0], [0.0, NAN, 0.0]]),
)


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0, 3.7])
def test_rescaled_matches_hebi(hebi, scale):
    """rescaled(s) equals hebi-py's rescale(s): times stretched about the start, constraints kept."""
    case = RETIME_CASE
    mine = create_trajectory(**case).rescaled(scale)
    ref = hebi.trajectory.create_trajectory(case["times"], case["positions"], case["velocities"],
                                            case["accelerations"])
    ref.rescale(scale)
    np.testing.assert_allclose(mine.waypoint_times, ref.waypoint_times, atol=1e-12)
    ts = np.linspace(0.0, mine.end_time + 1.0, 91)
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), f"scale {scale}")
    assert mine.get_state(mine.waypoint_times[1])[1][0] == pytest.approx(1.5)  # given velocity kept


@pytest.mark.parametrize(("max_velocity", "max_acceleration"), [
    ([1.0, 10.0], [100.0, 100.0]),    # velocity-bound, given 1.5 rad/s clipped to 1
    ([100.0, 100.0], [1.0, 100.0]),   # acceleration-bound, given 3 rad/s^2 clipped to 1
    ([1.0, 1.0], [1.0, 1.0]),
    ([10.0, 10.0], [100.0, 100.0]),   # already within limits: unchanged
    (None, [1.0, 1.0]),
    ([1.0, 1.0], None),
    ([np.inf, 0.5], [np.inf, np.inf]),
])
def test_rescaled_to_limits_matches_hebi(hebi, max_velocity, max_acceleration):
    """rescaled_to_limits reproduces hebi-py's rescale_with_limits (scale, clipping, re-solve)."""
    case = RETIME_CASE
    mine = create_trajectory(**case).rescaled_to_limits(max_velocity, max_acceleration)
    ref = hebi.trajectory.create_trajectory(case["times"], case["positions"], case["velocities"],
                                            case["accelerations"])
    ref.rescale_with_limits(None if max_velocity is None else np.array(max_velocity),
                            None if max_acceleration is None else np.array(max_acceleration))
    np.testing.assert_allclose(mine.waypoint_times, ref.waypoint_times, rtol=1e-10)
    ts = np.linspace(0.0, mine.end_time + 1.0, 91)
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), f"{max_velocity} {max_acceleration}")


def test_rescaled_to_limits_of_free_trajectory_meets_limits_exactly():
    """With nothing given but rest ends, time scaling is exact: the binding limit is met."""
    traj = create_trajectory([0.0, 1.0, 3.0], [[0.0, 2.0, -1.0], [0.0, 0.5, 0.0]])
    slow = traj.rescaled_to_limits([1.0, 1.0], [2.0, 2.0])
    ratio = max(np.max(slow.peak_velocity() / 1.0), np.max(np.sqrt(slow.peak_acceleration() / 2.0)))
    assert ratio == pytest.approx(1.0, abs=1e-9)


def hebi_error(call) -> str:
    """Message of the exception a hebi-py call raises ('' if none); HEBI_Exception's str() is
    broken in 2.16.1, so its ``_message`` is read directly."""
    try:
        call()
    except Exception as err:
        return str(getattr(err, "_message", None) or err)
    return ""


@pytest.mark.parametrize(("label", "args", "message", "hebi_does"), [
    ("decreasing times", ([0.0, 2.0, 1.0], [[0, 1, 2]]), r"times\[2\] = 1.0 is not later than times\[1\]",
     "raises"),
    ("repeated time", ([0.0, 1.0, 1.0], [[0, 1, 2]]), "strictly increase", "raises"),
    ("NaN time", ([0.0, NAN], [[0, 1]]), r"times\[1\] is nan", "raises"),
    ("one waypoint", ([0.0], [[1.0]]), "at least two waypoints", "raises"),
    ("times vs positions", ([0.0, 1.0, 2.0], [[0, 1]]), "2 waypoint.*times has 3", "raises"),
    ("velocity shape", ([0.0, 1.0], [[0, 1]], [[0, 1, 2]]), r"velocities has shape \(1, 3\)", "raises"),
    ("acceleration shape", ([0.0, 1.0], [[0, 1], [1, 2]], None, [[0, 1]]),
     r"accelerations has shape \(1, 2\)", "raises"),
    ("3-d positions", ([0.0, 1.0], np.zeros((1, 2, 1))), r"positions has shape \(1, 2, 1\)", "accepts"),
    ("infinite position", ([0.0, 1.0], [[0, np.inf]]), r"positions\[0, 1\].*infinite", "nan"),
    ("infinite velocity", ([0.0, 1.0, 2.0], [[0, 1, 2]], [[0, -np.inf, 0]]), r"velocities\[0, 1\].*infinite",
     "nan"),
])
def test_bad_input_raises_clear_errors(hebi, label, args, message, hebi_does):
    """Malformed input raises TrajectoryError naming the argument/index; hebi-py raises too, or
    (documented difference) returns an all-NaN trajectory or reads the array its own way."""
    with pytest.raises(TrajectoryError, match=message):
        create_trajectory(*args)
    as_arrays = [None if a is None else np.asarray(a, float) for a in args]
    if hebi_does == "raises":
        assert hebi_error(lambda: hebi.trajectory.create_trajectory(*as_arrays))
    else:
        state = np.concatenate(hebi.trajectory.create_trajectory(*as_arrays).get_state(0.5))
        assert np.isnan(state).all() if hebi_does == "nan" else np.isfinite(state).all()


UNDER_CONSTRAINED = [
    # (label, times, positions, velocities, accelerations, what hebi-py does)
    ("positions only, two waypoints", [0, 1], [[0, 1]], [[NAN, NAN]], [[NAN, NAN]], "raises"),
    ("one position, rest free", [0, 1], [[0, NAN]], [[NAN, NAN]], [[NAN, NAN]], "raises"),
    ("no positions, default ends", [0, 1, 2], [[NAN, NAN, NAN]], None, None, "starts at 0"),
    ("no positions, given velocities", [0, 1, 2], [[NAN, NAN, NAN]], [[1, NAN, -1]], [[NAN] * 3], "starts at 0"),
    ("velocity midway between two positions", [0, 1, 2], [[0, NAN, 1]], [[NAN, 2, NAN]], [[NAN] * 3], "arbitrary"),
]


@pytest.mark.parametrize(("label", "times", "positions", "velocities", "accelerations", "hebi_does"),
                         UNDER_CONSTRAINED)
def test_under_constrained_joint_raises(hebi, label, times, positions, velocities, accelerations, hebi_does):
    """A joint whose constraints admit a family of minimum-jerk solutions is refused (documented
    difference: hebi-py raises for some and returns an arbitrary member for others)."""
    with pytest.raises(TrajectoryError, match=re.escape("joint 0 is under-constrained")):
        create_trajectory(times, positions, velocities, accelerations)
    args = [None if a is None else np.asarray(a, float) for a in (times, positions, velocities, accelerations)]
    if hebi_does == "raises":
        assert "Failed to decompose" in hebi_error(lambda: hebi.trajectory.create_trajectory(*args))
    else:
        ref = hebi.trajectory.create_trajectory(*args)
        if hebi_does == "starts at 0":
            assert ref.get_state(times[0])[0][0] == pytest.approx(0.0, abs=1e-12)


def test_under_constrained_joint_is_named_among_others():
    """The error names the offending joint when the others are fine."""
    with pytest.raises(TrajectoryError, match="joint 2 is under-constrained"):
        create_trajectory([0, 1], [[0, 1], [1, 2], [0, 1]], [[0, 0], [0, 0], [NAN, NAN]],
                          [[0, 0], [0, 0], [NAN, NAN]])


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: t.get_state(NAN), "NaN"),
    (lambda t: t.get_states([0.0, NAN]), "NaN"),
    (lambda t: t.get_states([[0.0]]), "vector of times"),
    (lambda t: t.rescaled(0.0), "finite and positive"),
    (lambda t: t.rescaled(np.inf), "finite and positive"),
    (lambda t: t.rescaled_to_limits([1.0]), "one per joint"),
    (lambda t: t.rescaled_to_limits([1.0, 0.0]), r"max_velocity\[1\] is 0.0"),
    (lambda t: t.rescaled_to_limits(None, [NAN, 1.0]), r"max_acceleration\[0\] is nan"),
])
def test_bad_queries_raise(call, message):
    """Sampling at NaN, non-positive scales and bad limits raise TrajectoryError."""
    traj = create_trajectory([0.0, 1.0], [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(TrajectoryError, match=message):
        call(traj)


def test_direct_construction_validates():
    """Trajectory(...) itself validates, so no instance is inconsistent."""
    with pytest.raises(TrajectoryError, match="strictly increase"):
        Trajectory(np.array([0.0, 0.0]), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)))


def test_shifted_equals_the_trajectory_solved_at_the_later_times():
    """``shifted(dt)`` (no re-solve) against the trajectory created from the same waypoints at times
    + dt (solved again): the same states at every shifted time, to rounding."""
    import numpy as np

    from hebictl.trajectory import create_trajectory

    times = np.array([0.0, 0.7, 1.9, 3.0])
    rng = np.random.default_rng(3)
    pos = rng.uniform(-1.0, 1.0, (4, 4))
    traj = create_trajectory(times, pos)
    dt = 1234.5678
    moved, solved = traj.shifted(dt), create_trajectory(times + dt, pos)
    assert moved.start_time == solved.start_time and moved.end_time == solved.end_time
    for t in np.linspace(-0.5, 3.5, 41):
        for a, b in zip(moved.get_state(t + dt), solved.get_state(t + dt), strict=True):
            np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(moved.get_states(times + dt)[0], solved.get_states(times + dt)[0], atol=1e-9)
