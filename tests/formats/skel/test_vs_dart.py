"""SKEL files of the corpus read by hebictl and by DART (dartpy, one subprocess per file), side by side.

dartpy lives in .venv-ref/dart (tools/ref_envs.sh) and segfaults on some files, so each file runs
in its own process (tools/ref_skel.py) and the answers are cached for the session. DART's
coordinates are mapped to hebictl's with only what the reader recorded in joint metadata
(``skel_joint``, ``skel_dofs``) and DART's joint table (first DoF index per joint): rotation
vectors become quaternions, DART's free joint ``[rotation vector, translation]`` becomes
``x y z qw qx qy qz``, and its generalized forces (``[torque, force]`` in the joint's parent frame)
are compared with hebictl's body-frame ``[force, torque]`` rotated into that frame (details in
:func:`compare_forces`). Compared at DART's initial configuration and 4 random ones: every named body's
world pose, every coordinate's gravity torque, and every body's mass, COM and inertia.
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
from scipy.spatial.transform import Rotation

from hebictl import limits
from hebictl.errors import FormatError, SkelWarning
from hebictl.formats.skel import load_skel
from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind
from tests._support.corpus import CORPUS_DIR, corpus_params
from tests._support.refcache import cached_answer, installed_versions, tree_digest

REPO = Path(__file__).resolve().parents[3]
DART_PYTHON = REPO / ".venv-ref" / "dart" / "bin" / "python"
REF_SCRIPT = REPO / "tools" / "ref_skel.py"
SKEL_DIR = CORPUS_DIR / "skel" / "tianyang9310__dart" / "data"


@pytest.fixture(autouse=True)
def _dart_data_is_an_allowed_root():
    """DART's worlds reach into sibling folders of its data tree (``../obj/foot.obj``): allow the tree."""
    with limits.reading(roots=[SKEL_DIR]):
        yield

#: every SKEL file of the corpus whose outcome is a rejection, with the reason it must name
REJECTED = {
    "skel/bullet_collision.skel": "inertia comes from mesh",
    "skel/shapes.skel": "inertia comes from mesh",
    "skel/test/shapes.skel": "inertia comes from mesh",
    "skel/empty.skel": "no <skeleton>",
    "skel/test/empty.skel": "no <skeleton>",
    "skel/test/drop_BENCHMARK.skel": "no <skeleton>",
    "skel/test/serial_chain_BENCHMARK.skel": "no <skeleton>",
    "skel/ground.skel": "no <world>",
} | {f"skel_old/{n}": "pre-XML SKEL file" for n in (
    "Chain.skel", "YunfeiSKEL003.skel", "YutingEuler.skel", "chainwhipa.skel", "collisiontest.skel", "cube.skel",
    "cube1.skel", "cube2.skel", "fixedHand.skel", "fullbody.skel", "fullbody1.skel", "ground.skel", "ground1.skel",
    "jellyfishMan.skel", "manipulator.skel", "mobilManipulator.skel", "nunchuck.skel", "nunchuck1.skel",
    "simpleHand.skel", "sphere.skel", "sphere1.skel", "sphere2.skel")}
#: files whose bodies carry soft shapes: DART's body inertia excludes the soft point masses
SOFT = {"skel/softBodies.skel", "skel/soft_cubes.skel", "skel/soft_open_chain.skel"} | {
    f"skel/test/{n}.skel" for n in ("test_adaptive_deformable", "test_articulated_bodies",
                                    "test_articulated_bodies_10bodies", "test_double_pendulum", "test_drop_box",
                                    "test_drop_box_offset", "test_drop_low_stiffness", "test_drop_sphere",
                                    "test_single_body", "test_single_pendulum")}


def _corpus_files() -> list[str]:
    if not SKEL_DIR.is_dir():
        return []
    return sorted(str(p.relative_to(SKEL_DIR)) for p in SKEL_DIR.rglob("*.skel"))


FILES = _corpus_files()
LOADABLE = [f for f in FILES if f not in REJECTED]


@functools.cache
def load(rel: str) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_skel(SKEL_DIR / rel)


