"""MJCF semantics one rule at a time, each compiled by MuJoCo side by side with hebictl."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.errors import MjcfWarning
from hebictl.formats.mjcf import load_mjcf, load_mjcf_string
from hebictl.model.tree import JointKind
from tests.formats.references import Mujoco, random_q

pytest.importorskip("mujoco")


def world(body: str, head: str = "") -> str:
    return f"<mujoco>{head}<worldbody>{body}</worldbody></mujoco>"


ARM = """
<body name="upper" pos="0.1 0 0.5" euler="10 20 30">
  <joint name="shoulder" axis="0 1 0" range="-90 90" ref="15"/>
  <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
  <site name="elbow_site" pos="0.3 0 0" xyaxes="0 1 0 -1 0 0"/>
  <body name="lower" pos="0.3 0 0" axisangle="1 1 0 40">
    <joint name="elbow" pos="0.05 0 0" axis="0 0 1"/>
    <joint name="twist" type="slide" axis="1 0 0" ref="0.1"/>
    <geom type="box" size="0.1 0.02 0.03" pos="0.1 0 0" zaxis="0 1 1"/>
    <geom type="ellipsoid" size="0.02 0.03 0.04" pos="0.2 0 0" mass="0.3"/>
    <body name="hand" pos="0.25 0 0">
      <joint name="wrist" type="ball" pos="0 0.01 0"/>
      <geom type="cylinder" size="0.02 0.03" density="2000"/>
      <site name="tip" pos="0.05 0 0" quat="0.9 0.1 0.2 0.3"/>
    </body>
  </body>
