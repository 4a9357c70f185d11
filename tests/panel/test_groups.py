"""The panel's view of groups of arms (issue 32 item 1): what each arm's status says of its group,
checked on arrival (a bad group dropped and counted, the status kept), shown as a group only when
every member confirms it, the ``group_hold`` refusals kept while the hold lasts, and the other
arms of a group drawn at their bases in the selected arm's frame. The link is fed messages as the
broker would hand them over (no broker needed: ``receive`` is where every message goes through)."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hebictl.panel.groups import confirmed_members, group_words, overview
from hebictl.panel.link import PanelLink
from hebictl.teleop.connection import parse_broker

EYE = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]


def in_loop(fn: Callable[..., None]) -> Callable[..., None]:
    """Run the test in an event loop: the link starts its write probes as tasks (they end at once here)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        async def main() -> None:
            fn(*args, **kwargs)
        asyncio.run(main())
    return wrapper


def _link() -> PanelLink:
    return PanelLink(parse_broker("mqtt://127.0.0.1:1"), name="p")


def _status(link: PanelLink, arm: str, group: Any = None, **kw: Any) -> None:
    body = {"status": "online", "state": "running", "mode": "position", "estop": False, **kw}
    if group is not None:
        body["group"] = group
    link.receive(f"hebictl/v1/{arm}/state/status", json.dumps(body).encode())


def _group(held: bool = False, by: str | None = None, cause: str | None = None,
           arms: tuple[str, ...] = ("left", "right")) -> dict[str, Any]:
    return {"arms": list(arms), "held": held, "by": by, "cause": cause, "time": 1.0 if held else None}


def test_group_words_name_the_arm_and_what_it_did() -> None:
    assert group_words(_group()) is None and group_words(None) is None
    assert group_words(_group(True, "right", "estop: e-stop engaged by op (seq 1)")) == "right e-stopped"
    assert group_words(_group(True, "left", "mstop: M-stop pressed")) == "left stopped: mstop: M-stop pressed"
    assert group_words(_group(True, None, "teleop_shutdown: every arm brakes")).startswith("every arm stopped")


@in_loop
def test_a_group_is_shown_once_every_member_confirms_it_and_each_card_shows_its_own_state() -> None:
    link = _link()
    _status(link, "left", _group())
    _status(link, "solo")
    out = overview(link.arms)
    assert out["groups"] == []   # right not on the broker yet: left's claim alone is no group
    cards = {c["id"]: c for c in out["arms"]}
    assert cards["left"]["group_unconfirmed"] and not cards["left"]["in_group"]
    assert confirmed_members(link.arms, "left") == []
    _status(link, "right", _group())
    out = overview(link.arms)
    assert [g["arms"] for g in out["groups"]] == [["left", "right"]] and not out["groups"][0]["held"]
    assert confirmed_members(link.arms, "right") == ["left", "right"] and confirmed_members(link.arms, "solo") == []
    # right's e-stop: each arm's card from its own status, the group held by right
    held = _group(True, "right", "estop: e-stop engaged")
    _status(link, "right", held, estop=True, state="stopped", mode="idle")
    _status(link, "left", held, state="stopped", mode="idle")
    out = overview(link.arms)
    cards = {c["id"]: c for c in out["arms"]}
    assert out["groups"][0]["held"] and out["groups"][0]["by"] == "right" and out["groups"][0]["words"] == \
        "right e-stopped"
    assert cards["right"]["estop"] and cards["right"]["held_by"] == "right"
    assert not cards["left"]["estop"] and cards["left"]["held"] and cards["left"]["held_words"] == "right e-stopped"
    assert cards["solo"]["group"] is None and not cards["solo"]["held"] and not cards["solo"]["in_group"]
    assert [c["id"] for c in out["arms"]] == ["left", "right", "solo"]


@in_loop
def test_a_group_claimed_with_another_arm_is_not_believed_nor_shown_on_that_arm() -> None:
    """An account that may publish arm ghost's state claims ghost is in left and right's group, held by
    left: the group stays left and right's as they report it, ghost is drawn alone (unconfirmed), and
    left's card shows nothing ghost said."""
    link = _link()
    _status(link, "left", _group())
    _status(link, "right", _group())
    _status(link, "ghost", _group(True, "left", "estop: e-stop engaged", arms=("ghost", "left", "right")))
    out = overview(link.arms)
    cards = {c["id"]: c for c in out["arms"]}
    assert [g["arms"] for g in out["groups"]] == [["left", "right"]] and not out["groups"][0]["held"]
    assert cards["ghost"]["group_unconfirmed"] and not cards["ghost"]["in_group"]
    assert not cards["left"]["held"] and not cards["left"]["group_unconfirmed"]
    assert confirmed_members(link.arms, "ghost") == []


