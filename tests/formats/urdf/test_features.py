"""URDF semantics one rule at a time, each checked against pinocchio's parser on the same text."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from hebictl.errors import FormatError, UrdfWarning
from hebictl.formats.urdf import load_urdf, load_urdf_string
from hebictl.model.tree import JointKind
from tests.formats.references import Pinocchio, random_q

pytest.importorskip("pinocchio")

INERTIAL = """<inertial><origin xyz="0.01 0.02 0.1" rpy="0.3 -0.2 0.1"/><mass value="1.5"/>
  <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0015" izz="0.025"/></inertial>"""


def robot(joints: str, links: tuple[str, ...] = ("base", "a", "b")) -> str:
    body = "".join(f'<link name="{n}">{INERTIAL}</link>' for n in links)
    return f'<robot name="t">{body}{joints}</robot>'


def chain(jtype: str, extra: str = "", axis: str = "0 0 1") -> str:
    limit = '<limit lower="-1" upper="2" effort="5" velocity="3"/>' if jtype in ("revolute", "prismatic") else ""
    return robot(f"""
      <joint name="j1" type="{jtype}"><parent link="base"/><child link="a"/>
        <origin xyz="0.1 0.2 0.3" rpy="0.4 0.5 0.6"/><axis xyz="{axis}"/>{limit}{extra}</joint>
      <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.5" rpy="1.2 0 -0.3"/>
        <axis xyz="1 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>""")


CASES = [
    pytest.param(chain("revolute"), id="revolute"),
    pytest.param(chain("continuous"), id="continuous"),
    pytest.param(chain("prismatic", axis="0.3 -0.4 1.2"), id="prismatic-unnormalised-axis"),
    pytest.param(chain("fixed"), id="fixed"),
    pytest.param(chain("floating"), id="floating"),
    pytest.param(chain("planar", axis="0 0 1"), id="planar"),
    pytest.param(chain("revolute", axis="1 0 0").replace('<axis xyz="1 0 0"/>', ""), id="default-axis"),
    pytest.param(robot("""<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <limit effort="1" velocity="1"/></joint>
        <joint name="j2" type="revolute"><parent link="base"/><child link="b"/><origin xyz="1 0 0"/>
        <limit effort="1" velocity="1"/></joint>"""), id="branching"),
    pytest.param(robot("""<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <limit effort="1" velocity="1"/></joint>
        <joint name="j2" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1" rpy="0 1.5707963 0"/>
        </joint>""").replace(f'<link name="b">{INERTIAL}</link>', '<link name="b"/>'), id="massless-link"),
]


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("floating", [False, True], ids=["fixed-base", "floating-base"])
def test_kinematics_and_gravity_match_pinocchio(text, floating):
    """Link poses (1e-12) and gravity (1e-9) equal pinocchio's for each joint type and root choice."""
    model = load_urdf_string(text, floating_base=floating)
    ref = Pinocchio(xml=text, floating=floating)
    ref.bind(model)
    rng = np.random.default_rng(5)
    for _ in range(4):
        q = random_q(model, rng)
        poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
        for name, T in ref.link_poses(q).items():
            np.testing.assert_allclose(poses[name], T, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(model.gravity_compensation(q), ref.gravity(q, model.gravity), atol=1e-9)


def test_inverse_dynamics_matches_pinocchio_rnea():
    """Full RNEA on a rotated, off-centre inertial equals pinocchio's (inertia rotated into link axes)."""
    text = chain("revolute")
    model = load_urdf_string(text)
    ref = Pinocchio(xml=text)
    ref.bind(model)
    rng = np.random.default_rng(8)
    q, qd, qdd = random_q(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    tau = ref.pin.rnea(ref.m, ref.d, ref.q(q), qd, qdd)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), tau, atol=1e-9)


