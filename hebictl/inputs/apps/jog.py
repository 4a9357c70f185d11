"""Joystick jog from the axes: HEBI's ``kits/arms/joystick_control_sm.py`` layout, as velocities.

Axes and buttons as HEBI's ``joystick_control_sm.json``: the right joystick translates (A8 forward
x, A7 sideways −y, at up to :data:`LINEAR_SPEED` m/s), B6 ⇧ / B8 ⇩ move up and down
(:data:`VERTICAL_SPEED` m/s), B1 homes, B4 quits; the end effector keeps its orientation. Each fresh
sample moves the Cartesian target by velocity × the time since the last sample (at most the
command lifetime: a gap never turns into a jump) and sets a one-waypoint goal ``delay_time`` ahead
(``user_data.delay_time``, default :data:`DELAY`) through :class:`~hebictl.inputs.guard.PoseGate`; a refused
target is not kept (the next sample starts from the last admitted one).

HEBI's example re-solves from the commanded position each sample; this one integrates a target,
so a held joystick runs at a steady speed whatever the sample rate. A stale link holds; after a
reconnect B1 (home) re-arms and homes first, so jogging resumes from a known pose.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.inputs.apps.base import App, Transition, config_number, config_vector
from hebictl.inputs.guard import Frame

HOMING, TELEOP, PAUSED, DISCONNECTED, EXIT = "homing", "teleop", "paused", "disconnected", "exit"
#: [m/s] full joystick deflection (HEBI's example: 0.25 x the axis)
LINEAR_SPEED = 0.25
#: [m/s] while B6 or B8 is held (HEBI's example: 0.1)
VERTICAL_SPEED = 0.1
#: [s] the goal's lead when the config gives no ``delay_time``
DELAY = 0.25

TABLE: dict[tuple[str, str], Transition] = {
    (HOMING, "at_home"): (TELEOP, "anchor"),
    (TELEOP, "home"): (HOMING, "home"),
    (PAUSED, "home"): (HOMING, "home"),
    (DISCONNECTED, "home"): (HOMING, "home"),
    (TELEOP, "sample"): (TELEOP, "jog"),
    **{(s, "quit"): (EXIT, "finish") for s in (HOMING, TELEOP, PAUSED, DISCONNECTED)},
    **{(s, "stale"): (PAUSED, "hold") for s in (HOMING, TELEOP)},
    **{(s, "timeout"): (DISCONNECTED, "hold") for s in (HOMING, TELEOP, PAUSED)},
}


class JogApp(App):
    name = "jog"
    ENABLE = 1
    QUIT = 4
    BUTTONS = ((4, 1, "quit"), (1, 1, "home"))
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = TABLE
    INITIAL = HOMING
    LED: ClassVar[dict[str, str]] = {HOMING: "yellow", TELEOP: "green", PAUSED: "yellow", DISCONNECTED: "red",
                                     EXIT: "transparent"}
    TEXT = "Home - B1\nQuit - B4\nTranslate - right joystick\nUp/Down - B6/B8"

    def __init__(self, arm: Any, gate: Any, user_data: dict[str, Any] | None = None, *,
                 lifetime: float = 0.25) -> None:
        super().__init__(arm, gate, user_data)
        self.home = config_vector(self.user_data, "home_position", arm.dof)
        self.delay = config_number(self.user_data, "delay_time", DELAY)
        self.lifetime = lifetime
        self.xyz: FloatArray = np.zeros(3)
        self.rot: FloatArray = np.eye(3)
        self.last_t: float | None = None

    def start(self) -> None:
        self.go_to(self.home, None)

    def cycle_events(self, frame: Frame) -> list[str]:
        out = []
        if self.state == HOMING and self.arm.at_goal:
            out.append("at_home")
        if frame.fresh and frame.armed:
            out.append("sample")
        return out

    def do_home(self, frame: Frame) -> bool:
        return self.go_to(self.home, None)

    def do_anchor(self, frame: Frame) -> None:
        pose = self.arm.model.end_effector(self.arm.last_feedback.position)
        self.xyz, self.rot = pose[:3, 3].copy(), pose[:3, :3].copy()
        self.last_t = None

    def velocity(self, frame: Frame) -> FloatArray:
        """[m/s] of this sample (HEBI's joystick mapping, module docstring)."""
        s = frame.state
        assert s is not None
        a7, a8 = (x if np.isfinite(x) else 0.0 for x in (s.axis(7), s.axis(8)))
        vz = VERTICAL_SPEED if s.button(6) else (-VERTICAL_SPEED if s.button(8) else 0.0)
        return np.array([LINEAR_SPEED * a8, -LINEAR_SPEED * a7, vz])

    def do_jog(self, frame: Frame) -> None:
        dt = 0.0 if self.last_t is None else min(frame.now - self.last_t, self.lifetime)
        self.last_t = frame.now
        v = self.velocity(frame)
        if not np.any(v) or dt <= 0.0:
            return
        target = self.xyz + v * dt
        if self.gate.goal(target, self.rot, self.arm.last_feedback.position, self.delay):
            self.xyz = target
