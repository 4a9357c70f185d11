# ruff: noqa: E501  (the test URDF keeps one element per line, so the expected error lines read off easily)
"""Drake's URDF extensions, read by hebictl and by Drake (tools/ref_drake_dynamics.py) side by side.

One URDF uses every extension (``drake:joint`` ball/planar/screw/universal, ``drake:mimic``,
transmissions with ``drake:rotor_inertia``/``drake:gear_ratio``/``drake:controller_gains``,
``drake:acceleration``, capsule/ellipsoid shapes, proximity properties, collision filter groups,
a ball constraint, a bushing, and a ``<gazebo>`` element Drake ignores). Link poses, gravity and
inverse dynamics — reflected rotor inertia included — must equal Drake's; malformed extensions
are rejected with the file and line, as Drake rejects them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import FormatError, UrdfWarning
from hebictl.formats.sdf import load_sdf
from hebictl.formats.urdf import load_urdf, load_urdf_string
from tests._support.corpus import CORPUS_DIR
from tests.formats import drake_dynamics

URDF = """<?xml version="1.0"?>
<robot name="ext" xmlns:drake="http://drake.mit.edu">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><drake:capsule radius="0.1" length="0.3"/></geometry>
      <drake:proximity_properties><drake:mu_dynamic value="0.5"/><drake:rigid_hydroelastic/>
        <drake:mesh_resolution_hint value="0.05"/></drake:proximity_properties></collision>
    <visual><geometry><drake:ellipsoid a="0.1" b="0.2" c="0.3"/></geometry></visual>
  </link>
  <link name="a"><inertial><origin xyz="0.1 0 0.05" rpy="0.1 0.2 0.3"/><mass value="1.5"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0.1 0"/><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.05 0 0.1"/><mass value="0.7"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="d"><inertial><mass value="0.5"/><inertia ixx="0.004" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.006"/></inertial></link>
  <link name="e"><inertial><origin xyz="0 0 0.1"/><mass value="0.3"/><inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/></inertial></link>
  <link name="f"><inertial><origin xyz="0.02 0 0"/><mass value="0.2"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>
  <link name="g"><inertial><origin xyz="0 0.03 0"/><mass value="0.4"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>
  <joint name="j_rev" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.2" rpy="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="3" drake:acceleration="7"/></joint>
  <drake:joint name="j_uni" type="universal"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0" rpy="0 0.2 0"/>
    <dynamics damping="0.2"/></drake:joint>
  <drake:joint name="j_ball" type="ball"><parent link="b"/><child link="c"/><origin xyz="0 0.2 0" rpy="0.3 -0.2 0.5"/></drake:joint>
  <drake:joint name="j_screw" type="screw"><parent link="c"/><child link="d"/><origin xyz="0 0 0.2"/><axis xyz="0.3 0 1"/>
    <drake:screw_thread_pitch value="0.04"/></drake:joint>
  <drake:joint name="j_planar" type="planar"><parent link="d"/><child link="e"/><origin xyz="0.1 0 0" rpy="0.3 0 0"/><axis xyz="0.2 0.5 1"/>
    <dynamics damping="0.1 0.2 0.3"/></drake:joint>
  <joint name="j_pri" type="prismatic"><parent link="e"/><child link="f"/><origin xyz="0 0 0.1"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="5" velocity="1" drake:acceleration="2"/>
    <mimic joint="j_rev" multiplier="0.5" offset="0.1"/></joint>
  <joint name="j_plane2" type="planar"><parent link="f"/><child link="g"/><origin xyz="0 0.1 0"/><axis xyz="0 0 -1"/></joint>
  <transmission name="t1"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j_rev"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
    <actuator name="m1"><drake:rotor_inertia value="0.002"/><drake:gear_ratio value="50"/><drake:controller_gains p="100" d="10"/></actuator></transmission>
  <transmission name="t2"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j_pri"/><actuator name="m2"><drake:rotor_inertia value="0.3"/></actuator></transmission>
  <transmission name="t3"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j_screw"/><actuator name="m3"><drake:rotor_inertia value="0.01"/><drake:gear_ratio value="3"/></actuator></transmission>
  <drake:collision_filter_group name="g1"><drake:member link="a"/><drake:member link="b"/><drake:ignored_collision_filter_group name="g1"/></drake:collision_filter_group>
  <drake:ball_constraint><drake:ball_constraint_body_A name="a"/><drake:ball_constraint_body_B name="f"/>
    <drake:ball_constraint_p_AP value="0 0 0.1"/><drake:ball_constraint_p_BQ value="0 0 0"/></drake:ball_constraint>
  <frame name="fa" link="a" xyz="0.1 0 0" rpy="0 0 0"/>
  <frame name="fb" link="b" xyz="0 0 0" rpy="0 0 0"/>
  <drake:linear_bushing_rpy><drake:bushing_frameA name="fa"/><drake:bushing_frameC name="fb"/>
    <drake:bushing_torque_stiffness value="1 1 1"/><drake:bushing_torque_damping value="1 1 1"/>
    <drake:bushing_force_stiffness value="1 1 1"/><drake:bushing_force_damping value="1 1 1"/></drake:linear_bushing_rpy>
  <gazebo reference="a"><material>Gazebo/Red</material></gazebo>
