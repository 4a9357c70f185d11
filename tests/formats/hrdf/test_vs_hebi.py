"""Our HRDF models against hebi-py 2.16.1's, side by side: every corpus HRDF and a table of
synthetic files exercising each feature (overrides, trees, joints, includes, versions).

Compared at random joint positions: masses, frame counts, forward kinematics of every frame type,
Jacobians, gravity compensation, base frame and actuator limits, to 1e-9 — with ``pi`` set to
hebi-py's float32 value (:data:`HEBI_PI`), and to 1e-6 with the true pi.

Where hebi-py's own analytic Jacobians disagree with the derivative of its own forward kinematics
(``HEBI_JACOBIAN_BUGS``), ours are compared with central differences of hebi-py's FK instead.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import FormatError
from hebictl.formats.hrdf import HrdfWarning, load_hrdf, load_hrdf_string
from hebictl.formats.hrdf.grammar import HEBI_PI
from tests._support.corpus import CORPUS_DIR
from tests._support.hebi_py import ROSIE_TOP, compare_with_hebi

HEBI_CORPUS = "hebi"
#: Corpus files hebi-py loads but the spec forbids: (fragment of our strict error, line).
#: Each loads with ``strict=False`` and then matches hebi-py.
SPEC_VIOLATIONS = {
    "hebi-python-examples/advanced/demos/MAPS_control/hrdf/mapsArm_7DoF_standard.hrdf":
        ("<joint> attribute 'axis': '-rx' is not an HRDF axis", 26),
    "hebi-python-examples/kits/igor2/hrdf/igor.hrdf": ("has HRDF version 1.2.0 but the including file has 1.3.0", 6),
    "hebi-python-examples/kits/igor2/hrdf/tgor.hrdf": ("has HRDF version 1.4.0 but the including file has 1.3.0", 6),
    "hebi-python-examples/kits/tready/hrdf/R8-16_reverse.hrdf": ("web URLs need HRDF version >= 1.4.0", 5),
    "hebi-python-examples/kits/tready/hrdf/Tready.hrdf": ("web URLs need HRDF version >= 1.4.0", 3),
    "hebi-python-examples/kits/tready/hrdf/Tready_track.hrdf": ("web URLs need HRDF version >= 1.4.0", 5),
}
#: Corpus files hebi-py rejects: (fragment of our error, file it names (relative), line).
REJECTED = {
    "hebi-python-examples/kits/bases/config/hrdf/A-2592-01.hrdf":
        ("unexpected text '#' inside <rigid-body>", "hebi-python-examples/kits/bases/config/hrdf/A-2592-01.hrdf", 5),
}
#: Frame types whose hebi-py analytic Jacobians contradict hebi-py's own FK: end effectors of trees
#: with several of them, and everything after a reversed ("-rx") joint axis.
HEBI_JACOBIAN_BUGS = {
    "hebi-python-examples/kits/igor2/hrdf/igor.hrdf": {"end_effector"},
    "hebi-python-examples/kits/igor2/hrdf/tgor.hrdf": {"end_effector"},
    "hebi-python-examples/kits/tready/hrdf/Tready.hrdf": {"end_effector"},
    "hebi-python-examples/advanced/demos/MAPS_control/hrdf/mapsArm_7DoF_standard.hrdf":
        {"output", "com", "input", "end_effector"},
}


def _corpus_params() -> list:
    root = CORPUS_DIR / HEBI_CORPUS
    files = sorted(root.rglob("*.hrdf")) if root.is_dir() else []
    return [pytest.param(str(f.relative_to(root)), id=str(f.relative_to(root))) for f in files] or [
        pytest.param(None, id="corpus-absent")]


def _load_hebi(hebi, path: Path):
    try:
        return hebi.robot_model.import_from_hrdf(str(path), warning_callback=lambda w: None), None
    except RuntimeError as exc:
        return None, str(exc)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _corpus_params())
def test_corpus_hrdf_matches_hebi(rel, corpus_dir, hebi):
    """Each corpus HRDF: same model as hebi-py's, or a FormatError where hebi-py (or the spec) rejects it."""
    path = corpus_dir / HEBI_CORPUS / rel
    h, herr = _load_hebi(hebi, path)
    if h is None:
        fragment, where, line = REJECTED[rel]
        with pytest.raises(FormatError) as info:
            load_hrdf(path)
        assert fragment in info.value.message
        assert Path(info.value.file) == corpus_dir / HEBI_CORPUS / where
        assert info.value.line == line
        return
    assert rel not in REJECTED, f"hebi-py loads {rel} now"
    if rel in SPEC_VIOLATIONS:
        fragment, line = SPEC_VIOLATIONS[rel]
        with pytest.raises(FormatError) as info:
            load_hrdf(path, strict=True)
        assert fragment in info.value.message and info.value.line == line
        with pytest.warns(HrdfWarning):
            model = load_hrdf(path)  # the default accepts what hebi-py accepts, with a warning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HrdfWarning)
            exact = load_hrdf(path, pi=math.pi)
    else:
        model = load_hrdf(path)  # default pi is hebi's float32 pi
        exact = load_hrdf(path, pi=math.pi)
    compare_with_hebi(model, h, jacobian_bugs=HEBI_JACOBIAN_BUGS.get(rel, set()))
    # with the true pi the difference to hebi-py is its float32 pi: < 1e-6
    q = np.linspace(-1, 1, h.dof_count)
    np.testing.assert_allclose(exact.forward_kinematics(q, frame="output"),
                               np.array(h.get_forward_kinematics("output", q)), rtol=0, atol=1e-6)


