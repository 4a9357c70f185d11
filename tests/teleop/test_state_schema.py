"""``state/*`` validation: what a real arm publishes passes; every malformed message of the
issue (a string for ``last_event``, joints of the wrong type, NaN, an overflowing number, deep
nesting, inconsistent descriptions) is refused with a clear reason instead of reaching a viewer."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hebictl.errors import StateRejected
from hebictl.teleop import state_schema
from hebictl.teleop.state_schema import SCHEMAS, payload_sha256, validate
from hebictl.teleop.topics import Topics
from tests._support.teleop import ARM_ID, HANG_S, paced_servers, run

#: what a live arm publishes, every kind of it: the reader waits until each has come
KINDS = {"status", "description", "joints", "ee_pose", "ack"}


@pytest.fixture
def paced_server():
    """Teleop servers on paced-clock mock arms (tests/_support/teleop.py), stopped at the end."""
    with paced_servers() as make:
        yield make


async def _collect(url: str, each: int = 3) -> dict[str, list[bytes]]:
    """Every state message until each of :data:`KINDS` has come at least ``each`` times (the ack
    and the retained description only once: one command is sent, and the description comes again
    only every 5 s)."""
    import aiomqtt

    out: dict[str, list[bytes]] = {}
    need = {kind: 1 if kind in ("ack", "description") else each for kind in KINDS}
    async with aiomqtt.Client(hostname="127.0.0.1", port=int(url.rsplit(":", 1)[1]), identifier="schema-reader",
                              timeout=HANG_S) as c:
        await c.subscribe(Topics(ARM_ID).all_states, qos=1)
        await c.publish(Topics(ARM_ID).cmd("mode"), json.dumps({"mode": "bogus", "seq": 1, "ts": 1.0,
                                                                   "client": "x"}), qos=1)  # gets an ack
        async for msg in c.messages:
            out.setdefault(msg.topic.value.rsplit("/", 1)[1], []).append(bytes(msg.payload))
            if all(len(out.get(kind, ())) >= n for kind, n in need.items()):
                return out
    raise AssertionError("the subscription ended")


def test_what_a_real_arm_publishes_is_valid(broker: Any, paced_server: Any) -> None:
    paced_server(broker.url)
    got = run(_collect(broker.url), timeout=HANG_S)
    assert set(got) >= KINDS, set(got)
    for kind, payloads in got.items():
        for p in payloads:
            body = validate(kind, p)
            known = {k: v for k, v in json.loads(p).items() if k in SCHEMAS[kind]["properties"]}
            if kind == "description":  # stop_behaviours keeps only what a viewer uses
                assert body.pop("stop_behaviours")["rated_deceleration"] == known.pop("stop_behaviours")[
                    "rated_deceleration"]
            assert body == known, kind
    d = validate("description", got["description"][0])
    assert d["dof"] == 6 and len(d["tree"]["bodies"]) > 6


STATUS = {"ts": 1.0, "arm_id": "a", "status": "online", "state": "hold", "mode": "idle", "estop": False,
          "last_event": {"kind": "goal", "state": "running", "detail": ""}}


@pytest.mark.parametrize(("kind", "payload", "reason"), [
    ("status", {**STATUS, "last_event": "boom"}, "invalid_field"),           # attack 1 of issue 20
    ("status", {**STATUS, "status": "maybe"}, "invalid_field"),
    ("status", {**STATUS, "estop": "yes"}, "invalid_field"),
    ("status", {**STATUS, "arm_mode": "x" * 33}, "invalid_field"),          # the arm's mode: a short string
    ("status", {**STATUS, "arm_mode": 3}, "invalid_field"),
    ("status", {**STATUS, "description_sha256": "xyz"}, "invalid_field"),
    ("status", [1, 2], "not_an_object"),
    ("joints", {"position": ["0.5", 1]}, "invalid_field"),                   # attack 4
    ("joints", {"position": [0.1, 0.2], "names": ["a"]}, "inconsistent"),
    ("joints", {"position": 5}, "invalid_field"),
    ("joints", b'{"position": [NaN]}', "not_finite"),
    ("joints", b'{"position": [1e999]}', "invalid_field"),
    ("joints", b'{"position": [1]' + b"}" * 2, "malformed_json"),
    ("joints", b"\xff\xfe", "malformed_json"),
    ("ack", {"topic": "mode", "accepted": True, "seq": 2**70}, "invalid_field"),
    ("ee_pose", {"position": [1, 2]}, "invalid_field"),
    ("joints", b"[" * 100000 + b"]" * 100000, "too_large"),
    ("joints", b'{"position": ' + b"[" * 5000 + b"]" * 5000 + b"}", "malformed_json"),  # nesting
])
def test_malformed_messages_are_refused_with_a_reason(kind: str, payload: Any, reason: str) -> None:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    with pytest.raises(StateRejected) as exc:
        validate(kind, raw)
    assert exc.value.reason == reason, exc.value


def _description() -> dict[str, Any]:
    eye = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    body = {"name": "b", "parent": -1, "placement": eye, "joint": {"name": "j", "kind": "revolute", "axis": [0, 0, 1],
                                                                  "scale": 1.0, "index": 0}}
    return {"dof": 1, "joints": {"names": ["j"], "position_min": [-1], "position_max": [1], "velocity_max": [1]},
            "home": [0.0], "tree": {"base": eye, "bodies": [body], "end_effector": [{"body": 0, "offset": eye}]}}


def test_descriptions_must_be_consistent() -> None:
    assert validate("description", json.dumps(_description()).encode())["dof"] == 1
    for mutate in (lambda d: d["joints"].update(position_min=[0, 0]), lambda d: d.update(home=[0, 0]),
                   lambda d: d["tree"]["bodies"][0].update(parent=0),
                   lambda d: d["tree"]["bodies"][0]["joint"].update(index=3),
                   lambda d: d["tree"]["end_effector"][0].update(body=4), lambda d: d.update(dof=0),
                   lambda d: d["tree"]["base"].pop()):
        d = copy.deepcopy(_description())
        mutate(d)
        with pytest.raises(StateRejected):
            validate("description", json.dumps(d).encode())


def test_unknown_fields_are_dropped_and_the_hash_is_of_the_exact_bytes() -> None:
    raw = json.dumps({**STATUS, "surprise": {"x": 1}}).encode()
    assert "surprise" not in validate("status", raw)
    assert payload_sha256(raw) == __import__("hashlib").sha256(raw).hexdigest()
    assert len(json.dumps(state_schema.SCHEMAS)) < 20000  # sent to every page in "hello"


def test_workspace_and_collision_shapes_are_bounded() -> None:
    """The description's workspace objects and arm shapes (drawn by the panel): counts, sizes,
    coordinates, kinds and bodies are bounded; a payload beyond any bound is refused."""
    eye = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    box = {"name": "crate", "type": "box", "kind": "box", "size": [0.1, 0.1, 0.1], "pose": eye, "virtual": False,
           "clearance": 0.01}
    d = {**_description(), "workspace": {"table_height": 0.0, "objects": [box]},
         "collision_shapes": [{"body": 0, "kind": "capsule", "size": [0.03, 0.1], "pose": eye}]}
    assert validate("description", json.dumps(d).encode())["workspace"]["objects"][0]["name"] == "crate"
    assert state_schema.MAX_COLLISION_SHAPES == 256
    far = copy.deepcopy(eye)
    far[0][3] = 1e4
    for mutate in (lambda d: d["workspace"].update(objects=[box] * (state_schema.MAX_WORKSPACE_OBJECTS + 1)),
                   lambda d: d["workspace"]["objects"][0].update(size=[0.1, 0.1]),           # a box needs 3
                   lambda d: d["workspace"]["objects"][0].update(size=[-0.1, 0.1, 0.1]),
                   lambda d: d["workspace"]["objects"][0].update(size=[2e3, 0.1, 0.1]),
                   lambda d: d["workspace"]["objects"][0].update(pose=far),
                   lambda d: d["workspace"]["objects"][0].update(type="lava"),
                   lambda d: d["workspace"]["objects"][0].update(kind="mesh"),
                   lambda d: d["workspace"].update(objects="table"),
                   lambda d: d["collision_shapes"][0].update(body=5),                       # no such body
                   lambda d: d["collision_shapes"][0].update(kind="plane"),
                   lambda d: d.update(collision_shapes=d["collision_shapes"] * 257)):
        bad = copy.deepcopy(d)
        mutate(bad)
        with pytest.raises(StateRejected):
            validate("description", json.dumps(bad).encode())
    with pytest.raises(StateRejected, match=r"not allowed"):
        validate("description", json.dumps(d).replace("0.03", "NaN").encode())


GROUP = {"arms": ["left", "right"], "held": True, "by": "right", "cause": "estop: e-stop engaged", "time": 1.0}


@pytest.mark.parametrize(("group", "why"), [
    ({**GROUP, "arms": "left"}, "expected array"),                        # not a list
    ({**GROUP, "arms": []}, "0 items"),                                   # no member
    ({**GROUP, "arms": ["left", "r/x"]}, "pattern"),                      # not an arm id
    ({**GROUP, "arms": ["right", "other"]}, "does not name the arm itself"),
    ({**GROUP, "arms": ["left", "left", "right"]}, "twice"),
    ({**GROUP, "by": "ghost"}, "is not one of group.arms"),
    ({**GROUP, "held": False}, "held is false"),
    ({**GROUP, "arms": [f"a{i}" for i in range(17)] + ["left"]}, "items"),
    ({"held": True}, "missing arms"),
    ([1, 2], "expected object"),
])
def test_a_bad_group_is_dropped_and_the_rest_of_the_status_kept(group: Any, why: str) -> None:
    """Issue 32: a status's ``group`` is checked apart (``validate_status``): a bad one is dropped with
    its reason, while the arm's e-stop and mode still reach the viewer."""
    body, err = state_schema.validate_status(json.dumps({**STATUS, "estop": True, "group": group}).encode(), "left")
    assert body["group"] is None and body["estop"] is True and body["mode"] == STATUS["mode"]
    assert isinstance(err, StateRejected) and why in err.detail, err


