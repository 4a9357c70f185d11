"""Bad MJCF input: a FormatError naming file and line, and MuJoCo refusing the same text."""

from __future__ import annotations

import pytest

from hebictl.errors import FormatError, MjcfWarning
from hebictl.formats.mjcf import load_mjcf, load_mjcf_string
from tests.formats.references import Mujoco, ReferenceRejected

pytest.importorskip("mujoco")

BODY = '<body name="b">\n<joint name="j"/>\n<geom size="0.1"/>\n</body>'


def mj(world: str, head: str = "") -> str:
    # one element per line, so the expected line of each defect is easy to read off
    return f"<mujoco>\n{head}\n<worldbody>\n{world}\n</worldbody>\n</mujoco>"


# (id, text, message fragment, line, whether MuJoCo also refuses it)
ROWS = [
    ("xml-syntax", "<mujoco>\n<worldbody>\n</mujoco>", "XML syntax error", 3, True),
    ("root-element", "<model/>", "root element must be <mujoco>", 1, True),
    ("unknown-section", mj(BODY, "<physics/>"), "unrecognized element <physics> in <mujoco>", 2, True),
    ("unknown-body-child", mj('<body name="b">\n<wheel/>\n</body>'), "unrecognized element <wheel>", 5, True),
    ("unknown-attribute", mj('<body name="b">\n<joint name="j" axes="0 0 1"/>\n<geom size="0.1"/>\n</body>'),
     "unrecognized attribute 'axes' in <joint>", 5, True),
    ("joint-in-world", mj('<joint name="j"/>'), "World body cannot have joints", 4, True),
    ("unknown-class", mj('<body name="b">\n<joint class="stiff"/>\n<geom size="0.1"/>\n</body>'),
     "unknown default class name 'stiff'", 5, True),
    ("two-orientations", mj('<body name="b" quat="1 0 0 0" euler="0 0 1">\n<joint/>\n<geom size="0.1"/>\n</body>'),
     "multiple orientation specifiers", 4, True),
    ("range-reversed", mj('<body name="b">\n<joint range="1 -1" limited="true"/>\n<geom size="0.1"/>\n</body>'),
     "range[0] should be smaller than range[1]", 5, True),
    ("range-without-limited", mj(BODY.replace('name="j"', 'name="j" range="0 1"'), '<compiler autolimits="false"/>'),
     "has `range` but not `limited`", 5, True),
    ("nested-free-joint", mj('<body name="a">\n<geom size="0.1"/>\n<body name="b">\n<freejoint/>\n'
                             '<geom size="0.1"/>\n</body>\n</body>'), "free joint can only be used on top level", 7,
     True),
    ("ball-then-hinge", mj('<body name="b">\n<joint type="ball"/>\n<joint/>\n<geom size="0.1"/>\n</body>'),
     "ball followed by rotation", 4, True),
    ("massless-moving-body", mj('<body name="b">\n<joint/>\n</body>'),
     "mass and inertia of moving bodies must be larger than mjMINVAL", 4, True),
    ("repeated-body-name", mj(BODY + "\n" + BODY.replace('name="j"', 'name="k"')), "repeated name 'b' in body", 8,
     True),
    ("zero-size-sphere", mj('<body name="b">\n<joint/>\n<geom/>\n</body>'), "size 0 must be positive", 6, True),
    ("plane-in-moving-body", mj('<body name="b">\n<joint/>\n<geom type="plane" size="1 1 1"/>\n'
                                '<geom size="0.1"/>\n</body>'), "plane only allowed in static bodies", 6, True),
    ("triangle-inequality", mj('<body name="b">\n<joint/>\n<inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/>\n'
                               '</body>'), "must satisfy A + B >= C", 4, True),
    ("unknown-mesh", mj('<body name="b">\n<joint/>\n<geom type="mesh" mesh="hull"/>\n</body>'),
     "mesh 'hull' not found", 6, True),
    ("inertial-without-mass", mj('<body name="b">\n<joint/>\n<inertial pos="0 0 0" diaginertia="1 1 1"/>\n</body>'),
     "<inertial> needs pos and mass", 6, True),
    ("fullinertia-with-euler", mj('<body name="b">\n<joint/>\n<inertial pos="0 0 0" mass="1" euler="0 0 1" '
                                  'fullinertia="1 1 1 0 0 0"/>\n</body>'), "at most one of 'fullinertia'", 6, True),
    ("actuator-unknown-joint", mj(BODY, '<actuator>\n<motor joint="elbow"/>\n</actuator>'),
     "actuator refers to unknown joint 'elbow'", 3, True),
    ("eulerseq", mj(BODY.replace('name="b"', 'name="b" euler="0 0 1"'), '<compiler eulerseq="xyw"/>'),
     "eulerseq must be 3 characters", 2, True),
    ("not-a-number", mj('<body name="b" pos="0 0 one">\n<joint/>\n<geom size="0.1"/>\n</body>'),
     "is not a list of numbers", 4, True),
    ("missing-include", mj(BODY, '<include file="nowhere.xml"/>'), "included file 'nowhere.xml' not found", 2, True),
    # hebictl does not generate the control-node bodies of interpolated flexcomps; MuJoCo accepts this one
    ("flexcomp-trilinear", mj('<flexcomp name="f" type="grid" count="2 2 2" spacing="1 1 1" dim="3" '
                              'dof="trilinear"/>'), "unsupported <flexcomp>: flexcomp dof 'trilinear'", 4, False),
    ("flexcomp-count", mj('<flexcomp name="f" type="grid" count="0 2 1" spacing="1 1 1" dim="2"/>'),
     "Count too small", 4, True),
    ("flexcomp-unpinned-on-moving-body", mj('<body name="b">\n<freejoint/>\n<geom size="0.1"/>\n'
                                            '<flexcomp name="f" type="grid" count="3 1 1" spacing="1 1 1" dim="1"/>'
                                            '\n</body>'), "has joints but no flex vertices/nodes are pinned", 4,
     True),
]


