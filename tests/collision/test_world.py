"""The collision world (hebictl.collision): shapes, allowed pairs, workspace parsing, and every
distance checked against hpp-fcl (an independent collision library) on the same shapes and poses."""

from __future__ import annotations

import itertools
import textwrap

import hppfcl
import numpy as np
import pytest

from hebictl.collision import CollisionWorld, workspace_from
from hebictl.collision.hrdf import hrdf_shapes
from hebictl.collision.world import arm_shapes
from hebictl.errors import ConfigError
from hebictl.formats import load_model, load_model_string
from tests._support.paths import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
BOXES = {"objects": [{"type": "box", "name": "crate", "center": [0.35, 0.0, 0.1], "size": [0.1, 0.2, 0.2]},
                     {"type": "box", "name": "shelf", "center": [0.0, 0.45, 0.3], "size": [0.3, 0.1, 0.05],
                      "clearance": 0.02}]}


def _fcl(shape):
    if shape.kind == "capsule":
        return hppfcl.Capsule(shape.size[0], 2 * shape.size[1])
    if shape.kind == "box":
        return hppfcl.Box(*(2 * np.array(shape.size)))
    if shape.kind == "sphere":
        return hppfcl.Sphere(shape.size[0])
    if shape.kind == "plane":
        return hppfcl.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0)
    raise AssertionError(shape.kind)


def _world_pose(model, q, shape):
    if shape.body < 0:
        return shape.pose
    return model.link_poses(q)[shape.body] @ shape.pose


@pytest.mark.parametrize("name", CONFIGS)
def test_every_reported_distance_matches_hpp_fcl(name):
    """MuJoCo's distance of every pair it reports (within the margins) equals hpp-fcl's on the same
    shapes at the same poses, at 30 random joint positions with a table and two boxes."""
    model = load_model(REPO_ROOT / "hrdf_kits" / f"{name}.hrdf")
    world = CollisionWorld(model, workspace_from({"workspace": BOXES}))
    names = {s.name: s for s in [*world.shapes, *world.workspace.shapes]}
    lo, hi = model.position_limits
    lo, hi = np.maximum(lo, -np.pi), np.minimum(hi, np.pi)
    rng = np.random.default_rng(3)
    compared, worst, box_short = 0, 0.0, 0.0
    for q in lo + (hi - lo) * rng.random((30, model.dof)):
        geom, gap = world.pairs(q)
        closest: dict[tuple[int, int], float] = {}  # MuJoCo may report several contacts of one pair
        for (a, b), d in zip(geom, gap, strict=True):
            closest[(int(a), int(b))] = min(float(d), closest.get((int(a), int(b)), np.inf))
        for (a, b), d in closest.items():
            sa, sb = world.shapes_by_geom[a], world.shapes_by_geom[b]
            Ta, Tb = _world_pose(model, q, sa), _world_pose(model, q, sb)
            req, res = hppfcl.DistanceRequest(), hppfcl.DistanceResult()
            req.enable_signed_distance = True
            ref = hppfcl.distance(_fcl(sa), hppfcl.Transform3f(Ta[:3, :3], Ta[:3, 3]),
                                  _fcl(sb), hppfcl.Transform3f(Tb[:3, :3], Tb[:3, 3]), req, res)
            if d > 0.04:
                continue  # beyond every margin MuJoCo may report a pair roughly; the world ignores it
            if d >= 0:  # separated, within the margins (what the world acts on): hpp-fcl's distance,
                # box pairs included (mj_geomDistance; MuJoCo's box-box contacts were up to 5 mm short)
                assert ref - 2e-4 <= d <= ref + 2e-4, (sa.name, sb.name, d, ref)
                box = sa.kind == sb.kind == "box"
                worst = worst if box else max(worst, abs(d - ref))
                box_short = max(box_short, abs(ref - d)) if box else box_short
            else:
                assert ref < 1e-4, (sa.name, sb.name, d, ref)
            compared += 1
            assert names[sa.name] is sa
    print(f"{name}: {compared} pair distances compared with hpp-fcl, largest difference {worst * 1000:.3f} mm, "
          f"box-box {box_short * 1000:.3f} mm")
    assert compared > 20


