"""The MuJoCo scene of an arm: hebictl's MJCF export of the model (plus payload) and one actuator per joint.

Why through the shared exporter (:func:`hebictl.formats.mjcf.write_mjcf`): the simulated
robot must be the very model the controller computes gravity compensation with; one exporter,
checked against hebictl's kinematics and gravity torques, keeps them the same.

What the scene adds to the exported MJCF: a ``general`` actuator per joint whose force is
``ctrl + biasprm[2] * qvel`` (the actuator kernel sets both each step, see
:mod:`sim_backend.actuator`), the ``implicitfast`` integrator (so that velocity term is
integrated implicitly), the physics ``timestep``, and optional joint friction, damping and
armature (reflected rotor inertia). The exported geoms are visual only. With a ``workspace``
(:mod:`hebictl.collision.workspace`, a config's ``user_data.workspace``) its physical objects
(table, boxes, cylinders; not the virtual walls and keep-out zones) become world geoms and the
arm gets hebictl's collision shapes (:func:`hebictl.collision.world.arm_shapes`, massless), and
contacts are on between the two, so a motion into the table meets the table; without one, contacts
stay off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl._typing import FloatArray
from hebictl.collision.shapes import Shape
from hebictl.collision.workspace import Workspace
from hebictl.collision.world import arm_shapes, mat_to_quat
from hebictl.errors import ConfigError, ModelError
from hebictl.formats.mjcf import write_mjcf
from hebictl.formats.writers import body_names
from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind
from sim_backend.payload import Payload, strip_payload, with_payload

__all__ = ["ARM_BIT", "WORKSPACE_BIT", "Scene", "add_module_actuators", "add_shape", "build_scene", "module_frames"]

IntArray = NDArray[np.int64]


@dataclass(eq=False)
class Scene:
    """A compiled MuJoCo model of an arm and how hebictl's joints and modules map onto it."""

    robot: RobotModel        # the physical model (with the simulated payload, if any)
    xml: str                 # MJCF as exported (before actuators are added)
    model: mujoco.MjModel
    data: mujoco.MjData
    qadr: IntArray           # (n,) qpos index of joint i (hebictl joint order)
    dadr: IntArray           # (n,) qvel index of joint i
    imu_body: IntArray       # (n,) MuJoCo body carrying module i's input frame
    imu_offset: FloatArray   # (n, 4) quaternion w x y z of the input frame in that body
    actuator_offset: int = 0  # MuJoCo index of joint 0's actuator (> 0: a later arm of a shared scene)

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)


def _per_joint(value: ArrayLike | None, n: int, key: str) -> FloatArray | None:
    if value is None:
        return None
    try:
        arr = np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"expected a number or {n} numbers, got {value!r}", key=key) from exc
    if not np.all(np.isfinite(arr) & (arr >= 0.0)):
        raise ConfigError(f"values must be finite and >= 0, got {arr}", key=key)
    return arr


def _quat(R: FloatArray) -> FloatArray:
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=np.float64).reshape(9))
    return q


def module_frames(robot: RobotModel, mj: mujoco.MjModel, prefix: str = "") -> tuple[IntArray, FloatArray]:
    """Per joint: the MuJoCo body and offset of its module's input frame (the IMU's frame).

    The module's input frame is the ``input`` frame on the body the joint's body hangs from (the
    actuator housing in an HRDF model), else that body's own frame. Bodies the MJCF lacks (none
    today: the writer keeps every body) are walked up through their placements.
    """
    names = [prefix + n for n in body_names(robot)]
    bodies, offsets = [], []
    for jb in robot.joint_bodies:
        hb = robot.bodies[jb].parent
        frame = next((f for f in robot.frames if f.kind == "input" and f.body == hb and hb >= 0), None)
        T = frame.offset.copy() if frame is not None else np.eye(4)
        mj_id = -1
        while hb >= 0:
            mj_id = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, names[hb])
            if mj_id >= 0:
                break
            T = robot.bodies[hb].placement @ T
            hb = robot.bodies[hb].parent
        if hb < 0:
            mj_id, T = 0, robot.base @ T  # the world body
        bodies.append(mj_id)
        offsets.append(_quat(T[:3, :3]))
    return np.array(bodies, dtype=np.int64), np.array(offsets).reshape(-1, 4)


_GEOM_TYPES = {"capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "box": mujoco.mjtGeom.mjGEOM_BOX,
               "sphere": mujoco.mjtGeom.mjGEOM_SPHERE, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
               "plane": mujoco.mjtGeom.mjGEOM_PLANE}
ARM_BIT, WORKSPACE_BIT = 1, 2


