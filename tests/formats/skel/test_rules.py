"""SKEL reader rules checked against hand-computed poses and DART's documented conventions (table-driven)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.errors import FormatError, SkelWarning
from hebictl.formats.skel import load_skel_string


def world(skeletons: str, physics: str = "") -> str:
    return f"<skel version='1.0'><world name='w'><physics>{physics}</physics>{skeletons}</world></skel>"


def body(name: str, tf: str = "0 0 0 0 0 0", extra: str = "") -> str:
    return f"<body name='{name}'><transformation>{tf}</transformation>{extra}</body>"


def T(R=None, p=(0.0, 0.0, 0.0)) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = np.eye(3) if R is None else R
    out[:3, 3] = p
    return out


def Rxyz(a: float, b: float, c: float) -> np.ndarray:
    return Rotation.from_euler("XYZ", [a, b, c]).as_matrix()  # intrinsic: Rx(a) Ry(b) Rz(c)


POSE_RULES = [
    ("transformation is x y z rx ry rz with R = Rx Ry Rz",
     "<skeleton name='s'>" + body("b", "1 2 3 0.1 0.2 0.3") + "<joint type='weld' name='j'><parent>world</parent>"
     "<child>b</child></joint></skeleton>", [], T(Rxyz(0.1, 0.2, 0.3), (1, 2, 3))),
    ("skeleton transformation pre-multiplies bodies",
     "<skeleton name='s'><transformation>0 0 1 0 0 1.5707963267948966</transformation>" + body("b", "1 0 0 0 0 0")
     + "<joint type='weld' name='j'><parent>world</parent><child>b</child></joint></skeleton>", [],
     T(Rxyz(0, 0, math.pi / 2), (0, 1, 1))),
    ("revolute about the joint frame given in the child frame",
     "<skeleton name='s'>" + body("b", "1 0 0 0 0 0") + "<joint type='revolute' name='j'><parent>world</parent>"
     "<child>b</child><transformation>-1 0 0 0 0 0</transformation><axis><xyz>0 0 1</xyz></axis></joint>"
     "</skeleton>", [math.pi / 2], T(Rxyz(0, 0, math.pi / 2), (0, 1, 0))),
    ("prismatic axis in the joint frame (rotated child)",
     "<skeleton name='s'>" + body("b") + "<joint type='prismatic' name='j'><parent>world</parent><child>b</child>"
     "<transformation>0 0 0 0 0 1.5707963267948966</transformation><axis><xyz>1 0 0</xyz></axis></joint>"
     "</skeleton>", [0.5], T(None, (0, 0.5, 0))),
    ("euler zyx is Rz(q0) Ry(q1) Rx(q2)",
     "<skeleton name='s'>" + body("b") + "<joint type='euler' name='j'><parent>world</parent><child>b</child>"
     "<axis_order>zyx</axis_order></joint></skeleton>", [0.3, 0.2, 0.1],
     T(Rotation.from_euler("ZYX", [0.3, 0.2, 0.1]).as_matrix())),
    ("translational moves along x y z", "<skeleton name='s'>" + body("b") + "<joint type='translational' name='j'>"
     "<parent>world</parent><child>b</child></joint></skeleton>", [1, 2, 3], T(None, (1, 2, 3))),
    ("planar zx: translation along z then x, rotation about y",
     "<skeleton name='s'>" + body("b") + "<joint type='planar' name='j'><parent>world</parent><child>b</child>"
     "<plane type='zx'/></joint></skeleton>", [1, 2, math.pi / 2],
     T(Rotation.from_euler("y", math.pi / 2).as_matrix(), (2, 0, 1))),
]


@pytest.mark.parametrize(("rule", "xml", "q", "want"), POSE_RULES, ids=[r[0] for r in POSE_RULES])
def test_skel_pose_rules(rule: str, xml: str, q: list[float], want: np.ndarray) -> None:
    """Each SKEL convention gives the hand-computed body pose."""
    model = load_skel_string(world(xml))
    np.testing.assert_allclose(model.link_poses(np.asarray(q, float))[model.link_names.index("b")], want,
                               atol=1e-12)


def test_skel_screw_becomes_two_coordinates() -> None:
    """A screw joint becomes rotation + translation coordinates with the pitch in metadata (and a warning)."""
    xml = world("<skeleton name='s'>" + body("b") + "<joint type='screw' name='j'><parent>world</parent>"
                "<child>b</child><axis><xyz>0 0 1</xyz><pitch>0.2</pitch></axis></joint></skeleton>")
    with pytest.warns(SkelWarning, match="screw"):
        model = load_skel_string(xml)
    assert model.q_names == ("j_rot", "j_trans")
    assert model.bodies[model.joint_bodies[0]].joint.metadata["screw_pitch"] == 0.2


def test_skel_soft_body_adds_point_mass_and_immobile_welds() -> None:
    """A soft shape adds its total mass at its origin; an immobile skeleton has no coordinates."""
    soft = ("<inertia><mass>1</mass><offset>0 0 0</offset></inertia><soft_shape><total_mass>0.5</total_mass>"
            "<transformation>0 0 1 0 0 0</transformation><geometry><box><size>1 1 1</size><frags>2 2 2</frags>"
            "</box></geometry></soft_shape>")
    xml = world("<skeleton name='a'>" + body("b", extra=soft) + "<joint type='free' name='j'><parent>world</parent>"
                "<child>b</child></joint></skeleton><skeleton name='g'><mobile>false</mobile>" + body("c")
                + "<joint type='free' name='k'><parent>world</parent><child>c</child></joint></skeleton>")
    with pytest.warns(SkelWarning, match="soft body"):
        model = load_skel_string(xml)
    b = model.bodies[model.link_names.index("a/b")]
    assert b.inertia.mass == 1.5
    np.testing.assert_allclose(b.inertia.com, (0, 0, 1 / 3))
    assert model.nv == 6 and "g/c" in model.link_names


@pytest.mark.parametrize(("text", "reason"), [
    ("dofs{\n root<a-X> { 0, -3, 3 }\n}", "pre-XML SKEL file"),
    ("<skel><skeleton name='s'/></skel>", "no <world>"),
    (world("<skeleton name='s'>" + body("b") + "<joint type='hinge' name='j'><parent>world</parent><child>b</child>"
           "</joint></skeleton>"), "unknown type 'hinge'"),
    (world("<skeleton name='s'>" + body("b") + "<joint type='revolute' name='j'><parent>nope</parent>"
           "<child>b</child><axis><xyz>0 0 1</xyz></axis></joint></skeleton>"), "parent body 'nope' does not exist"),
    (world("<skeleton name='s'>" + body("b") + "<joint type='revolute' name='j'><parent>world</parent>"
           "<child>b</child></joint></skeleton>"), "needs <axis><xyz>"),
])
def test_skel_errors_name_reason_and_line(text: str, reason: str) -> None:
    """Bad SKEL input is a FormatError with the reason and a line number."""
    with pytest.raises(FormatError, match=re.escape(reason)) as err:
        load_skel_string(text)
    assert err.value.line is not None
