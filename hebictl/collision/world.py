"""The collision world: the arm's shapes and its workspace in one MuJoCo model, queried by joint position.

Why MuJoCo's collision pipeline (and not coal/hpp-fcl, the other candidate installed here):
measured on the same shapes and pairs (``benchmarks/collision.py``), one ``mj_collision`` call
checks every pair in C with its broad phase, where hpp-fcl needs one Python call per pair; see
docs/collision.md for the figures. MuJoCo is already the sim backend's engine, so this adds no
dependency. No distance code is written here: every distance is MuJoCo's.

How: every rigid group of the arm (a moving body and the fixed bodies welded to it) becomes a
free-floating MuJoCo body holding that group's shapes; the base group and the workspace live
in the world (the base in a body welded to it), so MuJoCo never collides them with each other
(the arm stands on its table).
A query writes each group's pose (from hebictl's own forward kinematics) into ``qpos``, runs
``mj_kinematics`` and ``mj_collision``; geom margins make MuJoCo report every pair closer than
its clearance plus the slow-down threshold, with the signed distance. Box-box pairs (actuator
housings, box obstacles) are left out of the contact pipeline: MuJoCo's analytic box-box collider
was silent about box pairs inside the margin, down to 4.5 mm apart (closer than the 1 cm self
clearance), and reported others up to 5 mm short; they are measured with ``mj_geomDistance``
(MuJoCo's GJK distance) after a bounding-sphere prefilter. Checked against hpp-fcl
(tests/collision/test_world.py): the same distance to 0.2 mm for every pair kind. Boxes are not
turned into meshes: MuJoCo's contact list then reported capsule-mesh pairs up to 18 mm too far.

Allowed pairs (never reported) are computed, not listed: groups joined by one joint (they touch
at the joint by construction) and pairs closer than the self clearance at every one of
:data:`ALLOWED_SAMPLES` random joint positions (they overlap whatever the joints do).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from hebictl import jit
from hebictl._typing import FloatArray
from hebictl.collision.files import file_shapes
from hebictl.collision.hrdf import hrdf_shapes
from hebictl.collision.kernels import (
    approach_scale,
    nearest_margins,
    pair_gaps,
    poses_to_qpos,
    sphere_candidates,
)
from hebictl.collision.shapes import Shape
from hebictl.collision.workspace import Workspace
from hebictl.errors import ModelError
from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind

#: [m] how far beyond the clearances distances are reported (geom margins): the jog's braking horizon
HORIZON = 0.1
SELF_HORIZON = 0.04
#: random joint positions used to find pairs that overlap whatever the joints do
ALLOWED_SAMPLES = 64
# contype/conaffinity bits: arm geoms collide with everything, workspace geoms with the arm, except
# box against box, which MuJoCo's contact pipeline leaves to :meth:`CollisionWorld._box_distances`
_ARM, _ARM_BOX, _WORLD, _WORLD_BOX = 1, 2, 4, 8
_BITS = {(False, False): (_ARM, _ARM | _ARM_BOX | _WORLD | _WORLD_BOX), (False, True): (_ARM_BOX, _ARM | _WORLD),
         (True, False): (_WORLD, _ARM | _ARM_BOX), (True, True): (_WORLD_BOX, _ARM)}  # (workspace, box)


@dataclass
class OtherArm:
    """Another arm in this arm's world (:meth:`CollisionWorld.add_other_arm`): its model, base pose
    in this arm's base frame, shapes, rigid groups, joint positions and their free-joint poses."""

    name: str
    model: RobotModel
    base: FloatArray
    shapes: list[Shape]
    roots: list[int]
    groups: list[int]
    q: FloatArray
    poses: FloatArray
    qpos: FloatArray


@dataclass(frozen=True)
class Proximity:
    """The closest pair of one query: ``distance`` [m] beyond the pair's clearance (< 0: too
    close; ``gap`` is the raw surface distance, < 0 penetration), the two shapes, and ``kind``
    ``"self"`` or ``"workspace"``."""

    distance: float
    gap: float
    a: str
    b: str
    kind: str