# --------------------------------------------------------------------------- synthetic files
def H(*body: str, version: str = "1.6.0", attrs: str = "") -> str:
    return "\n".join([f'<robot version="{version}"{attrs}>', *body, "</robot>"])


SYNTHETIC = {
    "empty-1.6": H(),
    "empty-1.0-implicit-end-effector": '<robot/>',
    "implicit-end-effector-1.1": H('<actuator type="X5-9"/>', '<link type="X5" extension="0.3+0.025" twist="pi/2"/>',
                                   '<actuator type="X5-4"/>', version="1.1.0"),
    "plain-numbers-1.0": H('<actuator type="X8-3"/>', '<link type="X5" extension=" 0.35" twist="-0.7854"/>',
                           '<actuator type="X5-4"/>', '<rigid-body mass="1e-1" com_trans="0  0.1 0"'
                           ' output_rot="1 0 0  0 0 -1  0 1 0"/>', version="1.0.0"),
    "base-frame": H('<actuator type="X8-9"/>', attrs=' rot="Rz(1)*Rx(-0.5)" trans="1 -2 0.5"'),
    "base-frame-matrix": H('<actuator type="X8-9"/>', attrs=' rot="0 -1 0 1 0 0 0 0 1" trans="0 0 0.1"'),
    "overrides-actuator": H('<actuator type="X5-4" mass="0.4" com_trans="0.01 0.02 0.03" com_rot="Rx(1)"'
                            ' ixx="1e-3" iyz="2e-5"/>',
                            '<link type="X5" extension="0.2" twist="0" mass_offset="0.1" com_trans_offset="0 0.1 0"/>',
                            '<actuator type="X5-9" mass_offset="-0.05" com_trans_offset="0.1 0 -0.05" tag="j2"/>'),
    "overrides-bracket-link": H('<actuator type="X8-16"/>', '<bracket type="X5HeavyRightOutside" mass="0.3"'
                                ' com_rot="Ry(0.3)" com_trans_offset="0.01 0.01 0.01"/>', '<actuator type="X8-9"/>',
                                '<link type="X5" extension="0.4" twist="pi" input="Inline" output="Inline" mass="0.5"'
                                ' com_trans="0 0 0.2"/>', '<actuator type="X5-1"/>'),
    "end-effector-overrides": H('<actuator type="X5-4"/>', '<end-effector type="X5Parallel" mass_offset="0.1"'
                                ' com_trans_offset="0 0 0.01" output_rot="Rz(pi/2)" output_trans="0 0 0.2"/>'),
    "end-effector-custom": H('<actuator type="R8-9"/>', '<end-effector mass="0.1" com_trans="0 0 0.5"'
                             ' output_trans="0 0 0.1"/>'),
    "end-effector-r8-parallel": H('<actuator type="T5-9"/>', '<end-effector type="R8Parallel"/>'),
    "joints-gear-prismatic": H('<joint axis="tz" gear_ratio="2*pi"/>', '<rigid-body mass="1" com_trans="0 0 0.1"'
                               ' output_trans="0 0 0.2"/>', '<joint axis="ry" gear_ratio="-3"/>',
                               '<joint axis="tx"/>', '<rigid-body mass="0.5" com_trans="0.1 0 0"/>',
                               '<joint axis="rx" gear_ratio="1/2"/>', '<actuator type="X5-4"/>'),
    "r25-chain": H('<actuator type="R25-40"/>', '<bracket type="R25HeavyLeftInside"/>', '<actuator type="T25-20"/>',
                   '<link type="R25" extension="0.4" twist="pi/2" output="Inline"/>', '<actuator type="R25-8"/>',
                   '<link type="R25-R8" extension="0.3" twist="-pi/2" input="Inline"/>', '<actuator type="R8-3"/>',
                   '<bracket type="R8LightRight"/>', '<actuator type="T8-3"/>'),
    "tree-rigid-body-outputs": H(
        '<actuator type="X8-9"/>',
        '<rigid-body mass="1.5" com_trans="0.1 0 0" ixx="0.01" iyy="0.02" izz="0.03">',
        '  <output rot="Rx(pi/4)" trans="0.5 0 0">',
        '    <actuator type="X5-9" tag="left"/>', '    <link type="X5" extension="0.3" twist="0"/>',
        '    <actuator type="X5-4"/>', '    <end-effector/>',
        "  </output>",
        "  <output/>",
        '  <output trans="0 -0.2 0">',
        '    <joint axis="rz"/>',
        '    <rigid-body mass="0.2">',
        '      <output trans="0 0 0.1"><actuator type="X5-1"/><end-effector type="X5Parallel"/></output>',
        '      <output rot="Ry(1)"><actuator type="X5-1"/></output>',
        "    </rigid-body>",
        "  </output>",
        "</rigid-body>"),
    "bracket-output": H('<actuator type="X5-4"/>', '<bracket type="X5LightLeft">', '<output>',
                        '<actuator type="X5-4"/><bracket type="X5LightRight"/><actuator type="X5-1"/>', "</output>",
                        "</bracket>"),
    "mesh": H('<rigid-body mass="1" mesh_path="m/a.obj" mesh_rot="Rx(1)" mesh_trans="0 0 1"/>',
              '<actuator type="X5-4"/>'),
    "tags": H('<actuator type="X5-4" tag="base"/>', '<link type="X5" extension="0.3" twist="0" tag="upper"/>',
              '<actuator type="X5-4"/>', '<end-effector tag="tool"/>'),
}


