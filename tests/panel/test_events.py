"""Plain words for what changed in an arm's status, and a fault told apart from a normal stop."""

from __future__ import annotations

from typing import Any

from hebictl.panel.events import status_events


def st(**kw: Any) -> dict[str, Any]:
    return {"ts": 1.0, "status": "online", "state": "hold", "mode": "position", "estop": False, **kw}


def texts(old: dict[str, Any] | None, new: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["level"], e["text"]) for e in status_events(old, new)]


def test_estop_in_plain_words() -> None:
    engaged = st(estop=True, mode="idle", last_event={"kind": "estop", "state": "stopped", "detail": "teleop"})
    assert texts(st(), engaged) == [("estop", "E-stop engaged"), ("info", "Mode: idle")]
    assert ("info", "E-stop released") in texts(engaged, st(mode="idle", last_event=engaged["last_event"]))
    assert not any("True" in t or "->" in t for _, t in texts(st(), engaged))


def test_a_plain_stop_and_the_resume_after_it_are_not_faults() -> None:
    stopped = st(last_event={"kind": "teleop_stop", "state": "hold", "detail": "cmd/stop"})
    resumed = st(state="running", last_event={"kind": "cleared", "state": "running", "detail": "fault cleared"})
    assert texts(st(), stopped) == [("info", "Stopped by an operator")]
    assert texts(stopped, resumed) == [("info", "Resumed")]


def test_faults_offline_and_refusals() -> None:
    fault = st(state="stopped", mode="idle", last_event={"kind": "watchdog", "state": "stopped", "detail": "12 ms"})
    assert texts(st(), fault)[-1] == ("fault", "FAULT: no fresh feedback (watchdog)")
    assert texts(st(), st(status="offline")) == [("warn", "Arm offline")]
    refused = st(last_error={"time": 1.0, "reason": "too_fast", "detail": "joint 1 needs 3 rad/s"})
    assert texts(st(), refused) == [("warn", "Refused: too fast for the arm")]
    assert texts(None, st()) == []   # the first status is a state, not a change
