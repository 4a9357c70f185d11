"""Drake model directives: a HEBI kit (HRDF) welded onto a table (SDF), checked by hand, against
the HRDF model alone and against Drake running the same directives (arm written to SDF)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import FormatError, SdfWarning
from hebictl.formats import load_model
from hebictl.formats.directives import load_directives, load_directives_string
from hebictl.formats.sdf import write_sdf
from hebictl.model.robot import RobotModel
from tests.formats.references import random_q
from tests.formats.sdf.drake_reference import compare, run_drake

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "hrdf_kits" / "x-series-6dof.hrdf"

TABLE_SDF = """<?xml version="1.0"?>
<sdf version="1.9">
  <model name="table">
    <link name="table_link">
      <inertial><pose>0 0 0.5 0 0 0</pose><mass>20</mass>
        <inertia><ixx>2</ixx><iyy>3</iyy><izz>4</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>
    </link>
    <frame name="top"><pose>0.1 0 0.75 0 0 0</pose></frame>
  </model>
</sdf>
"""

SCENE = """directives:
- add_model:
    name: table
    file: {table}
- add_weld:
    parent: world
    child: table::table_link
    X_PC:
      translation: [1.0, 0.0, 0.0]
      rotation: !Rpy {{ deg: [0, 0, 90] }}
- add_frame:
    name: mount
    X_PF:
      base_frame: table::top
      translation: [0.0, 0.2, 0.0]
      rotation: !AngleAxis {{ angle_deg: 30, axis: [0, 0, 1] }}
- add_model:
    name: arm
    file: {arm}
- add_weld:
    parent: mount
    child: arm::J1_base
