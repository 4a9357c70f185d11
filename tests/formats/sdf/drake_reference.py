"""Drake as the reference for SDF files and model directives: run tools/ref_drake.py on a batch of
files in a subprocess, and compare hebictl's model with its verdict, link poses and gravity torques.

Shared by the SDF reader, writer and directives tests (tests/formats/sdf/test_vs_drake.py
explains the conventions bridged between the two: ball, universal, screw and planar joints,
gravity forces as minus gravity compensation).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.model.robot import RobotModel
from tests._support.paths import REPO_ROOT
from tests._support.refcache import cached_answer, tree_digest

REF_DRAKE = REPO_ROOT / "tools" / "ref_drake.py"
GRAVITY = np.array([0.0, 0.0, -9.81])


def drake_available() -> bool:
    """Whether this interpreter can import pydrake (checked in a subprocess, cheap)."""
    try:
        return subprocess.run([sys.executable, "-c", "import pydrake.multibody.plant"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_drake(files: list[Path], samples: int = 3, seed: int = 0, timeout: float = 900,
              packages: dict[str, Path] | None = None, inputs_under: Path | None = None) -> dict[str, Any]:
    """tools/ref_drake.py on ``files`` in one subprocess; its JSON keyed by path string.

    ``inputs_under``: the folder tree every input (the files and whatever they include) lies in;
    given, Drake's answer is kept in the reference store (:mod:`tests._support.refcache`) until the
    script, Drake's version, the arguments or any byte of that tree changes. The SDF corpus costs
    Drake about 17 s of CPU per run; the small files the tests write themselves are not worth it."""
    if not drake_available():
        pytest.skip("Drake (pip package 'drake') is not installed in this interpreter's environment")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    pkg_args = [a for name, folder in (packages or {}).items() for a in ("--package", f"{name}={folder}")]
    args = [str(REF_DRAKE), "--samples", str(samples), "--seed", str(seed), *pkg_args, "-"]
    request = "\n".join(str(f) for f in files)

    def ask_drake() -> dict[str, Any]:
        proc = subprocess.run([sys.executable, *args], input=request, capture_output=True, text=True,
                              timeout=timeout, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"ref_drake.py failed: {proc.stderr[-2000:]}")
        answer: dict[str, Any] = json.loads(proc.stdout)
        return answer

    if inputs_under is None:
        return ask_drake()
    version = importlib.metadata.version("drake")
    parts = [REF_DRAKE, f"drake {version}", *args, request, tree_digest(inputs_under)]
    answer: dict[str, Any] = cached_answer("drake-sdf", parts, ask_drake)
    return answer


# ---------------------------------------------------------------------------- coordinate bridge
def _drake_name(name: str, prefix: str) -> str:
    """Drake's scoped name ``instance::x`` as hebictl names it (model files drop the model's name)."""
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def sdf_joint_of(model: RobotModel, drake_joint: dict[str, Any], prefix: str) -> str:
    """hebictl's name of the SDF joint Drake built ``drake_joint`` from, found by its child link.

    (Drake files a joint under its child's model instance, SDF under the model declaring it.)
    """
    child = model.link_names.index(_drake_name(drake_joint["child"], prefix))
    return model.bodies[child].joint.metadata["sdf_joint"]


def hebictl_q(model: RobotModel, ref: dict[str, Any], q_drake: np.ndarray, prefix: str) -> np.ndarray:
    """Drake's configuration in hebictl's coordinates."""
    q = model.neutral_configuration()
    index = {n: i for i, n in enumerate(model.q_names)}
    for j in ref["joints"]:
        if not j["nq"]:
            continue
        name = sdf_joint_of(model, j, prefix)
        qd = q_drake[j["q0"]:j["q0"] + j["nq"]]
        t = j["type"]
        if t in ("revolute", "prismatic"):
            q[index[name]] = qd[0]
        elif t == "ball_rpy":
            w, x, y, z = Rotation.from_euler("xyz", qd).as_quat(scalar_first=True)
            q[index[f"{name}_qw"]:index[f"{name}_qw"] + 4] = w, x, y, z
        elif t == "universal":
            q[index[f"{name}_axis1"]], q[index[f"{name}_axis2"]] = qd
        elif t == "screw":
            body = model.bodies[model.link_names.index(_drake_name(j["child"], prefix))]
            pitch = body.joint.metadata.get("screw_pitch")  # hebictl's reading of the file, against Drake's
            assert pitch == pytest.approx(j["screw_pitch"], rel=1e-12), f"{name}: screw pitch {pitch} vs Drake"
            q[index[f"{name}_rotation"]] = qd[0]
            q[index[f"{name}_translation"]] = j["screw_pitch"] / (2 * np.pi) * qd[0]
        elif t == "planar":
            q[index[f"{name}_x"]], q[index[f"{name}_y"]], q[index[f"{name}_theta"]] = qd
        else:
            raise AssertionError(f"Drake joint type {t} ({name}) has no mapping")
    return q


def drake_tau(model: RobotModel, ref: dict[str, Any], q_drake: np.ndarray, tau_hebictl: np.ndarray,
              prefix: str) -> np.ndarray:
    """hebictl's generalized forces in Drake's velocity coordinates."""
    out = np.zeros(ref["nv"])
    index = {n: i for i, n in enumerate(model.v_names)}
    for j in ref["joints"]:
        if not j["nv"]:
            continue
        name = sdf_joint_of(model, j, prefix)
        v0, t = j["v0"], j["type"]
        if t in ("revolute", "prismatic"):
            out[v0] = tau_hebictl[index[name]]
        elif t == "ball_rpy":
            R_FM = Rotation.from_euler("xyz", q_drake[j["q0"]:j["q0"] + 3]).as_matrix()
            tau_M = tau_hebictl[index[f"{name}_wx"]:index[f"{name}_wx"] + 3]
            out[v0:v0 + 3] = R_FM @ tau_M  # Drake's ball velocity is w_FM in F
        elif t == "universal":
            out[v0:v0 + 2] = tau_hebictl[index[f"{name}_axis1"]], tau_hebictl[index[f"{name}_axis2"]]
        elif t == "screw":
            out[v0] = tau_hebictl[index[f"{name}_rotation"]] \
                + j["screw_pitch"] / (2 * np.pi) * tau_hebictl[index[f"{name}_translation"]]
        elif t == "planar":
            out[v0:v0 + 3] = [tau_hebictl[index[f"{name}_{s}"]] for s in ("x", "y", "theta")]
    return out


def compare(model: RobotModel, ref: dict[str, Any], prefix: str, pose_tol: float = 1e-12,
            tau_tol: float = 1e-9) -> None:
    """Assert hebictl's link poses and gravity torques equal Drake's at every sample."""
    names = {n: i for i, n in enumerate(model.link_names)}
    drake_bodies = {_drake_name(n, prefix) for n in ref["samples"][0]["poses"]}
    real = {n for n, b in zip(model.link_names, model.bodies, strict=True) if "synthetic" not in b.metadata}
    assert real == drake_bodies, f"bodies differ: hebictl-only {sorted(real - drake_bodies)[:5]}, " \
                                 f"Drake-only {sorted(drake_bodies - real)[:5]}"
    for n, m in ref["masses"].items():
        assert model.bodies[names[_drake_name(n, prefix)]].inertia.mass == pytest.approx(m, abs=1e-12), n
    dofs = sum(model.bodies[i].joint.nv for i in model.joint_bodies)
    for s in ref["samples"]:
        qd = np.array(s["q"])
        q = hebictl_q(model, ref, qd, prefix)
        poses = model.link_poses(q)
        for n, X in s["poses"].items():
            err = np.abs(poses[names[_drake_name(n, prefix)]] - np.array(X)).max()
            assert err <= pose_tol * max(1.0, np.abs(X).max()), f"link {n}: pose differs by {err:.3g}"
        if dofs:
            g = model.gravity_compensation(q, GRAVITY)
            tau = drake_tau(model, ref, qd, -g, prefix)
            scale = max(1.0, float(np.abs(s["tau_g"]).max()))
            np.testing.assert_allclose(tau, s["tau_g"], rtol=0, atol=tau_tol * scale)


def prefix_for(model: RobotModel) -> str:
    """Drake names bodies ``model::link``; hebictl drops the model's name when it loaded a model file."""
    return "" if ("world" in model.metadata or "directives" in model.metadata) else f"{model.name}::"


# ---------------------------------------------------------------------------- corpus
