"""SDFormat reader: frame semantics, version differences, includes, Drake extensions, errors.

Kinematics are checked against Drake run on the same text (tools/ref_drake.py in a subprocess,
one batch per test), errors against the specification's rules with file and line.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import FormatError, SdfWarning
from hebictl.formats import load_model
from hebictl.formats.sdf import load_sdf, load_sdf_string
from hebictl.model.tree import JointKind
from tests.formats.sdf.drake_reference import compare, prefix_for, run_drake

PENDULUM = """<?xml version="1.0"?>
<sdf version="{v}">
  <model name="pendulum">
    <pose>0.3 0.1 0.2 0 0 0.4</pose>
    <link name="base"><pose>0 0 1 0.2 0 0</pose>
      <inertial><mass>3</mass><inertia><ixx>0.1</ixx><iyy>0.2</iyy><izz>0.3</izz></inertia></inertial></link>
    <link name="arm"><pose>0.5 0 1 0 0.3 0.1</pose>
      <inertial><pose>0.2 0 0 0 0 0.7</pose><mass>2</mass>
        <inertia><ixx>0.01</ixx><ixy>0.001</ixy><iyy>0.02</iyy><izz>0.03</izz></inertia></inertial></link>
    <joint name="hinge" type="revolute">
      <pose>0.1 0.05 0 0 0 0</pose><parent>base</parent><child>arm</child>
      <axis><xyz{expressed}>0 1 1</xyz>{upmf}<limit><lower>-1</lower><upper>2</upper><effort>5</effort>
        <velocity>3</velocity></limit></axis>
    </joint>
  </model>
</sdf>
"""

VERSIONS = [  # (version, xyz attribute, extra axis element): the axis frame rules of each version
    ("1.4", "", ""),                                                           # model frame (1.4->1.5)
    ("1.5", "", ""),                                                           # joint frame
    ("1.6", "", "<use_parent_model_frame>true</use_parent_model_frame>"),      # model frame
    ("1.6", "", "<use_parent_model_frame>false</use_parent_model_frame>"),     # joint frame
    ("1.7", "", ""),                                                           # joint frame
    ("1.8", ' expressed_in="__model__"', ""),                                  # model frame
    ("1.9", ' expressed_in="base"', ""),                                       # parent link frame
    ("1.11", "", ""),
]

FRAMES_19 = """<sdf version="1.9">
  <model name="m" canonical_link="L2">
    <link name="L1"><pose relative_to="F1">1 0 0 0 0 0.5</pose></link>
    <link name="L2"><pose degrees="true">0 0 1 90 0 0</pose></link>
    <frame name="F1" attached_to="L2"><pose relative_to="L2">0 1 0 0 0.3 0</pose></frame>
    <frame name="F2" attached_to="J"><pose rotation_format="quat_xyzw">0 0 0.5 0 0 0.6 0.8</pose></frame>
    <joint name="J" type="prismatic"><pose relative_to="F1">0 0 0.2 0 0 0</pose>
      <parent>L2</parent><child>L1</child><axis><xyz expressed_in="F2">1 0 0</xyz></axis></joint>
    <model name="nested" placement_frame="P"><pose relative_to="F1">0 0 3 0 0 0</pose>
      <link name="A"><pose>1 0 0 0 0 0</pose></link>
      <link name="B"><pose>0 2 0 0 0 1</pose></link>
      <frame name="P" attached_to="B"><pose relative_to="B">0 0 1 0 0 0</pose></frame>
      <joint name="ball" type="ball"><parent>A</parent><child>B</child><pose>0.1 0 0 0 0 0</pose></joint>
    </model>
    <joint name="to_nested" type="universal"><parent>L1</parent><child>nested::A</child>
      <axis><xyz>1 0 0</xyz></axis><axis2><xyz>0 1 0</xyz></axis2></joint>
  </model>
</sdf>
"""

DRAKE_EXT = """<sdf version="1.9" xmlns:drake="http://drake.mit.edu">
  <model name="m">
    <link name="a"/><link name="b"><pose>0 0 1 0 0 0</pose></link>
    <link name="c"><pose>0 0 2 0 0 0</pose></link><link name="d"><pose>0 0 3 0 0 0</pose></link>
    <joint name="j1" type="revolute"><parent>a</parent><child>b</child><axis><xyz>1 0 0</xyz>
      <limit><effort>10</effort><drake:acceleration>4</drake:acceleration></limit></axis>
      <drake:rotor_inertia>0.5</drake:rotor_inertia><drake:gear_ratio>3</drake:gear_ratio>
      <drake:controller_gains p="100" d="10"/></joint>
    <joint name="j2" type="revolute"><parent>b</parent><child>c</child><axis><xyz>0 1 0</xyz></axis>
      <drake:mimic joint="j1" multiplier="2" offset="0.1"/></joint>
    <drake:joint name="p" type="planar"><drake:parent>c</drake:parent><drake:child>d</drake:child>
      <drake:damping>0 0 0</drake:damping></drake:joint>
    <drake:collision_filter_group name="g"><drake:member>a</drake:member><drake:member>b</drake:member>
      <drake:ignored_collision_filter_group>g</drake:ignored_collision_filter_group></drake:collision_filter_group>
  </model>
