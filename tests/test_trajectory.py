"""hebictl.trajectory side by side with hebi-py 2.16.1's trajectories (its C core is the reference)."""

from __future__ import annotations

import re
from fractions import Fraction
from math import factorial

import numpy as np
import pytest

from hebictl.trajectory import (
    SegmentTimeMethod,
    Trajectory,
    TrajectoryError,
    create_trajectory,
    estimate_segment_times,
    min_jerk,
    segment_times_to_waypoint_times,
    waypoint_times_to_segment_times,
)

NAN = np.nan
POS_TOL = 1e-9   # rad, on positions of magnitude <= 3
DERIV_TOL = 1e-7  # relative (+ absolute) on velocities and accelerations


# -- reference helpers ----------------------------------------------------------------------------

def hebi_states(hebi_traj, times) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """hebi-py sampled one time at a time (it has no vectorised call), as three (N, J) arrays."""
    rows = [hebi_traj.get_state(float(t)) for t in times]
    return tuple(np.array([row[k] for row in rows]) for k in range(3))


def hebi_core_extrema(hebi_traj) -> dict[str, np.ndarray]:
    """Min/max position, max |velocity|, max |acceleration| straight from hebi's C core.

    hebi-py 2.16.1's Python wrappers for these fail (``len(int)``; the acceleration one also calls
    the velocity routine), so the C functions are called as the wrappers intend to.
    """
    from hebi._internal.ffi import api
    from hebi._internal.ffi.ctypes_utils import c_double_p

    n = hebi_traj.number_of_joints
    out = {name: np.empty(n) for name in ("min", "max", "vel", "acc")}
    ptr = {name: a.ctypes.data_as(c_double_p) for name, a in out.items()}
    handle = hebi_traj._trajectories
    assert api.hebiGroupTrajectoryGetMinMaxPosition(handle, ptr["min"], ptr["max"]) == 0
    assert api.hebiGroupTrajectoryGetMaxVelocity(handle, ptr["vel"]) == 0
    assert api.hebiGroupTrajectoryGetMaxAcceleration(handle, ptr["acc"]) == 0
    return out


def assert_states_close(mine, ref, what: str) -> None:
    """Positions to POS_TOL, velocities and accelerations to DERIV_TOL."""
    np.testing.assert_allclose(mine[0], ref[0], rtol=0, atol=POS_TOL, err_msg=f"{what}: position")
    for k, name in ((1, "velocity"), (2, "acceleration")):
        np.testing.assert_allclose(mine[k], ref[k], rtol=DERIV_TOL, atol=DERIV_TOL, err_msg=f"{what}: {name}")


def random_case(rng: np.random.Generator, free_positions: float = 0.15):
    """Random times (segments 0.2..3 s, well conditioned), positions and NaN-riddled constraints."""
    waypoints = int(rng.integers(2, 7))
    joints = int(rng.integers(1, 8))
    times = np.cumsum(np.r_[rng.uniform(-2, 2), rng.uniform(0.2, 3.0, waypoints - 1)])
    positions = rng.uniform(-3, 3, (joints, waypoints))
    positions[rng.random(positions.shape) < free_positions] = NAN

    def constraint():
        if rng.random() < 0.2:
            return None  # hebi-py default
        values = rng.uniform(-2, 2, (joints, waypoints))
        values[rng.random(values.shape) < rng.uniform(0.2, 0.8)] = NAN
        return values

    return times, positions, constraint(), constraint()


def sample_times(rng: np.random.Generator, times: np.ndarray) -> np.ndarray:
    """The waypoints themselves, points just inside segment ends, random interior points, and
    times before the start and after the end (clamping)."""
    return np.concatenate([times, times[:-1] + 1e-6, times[1:] - 1e-6,
                           rng.uniform(times[0], times[-1], 15),
                           [times[0] - 1.0, times[0] - 1e-3, times[-1] + 1e-3, times[-1] + 5.0]])


# -- create_trajectory / get_state ----------------------------------------------------------------

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


@pytest.mark.parametrize(("label", "velocities", "accelerations"), [
    ("all free", [[NAN, NAN, NAN, NAN]], [[NAN, NAN, NAN, NAN]]),
    ("interior velocity given", [[0, 1.5, NAN, 0]], [[0, NAN, NAN, 0]]),
    ("interior acceleration given", [[0, NAN, NAN, 0]], [[0, NAN, -3.0, 0]]),
    ("velocity given, acceleration free at ends", [[0.5, NAN, NAN, -1]], [[NAN, NAN, NAN, NAN]]),
    ("acceleration given, velocity free at ends", [[NAN, NAN, NAN, NAN]], [[1.0, NAN, NAN, 2.0]]),
    ("everything given", [[0, 1, -1, 0]], [[0, 2, 1, 0]]),
])
def test_constraint_patterns_match_hebi(hebi, label, velocities, accelerations):
    """Each kind of free/given constraint (the optimality condition it implies) matches hebi-py."""
    times = np.array([0.0, 0.7, 2.0, 3.1])
    positions = np.array([[0.0, 1.0, -1.0, 0.5]])
    mine = create_trajectory(times, positions, velocities, accelerations)
    ref = hebi.trajectory.create_trajectory(times, positions, np.array(velocities, float),
                                            np.array(accelerations, float))
    ts = np.linspace(-1.0, 4.0, 101)
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), label)