@pytest.mark.parametrize("name", list(SYNTHETIC))
def test_synthetic_hrdf_matches_hebi(name, hebi):
    """Feature-by-feature files: our model equals hebi-py's."""
    text = SYNTHETIC[name]
    h = hebi.robot_model.import_from_hrdf_string(text, warning_callback=lambda w: None)
    bugs = {"end_effector"} if name == "tree-rigid-body-outputs" else set()
    compare_with_hebi(load_hrdf_string(text, pi=HEBI_PI), h, jacobian_bugs=bugs, seed=len(name))


def test_include_matches_hebi(tmp_path, hebi):
    """Includes splice the included chain in place (robot attributes ignored), nested and repeated."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts/leg.hrdf").write_text(H('<actuator type="X5-9"/>', '<link type="X5" extension="0.2"'
                                               ' twist="pi/2"/>', '<include path="../foot.hrdf"/>',
                                               attrs=' rot="Rx(1)" trans="5 5 5" description="ignored"'))
    (tmp_path / "foot.hrdf").write_text(H('<actuator type="X5-1"/>', '<end-effector/>'))
    top = tmp_path / "robot.hrdf"
    top.write_text(H('<rigid-body mass="2">', '<output trans="0.1 0 0"><include path="parts/leg.hrdf"/></output>',
                     '<output trans="-0.1 0 0" rot="Rz(pi)"><include path="./parts/leg.hrdf"/></output>',
                     "</rigid-body>", attrs=' trans="0 0 0.3"'))
    h = hebi.robot_model.import_from_hrdf(str(top))
    model = load_hrdf(top, pi=HEBI_PI)
    compare_with_hebi(model, h, jacobian_bugs={"end_effector"})
    files = [Path(f).name for f in model.metadata["files"]]
    assert files == ["robot.hrdf", "leg.hrdf", "foot.hrdf"]
    assert [e["file"].endswith("foot.hrdf") for e in model.metadata["elements"]].count(True) == 4


# --------------------------------------------------------------------------- where hebi-py is stricter
@pytest.mark.parametrize("text", [
    # FORMAT.md's own multi-output example: <output>s default to output_rot (hebi-py refuses output_rot here)
    H('<rigid-body mass="0.5" com_trans="0.25 0 0" output_rot="Rx(pi)">', '<output rot="Rx(pi/4)" trans="0.5 0 0"/>',
      '<output trans="1.5 0 0"/>', "<output/>", "</rigid-body>"),
    H('<rigid-body mass="+1"/>'),                 # unary plus (GRAMMAR.md unaryOperator)
    H('<rigid-body mass="3*-(-1)"/>'),            # unary operand after '*'
    H('<rigid-body mass="1" com_rot="Rx (1)"/>'),  # whitespace between tokens is skipped
    # interface types arrived in 1.2.0; hebi-py enforces them in older files too
    H('<actuator type="X5-4"/>', '<actuator type="X5-4"/>', version="1.1.0"),
])
def test_spec_valid_files_hebi_rejects(text, hebi):
    """Files the spec allows and hebi-py refuses: we load them."""
    load_hrdf_string(text)
    with pytest.raises(RuntimeError):
        hebi.robot_model.import_from_hrdf_string(text, warning_callback=lambda w: None)


def test_output_defaults_follow_output_rot_and_trans():
    """Each <output> of a rigid body defaults to output_rot/output_trans (FORMAT.md example)."""
    text = H('<rigid-body mass="0.5" com_trans="0.25 0 0" output_rot="Rx(pi)" output_trans="0 0 1">',
             '<output rot="Rx(pi/4)" trans="0.5 0 0"/>', '<output trans="1.5 0 0"/>', "<output/>", "</rigid-body>")
    out = load_hrdf_string(text, pi=math.pi).forward_kinematics(np.zeros(0), frame="output")
    c, s = math.cos(math.pi / 4), math.sin(math.pi / 4)
    np.testing.assert_allclose(out[0][:3, :3], [[1, 0, 0], [0, c, -s], [0, s, c]], atol=1e-15)
    np.testing.assert_allclose(out[0][:3, 3], [0.5, 0, 0])
    np.testing.assert_allclose(out[1][:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-15)
    np.testing.assert_allclose(out[1][:3, 3], [1.5, 0, 0])
    np.testing.assert_allclose(out[2][:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-15)
    np.testing.assert_allclose(out[2][:3, 3], [0, 0, 1])


def test_joint_names_and_metadata(hebi):
    """Joints are named by tag, else J<k>_<type>; element records follow hebi-py's element order."""
    text = SYNTHETIC["tree-rigid-body-outputs"]
    model = load_hrdf_string(text)
    assert model.joint_names == ("J1_X8-9", "left", "J3_X5-4", "J4_rz", "J5_X5-1", "J6_X5-1")
    h = hebi.robot_model.import_from_hrdf_string(text)
    kinds = {"Actuator": "actuator", "Link": "link", "Bracket": "bracket", "RigidBody": "rigid-body",
             "Joint": "joint", "EndEffector": "end-effector"}
    hebi_kinds = [kinds[m.type.name] for m in h.metadata]
    records = model.metadata["elements"]
    assert [r["kind"] for r in records] == hebi_kinds
    assert [r["index"] for r in records] == list(range(len(records)))
    assert records[1]["mass"] == 1.5 and records[2]["tag"] == "left" and records[2]["parent"] == 1
    assert [r["parent_output"] for r in records if r["parent"] == 1] == [0, 2]
    assert model.metadata["version"] == "1.6.0"
    assert all(r["line"] >= 2 for r in records)
    tagged = load_hrdf_string(SYNTHETIC["tags"])
    assert tagged.joint_names == ("base", "J2_X5-4")
    assert [hebi.robot_model.import_from_hrdf_string(SYNTHETIC["tags"]).get_element_idx_by_tag(t)
            for t in ("base", "upper", "tool")] == [r["index"] for r in tagged.metadata["elements"]
                                                    if r["tag"] in ("base", "upper", "tool")]


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[3] / "hrdf_kits").glob("*.hrdf")),
                         ids=lambda p: p.name)