</robot>
"""


def edit(old: str, new: str) -> str:
    assert URDF.count(old) == 1, old
    return URDF.replace(old, new)


def line_with(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


# (id, text, message fragment, marker of the line hebictl names, whether Drake 1.51 refuses it too)
ERRORS = [
    ("standard-type-as-drake-joint", edit('<drake:joint name="j_ball" type="ball"', '<drake:joint name="j_ball" type="fixed"'),
     "write it as <joint>", 'name="j_ball"', True),
    ("drake-type-as-joint", edit('<drake:joint name="j_ball" type="ball"><parent link="b"/><child link="c"/><origin xyz="0 0.2 0" rpy="0.3 -0.2 0.5"/></drake:joint>',
                                 '<joint name="j_ball" type="ball"><parent link="b"/><child link="c"/></joint>'),
     "write it as <drake:joint>", 'name="j_ball"', True),
    ("unknown-drake-type", edit('type="universal"', 'type="gimbal"'), "has type 'gimbal'", 'name="j_uni"', True),
    ("screw-without-pitch", edit('<drake:screw_thread_pitch value="0.04"/>', ""), "needs a <drake:screw_thread_pitch",
     'name="j_screw"', True),
    ("rotor-inertia-without-value", edit('<drake:rotor_inertia value="0.002"/>', "<drake:rotor_inertia/>"),
     "<drake:rotor_inertia> needs a 'value'", 'name="m1"', True),
    ("gear-ratio-not-a-number", edit('<drake:gear_ratio value="50"/>', '<drake:gear_ratio value="abc"/>'),
     "not a number", 'name="m1"', True),
    ("acceleration-not-a-number", edit('drake:acceleration="7"', 'drake:acceleration="x"'), "not a number",
     'drake:acceleration="x"', True),
    # Drake aborts the process on a negative limit (a failed assertion, not a parse error)
    ("acceleration-negative", edit('drake:acceleration="7"', 'drake:acceleration="-3"'), "must be >= 0",
     'drake:acceleration="-3"', None),
    ("rotor-inertia-negative", edit('<drake:rotor_inertia value="0.002"/>', '<drake:rotor_inertia value="-1"/>'),
     "must be >= 0", 'name="m1"', False),  # Drake takes it (and a negative reflected inertia)
    ("gains-without-d", edit('<drake:controller_gains p="100" d="10"/>', '<drake:controller_gains p="100"/>'),
     "'d' is missing", 'name="m1"', True),
    ("universal-actuated", edit('<joint name="j_pri"/>', '<joint name="j_uni"/>'),
     "only one-degree-of-freedom joints", '<joint name="j_uni"/>', True),
    ("transmission-unknown-joint", edit('<joint name="j_pri"/>', '<joint name="nope"/>'), "'nope', which does not exist",
     '<joint name="nope"/>', True),
    ("capsule-without-length", edit('<drake:capsule radius="0.1" length="0.3"/>', '<drake:capsule radius="0.1"/>'),
     "missing the attribute 'length'", "drake:capsule", True),
    ("ellipsoid-without-c", edit('<drake:ellipsoid a="0.1" b="0.2" c="0.3"/>', '<drake:ellipsoid a="0.1" b="0.2"/>'),
     "missing the attribute 'c'", "drake:ellipsoid", True),
    ("filter-group-unknown-link", edit('<drake:member link="b"/>', '<drake:member link="zz"/>'), "link 'zz'",
     "drake:collision_filter_group", True),
    ("filter-group-without-name", edit('<drake:collision_filter_group name="g1">', "<drake:collision_filter_group>"),
     "needs a 'name'", "drake:collision_filter_group", True),
    ("ball-constraint-unknown-body", edit('<drake:ball_constraint_body_B name="f"/>', '<drake:ball_constraint_body_B name="zz"/>'),
     "link 'zz'", "drake:ball_constraint_body_B", True),
    ("ball-constraint-without-p_AP", edit('<drake:ball_constraint_p_AP value="0 0 0.1"/>', ""),
     "needs a <drake:ball_constraint_p_AP", "<drake:ball_constraint>", True),
    ("bushing-unknown-frame", edit('<drake:bushing_frameC name="fb"/>', '<drake:bushing_frameC name="zz"/>'),
     "frame 'zz'", "drake:bushing_frameC", True),
    ("bushing-two-values", edit('<drake:bushing_force_stiffness value="1 1 1"/>', '<drake:bushing_force_stiffness value="1 1"/>'),
     "3 numbers", "drake:bushing_force_stiffness", True),
    ("mimic-unknown-joint", edit('<mimic joint="j_rev"', '<mimic joint="zz"'), "joint 'zz', which does not exist",
     '<mimic joint="zz"', True),
    ("curvilinear", edit('type="universal"', 'type="curvilinear"'), "not supported by hebictl", 'name="j_uni"', None),
]


@pytest.fixture(scope="module")
def drake_results(tmp_path_factory):
    """Drake on the extension URDF and on every malformed variant (one subprocess)."""
    folder = tmp_path_factory.mktemp("drake_urdf")
    files = {"good": folder / "ext.urdf"}
    files["good"].write_text(URDF)
    for row in ERRORS:
        if row[4] is not None:
            files[row[0]] = folder / f"{row[0]}.urdf"
            files[row[0]].write_text(row[1])
    out = drake_dynamics.run(list(files.values()), samples=4, seed=3)
    return {k: (p, out[str(p)]) for k, p in files.items()}


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(path)


def test_extensions_match_drake_kinematics_gravity_and_inverse_dynamics(drake_results):
    """Link poses (1e-12), gravity and inverse dynamics with reflected rotor inertia (1e-9) equal Drake's."""
    path, result = drake_results["good"]
    drake_dynamics.compare(_load(path), result)


