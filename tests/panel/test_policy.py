"""Which controls the panel enables for an arm's status (docs/teleop.md's mode and e-stop rules)."""

from __future__ import annotations

from hebictl.panel.policy import CONTROLS, allowed


def st(**kw: object) -> dict[str, object]:
    return {"status": "online", "state": "hold", "mode": "idle", "estop": False, **kw}


def test_jog_only_in_jog_mode_and_goals_only_in_position() -> None:
    for mode in ("idle", "position", "jog", "gravcomp"):
        a = allowed(st(mode=mode), writable=True)
        assert a["jog"] is (mode == "jog")
        assert a["joint_goal"] is a["cartesian_goal"] is a["home"] is (mode == "position")
        assert a["stop"] and a["mode"] and a["estop"] and a["gripper"] and not a["estop_release"]


def test_estopped_allows_only_the_release_and_the_estop() -> None:
    a = allowed(st(mode="jog", estop=True), writable=True)
    assert {k for k, v in a.items() if v} == {"estop", "estop_release"}


def test_read_only_offline_and_unknown_arms_allow_nothing_but_the_estop_button() -> None:
    for status, writable in ((st(mode="jog"), False), (st(mode="jog", status="offline"), True), (None, True)):
        a = allowed(status, writable=writable)
        assert {k for k, v in a.items() if v} == {"estop"}
    assert set(allowed(None, writable=None)) == set(CONTROLS)
