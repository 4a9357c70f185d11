"""The retained ``state/description`` payload: what a remote viewer needs to draw and command an
arm without any of its local files (joint names, limits, rated speeds, the kinematic tree as JSON
and as URDF, home, end-effector frame, backend, config name, the stop behaviours in force, the
workspace the arm's goals and jogs are checked against, and the arm's own collision shapes).

The teleop bridge publishes it retained on every connect, so a panel that subscribes later still
gets it at once. The JSON tree (``tree``) is the authority for drawing: every body's parent, its
placement on the parent (4x4, row-major) and its joint (kind, axis, scale, coordinate index), so
a client computes link poses with ``T_body = T_parent · placement · motion(scale · q[index])``
and nothing else. ``urdf`` is the same tree written by the URDF writer for tools that read URDF
(None when the model cannot be expressed in URDF). Non-finite numbers (unbounded limits) are
``null``, as in every teleop payload.

``workspace`` lists the objects of the collision world the arm actually checks against (from the
config's ``user_data.workspace``, see docs/collision.md; the default table is left out where the
arm dropped it), each in world coordinates: ``type`` (table, box, cylinder, wall, keep_out), the
shape ``kind`` (plane, box, cylinder) with ``size`` in MuJoCo's convention (half extents; radius
and half height) and a 4x4 ``pose`` (a plane's normal is its z axis), ``clearance`` and whether it
is ``virtual`` (checked, not physical). ``collision_shapes`` are the arm's shapes, each on a body
of ``tree`` (``body``, ``kind`` capsule/box/sphere/cylinder, ``size``, ``pose`` on the body), so a
viewer draws them at the body poses it computes anyway. Meshes are left out (a viewer cannot load
them). Both are None for an arm without a collision world.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import HebictlError

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel
    from hebictl.teleop.runner import ArmRunner

log = logging.getLogger(__name__)

#: bumped when a field changes meaning; viewers ignore fields they do not know
DESCRIPTION_VERSION = 1


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _nums(values: Any) -> list[float | None]:
    return [_num(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


def _matrix(T: Any) -> list[list[float | None]]:
    return [_nums(row) for row in np.asarray(T, dtype=np.float64).reshape(4, 4)]


def _urdf_text(model: RobotModel) -> str | None:
    """URDF of ``model`` through the formats package's public ``convert``, or None (a model URDF
    cannot express, e.g. HRDF gear ratios: the JSON tree still describes it)."""
    try:
        from hebictl.formats import convert

        return str(convert(model, "urdf"))
    except HebictlError as exc:
        log.warning("state/description carries no URDF: %s", exc)
        return None
    except Exception:  # a writer bug must not keep the arm off the broker: the JSON tree suffices
        log.exception("state/description carries no URDF: the URDF writer failed")
        return None


def _backend_name(arm: Any) -> str | None:
    """The backend type the arm was opened on (``mock``, ``sim``, ``hebi``...), where it says."""
    extra = getattr(arm, "extra_modules", None)
    name = getattr(extra, "backend_name", None) or getattr(arm, "_backend_name", None)
    return None if name is None else str(name)


def kinematic_tree(model: RobotModel) -> dict[str, Any]:
    """The model's bodies and frames as plain JSON (see the module docstring for the convention)."""
    bodies = []
    for i, b in enumerate(model.bodies):
        j = b.joint
        qi, _ = model.coordinate_index(i)
        bodies.append({
            "name": b.name, "parent": int(b.parent), "placement": _matrix(b.placement),
            "joint": {"name": j.name, "kind": j.kind.name.lower(), "axis": _nums(j.axis), "scale": _num(j.scale),
                      "index": int(qi) if j.nq == 1 else None},
        })
    ee = [{"body": int(f.body), "offset": _matrix(f.offset), "name": f.name}
          for f in model.frames if f.kind == "end_effector"]
    if not ee:  # no explicit end effector: HEBI's convention is the last output frame
        outputs = [f for f in model.frames if f.kind == "output"]
        if outputs:
            f = outputs[-1]
            ee = [{"body": int(f.body), "offset": _matrix(f.offset), "name": f.name}]
    return {"base": _matrix(model.base), "bodies": bodies, "end_effector": ee[:1]}


#: most objects / arm shapes put in a description (state_schema bounds the same counts)
MAX_WORKSPACE_OBJECTS = 64
MAX_COLLISION_SHAPES = 256


def _shape_json(shape: Any) -> dict[str, Any]:
    return {"name": str(shape.name)[:200], "kind": shape.kind, "size": _nums(shape.size) if shape.size else [],
            "pose": _matrix(shape.pose)}


def collision_description(model: RobotModel) -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
    """The ``workspace`` and ``collision_shapes`` fields (module doc) of the world attached to
    ``model`` (:func:`hebictl.collision.attach.world_of`), or (None, None) without one."""
    from hebictl.collision.attach import world_of

    world = world_of(model)
    if world is None:
        return None, None
    ws = world.workspace
    objects = [{**_shape_json(s), "type": str(s.meta.get("type", s.kind)), "virtual": bool(s.meta.get("virtual")),
                "clearance": _num(s.clearance)} for s in ws.shapes if s.body < 0]
    shapes = [{**_shape_json(s), "body": int(s.body)} for s in world.shapes if s.kind != "mesh" and s.body >= 0]
    if len(objects) > MAX_WORKSPACE_OBJECTS:
        log.warning("state/description carries the first %d of %d workspace objects", MAX_WORKSPACE_OBJECTS,
                    len(objects))
    workspace = {"objects": objects[:MAX_WORKSPACE_OBJECTS],
                 "table_height": None if ws.table_height is None else _num(ws.table_height)}
    return workspace, shapes[:MAX_COLLISION_SHAPES]


