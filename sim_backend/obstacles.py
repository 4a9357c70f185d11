"""Contact scenes for tests and benchmarks: fixed boxes (an obstacle, a table) and a tool sphere
on the end effector, with MuJoCo contacts switched on between them.

Why a separate function and not part of :func:`sim_backend.scene.build_scene`: the arm's scene
keeps contacts off (its exported geoms are visual only, and self-contact of those meshes would
be noise); the execution monitors' tests need exactly one contact pair, the tool against a fixed
box, so the contact force at the tool is known and measurable. Config-declared workspace objects
belong to the scene module; this is the minimal rig for contact tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.errors import ConfigError, ModelError
from hebictl.formats.writers import body_names
from sim_backend.backend import SimBackend
from sim_backend.scene import add_module_actuators

__all__ = ["Box", "add_contact_boxes", "as_box", "contact_force", "tool_position"]

TOOL_GEOM = "hebictl_tool"


@dataclass(frozen=True)
class Box:
    """A fixed box: ``center`` [m, world], ``half_size`` [m] (axis-aligned)."""

    center: tuple[float, float, float]
    half_size: tuple[float, float, float]
    name: str = "obstacle"


def add_contact_boxes(sim: SimBackend, boxes: Sequence[Box], *, tool_radius: float = 0.03,
                      end_effector: int = 0) -> None:
    """Rebuild ``sim``'s MuJoCo model with ``boxes`` and a sphere of ``tool_radius`` [m] at end
    effector ``end_effector``, contacts on between the sphere and the boxes only. Call before the
    first command (the arm's state is carried over)."""
    if not boxes:
        raise ConfigError("add_contact_boxes needs at least one box", key="boxes")
    scene = sim.scene
    robot = scene.robot
    ee = [f for f in robot.frames if f.kind == "end_effector"]
    if not 0 <= end_effector < len(ee):
        raise ConfigError(f"no end effector {end_effector} (the model has {len(ee)})", key="end_effector")
    frame = ee[end_effector]
    spec = mujoco.MjSpec.from_string(scene.xml)
    for geom in spec.geoms:  # the exported geoms stay visual
        geom.contype = 0
        geom.conaffinity = 0
    add_module_actuators(spec, robot.joint_names)  # the same actuators as build_scene adds
    body = spec.body(body_names(robot)[frame.body])
    if body is None:
        raise ModelError(f"end effector body {frame.body} is not in the exported MJCF")
    tool = body.add_geom()
    tool.name = TOOL_GEOM
    tool.type = mujoco.mjtGeom.mjGEOM_SPHERE
    tool.size = [float(tool_radius), 0.0, 0.0]
    tool.pos = frame.offset[:3, 3].tolist()
    tool.contype, tool.conaffinity, tool.mass = 1, 0, 0.0
    tool.density = 0.0
    for i, b in enumerate(boxes):
        g = spec.worldbody.add_geom()
        g.name = f"{b.name}_{i}"
        g.type = mujoco.mjtGeom.mjGEOM_BOX
        g.size = [float(x) for x in b.half_size]
        g.pos = [float(x) for x in b.center]
        g.contype, g.conaffinity = 0, 1
    try:
        mj = spec.compile()
    except Exception as exc:  # mujoco raises ValueError with its compiler message
        raise ModelError(f"MuJoCo rejected the contact scene: {exc}") from exc
    old = scene.model
    mj.opt.timestep = old.opt.timestep
    mj.opt.integrator = old.opt.integrator
    mj.opt.disableflags = int(old.opt.disableflags) & ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    mj.dof_armature[:] = old.dof_armature
    mj.dof_damping[:] = old.dof_damping
    mj.dof_frictionloss[:] = old.dof_frictionloss
    data = mujoco.MjData(mj)
    data.qpos[:] = scene.data.qpos
    data.qvel[:] = scene.data.qvel
    data.qfrc_applied[:] = scene.data.qfrc_applied
    sim.replace_scene(dataclasses.replace(scene, model=mj, data=data))


def contact_force(sim: SimBackend) -> float:
    """Magnitude [N] of the contact force on the tool sphere now (0 without contact)."""
    m, d = sim.mj_model, sim.mj_data
    tool = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, TOOL_GEOM)
    total = np.zeros(3)
    f6 = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        if tool in (c.geom1, c.geom2):
            mujoco.mj_contactForce(m, d, i, f6)
            total += c.frame.reshape(3, 3).T @ f6[:3]
    return float(np.linalg.norm(total))


def tool_position(sim: SimBackend) -> FloatArray:
    """The tool sphere's centre [m, world] now."""
    m, d = sim.mj_model, sim.mj_data
    mujoco.mj_kinematics(m, d)
    return d.geom_xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, TOOL_GEOM)].copy()


def as_box(center: ArrayLike, half_size: ArrayLike, name: str = "obstacle") -> Box:
    """A :class:`Box` from arrays."""
    c = np.asarray(center, dtype=float).reshape(3)
    h = np.asarray(half_size, dtype=float).reshape(3)
    return Box((float(c[0]), float(c[1]), float(c[2])), (float(h[0]), float(h[1]), float(h[2])), name)