def test_actuator_settings_and_limits_equal_drakes(drake_results):
    """Armature = Drake's rotor_inertia·gear_ratio² per actuated joint; acceleration limits and PD gains as Drake's."""
    path, result = drake_results["good"]
    model = _load(path)
    joints = {b.joint.name: b.joint for b in model.bodies}
    actuated = {drake_dynamics.hebictl_name(a["joint"]): a for a in result["actuators"]}
    assert set(actuated) == {"j_rev", "j_pri", "j_screw"}
    for name, a in actuated.items():
        j = joints[name + ("_rotation" if name == "j_screw" else "")]
        assert j.armature == pytest.approx(a["rotor_inertia"] * a["gear_ratio"] ** 2, rel=1e-15)
        assert j.metadata.get("controller_gains") == a.get("controller_gains")
    assert sum(j.armature > 0 for j in joints.values()) == 3  # a screw's translation has none
    for j in result["joints"]:
        if j["nv"] == 1 and j["type"] in ("revolute", "prismatic"):
            name = drake_dynamics.hebictl_name(j["name"])
            assert joints[name].metadata.get("max_acceleration", np.inf) == j["acceleration_upper"][0]


def test_metadata_keeps_what_drake_uses_for_contact_and_constraints():
    """Shapes, proximity properties, filter groups, ball constraint, bushing and mimic land in metadata."""
    with pytest.warns(UrdfWarning, match=r"<gazebo> x1"):
        model = load_urdf_string(URDF)
    base = model.bodies[0].metadata
    assert base["collisions"][0]["type"] == "drake:capsule" and base["collisions"][0]["length"] == 0.3
    assert base["collisions"][0]["drake:proximity_properties"] == {"mu_dynamic": 0.5, "rigid_hydroelastic": True,
                                                                   "mesh_resolution_hint": 0.05}
    assert base["visuals"][0] == {"origin": np.eye(4).tolist(), "type": "drake:ellipsoid", "radii": [0.1, 0.2, 0.3]}
    d = model.metadata["drake"]
    assert d["collision_filter_groups"][0]["members"] == ["a", "b"]
    assert d["collision_filter_groups"][0]["ignored_groups"] == ["g1"]
    assert d["ball_constraint"][0] | {"line": 0} == {"body_A": "a", "body_B": "f", "p_AP": [0.0, 0.0, 0.1],
                                                      "p_BQ": [0.0, 0.0, 0.0], "line": 0}
    assert d["linear_bushing_rpy"][0]["frameC"] == "fb"
    pri = model.bodies[model.link_names.index("f")].joint
    assert (pri.metadata["mimic"]["joint"], pri.metadata["mimic"]["multiplier"]) == ("j_rev", 0.5)
    planar = [b.joint for b in model.bodies if b.joint.name.startswith("j_planar")]
    assert [j.damping for j in planar] == [0.1, 0.2, 0.3]


