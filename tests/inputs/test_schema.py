"""The MQTT input topic's validator: the schema's one accepted shape, and every hostile variant
dropped with a reason and counted by the mailbox source (nothing reaches the apps)."""

from __future__ import annotations

import json
import math

import pytest

from hebictl.errors import CommandRejected
from hebictl.hardware import SimClock
from hebictl.inputs.schema import MAX_INPUT_BYTES, parse_input, to_payload
from hebictl.inputs.sources import MailboxSource
from hebictl.inputs.state import InputState


def _msg(**over):
    msg = {"seq": 10, "ts": 1700000000.0, "client": "phone", "buttons": [0, 0, 1, 0, 0, 0, 0, 0],
           "axes": [0.0, 0.5, -1.0, 1.0, 0.0, 0.0, 0.0, 0.25],
           "pose": {"position": [0.1, -0.2, 0.3], "orientation": [0.5, 0.5, 0.5, 0.5], "quality": 1.0}}
    msg.update(over)
    return msg


def test_a_valid_message_becomes_the_state_it_describes():
    s = parse_input(json.dumps(_msg()), received=2.5)
    assert s.t == 2.5 and s.seq == 10 and s.source_time == 1700000000.0
    assert s.button(3) == 1 and s.button(1) == 0
    assert s.axis(2) == 0.5 and s.axis(8) == 0.25
    assert s.position == (0.1, -0.2, 0.3) and s.orientation == (0.5, 0.5, 0.5, 0.5) and s.quality == 1.0
    # round trip through the sender's helper
    again = parse_input(json.dumps(to_payload(s, "phone", 11, 1.0)), received=3.0)
    assert (again.buttons, again.axes, again.position, again.orientation) == (s.buttons, s.axes, s.position,
                                                                              s.orientation)


def test_pose_is_optional():
    msg = _msg()
    del msg["pose"]
    s = parse_input(json.dumps(msg), 0.0)
    assert s.position is None and not s.has_pose


HOSTILE = [
    (b"\xff\xfe", "malformed_json"),
    (b"[1, 2]", "not_an_object"),
    (json.dumps(_msg(extra=1)), "unknown_field"),
    (json.dumps({k: v for k, v in _msg().items() if k != "buttons"}), "missing_field"),
    (json.dumps(_msg(buttons=[0] * 7)), "wrong_length"),
    (json.dumps(_msg(buttons=[2, 0, 0, 0, 0, 0, 0, 0])), "out_of_range"),
    (json.dumps(_msg(buttons=[True, 0, 0, 0, 0, 0, 0, 0])), "out_of_range"),
    (json.dumps(_msg(axes=[1.5] + [0.0] * 7)), "out_of_range"),
    (json.dumps(_msg(axes=["0"] + [0.0] * 7)), "wrong_type"),
    (json.dumps(_msg(axes=[1e999] + [0.0] * 7)).replace("Infinity", "1e999"), "not_finite"),
    ('{"seq": 1, "ts": NaN, "client": "x", "buttons": [0,0,0,0,0,0,0,0], "axes": [0,0,0,0,0,0,0,0]}', "not_finite"),
    (json.dumps(_msg(pose={"position": [0, 0, 0], "orientation": [0.5, 0, 0, 0]})), "out_of_range"),
    (json.dumps(_msg(pose={"position": [0, 0, 1000], "orientation": [1, 0, 0, 0]})), "out_of_range"),
    (json.dumps(_msg(pose={"position": [0, 0, 0], "orientation": [1, 0, 0, 0], "frame": "x"})), "unknown_field"),
    (json.dumps(_msg(pose=[0, 0, 0])), "wrong_type"),
    ('{"seq": 1, "seq": 2, "ts": 1.0, "client": "x", "buttons": [0,0,0,0,0,0,0,0], "axes": [0,0,0,0,0,0,0,0]}',
     "duplicate_field"),
    (json.dumps(_msg(client="")), "wrong_type"),
    (json.dumps(_msg(seq=-1)), "out_of_range"),
    (b"{" + b" " * MAX_INPUT_BYTES + b"}", "too_large"),
]


@pytest.mark.parametrize(("payload", "reason"), HOSTILE)
def test_hostile_messages_are_refused_with_their_reason(payload, reason):
    with pytest.raises(CommandRejected) as info:
        parse_input(payload, 0.0)
    assert info.value.reason == reason, info.value


def test_the_mailbox_drops_and_counts_bad_and_reordered_messages():
    clock = SimClock()
    box = MailboxSource(clock)
    for payload, _ in HOSTILE:
        assert box.offer(payload) is False
    assert sum(box.rejected.values()) == len(HOSTILE)
    assert box.poll(0.0) is None  # nothing bad reached the poll
    assert box.offer(json.dumps(_msg(seq=5)))
    assert not box.offer(json.dumps(_msg(seq=5)))  # a replay of the same seq
    assert not box.offer(json.dumps(_msg(seq=4)))  # an older one
    assert box.rejected["stale_seq"] == 2
    got = box.poll(0.0)
    assert isinstance(got, InputState) and got.seq == 5
    assert box.poll(0.0) is None  # one sample is polled once
    print(f"dropped by reason: {dict(box.rejected)}")


def test_state_json_round_trip_keeps_nan_axes():
    s = InputState(1.0, (1, 0, 0, 0, 0, 0, 0, 1), (math.nan,) * 8)
    back = InputState.from_json(json.loads(json.dumps(s.to_json())))
    assert back.buttons == s.buttons and all(math.isnan(a) for a in back.axes) and back.position is None
