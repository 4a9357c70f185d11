"""Browser messages are checked field by field (a NaN jog direction never becomes a jog), and the
shortest goal duration the panel offers is the one hebi-py's own minimum-jerk trajectory needs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.panel.commands import BadRequest, jog_direction, min_duration, offered_duration, parse


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
