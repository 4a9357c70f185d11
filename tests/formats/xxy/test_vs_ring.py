"""x_xy files of the corpus read by hebictl and by imt-ring (the format's own library), side by side.

imt-ring lives in .venv-ref/ring (tools/ref_envs.sh; it needs JAX and numpy 2) and runs once for
the whole corpus in a subprocess (tools/ref_xxy.py), cached for the session. ring draws the axes of rr,
rr_imp and rsaddle joints at random when loading (seed 1); the test passes the axes ring drew to
hebictl's ``joint_axes``, so even those files compare exactly. Conventions mapped here: ring's
quaternions are passive (hebictl's are their conjugates), its free joint is ``q = [quat, pos]``,
``qd = [ω, v]`` (hebictl ``[v, ω]``, both in the body frame), and ``free_2d`` orders ``[angle, y,
z]`` with its translation forces in the *child* frame (hebictl: parent frame, rotated by the
angle). Compared at the zero configuration and 4 random ones: every link's pose (1e-12) and the
inverse dynamics at zero velocity and acceleration (1e-9). For two-axis joints (saddle, rr_imp,
rsaddle) ring's motion subspace uses the first axis as if the second rotation were zero (its own
FK does not), so that coordinate's torque is compared only where the second coordinate is 0.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hebictl.errors import FormatError
from hebictl.formats.rotations import quat_matrix
from hebictl.formats.xxy import load_xxy
from hebictl.model.robot import RobotModel
from tests._support.corpus import CORPUS_DIR, corpus_params
from tests._support.refcache import cached_answer, installed_versions

REPO = Path(__file__).resolve().parents[3]
RING_PYTHON = REPO / ".venv-ref" / "ring" / "bin" / "python"
REF_SCRIPT = REPO / "tools" / "ref_xxy.py"
XXY_DIR = CORPUS_DIR / "xxy" / "SimiPixel__ring" / "src" / "ring" / "io" / "examples"

#: corpus files hebictl rejects, with the reason the error must name
REJECTED = {"exclude/knee_trans_dof.xml": "unknown joint type 'knee_hinge'"}
FILES = sorted(str(p.relative_to(XXY_DIR)) for p in XXY_DIR.rglob("*.xml")) if XXY_DIR.is_dir() else []
LOADABLE = [f for f in FILES if f not in REJECTED]


@functools.cache
def run_ring_all() -> dict[str, Any]:
    """ring's answers for every loadable corpus file, from one subprocess (JAX starts once), kept
    in the reference store until the script, ring's or JAX's version, the request or a file changes
    (:mod:`tests._support.refcache`: the run costs about a minute of CPU)."""
    if not RING_PYTHON.exists():
        pytest.skip(f"imt-ring reference env missing ({RING_PYTHON}); run tools/ref_envs.sh ring")
    request = json.dumps({"random": 4, "seed": 11})
    files = [XXY_DIR / f for f in LOADABLE]

    def ask_ring() -> dict[str, Any]:
        proc = subprocess.run([str(RING_PYTHON), str(REF_SCRIPT), *map(str, files)], input=request,
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise AssertionError(f"ref_xxy.py failed: {proc.stderr[-500:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    versions = installed_versions(RING_PYTHON, "imt_ring", "jax")
    return cached_answer("ring-xxy", [REF_SCRIPT, request, *versions, *files], ask_ring)


def run_ring(rel: str) -> dict[str, Any]:
    out = run_ring_all()[str(XXY_DIR / rel)]
    assert "error" not in out, f"imt-ring rejects {rel}: {out.get('error')}"
    return out


def ring_axes(ref: dict[str, Any]) -> dict[str, Any]:
    """The axes ring drew for its randomised joints, as hebictl's ``joint_axes``."""
    out = {}
    for link in ref["links"]:
        p = link.get("joint_params")
        if link["type"] == "rr":
            out[link["name"]] = p["joint_axes"]
        elif link["type"] == "rr_imp":
            out[link["name"]] = [p["joint_axes"], p["residual"]]
        elif link["type"] == "rsaddle":
            out[link["name"]] = p["joint_axes"]
    return out