def test_hrdf_shapes_follow_the_element_table():
    """Every actuator is a box as tall as its output, every link a capsule as long as input->output."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    shapes = hrdf_shapes(model)
    kinds = [s.kind for s in shapes]
    assert kinds.count("box") == 6 and kinds.count("capsule") == 6
    base = shapes[0]
    assert base.size == pytest.approx((0.055, 0.037, 0.0451 / 2))  # X8: 110 x 74 mm, output at 45.1 mm
    link = next(s for s in shapes if s.name.startswith("e3"))
    assert 2 * link.size[1] == pytest.approx(0.3, abs=1e-6)  # extension 0.3 m, input and output at one height


def test_adjacent_groups_are_allowed_and_computed():
    """Pairs joined by one joint are allowed; nothing else of x6 is (no hand-written list)."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    world = CollisionWorld(model, workspace_from(None))
    joints = [b for b in world.groups]
    assert world.allowed == {(-1, joints[0]), *itertools.pairwise(joints)}
    assert len(world.pair_names()) > 10


#: a box base and a 0.5 m cylinder arm on one revolute joint, each with its own <collision> shape
TWO_LINKS_URDF = textwrap.dedent("""\
    <robot name="two">
      <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
      <link name="arm">
        <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.03" length="0.5"/></geometry></collision>
      </link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
    </robot>""")


def test_urdf_collision_geometry_is_used():
    """A URDF's own <collision> shapes (box, cylinder) become the arm's shapes, with half sizes."""
    model = load_model_string(TWO_LINKS_URDF, format="urdf")
    shapes = arm_shapes(model)
    assert [(s.kind, s.size) for s in shapes] == [("box", (0.05, 0.05, 0.05)), ("cylinder", (0.03, 0.25))]
    world = CollisionWorld(model, workspace_from(None))
    # tipped over by 90 deg the cylinder's side lies 0.1 - 0.03 = 7 cm above the table (clearance 1 cm)
    self_d, table_d = world.min_distances(np.array([np.pi / 2]))
    assert np.isinf(self_d) and table_d == pytest.approx(0.06, abs=1e-9)  # 7 cm gap - 1 cm clearance
    hit = world.collision(np.array([np.pi / 2 + 0.3]))  # the tip now dips below the table
    assert hit is not None and hit.kind == "workspace" and {hit.a, hit.b} == {"table", "arm/0"}


@pytest.mark.parametrize(("section", "key"), [
    ({"objects": [{"type": "sphere"}]}, "user_data.workspace.objects[0].type"),
    ({"objects": [{"type": "box", "center": [0, 0], "size": [1, 1, 1]}]}, "user_data.workspace.objects[0].center"),
    ({"objects": [{"type": "box", "center": [0, 0, 0], "size": [1, -1, 1]}]}, "user_data.workspace.objects[0].size"),
    ({"objects": [{"type": "wall", "point": [0, 0, 0], "normal": [0, 0, 0]}]},
     "user_data.workspace.objects[0].normal"),
    ({"table": {"clearance": -1}}, "user_data.workspace.table.clearance"),
    ({"tabel": {}}, "user_data.workspace.tabel"),
    ({"slowdown": {"self": "far"}}, "user_data.workspace.slowdown.self"),
    ("yes", "user_data.workspace"),
])
def test_bad_workspace_is_a_config_error_naming_file_and_key(section, key):
    with pytest.raises(ConfigError) as exc:
        workspace_from({"workspace": section}, "robot.cfg.yaml")
    assert exc.value.key == key and exc.value.file == "robot.cfg.yaml"


def test_workspace_objects_and_defaults():
    ws = workspace_from({"workspace": {"objects": [
        {"type": "cylinder", "name": "post", "center": [0.5, 0, 0.3], "radius": 0.05, "height": 0.6},
        {"type": "wall", "point": [-0.3, 0, 0], "normal": [2, 0, 0], "clearance": 0.05},
        {"type": "keep_out", "center": [0, 0, 1], "size": [0.2, 0.2, 0.2]}]}})
    assert [s.name for s in ws.shapes] == ["table", "post", "wall1", "keep_out2"]
    assert ws.shapes[2].pose[:3, 2] == pytest.approx([1, 0, 0]) and ws.shapes[2].clearance == 0.05
    assert ws.shapes[3].meta["virtual"] and not ws.shapes[1].meta["virtual"]
    assert (ws.slowdown_self, ws.slowdown_workspace) == (0.02, 0.03)
    assert workspace_from({"workspace": {"table": False}}).shapes == ()


