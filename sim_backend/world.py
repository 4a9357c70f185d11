"""Several simulated arms in one MuJoCo scene, so they can touch: :func:`join_world`.

Each arm is opened as usual (``open_sim``: its exported model, payload, friction, rotor inertia,
gains, double-shoulder modules); :func:`join_world` then compiles one MuJoCo model holding every
arm's exported MJCF, attached under the prefix ``<arm name>/`` at the arm's base pose in the
shared world frame, with each arm's module actuators, and hands every backend its view of it
(:meth:`SimBackend.join <sim_backend.backend.SimBackend.join>`): one
:class:`~sim_backend.backend.SharedPhysics` steps every arm's simulated modules, then the physics
once. What each arm's own model carried per joint (armature, damping, friction loss; the state,
gas-spring torques) is copied over.

Contacts: the exported geoms stay visual; every arm gets hebictl's collision shapes
(:func:`hebictl.collision.world.arm_shapes`, massless) in a contact bit of its own, colliding with
the other arms' shapes and with every arm's physical workspace objects (placed in that arm's base
frame, where its config declares them), never with its own (an arm's links overlap at its joints).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import mujoco
import numpy as np

from hebictl._typing import FloatArray
from hebictl.collision.workspace import Workspace
from hebictl.collision.world import arm_shapes, mat_to_quat
from hebictl.errors import ConfigError, ModelError
from hebictl.formats.writers import body_names
from sim_backend.backend import SharedPhysics, SimBackend
from sim_backend.scene import WORKSPACE_BIT, Scene, add_module_actuators, add_shape, module_frames

__all__ = ["arm_distance", "arm_geoms", "contacts_between", "join_world"]

#: at most this many arms (a contact bit each, after the two bits of sim_backend.scene)
MAX_ARMS = 29


def _arm_spec(scene: Scene, bit: int, others: int, workspace: Workspace | None) -> mujoco.MjSpec:
    """One arm's spec: its exported MJCF, visual geoms, its collision shapes in contact bit ``bit``
    (colliding with ``others`` and the workspace), its physical workspace objects, its actuators."""
    robot = scene.robot
    spec = mujoco.MjSpec.from_string(scene.xml)
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 0, 0
    names = body_names(robot)
    for s in arm_shapes(robot):
        body = spec.body(names[s.body]) if s.kind != "mesh" else None
        if body is not None:
            add_shape(body, s, s.pose, bit, WORKSPACE_BIT | others, (0.9, 0.5, 0.1, 0.3))
    if workspace is not None:
        for s in workspace.shapes:
            if not s.meta.get("virtual"):
                add_shape(spec.worldbody, s, s.pose, WORKSPACE_BIT, ~WORKSPACE_BIT & 0x7FFFFFFF, (0.6, 0.6, 0.6, 1.0))
    add_module_actuators(spec, robot.joint_names)
    return spec


def join_world(backends: Sequence[SimBackend], names: Sequence[str], bases: Sequence[FloatArray],
               workspaces: Sequence[Workspace | None]) -> SharedPhysics:
    """Put ``backends`` (one per arm, none commanded yet) into one MuJoCo scene (module doc):
    arm ``names[k]`` at base pose ``bases[k]`` (4x4, world frame), with the physical objects of
    ``workspaces[k]`` (in its base frame). Returns the physics they now share."""
    if not 1 <= len(backends) <= MAX_ARMS or not len(backends) == len(names) == len(bases) == len(workspaces):
        raise ConfigError(f"one name, base and workspace per arm, 1-{MAX_ARMS} arms", key="arms")
    first = backends[0].mj_model
    world = mujoco.MjSpec()
    world.option.timestep = float(first.opt.timestep)
    world.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    every = sum(1 << (k + 2) for k in range(len(backends)))
    for k, (b, name, base) in enumerate(zip(backends, names, bases, strict=True)):
        if b.timestep != backends[0].timestep:
            raise ConfigError(f"arm {name!r} simulates at {b.timestep} s, arm {names[0]!r} at "
                              f"{backends[0].timestep} s: a shared scene has one timestep", key="timestep")
        bit = 1 << (k + 2)
        spec = _arm_spec(b.scene, bit, every & ~bit, workspaces[k])
        frame = world.worldbody.add_frame(pos=np.asarray(base, dtype=float)[:3, 3],
                                          quat=mat_to_quat(np.asarray(base, dtype=float)[:3, :3]))
        world.attach(spec, prefix=f"{name}/", frame=frame)
    try:
        mj = world.compile()
    except Exception as exc:  # mujoco raises ValueError with its compiler message
        raise ModelError(f"MuJoCo rejected the shared scene of arms {', '.join(names)}: {exc}") from exc
    data = mujoco.MjData(mj)
    scenes = [_view(b.scene, name, mj, data) for b, name in zip(backends, names, strict=True)]
    physics = SharedPhysics(mj, data)
    for b, scene in zip(backends, scenes, strict=True):
        old_m, old_d, old = b.mj_model, b.mj_data, b.scene
        for attr in ("dof_armature", "dof_damping", "dof_frictionloss"):
            getattr(mj, attr)[scene.dadr] = getattr(old_m, attr)[old.dadr]
        data.qpos[scene.qadr] = old_d.qpos[old.qadr]
        data.qvel[scene.dadr] = old_d.qvel[old.dadr]
        data.qfrc_applied[scene.dadr] = old_d.qfrc_applied[old.dadr]
    for b, scene in zip(backends, scenes, strict=True):
        b.join(physics, scene)
    return physics


def _view(scene: Scene, name: str, mj: mujoco.MjModel, data: mujoco.MjData) -> Scene:
    """Arm ``name``'s :class:`Scene` in the shared model: its joints, actuators and module frames."""
    prefix = f"{name}/"
    qadr, dadr = [], []
    for i, joint in enumerate(scene.robot.joint_names):
        jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, prefix + joint)
        if jid < 0:
            raise ModelError(f"joint {prefix + joint!r} is missing from the shared scene")
        qadr.append(int(mj.jnt_qposadr[jid]))
        dadr.append(int(mj.jnt_dofadr[jid]))
        aid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{prefix}module:{joint}")
        if i == 0:
            offset = aid
        elif aid != offset + i:
            raise ModelError(f"actuator of joint {prefix + joint!r} compiled at {aid}, expected {offset + i}")
    imu_body, imu_offset = module_frames(scene.robot, mj, prefix)
    return dataclasses.replace(scene, model=mj, data=data, qadr=np.array(qadr, dtype=np.int64),
                               dadr=np.array(dadr, dtype=np.int64), imu_body=imu_body, imu_offset=imu_offset,
                               actuator_offset=int(offset))