def test_limits_efforts_damping_and_names():
    """<limit>, <dynamics>, continuous joints and coordinate names read as pinocchio's model reports them."""
    text = chain("continuous", extra='<limit effort="7" velocity="2"/><dynamics damping="0.5" friction="0.25"/>')
    model = load_urdf_string(text)
    ref = Pinocchio(xml=text)
    j1, j2 = (model.bodies[i].joint for i in model.joint_bodies)
    assert (j1.lower, j1.upper, j1.max_effort, j1.max_velocity) == (-math.inf, math.inf, 7.0, 2.0)
    assert (j1.damping, j1.friction) == (0.5, 0.25)
    jid = ref.m.getJointId("j2")
    assert (j2.lower, j2.upper) == (ref.m.lowerPositionLimit[ref.m.joints[jid].idx_q],
                                    ref.m.upperPositionLimit[ref.m.joints[jid].idx_q])
    assert j2.max_effort == ref.m.effortLimit[ref.m.joints[jid].idx_v]
    np.testing.assert_allclose(j2.axis, np.array([1, 1, 0]) / math.sqrt(2), atol=1e-15)
    assert model.q_names == ("j1", "j2")


def test_planar_joint_coordinates_and_floating_base_name():
    """A planar joint is x, y, theta coordinates; floating_base names its free joint root_joint."""
    model = load_urdf_string(chain("planar"), floating_base=True)
    assert model.q_names[:7] == tuple(f"root_joint_{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
    assert model.q_names[7:] == ("j1_x", "j1_y", "j1_theta", "j2")
    assert model.bodies[0].joint.kind is JointKind.FREE


def test_mimic_kept_as_metadata():
    """<mimic> is metadata; the mimic joint keeps its own coordinate (as in pinocchio 2)."""
    model = load_urdf_string(chain("revolute", extra='<mimic joint="j2" multiplier="2" offset="0.1"/>'))
    mimic = model.bodies[model.link_names.index("a")].joint.metadata["mimic"]
    assert (mimic["joint"], mimic["multiplier"], mimic["offset"]) == ("j2", 2.0, 0.1)
    assert model.nq == 2


def test_frames_masses_and_drake_frame():
    """com frames at each link's centre of mass, output/end_effector at leaves, Drake <frame> kept."""
    text = chain("revolute").replace("</robot>", '<frame name="tool" link="b" xyz="0 0 0.2" rpy="0 0 1"/></robot>')
    model = load_urdf_string(text)
    q = np.array([0.3, -0.7])
    ref = Pinocchio(xml=text)
    ref.bind(model)
    poses = ref.link_poses(q)
    np.testing.assert_allclose(model.masses, [1.5, 1.5, 1.5])
    com = model.forward_kinematics(q, "com")
    for k, name in enumerate(("base", "a", "b")):
        T = poses[name]
        np.testing.assert_allclose(com[k][:3, 3], T[:3, :3] @ [0.01, 0.02, 0.1] + T[:3, 3], atol=1e-12)
    assert model.frame_names("output") == ("b",) == model.frame_names("end_effector")
    tool = next(f for f in model.frames if f.kind == "frame")
    assert tool.name == "tool"
    np.testing.assert_allclose(tool.offset[:3, 3], [0, 0, 0.2])


def test_mesh_paths_resolved_or_reported(tmp_path):
    """package:// and relative mesh paths resolve via package_map / base_dir; missing ones warn, never fail."""
    pkg = tmp_path / "my_pkg" / "meshes"
    pkg.mkdir(parents=True)
    (pkg / "a.stl").write_bytes(b"solid a\nendsolid a\n")
    text = chain("revolute").replace(
        f'<link name="a">{INERTIAL}', f'<link name="a">{INERTIAL}<visual><geometry><mesh filename="package://'
        'my_pkg/meshes/a.stl"/></geometry></visual><visual><geometry><mesh filename="gone.stl"/></geometry>'
        '</visual>')
    (tmp_path / "r.urdf").write_text(text)
    with pytest.warns(UrdfWarning, match="1 mesh file"):
        model = load_urdf(tmp_path / "r.urdf", package_map={"my_pkg": tmp_path / "my_pkg"})
    vis = model.bodies[model.link_names.index("a")].metadata["visuals"]
    assert vis[0]["mesh_path"] == str((pkg / "a.stl").resolve()) and vis[1]["mesh_path"] is None
    assert model.metadata["missing_meshes"] == ["gone.stl"]


def test_unknown_namespaced_elements_warn():
    """Namespaced elements hebictl does not read (not Drake's known extensions) are ignored with one warning."""
    text = chain("revolute").replace('<robot name="t">', '<robot name="t" xmlns:drake="http://drake.mit.edu">'
                                     ).replace("</robot>", '<drake:not_an_extension name="g"/></robot>')
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        load_urdf_string(text)
    assert any("drake:not_an_extension" in str(w.message) for w in rec)


# --------------------------------------------------------------------------- read leniently, validate strictly
INCOMPLETE_INERTIALS = {
    # pinocchio: mass 2 at the origin's point, zero rotational inertia
    "mass-without-inertia": '<inertial><origin xyz="0.01 0 0.1" rpy="0.3 0 0"/><mass value="2.0"/></inertial>',
    "inertia-missing-terms": '<inertial><origin xyz="0 0.05 0.1"/><mass value="1.5"/>'
                             '<inertia ixx="0.02" iyy="0.03" izz="0.025"/></inertial>',
    # pinocchio: a massless link
    "inertia-without-mass": '<inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>',
    "mass-without-value": '<inertial><mass/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>',
}


@pytest.mark.parametrize("inertial", list(INCOMPLETE_INERTIALS.values()), ids=list(INCOMPLETE_INERTIALS))
def test_incomplete_inertial_reads_as_pinocchio_does(inertial):
    """An <inertial> urdfdom cannot fully parse (e.g. a <mass> and no <inertia>): pinocchio builds the model
    from what was read; hebictl does the same with a UrdfWarning naming file:line, and strict=True rejects it."""
    text = chain("revolute").replace(f'<link name="a">{INERTIAL}</link>', f'<link name="a">\n{inertial}</link>')
    with pytest.warns(UrdfWarning, match="accepted because strict=False") as record:
        model = load_urdf_string(text, source_name="arm.urdf")
    line = text[:text.index(inertial)].count("\n") + 1
    assert str(record[0].message).startswith(f"arm.urdf:{line}: link 'a': ")
    ref = Pinocchio(xml=text)
    ref.bind(model)
    a = model.bodies[model.link_names.index("a")].inertia
    pin_a = ref.m.inertias[ref.m.getJointId("j1")]
    assert a.mass == pin_a.mass
    np.testing.assert_allclose(a.rotational, pin_a.inertia, atol=1e-15)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = random_q(model, rng)
        poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
        for name, T in ref.link_poses(q).items():
            np.testing.assert_allclose(poses[name], T, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(model.gravity_compensation(q), ref.gravity(q, model.gravity), atol=1e-9)
    with pytest.raises(FormatError, match="pinocchio accepts this") as info:
        load_urdf_string(text, source_name="arm.urdf", strict=True)
    assert info.value.line == line


def test_a_visual_mesh_outside_the_model_folder_is_not_followed_and_not_an_error(tmp_path):
    """The ROS layout robot/urdf/r.urdf + robot/meshes/*.stl ('../meshes/a.stl') and absolute paths load
    as pinocchio loads them. Confined (confine=True, for untrusted files) the mesh is never opened
    (kinematics do not need it), so the folder rule only keeps it out of exports, with one warning;
    --allow-root lets exports reference it. Unconfined (the default) both are followed, as pinocchio does."""
    from hebictl import load_model

    (tmp_path / "urdf").mkdir()
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "a.stl").write_bytes(b"solid a\nendsolid a\n")
    text = chain("revolute").replace(
        f'<link name="a">{INERTIAL}', f'<link name="a">{INERTIAL}<visual><geometry><mesh filename="../meshes/a.stl"/>'
        '</geometry></visual><visual><geometry><mesh filename="/etc/hostname"/></geometry></visual>')
    path = tmp_path / "urdf" / "r.urdf"
    path.write_text(text)
    with pytest.warns(UrdfWarning, match=r"2 mesh file\(s\) outside the model's folder not followed"):
        model = load_model(path, confine=True)
    assert model.metadata["outside_meshes"] == ["../meshes/a.stl", "/etc/hostname"]
    ref = Pinocchio(path=path)
    ref.bind(model)
    q = random_q(model, np.random.default_rng(1))
    np.testing.assert_allclose(model.gravity_compensation(q), ref.gravity(q, model.gravity), atol=1e-9)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UrdfWarning)
        allowed = load_model(path, confine=True, allowed_roots=[tmp_path])
    assert allowed.metadata["outside_meshes"] == ["/etc/hostname"]
    assert load_urdf(path).metadata.get("outside_meshes", []) == []