</body>"""

CASES = {
    "hinge-slide-ball-anchors-ref": world(ARM),
    "radians-and-eulerseq": world(ARM.replace('euler="10 20 30"', 'euler="0.1 0.2 0.3"')
                                  .replace('range="-90 90" ref="15"', 'range="-1.5 1.5" ref="0.2"')
                                  .replace('axisangle="1 1 0 40"', 'axisangle="1 1 0 0.7"'),
                                  '<compiler angle="radian" eulerseq="ZYX"/>'),
    "extrinsic-mixed-eulerseq": world(ARM, '<compiler eulerseq="XyZ"/>'),
    "free-body-default-pose": world('<body name="box" pos="1 2 3" euler="0 45 0"><freejoint name="f"/>'
                                    '<geom type="box" size="0.1 0.2 0.3"/><body name="lid" pos="0 0 0.3">'
                                    '<joint name="hinge" axis="1 0 0"/><geom size="0.05"/></body></body>'),
    "defaults-cascade-childclass": world(
        '<body name="a" childclass="heavy"><joint name="j"/><geom size="0.1"/>'
        '<body name="b" pos="0 0 1"><joint name="k" class="main"/><geom class="light"/></body></body>',
        '<default><joint axis="1 0 0"/><geom size="0.2" density="500"/>'
        '<default class="heavy"><joint axis="0 1 0"/><geom density="3000"/>'
        '<default class="light"><geom type="box" size="0.1 0.1 0.1" density="10"/></default></default></default>'),
    "frames-with-joints-and-sites": world(
        '<frame pos="0 0 1" euler="0 0 30"><body name="a"><frame euler="90 0 0"><joint name="j"/>'
        '<geom size="0.1" pos="0.2 0 0"/><site name="s" pos="0 0.1 0"/></frame></body></frame>'),
    "replicate": world('<replicate count="3" offset="0.5 0 0" euler="0 0 40" sep="-"><body name="arm" pos="0 0 1">'
                       '<joint name="j"/><geom size="0.1" pos="0.1 0 0"/><site name="s"/></body></replicate>'),
    "inertial-full-and-diag": world(
        '<body name="a"><joint name="j" axis="0 1 1"/><inertial pos="0.1 0.2 0.3" mass="2" '
        'fullinertia="0.3 0.4 0.5 0.01 -0.02 0.03"/><body name="b" pos="1 0 0"><joint name="k"/>'
        '<inertial pos="0 0 0.1" euler="10 0 30" mass="1" diaginertia="0.1 0.2 0.25"/></body></body>'),
    "inertiafromgeom-true-overrides": world(
        '<body name="a"><joint name="j"/><inertial pos="0 0 0" mass="100" diaginertia="1 1 1"/>'
        '<geom size="0.1" pos="0 0.3 0"/></body>', '<compiler inertiafromgeom="true"/>'),
    "boundmass-boundinertia": world(
        '<body name="a"><joint name="j"/><geom size="0.01"/><body name="b" pos="0 0 1"><joint name="k"/>'
        '<geom type="box" size="1 0.01 0.01"/></body></body>', '<compiler boundmass="0.5" boundinertia="0.01"/>'),
    "balanceinertia": world('<body name="a"><joint name="j"/><inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/>'
                            '</body>', '<compiler balanceinertia="true"/>'),
    "inertiagrouprange": world('<body name="a"><joint name="j"/><geom size="0.1"/><geom size="0.2" pos="1 0 0" '
                               'group="3"/></body>', '<compiler inertiagrouprange="0 2"/>'),
    "gravity-option": world(ARM, '<option gravity="0.5 -1 -3"/>'),
    "mesh-convex-hull": world('<body name="a"><joint name="j"/><geom type="mesh" mesh="m" pos="0.1 0 0"/></body>',
                              '<asset><mesh name="m" scale="1 2 0.5" vertex="0 0 0 1 0 0 0 1 0 0 0 1 0.3 0.3 0.3"/>'
                              '</asset>'),
    "mesh-legacy-nonconvex": world(
        '<body name="a"><joint name="j"/><geom type="mesh" mesh="m"/></body>',
        '<asset><mesh name="m" vertex="0 0 0 2 0 0 0 2 0 0.5 0.5 0.2 0 0 1" '
        'face="0 2 1 0 1 4 0 4 2 1 3 4 2 4 3 1 2 3"/></asset>'),
    "mesh-exact": world(
        '<body name="a"><joint name="j"/><geom type="mesh" mesh="m" mass="2"/></body>',
        '<asset><mesh name="m" inertia="exact" vertex="0 0 0 2 0 0 0 2 0 0.5 0.5 0.2 0 0 1" '
        'face="0 2 1 0 1 4 0 4 2 1 3 4 2 4 3 1 2 3"/></asset>'),
    "static-bodies-and-world-sites": world('<site name="w" pos="1 0 0"/><body name="table" pos="0 1 0">'
                                           '<geom type="box" size="1 1 0.1"/><body name="arm" pos="0 0 0.1">'
                                           '<joint name="j"/><geom size="0.1" pos="0.2 0 0"/></body></body>'),
    **{f"builtin-mesh-{kind}": world(
        '<body name="a" pos="0 0 1"><joint name="j" axis="1 1 0"/><geom type="mesh" mesh="m" pos="0.1 0 0" '
        'euler="0 20 0" mass="2"/></body>',
        f'<asset><mesh name="m" builtin="{kind}" params="{params}" scale="0.2 0.3 0.4"/></asset>')
       for kind, params in (("sphere", "2"), ("hemisphere", "3"), ("supersphere", "12 0.4 1.5"),
                            ("supertorus", "16 0.3 0.5 2"), ("cone", "6 0.5"), ("cone", "4 0"),
                            ("wedge", "8 6 60 40 0.5"))},
    **{f"flexcomp-{key}": world('<body name="parent" pos="0 0 1"><geom size="0.01"/><frame euler="0 0 30">'
                                f'<flexcomp name="f" {attrs} pos="0.1 0.2 0" euler="10 0 0" mass="3" radius="0.001">'
                                f'{inner}</flexcomp></frame></body>')
       for key, attrs, inner in (
           ("grid-1d", 'type="grid" dim="1" count="4 1 1" spacing="0.1 0.1 0.1"', ""),
           ("grid-2d-pinned", 'type="grid" dim="2" count="3 4 1" spacing="0.1 0.1 0.1"',
            '<pin id="0 5"/><pin gridrange="2 0 2 1"/>'),
           ("grid-3d-2d-dofs", 'type="grid" dim="3" count="2 3 2" spacing="0.1 0.1 0.1" dof="2d"', ""),
           ("circle", 'type="circle" dim="1" count="7 1 1" spacing="0.1 0.1 0.1"', ""),
           ("square", 'type="square" count="3 3 1" spacing="0.1 0.1 0.1"', '<pin range="1 2"/>'),
           ("disc", 'type="disc" count="5 5 1" spacing="0.1 0.1 0.1"', ""),
           ("open-box", 'type="box" dim="2" count="3 4 3" spacing="0.1 0.1 0.1"', ""),
           ("radial-box", 'type="box" dim="3" count="3 3 3" spacing="0.1 0.1 0.1" dof="radial"', ""),
           ("cylinder", 'type="cylinder" dim="3" count="3 3 3" spacing="0.1 0.1 0.1" dof="radial"', ""),
           ("ellipsoid", 'type="ellipsoid" dim="2" count="4 3 3" spacing="0.1 0.2 0.1" inertiabox="0.02"', ""),
           ("direct", 'type="direct" dim="2" point="0 0 0 1 0 0 0 1 0 5 5 5 1 1 0" element="0 1 2 1 4 2" '
            'scale="0.1 0.2 0.3"', ""),
       )},
    # a free body moved to MuJoCo's principal axes (alignfree): off-diagonal inertia from tilted capsules, so the
    # Jacobi iteration must converge as MuJoCo's does (it used to stop early: poses 2.2e-8 off)
    "free-joint-alignfree": """<mujoco><compiler alignfree="true"/><worldbody>
      <body name="body" pos="0 0 1" euler="10 -20 30"><freejoint/>
        <geom type="capsule" size=".1" fromto="0 0 0 1 0 0"/>
        <geom type="capsule" size=".07" fromto="1 0 0 1 1 0.2"/>
        <frame pos="1 1 0" euler="0 30 0"><geom type="capsule" size=".1" fromto="0 0 0 0 0 1"/>
          <site name="tip" pos="-.2 0 1" quat="1 2 3 4"/></frame></body>
      <body name="box" pos="2 0 1"><freejoint align="true"/><geom type="box" size=".3 .2 .1" euler="5 7 11"/>
        <geom type="sphere" size=".1" pos=".2 .1 0"/></body></worldbody></mujoco>""",
}


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_matches_mujoco(text):
    """Body and site poses (1e-12), gravity (1e-9) and per-body mass, COM and inertia equal MuJoCo's."""
    model = load_mjcf_string(text)
    ref = Mujoco(xml=text)
    ref.bind(model)
    for name, (mass, com, inertia) in ref.mass_properties().items():
        b = model.bodies[model.link_names.index(name)]
        assert b.inertia.mass == pytest.approx(mass, rel=1e-12, abs=1e-15), name
        np.testing.assert_allclose(b.inertia.com, com, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(b.inertia.rotational, inertia, atol=1e-9 * max(1e-12, np.abs(inertia).max()))
    np.testing.assert_allclose(model.gravity, ref.m.opt.gravity)
    rng = np.random.default_rng(3)
    sites = [f for f in model.frames if f.kind == "site"]
    for _ in range(3):
        q = random_q(model, rng)
        poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
        for name, T in ref.link_poses(q).items():
            np.testing.assert_allclose(poses[name], T, atol=1e-12, err_msg=name)
        ref_sites = ref.site_poses(q)
        links = model.link_poses(q)
        for f in sites:
            T = (links[f.body] if f.body >= 0 else np.eye(4)) @ f.offset
            np.testing.assert_allclose(T, ref_sites[f.name], atol=1e-12, err_msg=f.name)
        np.testing.assert_allclose(model.gravity_compensation(q), ref.gravity(q), atol=1e-9)


def test_inverse_dynamics_matches_mj_inverse():
    """Full inverse dynamics (hinge, slide, ball; velocities and accelerations) equals MuJoCo's mj_inverse."""
    text = world(ARM, '<option><flag constraint="disable" spring="disable" damper="disable"/></option>')
    model = load_mjcf_string(text)
    ref = Mujoco(xml=text)
    ref.bind(model)
    mj, m, d = ref.mj, ref.m, ref.d
    rng = np.random.default_rng(4)
    q, qd, qdd = random_q(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    ref.set_q(q)
    # no free joint here: MuJoCo's dofs are hebictl's (ball angular velocity is local in both)
    d.qvel[:] = qd
    d.qacc[:] = qdd
    mj.mj_inverse(m, d)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), d.qfrc_inverse, atol=1e-9)