def arm_shapes(model: RobotModel) -> list[Shape]:
    """The arm's shapes: the model file's collision geometry, or for HRDF the element table."""
    if model.format == "hrdf":
        return hrdf_shapes(model)
    shapes, _ = file_shapes(model)
    return shapes


def _group_roots(model: RobotModel) -> list[int]:
    """Per body: the moving body its rigid group hangs from (itself if it has a joint), -1 = base."""
    roots: list[int] = []
    for i, b in enumerate(model.bodies):
        roots.append(i if b.joint.nv else (roots[b.parent] if b.parent >= 0 else -1))
    return roots


def _to_root(model: RobotModel, body: int, root: int) -> FloatArray:
    T = np.eye(4)
    while body != root:
        T = model.bodies[body].placement @ T
        body = model.bodies[body].parent
    return T


def mat_to_quat(R: FloatArray) -> FloatArray:
    """Unit quaternions (w, x, y, z) of rotation matrices ``R`` (..., 3, 3), all at once.

    The magnitudes come from the diagonal, the signs from the off-diagonal differences (the
    standard copysign form); MuJoCo normalises ``qpos`` quaternions in ``mj_kinematics``."""
    R = np.asarray(R, dtype=np.float64)
    d0, d1, d2 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    q = np.empty((*R.shape[:-2], 4))
    q[..., 0] = 0.5 * np.sqrt(np.maximum(0.0, 1.0 + d0 + d1 + d2))
    q[..., 1] = np.copysign(0.5 * np.sqrt(np.maximum(0.0, 1.0 + d0 - d1 - d2)), R[..., 2, 1] - R[..., 1, 2])
    q[..., 2] = np.copysign(0.5 * np.sqrt(np.maximum(0.0, 1.0 - d0 + d1 - d2)), R[..., 0, 2] - R[..., 2, 0])
    q[..., 3] = np.copysign(0.5 * np.sqrt(np.maximum(0.0, 1.0 - d0 - d1 + d2)), R[..., 1, 0] - R[..., 0, 1])
    return q


def _bound_radius(kind: str, size: tuple[float, ...]) -> float:
    if kind == "box":
        return float(np.linalg.norm(size))
    if kind == "capsule":
        return float(size[0] + size[1])
    if kind == "cylinder":
        return float(np.hypot(size[0], size[1]))
    if kind == "sphere":
        return float(size[0])
    return 0.5  # a mesh: a generous bound (an arm link is shorter)


def joint_reach(model: RobotModel, shapes: list[Shape]) -> FloatArray:
    """Per joint: how far any arm shape below it can be from its frame origin [m], in any pose
    (lengths along the tree plus each shape's bounding radius: the triangle inequality)."""
    far = np.zeros(len(model.bodies))   # reach of the subtree below each body, from its own origin
    for s in shapes:
        far[s.body] = max(far[s.body], float(np.linalg.norm(s.pose[:3, 3])) + _bound_radius(s.kind, s.size))
    for i in range(len(model.bodies) - 1, -1, -1):  # bodies are in topological order
        p = model.bodies[i].parent
        if p >= 0:
            far[p] = max(far[p], float(np.linalg.norm(model.bodies[i].placement[:3, 3])) + far[i])
    return np.array([far[b] for b in model.joint_bodies])


