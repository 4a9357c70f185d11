"""OpenRAVE XML reader: corpus outcomes, the seeded examples against hand-computed and published
kinematics (3-DoF planar arm; Barrett WAM against Barrett's DH table), and one table-driven test per
transformation/mass/joint rule. OpenRAVE itself is not installable here, so expectations are
computed by hand from the rules of ``xmlreaders-core.cpp``, never by hebictl code.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.errors import FormatError
from hebictl.formats.openrave import load_openrave, load_openrave_string
from tests._support.corpus import CORPUS_DIR, corpus_params, corpus_path

OR_DIR = CORPUS_DIR / "openrave" / "rdiankov__openrave"
COLLADA = "COLLADA is not supported"
REJECTED = {
    "src/data/camera.sensor.xml": "expected <Environment>, <Robot> or <KinBody>",
    "test/testdata/arm_bucket_assy_Amimic.robot.xml": "needs 3 numbers, got 2",
    "test/testdata/bobcat.robot.xml": "needs 3 numbers, got 2",
} | {f: COLLADA for f in (
    "src/data/dualarmmanipulation.env.xml", "src/data/hanoi.env.xml", "src/data/hanoi_complex.env.xml",
    "src/data/hironxtable.env.xml", "src/data/katanatable.env.xml", "src/data/pa10calib.env.xml",
    "src/data/pa10calib_envcamera.env.xml", "src/data/pa10grasp.env.xml", "src/data/pr2test1.env.xml",
    "src/data/pr2test2.env.xml", "src/data/puma.env.xml", "src/data/puma_tabletop.env.xml",
    "src/data/pumablocks.env.xml", "src/data/testphysics.env.xml", "src/data/youbot1.env.xml",
    "src/robots/pa10schunk.robot.xml", "src/robots/pr2-beta-sim.robot.xml", "src/robots/puma.robot.xml",
    "src/robots/pumabarrett.robot.xml", "src/robots/schunk-lwa3-dual.robot.xml")}
FILES = sorted(str(p.relative_to(OR_DIR)) for p in OR_DIR.rglob("*.xml")) if OR_DIR.is_dir() else []


def _load(rel: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_openrave(corpus_path("openrave", "rdiankov__openrave", *rel.split("/")))


def Rx(a: float) -> np.ndarray:
    return Rotation.from_euler("x", a).as_matrix()


def Rz(a: float) -> np.ndarray:
    return Rotation.from_euler("z", a).as_matrix()


def T(R: np.ndarray | None = None, p=(0.0, 0.0, 0.0)) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = np.eye(3) if R is None else R
    out[:3, 3] = p
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("rel", corpus_params(FILES))
def test_openrave_corpus_outcome(rel: str) -> None:
    """Every corpus OpenRAVE file loads, or is rejected with the reason listed in REJECTED."""
    if rel in REJECTED:
        with pytest.raises(FormatError, match=re.escape(REJECTED[rel])) as err:
            _load(rel)
        assert err.value.file and err.value.line
    else:
        assert _load(rel).bodies


@pytest.mark.parametrize("q", [(0.0, 0.0, 0.0), (0.3, -0.7, 1.1), (-2.0, 0.5, 0.25), (math.pi, 1.0, -1.0)])
def test_tridof_end_effector_is_planar_chain(q: tuple[float, float, float]) -> None:
    """The 3-DoF arm's manipulator frame is the planar 3R chain 0.14, 0.14, 0.125 m, z = 0.025 m."""
    model = _load("src/robots/tridof.robot.xml")
    qq = np.zeros(model.nq)
    for name, v in zip(("Arm0", "Arm1", "Arm2"), q, strict=True):
        qq[model.q_names.index(name)] = v
    a1, a12, a123 = q[0], q[0] + q[1], sum(q)
    want = T(Rz(a123), (0.14 * math.cos(a1) + 0.14 * math.cos(a12) + 0.125 * math.cos(a123),
                        0.14 * math.sin(a1) + 0.14 * math.sin(a12) + 0.125 * math.sin(a123), 0.025))
    np.testing.assert_allclose(model.end_effector(qq), want, atol=1e-12)


def test_tridof_joint_properties() -> None:
    """circular joints are unbounded, limitsdeg converts, maxvel is kept, j2's axis is -z, gripper joints listed."""
    model = _load("src/robots/tridof.robot.xml")
    joints = {model.bodies[i].joint.name: model.bodies[i].joint for i in model.joint_bodies}
    assert joints["Arm0"].lower == -math.inf and joints["Arm0"].max_velocity == 3.0
    assert joints["j1"].lower == pytest.approx(math.radians(-16))
    assert joints["j1"].upper == pytest.approx(math.radians(30))
    assert model.metadata["kinbodies"][0]["manipulators"][0]["gripperjoints"] == ["j1", "j2"]


