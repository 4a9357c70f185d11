"""Several arms from a multi-arm config (:mod:`hebictl.multi_config`), built for one process and one loop.

Each arm is built from its robot config exactly as a single arm is (:func:`arm_from_config`:
model, gains, limits, monitors, plugins, workspace) on one shared clock, its gripper attached when
its config declares one. Two things span the arms:

* on the ``sim`` backend every arm is simulated in **one** MuJoCo scene
  (:func:`sim_backend.world.join_world`), at its base pose, so the arms can touch. This is the one
  place the wiring names the simulator: a shared scene needs every arm's model at once;
* each arm's collision world holds the other arms as obstacles
  (:meth:`hebictl.collision.world.CollisionWorld.add_other_arm`), at their base poses, their joint
  positions updated from the measured feedback every cycle (:meth:`MultiArms.observe`).

A config's mobile base (a velocity group) is opened by :func:`open_base` on the same backend and
clock: ``mock`` (rated speed and effort from its actuator type; a velocity command integrates),
``hebi``/``hebi-imitation`` (hebi-py's group, gains sent when the config gives them) and ``sim``
(:mod:`sim_backend.base`: its own MuJoCo model, a chassis on wheels), wrapped in a
:class:`~hebictl.control.base.VelocityBase`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hebictl.collision.attach import world_of
from hebictl.collision.workspace import workspace_from
from hebictl.hardware.clock import MonotonicClock
from hebictl.multi_config import BaseEntry, MultiArmConfig, load_multi_arm_config
from hebictl.wiring.assembly import arm_from_config

if TYPE_CHECKING:
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import Clock

ArmT = TypeVar("ArmT", bound="Arm")


@dataclass
class MultiArms:
    """The arms of a multi-arm config by name (file order), their base poses, the grippers, and on
    the sim backend the physics they share."""

    config: MultiArmConfig
    arms: dict[str, Any]
    bases: dict[str, np.ndarray]
    grippers: dict[str, Any] = field(default_factory=dict)
    physics: Any = None
    #: per arm: the other arms its collision world holds, as (other arm's name, its index there)
    obstacles: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: the mobile base (hebictl.control.base.VelocityBase), or None
    base: Any = None

    def observe(self) -> None:
        """Every arm's collision world gets the other arms' measured joint positions (call each cycle,
        after the arms' ``update()``; an arm without finite feedback yet keeps its last known pose)."""
        for name, others in self.obstacles.items():
            world = world_of(self.arms[name].model)
            if world is None:
                continue
            for other, index in others:
                q = self.arms[other].last_feedback.position
                if np.isfinite(q).all():
                    world.move_other_arm(index, q)

    def world(self, name: str) -> Any:
        """Arm ``name``'s collision world (:class:`~hebictl.collision.world.CollisionWorld`), or None."""
        return world_of(self.arms[name].model)

    def close(self) -> None:
        for arm in self.arms.values():
            arm.close()
        if self.base is not None:
            self.base.close()


def arms_from_multi_config(arm_class: type[ArmT], config: MultiArmConfig | str | Path, backend: str = "mock", *,
                           clock: Clock | None = None, obstacles: bool = True, **backend_options: Any) -> MultiArms:
    """Build every arm of ``config`` on ``backend`` with one ``clock`` (module doc); ``obstacles``:
    put the other arms in each arm's collision world (False: each arm checks only its own world).
    Every backend opened is closed again if anything fails."""
    from hebictl.control.gripper import attach_gripper

    mcfg = load_multi_arm_config(config) if isinstance(config, str | Path) else config
    clock = clock or MonotonicClock()
    built = MultiArms(mcfg, {}, {a.name: a.base for a in mcfg.arms})
    try:
        for entry in mcfg.arms:
            built.arms[entry.name] = arm_from_config(arm_class, entry.config, backend, clock=clock, **backend_options)
            gripper = attach_gripper(built.arms[entry.name], entry.config, backend)
            if gripper is not None:
                built.grippers[entry.name] = gripper
        if backend == "sim":
            from sim_backend.world import join_world

            built.physics = join_world([a.backend for a in built.arms.values()], list(built.arms),
                                       [e.base for e in mcfg.arms],
                                       [workspace_from(e.config.user_data, e.config.path)
                                        if "workspace" in e.config.user_data else None for e in mcfg.arms])
        if obstacles:
            add_arm_obstacles(built)
        if mcfg.base is not None:
            rate = max(e.config.feedback_frequency for e in mcfg.arms)
            built.base = open_base(mcfg.base, backend, clock, rate)
        return built
    except BaseException:
        built.close()
        raise


def add_arm_obstacles(built: MultiArms) -> None:
    """Each arm's collision world gets every other arm's shapes at its base pose, seen from this
    arm's base frame, with the config's ``arm_clearance``; at their home (or zero) pose until
    :meth:`MultiArms.observe` gives the measured one."""
    for name, arm in built.arms.items():
        world = world_of(arm.model)
        if world is None:
            continue
        inv = np.linalg.inv(built.bases[name])
        built.obstacles[name] = []
        for other, other_arm in built.arms.items():
            if other == name:
                continue
            index = world.add_other_arm(other, other_arm.model, inv @ built.bases[other], built.config.arm_clearance)
            built.obstacles[name].append((other, index))
        world.rebuild()


def open_base(entry: BaseEntry, backend: str, clock: Clock, rate: float) -> Any:
    """The base of a multi-arm config (:class:`~hebictl.multi_config.BaseEntry`) on ``backend``, at
    feedback ``rate`` [Hz], its modules' own command lifetime its ``command_ttl`` (if the process
    dies the wheels stop driving within it), as a :class:`~hebictl.control.base.VelocityBase`
    running at ``rate``."""
    from hebictl.control.base import VelocityBase
    from hebictl.hardware.registry import open_backend

    common: dict[str, Any] = {"names": entry.names, "families": entry.families, "clock": clock,
                              "feedback_frequency": rate, "command_lifetime": entry.command_ttl}
    if backend == "sim":
        from sim_backend.base import open_sim_base

        group: Any = open_sim_base(rated_speed=entry.rated_speed, rated_effort=entry.rated_effort, **common)
    elif backend == "mock":
        group = open_backend("mock", max_speed=entry.rated_speed, max_effort=entry.rated_effort, **common)
    else:
        group = open_backend(backend, **common)
    try:
        if entry.gains is not None:
            group.set_gains(entry.gains.broadcast_to(entry.size))
        return VelocityBase.from_entry(entry, group, clock, 1.0 / rate)
    except BaseException:
        group.close()
        raise


__all__ = ["MultiArms", "add_arm_obstacles", "arms_from_multi_config", "open_base"]
