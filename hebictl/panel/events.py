"""What the panel tells the operator about an arm's status changes, in plain words.

The arm's ``state/status`` carries machine values (``estop: true``, ``last_event: {kind:
"teleop_stop"}``); an operator needs "E-stop engaged", and needs to tell a fault from a stop they
asked for. :func:`status_events` compares two consecutive (validated) statuses and returns the
events to list, each with a ``level``:

* ``estop`` - the e-stop engaged (the page shows it in red, with a banner);
* ``fault`` - the arm stopped on its own (watchdog, lost or invalid feedback, a limit, hardware);
* ``warn`` - worth a look but expected (offline, a refused command, a jog that timed out);
* ``info`` - what an operator did (stop, goal, mode, release, resume after a stop).

The kinds are :class:`hebictl.control.safety.EventKind`'s values, which never change on the wire.
"""

from __future__ import annotations

from typing import Any

#: EventKind value -> (level, words); None: covered by a status field (estop, mode) instead
EVENT_WORDS: dict[str, tuple[str, str] | None] = {
    "goal": ("info", "Goal started"),
    "cleared": ("info", "Resumed"),
    "hold": ("info", "Holding"),
    "estop": None,
    "release": ("info", "Motors released (commanding nothing)"),
    "interrupt": ("info", "Stopped: Ctrl-C on the arm's computer"),
    "terminate": ("info", "Stopped: the arm's process was told to end"),
    "watchdog": ("fault", "FAULT: no fresh feedback (watchdog)"),
    "feedback_lost": ("fault", "FAULT: feedback lost"),
    "feedback_nan": ("fault", "FAULT: invalid feedback"),
    "position_limit": ("fault", "FAULT: a joint is beyond its limit"),
    "hardware_error": ("fault", "FAULT: hardware error"),
    "internal_error": ("fault", "FAULT: internal error in the control loop"),
    "mstop": ("fault", "M-stop pressed"),
    "firmware_limit": ("warn", "A module's firmware limit is acting"),
    "teleop_stop": ("info", "Stopped by an operator"),
    "teleop_jog_released": ("info", "Jog released"),
    "teleop_jog_expired": ("warn", "Jog stopped: no fresh sample"),
    "teleop_mode": None,
    "teleop_link_lost": ("warn", "Stopped: the arm lost its broker link"),
    "teleop_shutdown": ("info", "Stopped: teleop is shutting down"),
}

#: ack/error reasons in plain words (the arm's detail follows)
REASON_WORDS: dict[str, str] = {
    "too_fast": "too fast for the arm", "too_strong": "needs more effort than the joints have",
    "out_of_limits": "outside the joint limits", "stopped": "the arm is stopped: choose a mode first",
    "estop_engaged": "the e-stop is engaged", "stale": "arrived too late (check the clocks)",
    "out_of_order": "out of order", "rate_limited": "too many commands", "wrong_mode": "not in this mode",
    "infeasible": "no way to get there",
    "group_hold": "another arm of its group holds them all",
}


def _event(ts: Any, level: str, text: str, detail: str = "") -> dict[str, Any]:
    return {"ts": ts, "level": level, "text": text, "detail": detail}


def status_events(old: dict[str, Any] | None, new: dict[str, Any]) -> list[dict[str, Any]]:
    """Events that ``new`` adds to ``old`` (both validated ``state/status`` bodies), newest last."""
    old = old or {}
    ts = new.get("ts")
    out: list[dict[str, Any]] = []
    if old and new.get("status") != old.get("status"):
        out.append(_event(ts, "warn", "Arm offline") if new.get("status") == "offline"
                   else _event(ts, "info", "Arm online"))
    if new.get("estop") and not old.get("estop"):
        out.append(_event(ts, "estop", "E-stop engaged"))
    elif old.get("estop") and new.get("estop") is False:
        out.append(_event(ts, "info", "E-stop released"))
    if old and new.get("mode") != old.get("mode") and new.get("mode") is not None:
        out.append(_event(ts, "info", f"Mode: {new['mode']}"))
    ev, old_ev = new.get("last_event"), old.get("last_event")
    if ev and ev != old_ev:
        words = EVENT_WORDS.get(ev["kind"], ("info", f"Event: {ev['kind']}"))
        if words is not None:
            out.append(_event(ts, words[0], words[1], ev.get("detail") or ""))
    err, old_err = new.get("last_error"), old.get("last_error")
    if err and err != old_err and err["reason"] == "group_hold":
        # the group's stop of this arm, or a mode refused while another arm still holds them all
        # (hebictl/teleop/group.py): either way this arm waits for the arm named in the detail
        out.append(_event(ts, "fault", "Held by the group", err.get("detail") or ""))
    elif err and err != old_err:
        words = EVENT_WORDS.get(err["reason"])
        if words is None and err["reason"] not in EVENT_WORDS:
            text = f"Refused: {REASON_WORDS.get(err['reason'], err['reason'])}"
            out.append(_event(ts, "warn", text, err.get("detail") or ""))
    return out
