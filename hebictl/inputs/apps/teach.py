"""Teach and repeat: HEBI's ``kits/arms/ex_teach_repeat.py``, with a saved path.

Training is hand-guiding (gravity compensation only, as hebi-py's arm without a goal). Buttons
(HEBI's ``ex_teach_repeat.json``): B1 📌 add a stop waypoint (the measured position, zero
velocity), B2 🚏 add a flow waypoint (free velocity: the path passes through without stopping),
B3 🔄 training ⇄ playback (at least two waypoints), B4 🗑️ clear, B8 ❌ quit; slider A3 ⏱️ sets each
new segment's time: ``base_travel_time + A3 · (base_travel_time − min_travel_time)``. Playback sets
the path as one goal (cumulative times, through ``Arm.set_goal``'s admission) and sets it again
each time the arm is at its goal, so it repeats until B3. With ``path_file`` the path is saved
(:mod:`hebictl.inputs.path_file`) when playback starts and on quit.

:class:`RepeatApp` plays a saved path ``loops`` times (``hebictl app repeat CONFIG --path FILE``).

A stale link pauses (hold); B3 then resumes training. LED: blue training, green playback (HEBI's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hebictl.errors import CommandRejected
from hebictl.inputs.apps.base import App, Transition, config_number
from hebictl.inputs.guard import Frame
from hebictl.inputs.path_file import TaughtPath, Waypoint, goal_of, save_path

TRAINING, PLAYBACK, PAUSED, EXIT = "training", "playback", "paused", "exit"

TABLE: dict[tuple[str, str], Transition] = {
    (TRAINING, "stop_waypoint"): (TRAINING, "add_stop"),
    (TRAINING, "flow_waypoint"): (TRAINING, "add_flow"),
    (TRAINING, "toggle"): (PLAYBACK, "play"),
    (TRAINING, "clear"): (TRAINING, "clear"),
    (PLAYBACK, "toggle"): (TRAINING, "train"),
    (PLAYBACK, "at_goal"): (PLAYBACK, "again"),
    (PAUSED, "toggle"): (TRAINING, "train"),
    **{(s, "quit"): (EXIT, "finish") for s in (TRAINING, PLAYBACK, PAUSED)},
    **{(s, "stale"): (PAUSED, "hold") for s in (TRAINING, PLAYBACK)},
}


class TeachApp(App):
    name = "teach"
    ENABLE = 3
    QUIT = 8
    BUTTONS = ((8, 1, "quit"), (1, 1, "stop_waypoint"), (2, 1, "flow_waypoint"), (3, 1, "toggle"), (4, 1, "clear"))
    ONE_BUTTON = False  # the example checks every button each sample
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = TABLE
    INITIAL = TRAINING
    LED: ClassVar[dict[str, str]] = {TRAINING: "blue", PLAYBACK: "green", PAUSED: "yellow", EXIT: "transparent"}
    TEXT = ("📌 - Add waypoint (stop)\n🚏 - Add waypoint (flow)\n🔄 - Toggle training/playback\n"
            "🗑️ - Clear waypoints\n⏱️ - Up/down for longer/shorter time to waypoint\n❌ - Quit")

    def __init__(self, arm: Any, gate: Any, user_data: dict[str, Any] | None = None, *,
                 path_file: str | Path | None = None) -> None:
        super().__init__(arm, gate, user_data)
        self.base_time = config_number(self.user_data, "base_travel_time", 3.0)
        self.min_time = config_number(self.user_data, "min_travel_time", 0.5)
        self.path_file = Path(path_file) if path_file is not None else None
        self.waypoints: list[Waypoint] = []
        self.plays = 0
        self.slider = 0.0

    def start(self) -> None:
        self.do_gravcomp(None)  # type: ignore[arg-type]  # the action reads no frame

    def step(self, frame: Frame) -> None:
        if frame.fresh and frame.state is not None:
            a3 = frame.state.axis(3)
            self.slider = a3 if np.isfinite(a3) else 0.0
        super().step(frame)

    def cycle_events(self, frame: Frame) -> list[str]:
        return ["at_goal"] if self.state == PLAYBACK and self.arm.at_goal else []

    @property
    def path(self) -> TaughtPath:
        return TaughtPath(tuple(self.arm.model.joint_names), tuple(self.waypoints))

    def _segment_time(self) -> float:
        return self.base_time + self.slider * (self.base_time - self.min_time)

    def do_add_stop(self, frame: Frame) -> None:
        q = self.arm.last_feedback.position.copy()
        self.waypoints.append(Waypoint("stop", self._segment_time(), q, np.zeros(self.arm.dof)))
        self.note(f"stop waypoint {len(self.waypoints)} added")

    def do_add_flow(self, frame: Frame) -> None:
        q = self.arm.last_feedback.position.copy()
        self.waypoints.append(Waypoint("flow", self._segment_time(), q, None))
        self.note(f"flow waypoint {len(self.waypoints)} added")

    def do_clear(self, frame: Frame) -> None:
        self.waypoints.clear()
        self.note("waypoints cleared")

    def do_play(self, frame: Frame) -> bool:
        if len(self.waypoints) < 2:
            self.note("at least two waypoints are needed")
            return False
        self.save()
        return self.do_again(frame)

    def do_again(self, frame: Frame) -> bool:
        self.arm.set_idle("hold")
        try:
            self.arm.set_goal(goal_of(self.path, self.arm.dof))
        except CommandRejected as exc:
            self.note(f"playback refused: {exc}")
            self.do_gravcomp(frame)
            return False
        self.plays += 1
        return True

    def do_train(self, frame: Frame) -> None:
        self.do_gravcomp(frame)

    def do_finish(self, frame: Frame) -> None:
        self.save()
        super().do_finish(frame)

    def save(self) -> None:
        if self.path_file is not None and self.waypoints:
            save_path(self.path, self.path_file)
            self.note(f"path of {len(self.waypoints)} waypoints saved to {self.path_file}")


REPEAT_TABLE: dict[tuple[str, str], Transition] = {
    (PLAYBACK, "at_goal"): (PLAYBACK, "again"),
    (PLAYBACK, "played"): (EXIT, "finish"),
    (PLAYBACK, "quit"): (EXIT, "finish"),
    (PLAYBACK, "stale"): (PAUSED, "hold"),
    (PAUSED, "toggle"): (PLAYBACK, "again"),
    (PAUSED, "quit"): (EXIT, "finish"),
}


class RepeatApp(App):
    """Plays a saved path ``loops`` times (B3 resumes after a stale pause, B8 quits)."""

    name = "repeat"
    ENABLE = 3
    QUIT = 8
    BUTTONS = ((8, 1, "quit"), (3, 1, "toggle"))
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = REPEAT_TABLE
    INITIAL = PLAYBACK
    LED: ClassVar[dict[str, str]] = {PLAYBACK: "green", PAUSED: "yellow", EXIT: "transparent"}
    TEXT = "🔄 - Resume after a pause\n❌ - Quit"

    def __init__(self, arm: Any, gate: Any, user_data: dict[str, Any] | None = None, *,
                 path: TaughtPath, loops: int = 1) -> None:
        super().__init__(arm, gate, user_data)
        self.path = path
        self.loops = int(loops)
        self.plays = 0
        #: (arm time, waypoint index) at each waypoint's planned time, for the tests' bound
        self.starts: list[float] = []

    def start(self) -> None:
        if not self.do_again(None):  # type: ignore[arg-type]  # the action reads no frame
            self.done = True

    def cycle_events(self, frame: Frame) -> list[str]:
        if self.state == PLAYBACK and self.arm.at_goal:
            return ["played"] if self.plays >= self.loops else ["at_goal"]
        return []

    def do_again(self, frame: Frame) -> bool:
        self.arm.set_idle("hold")
        try:
            self.arm.set_goal(goal_of(self.path, self.arm.dof))
        except CommandRejected as exc:
            self.note(f"playback refused: {exc}")
            return False
        self.plays += 1
        self.starts.append(self.arm.clock.now())
        return True