@functools.cache
def run_dart(rel: str) -> dict[str, Any]:
    """DART's answer for one file, or {"crash": reason} when dartpy fails on it: kept for the session,
    and in the reference store (:mod:`tests._support.refcache`) until the script, dartpy's version,
    the request or any file of DART's data tree changes (a world reaches into ``../obj``; one
    dartpy process per file costs about 10 s of CPU over the corpus)."""
    if not DART_PYTHON.exists():
        pytest.skip(f"dartpy reference env missing ({DART_PYTHON}); run tools/ref_envs.sh dart")
    request = json.dumps({"random": 4, "seed": 7})

    def ask_dart() -> dict[str, Any]:
        proc = subprocess.run([str(DART_PYTHON), str(REF_SCRIPT), str(SKEL_DIR / rel)],
                              input=request, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or [""]
            return {"crash": f"dartpy exited with {proc.returncode}: {last[0][-200:]}"}
        out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return {"crash": out["error"]} if "error" in out else out

    if not (SKEL_DIR / rel).resolve().is_relative_to(SKEL_DIR.resolve()):
        return ask_dart()   # a file a test wrote (its own tmp path each run): nothing to keep
    versions = installed_versions(DART_PYTHON, "dartpy", "numpy")
    answer: dict[str, Any] = cached_answer("dart-skel", [REF_SCRIPT, request, rel, *versions,
                                                         tree_digest(SKEL_DIR)], ask_dart)
    return answer


def _prefix(model: RobotModel, skeleton: str) -> str:
    return f"{skeleton}/" if len(model.metadata["skeletons"]) > 1 else ""


def _joints_of(model: RobotModel, skeleton: str) -> list[int]:
    pre = _prefix(model, skeleton)
    return [i for i in model.joint_bodies if model.bodies[i].joint.name.startswith(pre)]


def dart_to_q(model: RobotModel, sk: dict[str, Any], x: np.ndarray, q: np.ndarray) -> None:
    """Write DART positions ``x`` of skeleton ``sk`` into hebictl's ``q`` (in place)."""
    first = {j["name"]: j["index"] for j in sk["joints"]}
    for i in _joints_of(model, sk["name"]):
        joint = model.bodies[i].joint
        s = model.coordinate_index(i)[0]
        base = first[joint.metadata["skel_joint"]]
        if joint.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            q[s] = x[base + joint.metadata["skel_dofs"][0]]
        elif joint.kind is JointKind.BALL:
            q[s:s + 4] = Rotation.from_rotvec(x[base:base + 3]).as_quat(scalar_first=True)
        else:
            q[s:s + 3] = x[base + 3:base + 6]
            q[s + 3:s + 7] = Rotation.from_rotvec(x[base:base + 3]).as_quat(scalar_first=True)


def compare_forces(model: RobotModel, sk: dict[str, Any], x: np.ndarray, g: np.ndarray,
                   tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hebictl's gravity torques in DART's coordinates, DART's) for one skeleton at DART positions ``x``.

    1-DoF and ball joints agree coordinate by coordinate (both use local angular velocity). DART
    6.20's free joint reports ``[torque, force]`` in the parent body's axes, the force unchanged and
    the moment about the point ``c`` (the joint-to-child offset, *not* rotated by the joint) away
    from the child body's origin: ``[R n_C + c × R f, R f]``, found on the corpus (it matches
    every free joint in it, with and without a ``<transformation>``). hebictl's ``[f, n_J]`` are
    body-frame values about its joint body's origin (DART's joint frame); ``n_C = n_J - c × f``.
    """
    first = {j["name"]: j["index"] for j in sk["joints"]}
    ours: list[float] = []
    theirs: list[float] = []
    for i in _joints_of(model, sk["name"]):
        joint = model.bodies[i].joint
        v = model.coordinate_index(i)[1]
        base = first[joint.metadata["skel_joint"]]
        if joint.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            ours.append(tau[v])
            theirs.append(g[base + joint.metadata["skel_dofs"][0]])
        elif joint.kind is JointKind.BALL:
            ours += list(tau[v:v + 3])
            theirs += list(g[base:base + 3])
        else:
            body = model.bodies[i]
            # the moment is about the child body's origin: hebictl's joint body sits at DART's joint frame
            c = np.zeros(3)
            if body.metadata.get("synthetic"):
                c = next(b.placement[:3, 3] for b in model.bodies if b.parent == i)
            f, n = tau[v:v + 3], tau[v + 3:v + 6] - np.cross(c, tau[v:v + 3])  # moment about the child origin
            R = body.placement[:3, :3] @ Rotation.from_rotvec(x[base:base + 3]).as_matrix()
            ours += list(R @ n + np.cross(body.placement[:3, :3] @ c, R @ f)) + list(R @ f)
            theirs += list(g[base:base + 6])
    return np.array(ours), np.array(theirs)


def _reference(rel: str) -> dict[str, Any]:
    ref = run_dart(rel)
    if "crash" in ref:
        pytest.skip(f"DART cannot load {rel}: {ref['crash']}")
    return ref


def _configurations(model: RobotModel, ref: dict[str, Any]) -> list[np.ndarray]:
    """hebictl q for each of DART's configurations (all mobile skeletons moved together)."""
    n = max((len(sk["positions"]) for sk in ref["skeletons"] if sk.get("positions")), default=0)
    out = []
    for k in range(max(n, 1)):
        q = model.neutral_configuration()
        for sk in ref["skeletons"]:
            if sk.get("positions"):
                dart_to_q(model, sk, np.asarray(sk["positions"][k]), q)
        out.append(q)
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(FILES))
def test_skel_corpus_outcome(rel: str) -> None:
    """Every corpus SKEL file loads, or is rejected with the reason listed in REJECTED."""
    if rel in REJECTED:
        with pytest.raises(FormatError, match=re.escape(REJECTED[rel])) as err:
            load_skel(SKEL_DIR / rel)
        assert err.value.file and err.value.line
    else:
        model = load(rel)
        assert len(model.bodies) > 0


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_skel_poses_match_dart(rel: str) -> None:
    """Every DART body's world pose equals hebictl's at DART's initial and 4 random configurations."""
    model, ref = load(rel), _reference(rel)
    names = list(model.link_names)
    compared = 0
    for k, q in enumerate(_configurations(model, ref)):
        poses = model.link_poses(q)
        for sk in ref["skeletons"]:
            if not sk["poses"]:
                continue
            pre = _prefix(model, sk["name"])
            for b, body in enumerate(sk["bodies"]):
                ours = poses[names.index(pre + body["name"])]
                np.testing.assert_allclose(ours, sk["poses"][k][b], rtol=0, atol=1e-12,
                                           err_msg=f"{rel} {sk['name']}/{body['name']} config {k}")
                compared += 1
    # DART gave no pose at all: nothing was compared, which must not pass as agreement
    assert compared > 0, f"{rel}: DART reported no body pose to compare"
    assert compared == sum(len(sk["bodies"]) * len(sk["poses"]) for sk in ref["skeletons"] if sk["poses"])


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_skel_gravity_matches_dart(rel: str) -> None:
    """DART's getGravityForces equals hebictl's gravity compensation, coordinate by coordinate."""
    model, ref = load(rel), _reference(rel)
    gravity_off = [b.name for b in model.bodies if b.metadata.get("gravity") is False]
    if gravity_off:
        pytest.skip(f"bodies with <gravity>0</gravity> (hebictl applies gravity to all): {gravity_off}")
    np.testing.assert_allclose(model.gravity, ref["gravity"], rtol=0, atol=0)
    compared = 0
    for k, q in enumerate(_configurations(model, ref)):
        tau = model.gravity_compensation(q)
        for sk in ref["skeletons"]:
            if not sk["gravity_forces"] or not sk["mobile"]:
                continue
            ours, want = compare_forces(model, sk, np.asarray(sk["positions"][k]),
                                        np.asarray(sk["gravity_forces"][k]), tau)
            np.testing.assert_allclose(ours, want, rtol=0, atol=1e-9, err_msg=f"{rel} {sk['name']} config {k}")
            compared += len(ours)
    assert compared == sum(len(sk["dofs"]) * max(len(sk["gravity_forces"]), 1) for sk in ref["skeletons"]
                           if sk["gravity_forces"] and sk["mobile"])


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(LOADABLE))
def test_skel_inertia_matches_dart(rel: str) -> None:
    """Each body's mass, COM and rotational inertia equal DART's (soft bodies: plus the soft mass)."""
    model, ref = load(rel), _reference(rel)
    by_name = {b.name: b for b in model.bodies}
    for sk in ref["skeletons"]:
        pre = _prefix(model, sk["name"])
        for body in sk["bodies"]:
            ours = by_name[pre + body["name"]]
            if "soft_shape" in ours.metadata:
                soft = ours.metadata["soft_shape"]["total_mass"]
                assert ours.inertia.mass == pytest.approx(body["mass"] + soft, abs=1e-12)
                continue
            assert ours.inertia.mass == pytest.approx(body["mass"], abs=1e-12), body["name"]
            np.testing.assert_allclose(ours.inertia.com, body["com"], rtol=0, atol=1e-12)
            np.testing.assert_allclose(ours.inertia.rotational, body["moment"], rtol=1e-12, atol=1e-14,
                                       err_msg=f"{rel} {body['name']}")


