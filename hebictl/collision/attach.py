"""Which collision world belongs to which robot model: set once when an arm is assembled.

Why a table keyed by the model: goal admission (:func:`hebictl.control.admission.plan`) and the
jog plugin receive the arm's ``RobotModel``; the arm's workspace comes from its config, which they
do not see. :func:`hebictl.control.assembly.assemble` builds the world from the config and
attaches it here, so every goal and jog of that arm is checked without threading a new argument
through the Arm. Weak keys: a world goes away with its model.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hebictl.collision.workspace import workspace_from
from hebictl.collision.world import CollisionWorld
from hebictl.model.robot import RobotModel

_WORLDS: weakref.WeakKeyDictionary[RobotModel, CollisionWorld] = weakref.WeakKeyDictionary()


def attach(model: RobotModel, world: CollisionWorld | None) -> None:
    """Check ``model``'s goals and jogs against ``world`` (None: no collision checks)."""
    if world is None:
        _WORLDS.pop(model, None)
    else:
        _WORLDS[model] = world


def world_of(model: RobotModel) -> CollisionWorld | None:
    """The world attached to ``model``, if any."""
    return _WORLDS.get(model)


def attach_from_config(model: RobotModel, user_data: Mapping[str, Any] | None,
                       path: str | Path | None = None) -> CollisionWorld | None:
    """Build ``model``'s world from a config's ``user_data.workspace`` and attach it.

    Arms of multi-DoF joints (no collision model) get none. ``workspace: false`` turns checking off."""
    if model.nq != model.nv or (user_data or {}).get("workspace") is False:
        attach(model, None)
        return None
    world = CollisionWorld(model, workspace_from(user_data, path))
    attach(model, world)
    return world