class CollisionWorld:
    """Distances between the arm's shapes and to its workspace at a joint position (module doc)."""

    def __init__(self, model: RobotModel, workspace: Workspace, shapes: list[Shape] | None = None) -> None:
        if model.nq != model.nv:
            raise ModelError("collision checking supports arms of 1-DoF joints")
        self.robot = model
        self.workspace = workspace
        self.shapes = list(arm_shapes(model) if shapes is None else shapes)
        roots = _group_roots(model)
        #: per joint [m]: bound on how far the shapes below it reach from it (path sampling)
        self.reach = joint_reach(model, self.shapes)
        self.groups = sorted({roots[s.body] for s in self.shapes if roots[s.body] >= 0})
        #: other arms sharing the workspace (:meth:`add_other_arm`), obstacles at their measured poses
        self.others: list[OtherArm] = []
        self._build()

    def add_other_arm(self, name: str, model: RobotModel, base: FloatArray, clearance: float) -> int:
        """Another arm as an obstacle: its shapes (each named ``<name>/<shape>``, kept ``clearance`` [m]
        from), its base pose ``base`` (4x4) in this arm's base frame, at its zero pose until
        :meth:`move_other_arm`. Call :meth:`rebuild` after the last one. Returns its index."""
        shapes = [replace(s, name=f"{name}/{s.name}", clearance=float(clearance)) for s in arm_shapes(model)]
        roots = _group_roots(model)
        groups = sorted({roots[s.body] for s in shapes})
        q = np.zeros(model.nq)
        self.others.append(OtherArm(name, model, np.asarray(base, dtype=np.float64), shapes, roots, groups, q,
                                    np.zeros((len(model.bodies), 4, 4)), np.zeros(7 * len(groups))))
        self.move_other_arm(len(self.others) - 1, q)
        return len(self.others) - 1

    def move_other_arm(self, index: int, q: ArrayLike) -> None:
        """Other arm ``index`` is at joint positions ``q`` now (its measured feedback): every later
        query, path check and jog slow-down sees it there."""
        o = self.others[index]
        np.copyto(o.q, np.asarray(q, dtype=np.float64))
        o.model.forward_kinematics_into(o.q, "link", o.poses)
        world = o.base @ o.model.base
        frames = np.stack([o.base @ o.poses[g] if g >= 0 else world for g in o.groups])
        # the compiled kernel this arm's own groups use (per group through numpy it was most of a
        # multi-arm cycle's cost: a few µs of arithmetic in 50 µs of small-array calls)
        poses_to_qpos(frames, np.arange(len(o.groups), dtype=np.int64), o.qpos)

    def rebuild(self) -> None:
        """Compile the world again with the other arms added since (:meth:`add_other_arm`)."""
        self._build()

    def _build(self) -> None:
        model, workspace = self.robot, self.workspace
        roots = _group_roots(model)
        spec = mujoco.MjSpec()
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
        #: [m] distances beyond each clearance are reported up to at least this far (jog braking looks
        #: ahead): to the workspace HORIZON, between the arm's own bodies SELF_HORIZON (self approach is
        #: slow, and a shorter margin keeps the many close self pairs out of MuJoCo's contact list)
        self.horizon = max(HORIZON, workspace.slowdown_workspace)
        self.self_horizon = max(SELF_HORIZON, workspace.slowdown_self)
        self._arm_margin = workspace.self_clearance + self.self_horizon
        ws_margin = max((s.clearance for s in (*workspace.shapes, *(s for o in self.others for s in o.shapes))),
                        default=0.0) + self.horizon
        # the base group gets its own body welded to the world (MuJoCo never collides it with the
        # workspace, which lives in the world body), so excluding it excludes only the base
        self._mj_body: dict[int, str] = {-1: "base"}
        bodies = {-1: spec.worldbody.add_body(name="base")}
        for g in self.groups:
            name = f"g{g}:{model.bodies[g].name}"
            body = spec.worldbody.add_body(name=name)
            body.add_freejoint()
            bodies[g] = body
            self._mj_body[g] = name
        geom_shapes: list[Shape] = []
        group: list[int] = []   # per shape: its arm group, -1 the base, -2 the workspace
        other: list[int] = []   # per workspace shape from another arm: that arm's index
        for s in self.shapes:
            g = roots[s.body]
            pose = _to_root(model, s.body, g) @ s.pose if g >= 0 else model.base @ _to_root(model, s.body, -1) @ s.pose
            self._add_geom(spec, bodies[g], s, pose, *_BITS[False, s.kind == "box"], self._arm_margin,
                           len(geom_shapes))
            geom_shapes.append(s)
            group.append(g)
        for s in workspace.shapes:
            self._add_geom(spec, spec.worldbody, s, s.pose, *_BITS[True, s.kind == "box"], ws_margin, len(geom_shapes))
            geom_shapes.append(s)
            group.append(-2)
        for k, o in enumerate(self.others):  # obstacles that move: free bodies after this arm's groups
            other_bodies = {}
            for g in o.groups:
                other_bodies[g] = spec.worldbody.add_body(name=f"other{k}:{g}")
                other_bodies[g].add_freejoint()
            for s in o.shapes:
                g = o.roots[s.body]
                pose = _to_root(o.model, s.body, g) @ s.pose if g >= 0 else _to_root(o.model, s.body, -1) @ s.pose
                self._add_geom(spec, other_bodies[g], s, pose, *_BITS[True, s.kind == "box"], ws_margin,
                               len(geom_shapes))
                geom_shapes.append(s)
                group.append(-2)   # a workspace object to this arm: its own clearance, never moved by these joints
                other.append(len(geom_shapes) - 1)
        self.mj = spec.compile()
        self.data = mujoco.MjData(self.mj)
        # MuJoCo numbers geoms body by body: every per-geom table below is in MuJoCo's order
        order = [int(self.mj.geom(f"s{i}").id) for i in range(len(geom_shapes))]
        perm = np.empty(len(order), dtype=np.int64)
        perm[order] = np.arange(len(order))
        self._geoms = [geom_shapes[i] for i in perm]
        #: the shape of each MuJoCo geom id (the indices :meth:`pairs` returns)
        self.shapes_by_geom = tuple(self._geoms)
        self._geom_group = [group[i] for i in perm]
        self._clear = np.array([s.clearance for s in self._geoms])
        self._is_ws = np.array([g == -2 for g in self._geom_group], dtype=np.bool_)
        self._is_other = np.isin(perm, np.array(other, dtype=np.int64))   # per MuJoCo geom: another arm's
        self._root_frames = np.array(self.groups, dtype=np.int64)
        self._poses = np.zeros((len(model.bodies), 4, 4))
        self.allowed: set[tuple[int, int]] = set()
        self._box_tables()
        self.allowed = self._allowed_pairs(roots)
        for a, b in sorted(self.allowed):
            spec.add_exclude(bodyname1=self._mj_body[a], bodyname2=self._mj_body[b])
        self.mj = spec.compile()
        self.data = mujoco.MjData(self.mj)
        self._box_tables()
        self._pair_tables(roots)
        # compile (or load from numba's cache) the per-cycle kernels' declared signatures now, not in a
        # jog's first cycle or while the first goal's path is checked; one query warms MuJoCo's side
        jit.preload("hebictl.collision.kernels")
        q0 = np.zeros(model.nq)
        self.approach_scale(q0, q0, 0.02, 0.5)

    # ------------------------------------------------------------------ building
    @staticmethod
    def _add_geom(spec: mujoco.MjSpec, body: mujoco.MjsBody, s: Shape, pose: FloatArray, contype: int,
                  conaffinity: int, margin: float, index: int) -> None:
        kind = {"capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "box": mujoco.mjtGeom.mjGEOM_BOX,
                "sphere": mujoco.mjtGeom.mjGEOM_SPHERE, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
                "mesh": mujoco.mjtGeom.mjGEOM_MESH, "plane": mujoco.mjtGeom.mjGEOM_PLANE}[s.kind]
        geom = body.add_geom(name=f"s{index}", type=kind, contype=contype, conaffinity=conaffinity, margin=margin)
        size = np.zeros(3)
        size[:len(s.size)] = s.size
        if s.kind == "plane":
            size[:] = (0.0, 0.0, 1.0)
        geom.size = size
        geom.pos = pose[:3, 3]
        geom.quat = mat_to_quat(pose[:3, :3])
        if s.kind == "mesh":
            mesh = spec.add_mesh(name=f"mesh{index}", file=s.mesh_path, scale=list(s.mesh_scale))
            geom.meshname = mesh.name

    def _allowed_pairs(self, roots: list[int]) -> set[tuple[int, int]]:
        """Group pairs joined by one joint, or closer than the self clearance at every sample."""
        allowed: set[tuple[int, int]] = set()
        parent = {g: roots[self.robot.bodies[g].parent] if self.robot.bodies[g].parent >= 0 else -1
                  for g in self.groups}
        for g, p in parent.items():
            allowed.add((min(g, p), max(g, p)))
        lo, hi = self.robot.position_limits
        lo = np.where(np.isfinite(lo), lo, -np.pi)
        hi = np.where(np.isfinite(hi), hi, np.pi)
        rng = np.random.default_rng(0)
        qs = lo + (hi - lo) * rng.random((ALLOWED_SAMPLES, self.robot.dof))
        always: set[tuple[int, int]] | None = None
        for q in qs:
            close: set[tuple[int, int]] = set()
            for i, j, gap in self._contacts(q):
                gi, gj = self._geom_group[i], self._geom_group[j]
                if gi >= -1 and gj >= -1 and gap < self.workspace.self_clearance and gi != gj:
                    close.add((min(gi, gj), max(gi, gj)))
            always = close if always is None else always & close
        return allowed | (always or set())

    def _box_tables(self) -> None:
        """The checked box-box pairs, measured by ``mj_geomDistance`` instead of MuJoCo's contacts.

        Why: MuJoCo's analytic box-box collider is silent about box pairs well inside the margin,
        measured against hpp-fcl down to 4.5 mm apart (x7's actuator housings, closer than the 1 cm
        self clearance), and reports others up to 5 mm short. ``mj_geomDistance`` (MuJoCo's
        GJK distance) matches hpp-fcl to 0.01 mm on the same pairs. A bounding-sphere test (a
        prefilter, not a distance) leaves a few candidates per query."""
        boxes = [(a, b) for a, b in self.checked_pairs()
                 if self._geoms[a].kind == "box" and self._geoms[b].kind == "box"]
        margin = np.asarray(self.mj.geom_margin, dtype=np.float64)
        self._box_pairs = np.array(boxes, dtype=np.int64).reshape(-1, 2)
        self._box_far = np.array([max(margin[a], margin[b]) for a, b in boxes])
        self._box_list = [(a, b, float(far)) for (a, b), far in zip(boxes, self._box_far, strict=True)]
        self._box_candidates = np.empty(len(boxes), dtype=np.int64)
        self._box_geom = np.empty((len(boxes), 2), dtype=np.int32)
        self._box_dist = np.empty(len(boxes))
        self._merged_geom = np.empty((256 + len(boxes), 2), dtype=np.int32)  # grown when a query needs more
        self._merged_dist = np.empty(len(self._merged_geom))

    def _pair_tables(self, roots: list[int]) -> None:
        """Per checked pair: its index from two geom ids, how far MuJoCo reports it, its clearance,
        and how fast its two shapes can approach each other per unit joint speed (path sampling).

        Why per pair: the distance between two bodies depends only on the joints between them
        (a joint above both moves them together), and a joint moves a body's points at most by the
        body's reach from that joint: a pair of neighbouring links far along the arm, or a link near
        the base and the table, is bounded by a few short levers, not by the whole arm's reach."""
        pairs = self.checked_pairs()
        n_geom = len(self._geoms)
        self._pair_id = np.full((n_geom, n_geom), -1, dtype=np.int64)
        margin = np.asarray(self.mj.geom_margin, dtype=np.float64)
        #: per checked pair [m]: MuJoCo reports the pair (as in :meth:`pairs`) when closer than this
        self.pair_far = np.empty(len(pairs))
        #: per checked pair [m]: the clearance it must keep (the workspace object's, or the self clearance)
        self.pair_clearance = np.empty(len(pairs))
        #: (pairs, joints) [m/rad]: a pair's surfaces approach at most ``pair_reach @ |joint speeds|``
        self.pair_reach = np.zeros((len(pairs), self.robot.dof))
        self._pair_threshold = np.empty(len(pairs))  # [m] the jog's slow-down threshold of each pair
        self._pair_horizon = np.empty(len(pairs))    # [m] how far beyond its clearance it is reported
        levers = {g: self._levers(g, roots) for g in {*self._geom_group, -1, -2}}
        for k, (a, b) in enumerate(pairs):
            self._pair_id[a, b] = self._pair_id[b, a] = k
            self.pair_far[k] = max(margin[a], margin[b])  # MuJoCo's margin of a pair of dynamic geoms
            self.pair_clearance[k] = (self._clear[a] + self._clear[b] if self._is_ws[a] or self._is_ws[b]
                                      else self.workspace.self_clearance)
            ws = bool(self._is_ws[a] or self._is_ws[b])
            self._pair_threshold[k] = self.workspace.slowdown_workspace if ws else self.workspace.slowdown_self
            self._pair_horizon[k] = self.horizon if ws else self.self_horizon
            la, lb = levers[self._geom_group[a]], levers[self._geom_group[b]]
            # joints above both move the pair together; the others move one side by its lever
            self.pair_reach[k] = np.where((la > 0) & (lb > 0), 0.0, la + lb)
        self._gaps = np.empty(len(pairs))
        self._gaps_now = np.empty(len(pairs))

    def _levers(self, group: int, roots: list[int]) -> FloatArray:
        """Per joint [m/rad]: how far a point of ``group``'s shapes can be from that joint's axis
        in any pose (0 for joints not above the group; 1 m/m for a prismatic joint): lengths along
        the tree from the joint down to the group, plus the group's own extent (triangle inequality)."""
        out = np.zeros(self.robot.dof)
        if group < 0:
            return out  # the base and the workspace do not move
        extent = max(float(np.linalg.norm((_to_root(self.robot, s.body, group) @ s.pose)[:3, 3]))
                     + _bound_radius(s.kind, s.size) for s in self.shapes if roots[s.body] == group)
        joint_of = {body: j for j, body in enumerate(self.robot.joint_bodies)}
        length, body = 0.0, group
        while body >= 0:
            j = joint_of.get(body)
            if j is not None:
                prismatic = self.robot.bodies[body].joint.kind is JointKind.PRISMATIC
                out[j] = 1.0 if prismatic else max(length + extent, 1e-9)
            length += float(np.linalg.norm(self.robot.bodies[body].placement[:3, 3]))
            body = self.robot.bodies[body].parent
        return out

    # ------------------------------------------------------------------ queries
    def _set(self, q: ArrayLike) -> None:
        self.robot.forward_kinematics_into(np.asarray(q, dtype=np.float64), "link", self._poses)
        qpos = self.data.qpos
        poses_to_qpos(self._poses, self._root_frames, qpos)  # free joints in group order
        at = 7 * len(self.groups)
        for o in self.others:   # then the other arms' groups, at their last measured poses
            qpos[at:at + o.qpos.shape[0]] = o.qpos
            at += o.qpos.shape[0]

    def pairs(self, q: ArrayLike) -> tuple[np.ndarray, FloatArray]:
        """Every checked geom pair within its margin at ``q``: (k, 2) geom indices and (k,) surface
        distances [m] (< 0: penetration) - MuJoCo's contacts, and the box pairs' distances from
        ``mj_geomDistance`` (:meth:`_box_tables`). Views, valid until the next query."""
        c, boxes = self._query(q)
        n = len(c.dist)
        if boxes == 0:
            return c.geom[:n], c.dist[:n]
        if n + boxes > len(self._merged_dist):  # more contacts than ever before: grow the buffers
            self._merged_geom = np.empty((2 * (n + boxes), 2), dtype=np.int32)
            self._merged_dist = np.empty(2 * (n + boxes))
        geom, dist = self._merged_geom, self._merged_dist
        geom[:n], dist[:n] = c.geom[:n], c.dist[:n]
        geom[n:n + boxes], dist[n:n + boxes] = self._box_geom[:boxes], self._box_dist[:boxes]
        return geom[:n + boxes], dist[:n + boxes]

    def _query(self, q: ArrayLike) -> tuple[Any, int]:
        """MuJoCo's contact list at ``q`` and how many box pairs :meth:`_box_distances` found."""
        self._set(q)
        mujoco.mj_kinematics(self.mj, self.data)
        mujoco.mj_collision(self.mj, self.data)
        return self.data.contact, self._box_distances()

    def _box_distances(self) -> int:
        """The box pairs closer than their margin at the current poses, into ``_box_geom``/``_box_dist``."""
        count = sphere_candidates(self.data.geom_xpos, self.mj.geom_rbound, self._box_pairs, self._box_far,
                                  self._box_candidates)
        found = 0
        if count == 0:
            return found
        mj, data, geom, dist = self.mj, self.data, self._box_geom, self._box_dist
        for k in self._box_candidates[:count].tolist():
            a, b, far = self._box_list[k]
            d = mujoco.mj_geomDistance(mj, data, a, b, far, None)
            if d < far:
                geom[found, 0], geom[found, 1], dist[found] = a, b, d
                found += 1
        return found

    def pair_gaps(self, q: ArrayLike) -> tuple[FloatArray, bool]:
        """Per checked pair (:meth:`checked_pairs` order): its surface distance [m] at ``q`` as far as
        MuJoCo reports it - MuJoCo's distance where it reports the pair, else :attr:`pair_far` (it
        reports every pair closer than that: a lower bound); and whether any pair is closer than its
        clearance (:meth:`violations` then says which). The gaps are a buffer reused by the next query."""
        close = self._gaps_into(q, self._gaps)
        return self._gaps, close

    def _gaps_into(self, q: ArrayLike, out: FloatArray) -> bool:
        """:meth:`pair_gaps` into ``out``, straight from MuJoCo's contact list and the box pairs (no merged copy)."""
        c, boxes = self._query(q)
        return bool(pair_gaps(c.geom, c.dist, self._box_geom, self._box_dist, boxes, self._pair_id, self.pair_far,
                              self.pair_clearance, out))

    def _contacts(self, q: ArrayLike) -> list[tuple[int, int, float]]:
        geom, dist = self.pairs(q)
        return [(int(a), int(b), float(d)) for (a, b), d in zip(geom, dist, strict=True)]

    def _nearest(self, q: ArrayLike) -> tuple[np.ndarray, FloatArray, float, float, int, int]:
        geom, gap = self.pairs(q)
        s, w, ks, kw = nearest_margins(geom, gap, self._is_ws, self._clear, self.workspace.self_clearance)
        return geom, gap, s, w, ks, kw

    def _proximity(self, geom: np.ndarray, gap: FloatArray, k: int, margin: float, ws: bool) -> Proximity:
        a, b = int(geom[k, 0]), int(geom[k, 1])
        return Proximity(margin, float(gap[k]), self._geoms[a].name, self._geoms[b].name,
                         "workspace" if ws else "self")

    def approach_scale(self, q: ArrayLike, q_next: ArrayLike, lookahead: float, deceleration: float) -> float:
        """Speed scale 0..1 for moving from ``q`` to ``q_next`` in ``lookahead`` [s]: linear in
        the distance left (1 at the slow-down threshold, 0 at contact; MoveIt Servo's decays
        exponentially) for every pair that closes in, and no faster
        than stopping within its distance at ``deceleration`` [m/s²] (:func:`kernels.approach_scale`).

        Two queries, each reduced to one distance per pair in one pass (MuJoCo reports several
        contacts for a box pair: matching contacts between the two lists cost O(contacts²))."""
        self._gaps_into(q, self._gaps_now)
        self._gaps_into(q_next, self._gaps)
        return float(approach_scale(self._gaps_now, self._gaps, self.pair_far, self.pair_clearance,
                                    self._pair_threshold, self._pair_horizon, lookahead, deceleration))

    def other_arms_distance(self, q: ArrayLike) -> Proximity | None:
        """The closest pair between this arm at ``q`` and another arm (where :meth:`move_other_arm` last
        put it) within the reporting horizon, its ``distance`` beyond the arm clearance; None: farther."""
        geom, gap = self.pairs(q)
        best: Proximity | None = None
        for k in range(len(gap)):
            a, b = int(geom[k, 0]), int(geom[k, 1])
            if not (self._is_other[a] or self._is_other[b]):
                continue
            margin = float(gap[k]) - (self._clear[a] + self._clear[b])
            if best is None or margin < best.distance:
                best = self._proximity(geom, gap, k, margin, True)
        return best

    def min_distances(self, q: ArrayLike) -> tuple[float, float]:
        """(self, workspace) distance beyond clearance [m] (+inf beyond the margins): the per-cycle check."""
        _, _, s, w, _, _ = self._nearest(q)
        return s, w

    def nearest(self, q: ArrayLike) -> tuple[Proximity | None, Proximity | None]:
        """Closest self pair and closest workspace pair within the slow-down thresholds (None: farther)."""
        geom, gap, s, w, ks, kw = self._nearest(q)
        ws = self.workspace
        return (self._proximity(geom, gap, ks, s, False) if ks >= 0 and s < ws.slowdown_self else None,
                self._proximity(geom, gap, kw, w, True) if kw >= 0 and w < ws.slowdown_workspace else None)

    def collision(self, q: ArrayLike) -> Proximity | None:
        """The worst pair closer than its clearance at ``q``, or None."""
        geom, gap, s, w, ks, kw = self._nearest(q)
        if min(s, w) >= 0:
            return None
        return self._proximity(geom, gap, ks, s, False) if s <= w else self._proximity(geom, gap, kw, w, True)

    def violations(self, q: ArrayLike) -> dict[tuple[str, str], Proximity]:
        """Every shape pair closer than its clearance at ``q`` (the closest contact of each pair)."""
        geom, gap = self.pairs(q)
        out: dict[tuple[str, str], Proximity] = {}
        for k in range(len(gap)):
            a, b = int(geom[k, 0]), int(geom[k, 1])
            ws = bool(self._is_ws[a] or self._is_ws[b])
            margin = float(gap[k]) - (self._clear[a] + self._clear[b] if ws else self.workspace.self_clearance)
            key = (self._geoms[a].name, self._geoms[b].name)
            if margin < 0 and (key not in out or margin < out[key].distance):
                out[key] = self._proximity(geom, gap, k, margin, ws)
        return out

    def checked_pairs(self) -> list[tuple[int, int]]:
        """Every geom pair the world checks, as indices into :attr:`shapes_by_geom` (not allowed, not
        both in the base or both in the workspace): the pairs another library must test to match it."""
        out = []
        for i, j in combinations(range(len(self._geoms)), 2):
            gi, gj = self._geom_group[i], self._geom_group[j]
            if gi == gj or {gi, gj} == {-1, -2}:
                continue
            if gi >= -1 and gj >= -1 and (min(gi, gj), max(gi, gj)) in self.allowed:
                continue
            out.append((i, j))
        return out

    def pair_names(self) -> list[tuple[str, str]]:
        """The names of :meth:`checked_pairs`."""
        return [(self._geoms[i].name, self._geoms[j].name) for i, j in self.checked_pairs()]