</sdf>
"""

SCREW = """<sdf version="1.10"><model name="s">
  <link name="a"/><link name="b"><pose>0 0 1 0 0.2 0</pose><inertial><pose>0.1 0 0 0 0 0</pose><mass>2</mass>
  </inertial></link>
  <joint name="s" type="screw"><parent>a</parent><child>b</child><pose>0.3 0 0 0 0 0</pose>
    <axis><xyz>0 0 1</xyz></axis><screw_thread_pitch>0.25</screw_thread_pitch></joint>
</model></sdf>
"""

WORLD = """<sdf version="1.8"><world name="w"><gravity>0 0 -3</gravity>
  <frame name="shelf"><pose>1 2 0 0 0 0.5</pose></frame>
  <model name="a"><pose relative_to="shelf">0 0 1 0 0 0</pose><link name="l"/></model>
  <model name="b"><link name="l"/><link name="k"><pose>1 0 0 0 0 0</pose></link>
    <joint name="j" type="continuous"><parent>l</parent><child>k</child><axis><xyz>0 0 1</xyz></axis></joint></model>
</world></sdf>
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _load(path: Path, **kw: object):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_sdf(path, **kw)


def test_versions_and_frames_vs_drake(tmp_path: Path) -> None:
    """Axis frames of 1.4-1.11, relative_to/attached_to/placement_frame, Drake extensions, screw: as Drake."""
    files = [_write(tmp_path, f"v{i}.sdf", PENDULUM.format(v=v, expressed=e, upmf=u))
             for i, (v, e, u) in enumerate(VERSIONS)]
    files += [_write(tmp_path, "frames.sdf", FRAMES_19), _write(tmp_path, "drake.sdf", DRAKE_EXT),
              _write(tmp_path, "screw.sdf", SCREW), _write(tmp_path, "world.world.sdf", WORLD)]
    refs = run_drake(files, samples=4)
    axes = []
    for f in files:
        ref = refs[str(f)]
        assert ref["ok"], (f.name, ref.get("error"))
        model = _load(f)
        compare(model, ref, prefix_for(model))
        if f.name.startswith("v"):
            hinge = next(b for b in model.bodies if b.joint.name == "hinge")  # on a joint-frame body (off-axis)
            assert hinge.metadata.get("synthetic") == "joint_frame"
            axes.append(hinge.joint.axis)
    # the versions really differ: model-frame and joint-frame axes are not the same vector
    assert not np.allclose(axes[0], axes[1]) and np.allclose(axes[0], axes[2]) and np.allclose(axes[1], axes[3])


