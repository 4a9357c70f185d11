"""hebi-py, the reference implementation for HRDF models, trajectories and configs: imported
quietly, and a robot model of ours compared with hebi-py's (the HRDF reader tests and the config
tests both check models against it)."""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any

import numpy as np

#: FK, Jacobian and gravity tolerance against hebi-py [m, rad, N·m]
TOL = 1e-9
#: our frame kinds -> hebi-py's frame type names
FRAMES = {"output": "output", "com": "com", "input": "input", "end_effector": "endeffector"}
#: the top of HEBI's Rosie.hrdf (robot-config): a mobile base, then the arm kit included three folders up
ROSIE_TOP = '''<?xml version="1.0" encoding="UTF-8"?>
<!-- Rosie's layout (HebiRobotics/robot-config): the mobile base, then the arm kit shared with arms/ -->
<robot version="1.6.0">
  <rigid-body mass="12.0" com_trans="0 0 0.1" output_trans="0.1 0 0.3"/>
  <include path="../../../arms/config/hrdf/A-2085-06.hrdf"/>
</robot>
'''


def import_hebi() -> Any:
    """Import hebi-py without its 'matplotlib not found' chatter on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        import hebi
    return hebi


def fd_jacobians(h, frame: str, q: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobians [linear; angular] of hebi-py's FK: (n, 6, dof)."""
    F0 = np.array(h.get_forward_kinematics(frame, q))
    J = np.zeros((F0.shape[0], 6, q.size))
    for k in range(q.size):
        dq = np.zeros(q.size)
        dq[k] = eps
        Fp = np.array(h.get_forward_kinematics(frame, q + dq))
        Fm = np.array(h.get_forward_kinematics(frame, q - dq))
        J[:, :3, k] = (Fp[:, :3, 3] - Fm[:, :3, 3]) / (2 * eps)
        W = (Fp[:, :3, :3] - Fm[:, :3, :3]) / (2 * eps) @ F0[:, :3, :3].transpose(0, 2, 1)
        J[:, 3:, k] = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    return J


def frame_count(model, kind: str) -> int:
    """Number of frames of a kind (0 when the model has none of that kind)."""
    from hebictl.errors import ModelError  # lazily: tests/conftest.py imports this module before hebictl

    try:
        return model.frame_count(kind)
    except ModelError:
        return 0


def compare_with_hebi(model, h, *, jacobian_bugs: frozenset[str] | set[str] = frozenset(), seed: int = 0,
                      batch: int = 4) -> None:
    """Assert our model matches hebi-py's: structure, FK, Jacobians, gravity, base, limits."""
    dof = h.dof_count
    assert model.dof == dof
    np.testing.assert_allclose(model.masses, h.masses, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.base, h.base_frame, rtol=0, atol=TOL)
    if dof:
        np.testing.assert_allclose(model.max_speeds, h.max_speeds, rtol=1e-12)
        np.testing.assert_allclose(model.max_efforts, h.max_efforts, rtol=1e-12)
    rng = np.random.default_rng(seed)
    Q = rng.uniform(-math.pi, math.pi, (batch, dof))
    g = np.array([0.3, -1.2, -9.81])
    for ours_name, hebi_name in FRAMES.items():
        n = h.get_frame_count(hebi_name)
        assert frame_count(model, ours_name) == n, ours_name
        if n == 0:
            continue
        fk = model.forward_kinematics(Q, frame=ours_name)  # (B, n, 4, 4)
        assert fk.shape == (batch, n, 4, 4)
        jac = model.jacobians(Q, frame=ours_name) if dof else None
        for b, q in enumerate(Q):
            np.testing.assert_allclose(fk[b], np.array(h.get_forward_kinematics(hebi_name, q)), rtol=0, atol=TOL,
                                       err_msg=f"FK {ours_name} at q={q}")
            if not dof:
                continue
            if ours_name in jacobian_bugs:
                fd = fd_jacobians(h, hebi_name, q)
                assert np.abs(np.array(h.get_jacobians(hebi_name, q)) - fd).max() > 1e-3, \
                    "hebi-py's Jacobians are consistent now: drop the HEBI_JACOBIAN_BUGS entry"
                np.testing.assert_allclose(jac[b], fd, rtol=0, atol=1e-6, err_msg=f"J {ours_name} (vs FD)")
            else:
                np.testing.assert_allclose(jac[b], np.array(h.get_jacobians(hebi_name, q)), rtol=0, atol=TOL,
                                           err_msg=f"J {ours_name} at q={q}")
    if dof:
        tau = model.gravity_compensation(Q, gravity=g)
        for b, q in enumerate(Q):
            if "com" in jacobian_bugs:  # hebi's gravity uses its wrong Jacobians: rebuild it from its FK
                Jc = fd_jacobians(h, "com", q)
                ref = -np.einsum("nij,n,i->j", Jc[:, :3, :], h.masses, g)
                np.testing.assert_allclose(tau[b], ref, rtol=0, atol=1e-6)
            else:
                np.testing.assert_allclose(tau[b], h.get_grav_comp_efforts(q, g), rtol=0, atol=TOL)
