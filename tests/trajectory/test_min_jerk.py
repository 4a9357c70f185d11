"""The minimum-jerk solve (hebictl.trajectory.min_jerk) against hebi-py and an exact rational solution.

Optimality conditions of every free/given constraint pattern, the dense and banded solvers, the
shared and per-joint solve paths, and the refined solve on ill-conditioned input.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import numpy as np
import pytest

from hebictl.trajectory import create_trajectory, min_jerk

from .references import NAN, assert_states_close, hebi_states


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