@pytest.mark.corpus
def test_skel_dof_counts_match_dart() -> None:
    """hebictl has one velocity coordinate per DART DoF of every mobile skeleton (corpus-wide)."""
    checked = 0
    for rel in LOADABLE:
        ref = run_dart(rel)
        if "crash" in ref:
            continue
        model = load(rel)
        want = sum(len(sk["dofs"]) for sk in ref["skeletons"] if sk["mobile"])
        assert model.nv == want, rel
        checked += 1
    assert checked >= 55


# --------------------------------------------------------------------------- read leniently, validate strictly
DUPLICATE_JOINTS = """<?xml version="1.0" ?>
<skel version="1.0">
  <world name="w">
    <physics><gravity>0 0 -9.81</gravity></physics>
    <skeleton name="arm">
      <body name="a"><inertia><mass>1</mass><offset>0 0 0.1</offset></inertia></body>
      <body name="b"><transformation>0 0 0.2 0 0 0</transformation>
        <inertia><mass>2</mass><offset>0 0.1 0.1</offset></inertia></body>
      <body name="c"><transformation>0 0 0.4 0 0 0</transformation>
        <inertia><mass>1</mass><offset>0 0 0.1</offset></inertia></body>
      <body name="d"><transformation>0.1 0 0.6 0 0 0</transformation>
        <inertia><mass>1</mass><offset>0 0 0.1</offset></inertia></body>
      <joint type="revolute" name="j"><parent>world</parent><child>a</child><axis><xyz>0 0 1</xyz></axis></joint>
      <joint type="revolute" name="j"><parent>a</parent><child>b</child><axis><xyz>1 0 0</xyz></axis></joint>
      <joint type="revolute" name="j(1)"><parent>b</parent><child>c</child><axis><xyz>0 1 0</xyz></axis></joint>
      <joint type="prismatic" name="j"><parent>c</parent><child>d</child><axis><xyz>0 0 1</xyz></axis></joint>
    </skeleton>
  </world>
</skel>
"""


