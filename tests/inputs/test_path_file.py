"""The saved-path format: round trip, the goal it plays, and bounded reading with file and key."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebictl.errors import ConfigError
from hebictl.inputs.path_file import MAX_PATH_BYTES, TaughtPath, Waypoint, goal_of, load_path, save_path

NAMES = ("a", "b", "c")


def _path():
    return TaughtPath(NAMES, (Waypoint("stop", 2.0, np.array([0.1, 0.2, 0.3]), np.zeros(3)),
                              Waypoint("flow", 1.5, np.array([0.4, 0.5, 0.6]), None),
                              Waypoint("flow", 1.0, np.array([0.7, 0.8, 0.9]), None)))


def test_round_trip_and_the_goal_it_plays(tmp_path):
    f = save_path(_path(), tmp_path / "p.json")
    back = load_path(f, NAMES)
    assert back.joint_names == NAMES and [w.kind for w in back.waypoints] == ["stop", "flow", "flow"]
    assert np.array_equal(back.waypoints[1].position, [0.4, 0.5, 0.6]) and back.waypoints[1].velocity is None
    goal = goal_of(back, 3)
    assert goal.times == [2.0, 3.5, 4.5]  # HEBI adds each segment's time
    assert np.all(goal.velocities[0] == 0) and np.all(np.isnan(goal.velocities[1]))
    assert np.all(goal.velocities[2] == 0)  # a path always ends at rest


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.update(format="csv"), "format"),
    (lambda d: d.update(joint_names=["x", "y", "z"]), "joint_names"),
    (lambda d: d["waypoints"][1].update(kind="glide"), "waypoints[1].kind"),
    (lambda d: d["waypoints"][0].update(time=0), "waypoints[0].time"),
    (lambda d: d["waypoints"][2].update(position=[1, 2]), "waypoints[2].position"),
    (lambda d: d["waypoints"][0].update(velocity=[0.1, 0, 0]), "waypoints[0].velocity"),
    (lambda d: d["waypoints"][1].update(velocity=[0, 0, 0]), "waypoints[1].velocity"),
    (lambda d: d.update(extra=1), "extra"),
])
def test_bad_files_name_the_file_and_key(tmp_path, edit, key):
    data = _path().to_json()
    edit(data)
    f = tmp_path / "p.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as info:
        load_path(f, NAMES)
    assert info.value.key == key and info.value.file == str(f), info.value
    print(info.value)


def test_not_json_names_the_line_and_oversize_is_refused_unread(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"format": "hebictl-path",\n "version": NaN}')
    with pytest.raises(ConfigError, match=r"p\.json"):
        load_path(f)
    f.write_text('{"format":\n\n ]')
    with pytest.raises(ConfigError) as info:
        load_path(f)
    assert info.value.line == 3
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_PATH_BYTES + 1))
    with pytest.raises(ConfigError, match=r"big\.json"):
        load_path(big)