def test_includes_of_sdf_and_urdf_vs_drake(tmp_path: Path) -> None:
    """<include> of SDF and URDF by package:// URI, with name, pose, static, placement and merge, as Drake."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    _write(pkg, "leg.sdf", """<sdf version="1.9"><model name="leg">
      <link name="hip"/><link name="shin"><pose>0 0 -0.5 0 0 0</pose><inertial><mass>1.5</mass></inertial></link>
      <frame name="mount" attached_to="hip"><pose>0 0 0.1 0 0 0</pose></frame>
      <joint name="knee" type="revolute"><parent>hip</parent><child>shin</child><axis><xyz>0 1 0</xyz></axis>
      </joint></model></sdf>""")
    _write(pkg, "arm.urdf", """<robot name="arm"><link name="base"><inertial><mass value="2"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
      <link name="tip"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
      <joint name="elbow" type="revolute"><parent link="base"/><child link="tip"/><origin xyz="0 0 0.3" rpy="0 0.2 0"/>
      <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="3" velocity="2"/></joint></robot>""")
    top = _write(tmp_path, "top.sdf", """<sdf version="1.9"><model name="robot">
      <link name="body"><pose>0 0 1 0 0 0</pose><inertial><mass>5</mass></inertial></link>
      <include><uri>package://pkg/leg.sdf</uri><name>left</name><pose>0.2 0.1 0.5 0 0 0.3</pose></include>
      <include><uri>package://pkg/leg.sdf</uri><name>right</name><placement_frame>mount</placement_frame>
        <pose relative_to="body">-0.2 0 0 0 0 0</pose></include>
      <include merge="true"><uri>package://pkg/arm.urdf</uri><pose relative_to="body">0 0 0.2 0 0 0</pose></include>
      <joint name="left_hip" type="revolute"><parent>body</parent><child>left::hip</child>
        <axis><xyz>1 0 0</xyz></axis></joint>
      <joint name="right_hip" type="fixed"><parent>body</parent><child>right::mount</child></joint>
      <joint name="arm_mount" type="fixed"><parent>body</parent><child>base</child></joint>
    </model></sdf>""")
    ref = run_drake([top], samples=4, packages={"pkg": pkg})[str(top)]
    assert ref["ok"], ref.get("error")
    model = _load(top, package_map={"pkg": pkg})
    assert {"left::shin", "right::shin", "tip"} <= set(model.link_names)
    assert "elbow" in model.q_names and "left::knee" in model.q_names
    compare(model, ref, prefix_for(model))


def test_world_gravity_model_choice_and_prefixes(tmp_path: Path) -> None:
    """A world loads all its models (prefixed) with its gravity, or one chosen by model=."""
    path = _write(tmp_path, "w.sdf", WORLD)
    world = _load(path)
    np.testing.assert_array_equal(world.gravity, [0, 0, -3])
    assert world.link_names == ("a::l", "b::l", "b::k") and world.q_names == ("b::j",)
    pose = world.link_poses(world.neutral_configuration())[0]
    c, s = math.cos(0.5), math.sin(0.5)
    np.testing.assert_allclose(pose[:3, 3], [1, 2, 1], atol=1e-15)
    np.testing.assert_allclose(pose[:3, :2], [[c, -s], [s, c], [0, 0]], atol=1e-15)
    b = _load(path, model="b")
    assert b.link_names == ("l", "k") and b.q_names == ("j",)
    assert math.isinf(b.bodies[1].joint.upper)
    with pytest.raises(FormatError, match="no model 'c'"):
        _load(path, model="c")


def test_floating_base_and_defaults() -> None:
    """Free links get a free joint at their pose; links without <inertial> weigh SDFormat's 1 kg."""
    model = load_sdf_string(PENDULUM.format(v="1.9", expressed="", upmf=""), floating_base=True)
    assert model.bodies[0].joint.kind is JointKind.FREE and model.bodies[0].joint.name == "base"
    fixed = load_sdf_string(PENDULUM.format(v="1.9", expressed="", upmf=""))
    q = model.neutral_configuration()
    np.testing.assert_allclose(model.link_poses(q), fixed.link_poses(fixed.neutral_configuration()), atol=1e-15)
    bare = load_sdf_string('<sdf version="1.9"><model name="m"><link name="l"/></model></sdf>')
    assert bare.bodies[0].inertia.mass == 1.0
    np.testing.assert_array_equal(bare.bodies[0].inertia.rotational, np.eye(3))
    assert load_model  # dispatcher routes .sdf here (checked in test_dispatch)


def test_drake_extensions_metadata() -> None:
    """drake:* elements are kept: reflected inertia, acceleration, gains, mimic, filter groups."""
    model = load_sdf_string(DRAKE_EXT)
    j1 = model.bodies[model.link_names.index("b")].joint
    assert j1.metadata["reflected_inertia"] == pytest.approx(0.5 * 3**2)
    assert j1.metadata["axis_max_acceleration"] == 4.0 and j1.max_effort == 10.0
    assert j1.metadata["controller_gains"] == {"p": 100.0, "d": 10.0}
    j2 = model.bodies[model.link_names.index("c")].joint
    assert j2.metadata["mimic"] == {"joint": "j1", "multiplier": 2.0, "offset": 0.1}
    assert model.q_names[-3:] == ("p_x", "p_y", "p_theta")
    groups = model.metadata["drake"]["collision_filter_groups"]
    assert groups[0]["members"] == ["a", "b"] and groups[0]["ignored_groups"] == ["g"]


