"""The one schema of what an arm publishes on ``state/*``: status, description, joints, ee_pose, ack.

Everything a viewer (``hebictl panel``, a teleop client) receives from the broker is hostile until
it passed here: any account the ACL lets publish on a state topic, or an anonymous client on a
broker without accounts, can put anything there, retained. Commands have their own validators
(:mod:`hebictl.teleop.schema`); this module is their counterpart for the other direction.

The schemas are **data**, a small subset of JSON Schema (``type`` - possibly a list, with
``null`` -, ``properties``, ``required``, ``additionalProperties``, ``items``, ``minItems``,
``maxItems``, ``minimum``, ``maximum``, ``maxLength``, ``enum``, ``pattern``), so that the
panel's page validates what it receives with the very same rules: the server sends
:data:`SCHEMAS` in its ``hello`` and ``panel.js`` interprets them with a twenty-line mirror of
:func:`check`. Numbers must be finite (JSON has no NaN; Python's parser would accept the
``NaN``/``Infinity`` extension and ``1e999`` overflows to inf: both are refused). ``integer``
is a JSON integer within ±2^63.

:func:`validate` returns a *cleaned* copy holding only the fields the schema knows (an unknown
field is dropped, not an error: newer arms may add fields), or raises
:class:`~hebictl.errors.StateRejected` with a short ``reason`` and a ``detail`` naming the
field. On top of the per-field rules, :func:`validate` checks what a schema cannot say: per-joint
lists as long as ``dof``, tree parents that come before their child.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from hebictl.errors import StateRejected

#: largest payload accepted per state topic [bytes] (a description carries URDF text)
MAX_BYTES = {"description": 4 * 1024 * 1024}
MAX_BYTES_DEFAULT = 65536
MAX_JOINTS = 64
MAX_BODIES = 256
MAX_WORKSPACE_OBJECTS = 64    # workspace objects in a description (teleop/description.py sends at most these)
MAX_COLLISION_SHAPES = 256    # the arm's collision shapes in a description
MAX_EXTENT = 1000.0           # [m] any coordinate or size of a workspace object or shape (as the config reader)
INT_LIMIT = 2**63

_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_STR = {"type": "string", "maxLength": 200}
_STR_OR_NULL = {"type": ["string", "null"], "maxLength": 200}
_TEXT = {"type": ["string", "null"], "maxLength": 2000}
_BOOL = {"type": "boolean"}
_PER_JOINT = {"type": "array", "items": _NUM_OR_NULL, "maxItems": MAX_JOINTS}
_PER_JOINT_OR_NULL = {"type": ["array", "null"], "items": _NUM_OR_NULL, "maxItems": MAX_JOINTS}
_ROW = {"type": "array", "items": _NUM_OR_NULL, "minItems": 4, "maxItems": 4}
_MATRIX = {"type": "array", "items": _ROW, "minItems": 4, "maxItems": 4}
_VEC3 = {"type": "array", "items": _NUM_OR_NULL, "minItems": 3, "maxItems": 3}
WORKSPACE_TYPES = ("table", "box", "cylinder", "wall", "keep_out")
_COORD = {"type": "number", "minimum": -MAX_EXTENT, "maximum": MAX_EXTENT}
_POSE = {"type": "array", "minItems": 4, "maxItems": 4,
         "items": {"type": "array", "items": _COORD, "minItems": 4, "maxItems": 4}}
_SIZE = {"type": "array", "maxItems": 3, "items": {"type": "number", "minimum": 0.0, "maximum": MAX_EXTENT}}
_SHAPE_PROPS = {"name": _STR_OR_NULL, "pose": _POSE, "size": _SIZE}
_SHA256 = {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$", "maxLength": 64}

#: an arm id as a topic level (hebictl.teleop.topics.check_arm_id's rule)
_ARM_ID = {"type": "string", "maxLength": 64, "pattern": "^[A-Za-z0-9_.-]{1,64}$"}
MAX_GROUP_ARMS = 16

#: a status's ``group`` (an arm of a multi-arm config, hebictl/teleop/group.py): the arm ids served in one
#: process under one supervisor, whether an arm holds them all (``by``, null while none does or when the
#: process stops every arm), and why. Checked apart from the rest of the status (:func:`validate_status`)
GROUP: dict[str, Any] = {
    "type": ["object", "null"], "required": ["arms"], "properties": {
        "arms": {"type": "array", "items": _ARM_ID, "minItems": 1, "maxItems": MAX_GROUP_ARMS}, "held": _BOOL,
        "by": {"type": ["string", "null"], "maxLength": 64, "pattern": "^[A-Za-z0-9_.-]{1,64}$"}, "cause": _TEXT,
        "time": _NUM_OR_NULL, "base": {"type": ["string", "null"], "maxLength": 64,
                                       "pattern": "^[A-Za-z0-9_.-]{1,64}$"}}}

STATUS: dict[str, Any] = {
    "type": "object", "required": ["status"],
    "properties": {
        "ts": _NUM, "arm_id": _STR, "status": {"type": "string", "enum": ["online", "offline"]},
        "state": {"type": ["string", "null"], "maxLength": 32}, "mode": {"type": ["string", "null"], "maxLength": 32},
        "arm_mode": {"type": ["string", "null"], "maxLength": 32},
        "estop": _BOOL, "m_stopped": _BOOL, "stop_behaviour": _STR_OR_NULL, "jogging": _BOOL, "braking": _BOOL,
        "goal_progress": _NUM_OR_NULL, "at_goal": _BOOL, "cycles": {"type": ["integer", "null"]},
        "goal_status": _TEXT, "commands_delivered": _BOOL,
        "payload": {"type": ["object", "null"], "properties": {"mass_kg": _NUM_OR_NULL, "extra_mass_kg": _NUM_OR_NULL}},
        "loop": {"type": ["object", "null"], "additionalProperties": _NUM_OR_NULL},
        "realtime": {"type": ["object", "null"], "properties": {
            "policy": {"type": "string", "enum": ["SCHED_FIFO", "SCHED_OTHER"]},
            "priority": {"type": "integer", "minimum": 0, "maximum": 99},
            "requested_priority": {"type": "integer", "minimum": 0, "maximum": 99},
            "memory_locked": _BOOL, "cpu": {"type": ["integer", "null"]}, "complete": _BOOL}},
        "last_error": {"type": ["object", "null"], "required": ["reason"],
                       "properties": {"time": _NUM_OR_NULL, "reason": _STR, "detail": _TEXT}},
        "last_event": {"type": ["object", "null"], "required": ["kind"],
                       "properties": {"kind": _STR, "state": _STR_OR_NULL, "detail": _TEXT}},
        "gripper": {"type": ["object", "null"], "properties": {
            "position": _NUM_OR_NULL, "action": _STR_OR_NULL, "seq": {"type": ["integer", "null"]},
            "client": _STR_OR_NULL, "time": _NUM_OR_NULL, "hardware": _BOOL, "effort": _NUM_OR_NULL,
            "measured_position": _NUM_OR_NULL, "measured_effort": _NUM_OR_NULL, "measured_opening": _NUM_OR_NULL}},
        "bridge": {"type": ["object", "null"], "additionalProperties": {"type": ["number", "string", "boolean",
                                                                                  "null"], "maxLength": 200}},
        "description_sha256": _SHA256,
        "session": {"type": ["string", "null"], "maxLength": 64},
        "app": {"type": ["object", "null"], "properties": {
            "name": _STR, "state": _STR, "led": _STR_OR_NULL, "armed": _BOOL, "link": _STR, "running": _BOOL,
            "input_accepted": {"type": "integer", "minimum": 0},
            "input_dropped": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}},
        "fleet": {"type": ["object", "null"], "required": ["state"], "properties": {
            "state": {"type": "string", "enum": ["no_lease", "ready", "active", "estopped"]},
            "holder": {"type": ["string", "null"], "maxLength": 64}, "lease_age": _NUM_OR_NULL,
            "lease_timeout": _NUM, "stations": {"type": "array", "items": {"type": "string", "maxLength": 64},
                                                 "maxItems": 64},
            "estop": _TEXT,
            "dropped": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}},
        "group": GROUP,
        # a mobile base's status (hebictl/teleop/base.py): kind "base", its wheels, latch and counts
        "kind": {"type": ["string", "null"], "maxLength": 32},
        "base": {"type": ["object", "null"], "properties": {
            "velocity": _PER_JOINT, "command": _PER_JOINT, "target": _PER_JOINT, "max_velocity": _PER_JOINT,
            "max_acceleration": _PER_JOINT, "command_ttl": _NUM_OR_NULL}},
        "latch": {"type": ["object", "null"], "properties": {"kind": _STR, "detail": _TEXT}},
        "counts": {"type": ["object", "null"], "additionalProperties": {"type": "integer", "minimum": 0}},
        "implausible": {"type": ["integer", "null"], "minimum": 0},
    },
}

JOINTS: dict[str, Any] = {
    "type": "object", "required": ["position"],
    "properties": {"ts": _NUM, "names": {"type": "array", "items": _STR, "maxItems": MAX_JOINTS},
                   "position": _PER_JOINT, "velocity": _PER_JOINT, "effort": _PER_JOINT},
}

EE_POSE: dict[str, Any] = {
    "type": "object",
    "properties": {"ts": _NUM, "position": {"type": ["array", "null"], "items": _NUM_OR_NULL, "minItems": 3,
                                            "maxItems": 3},
                   "orientation": {"type": ["array", "null"], "items": _NUM_OR_NULL, "minItems": 4, "maxItems": 4}},
}

ACK: dict[str, Any] = {
    "type": "object", "required": ["topic", "accepted"],
    "properties": {"seq": {"type": ["integer", "null"]}, "client": {"type": ["string", "null"], "maxLength": 128},
                   "topic": {"type": "string", "maxLength": 64}, "accepted": _BOOL, "reason": _STR,
                   "detail": _TEXT, "coalesced": {"type": "integer", "minimum": 0},
                   "last_seq": {"type": ["integer", "null"]}, "ts": _NUM},
}

DESCRIPTION: dict[str, Any] = {
    "type": "object", "required": ["dof", "joints", "tree"],
    "properties": {
        "version": {"type": "integer"}, "arm_id": _STR, "name": _STR_OR_NULL, "config": _STR_OR_NULL,
        "backend": _STR_OR_NULL, "dof": {"type": "integer", "minimum": 1, "maximum": MAX_JOINTS},
        "joints": {"type": "object", "required": ["names", "position_min", "position_max", "velocity_max"],
                   "properties": {"names": {"type": "array", "items": _STR, "maxItems": MAX_JOINTS},
                                  "position_min": _PER_JOINT, "position_max": _PER_JOINT, "velocity_max": _PER_JOINT,
                                  "rated_speed": _PER_JOINT, "rated_effort": _PER_JOINT}},
        "home": _PER_JOINT_OR_NULL,
        "end_effector_frame": _STR_OR_NULL,
        "tree": {"type": "object", "required": ["base", "bodies"], "properties": {
            "base": _MATRIX,
            "bodies": {"type": "array", "maxItems": MAX_BODIES, "items": {
                "type": "object", "required": ["parent", "placement", "joint"], "properties": {
                    "name": _STR, "parent": {"type": "integer", "minimum": -1, "maximum": MAX_BODIES},
                    "placement": _MATRIX,
                    "joint": {"type": "object", "required": ["kind"], "properties": {
                        "name": _STR_OR_NULL, "kind": {"type": "string", "maxLength": 32}, "axis": _VEC3,
                        "scale": _NUM_OR_NULL,
                        "index": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_JOINTS - 1}}}}}},
            "end_effector": {"type": "array", "maxItems": 1, "items": {
                "type": "object", "required": ["body", "offset"], "properties": {
                    "body": {"type": "integer", "minimum": 0, "maximum": MAX_BODIES}, "offset": _MATRIX,
                    "name": _STR_OR_NULL}}}}},
        "urdf": {"type": ["string", "null"], "maxLength": MAX_BYTES["description"]},
        "gripper": _BOOL,
        "loop_rate": _NUM_OR_NULL,
        # an arm of a multi-arm config: its base frame in the config's shared world frame (the config's
        # ``base``), so a viewer can draw the arms of one group in one scene; null/absent for one arm
        "world_base": {"type": ["array", "null"], "items": {"type": "array", "items": _COORD, "minItems": 4,
                                                             "maxItems": 4}, "minItems": 4, "maxItems": 4},
        "stop_behaviours": {"type": ["object", "null"], "properties": {
            "arm_stop": _STR_OR_NULL, "rated_deceleration": _PER_JOINT_OR_NULL}},
        "workspace": {"type": ["object", "null"], "properties": {
            "table_height": {"type": ["number", "null"], "minimum": -MAX_EXTENT, "maximum": MAX_EXTENT},
            "objects": {"type": "array", "maxItems": MAX_WORKSPACE_OBJECTS, "items": {
                "type": "object", "required": ["type", "kind", "pose", "size"], "properties": {
                    **_SHAPE_PROPS, "type": {"type": "string", "enum": list(WORKSPACE_TYPES)},
                    "kind": {"type": "string", "enum": ["plane", "box", "cylinder"]},
                    "virtual": _BOOL, "clearance": {"type": ["number", "null"], "minimum": 0.0, "maximum": 1.0}}}}}},
        "collision_shapes": {"type": ["array", "null"], "maxItems": MAX_COLLISION_SHAPES, "items": {
            "type": "object", "required": ["body", "kind", "pose", "size"], "properties": {
                **_SHAPE_PROPS, "body": {"type": "integer", "minimum": 0, "maximum": MAX_BODIES},
                "kind": {"type": "string", "enum": ["capsule", "box", "sphere", "cylinder"]}}}},
        # the Mobile IO app of ``hebictl teleop --app`` and the config's layout (HEBI's widget list), for
        # the panel's emulator; None/absent without an app. Labels are text only (a page shows them as text)
        "mobile_io": {"type": ["object", "null"], "properties": {
            "app": _STR, "text": _TEXT, "enable": {"type": "integer", "minimum": 1, "maximum": 8},
            "layout": {"type": ["array", "null"], "maxItems": 64, "items": {
                "type": "object", "required": ["id", "channels", "type"], "properties": {
                    "id": {"type": "string", "maxLength": 32}, "type": {"type": "string", "maxLength": 32},
                    "channels": {"type": "array", "maxItems": 2, "items": {
                        "type": "string", "enum": [f"{c}{i}" for c in "ab" for i in range(1, 9)]}},
                    "x": _NUM_OR_NULL, "y": _NUM_OR_NULL, "width": _NUM_OR_NULL, "height": _NUM_OR_NULL,
                    "parameters": {"type": ["object", "null"], "properties": {
                        "text": {"type": ["string", "array", "null"], "maxLength": 64, "maxItems": 4,
                                 "items": {"type": "string", "maxLength": 64}},
                        "text1": _STR_OR_NULL, "text2": _STR_OR_NULL,
                        "mode": {"type": ["string", "null"], "enum": ["momentary", "toggle"]}}}}}}}},
    },
}

#: state topic name -> schema; sent to the page as is
SCHEMAS: dict[str, dict[str, Any]] = {"status": STATUS, "joints": JOINTS, "ee_pose": EE_POSE, "ack": ACK,
                                      "description": DESCRIPTION}

_TYPES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) and -INT_LIMIT <= v < INT_LIMIT,
    "number": lambda v: (isinstance(v, float) and math.isfinite(v))
    or (isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1e300),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _fail(path: str, what: str) -> StateRejected:
    return StateRejected("invalid_field", f"{path or 'payload'}: {what}"[:300])


def check(value: Any, schema: Mapping[str, Any], path: str = "") -> Any:
    """``value`` checked against ``schema``; returns the cleaned value (objects keep only the
    fields their schema names, or all of them under ``additionalProperties``)."""
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    kind = next((t for t in types if _TYPES[t](value)), None)
    if kind is None:
        got = "non-finite number" if isinstance(value, float) else type(value).__name__
        raise _fail(path, f"expected {' or '.join(types)}, got {got}")
    if kind == "null":
        return None
    if kind in ("number", "integer"):
        if "minimum" in schema and value < schema["minimum"]:
            raise _fail(path, f"{value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise _fail(path, f"{value} > maximum {schema['maximum']}")
        return value
    if kind == "string":
        if len(value) > schema.get("maxLength", math.inf):
            raise _fail(path, f"string longer than {schema['maxLength']}")
        if "enum" in schema and value not in schema["enum"]:
            raise _fail(path, f"{value[:40]!r} is not one of {', '.join(schema['enum'])}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise _fail(path, "does not match the expected pattern")
        return value
    if kind == "array":
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", math.inf):
            raise _fail(path, f"{len(value)} items (allowed {schema.get('minItems', 0)}.."
                              f"{schema.get('maxItems', 'any')})")
        items = schema.get("items")
        return list(value) if items is None else [check(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        missing = [k for k in schema.get("required", ()) if k not in value]
        if missing:
            raise _fail(path, f"missing {', '.join(missing)}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for k, v in value.items():
            sub = props.get(k, extra)
            if sub is not None:
                out[k] = check(v, sub, f"{path}.{k}" if path else str(k)[:40])
        return out
    return value  # boolean


def _reject_constant(name: str) -> Any:
    raise StateRejected("not_finite", f"JSON {name} is not allowed")


def decode(kind: str, payload: bytes | bytearray | str) -> Any:
    """The JSON value of a ``state/<kind>`` payload (size, UTF-8, strict JSON, nesting checked)."""
    limit = MAX_BYTES.get(kind, MAX_BYTES_DEFAULT)
    if len(payload) > limit:
        raise StateRejected("too_large", f"{len(payload)} bytes > {limit}")
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
        return json.loads(text, parse_constant=_reject_constant)
    except StateRejected:
        raise
    except UnicodeDecodeError:
        raise StateRejected("malformed_json", "payload is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise StateRejected("malformed_json", f"payload is not JSON: {exc}"[:200]) from None


def _same_length(obj: Mapping[str, Any], keys: tuple[str, ...], n: int, where: str) -> None:
    for k in keys:
        v = obj.get(k)
        if v is not None and len(v) != n:
            raise StateRejected("inconsistent", f"{where}{k} has {len(v)} values for {n} joints")


#: how many ``size`` numbers each shape kind has (MuJoCo's convention, hebictl/collision/shapes.py)
_SHAPE_SIZES = {"plane": 0, "box": 3, "cylinder": 2, "capsule": 2, "sphere": 1}


def _check_description(d: dict[str, Any]) -> None:
    n = d["dof"]
    _same_length(d["joints"], ("names", "position_min", "position_max", "velocity_max", "rated_speed",
                               "rated_effort"), n, "joints.")
    _same_length(d, ("home",), n, "")
    _same_length(d.get("stop_behaviours") or {}, ("rated_deceleration",), n, "stop_behaviours.")
    bodies = d["tree"]["bodies"]
    for i, b in enumerate(bodies):
        if b["parent"] >= i:
            raise StateRejected("inconsistent", f"tree.bodies[{i}].parent = {b['parent']} is not an earlier body")
        if b["joint"].get("index") is not None and b["joint"]["index"] >= n:
            raise StateRejected("inconsistent", f"tree.bodies[{i}].joint.index beyond dof {n}")
    for i, shape in enumerate(d.get("collision_shapes") or []):
        if shape["body"] >= len(bodies):
            raise StateRejected("inconsistent", f"collision_shapes[{i}].body names a body that does not exist")
    for where, shapes in (("workspace.objects", (d.get("workspace") or {}).get("objects") or []),
                          ("collision_shapes", d.get("collision_shapes") or [])):
        for i, shape in enumerate(shapes):
            if len(shape["size"]) != _SHAPE_SIZES[shape["kind"]]:
                raise StateRejected("inconsistent", f"{where}[{i}].size has {len(shape['size'])} values for a "
                                                    f"{shape['kind']}")
    for ee in d["tree"].get("end_effector") or []:
        if ee["body"] >= len(bodies):
            raise StateRejected("inconsistent", "tree.end_effector names a body that does not exist")


def validate(kind: str, payload: bytes | bytearray | str | Any) -> dict[str, Any]:
    """The cleaned ``state/<kind>`` message in ``payload`` (raw bytes, or an already decoded
    value); raises StateRejected for anything that does not fit :data:`SCHEMAS`."""
    schema = SCHEMAS.get(kind)
    if schema is None:
        raise StateRejected("unknown_topic", f"no state topic {kind[:40]!r}")
    value = decode(kind, payload) if isinstance(payload, bytes | bytearray | str) else payload
    if not isinstance(value, dict):
        raise StateRejected("not_an_object", f"expected a JSON object, got {type(value).__name__}")
    try:
        out = check(value, schema)
    except RecursionError:
        raise StateRejected("too_deep", "nested too deeply") from None
    if kind == "description":
        _check_description(out)
    elif kind == "joints":
        _same_length(out, ("names", "velocity", "effort"), len(out["position"]), "")
    return out


def check_group(group: Any, arm_id: str) -> dict[str, Any] | None:
    """The cleaned ``group`` of ``arm_id``'s status, or None (no group): :data:`GROUP`'s fields, and
    what a schema cannot say: the arm is a member of its own group, no member twice, ``by`` (the arm
    holding the group) is a member and the group is then held. Raises StateRejected."""
    out = check(group, GROUP, "group")
    if out is None:
        return None
    arms = out["arms"]
    if arm_id not in arms:
        raise StateRejected("inconsistent", f"group.arms does not name the arm itself ({arm_id})")
    if len(set(arms)) != len(arms):
        raise StateRejected("inconsistent", "group.arms names an arm twice")
    by = out.get("by")
    if by is not None and by not in arms:
        raise StateRejected("inconsistent", f"group.by {by!r} is not one of group.arms")
    if by is not None and out.get("held") is False:
        raise StateRejected("inconsistent", "group.by names an arm but group.held is false")
    return out


def validate_status(payload: bytes | bytearray | str | Any, arm_id: str) -> tuple[dict[str, Any], StateRejected | None]:
    """``arm_id``'s ``state/status`` in ``payload``, validated as :func:`validate` does but with its
    ``group`` checked apart (:func:`check_group`): a group that fails is dropped (``group`` None) and
    its StateRejected returned beside the status, which is kept: a bad group must not hide the arm's
    e-stop or mode from a viewer. Anything else that fails raises StateRejected, as :func:`validate`."""
    value = decode("status", payload) if isinstance(payload, bytes | bytearray | str) else payload
    if not isinstance(value, dict):
        raise StateRejected("not_an_object", f"expected a JSON object, got {type(value).__name__}")
    rest = {k: v for k, v in value.items() if k != "group"}
    out = validate("status", rest)
    if "group" not in value:
        return out, None
    try:
        out["group"] = check_group(value["group"], arm_id)
    except RecursionError:
        out["group"] = None
        return out, StateRejected("too_deep", "group: nested too deeply")
    except StateRejected as exc:
        out["group"] = None
        return out, exc
    return out, None


def payload_sha256(payload: bytes | bytearray) -> str:
    """Hex SHA-256 of a payload's exact bytes: what an arm's status names as ``description_sha256``."""
    return hashlib.sha256(bytes(payload)).hexdigest()