def test_bundled_kits_match_hebi(path, hebi):
    """The kits shipped in hrdf_kits/ give hebi-py's masses, frames, Jacobians and gravity efforts."""
    compare_with_hebi(load_hrdf(path), hebi.robot_model.import_from_hrdf(str(path)))


# --------------------------------------------------------------------------- read leniently, validate strictly
LEG = '''<?xml version="1.0" encoding="UTF-8"?>
<robot version="1.4.0">
  <actuator type="X8-9"/>
  <bracket type="X5Heavy{side}Inside"/>
  <actuator type="X8-16"/>
  <link type="X5" extension="0.325" twist="pi"/>
  <end-effector type="Custom" mass="0.060"/>
</robot>'''
HEXAPOD = '''<?xml version="1.0" encoding="UTF-8"?>
<robot version="1.6.0" description="two-legged Daisy">
  <rigid-body mass="0">
    <output rot="Rz(pi/6)">
      <rigid-body mass="0" output_trans="0.2375 0 0" mesh_path=""/>
      <include path="leg-left.hrdf"/>
    </output>
    <output rot="Rz(-pi/6)">
      <rigid-body mass="0" output_trans="0.2375 0 0" mesh_path=""/>
      <include path="leg-right.hrdf"/>
    </output>
    <output>
      <rigid-body mass="5.00" com_trans="0.050 0.000 0.075" output_trans="0.000 0.000 0.075"
                  mesh_path="https://files.hebi.us/meshes/daisy/A-2051-01.obj" mesh_trans="0 0 -0.019"/>
      <end-effector/>
    </output>
  </rigid-body>
</robot>'''