def test_automatic_inertia_from_collisions() -> None:
    """<inertial auto="true"> (1.11): a 0.2 x 0.4 x 0.6 m box of density 500 and a sphere, by hand."""
    model = load_sdf_string("""<sdf version="1.11"><model name="m"><link name="l">
      <inertial auto="true"/>
      <collision name="box"><density>500</density><pose>0 0 0.5 0 0 0</pose>
        <geometry><box><size>0.2 0.4 0.6</size></box></geometry></collision>
      <collision name="ball"><pose>1 0 0 0 0 0</pose><geometry><sphere><radius>0.1</radius></sphere></geometry>
      </collision></link></model></sdf>""")
    m_box, m_ball = 500 * 0.2 * 0.4 * 0.6, 1000 * 4 / 3 * math.pi * 0.1**3
    inertia = model.bodies[0].inertia
    assert inertia.mass == pytest.approx(m_box + m_ball, rel=1e-14)
    com = (m_box * np.array([0, 0, 0.5]) + m_ball * np.array([1, 0, 0])) / (m_box + m_ball)
    np.testing.assert_allclose(inertia.com, com, rtol=1e-14)
    I_box = m_box / 12 * np.diag([0.4**2 + 0.6**2, 0.2**2 + 0.6**2, 0.2**2 + 0.4**2])
    I = I_box + 0.4 * m_ball * 0.01 * np.eye(3)
    for m, p in ((m_box, np.array([0, 0, 0.5])), (m_ball, np.array([1.0, 0, 0]))):
        d = p - com
        I = I + m * (d @ d * np.eye(3) - np.outer(d, d))
    np.testing.assert_allclose(inertia.rotational, I, rtol=1e-13)


def _model(body: str, version: str = "1.9") -> str:
    return f'<?xml version="1.0"?>\n<sdf version="{version}">\n<model name="m">\n{body}\n</model>\n</sdf>\n'


ERRORS = [  # (text, message fragment, line)
    ('<sdf><model name="m"><link name="l"/></model></sdf>', "missing the required attribute 'version'", 1),
    ('<sdf version="100"><model name="m"/></sdf>', "is not a version number", 1),
    ('<element name="link" required="*"/>', "specification (schema) file", 1),
    ('<gazebo version="1.2"/>', "root element must be <sdf", 1),
    (_model('<link name="a"/>\n<link name="a"/>'), "link name 'a' is already used by the link at line 4", 5),
    (_model('<link name="a"/>\n<joint name="a" type="fixed"><parent>world</parent><child>a</child></joint>'),
     "joint name 'a' is already used", 5),
    (_model('<link name="world"/>'), "link name 'world' is reserved", 4),
    (_model('<link name="__x__"/>'), "reserved", 4),
    (_model('<link name="a::b"/>'), "scope delimiter", 4),
    (_model(""), "model 'm' has no link", 3),
    (_model('<link name="a"/>\n<inertail/>'), "<inertail> is not an SDFormat child of <model>", 5),
    (_model('<link name="a"><pose>1 2 3</pose></link>'), "<pose> needs 6 numbers", 4),
    (_model('<link name="a"><pose>1 2 3 a b c</pose></link>'), "not a list of numbers", 4),
    (_model('<link name="a"><pose relative_to="nope"/></link>'), "relative_to name 'nope' of link 'a'", 4),
    (_model('<link name="a"><pose relative_to="__root__"/></link>'), "'__root__' is reserved", 4),
    (_model('<link name="a"/>\n<frame name="f"><pose relative_to="g"/></frame>\n'
            '<frame name="g"><pose relative_to="f"/></frame>'),
     "relative_to (pose) graph of model 'm' has a cycle", None),
    (_model('<link name="a"/>\n<frame name="f" attached_to="g"/>\n<frame name="g" attached_to="f"/>'),
     "attached_to graph of model 'm' has a cycle", None),
    (_model('<link name="a"/>\n<frame name="f" attached_to="f"/>'), "cannot attach to itself", 5),
    (_model('<link name="a"/>\n<joint name="j" type="fixed"><parent>a</parent><child>a</child></joint>'),
     "same parent and child frame 'a'", 5),
    (_model('<link name="a"/>\n<joint name="j" type="fixed"><parent>a</parent><child>world</child></joint>'),
     "the child may not be 'world'", 5),
    (_model('<link name="a"/>\n<joint name="j" type="fixed"><parent>x</parent><child>a</child></joint>'),
     "parent frame 'x' is not a link", 5),
    (_model('<link name="a"/><link name="b"/>\n<joint name="j" type="hinge"><parent>a</parent><child>b</child>'
            '</joint>'),
     "unknown type 'hinge'", 5),
    (_model('<link name="a"/><link name="b"/>\n<joint name="j" type="revolute"><parent>a</parent><child>b</child>'
            '</joint>'), "needs an <axis>", 5),
    (_model('<link name="a"/><link name="b"/>\n<joint name="j" type="revolute"><parent>a</parent><child>b</child>'
            '<axis><xyz expressed_in="q">1 0 0</xyz></axis></joint>'), "expressed_in frame 'q'", 5),
    (_model('<static>true</static><link name="a"/><link name="b"/>\n<joint name="j" type="revolute"><parent>a'
            '</parent><child>b</child><axis><xyz>1 0 0</xyz></axis></joint>'), "only fixed joints", 5),
    (_model('<link name="a"/><link name="b"/><link name="c"/>\n'
            '<joint name="j" type="fixed"><parent>a</parent><child>c</child></joint>\n'
            '<joint name="k" type="fixed"><parent>b</parent><child>c</child></joint>'), "two parent joints", 6),
    (_model('<link name="a"/>\n<link name="b"><pose relative_to="a">0 0 0 0 0 0</pose></link>', "1.6"),
     "attribute 'relative_to' of <pose> exists only in SDFormat 1.7 and later", 5),
    (_model('<link name="a"><inertial><mass>-2</mass></inertial></link>'), "negative mass", 4),
    (_model('<link name="a"/>\n<include><uri>model://nowhere</uri></include>'), "uri 'model://nowhere' not found", 5),
    (_model('<link name="a"><visual name="v"/><visual name="v"/></link>'), "two <visual> elements named 'v'", 4),
    ('<sdf version="1.8"><model name="a"><link name="l"/></model><model name="b"><link name="l"/></model></sdf>',
     "only one <model>", 1),
    (_model('<link name="a"/>', "1.8").replace('<model name="m">', '<model name="m" canonical_link="z">'),
     "canonical_link 'z' is not a link", 3),
]