#: arm events that latch a stop with the configured behaviour / that only brake and hold (not latched)
_FAULT_STOPS = ["watchdog", "hardware_error", "mstop"]
_FAULT_HOLDS = ["feedback_nan", "feedback_lost", "position_limit", "firmware_limit"]


def braking_deceleration(arm: Any, home: FloatArray | None) -> dict[str, Any]:
    """The per-joint deceleration the Arm's brake ramp uses (:mod:`hebictl.control.braking`):
    computed at the home pose where the config has one (it depends on the pose and the payload:
    the effort left after gravity over the joint's inertia, min'd with the rated figure), else the
    rated deceleration, which is the upper bound. ``at`` says which of the two it is."""
    rated = getattr(arm.limits, "acceleration_max", None)
    planner = getattr(arm, "brake_planner", None)
    if planner is not None and home is not None and np.all(np.isfinite(home)):
        gravity_of = getattr(arm, "gravity_vector", None)
        try:
            values = planner.deceleration(np.asarray(home, dtype=np.float64),
                                          None if gravity_of is None else gravity_of())
            return {"at": "home", "values": _nums(values)}
        except Exception:  # a model the planner cannot evaluate still gets a description
            log.exception("state/description: braking deceleration at home failed; giving the rated one")
    return {"at": "rated", "values": None if rated is None else _nums(rated)}


def stop_behaviours(runner: ArmRunner, default_ttl: float = 0.25, home: FloatArray | None = None) -> dict[str, Any]:
    """What each stop source makes the arm do (docs/teleop.md "Modes and safety").

    Every stop brakes on the Arm's one ramp (from the commanded state, at ``braking_deceleration``)
    and then either holds in the non-latched HOLD state (``action: "hold"``: a new goal or jog
    resumes) or enters the latched STOPPED state with a :class:`~hebictl.control.safety.StopBehaviour`
    (``action: "stop"``, ``behaviour``). Teleop's own stops always use ``hold``; the arm's own
    faults use the configured ``arm_stop`` (``user_data.safety.stop_behaviour``)."""
    arm = runner.arm
    default = getattr(arm, "default_stop_behaviour", None)
    default_name = None if default is None else str(getattr(default, "value", default))
    rated = getattr(arm.limits, "acceleration_max", None)
    hold = {"action": "hold", "latched": False}
    teleop_stop = {"action": "stop", "behaviour": "hold", "latched": True}
    return {
        "arm_stop": default_name,
        "rated_deceleration": None if rated is None else _nums(rated),
        "braking_deceleration": braking_deceleration(arm, home),
        "stop": {**hold, "event": "teleop_stop", "resume": "a new goal or jog sample"},
        "jog_release": {**hold, "events": ["teleop_jog_released", "teleop_jog_expired"],
                        "default_ttl": default_ttl, "resume": "a new jog sample"},
        "estop": {**teleop_stop, "event": "estop", "resume": "release, then cmd/mode"},
        "link_lost": {**teleop_stop, "event": "teleop_link_lost", "mode_after": "idle", "resume": "cmd/mode"},
        "shutdown": {**teleop_stop, "events": ["interrupt", "terminate", "teleop_shutdown"]},
        "fault": {"action": "stop", "behaviour": default_name, "latched": True, "events": _FAULT_STOPS,
                  "mode_after": "idle", "resume": "cmd/mode"},
        "fault_hold": {**hold, "events": _FAULT_HOLDS, "mode_after": "idle", "resume": "cmd/mode"},
    }


def description(runner: ArmRunner, arm_id: str, *, config_name: str | None = None,
                backend: str | None = None, default_ttl: float = 0.25,
                extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The description of the arm ``runner`` drives, as a JSON-ready dict."""
    arm = runner.arm
    model = arm.model
    lim = arm.limits
    home = arm.user_data.get("home_position")
    try:
        home_list = _nums(home) if home is not None and len(home) == arm.dof else None
    except TypeError:
        home_list = None
    workspace, collision_shapes = collision_description(model)
    body: dict[str, Any] = {
        "version": DESCRIPTION_VERSION,
        "arm_id": arm_id,
        "name": model.name,
        "config": config_name,
        "backend": backend or _backend_name(arm),
        "dof": arm.dof,
        "joints": {
            "names": list(model.joint_names),
            "position_min": _nums(lim.position_min),
            "position_max": _nums(lim.position_max),
            "velocity_max": _nums(lim.velocity_max) if hasattr(lim, "velocity_max") else _nums(model.max_speeds),
            "rated_speed": _nums(model.max_speeds),
            "rated_effort": _nums(model.max_efforts),
        },
        "home": home_list,
        "end_effector_frame": "end_effector",
        "tree": kinematic_tree(model),
        "urdf": _urdf_text(model),
        "gripper": bool(arm.user_data.get("has_gripper", False)),
        "loop_rate": runner.rate_hz,
        "stop_behaviours": stop_behaviours(runner, default_ttl, None if home_list is None else np.asarray(home_list)),
        "workspace": workspace,
        "collision_shapes": collision_shapes,
    }
    if extra:
        body.update(extra)
    return body


def description_payload(runner: ArmRunner, arm_id: str, **kw: Any) -> bytes:
    """:func:`description` as the UTF-8 JSON published on ``state/description``."""
    return json.dumps(description(runner, arm_id, **kw)).encode()
