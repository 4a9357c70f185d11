"""Inverse kinematics on the bundled 6-DoF kit: targets reached, limits respected, hebi-py as a cross-check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hebictl
from hebictl.errors import IKFailed, ModelError

KIT = Path(__file__).resolve().parents[2] / "hrdf_kits" / "x-series-6dof.hrdf"
SEED = np.array([0.01, 1.0, 2.5, 1.5, -1.5, 0.01])


@pytest.fixture(scope="module")
def model():
    return hebictl.load_model(KIT)


def _reachable_targets(model, n, seed=0):
    """End-effector poses of random configurations near the seed: reachable by construction."""
    rng = np.random.default_rng(seed)
    qs = SEED + rng.uniform(-0.5, 0.5, (n, model.dof))
    return qs, model.forward_kinematics(qs, "end_effector")[:, 0]


def test_position_targets_reached_to_a_micrometre(model):
    """xyz objective: FK of the solution is within 1e-6 m of the target for 20 random reachable targets."""
    _, poses = _reachable_targets(model, 20)
    for T in poses:
        res = model.inverse_kinematics(target=T[:3, 3], seed=SEED)
        assert res.converged, res
        reached = model.end_effector(res.q)[:3, 3]
        assert np.linalg.norm(reached - T[:3, 3]) < 1e-6


def test_full_pose_targets_reached(model):
    """Pose objective: position within 1e-6 m and orientation within 1e-6 rad."""
    _, poses = _reachable_targets(model, 10, seed=1)
    for T in poses:
        res = model.inverse_kinematics(target=T, seed=SEED)
        got = model.end_effector(res.q)
        assert np.linalg.norm(got[:3, 3] - T[:3, 3]) < 1e-6
        assert Rotation.from_matrix(got[:3, :3] @ T[:3, :3].T).magnitude() < 1e-6


def test_tip_axis_objective(model):
    """Tip-axis objective: the end effector's z axis points along the requested direction."""
    _, poses = _reachable_targets(model, 5, seed=2)
    for T in poses:
        res = model.inverse_kinematics(target=T[:3, 3], tip_axis=T[:3, 2], seed=SEED)
        got = model.end_effector(res.q)
        assert np.linalg.norm(got[:3, 3] - T[:3, 3]) < 1e-6
        assert np.arccos(np.clip(got[:3, 2] @ T[:3, 2], -1, 1)) < 1e-6


def test_joint_limits_are_respected(model):
    """With limits, every iterate stays inside them; a target needing a joint past its limit is not reached."""
    qs, poses = _reachable_targets(model, 10, seed=3)
    lo, hi = qs.min(axis=0) - 0.05, qs.max(axis=0) + 0.05
    for T in poses:
        res = model.inverse_kinematics(target=T[:3, 3], seed=SEED, limits=(lo, hi))
        assert np.all(res.q >= lo) and np.all(res.q <= hi)
    q_out = SEED.copy()
    q_out[0] = 1.5
    target = model.end_effector(q_out)  # full pose: no other joint can make up for joint 0
    narrow = (SEED - 0.3, np.minimum(SEED + 0.3, [0.5, np.inf, np.inf, np.inf, np.inf, np.inf]))
    res = model.inverse_kinematics(target=target, seed=SEED, limits=narrow)
    assert res.q[0] <= 0.5 and np.all(res.q >= narrow[0]) and np.all(res.q <= narrow[1])
    assert not res.converged
    with pytest.raises(IKFailed) as err:
        model.inverse_kinematics(target=target, seed=SEED, limits=narrow, raise_on_failure=True)
    assert err.value.result.q[0] <= 0.5


def test_agrees_with_hebi_py_ik(model, hebi):
    """hebi-py's own IK and ours both reach the same xyz targets from the same seed."""
    ref = hebi.robot_model.import_from_hrdf(str(KIT))
    _, poses = _reachable_targets(model, 10, seed=4)
    for T in poses:
        q_ref = ref.solve_inverse_kinematics(SEED, hebi.robot_model.endeffector_position_objective(T[:3, 3]))
        q_ours = model.inverse_kinematics(target=T[:3, 3], seed=SEED).q
        err_ref = np.linalg.norm(ref.get_end_effector(q_ref)[:3, 3] - T[:3, 3])
        err_ours = np.linalg.norm(model.end_effector(q_ours)[:3, 3] - T[:3, 3])
        assert err_ours < 1e-6 and err_ours <= max(err_ref, 1e-9) * 10 + 1e-6


def test_bad_objectives_are_rejected(model):
    """No objective, or malformed targets, raise ModelError."""
    with pytest.raises(ModelError, match="objective"):
        model.inverse_kinematics(seed=SEED)
    with pytest.raises(ModelError, match="target"):
        model.inverse_kinematics(target=[1, 2], seed=SEED)
    with pytest.raises(ModelError, match="seed"):
        model.inverse_kinematics(target=[0.3, 0, 0.2], seed=[0, 0])


@pytest.mark.parametrize("rows", [3, 6])
def test_damped_least_squares_equals_numpys_lu_solve(rows):
    """The compiled Cholesky step (no LAPACK, so no OpenBLAS thread in the control loop) against
    numpy's LAPACK solve of the same system, over random Jacobians and dampings from 1e-8 to 0.1:
    equal to within the system's conditioning (cond(J J^T + λ² I) x 1e-15, both sides backward stable)."""
    from hebictl.model.ik import damped_least_squares

    rng = np.random.default_rng(rows)
    worst = 0.0
    for _ in range(500):
        n = int(rng.integers(3, 9))
        J = rng.normal(size=(rows, n)) * rng.uniform(0.05, 1.0, size=(rows, 1))
        w = rng.normal(size=rows)
        lam2 = 10.0 ** rng.uniform(-8, -1)
        A = J @ J.T + lam2 * np.eye(rows)
        ref = J.T @ np.linalg.solve(A, w)
        got = damped_least_squares(J, w, lam2)
        err = float(np.abs(got - ref).max() / (np.abs(ref).max() * np.linalg.cond(A)))
        worst = max(worst, err)
    print(f"{rows} rows: worst |compiled - numpy| / (|x| cond) = {worst:.1e}")
    assert worst < 1e-14


def test_damped_least_squares_without_damping_at_a_singularity_is_a_model_error():
    from hebictl.model.ik import damped_least_squares

    J = np.zeros((6, 6))
    J[0, 0] = 1.0
    with pytest.raises(ModelError, match="singular"):
        damped_least_squares(J, np.ones(6), 0.0)
    with pytest.raises(ModelError, match=r"J \(m, n\)"):
        damped_least_squares(np.ones(6), np.ones(6), 0.1)