def test_coordinates_equal_qpos_and_ref_is_metadata():
    """hebictl q is MuJoCo qpos (quaternions w x y z); ref is kept, and the file pose is reached at q = qpos0."""
    model = load_mjcf_string(CASES["hinge-slide-ball-anchors-ref"])
    ref = Mujoco(xml=CASES["hinge-slide-ball-anchors-ref"])
    ref.bind(model)
    assert model.q_names == ("shoulder", "elbow", "twist", "wrist_qw", "wrist_qx", "wrist_qy", "wrist_qz")
    shoulder = model.bodies[model.link_names.index("upper")].joint
    assert shoulder.metadata["ref"] == pytest.approx(math.radians(15))
    assert (shoulder.lower, shoulder.upper) == pytest.approx((-math.pi / 2, math.pi / 2))
    np.testing.assert_allclose(ref.m.qpos0[:3], [math.radians(15), 0, 0.1])
    # two joints in "lower" (the elbow off-centre): a massless body for the elbow, then "lower" on the slide;
    # the ball joint's off-centre anchor needs a body at the anchor and "hand" fixed back at the body origin
    assert [b.name for b in model.bodies] == ["upper", "lower__elbow", "lower", "hand__wrist", "hand"]


def test_aligned_free_bodies_match_mujoco_qpos0():
    """alignfree/align move free bodies to their principal axes: qpos0 equals MuJoCo's to 1e-12 (a quaternion
    and its negative are the same orientation)."""
    text = CASES["free-joint-alignfree"]
    model = load_mjcf_string(text)
    ref = Mujoco(xml=text)
    ours, theirs = model.neutral_configuration(), ref.m.qpos0
    assert ours.shape == theirs.shape == (14,)
    for s in (0, 7):
        np.testing.assert_allclose(ours[s:s + 3], theirs[s:s + 3], rtol=0, atol=1e-12)
        q, r = ours[s + 3:s + 7], theirs[s + 3:s + 7]
        np.testing.assert_allclose(q * np.sign(q @ r), r, rtol=0, atol=1e-12)


