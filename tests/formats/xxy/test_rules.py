"""x_xy reader rules checked against hand-computed values (table-driven); imt-ring agreement is in test_xxy_vs_ring."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.errors import FormatError
from hebictl.formats.xxy import load_xxy_string


def doc(bodies: str, options: str = "") -> str:
    return f"<x_xy model='m'>{options}<worldbody>{bodies}</worldbody></x_xy>"


ROT_RULES = [
    ("euler is degrees, R = Rz Ry Rx", "euler='10 20 30'", Rotation.from_euler("ZYX", [30, 20, 10], degrees=True)),
    ("quat is passive (conjugated)", f"quat='{math.cos(0.3)} 0 0 {math.sin(0.3)}'", Rotation.from_rotvec([0, 0, -0.6])),
]


@pytest.mark.parametrize(("rule", "attr", "want"), ROT_RULES, ids=[r[0] for r in ROT_RULES])
def test_xxy_rotation_rules(rule: str, attr: str, want: Rotation) -> None:
    """A body's euler/quat give the hand-computed rotation; pos is its translation."""
    model = load_xxy_string(doc(f"<body name='b' joint='frozen' pos='1 2 3' {attr}/>"))
    pose = model.link_poses(np.zeros(0))[0]
    np.testing.assert_allclose(pose[:3, :3], want.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(pose[:3, 3], (1, 2, 3))


def test_xxy_gravity_is_negated_option() -> None:
    """options gravity is ring's base acceleration: hebictl's gravity is its negation (default 0 0 -9.81)."""
    assert tuple(load_xxy_string(doc("<body name='b' joint='rx'/>")).gravity) == (0, 0, -9.81)
    assert tuple(load_xxy_string(doc("<body name='b' joint='rx'/>", "<options gravity='1 2 3'/>")).gravity) == (
        -1, -2, -3)


def test_xxy_capsule_is_along_x_and_geoms_combine() -> None:
    """A capsule's length is along x; two geoms combine with the parallel-axis theorem."""
    m, r, L = 2.0, 0.1, 0.4
    model = load_xxy_string(doc(f"<body name='b' joint='rx'><geom type='capsule' mass='{m}' dim='{r} {L}'/>"
                                "<geom type='sphere' mass='1' dim='0.1' pos='0 0 1'/></body>"))
    I = np.array(model.bodies[0].inertia.rotational)
    v_cyl, v_cap = math.pi * r * r * L, 4 / 3 * math.pi * r ** 3
    mc, ms = m * v_cyl / (v_cyl + v_cap), m * v_cap / (v_cyl + v_cap)
    axial = (0.5 * mc + 0.4 * ms) * r * r
    com_z = 1 / 3
    assert I[0, 0] == pytest.approx(axial + 0.4 * 0.01 + 2 * com_z ** 2 + 1 * (1 - com_z) ** 2, rel=1e-12)
    assert model.bodies[0].inertia.com[2] == pytest.approx(com_z)


def test_xxy_chains_and_custom_axes() -> None:
    """Multi-DoF joints become named chains; rr takes its axis from joint_axes."""
    model = load_xxy_string(doc("<body name='a' joint='free_2d'><body name='c' joint='rr'/>"
                                "<body name='d' joint='cor'/></body>"), joint_axes={"c": (0, 1, 0)})
    assert model.q_names[:3] == ("a_y", "a_z", "a_rx")
    assert "c" in model.q_names and "d_free_x" in model.q_names and model.q_names[-3:] == ("d_x", "d_y", "d_z")
    c = model.bodies[model.link_names.index("c")].joint
    assert c.axis == (0.0, 1.0, 0.0)


@pytest.mark.parametrize(("xml", "reason"), [
    (doc("<body name='b' joint='rx' euler='0 0 0' quat='1 0 0 0'/>"), "both quat and euler"),
    (doc("<body name='b' joint='hinge'/>"), "unknown joint type 'hinge'"),
    (doc("<body name='b' joint='rx' color='red'/>"), "does not take the attribute 'color'"),
    (doc("<body name='b' joint='spherical' damping='1 2'/>"), "damping needs 3 value(s)"),
    (doc("<body name='b' joint='rx' pos_min='0 0 0'/>"), "only one of pos_min and pos_max"),
    (doc("<body name='b' joint='rx'><geom type='box' dim='1 1 1'/></body>"), "needs a mass"),
    (doc("<body name='b' joint='rx'><site/></body>"), "<site> is not an x_xy element"),
])
def test_xxy_errors_name_reason_and_line(xml: str, reason: str) -> None:
    """Bad x_xy input is a FormatError with the reason and a line number."""
    with pytest.raises(FormatError, match=re.escape(reason)) as err:
        load_xxy_string(xml)
    assert err.value.line is not None