@functools.cache
def load(rel: str) -> tuple[RobotModel, dict[str, Any]]:
    ref = run_ring(rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_xxy(XXY_DIR / rel, joint_axes=ring_axes(ref)), ref


def ring_to_q(model: RobotModel, ref: dict[str, Any], qr: np.ndarray) -> np.ndarray:
    """hebictl's q for ring's q (by coordinate name)."""
    names = {n: i for i, n in enumerate(model.q_names)}
    q = model.neutral_configuration()
    for link in ref["links"]:
        s, e = link["q"]
        name, typ = link["name"], link["type"]
        x = qr[s:e]
        if typ == "free":
            q[names[f"{name}_x"]:names[f"{name}_x"] + 3] = x[4:7]
            q[names[f"{name}_qw"]:names[f"{name}_qw"] + 4] = x[:4] * [1, -1, -1, -1]
        elif typ == "spherical":
            q[names[f"{name}_qw"]:names[f"{name}_qw"] + 4] = x[:4] * [1, -1, -1, -1]
        else:
            suffixes = {"p3d": ["_x", "_y", "_z"], "free_2d": ["_rx", "_y", "_z"], "saddle": ["_ry", "_rz"],
                        "rr_imp": ["_pri", "_res"], "rsaddle": ["_1", "_2"]}.get(typ, [""] * (e - s))
            for suffix, v in zip(suffixes, x, strict=True):
                q[names[name + suffix]] = v
    return q


def ours_in_ring_order(model: RobotModel, ref: dict[str, Any], tau: np.ndarray, qr: np.ndarray) -> np.ndarray:
    """hebictl's generalized forces arranged as ring's ``tau`` (see module docstring)."""
    names = {n: i for i, n in enumerate(model.v_names)}
    out = []
    for link in ref["links"]:
        name, typ = link["name"], link["type"]
        if typ == "free":
            i = names[f"{name}_vx"]
            out += list(tau[i + 3:i + 6]) + list(tau[i:i + 3])
        elif typ == "spherical":
            i = names[f"{name}_wx"]
            out += list(tau[i:i + 3])
        elif typ == "free_2d":
            a = qr[link["q"][0]]
            fy, fz = tau[names[f"{name}_y"]], tau[names[f"{name}_z"]]
            c, s = np.cos(a), np.sin(a)
            out += [tau[names[f"{name}_rx"]], c * fy + s * fz, -s * fy + c * fz]
        elif typ in ("saddle", "rr_imp", "rsaddle"):
            first, second = {"saddle": ("_ry", "_rz"), "rr_imp": ("_pri", "_res"), "rsaddle": ("_1", "_2")}[typ]
            # ring's motion subspace takes the first axis as if the second rotation were zero
            out += [tau[names[name + first]] if qr[link["q"][0] + 1] == 0.0 else np.nan, tau[names[name + second]]]
        else:
            suffixes = {"p3d": ["_x", "_y", "_z"], "frozen": []}.get(typ, [""])
            out += [tau[names[name + s]] for s in suffixes]
    return np.array(out)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(FILES))
def test_xxy_corpus_outcome(rel: str) -> None:
    """Every corpus x_xy file loads, or is rejected with the reason listed in REJECTED."""
    if rel in REJECTED:
        with pytest.raises(FormatError, match=re.escape(REJECTED[rel])) as err:
            load_xxy(XXY_DIR / rel)
        assert err.value.line
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert load_xxy(XXY_DIR / rel).bodies


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_xxy_poses_match_ring(rel: str) -> None:
    """Every link's pose equals ring's forward kinematics at the zero and 4 random configurations."""
    model, ref = load(rel)
    names = list(model.link_names)
    for k, cfg in enumerate(ref["configs"]):
        poses = model.link_poses(ring_to_q(model, ref, np.asarray(cfg["q"])))
        for i, link in enumerate(ref["links"]):
            want = np.eye(4)
            want[:3, :3] = quat_matrix(cfg["rot"][i]).T
            want[:3, 3] = cfg["pos"][i]
            np.testing.assert_allclose(poses[names.index(link["name"])], want, rtol=0, atol=1e-12,
                                       err_msg=f"{rel} {link['name']} config {k}")


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_xxy_inverse_dynamics_match_ring(rel: str) -> None:
    """hebictl's gravity torques equal ring's inverse dynamics at qd = qdd = 0, per coordinate."""
    model, ref = load(rel)
    np.testing.assert_allclose(model.gravity, -np.asarray(ref["gravity"]), rtol=0, atol=0)
    for k, cfg in enumerate(ref["configs"]):
        qr = np.asarray(cfg["q"])
        tau = model.gravity_compensation(ring_to_q(model, ref, qr))
        ours = ours_in_ring_order(model, ref, tau, qr)
        known = ~np.isnan(ours)
        assert known.sum() >= len(ours) - sum(link["type"] in ("saddle", "rr_imp", "rsaddle") for link in ref["links"])
        np.testing.assert_allclose(ours[known], np.asarray(cfg["tau"])[known], rtol=0, atol=1e-9,
                                   err_msg=f"{rel} config {k}")


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_xxy_masses_match_ring(rel: str) -> None:
    """Each body's mass (from its geoms) equals ring's link mass."""
    model, ref = load(rel)
    by_name = {b.name: b for b in model.bodies}
    for link in ref["links"]:
        assert by_name[link["name"]].inertia.mass == pytest.approx(link["mass"], abs=1e-12)