@pytest.mark.parametrize("row", ERRORS, ids=[r[0] for r in ERRORS])
def test_malformed_extension_is_an_error_with_its_line(row, drake_results):
    """hebictl names file and line of the defect; Drake refuses the same text where the flag says so."""
    rid, text, message, marker, drake_refuses = row
    with pytest.raises(FormatError) as err:
        load_urdf_string(text, source_name=f"{rid}.urdf")
    assert message in err.value.message, str(err.value)
    assert err.value.file == f"{rid}.urdf" and err.value.line == line_with(text, marker), str(err.value)
    if drake_refuses is not None:
        assert drake_results[rid][1]["ok"] is (not drake_refuses), drake_results[rid][1]


WARNINGS = [
    ("zero-effort", edit('effort="10"', 'effort="0"'), "effort limit is 0: Drake skips it", "j_rev"),
    ("not-simple", edit("<type>transmission_interface/SimpleTransmission</type>\n    <joint name=\"j_rev\">",
                        "<type>transmission_interface/DifferentialTransmission</type>\n    <joint name=\"j_rev\">"),
     "not a SimpleTransmission", "j_rev"),
    ("fixed", edit('<joint name="j_pri" type="prismatic">', '<joint name="j_pri" type="fixed">'),
     "fixed joint 'j_pri': Drake skips it", "j_pri"),
]


@pytest.mark.parametrize("row", WARNINGS, ids=[r[0] for r in WARNINGS])
def test_transmissions_drake_skips_warn_and_add_no_armature(row):
    """Transmissions Drake skips (zero effort, not simple, fixed joint): a warning, no armature."""
    _, text, message, joint = row
    with pytest.warns(UrdfWarning, match=message):
        model = load_urdf_string(text)
    j = model.bodies[model.link_names.index({"j_rev": "a", "j_pri": "f"}[joint])].joint
    assert j.armature == 0.0 and "reflected_inertia" not in j.metadata


# ------------------------------------------------------------------------------------------- corpus
def _corpus_files() -> list[Path]:
    if not CORPUS_DIR.is_dir():
        return []
    return sorted(p for sub in ("urdf", "sdf") for p in (CORPUS_DIR / sub).rglob("*")
                  if p.suffix in (".urdf", ".sdf") and "drake:rotor_inertia" in p.read_text(errors="replace"))


@pytest.mark.corpus
def test_corpus_rotor_inertia_inverse_dynamics_matches_drake():
    """Every corpus URDF/SDF with drake:rotor_inertia: gravity and inverse dynamics equal Drake's (armature included)."""
    files = _corpus_files()
    if not files:
        pytest.skip("no corpus (../shared/corpus) beside the repository")
    results = drake_dynamics.run(files, samples=2, seed=5, geometry=False)  # meshes are not needed
    compared = 0
    for path in files:
        result = results[str(path)]
        if not result["ok"]:
            continue  # validity is test_sdf_vs_drake's and test_urdf_corpus's business
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_urdf(path) if path.suffix == ".urdf" else load_sdf(path)
        assert any(b.joint.armature > 0 for b in model.bodies), path
        drake_dynamics.compare(model, result, poses=False)
        compared += 1
    print(f"corpus files with drake:rotor_inertia: {len(files)}, inverse dynamics equal Drake's: {compared}")
    assert compared >= len(files) // 2
