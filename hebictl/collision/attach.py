"""Which collision world belongs to which robot model: set once when an arm is assembled.

Why a table keyed by the model: goal admission (:func:`hebictl.control.admission.plan`) and the
jog plugin receive the arm's ``RobotModel``; the arm's workspace comes from its config, which they
do not see. :func:`hebictl.wiring.assembly.assemble` builds the world from the config and
attaches it here, so every goal and jog of that arm is checked without threading a new argument
through the Arm. Weak keys: a world goes away with its model.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.collision.workspace import workspace_from
from hebictl.collision.world import CollisionWorld
from hebictl.errors import ConfigWarning
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
    data = user_data or {}
    if model.nq != model.nv or data.get("workspace") is False:
        attach(model, None)
        return None
    world = CollisionWorld(model, workspace_from(data, path))
    if "workspace" not in data:
        world = _without_a_cutting_default_table(model, data, path, world)
    attach(model, world)
    return world


def _without_a_cutting_default_table(model: RobotModel, user_data: Mapping[str, Any], path: str | Path | None,
                                     world: CollisionWorld) -> CollisionWorld:
    """A config that declares no workspace gets the default table (the base plane) only where that
    table is consistent with the arm: a kit whose home pose reaches below its base plane
    (a hanging or wall-mounted arm, e.g. HEBI's A-2303-01) keeps its self-collision checks, without
    a table, with a warning saying to declare ``user_data.workspace``."""
    poses: dict[str, np.ndarray] = {}
    home = user_data.get("home_position")
    try:
        if home is not None:
            poses["home pose"] = np.asarray(home, dtype=np.float64).reshape(model.dof)
    except (TypeError, ValueError):
        pass  # a malformed home is the config check's to report
    cuts = ((pose, v) for pose, q in poses.items() for v in world.violations(q).values()
            if v.kind == "workspace" and "table" in (v.a, v.b))
    found = next(cuts, None)
    if found is None:
        return world
    pose, hit = found
    body = hit.b if hit.a == "table" else hit.a
    where = f"{path}: " if path is not None else ""
    warnings.warn(f"{where}user_data declares no workspace, and the default table at the base plane would cut "
                  f"the arm at its {pose} ({body} {max(-hit.gap, 0.0) * 1e3:.0f} mm below it): the table is not "
                  "checked; declare user_data.workspace (docs/collision.md)", ConfigWarning, stacklevel=3)
    return CollisionWorld(model, workspace_from({"workspace": {"table": False}}, path))
