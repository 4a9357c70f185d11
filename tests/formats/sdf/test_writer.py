"""write_sdf round trips: load (HRDF, URDF, SDF) -> write_sdf -> load_sdf keeps the model to 1e-12.

The reference is the original model as its own reader built it (checked against hebi-py,
pinocchio and Drake by the readers' tests); the written file is also loaded by Drake to check it
is valid SDFormat that another tool reads the same way.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.formats import load_model
from hebictl.formats.sdf import load_sdf, load_sdf_string, write_sdf
from hebictl.model.robot import FRAME_ALIASES, RobotModel
from hebictl.model.tree import JointKind
from tests.formats.references import random_q

REPO = Path(__file__).resolve().parents[3]
TOL = 1e-12


def _quiet_load(path: Path, **kw: object) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model(path, **kw)


def assert_same_model(a: RobotModel, b: RobotModel, tol: float = TOL) -> None:
    """Bodies, inertias, joints, frames and kinematics of two models agree to ``tol``."""
    assert a.link_names == b.link_names
    assert a.q_names == b.q_names and a.v_names == b.v_names
    for x, y in zip(a.bodies, b.bodies, strict=True):
        assert x.parent == y.parent, x.name
        assert x.inertia.mass == pytest.approx(y.inertia.mass, abs=tol), x.name
        np.testing.assert_allclose(x.inertia.com, y.inertia.com, rtol=0, atol=tol, err_msg=x.name)
        np.testing.assert_allclose(x.inertia.rotational, y.inertia.rotational, rtol=0, atol=tol, err_msg=x.name)
        jx, jy = x.joint, y.joint
        assert jx.kind == jy.kind, x.name
        if jx.kind in (JointKind.REVOLUTE, JointKind.PRISMATIC):
            np.testing.assert_allclose(jx.axis, jy.axis, rtol=0, atol=tol, err_msg=jx.name)
            for attr in ("lower", "upper", "max_velocity", "max_effort", "damping", "friction", "scale", "armature"):
                vx, vy = getattr(jx, attr), getattr(jy, attr)
                assert (vx == vy) if math.isinf(vx) else vy == pytest.approx(vx, abs=tol), (jx.name, attr)
    np.testing.assert_allclose(a.gravity, b.gravity, rtol=0, atol=0)
    kinds = sorted({f.kind for f in a.frames})
    assert kinds == sorted({f.kind for f in b.frames})
    rng = np.random.default_rng(7)
    Q = np.array([a.neutral_configuration(), *(random_q(a, rng) for _ in range(4))])
    np.testing.assert_allclose(a.link_poses(Q), b.link_poses(Q), rtol=0, atol=tol)
    for fa, fb in zip(a.frames, b.frames, strict=True):
        assert (fa.kind, fa.name, fa.body) == (fb.kind, fb.name, fb.body)
        np.testing.assert_allclose(fa.offset, fb.offset, rtol=0, atol=tol, err_msg=f"{fa.kind} {fa.name}")
    for kind in set(kinds) & set(FRAME_ALIASES.values()):
        np.testing.assert_allclose(a.forward_kinematics(Q, kind), b.forward_kinematics(Q, kind), rtol=0, atol=tol)
    np.testing.assert_allclose(a.gravity_compensation(Q), b.gravity_compensation(Q), rtol=0, atol=1e-9)


def roundtrip(model: RobotModel, floating_base: bool = False) -> RobotModel:
    text = write_sdf(model)
    return load_sdf_string(text, floating_base=floating_base)


@pytest.mark.parametrize("kit", sorted(p.name for p in (REPO / "hrdf_kits").glob("*.hrdf"))[:6])
def test_hrdf_kits_roundtrip(kit: str) -> None:
    """Bundled HRDF kits survive HRDF -> SDF -> hebictl (frames of every kind included)."""
    model = _quiet_load(REPO / "hrdf_kits" / kit)
    assert_same_model(model, roundtrip(model))


def test_writes_valid_sdformat_structure(tmp_path: Path) -> None:
    """The file is SDFormat 1.9 with poses relative to parent links, full inertia and joint limits."""
    model = _quiet_load(REPO / "hrdf_kits" / "x-series-6dof.hrdf")
    path = tmp_path / "arm.sdf"
    text = write_sdf(model, path)
    assert path.read_text() == text
    from lxml import etree

    root = etree.fromstring(text.encode())
    assert root.tag == "sdf" and root.get("version") == "1.9"
    links = root.findall("model/link")
    assert len(links) == len(model.bodies)
    for link, body in zip(links, model.bodies, strict=True):
        rel = link.find("pose").get("relative_to")
        assert rel == ("__model__" if body.parent < 0 else model.link_names[body.parent])
        assert {e.tag for e in link.find("inertial/inertia")} == {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}
    joints = root.findall("model/joint")
    revolute = [j for j in joints if j.get("type") in ("revolute", "continuous")]
    assert len(revolute) == model.dof
    for j in revolute:
        assert j.find("axis/limit/effort") is not None and j.find("axis/limit/velocity") is not None


def _corpus_sdf_files(corpus: Path) -> list[Path]:
    out = []
    for f in sorted((corpus / "sdf").rglob("*.sdf")):
        if "/sdf/1." in str(f):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_sdf(f)
        except Exception:
            continue
        out.append(f)
    return out


def test_corpus_sdf_roundtrip(corpus_dir: Path) -> None:
    """Every corpus SDF hebictl loads round-trips (nested models, frames, ball/universal/screw chains)."""
    files = _corpus_sdf_files(corpus_dir)
    assert len(files) > 100
    failures = []
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_sdf(f)
            try:
                assert_same_model(model, roundtrip(model))
            except (AssertionError, Exception) as exc:
                failures.append(f"{f.relative_to(corpus_dir)}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


def test_corpus_urdf_roundtrip(corpus_dir: Path) -> None:
    """URDF corpus files that load round-trip through SDF (sample of up to 40 files)."""
    files = sorted((corpus_dir / "urdf").rglob("*.urdf"))[:200]
    done, failures = 0, []
    for f in files:
        try:
            model = _quiet_load(f)
        except Exception:
            continue
        try:
            assert_same_model(model, roundtrip(model))
        except (AssertionError, Exception) as exc:
            failures.append(f"{f.name}: {type(exc).__name__}: {str(exc)[:300]}")
        done += 1
        if done >= 40:
            break
    assert done > 0
    assert not failures, "\n".join(failures)


FLOATING = """<sdf version="1.9"><model name="m">
  <link name="a"><pose>1 2 3 0.1 0.2 0.3</pose><inertial><mass>2</mass></inertial></link>
  <link name="b"><pose>1 2 4 0 0 0</pose><inertial><mass>1</mass><pose>0 0 0.1 0 0 0</pose></inertial></link>
  <joint name="j" type="revolute"><parent>a</parent><child>b</child><axis><xyz>1 0 0</xyz></axis></joint>