def test_free_velocities_and_accelerations_give_a_parabola(hebi):
    """Free end velocities and accelerations make jerk vanish: the parabola through 3 points."""
    times, positions = [0.0, 1.0, 3.0], [[0.0, 1.0, -1.0]]
    free = [[NAN, NAN, NAN]]
    mine = create_trajectory(times, positions, free, free)
    ts = np.linspace(0.0, 3.0, 31)
    parabola = np.polyfit(times, positions[0], 2)
    np.testing.assert_allclose(mine.get_states(ts)[0][:, 0], np.polyval(parabola, ts), atol=1e-12)
    ref = hebi.trajectory.create_trajectory(times, positions, np.array(free), np.array(free))
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), "parabola")


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


@pytest.mark.parametrize("waypoints", [min_jerk.DENSE_MAX_WAYPOINTS + 1, 120])
def test_long_trajectories_use_the_banded_solver_and_match_hebi(hebi, waypoints):
    """Beyond DENSE_MAX_WAYPOINTS the band solver takes over; it still matches hebi-py."""
    rng = np.random.default_rng(waypoints)
    joints = 6
    times = np.cumsum(np.r_[0.0, rng.uniform(0.2, 2.0, waypoints - 1)])
    positions = rng.uniform(-3, 3, (joints, waypoints))
    positions[rng.random(positions.shape) < 0.1] = NAN
    positions[:, [0, -1]] = 0.0
    velocities = rng.uniform(-2, 2, (joints, waypoints))
    velocities[rng.random(velocities.shape) < 0.6] = NAN
    accelerations = rng.uniform(-2, 2, (joints, waypoints))
    accelerations[rng.random(accelerations.shape) < 0.6] = NAN
    mine = create_trajectory(times, positions, velocities, accelerations)
    ref = hebi.trajectory.create_trajectory(times, positions, velocities, accelerations)
    ts = np.concatenate([times, rng.uniform(times[0] - 1, times[-1] + 1, 300)])
    assert_states_close(mine.get_states(ts), hebi_states(ref, ts), f"{waypoints} waypoints")


