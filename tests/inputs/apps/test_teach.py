"""Teach and repeat on the sim: a path taught with scripted presses (the operator's hand emulated by
moving the arm between them) is saved, loaded and replayed twice, passing through its waypoints."""

from __future__ import annotations

import numpy as np

from hebictl.control.goal import Goal
from hebictl.inputs.path_file import load_path
from hebictl.inputs.runner import make_app, run_app
from hebictl.inputs.sources import TimedSource
from tests.inputs.rig import home_arm, script

#: [rad] a stop waypoint is passed within this (measured joint position at the waypoint's planned time)
STOP_BOUND = 0.02
#: [rad] a flow waypoint is passed within this (closest measured position to it along the replay)
FLOW_BOUND = 0.05


def test_taught_path_is_saved_loaded_and_replayed_twice(tmp_path):
    arm = home_arm("x-series-6dof", base_travel_time=2.0, min_travel_time=0.5)
    home = np.asarray(arm.user_data["home_position"], dtype=float)
    poses = [home + np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0]), home + np.array([-0.3, -0.1, 0.0, 0.0, 0.2, 0.0]),
             home + np.array([0.0, 0.1, -0.1, 0.0, 0.0, 0.3])]  # clear of the table and the arm itself
    # the hand moves the arm to pose k during [2.5k + 0.2, 2.5k + 1.8] s; B1 (stop) or B2 (flow) at 2.5k + 2.1
    presses = {2.1: 1, 4.6: 2, 7.1: 1, 7.8: 3, 8.6: 8}
    app = make_app("teach", arm, path_file=tmp_path / "taught.json")
    source = TimedSource(script(9.0, presses, None))
    hand = {"k": 0}

    def hand_of_the_operator(a, frame):
        k = hand["k"]
        if k < len(poses) and app.state == "training" and frame.now >= 2.5 * k + 0.2 + (source.started_at or 0):
            a.set_idle("hold")
            a.set_goal(Goal(a.dof).add_waypoint(t=1.4, position=poses[k]))
            hand["k"] += 1
        elif a.at_goal and app.state == "training":
            a.cancel_goal()  # let go: gravity compensation again (the app's idle)
            a.set_idle("gravcomp")

    result = run_app(arm, app, source, on_cycle=hand_of_the_operator, duration=12.0)
    assert [w.kind for w in app.waypoints] == ["stop", "flow", "stop"], result.notes
    taught = np.array([w.position for w in app.waypoints])
    print("taught waypoints' distance from the hand's poses [rad]:", np.abs(taught - np.array(poses)).max())
    assert np.abs(taught - np.array(poses)).max() < 0.02
    path = load_path(tmp_path / "taught.json", arm.model.joint_names)
    assert np.array_equal(np.array([w.position for w in path.waypoints]), taught)
    arm.close()

    # replay twice on a fresh sim arm from home
    arm2 = home_arm("x-series-6dof")
    player = make_app("repeat", arm2, path_file=tmp_path / "taught.json", loops=2)
    trace: list[tuple[float, np.ndarray]] = []
    run_app(arm2, player, TimedSource([]), on_cycle=lambda a, f: trace.append((f.now, a.backend.true_state()[0])),
            duration=40.0)
    assert player.plays == 2 and player.state == "exit", player.notes
    times = np.array([t for t, _ in trace])
    q = np.array([x for _, x in trace])
    worst_stop = worst_flow = 0.0
    for start in player.starts:
        t = start
        for w in path.waypoints:
            t += w.time
            i = int(np.argmin(np.abs(times - t)))
            if w.kind == "stop" or w is path.waypoints[-1]:
                worst_stop = max(worst_stop, float(np.max(np.abs(q[i] - w.position))))
            else:
                window = (times > t - w.time) & (times < t + path.waypoints[-1].time)
                worst_flow = max(worst_flow, float(np.min(np.max(np.abs(q[window] - w.position), axis=1))))
    print(f"replayed twice: stop waypoints passed within {worst_stop * 1000:.2f} mrad (bound "
          f"{STOP_BOUND * 1000:.0f}), flow waypoints within {worst_flow * 1000:.2f} mrad "
          f"(bound {FLOW_BOUND * 1000:.0f})")
    assert worst_stop <= STOP_BOUND and worst_flow <= FLOW_BOUND