#: Barrett WAM 7-DoF standard DH parameters (Barrett Technology, WAM Arm kinematics): a, alpha, d
WAM_DH = [(0.0, -math.pi / 2, 0.0), (0.0, math.pi / 2, 0.0), (0.045, -math.pi / 2, 0.55),
          (-0.045, math.pi / 2, 0.0), (0.0, -math.pi / 2, 0.3), (0.0, math.pi / 2, 0.0), (0.0, 0.0, 0.06)]


def dh_frames(q: np.ndarray) -> list[np.ndarray]:
    out, A = [], np.eye(4)
    for (a, alpha, d), th in zip(WAM_DH, q, strict=True):
        A = A @ T(Rz(th)) @ T(None, (0, 0, d)) @ T(None, (a, 0, 0)) @ T(Rx(alpha))
        out.append(A)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_wam7_links_follow_barrett_dh(seed: int) -> None:
    """Links wam1..wam7 of the WAM kinbody are Barrett's DH frames 1..7 at random joint angles."""
    model = _load("src/robots/wam7.kinbody.xml")
    q = np.random.default_rng(seed).uniform(-2, 2, 7) if seed else np.zeros(7)
    names = ["Shoulder_Yaw", "Shoulder_Pitch", "Shoulder_Roll", "Elbow", "Wrist_Yaw", "Wrist_Pitch", "Wrist_Roll"]
    qq = np.zeros(model.nq)
    for n, v in zip(names, q, strict=True):
        qq[model.q_names.index(n)] = v
    poses = model.link_poses(qq)
    for i, want in enumerate(dh_frames(q)):
        np.testing.assert_allclose(poses[model.link_names.index(f"wam{i + 1}")], want, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_barrettwam_manipulator_frame(seed: int) -> None:
    """The BarrettWAM robot's 'arm' manipulator is DH frame 7 offset 0.16 m along z."""
    model = _load("src/robots/barrettwam.robot.xml")
    q = np.random.default_rng(10 + seed).uniform(-2, 2, 7)
    qq = np.zeros(model.nq)
    for i, v in enumerate(q):
        qq[i] = v  # the arm joints come first in body order
    assert model.q_names[:7] == ("Shoulder_Yaw", "Shoulder_Pitch", "Shoulder_Roll", "Elbow", "Wrist_Yaw",
                                 "Wrist_Pitch", "Wrist_Roll")
    np.testing.assert_allclose(model.end_effector(qq), dh_frames(q)[-1] @ T(None, (0, 0, 0.16)), atol=1e-12)


# ---------------------------------------------------------------------------- rules, table-driven
def _body(xml: str, name: str = "b", q=None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_openrave_string(f"<KinBody name='k'><Body name='root'/>{xml}</KinBody>")
    qq = np.zeros(model.nq) if q is None else np.asarray(q, dtype=float)
    return model.link_poses(qq)[model.link_names.index(name)]


R45z = Rz(math.pi / 4)
TRANSFORM_RULES = [
    ("translations add", "<Body name='b'><translation>1 0 0</translation><translation>0 2 0</translation></Body>",
     T(None, (1, 2, 0))),
    ("rotationaxis is degrees", "<Body name='b'><rotationaxis>0 0 1 45</rotationaxis></Body>", T(R45z)),
    ("rotation does not rotate the translation",
     "<Body name='b'><translation>1 0 0</translation><rotationaxis>0 0 1 90</rotationaxis></Body>",
     T(Rz(math.pi / 2), (1, 0, 0))),
    ("later rotations pre-multiply",
     "<Body name='b'><rotationaxis>1 0 0 90</rotationaxis><rotationaxis>0 0 1 90</rotationaxis></Body>",
     T(Rz(math.pi / 2) @ Rx(math.pi / 2))),
    ("quat is w x y z", f"<Body name='b'><quat>{math.cos(math.pi / 8)} 0 0 {math.sin(math.pi / 8)}</quat></Body>",
     T(R45z)),
    ("rotationmat is row-major", "<Body name='b'><rotationmat>0 -1 0 1 0 0 0 0 1</rotationmat></Body>",
     T(Rz(math.pi / 2))),
    ("offsetfrom pre-multiplies",
     "<Body name='a'><translation>0 0 1</translation><rotationaxis>0 0 1 90</rotationaxis></Body>"
     "<Body name='b'><offsetfrom>a</offsetfrom><translation>1 0 0</translation></Body>",
     T(Rz(math.pi / 2), (0, 1, 1))),
    ("same-name body compounds onward",
     "<Body name='b'><translation>1 0 0</translation></Body><Body name='b'><translation>0 1 0</translation></Body>",
     T(None, (1, 1, 0))),
]


@pytest.mark.parametrize(("rule", "xml", "want"), TRANSFORM_RULES, ids=[r[0] for r in TRANSFORM_RULES])
def test_openrave_transform_rules(rule: str, xml: str, want: np.ndarray) -> None:
    """Each transform rule gives the hand-computed body pose."""
    np.testing.assert_allclose(_body(xml), want, atol=1e-12)


JOINT_RULES = [
    ("hinge about an anchor in offsetfrom's frame",
     "<Body name='a'><translation>1 0 0</translation></Body><Body name='b'><offsetfrom>a</offsetfrom>"
     "<translation>1 0 0</translation></Body><Joint name='j' type='hinge'><body>a</body><body>b</body>"
     "<offsetfrom>a</offsetfrom><anchor>0 0 0</anchor><axis>0 0 1</axis></Joint>", [math.pi / 2],
     T(Rz(math.pi / 2), (1, 1, 0))),
    ("hinge anchor defaults to the KinBody frame",
     "<Body name='b'><translation>1 0 0</translation></Body><Joint name='j'><body>root</body><body>b</body>"
     "<axis>0 0 1</axis></Joint>", [math.pi / 2], T(Rz(math.pi / 2), (0, 1, 0))),
    ("slider moves along its axis",
     "<Body name='b'/><Joint name='j' type='slider'><body>root</body><body>b</body><axis>0 2 0</axis></Joint>",
     [0.5], T(None, (0, 0.5, 0))),
    ("inverted joint (first body is the child)",
     "<Body name='b'><translation>1 0 0</translation></Body><Joint name='j'><body>b</body><body>root</body>"
     "<axis>0 0 1</axis></Joint>", [math.pi / 2], T(Rz(-math.pi / 2), (0, -1, 0))),
    ("initial is the joint value at the parsed pose",
     "<Body name='b'><translation>1 0 0</translation></Body><Joint name='j'><body>root</body><body>b</body>"
     "<axis>0 0 1</axis><initial>0.5</initial></Joint>", [0.5], T(None, (1, 0, 0))),
    ("enable=false is fixed", "<Body name='b'><translation>1 0 0</translation></Body><Joint name='j' "
     "enable='false'><body>root</body><body>b</body></Joint>", [], T(None, (1, 0, 0))),
    ("universal: axis1 then axis2", "<Body name='b'/><Joint name='u' type='universal'><body>root</body>"
     "<body>b</body><axis1>0 0 1</axis1><axis2>1 0 0</axis2></Joint>", [math.pi / 2, math.pi / 2],
     T(Rz(math.pi / 2) @ Rx(math.pi / 2))),
]


@pytest.mark.parametrize(("rule", "xml", "q", "want"), JOINT_RULES, ids=[r[0] for r in JOINT_RULES])
def test_openrave_joint_rules(rule: str, xml: str, q: list[float], want: np.ndarray) -> None:
    """Each joint rule moves the child to the hand-computed pose."""
    np.testing.assert_allclose(_body(xml, q=q), want, atol=1e-12)


def _inertia(mass_xml: str, geoms: str = ""):
    model = load_openrave_string(f"<KinBody><Body name='b'>{geoms}{mass_xml}</Body></KinBody>")
    return model.bodies[0].inertia


MASS_RULES = [
    ("no mass: 1 kg sphere of radius 1", "", "", 1.0, (0, 0, 0), np.eye(3) * 0.4),
    ("custom", "<mass type='custom'><total>2</total><com>0 0 1</com><inertia>1 0 0 0 2 0 0 0 3</inertia></mass>", "",
     2.0, (0, 0, 1), np.diag([1.0, 2, 3])),
    ("box with total", "<mass type='box'><total>3</total><extents>1 2 3</extents></mass>", "", 3.0, (0, 0, 0),
     np.diag([13.0, 10, 5])),
    ("sphere with density", "<mass type='sphere'><density>2</density><radius>1</radius></mass>", "",
     8 * math.pi / 3, (0, 0, 0), np.eye(3) * 0.4 * 8 * math.pi / 3),
    ("mimicgeom density on a box geom at an offset",
     "<mass type='mimicgeom'><density>10</density></mass>",
     "<Geom type='box'><extents>0.5 0.5 0.5</extents><translation>1 0 0</translation></Geom>", 10.0, (1, 0, 0),
     np.eye(3) * 10 / 3 * 0.5),
    ("mimicgeom cylinder is along y", "<mass type='mimicgeom'><total>2</total></mass>",
     "<Geom type='cylinder'><radius>1</radius><height>2</height></Geom>", 2.0, (0, 0, 0),
     np.diag([2 * (3 + 4) / 12, 1.0, 2 * (3 + 4) / 12])),
]


@pytest.mark.parametrize(("rule", "mass", "geoms", "m", "com", "inertia"), MASS_RULES, ids=[r[0] for r in MASS_RULES])
def test_openrave_mass_rules(rule: str, mass: str, geoms: str, m: float, com, inertia) -> None:
    """Each <mass> rule gives the hand-computed mass, COM and inertia about the COM."""
    got = _inertia(mass, geoms)
    assert got.mass == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(got.com, com, atol=1e-12)
    np.testing.assert_allclose(got.rotational, inertia, rtol=1e-12, atol=1e-12)


def test_openrave_limits_units() -> None:
    """<limits> and <limitsrad> are radians, <limitsdeg> degrees, sliders default to ±10 m."""
    xml = ("<KinBody><Body name='r'/><Body name='a'/><Body name='b'/><Body name='c'/><Body name='d'/>"
           "<Joint name='j1'><body>r</body><body>a</body><limits>-1 2</limits></Joint>"
           "<Joint name='j2'><body>r</body><body>b</body><limitsrad>1 -2</limitsrad></Joint>"
           "<Joint name='j3'><body>r</body><body>c</body><limitsdeg>-90 45</limitsdeg></Joint>"
           "<Joint name='j4' type='slider'><body>r</body><body>d</body></Joint></KinBody>")
    model = load_openrave_string(xml)
    lo, hi = model.position_limits
    np.testing.assert_allclose(lo, [-1, -2, -math.pi / 2, -10])
    np.testing.assert_allclose(hi, [2, 1, math.pi / 4, 10])


def test_openrave_manipulator_and_sensor_frames() -> None:
    """A manipulator becomes an end_effector frame at its transform; an AttachedSensor a sensor frame."""
    xml = ("<Robot name='r'><KinBody><Body name='base'/><Body name='tip'><translation>1 0 0</translation></Body>"
           "<Joint name='j'><body>base</body><body>tip</body><axis>0 0 1</axis></Joint></KinBody>"
           "<Manipulator name='m'><base>base</base><effector>tip</effector><translation>0 0 0.5</translation>"
           "<iksolver>ik</iksolver></Manipulator>"
           "<AttachedSensor name='cam'><link>tip</link><rotationaxis>0 1 0 90</rotationaxis></AttachedSensor></Robot>")
    model = load_openrave_string(xml)
    np.testing.assert_allclose(model.end_effector(np.zeros(1)), T(None, (1, 0, 0.5)), atol=1e-12)
    assert model.frame_names("end_effector") == ("m",)
    np.testing.assert_allclose(model.forward_kinematics(np.zeros(1), "sensor")[0],
                               T(Rotation.from_euler("y", math.pi / 2).as_matrix(), (1, 0, 0)), atol=1e-12)


def test_openrave_include_with_prefix(tmp_path: Path) -> None:
    """file= includes another file; prefix= renames its bodies and joints; inline bodies are not prefixed."""
    (tmp_path / "arm.kinbody.xml").write_text(
        "<KinBody><Body name='l0'/><Body name='l1'><translation>1 0 0</translation></Body>"
        "<Joint name='j'><body>l0</body><body>l1</body><axis>0 0 1</axis></Joint></KinBody>")
    (tmp_path / "r.robot.xml").write_text(
        "<Robot><KinBody prefix='L_' file='arm.kinbody.xml'><Body name='extra'><offsetfrom>L_l1</offsetfrom>"
        "<translation>0 0 1</translation></Body></KinBody></Robot>")
    model = load_openrave(tmp_path / "r.robot.xml")
    assert model.q_names == ("L_j",)
    np.testing.assert_allclose(model.link_poses([0.0])[model.link_names.index("extra")], T(None, (1, 0, 1)))


@pytest.mark.parametrize(("xml", "reason"), [
    ("<Robot file='x.zae'/>", COLLADA),
    ("<KinBody><Body name='a'/><Joint name='j'><body>a</body></Joint></KinBody>", "needs two <body>"),
    ("<KinBody><Body name='a'><offsetfrom>nope</offsetfrom></Body></KinBody>", "unknown body 'nope'"),
    ("<KinBody><Body name='a'><Geom type='cone'/></Body></KinBody>", "is not box, sphere, cylinder or trimesh"),
    ("<KinBody><Body name='a'/><Body name='b'/><Joint type='prismatic'><body>a</body><body>b</body></Joint>"
     "</KinBody>", "is not hinge, slider"),
])
def test_openrave_errors_name_the_line(xml: str, reason: str) -> None:
    """Bad input is a FormatError naming the reason and the line."""
    with pytest.raises(FormatError, match=re.escape(reason)) as err:
        load_openrave_string(xml)
    assert err.value.line is not None