def test_mixed_and_shared_constraint_patterns_agree(hebi):
    """Joints with one shared free/given pattern (single solve) and with differing patterns (batched
    solve) both match hebi-py, jointly and one joint at a time."""
    times = np.array([0.0, 1.0, 1.8, 3.0])
    positions = np.array([[0.0, 1.0, 0.5, 0.0], [0.0, -1.0, 2.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    velocities = np.array([[0.0, NAN, NAN, 0.0], [0.0, 0.3, NAN, 0.0], [0.0, NAN, NAN, 0.0]])
    ts = np.linspace(0, 3, 41)
    for vel in (velocities[[0, 2]], velocities):
        pos = positions[: vel.shape[0]]
        mine = create_trajectory(times, pos, vel)
        assert_states_close(mine.get_states(ts),
                            hebi_states(hebi.trajectory.create_trajectory(times, pos, vel), ts), "joint")
        for j in range(vel.shape[0]):
            alone = create_trajectory(times, pos[j], vel[j]).get_states(ts)
            np.testing.assert_allclose(mine.get_states(ts)[0][:, j], alone[0][:, 0], atol=1e-12)


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


# -- extrema and retiming -------------------------------------------------------------------------

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


# -- segment times --------------------------------------------------------------------------------

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


# -- errors and documented differences ------------------------------------------------------------

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


def exact_min_jerk_positions(times, positions, velocities, accelerations, sample_times) -> np.ndarray:
    """Exact (rational) minimum-jerk positions of one joint, an independent formulation.

    Unknowns are the six monomial coefficients of each segment's quintic in local time; the
    equations are the optimality conditions as hebi describes them: a given value of derivative
    d (0..2) is imposed on both sides of its waypoint, a free one is continuous and makes
    derivative 5 - d continuous; at an end a free derivative d makes derivative 5 - d vanish.
    Solved by Gaussian elimination over Fractions, so the result is exact for the float input.
    """
    t = [Fraction(x) for x in times]
    n = len(t) - 1
    given = [[None if np.isnan(c[i]) else Fraction(c[i]) for c in (positions, velocities, accelerations)]
             for i in range(n + 1)]

    def row(seg: int, tau: Fraction, order: int) -> list[Fraction]:
        out = [Fraction(0)] * (6 * n)
        for k in range(order, 6):
            out[6 * seg + k] = Fraction(factorial(k), factorial(k - order)) * tau ** (k - order)
        return out

    equations: list[tuple[list[Fraction], Fraction]] = []
    for i in range(n + 1):
        sides = []  # (segment, local time) meeting at waypoint i
        if i > 0:
            sides.append((i - 1, t[i] - t[i - 1]))
        if i < n:
            sides.append((i, Fraction(0)))
        for d in range(3):
            if given[i][d] is not None:
                equations += [(row(seg, tau, d), given[i][d]) for seg, tau in sides]
            elif len(sides) == 2:
                for order in (d, 5 - d):
                    left, right = (row(seg, tau, order) for seg, tau in sides)
                    equations.append(([a - b for a, b in zip(left, right, strict=True)], Fraction(0)))
            else:
                equations.append((row(*sides[0], 5 - d), Fraction(0)))
    matrix = [[*lhs, rhs] for lhs, rhs in equations]
    size = len(matrix)
    for col in range(size):  # Gauss-Jordan, exact
        pivot = next(r for r in range(col, size) if matrix[r][col] != 0)
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        for r in range(size):
            if r != col and matrix[r][col] != 0:
                f = matrix[r][col] / matrix[col][col]
                matrix[r] = [x - f * y for x, y in zip(matrix[r], matrix[col], strict=True)]
    coeffs = [matrix[i][size] / matrix[i][i] for i in range(size)]
    out = []
    for ts in sample_times:
        x = min(max(Fraction(ts), t[0]), t[-1])
        seg = min(max(k for k in range(n + 1) if t[k] <= x), n - 1)
        tau = x - t[seg]
        out.append(float(sum(coeffs[6 * seg + k] * tau ** k for k in range(6))))
    return np.array(out)


def test_exact_reference_agrees(hebi):
    """The exact rational solution agrees with hebi-py and hebictl on well-conditioned waypoints,
    which validates it as the referee for the ill-conditioned case below."""
    rng = np.random.default_rng(7)
    for _ in range(6):
        waypoints = int(rng.integers(3, 6))
        times = np.cumsum(np.r_[0.0, rng.uniform(0.3, 2.0, waypoints - 1)])
        positions = rng.uniform(-2, 2, waypoints)
        positions[1] = NAN
        velocities = np.where(rng.random(waypoints) < 0.5, rng.uniform(-1, 1, waypoints), NAN)
        accelerations = np.where(rng.random(waypoints) < 0.5, rng.uniform(-1, 1, waypoints), NAN)
        velocities[[0, -1]] = accelerations[[0, -1]] = 0.0
        ts = np.linspace(times[0], times[-1], 9)
        exact = exact_min_jerk_positions(times, positions, velocities, accelerations, ts)
        ref = hebi.trajectory.create_trajectory(times, positions, velocities, accelerations)
        np.testing.assert_allclose(hebi_states(ref, ts)[0][:, 0], exact, atol=1e-10)
        mine = create_trajectory(times, positions, velocities, accelerations)
        np.testing.assert_allclose(mine.get_states(ts)[0][:, 0], exact, atol=1e-12)


def test_ill_conditioned_case_is_solved_accurately(hebi):
    """Free positions after a 100x shorter segment (cond(H_ff) ~ 3e11): hebi-py is off by ~2e-5
    (documented), hebictl's refined solve stays within 1e-8 of the exact solution."""
    times = np.cumsum([0.0, 2.2, 1.44, 2.0, 0.02])
    positions = np.array([0.5, -2.8, 0.25, NAN, NAN])
    ends = np.array([0.0, NAN, NAN, NAN, 0.0])
    ts = np.linspace(times[0], times[-1], 25)
    exact = exact_min_jerk_positions(times, positions, ends, ends, ts)
    mine = create_trajectory(times, positions, ends, ends).get_states(ts)[0][:, 0]
    ref = hebi_states(hebi.trajectory.create_trajectory(times, positions, ends, ends), ts)[0][:, 0]
    np.testing.assert_allclose(mine, exact, atol=1e-8)
    assert 1e-6 < np.abs(ref - exact).max() < 1e-4


def test_direct_construction_validates():
    """Trajectory(...) itself validates, so no instance is inconsistent."""
    with pytest.raises(TrajectoryError, match="strictly increase"):
        Trajectory(np.array([0.0, 0.0]), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)))