def test_daisy_like_hexapod_loads_leniently_and_matches_hebi(tmp_path, hebi):
    """HEBI's Daisy.hrdf pattern (empty ``mesh_path``, 1.4.0 legs included from a 1.6.0 body): hebi-py loads
    it, so hebictl does by default, warning with file and line; ``strict=True`` rejects it."""
    (tmp_path / "leg-left.hrdf").write_text(LEG.format(side="Left"))
    (tmp_path / "leg-right.hrdf").write_text(LEG.format(side="Right"))
    top = tmp_path / "Daisy.hrdf"
    top.write_text(HEXAPOD)
    with pytest.warns(HrdfWarning) as record:
        model = load_hrdf(top, pi=HEBI_PI)
    messages = [str(w.message) for w in record]
    assert f"{top}:5: <rigid-body> attribute 'mesh_path' is empty (read as no mesh)" in messages[0]
    assert any(m.startswith(f"{top}:9: ") and "mesh_path" in m for m in messages)
    h = hebi.robot_model.import_from_hrdf(str(top), warning_callback=lambda w: None)
    compare_with_hebi(model, h, jacobian_bugs={"end_effector"})
    with pytest.raises(FormatError, match=r"'mesh_path' is empty") as info:
        load_hrdf(top, strict=True)
    assert (info.value.file, info.value.line) == (str(top), 5)


@pytest.mark.parametrize(("text", "fragment", "line"), [
    (H('<actuator type="X5-4"/>', '<rigid-body mass="0.1" mesh_path=""/>'), "'mesh_path' is empty", 3),
    (H('<actuator type="X5-4"/>', '<rigid-body mass="0.1" mesh_path="C:/meshes/a.obj"/>'), "absolute path", 3),
    (H('<actuator type="X5-4"/>', '<rigid-body mass="0.1" mesh_path="ftp://x.org/a.obj"/>'), "http:// or https://",
     3),
    (H('<actuator type="x5-4"/>', '<link type="X5" extension="0.3" twist="0"/>', version="1.0.0"),
     "case-sensitive before HRDF 1.1.0", 2),
    (H('<actuator type="X5-4"/>', '<joint axis="rz"/>', version="1.7.0"), "read as 1.6.0", 1),
], ids=["mesh-empty", "mesh-absolute", "mesh-scheme", "enum-case-1.0", "newer-version"])
def test_what_hebi_loads_loads_with_a_warning(text, fragment, line, hebi):
    """Each spec violation hebi-py tolerates (and that has one meaning) loads with an HrdfWarning naming
    file:line, giving hebi-py's model; strict=True rejects it at the same line. (A ``<Robot>`` root stays an
    error: hebi-py reads it as a robot with nothing in it.)"""
    with pytest.warns(HrdfWarning, match=fragment) as record:
        model = load_hrdf_string(text, pi=HEBI_PI, source_name="arm.hrdf")
    assert any(str(w.message).startswith(f"arm.hrdf:{line}: ") for w in record)
    compare_with_hebi(model, hebi.robot_model.import_from_hrdf_string(text, warning_callback=lambda w: None))
    with pytest.raises(FormatError, match=fragment) as info:
        load_hrdf_string(text, strict=True, source_name="arm.hrdf")
    assert info.value.line == line


