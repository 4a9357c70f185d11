"""Several arms from a multi-arm config (:mod:`hebictl.multi_config`), built for one process and one loop.

Each arm is built from its robot config exactly as a single arm is (:func:`arm_from_config`:
model, gains, limits, monitors, plugins, workspace) on one shared clock, its gripper attached when
its config declares one. On the ``sim`` backend every arm is simulated in **one** MuJoCo scene
  (:func:`sim_backend.world.join_world`), at its base pose, so the arms can touch. This is the one
  place the wiring names the simulator: a shared scene needs every arm's model at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hebictl.collision.workspace import workspace_from
from hebictl.hardware.clock import MonotonicClock
from hebictl.multi_config import MultiArmConfig, load_multi_arm_config
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
    def close(self) -> None:
        for arm in self.arms.values():
            arm.close()


def arms_from_multi_config(arm_class: type[ArmT], config: MultiArmConfig | str | Path, backend: str = "mock", *,
                           clock: Clock | None = None, **backend_options: Any) -> MultiArms:
    """Build every arm of ``config`` on ``backend`` with one ``clock`` (module doc). Every backend
    opened is closed again if anything fails."""
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
        return built
    except BaseException:
        built.close()
        raise



__all__ = ["MultiArms", "arms_from_multi_config"]
