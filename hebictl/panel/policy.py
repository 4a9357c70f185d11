"""Which panel controls the selected arm's state allows, decided in one place.

The browser greys out what is not allowed and the panel server refuses it again before
publishing (a page can be tampered with); the arm checks everything a third time. The rules
mirror docs/teleop.md: jog only in mode ``jog``, goals and home only in ``position``, the Mobile IO
emulator's samples (``input``) only in ``app``; while
e-stopped nothing but the e-stop release; the e-stop button itself is never disabled (it is
always safe to press, even offline or read-only: it is merely useless there); an account the
broker does not let publish commands gets a read-only view.
"""

from __future__ import annotations

from typing import Any

CONTROLS = ("estop", "estop_release", "stop", "mode", "jog", "joint_goal", "cartesian_goal", "home", "gripper",
            "input")


def allowed(status: dict[str, Any] | None, *, writable: bool | None) -> dict[str, bool]:
    """``control -> enabled`` for an arm whose latest ``state/status`` is ``status``."""
    out = dict.fromkeys(CONTROLS, False)
    out["estop"] = True
    if writable is False or not status or status.get("status") != "online":
        return out
    if status.get("estop"):
        out["estop_release"] = True
        return out
    mode = status.get("mode")
    out["stop"] = True
    out["mode"] = True
    out["gripper"] = True
    out["jog"] = mode == "jog"
    out["input"] = mode == "app"
    out["joint_goal"] = out["cartesian_goal"] = out["home"] = mode == "position"
    return out
