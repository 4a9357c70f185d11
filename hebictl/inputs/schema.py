"""The MQTT input topic: a Mobile IO sample sent over the network, and its one validator.

Topic: ``hebictl/v1/<arm_id>/cmd/input`` (served by ``hebictl teleop --app``'s bridge, :mod:`hebictl.inputs.teleop_app`,
and by ``hebictl app --input mqtt://...``).
The payload follows ROS 2's ``hebi_msgs/MobileInput`` (``axes``, ``buttons``: one value per Mobile IO
channel) plus the AR pose, inside teleop's envelope (``seq``, ``ts``, ``client``, checked like every
teleop command: :func:`hebictl.teleop.schema.decode` and :func:`~hebictl.teleop.schema.envelope`)::

    {"seq": 1733100000000000, "ts": 1733100000.0, "client": "phone-1",
     "buttons": [0, 0, 1, 0, 0, 0, 0, 0],           # 8 integers, 0 or 1 (B1..B8)
     "axes": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], # 8 numbers in [-1, 1] (A1..A8)
     "pose": {"position": [0.1, 0.0, 0.3],           # optional: AR position [m], |x| <= 100
              "orientation": [1.0, 0.0, 0.0, 0.0],   # unit quaternion w x y z (norm 1 +- 1e-3)
              "quality": 1.0}}                        # optional, [0, 1]

Network input is hostile: anything else (a missing or unknown field, a wrong length or type, a
NaN, a button 2, an axis 1.5, a quaternion of norm 0.5, more than :data:`MAX_INPUT_BYTES`) raises
:class:`~hebictl.errors.CommandRejected` with a reason; the source drops the message and counts it by
reason (:class:`hebictl.inputs.sources.MailboxSource`), and nothing reaches the arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hebictl.errors import CommandRejected
from hebictl.inputs.state import CHANNELS, QUALITY_UNKNOWN, InputState
from hebictl.teleop.schema import as_number, decode, envelope

#: the topic's last level under ``hebictl/v1/<arm_id>/cmd/``
TOPIC_NAME = "input"
#: a Mobile IO sample is about 300 bytes; this bounds a hostile one long before JSON parsing costs
MAX_INPUT_BYTES = 4096
#: [m] the largest AR coordinate accepted (a phone's AR session spans a room, not a city)
MAX_POSITION_M = 100.0
#: how far from 1 a quaternion's norm may be (ARKit/ARCore send unit quaternions in float32)
QUATERNION_NORM_TOLERANCE = 1e-3
FIELDS = ("seq", "ts", "client", "buttons", "axes", "pose")
POSE_FIELDS = ("position", "orientation", "quality")


def parse_input(payload: bytes | bytearray | str, received: float) -> InputState:
    """The :class:`InputState` in ``payload``, taken in at ``received`` [s, arm clock]; raises
    :class:`CommandRejected` (reason and detail) for anything not exactly the schema above."""
    if len(payload) > MAX_INPUT_BYTES:
        raise CommandRejected("too_large", f"input payload of {len(payload)} bytes exceeds {MAX_INPUT_BYTES}")
    obj = decode(payload)
    unknown = [k for k in obj if k not in FIELDS]
    if unknown:
        raise CommandRejected("unknown_field", f"unknown field(s): {', '.join(repr(k[:40]) for k in unknown[:5])}")
    env = envelope(obj)
    buttons = tuple(_button(v, i) for i, v in enumerate(_list(obj, "buttons")))
    axes = tuple(as_number(v, f"axes[{i}]", -1.0, 1.0) for i, v in enumerate(_list(obj, "axes")))
    position: tuple[float, float, float] | None = None
    orientation: tuple[float, float, float, float] | None = None
    quality = QUALITY_UNKNOWN
    pose = obj.get("pose")
    if pose is not None:
        position, orientation, quality = _pose(pose)
    return InputState(t=received, buttons=buttons, axes=axes, position=position, orientation=orientation,
                      quality=quality, source_time=env.ts, seq=env.seq)


def to_payload(state: InputState, client: str, seq: int, ts: float) -> dict[str, Any]:
    """The message a sender publishes for ``state`` (tests, scripts, the panel's emulator)."""
    msg: dict[str, Any] = {"seq": seq, "ts": ts, "client": client, "buttons": list(state.buttons),
                           "axes": [0.0 if not math.isfinite(a) else a for a in state.axes]}
    if state.position is not None and state.orientation is not None:
        msg["pose"] = {"position": list(state.position), "orientation": list(state.orientation)}
        if state.quality >= 0.0:
            msg["pose"]["quality"] = state.quality
    return msg


def _list(obj: Mapping[str, Any], key: str, n: int = CHANNELS) -> list[Any]:
    if key not in obj:
        raise CommandRejected("missing_field", f"'{key}' is required")
    value = obj[key]
    if not isinstance(value, list):
        raise CommandRejected("wrong_type", f"'{key}' must be a list of {n} values, got {type(value).__name__}")
    if len(value) != n:
        raise CommandRejected("wrong_length", f"'{key}' needs {n} values, got {len(value)}")
    return value


def _button(value: Any, i: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        raise CommandRejected("out_of_range", f"'buttons[{i}]' must be 0 or 1, got {str(value)[:20]}")
    return int(value)


def _pose(pose: Any) -> tuple[tuple[float, float, float], tuple[float, float, float, float], float]:
    if not isinstance(pose, dict):
        raise CommandRejected("wrong_type", f"'pose' must be an object, got {type(pose).__name__}")
    unknown = [k for k in pose if k not in POSE_FIELDS]
    if unknown:
        raise CommandRejected("unknown_field", f"unknown pose field(s): {', '.join(repr(k[:40]) for k in unknown[:5])}")
    p = [as_number(v, f"pose.position[{i}]", -MAX_POSITION_M, MAX_POSITION_M)
         for i, v in enumerate(_list(pose, "position", 3))]
    q = [as_number(v, f"pose.orientation[{i}]", -1.0 - QUATERNION_NORM_TOLERANCE, 1.0 + QUATERNION_NORM_TOLERANCE)
         for i, v in enumerate(_list(pose, "orientation", 4))]
    norm = math.sqrt(sum(x * x for x in q))
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise CommandRejected("out_of_range", f"'pose.orientation' must be a unit quaternion, norm {norm:.6g}")
    quality = QUALITY_UNKNOWN
    if pose.get("quality") is not None:
        quality = as_number(pose["quality"], "pose.quality", 0.0, 1.0)
    return (p[0], p[1], p[2]), (q[0], q[1], q[2], q[3]), quality
