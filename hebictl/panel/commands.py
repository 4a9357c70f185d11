"""What a browser may ask for, checked field by field, and the teleop commands it becomes.

A browser tab is as hostile as any network input (a page can be tampered with, a script can
speak the WebSocket protocol directly): every message is parsed as strict JSON (no
``NaN``/``Infinity``), must be an object of a known type ``t`` whose fields have the right types
and ranges, or it is dropped with a notice - it never becomes a command by accident (a jog
``dir`` that is not exactly +1 or -1 is refused, where ``float("nan") >= 0`` once turned a NaN
into a full-speed jog the other way). The teleop command built from it is then validated with the
bridge's own :class:`hebictl.teleop.schema.CommandSchema` by :meth:`PanelLink.send
<hebictl.panel.link.PanelLink.send>` before it is published.

Goal durations are checked against the limits the arm checks a timed goal with: a minimum-jerk
move of ``D`` rad in ``T`` s peaks at ``1.875 D/T`` rad/s and ``10/sqrt(3) D/T^2`` rad/s^2, so
the shortest allowed ``T`` is the larger of ``1.875 D / v_max`` and ``sqrt(5.774 D / a_max)``
over the joints (``a_max``: the description's ``stop_behaviours.rated_deceleration``, the arm's
rated acceleration), which the panel offers to the operator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hebictl.errors import HebictlError

MAX_MESSAGE = 16384      # bytes of one browser message
PEAK_SPEED = 1.875       # minimum-jerk peak speed / mean speed
PEAK_ACCELERATION = 10.0 / math.sqrt(3.0)   # minimum-jerk peak acceleration * T^2 / D
MARGIN = 1.02            # the duration offered is this much above the bare minimum (rounding)

#: message type -> {field: kind}; kind "num", "int", "str", "bool", "list", "dict", "any"; "?" optional
REQUESTS: dict[str, dict[str, str]] = {
    "pong": {"s": "num", "c": "num"},
    "select": {"arm": "str?"},
    "ghost": {"q": "list?"},
    "jog": {"space": "str", "axis": "int", "dir": "num", "speed": "num?", "c": "num?"},
    "jog_release": {},
    "input": {"buttons": "list", "axes": "list", "pose": "dict?", "c": "num?"},   # one Mobile IO emulator sample
    "cmd": {"name": "str", "body": "dict?"},
    "view": {"shapes": "bool"},      # what the tab draws: the arm's collision shapes or not
}
PRIORITY = frozenset({"estop"})   # commands handled ahead of everything else, never rate limited


class BadRequest(HebictlError):
    """A browser message that is not one the panel accepts; dropped with a notice."""


def _reject(name: str) -> Any:
    raise BadRequest(f"JSON {name} is not allowed")


def parse(raw: str | bytes) -> dict[str, Any]:
    """The browser message in ``raw`` after the checks of :data:`REQUESTS`."""
    if len(raw) > MAX_MESSAGE:
        raise BadRequest(f"message of {len(raw)} bytes (max {MAX_MESSAGE})")
    try:
        msg = json.loads(raw, parse_constant=_reject)
    except BadRequest:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"not JSON: {exc}"[:120]) from None
    if not isinstance(msg, dict):
        raise BadRequest("not a JSON object")
    msg_type = msg.get("t")
    spec = REQUESTS.get(msg_type) if isinstance(msg_type, str) else None
    if spec is None:
        raise BadRequest(f"unknown message type {str(msg.get('t'))[:30]!r}")
    for key, kind in spec.items():
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        value = msg.get(key)
        if value is None:
            if not optional:
                raise BadRequest(f"'{key}' is required")
            continue
        if not _is(value, kind):
            raise BadRequest(f"'{key}' must be a {kind}")
    return msg


def _is(value: Any, kind: str) -> bool:
    if kind == "num":
        return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e300 \
            and math.isfinite(value)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**31
    return isinstance(value, {"str": str, "bool": bool, "list": list, "dict": dict}[kind])


def number(value: Any, what: str, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a finite float in [low, high], else BadRequest."""
    if not _is(value, "num") or not low <= value <= high:
        raise BadRequest(f"'{what}' must be a number in [{low}, {high}]")
    return float(value)


def numbers(value: Any, what: str, n: int | None = None) -> list[float]:
    if not isinstance(value, list) or (n is not None and len(value) != n) or len(value) > 64:
        raise BadRequest(f"'{what}' must be a list of {n or 'some'} numbers")
    return [number(v, f"{what}[{i}]") for i, v in enumerate(value)]


