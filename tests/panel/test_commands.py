"""Browser messages are checked field by field (a NaN jog direction never becomes a jog), and the
shortest goal duration the panel offers is the one hebi-py's own minimum-jerk trajectory needs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hebictl.panel.commands import BadRequest, input_sample, jog_direction, min_duration, offered_duration, parse


@pytest.mark.parametrize("raw", [
    '{"t": "jog", "space": "joint", "axis": 0, "dir": NaN}',         # attack 9: NaN direction
    '{"t": "jog", "space": "joint", "axis": 0, "dir": Infinity}',
    '{"t": "jog", "space": "joint", "axis": 0, "dir": 1e999}',
    '{"t": "jog", "space": "joint", "axis": 99999999999999999999, "dir": 1}',   # integer overflow
    '{"t": "cmd", "name": "mode", "body": ' + "[" * 3000 + "]" * 3000 + "}",    # deep nesting
    '{"t": "cmd", "name": 5}', '{"t": "nope"}', "[1]", "not json", '{"t": "pong", "s": "x", "c": 1}',
])
def test_hostile_browser_messages_are_refused(raw: str) -> None:
    with pytest.raises(BadRequest):
        parse(raw)


def test_a_jog_needs_a_deliberate_direction() -> None:
    assert jog_direction(1) == 1.0 and jog_direction(-1) == -1.0
    for bad in (0, 0.5, float("nan"), "1", None, True):
        with pytest.raises(BadRequest):
            jog_direction(bad)


def test_the_offered_duration_fits_hebi_pys_trajectory_within_speed_and_acceleration() -> None:
    hebi_trajectory = pytest.importorskip("hebi.trajectory", reason="hebi-py not installed")
    rng = np.random.default_rng(7)
    for _ in range(50):
        start, goal = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
        vmax, amax = rng.uniform(0.5, 3.0, 3), rng.uniform(1.0, 20.0, 3)
        need = min_duration(start, goal, vmax, amax)
        for duration, fits in ((offered_duration(need), True), (need * 0.97, False)):
            traj = hebi_trajectory.create_trajectory([0.0, duration], np.stack([start, goal], axis=1))
            t = np.linspace(0.0, duration, 2001)
            states = [traj.get_state(x) for x in t]
            v = np.abs([s[1] for s in states]).max(axis=0)
            a = np.abs([s[2] for s in states]).max(axis=0)
            ok = bool(np.all(v <= vmax * (1 + 1e-6)) and np.all(a <= amax * (1 + 1e-3)))
            assert ok is fits, (duration, need, v / vmax, a / amax)
    assert min_duration([None, 0.0], [5.0, 0.0], [1.0, 1.0]) == 0.0   # unknown start: no move counted
    assert math.isclose(min_duration([0.0], [1.0], [1.0], None), 1.875)


POSE = {"position": [0.1, -0.2, 0.3], "orientation": [0.7071068, 0.0, 0.0, 0.7071068], "quality": 1.0}


def test_an_emulator_sample_with_a_pose_is_one_the_arms_input_schema_takes() -> None:
    """The panel's first check of the emulated phone's pose gives a body that hebictl.inputs.schema
    (the arm's one cmd/input schema) parses into the same pose; without a pose, none."""
    from hebictl.inputs.schema import parse_input

    msg = parse(json.dumps({"t": "input", "buttons": [0, 0, 1, 0, 0, 0, 0, 0], "axes": [0.0] * 8, "pose": POSE}))
    body = input_sample(msg["buttons"], msg["axes"], msg.get("pose"))
    state = parse_input(json.dumps({"seq": 1, "ts": 0.0, "client": "op", **body}), 0.0)
    assert state.position == tuple(POSE["position"]) and state.orientation == tuple(POSE["orientation"])
    assert state.quality == 1.0 and state.buttons[2] == 1
    assert "pose" not in input_sample([0] * 8, [0.0] * 8)


@pytest.mark.parametrize("pose", [
    {"position": [0.1, 0.2], "orientation": [1.0, 0.0, 0.0, 0.0]},                    # 2 coordinates
    {"position": [0.1, 0.2, 0.3], "orientation": [1.0, 0.0, 0.0]},                    # 3 quaternion parts
    {"position": [0.1, 0.2, 0.3], "orientation": [0.5, 0.5, 0.0, 0.0]},               # not unit
    {"position": [0.1, 0.2, 1e3], "orientation": [1.0, 0.0, 0.0, 0.0]},               # beyond 100 m
    {"position": [0.1, 0.2, "x"], "orientation": [1.0, 0.0, 0.0, 0.0]},
    {"position": [0.1, 0.2, 0.3], "orientation": [1.0, 0.0, 0.0, 0.0], "quality": 2.0},
    {"position": [0.1, 0.2, 0.3], "orientation": [1.0, 0.0, 0.0, 0.0], "extra": 1},
    {"position": [0.1, 0.2, 0.3]}, [0.1, 0.2, 0.3], "pose",
])
def test_a_bad_emulator_pose_is_refused_by_the_panel(pose: object) -> None:
    with pytest.raises(BadRequest):
        input_sample([0] * 8, [0.0] * 8, pose)