# --------------------------------------------------------------------------- version rule, side by side
#: (version string, what hebi-py 2.16.1 does with it: "loads" or "rejects"), measured by feeding each to
#: ``hebi.robot_model.import_from_hrdf_string``; the test asserts hebi-py still does so, then that we agree.
VERSION_RULE = [
    *[(v, "loads") for v in ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0")],
    *[(v, "rejects") for v in ("1.0.1", "1.4.5", "1.6.1", "1.6.9", "1.7.1", "1.8.0", "1.10.0", "2.0.0", "2.1.0",
                               "9.0.0", "0.9.0", "0.0.0", "1.7", "1", "1.7.0.0", " 1.7.0", "01.7.0", "1.07.0",
                               "1.7.0-rc1", "1.7.x", "", "abc")],
]


@pytest.mark.parametrize(("version", "hebi_does"), VERSION_RULE, ids=[repr(v) for v, _ in VERSION_RULE])
def test_version_rule_matches_hebi(version, hebi_does, hebi):
    """hebictl loads exactly the versions hebi-py loads. The spec versions load silently; 1.7.0, the one
    newer minor version hebi-py reads, loads with a warning saying so (and is an error with strict=True);
    every version hebi-py rejects is a FormatError at the <robot> line."""
    text = H('<actuator type="X8-9"/>', '<link type="X5" extension="0.3" twist="1.5707963"/>',
             '<actuator type="X5-4"/>', version=version)
    try:
        h = hebi.robot_model.import_from_hrdf_string(text, warning_callback=lambda w: None)
    except RuntimeError as exc:
        assert hebi_does == "rejects", f"hebi-py rejects {version!r} now: {exc}"
        with pytest.raises(FormatError, match="unsupported HRDF version") as info:
            load_hrdf_string(text, source_name="arm.hrdf")
        assert info.value.line == 1
        return
    assert hebi_does == "loads", f"hebi-py loads {version!r} now"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = load_hrdf_string(text, pi=HEBI_PI, source_name="arm.hrdf")
    messages = [str(w.message) for w in record]
    compare_with_hebi(model, h)
    if version in ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0"):
        assert messages == []
        return
    assert len(messages) == 1 and messages[0].startswith("arm.hrdf:1: ")
    assert "a newer minor version of 1.x that hebi-py reads: read as 1.6.0" in messages[0]
    with pytest.raises(FormatError, match="hebi-py accepts this"):
        load_hrdf_string(text, strict=True, source_name="arm.hrdf")


# --------------------------------------------------------------------------- '..' includes (HEBI's Rosie)
def _rosie_layout(root: Path, arm: Path) -> Path:
    """robot-config/rosie/config/hrdf/Rosie.hrdf including ../../../arms/config/hrdf/A-2085-06.hrdf."""
    arms = root / "arms" / "config" / "hrdf"
    arms.mkdir(parents=True)
    (arms / "A-2085-06.hrdf").write_bytes(arm.read_bytes())
    rosie = root / "rosie" / "config" / "hrdf"
    rosie.mkdir(parents=True)
    (rosie / "Rosie.hrdf").write_text(ROSIE_TOP)
    return rosie / "Rosie.hrdf"


@pytest.mark.corpus
def test_rosie_includes_a_kit_three_folders_up_and_matches_hebi(tmp_path, corpus_dir, hebi):
    """The HRDF spec: include paths are relative to the including file and '..' moves up a folder. HEBI's
    Rosie.hrdf includes ../../../arms/config/hrdf/A-2085-06.hrdf (the corpus file, copied here in the same
    layout): hebictl loads it by default and agrees with hebi-py; confine=True refuses it, naming the line."""
    from hebictl import load_model

    kit = corpus_dir / HEBI_CORPUS / "hebi-python-examples/kits/arms/config/hrdf/A-2085-06.hrdf"
    top = _rosie_layout(tmp_path / "robot-config", kit)
    model = load_model(top)
    h = hebi.robot_model.import_from_hrdf(str(top), warning_callback=lambda w: None)
    assert model.dof == h.dof_count == 6
    compare_with_hebi(model, h)
    with pytest.raises(FormatError, match=r"outside the allowed folders \(confine=True") as info:
        load_model(top, confine=True)
    assert (info.value.file, info.value.line) == (str(top), 5)
    assert load_model(top, confine=True, allowed_roots=[tmp_path / "robot-config" / "arms"]).dof == 6