"""

# world <- table: T(1,0,0) Rz(90°); table top frame T(0.1, 0, 0.75); mount T(0, 0.2, 0) Rz(30°):
# arm base = T(1,0,0) Rz(90) T(0.1,0.2,0.75) Rz(30) = translation (1 - 0.2, 0.1, 0.75), yaw 120°
_C, _S = math.cos(math.radians(120)), math.sin(math.radians(120))
ARM_BASE = np.array([[_C, -_S, 0.0, 0.8], [_S, _C, 0.0, 0.1], [0.0, 0.0, 1.0, 0.75], [0.0, 0.0, 0.0, 1.0]])


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@pytest.fixture()
def scene(tmp_path: Path) -> tuple[Path, RobotModel, RobotModel]:
    """(directives file, composed scene, HRDF arm alone)."""
    (tmp_path / "table.sdf").write_text(TABLE_SDF)
    path = tmp_path / "scene.dmd.yaml"
    path.write_text(SCENE.format(table="table.sdf", arm="package://kits/x-series-6dof.hrdf"))
    model = _quiet(load_directives, path, package_map={"kits": REPO / "hrdf_kits"})
    return path, model, _quiet(load_model, KIT)


def test_hand_computed_weld_pose(scene: tuple[Path, RobotModel, RobotModel]) -> None:
    """The arm's base sits where the chain of welds and frames puts it (computed by hand)."""
    _, model, arm = scene
    poses = model.link_poses(model.neutral_configuration())
    names = model.link_names
    np.testing.assert_allclose(poses[names.index("arm::J1_base")], ARM_BASE @ arm.link_poses(
        arm.neutral_configuration())[0], rtol=0, atol=1e-14)
    table = poses[names.index("table::table_link")]
    np.testing.assert_allclose(table[:3, 3], [1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(table[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    assert model.dof == arm.dof and model.q_names == tuple(f"arm::{n}" for n in arm.q_names)


def test_weld_offsets_fk_and_keeps_gravity_torques(scene: tuple[Path, RobotModel, RobotModel]) -> None:
    """Welded to a fixed table, the arm's FK is offset by the weld and its gravity torques are unchanged."""
    _, model, arm = scene
    rng = np.random.default_rng(3)
    Q = np.array([random_q(arm, rng) for _ in range(8)])
    for kind in ("end_effector", "output", "com"):
        of_arm = [i for i, f in enumerate(f for f in model.frames if f.kind == kind)
                  if model.bodies[f.body].metadata.get("instance") == "arm"]
        assert len(of_arm) == arm.frame_count(kind)
        np.testing.assert_allclose(model.forward_kinematics(Q, kind)[:, of_arm],
                                   ARM_BASE @ arm.forward_kinematics(Q, kind), rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.gravity_compensation(Q), arm.gravity_compensation(Q), rtol=0, atol=1e-12)
    assert model.total_mass == pytest.approx(arm.total_mass + 20.0, abs=1e-12)


def test_same_scene_in_drake(tmp_path: Path) -> None:
    """Drake runs the scene (arm written to SDF by write_sdf); poses and gravity torques agree."""
    arm = _quiet(load_model, KIT)
    write_sdf(arm, tmp_path / "arm.sdf", weld_base=False)  # its base is welded by the directives
    (tmp_path / "table.sdf").write_text(TABLE_SDF)
    path = tmp_path / "scene.dmd.yaml"
    path.write_text(SCENE.format(table="package://scene/table.sdf", arm="package://scene/arm.sdf"))
    ref = run_drake([path], packages={"scene": tmp_path})[str(path)]
    assert ref["ok"], ref.get("error")
    model = _quiet(load_directives, path, floating_base=False, package_map={"scene": tmp_path})
    compare(model, ref, "")


def test_corpus_directives_vs_drake(corpus_dir: Path) -> None:
    """The corpus's directives files: Drake and hebictl agree on validity, poses and gravity."""
    root = corpus_dir / "sdf" / "RobotLocomotion__models"
    files = sorted(root.rglob("*.dmd.yaml"))
    packages = {"drake_models": root}
    refs = run_drake(files, packages=packages)
    loaded = 0
    for f in files:
        ref = refs[str(f)]
        try:
            model = _quiet(load_directives, f, package_map=packages, floating_base=False)
        except FormatError:
            assert not ref["ok"], f"{f.name}: Drake loads it, hebictl rejects it"
            continue
        assert ref["ok"], f"{f.name}: Drake rejects it ({ref['error'][:200]}), hebictl loads it"
        compare(model, ref, "")
        loaded += 1
    assert loaded >= 1


def test_namespaced_directives_and_free_body_pose(tmp_path: Path) -> None:
    """add_directives prefixes names; default_free_body_pose sets a free body's neutral pose."""
    (tmp_path / "table.sdf").write_text(TABLE_SDF)
    (tmp_path / "inner.dmd.yaml").write_text(
        "directives:\n- add_model: {name: table, file: table.sdf, default_free_body_pose: "
        "{table_link: {translation: [0, 0, 2], rotation: !Rpy {deg: [90, 0, 0]}}}}\n")
    outer = tmp_path / "outer.dmd.yaml"
    outer.write_text("directives:\n- add_directives: {file: inner.dmd.yaml, model_namespace: left}\n")
    model = load_directives(outer)
    assert model.link_names == ("left::table::table_link",)
    assert model.q_names[:3] == tuple(f"left::table::table_link_{c}" for c in "xyz")
    X = model.link_poses(model.neutral_configuration())[0]
    np.testing.assert_allclose(X[:3, 3], [0, 0, 2], atol=1e-15)
    np.testing.assert_allclose(X[:3, :3], [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-15)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("directives:\n- add_fish: {name: a}\n", "unknown directive 'add_fish'", 2),
    ("directives:\n- add_weld: {parent: world, child: nothing::here}\n", "no frame named 'nothing::here'", 2),
    ("directives:\n- add_model: {name: t, file: pkg://x}\n", "not found", 2),
    ("directives:\n- add_model: {name: t, file: package://nope/x.sdf}\n", "package 'nope'", 2),
    ("directives:\n- add_frame: {name: f, X_PF: {translation: [1, 2]}}\n", "translation must be 3", 2),
    ("directives:\n- add_frame:\n    name: f\n    X_PF: {rotation: !Rpy {turns: [1, 2, 3]}}\n", "!Rpy needs", 4),
    ("directives: [\n", "YAML error", None),
    ("models: []\n", "'directives:' list", 1),
])
def test_errors_name_file_and_line(tmp_path: Path, text: str, message: str, line: int | None) -> None:
    """Bad directives raise FormatError naming the file and the line."""
    with pytest.raises(FormatError) as err:
        load_directives_string(text, base_dir=tmp_path, source_name="bad.dmd.yaml")
    assert message in err.value.message
    assert err.value.file is not None and err.value.file.endswith("bad.dmd.yaml")
    if line is not None:
        assert err.value.line == line


def test_weld_of_a_jointed_body_is_refused(tmp_path: Path, scene: tuple[Path, RobotModel, RobotModel]) -> None:
    """Only a body no joint moves can be welded (Drake's rule)."""
    path, _, _ = scene
    text = path.read_text() + "- add_weld: {parent: world, child: arm::J2_shoulder}\n"
    with pytest.raises(FormatError, match="already has a joint"):
        load_directives_string(text, base_dir=path.parent, package_map={"kits": REPO / "hrdf_kits"})


def test_included_files_warnings_reach_the_caller(tmp_path: Path) -> None:
    """A lenient case in a model the directives add (libsdformat reads "0.75junk" as 0.75, with a
    warning) is warned about, naming the included file and its line, not silenced by the composer."""
    (tmp_path / "table.sdf").write_text(TABLE_SDF.replace("<mass>20</mass>", "<mass>20kg</mass>"))
    path = tmp_path / "scene.dmd.yaml"
    path.write_text("directives:\n- add_model:\n    name: table\n    file: table.sdf\n")
    with pytest.warns(SdfWarning, match=r"table\.sdf:5: .*'20kg'") as record:
        model = load_directives(path)
    assert any("20kg" in str(w.message) for w in record)
    assert model.bodies[0].inertia.mass == pytest.approx(20.0)
