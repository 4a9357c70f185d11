"""AR teleop: HEBI's ``kits/arms/ex_AR_kit.py`` on hebictl's arm, from the same config keys.

The phone's AR pose drives the end effector. B3 stores the phone's pose as the baseline
(``p0``, ``R_phone0``); every fresh sample then gives, exactly as the example computes it::

    xyz_target = xyz_home + R_phone0ᵀ · (xyz_scale ⊙ (p − p0))
    R_target   = R_phone0ᵀ · R_phone · R_home

where ``xyz_home``/``R_home`` are the end effector's pose at ``user_data.home_position``. The target
becomes a one-waypoint goal ``delay_time`` ahead (``user_data.delay_time``, HEBI's 0.5 s; IK seeded
with the measured position as ``arm.ik_target_xyz_so3`` is) through :class:`~hebictl.inputs.guard.PoseGate`:
Cartesian limits, IK within the joint limits, collision, then ``Arm.set_goal``. A refused target
leaves the arm on the last admitted one.

Buttons (HEBI's ``ex_AR_kit.json`` layout): B1 🏠 home, B3 📲 AR control, B6 🌍 gravity
compensation (pressed again: hold where it is), B8 ❌ quit. LED: yellow waiting, green AR, blue
gravity compensation, red disconnected (HEBI's colours). More than 1.0 s without a sample:
DISCONNECTED (hold); a stale link (no sample within the command lifetime) holds at once.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.inputs.apps.base import App, Transition, config_number, config_vector
from hebictl.inputs.guard import Frame

SOFTSTART, WAITING, AR, GRAVCOMP, DISCONNECTED, EXIT = "softstart", "waiting", "ar", "gravcomp", "disconnected", "exit"
_ACTIVE = (WAITING, AR, GRAVCOMP)

#: (state, event) -> (next state, action): the whole machine
TABLE: dict[tuple[str, str], Transition] = {
    (SOFTSTART, "at_home"): (WAITING, "none"),
    (SOFTSTART, "quit"): (EXIT, "finish"),
    **{(s, "quit"): (EXIT, "finish") for s in (*_ACTIVE, DISCONNECTED)},
    **{(s, "home"): (WAITING, "home") for s in _ACTIVE},
    (WAITING, "ar"): (AR, "baseline"),
    (GRAVCOMP, "ar"): (AR, "baseline"),
    (WAITING, "gravcomp"): (GRAVCOMP, "gravcomp"),
    (AR, "gravcomp"): (GRAVCOMP, "gravcomp"),
    (GRAVCOMP, "gravcomp"): (WAITING, "hold"),
    **{(s, "stale"): (WAITING, "hold") for s in _ACTIVE},
    **{(s, "timeout"): (DISCONNECTED, "hold") for s in (SOFTSTART, *_ACTIVE)},
    (DISCONNECTED, "reconnect"): (WAITING, "none"),
    (AR, "sample"): (AR, "track"),
}


class ArApp(App):
    name = "ar"
    ENABLE = 3
    QUIT = 8
    BUTTONS = ((8, 1, "quit"), (1, 1, "home"), (3, 1, "ar"), (6, 1, "gravcomp"))
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = TABLE
    INITIAL = SOFTSTART
    LED: ClassVar[dict[str, str]] = {SOFTSTART: "yellow", WAITING: "yellow", AR: "green", GRAVCOMP: "blue",
                                     DISCONNECTED: "red", EXIT: "transparent"}
    TEXT = "AR KIT EXAMPLE\n\n🏠 - Home\n📲 - AR Control\n🌍 - Grav Comp\n❌ - Quit"

    def __init__(self, arm: Any, gate: Any, user_data: dict[str, Any] | None = None) -> None:
        super().__init__(arm, gate, user_data)
        ud = self.user_data
        self.home = config_vector(ud, "home_position", arm.dof)
        self.delay = config_number(ud, "delay_time", 0.5)
        self.xyz_scale = config_vector(ud, "xyz_scale", 3) if "xyz_scale" in ud else np.ones(3)
        self.homing = config_number(ud, "homing_duration", 0.0) or None
        pose = arm.model.end_effector(self.home)
        self.xyz_home: FloatArray = pose[:3, 3].copy()
        self.rot_home: FloatArray = pose[:3, :3].copy()
        self.p0: FloatArray | None = None
        self.r0: FloatArray | None = None
        #: every target computed: (arm time, xyz_target, R_target, admitted)
        self.targets: list[tuple[float, FloatArray, FloatArray, bool]] = []

    def start(self) -> None:
        if not self.go_to(self.home, self.homing):
            self.note("the soft start to home_position was refused; holding")

    def cycle_events(self, frame: Frame) -> list[str]:
        out = []
        if self.state == SOFTSTART and self.arm.at_goal:
            out.append("at_home")
        if frame.fresh and frame.armed:
            out.append("sample")
        return out

    def do_home(self, frame: Frame) -> bool:
        return self.go_to(self.home, self.homing)

    def do_baseline(self, frame: Frame) -> bool:
        state = frame.state
        if state is None or not state.has_pose:
            self.note("AR control needs the phone's AR pose; this input has none")
            return False
        self.p0, self.r0 = state.position_array(), state.rotation()
        return True

    def do_track(self, frame: Frame) -> None:
        state = frame.state
        if state is None or not state.has_pose or self.p0 is None or self.r0 is None:
            return
        xyz, rot = self.target(state.position_array(), state.rotation())
        ok = self.gate.goal(xyz, rot, self.arm.last_feedback.position, self.delay)
        self.targets.append((frame.now, xyz, rot, ok))

    def target(self, p: FloatArray, rot_phone: FloatArray) -> tuple[FloatArray, FloatArray]:
        """HEBI's mapping (module docstring) from the stored baseline."""
        assert self.p0 is not None and self.r0 is not None
        xyz = self.xyz_home + self.r0.T @ (self.xyz_scale * (p - self.p0))
        return xyz, self.r0.T @ rot_phone @ self.rot_home