def test_free_body_neutral_configuration_is_file_pose():
    """A free body's default pose (MuJoCo qpos0) is what neutral_configuration() returns."""
    text = CASES["free-body-default-pose"]
    model = load_mjcf_string(text)
    ref = Mujoco(xml=text)
    np.testing.assert_allclose(model.neutral_configuration(), ref.m.qpos0, atol=1e-15)
    assert model.bodies[0].joint.kind is JointKind.FREE


def test_include_and_attach(tmp_path):
    """<include> (relative to the including file) and <attach> of a <model> asset, names prefixed."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "arm.xml").write_text('<mujoco><include file="link.xml"/></mujoco>')
    (tmp_path / "parts" / "link.xml").write_text(
        '<mujoco><worldbody><body name="inc" pos="0 1 0"><joint name="ij"/><geom size="0.1"/></body>'
        '</worldbody></mujoco>')
    (tmp_path / "kid.xml").write_text(
        '<mujoco model="kid"><compiler angle="radian"/><worldbody><body name="k" pos="1 0 0" euler="0 0 1.0">'
        '<joint name="kj"/><geom size="0.1"/><site name="ks"/></body></worldbody></mujoco>')
    (tmp_path / "main.xml").write_text(
        '<mujoco><asset><model name="kid" file="kid.xml"/></asset><include file="parts/arm.xml"/>'
        '<worldbody><body name="p" pos="0 0 1"><joint name="pj"/><geom size="0.1"/>'
        '<attach model="kid" body="k" prefix="x_"/></body></worldbody></mujoco>')
    model = load_mjcf(tmp_path / "main.xml")
    ref = Mujoco(path=tmp_path / "main.xml")
    ref.bind(model)
    assert set(model.q_names) == {"ij", "pj", "x_kj"}
    q = random_q(model, np.random.default_rng(1))
    poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
    for name, T in ref.link_poses(q).items():
        np.testing.assert_allclose(poses[name], T, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(model.gravity_compensation(q), ref.gravity(q), atol=1e-9)


def test_disabled_gravity_flag():
    """<flag gravity="disable"> makes the model's gravity zero (MuJoCo's qfrc_bias has no gravity then)."""
    model = load_mjcf_string(world(ARM, '<option gravity="0 0 -3"><flag gravity="disable"/></option>'))
    np.testing.assert_array_equal(model.gravity, [0, 0, 0])
    assert model.metadata["gravity_disabled"] and model.metadata["option_gravity"] == [0, 0, -3]


ACTUATED = world('<body name="a"><joint name="j" actuatorfrcrange="-9 9"/><geom size="0.1"/>'
                 '<body name="b" pos="1 0 0"><joint name="k"/><geom size="0.1"/>'
                 '<body name="c" pos="1 0 0"><joint name="l"/><geom size="0.1"/></body></body></body>')


@pytest.mark.parametrize(("actuators", "expected"), [
    ('<motor joint="k" gear="2" ctrlrange="-3 1"/>', {"j": 9, "k": 6, "l": math.inf}),
    ('<motor joint="j" gear="2" ctrlrange="-10 10"/>', {"j": 9, "k": math.inf, "l": math.inf}),
    ('<position joint="k" kp="10" forcerange="-4 4" gear="-0.5"/>', {"j": 9, "k": 2, "l": math.inf}),
    ('<velocity joint="l" kv="1" ctrlrange="-1 1"/>', {"j": 9, "k": math.inf, "l": math.inf}),
    ('<motor joint="l" ctrlrange="-1 1"/><motor joint="l" ctrlrange="-2 2"/>', {"j": 9, "k": math.inf, "l": 3}),
    ('<general joint="k" forcerange="-5 5" forcelimited="false"/>', {"j": 9, "k": math.inf, "l": math.inf}),
], ids=["motor-ctrlrange", "joint-bound-wins", "position-forcerange", "velocity-unbounded", "two-motors-add",
        "forcelimited-false"])
def test_actuators_give_max_effort(actuators, expected):
    """Joint max_effort [N·m] from actuatorfrcrange and joint actuators' gear × force/ctrl ranges."""
    text = ACTUATED.replace("</mujoco>", f"<actuator>{actuators}</actuator></mujoco>")
    Mujoco(xml=text)  # MuJoCo accepts every row
    model = load_mjcf_string(text)
    got = {model.bodies[i].joint.name: model.bodies[i].joint.max_effort for i in model.joint_bodies}
    assert got == expected
    assert "actuators" in model.bodies[model.link_names.index("b")].joint.metadata or expected["k"] == math.inf


def test_autolimits_needs_a_proper_interval():
    """With autolimits a reversed or empty range leaves the joint unlimited, as MuJoCo compiles it."""
    text = world('<body name="a"><joint name="j" range="1 -1"/><geom size="0.1"/><body name="b" pos="1 0 0">'
                 '<joint name="k" range="0.5 0.5"/><geom size="0.1"/></body></body>', '<compiler angle="radian"/>')
    model = load_mjcf_string(text)
    ref = Mujoco(xml=text)
    assert list(ref.m.jnt_limited) == [0, 0]
    assert all(math.isinf(model.bodies[i].joint.upper) for i in model.joint_bodies)


def test_missing_visual_mesh_warns(tmp_path):
    """A mesh file that only a geom with an <inertial> body uses is reported once, never fatal."""
    (tmp_path / "m.xml").write_text('<mujoco><asset><mesh name="hull" file="hull.stl"/></asset><worldbody>'
                                    '<body name="arm"><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
                                    '<geom type="mesh" mesh="hull"/></body></worldbody></mujoco>')
    with pytest.warns(MjcfWarning, match="1 mesh file"):
        model = load_mjcf(tmp_path / "m.xml")
    assert model.metadata["missing_meshes"] == ["hull.stl"]
