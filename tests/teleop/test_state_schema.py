"""``state/*`` validation: what a real arm publishes passes; every malformed message of the
issue (a string for ``last_event``, joints of the wrong type, NaN, an overflowing number, deep
nesting, inconsistent descriptions) is refused with a clear reason instead of reaching a viewer."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from hebictl.errors import StateRejected
from hebictl.teleop import state_schema
from hebictl.teleop.state_schema import SCHEMAS, payload_sha256, validate
from hebictl.teleop.topics import Topics
from tests.teleop.conftest import ARM_ID, run


async def _collect(url: str, seconds: float) -> dict[str, list[bytes]]:
    import aiomqtt

    out: dict[str, list[bytes]] = {}
    async with aiomqtt.Client(hostname="127.0.0.1", port=int(url.rsplit(":", 1)[1]), identifier="schema-reader") as c:
        await c.subscribe(Topics(ARM_ID).all_states, qos=1)
        await c.publish(Topics(ARM_ID).cmd("mode"), json.dumps({"mode": "bogus", "seq": 1, "ts": 1.0,
                                                                   "client": "x"}), qos=1)  # gets an ack
        try:
            async with asyncio.timeout(seconds):
                async for msg in c.messages:
                    out.setdefault(msg.topic.value.rsplit("/", 1)[1], []).append(bytes(msg.payload))
        except TimeoutError:
            pass
    return out


def test_what_a_real_arm_publishes_is_valid(broker: Any, make_server: Any) -> None:
    make_server(broker.url)
    got = run(_collect(broker.url, 1.5))
    assert set(got) >= {"status", "description", "joints", "ee_pose", "ack"}, set(got)
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