def test_skel_duplicate_joint_names_are_renamed_as_dart_does(tmp_path: Path) -> None:
    """Two joints sharing a name: DART renames the second "name(1)" (then "(2)"..., skipping names in use);
    hebictl does the same with a SkelWarning naming file:line, and strict=True rejects the file."""
    path = tmp_path / "duplicate_joints.skel"
    path.write_text(DUPLICATE_JOINTS)
    with pytest.warns(SkelWarning) as record:
        model = load_skel(path)
    messages = [str(w.message) for w in record]
    assert messages[0].startswith(f"{path}:14: skeleton 'arm' has two joints named 'j'; the second is renamed 'j(1)'")
    assert len(messages) == 3  # j -> j(1); j(1) -> j(1)(1); j -> j(2)
    assert list(model.joint_names) == ["j", "j(1)", "j(1)(1)", "j(2)"]
    with pytest.raises(FormatError, match=r"two joints named 'j'.*DART accepts this") as info:
        load_skel(path, strict=True)
    assert info.value.line == 14


@pytest.mark.corpus  # dartpy (.venv-ref) is installed with the corpus; without it, the corpus's one skip reason
def test_skel_duplicate_joint_names_match_dart(tmp_path: Path) -> None:
    """The renamed joints, poses and gravity torques of the duplicate-name file equal DART's."""
    path = tmp_path / "duplicate_joints.skel"
    path.write_text(DUPLICATE_JOINTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkelWarning)
        model = load_skel(path)
    ref = _reference(str(path))
    assert [j["name"] for j in ref["skeletons"][0]["joints"]] == list(model.joint_names)
    test_skel_poses_match_dart(str(path))
    test_skel_gravity_matches_dart(str(path))