@pytest.mark.parametrize("name", CONFIGS)
def test_pair_gaps_are_lower_bounds_of_hpp_fcl_distances(name):
    """Every contact MuJoCo reports belongs to a checked pair, and each checked pair's gap (MuJoCo's
    distance, or the margin MuJoCo reports within when it is silent) is never more than
    ``GAP_TOLERANCE`` above hpp-fcl's distance: the lower bound conservative advancement steps on."""
    from hebictl.collision.path import GAP_TOLERANCE

    model = load_model(REPO_ROOT / "hrdf_kits" / f"{name}.hrdf")
    world = CollisionWorld(model, workspace_from({"workspace": BOXES}))
    pairs = world.checked_pairs()
    lo, hi = model.position_limits
    lo, hi = np.maximum(lo, -np.pi), np.minimum(hi, np.pi)
    rng = np.random.default_rng(31)
    slack, silent = np.inf, 0
    for q in lo + (hi - lo) * rng.random((20, model.dof)):
        geom, _ = world.pairs(q)
        assert {(min(a, b), max(a, b)) for a, b in geom.tolist()} <= set(pairs)
        gaps, close = world.pair_gaps(q)
        assert close == bool(np.any(gaps < world.pair_clearance))
        for k, (a, b) in enumerate(pairs):
            sa, sb = world.shapes_by_geom[a], world.shapes_by_geom[b]
            Ta, Tb = _world_pose(model, q, sa), _world_pose(model, q, sb)
            ref = hppfcl.distance(_fcl(sa), hppfcl.Transform3f(Ta[:3, :3], Ta[:3, 3]), _fcl(sb),
                                  hppfcl.Transform3f(Tb[:3, :3], Tb[:3, 3]), hppfcl.DistanceRequest(),
                                  hppfcl.DistanceResult())
            assert gaps[k] - GAP_TOLERANCE <= max(ref, 0.0), (sa.name, sb.name, gaps[k], ref)
            slack = min(slack, max(ref, 0.0) - gaps[k])
            silent += bool(gaps[k] >= world.pair_far[k])
    print(f"{name}: {len(pairs)} pairs x 20 poses, {silent} beyond MuJoCo's margins; largest excess of a gap "
          f"over hpp-fcl {max(-slack, 0.0) * 1000:.2f} mm (tolerance {GAP_TOLERANCE * 1000:.1f} mm)")


@pytest.mark.parametrize("theta", [1.50, 1.60, 1.64, 1.66, 1.68, 1.70])
def test_approach_scale_is_linear_in_the_distance_on_a_tipping_cylinder(theta):
    """One cylinder tipping toward the table: the scale is linear in the distance (1 at the 3 cm threshold,
    0 at contact) capped by stopping within the distance left at 0.5 m/s², with the distance from
    the cylinder's geometry (its lowest rim point; hpp-fcl 2.4's cylinder-halfspace distance is off
    by 12 mm here); tipping back up is never slowed."""
    model = load_model_string(TWO_LINKS_URDF, format="urdf")
    world = CollisionWorld(model, workspace_from(None))
    table, arm = world.workspace.shapes[0], world.shapes[1]

    def beyond_clearance(q):  # the tipped cylinder's lowest rim point over the table plane z = 0
        Ta = _world_pose(model, q, arm)
        axis, ends = Ta[:3, 2], Ta[:3, 3] + np.outer([-0.25, 0.25], Ta[:3, 2])
        return ends[:, 2].min() - 0.03 * np.sqrt(1.0 - axis[2] ** 2) - table.clearance

    q, q_next, lookahead, decel = np.array([theta]), np.array([theta + 0.004]), 0.02, 0.5
    d, d_next = min(beyond_clearance(q), world.horizon), beyond_clearance(q_next)
    expected = min(1.0, max(0.0, min(d, d_next) / world.workspace.slowdown_workspace),
                   np.sqrt(2 * decel * max(d, 0.0)) / ((d - d_next) / lookahead))
    got = world.approach_scale(q, q_next, lookahead, decel)
    print(f"theta {theta}: {d * 1000:.1f} -> {d_next * 1000:.1f} mm beyond the clearance, scale {got:.3f} "
          f"(expected {expected:.3f})")
    assert got == pytest.approx(expected, abs=1e-3)
    assert world.approach_scale(q_next, q, lookahead, decel) == 1.0