@pytest.mark.parametrize(("text", "message", "line"), ERRORS, ids=[e[1][:40] for e in ERRORS])
def test_invalid_files_name_file_and_line(text: str, message: str, line: int | None) -> None:
    """Each rule of the specification is a FormatError naming the file and the line."""
    with pytest.raises(FormatError) as err:
        load_sdf_string(text, source_name="bad.sdf")
    assert message in err.value.message
    assert err.value.file == "bad.sdf"
    if line is not None:
        assert err.value.line == line


def test_undeclared_namespace_prefixes_are_tolerated() -> None:
    """libsdformat ignores XML namespaces: <drake:...> without xmlns:drake still reads (as Drake's)."""
    model = load_sdf_string('<sdf version="1.9"><model name="m"><link name="a"/><link name="b"/>'
                            '<drake:joint name="j" type="ball"><drake:parent>a</drake:parent>'
                            '<drake:child>b</drake:child></drake:joint></model></sdf>')
    assert model.q_names == ("j_qw", "j_qx", "j_qy", "j_qz")


def test_dispatch_routes_sdf_and_world(tmp_path: Path) -> None:
    """load_model picks this reader for .sdf and .world files."""
    for name in ("m.sdf", "w.world"):
        path = _write(tmp_path, name, WORLD)
        assert load_model(path).format == "sdf"


# --------------------------------------------------------------------------- read leniently, validate strictly
@pytest.mark.parametrize("value", ["true", "false"])
def test_newer_element_in_older_file_reads_as_drake_does(tmp_path: Path, value: str) -> None:
    """SDFormat 1.4 with <use_parent_model_frame> (a 1.5 element): libsdformat copies it and Drake honours it
    (``false`` keeps the joint frame, although the 1.4->1.5 conversion would add ``true``). hebictl reads it
    the same way with an SdfWarning naming file:line; strict=True rejects the file."""
    upmf = f"<use_parent_model_frame>{value}</use_parent_model_frame>"
    path = _write(tmp_path, f"old_{value}.sdf", PENDULUM.format(v="1.4", expressed="", upmf=upmf))
    line = next(i for i, ln in enumerate(path.read_text().split("\n"), 1) if "use_parent_model_frame" in ln)
    with pytest.warns(SdfWarning, match="accepted because strict=False") as record:
        model = load_sdf(path)
    assert str(record[0].message).startswith(
        f"{path}:{line}: <use_parent_model_frame> in <axis> exists only in SDFormat 1.5 to 1.6, this file is "
        "SDFormat 1.4")
    ref = run_drake([path], samples=4)[str(path)]
    assert ref["ok"], ref.get("error")
    compare(model, ref, prefix_for(model))
    default = _load(_write(tmp_path, "old_default.sdf", PENDULUM.format(v="1.4", expressed="", upmf="")))
    hinge = [next(b.joint.axis for b in m.bodies if b.joint.name == "hinge") for m in (model, default)]
    assert np.allclose(hinge[0], hinge[1]) == (value == "true")  # false really changes the axis
    with pytest.raises(FormatError, match="Drake \\(libsdformat\\) accepts this") as info:
        load_sdf(path, strict=True)
    assert (info.value.file, info.value.line) == (str(path), line)