def test_a_good_group_is_kept_and_a_status_that_fails_elsewhere_is_still_refused() -> None:
    body, err = state_schema.validate_status(json.dumps({**STATUS, "group": GROUP}).encode(), "left")
    assert err is None and body["group"] == GROUP
    stopping = {**GROUP, "by": None}   # the process stops every arm: held by none of them
    assert state_schema.validate_status({**STATUS, "group": stopping}, "right")[0]["group"] == stopping
    assert state_schema.validate_status({**STATUS, "group": None}, "left") == ({**STATUS, "group": None}, None)
    assert "group" not in state_schema.validate_status(json.dumps(STATUS), "left")[0]
    with pytest.raises(StateRejected):
        state_schema.validate_status(json.dumps({**STATUS, "estop": "yes", "group": GROUP}), "left")
    with pytest.raises(StateRejected):
        state_schema.validate_status(b"[1]", "left")


def test_a_description_may_carry_its_arms_world_base_within_bounds() -> None:
    """The multi-arm config's base pose of the arm (``world_base``), drawn by the panel: a 4x4 of finite
    coordinates within 1000 m."""
    base = [[1.0, 0, 0, 0], [0, 1.0, 0, -0.3], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    assert validate("description", json.dumps({**_description(), "world_base": base}))["world_base"] == base
    assert validate("description", json.dumps({**_description(), "world_base": None}))["world_base"] is None
    for bad in (base[:3], [[*row[:3], 1e4] for row in base], [[*row[:3], None] for row in base]):
        with pytest.raises(StateRejected):
            validate("description", json.dumps({**_description(), "world_base": bad}))