def arm_geoms(physics: SharedPhysics, name: str) -> frozenset[int]:
    """The MuJoCo geom ids of arm ``name``'s collision shapes in the shared scene (contact tests).
    Looked up by name once per arm and kept on ``physics`` (its compiled model does not change; a
    contact test asks every cycle, and the name lookups were a fifth of such a test's cycle)."""
    known = physics.geom_sets.get(name)
    if known is None:
        m = physics.model
        prefix = f"{name}/collision:"
        known = frozenset(g for g in range(m.ngeom)
                          if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "").startswith(prefix))
        physics.geom_sets[name] = known
    return known


def contacts_between(physics: SharedPhysics, a: str, b: str) -> tuple[int, float]:
    """(number of contacts, deepest penetration [m], >= 0) between arms ``a`` and ``b`` now."""
    ga, gb = arm_geoms(physics, a), arm_geoms(physics, b)
    d = physics.data
    count, deepest = 0, 0.0
    for i in range(d.ncon):
        c = d.contact[i]
        if (c.geom1 in ga and c.geom2 in gb) or (c.geom1 in gb and c.geom2 in ga):
            count += 1
            deepest = max(deepest, -float(c.dist))
    return count, deepest


def arm_distance(physics: SharedPhysics, a: str, b: str, far: float = 0.5) -> float:
    """The smallest surface distance [m] (< 0: penetration) between arms ``a`` and ``b``'s collision
    shapes in the shared scene now (MuJoCo's ``mj_geomDistance`` on every pair; ``far`` if none is
    closer). Computes the kinematics of the present state first."""
    m, d = physics.model, physics.data
    mujoco.mj_kinematics(m, d)
    best = far
    theirs = sorted(arm_geoms(physics, b))
    for ga in sorted(arm_geoms(physics, a)):
        for gb in theirs:
            best = min(best, float(mujoco.mj_geomDistance(m, d, ga, gb, far, None)))
    return best
