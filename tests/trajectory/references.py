"""hebi-py as the reference for hebictl.trajectory: sampling, C-core extrema, random cases, tolerances."""

from __future__ import annotations

import numpy as np

NAN = np.nan
POS_TOL = 1e-9   # rad, on positions of magnitude <= 3
DERIV_TOL = 1e-7  # relative (+ absolute) on velocities and accelerations


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