def jog_direction(value: Any) -> float:
    """+1 or -1; anything else (0, NaN, 0.5, "1") is refused: a jog needs a deliberate direction."""
    if not _is(value, "num") or value not in (1, -1):
        raise BadRequest("'dir' must be 1 or -1")
    return float(value)


#: [m] a pose position's bound (the cmd/input schema's, docs/mobile_io.md)
MAX_POSE_POSITION = 100.0
#: how far a pose orientation's norm may be from 1 (the cmd/input schema's)
QUATERNION_NORM_TOLERANCE = 1e-3


def input_sample(buttons: Any, axes: Any, pose: Any = None) -> dict[str, Any]:
    """A Mobile IO sample of the emulator: 8 buttons exactly 0 or 1, 8 axes in [-1, 1], and
    optionally the emulated phone's AR ``pose`` (``position`` [m], ``orientation`` a unit quaternion
    w x y z, ``quality`` in [0, 1]): the ``cmd/input`` schema's body (docs/mobile_io.md; the arm
    checks it again with that schema)."""
    if not isinstance(buttons, list) or len(buttons) != 8 or any(not _is(b, "int") or b not in (0, 1) for b in buttons):
        raise BadRequest("'buttons' must be 8 values, each 0 or 1")
    if not isinstance(axes, list) or len(axes) != 8:
        raise BadRequest("'axes' must be 8 numbers in [-1, 1]")
    body: dict[str, Any] = {"buttons": [int(b) for b in buttons],
                            "axes": [number(a, f"axes[{i}]", -1.0, 1.0) for i, a in enumerate(axes)]}
    if pose is not None:
        body["pose"] = input_pose(pose)
    return body


def input_pose(pose: Any) -> dict[str, Any]:
    """The emulated phone's pose, checked: exactly ``position`` (3 numbers within 100 m),
    ``orientation`` (a unit quaternion w x y z) and an optional ``quality`` in [0, 1]."""
    if not isinstance(pose, dict) or not set(pose) <= {"position", "orientation", "quality"}:
        raise BadRequest("'pose' must hold only 'position', 'orientation' and 'quality'")
    if not isinstance(pose.get("position"), list) or len(pose["position"]) != 3:
        raise BadRequest("'pose.position' must be 3 numbers [m]")
    if not isinstance(pose.get("orientation"), list) or len(pose["orientation"]) != 4:
        raise BadRequest("'pose.orientation' must be a unit quaternion [w, x, y, z]")
    position = [number(v, f"pose.position[{i}]", -MAX_POSE_POSITION, MAX_POSE_POSITION)
                for i, v in enumerate(pose["position"])]
    orientation = [number(v, f"pose.orientation[{i}]", -1.01, 1.01) for i, v in enumerate(pose["orientation"])]
    if abs(math.sqrt(sum(v * v for v in orientation)) - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise BadRequest("'pose.orientation' must be a unit quaternion [w, x, y, z]")
    out: dict[str, Any] = {"position": position, "orientation": orientation}
    if pose.get("quality") is not None:
        out["quality"] = number(pose["quality"], "pose.quality", 0.0, 1.0)
    return out


def min_duration(start: Sequence[float | None], goal: Sequence[float], vmax: Sequence[float | None],
                 amax: Sequence[float | None] | None = None) -> float:
    """Shortest duration [s] of a minimum-jerk joint move from ``start`` to ``goal`` within the
    rated speeds ``vmax`` [rad/s] and accelerations ``amax`` [rad/s^2] (None: unlimited; an
    unknown start joint counts as no move)."""
    s = np.asarray([np.nan if x is None else x for x in start], dtype=float)
    g = np.asarray(goal, dtype=float)
    n = len(g)

    def limit(values: Sequence[float | None] | None) -> np.ndarray:
        given = [] if values is None else list(values)
        v = np.asarray([np.inf if x is None or not x > 0 else x for x in given][:n], dtype=float)
        return np.concatenate([v, np.full(n - len(v), np.inf)])

    distance = np.abs(g - s[:n]) if len(s) >= n else np.zeros(n)
    distance = np.where(np.isfinite(distance), distance, 0.0)
    t_speed = PEAK_SPEED * distance / limit(vmax)
    t_accel = np.sqrt(PEAK_ACCELERATION * distance / limit(amax))
    return float(np.max(np.maximum(t_speed, t_accel), initial=0.0))


def offered_duration(need: float) -> float:
    """The shortest duration the panel offers for a move that needs ``need`` s (rounded up to 0.01 s)."""
    return math.ceil(max(need, 0.0) * MARGIN * 100.0 + 1e-9) / 100.0