def add_shape(body: mujoco.MjsBody, s: Shape, pose: FloatArray, contype: int, conaffinity: int,
               rgba: tuple[float, float, float, float]) -> None:
    size = np.zeros(3)
    size[:len(s.size)] = s.size
    if s.kind == "plane":
        size[:] = (0.0, 0.0, 1.0)
    geom = body.add_geom(type=_GEOM_TYPES[s.kind], size=size, pos=pose[:3, 3], quat=mat_to_quat(pose[:3, :3]),
                         contype=contype, conaffinity=conaffinity, rgba=rgba, group=3)
    geom.name = f"collision:{s.name}"
    geom.mass = 0.0
    geom.density = 0.0


def _add_workspace(spec: mujoco.MjSpec, robot: RobotModel, workspace: Workspace) -> bool:
    """Make the exported geoms visual only, add the arm's collision shapes and the physical
    workspace objects; True if there is anything to collide."""
    physical = [s for s in workspace.shapes if not s.meta.get("virtual")]
    if not physical:
        return False
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 0, 0
    names = body_names(robot)
    for s in arm_shapes(robot):
        if s.kind not in _GEOM_TYPES:
            continue  # meshes: the exported visual geoms carry them already
        body = spec.body(names[s.body])
        if body is None:
            continue
        add_shape(body, s, s.pose, ARM_BIT, WORKSPACE_BIT, (0.9, 0.5, 0.1, 0.3))
    for s in physical:
        add_shape(spec.worldbody, s, s.pose, WORKSPACE_BIT, ARM_BIT, (0.6, 0.6, 0.6, 1.0))
    return True


def add_module_actuators(spec: mujoco.MjSpec, joint_names: Sequence[str]) -> None:
    """One actuator per joint, ``module:<joint>``, that applies its control as a joint force: the
    modules' firmware (sim_backend.actuator) computes that force; MuJoCo only integrates it."""
    for name in joint_names:
        act = spec.add_actuator()
        act.name = f"module:{name}"
        act.target = name
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        gain = np.zeros(10)
        gain[0] = 1.0
        act.gainprm = gain
        act.biasprm = np.zeros(10)
        act.ctrllimited = 0
        act.forcelimited = 0


def build_scene(model: RobotModel, *, payload: Payload | None = None, timestep: float = 0.001,
                friction: ArrayLike | None = None, damping: ArrayLike | None = None,
                armature: ArrayLike | None = None, workspace: Workspace | None = None) -> Scene:
    """Compile ``model`` (any payload bodies it has replaced by ``payload``) for simulation.

    ``timestep`` [s] physics step (the simulated firmware's control period too); ``friction``
    [N·m] (Coulomb, MuJoCo ``frictionloss``), ``damping`` [N·m·s/rad] and ``armature`` [kg·m²]
    per joint (or one value for all) are added to what the model itself declares; ``workspace``
    adds its physical objects and turns contacts on (module doc).
    """
    if not (isinstance(timestep, int | float) and 0.0 < timestep <= 0.01):
        raise ConfigError(f"timestep must be in (0, 0.01] s, got {timestep!r}", key="timestep")
    if model.nq != model.nv or any(b.joint.kind not in (JointKind.FIXED, JointKind.REVOLUTE, JointKind.PRISMATIC)
                                   for b in model.bodies):
        raise ModelError("the sim backend simulates arms of 1-DoF joints (revolute or prismatic) on a fixed base")
    n = model.dof
    fr = _per_joint(friction, n, "friction")
    dm = _per_joint(damping, n, "damping")
    ar = _per_joint(armature, n, "armature")
    robot = strip_payload(model)
    if payload is not None:  # 0 kg too: an empty grip, which SimBackend.set_payload can load later
        robot = with_payload(robot, payload)
    xml = write_mjcf(robot, None)
    spec = mujoco.MjSpec.from_string(xml)
    contacts = workspace is not None and _add_workspace(spec, robot, workspace)
    add_module_actuators(spec, robot.joint_names)
    try:
        mj = spec.compile()
    except Exception as exc:  # mujoco raises ValueError with its compiler message
        raise ModelError(f"MuJoCo rejected the exported model {robot.name!r}: {exc}") from exc
    mj.opt.timestep = float(timestep)
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    if not contacts:
        mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    qadr, dadr = [], []
    for i, name in enumerate(robot.joint_names):
        jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise ModelError(f"joint {name!r} is missing from the exported MJCF")
        qadr.append(int(mj.jnt_qposadr[jid]))
        d = int(mj.jnt_dofadr[jid])
        dadr.append(d)
        aid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, f"module:{name}")
        if aid != i:
            raise ModelError(f"actuator of joint {name!r} compiled at index {aid}, expected {i}")
        if fr is not None:
            mj.dof_frictionloss[d] += fr[i]
        if dm is not None:
            mj.dof_damping[d] += dm[i]
        if ar is not None:
            mj.dof_armature[d] += ar[i]
    imu_body, imu_offset = module_frames(robot, mj)
    data = mujoco.MjData(mj)
    return Scene(robot=robot, xml=xml, model=mj, data=data, qadr=np.array(qadr, dtype=np.int64),
                 dadr=np.array(dadr, dtype=np.int64), imu_body=imu_body, imu_offset=imu_offset)