@pytest.mark.parametrize(("text", "fragment", "line", "reference_refuses"),
                         [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_bad_mjcf_is_a_format_error(text, fragment, line, reference_refuses):
    """Each defect raises FormatError with the message fragment and the line of the offending element."""
    with pytest.raises(FormatError) as err:
        load_mjcf_string(text, source_name="bad.xml")
    assert fragment in err.value.message, err.value.message
    assert (err.value.file, err.value.line) == ("bad.xml", line), str(err.value)
    if reference_refuses:
        with pytest.raises(ReferenceRejected):
            Mujoco(xml=text)
    else:
        Mujoco(xml=text)


def test_errors_in_included_files_name_that_file(tmp_path):
    """A defect inside an included file reports the included file and its own line."""
    (tmp_path / "part.xml").write_text('<mujoco>\n<worldbody>\n<body name="b">\n<joint limited="true" range="2 1"/>\n'
                                       '<geom size="0.1"/>\n</body>\n</worldbody>\n</mujoco>')
    (tmp_path / "main.xml").write_text('<mujoco>\n<include file="part.xml"/>\n</mujoco>')
    with pytest.raises(FormatError) as err:
        load_mjcf(tmp_path / "main.xml")
    assert (err.value.file, err.value.line) == (str(tmp_path / "part.xml"), 4)
    with pytest.raises(ReferenceRejected):
        Mujoco(path=tmp_path / "main.xml")


def test_mesh_needed_for_inertia_but_missing(tmp_path):
    """Inertia from a mesh whose file is absent: an error naming the body, mesh and file (MuJoCo fails too)."""
    (tmp_path / "m.xml").write_text('<mujoco>\n<asset>\n<mesh name="hull" file="hull.stl"/>\n</asset>\n<worldbody>\n'
                                    '<body name="arm">\n<joint/>\n<geom type="mesh" mesh="hull"/>\n</body>\n'
                                    '</worldbody>\n</mujoco>')
    with pytest.raises(FormatError) as err:
        load_mjcf(tmp_path / "m.xml")
    assert "body 'arm' takes its inertia from mesh 'hull'" in err.value.message and "'hull.stl'" in err.value.message
    assert err.value.line == 8
    with pytest.raises(ReferenceRejected):
        Mujoco(path=tmp_path / "m.xml")


def test_mesh_file_not_needed_when_inertial_given(tmp_path):
    """The same missing mesh is fine when the body has an <inertial>: kinematics never read meshes."""
    (tmp_path / "m.xml").write_text('<mujoco><asset><mesh name="hull" file="hull.stl"/></asset><worldbody>'
                                    '<body name="arm"><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
                                    '<geom type="mesh" mesh="hull"/></body></worldbody></mujoco>')
    with pytest.warns(MjcfWarning, match="mesh file"):
        model = load_mjcf(tmp_path / "m.xml")
    assert model.total_mass == 1.0


def test_stl_mesh_inertia_matches_mujoco(tmp_path):
    """A binary STL mesh present on disk gives the same mass and centre of mass as MuJoCo."""
    import numpy as np

    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32) * 0.2
    tris = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    rec["v"] = [V[list(t)] for t in tris]
    (tmp_path / "tet.stl").write_bytes(b"\0" * 80 + np.uint32(len(tris)).tobytes() + rec.tobytes())
    (tmp_path / "m.xml").write_text('<mujoco><asset><mesh name="tet" file="tet.stl"/></asset><worldbody>'
                                    '<body name="arm"><joint/><geom type="mesh" mesh="tet" pos="0.1 0 0"/></body>'
                                    '</worldbody></mujoco>')
    model = load_mjcf(tmp_path / "m.xml")
    ref = Mujoco(path=tmp_path / "m.xml")
    ref.bind(model)
    mass, com, inertia = ref.mass_properties()["arm"]
    b = model.bodies[0]
    assert b.inertia.mass == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(b.inertia.com, com, atol=1e-12)
    np.testing.assert_allclose(b.inertia.rotational, inertia, atol=1e-9 * np.abs(inertia).max())


EXTREME = [
    ("sphere-1e308", '<geom size="1e308"/>', "overflow"),
    ("sphere-1e200-with-mass", '<geom size="1e200" mass="1"/>', "overflow"),
    ("box-1e200", '<geom type="box" size="1e200 1e200 1e200"/>', "overflow"),
    ("ellipsoid-1e200", '<geom type="ellipsoid" size="1e200 1e200 1e200"/>', "overflow"),
    ("cylinder-1e200", '<geom type="cylinder" size="1e200 1e200"/>', "overflow"),
    ("capsule-fromto-1e308", '<geom type="capsule" fromto="0 0 0 1e308 0 0" size="0.1"/>', "overflow"),
    ("inertia-1e308", '<inertial pos="0 0 0" mass="1e308" diaginertia="1e308 1e308 1e308"/>', "inertia"),
]


@pytest.mark.parametrize(("element", "fragment"), [pytest.param(*r[1:], id=r[0]) for r in EXTREME])
def test_extreme_values_end_in_a_format_error_without_numpy_warnings(element, fragment):
    """Issue 23: these printed numpy 'RuntimeWarning: overflow/invalid value encountered' before the clean
    error. Through load_mjcf_string and load_model_string alike, the FormatError is the only output."""
    import warnings

    from hebictl import load_model_string

    text = f'<mujoco model="m"><worldbody><body name="b"><joint type="hinge"/>{element}</body></worldbody></mujoco>'
    for load in (load_mjcf_string, lambda t: load_model_string(t, "mjcf")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # any warning (numpy's RuntimeWarning included) fails the test
            with pytest.raises(FormatError, match=fragment):
                load(text)