</model></sdf>"""


def test_floating_base_roundtrip() -> None:
    """A free root link comes back as a free joint at the same default pose (floating_base=True)."""
    model = load_sdf_string(FLOATING, floating_base=True)
    assert model.bodies[0].joint.kind is JointKind.FREE
    back = roundtrip(model, floating_base=True)
    assert_same_model(model, back)
    np.testing.assert_allclose(back.link_poses(back.neutral_configuration())[0][:3, 3], [1, 2, 3], atol=1e-15)


def test_armature_roundtrip() -> None:
    """Joint armature survives write_sdf -> load_sdf (as drake:rotor_inertia with gear ratio 1) to 1e-12."""
    from tests.formats.model_compare import with_armature
    from tests.model.random_trees import random_tree

    model = with_armature(random_tree(8, n=8, kinds=(JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED)), 8)
    assert sum(b.joint.armature > 0 for b in model.bodies) >= 4
    assert_same_model(model, roundtrip(model))


def test_written_kits_load_in_drake(tmp_path: Path) -> None:
    """The SDF written for each bundled kit is valid for Drake: same link poses (1e-12) and gravity (1e-9)."""
    from tests.formats.sdf.drake_reference import compare, prefix_for, run_drake

    files, models = [], {}
    for kit in sorted((REPO / "hrdf_kits").glob("*.hrdf")):
        model = _quiet_load(kit)
        path = tmp_path / f"{kit.stem}.sdf"
        write_sdf(model, path)
        files.append(path)
        models[str(path)] = load_sdf(path)
    refs = run_drake(files, samples=3)
    for f in files:
        ref = refs[str(f)]
        assert ref["ok"], (f.name, ref.get("error"))
        model = models[str(f)]
        compare(model, ref, prefix_for(model))
