"""Drake's inverse dynamics as a side-by-side reference (tools/ref_drake_dynamics.py in a subprocess).

Drake's states are mapped to hebictl's by joint name: ball joints are roll-pitch-yaw angles
with angular velocity in the parent frame (hebictl: quaternion, velocity in the child frame, so
v_h = Rᵀ·w and, because ω × ω = 0, the same for accelerations); universal joints are two
revolute coordinates ``_axis1``/``_axis2``; screw joints ``_rotation`` + ``_translation`` with
translation = pitch/2π · rotation; planar ``_x``, ``_y``, ``_theta``. Generalized forces map
back with the transpose of the velocity map (power is the same in both).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.model.robot import RobotModel

REF = Path(__file__).resolve().parents[2] / "tools" / "ref_drake_dynamics.py"


def run(files: list[Path], samples: int = 3, seed: int = 0, geometry: bool = True) -> dict[str, Any]:
    """tools/ref_drake_dynamics.py on ``files`` in one subprocess; its JSON keyed by path string."""
    probe = subprocess.run([sys.executable, "-c", "import pydrake.multibody.plant"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("Drake (pip package 'drake') is not installed in this interpreter's environment")
    flags = [] if geometry else ["--no-geometry"]
    proc = subprocess.run([sys.executable, str(REF), "--samples", str(samples), "--seed", str(seed), *flags, "-"],
                          input="\n".join(str(f) for f in files), capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if proc.returncode != 0:
        raise RuntimeError(f"ref_drake_dynamics.py failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def hebictl_name(drake_name: str) -> str:
    """hebictl's name for Drake's ``instance::name`` (nested SDF models keep their inner scopes)."""
    return drake_name.split("::", 1)[1]


def state_map(model: RobotModel, result: dict[str, Any], q_d: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """hebictl q for Drake's q, and J with v_hebictl = J · v_drake (so τ_drake = Jᵀ · τ_hebictl)."""
    q = model.neutral_configuration()
    J = np.zeros((model.nv, result["nv"]))
    for j in result["joints"]:
        name, t, s, v0 = hebictl_name(j["name"]), j["type"], j["q0"], j["v0"]
        if t == "weld":
            continue
        names = {"universal": ["_axis1", "_axis2"], "planar": ["_x", "_y", "_theta"],
                 "screw": ["_rotation", "_translation"]}.get(t, [""])
        idx = [model.coordinate_index(model.joint_bodies[model.joint_names.index(name + n)]) for n in names]
        if t == "ball_rpy":
            R = Rotation.from_euler("xyz", q_d[s:s + 3])
            (iq, iv), = idx
            q[iq:iq + 4] = R.as_quat(scalar_first=True)
            J[iv:iv + 3, v0:v0 + 3] = R.as_matrix().T
        elif t == "screw":
            pitch = j["screw_pitch"] / (2.0 * math.pi)
            (iq_r, iv_r), (iq_t, iv_t) = idx
            q[iq_r], q[iq_t] = q_d[s], pitch * q_d[s]
            J[iv_r, v0], J[iv_t, v0] = 1.0, pitch
        elif t in ("revolute", "prismatic", "universal", "planar"):
            for k, (iq, iv) in enumerate(idx):
                q[iq] = q_d[s + k]
                J[iv, v0 + k] = 1.0
        else:
            raise AssertionError(f"no mapping for Drake joint type {t!r}")
    return q, J


def compare(model: RobotModel, result: dict[str, Any], poses: bool = True) -> None:
    """Body poses (1e-12), gravity (1e-9) and inverse dynamics (1e-9) equal Drake's at its samples."""
    assert result["ok"], result.get("error")
    g = np.array([0.0, 0.0, -9.81])
    for sample in result["samples"]:
        q, J = state_map(model, result, sample["q"])
        v, vdot = np.array(sample["v"]), np.array(sample["vdot"])
        if poses:
            ours = dict(zip(model.link_names, model.link_poses(q), strict=True))
            for name, T in sample["poses"].items():
                np.testing.assert_allclose(ours[hebictl_name(name)], T, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(J.T @ model.gravity_compensation(q, gravity=g), -np.array(sample["tau_g"]),
                                   atol=1e-9)
        tau = model.inverse_dynamics(q, J @ v, J @ vdot, gravity=g)
        np.testing.assert_allclose(J.T @ tau, np.array(sample["tau_id"]) - np.array(sample["tau_g"]), atol=1e-9,
                                   rtol=1e-12)