@in_loop
def test_a_malformed_group_is_dropped_and_counted_and_the_status_kept() -> None:
    link = _link()
    _status(link, "left", {"arms": ["left", "right"], "held": False, "by": "right"})   # by, yet not held
    view = link.arms["left"]
    assert view.status is not None and view.status["mode"] == "position" and view.status["group"] is None
    assert view.group_dropped == 1 and link.dropped == 1 and view.invalid == 1
    assert "held is false" in view.health(0.0 if view.last_invalid is None else view.last_invalid["at"])[
        "invalid_recent"]["detail"]
    _status(link, "left", {"arms": "left"}, estop=True)   # not even the schema's shape: the e-stop still shows
    assert view.status["estop"] is True and view.group_dropped == 2
    _status(link, "left", _group())
    assert view.status["group"]["arms"] == ["left", "right"] and view.group_dropped == 2


@in_loop
def test_a_group_hold_refusal_is_kept_while_the_group_holds() -> None:
    link = _link()
    held = _group(True, "right", "estop: e-stop engaged")
    _status(link, "left", held, state="stopped", mode="idle",
            last_error={"time": 1.0, "reason": "group_hold", "detail": "arm right holds every arm: estop"})
    _status(link, "right", held, estop=True)
    ack = {"seq": 3, "client": "someone", "topic": "mode", "accepted": False, "reason": "group_hold",
           "detail": "arm right holds every arm (estop: e-stop engaged): clear it first", "ts": 5.0}
    link.receive("hebictl/v1/left/state/ack", json.dumps(ack).encode())
    link.receive("hebictl/v1/left/state/ack", json.dumps({**ack, "seq": 4, "topic": "stop", "accepted": True,
                                                          "reason": ""}).encode())
    card = {c["id"]: c for c in overview(link.arms)["arms"]}["left"]
    assert card["refusal"] == {"topic": "mode", "detail": ack["detail"], "ts": 5.0}
    assert [e["text"] for e in link.arms["left"].events][:1] == ["Held by the group"]
    _status(link, "left", _group(), state="stopped", mode="idle")   # the hold is over: so is its refusal
    assert {c["id"]: c for c in overview(link.arms)["arms"]}["left"]["refusal"] is None


def _description(arm: str, y: float, reach: float = 0.5) -> dict[str, Any]:
    """A one-link arm (a revolute joint about z, its end ``reach`` m along x), based ``y`` m off the world's origin."""
    tip = [[1.0, 0, 0, reach], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    bodies = [{"name": "j", "parent": -1, "placement": EYE, "joint": {"name": "j", "kind": "revolute",
                                                                       "axis": [0, 0, 1], "scale": 1.0, "index": 0}},
              {"name": "tip", "parent": 0, "placement": tip, "joint": {"kind": "fixed"}}]
    return {"arm_id": arm, "dof": 1, "joints": {"names": ["j"], "position_min": [-3], "position_max": [3],
                                                 "velocity_max": [1]},
            "tree": {"base": EYE, "bodies": bodies, "end_effector": [{"body": 1, "offset": EYE}]},
            "world_base": [[1.0, 0, 0, 0], [0, 1.0, 0, y], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]}


@pytest.mark.parametrize("confirmed", [True, False])
@in_loop
def test_the_scene_draws_the_other_arms_of_a_confirmed_group_at_their_bases(confirmed: bool) -> None:
    """left (world y +0.3) selected: right (world y -0.3, its joint at 90 degrees) is drawn from left's
    base frame at y -0.6, its link pointing along +y, coloured by its e-stop; not at all when the
    group is not confirmed by right's own status."""
    from hebictl.panel.server import PanelServer

    link = _link()
    for arm, y in (("left", 0.3), ("right", -0.3)):
        link.receive(f"hebictl/v1/{arm}/state/description", json.dumps(_description(arm, y)).encode())
        link.receive(f"hebictl/v1/{arm}/state/joints", json.dumps({"position": [np.pi / 2]}).encode())
    _status(link, "left", _group())
    _status(link, "right", _group() if confirmed else None, estop=True)
    server = PanelServer(link)
    frame = json.loads(server._shared_frame("left") or "{}")
    if not confirmed:
        assert "others" not in frame
        return
    (right,) = frame["others"]
    assert right["arm"] == "right" and right["estop"] and not right["held"] and not right["offline"]
    np.testing.assert_allclose(right["base"], [0.0, -0.6, 0.0], atol=1e-12)
    np.testing.assert_allclose(right["segs"], [[0.0, -0.6, 0.0, 0.0, -0.1, 0.0]], atol=1e-12)
    np.testing.assert_allclose(frame["segs"], [[0.0, 0.0, 0.0, 0.0, 0.5, 0.0]], atol=1e-12)   # left, its own frame
