"""Gravity-compensation toggle: HEBI's ``kits/arms/ex_gravity_compensation_toggle.py``.

The arm has no goal (hand-guiding: plugin efforts only); the toggle button switches the config's
``GravityCompensationEffort`` plugin on and off (its ``enabled``, ramped over its ``ramp_time``), so
with it off the arm is limp and falls, as on HEBI's demo. Buttons as HEBI's
``ex_gravity_compensation_toggle.json`` labels them: B2 🌍 (a toggle button: down = on, up = off),
B1 ❌ quit. (The example's code reads B1 as the switch and B2 as quit, the opposite of its layout's
labels; hebictl follows the layout, which is what the phone shows.) LED blue with gravity
compensation on, green off. A stale link holds the arm where it is (position hold); the next B2
press after the reconnect resumes hand-guiding with gravity compensation on.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hebictl.errors import ConfigError
from hebictl.inputs.apps.base import App, Transition
from hebictl.inputs.guard import Frame

ON, OFF, PAUSED, EXIT = "gravcomp_on", "gravcomp_off", "paused", "exit"

TABLE: dict[tuple[str, str], Transition] = {
    (ON, "off"): (OFF, "disable"),
    (OFF, "on"): (ON, "enable"),
    (PAUSED, "on"): (ON, "resume"),
    **{(s, "quit"): (EXIT, "finish") for s in (ON, OFF, PAUSED)},
    **{(s, "stale"): (PAUSED, "hold") for s in (ON, OFF)},
}


class GravcompApp(App):
    name = "gravcomp"
    ENABLE = 2
    QUIT = 1
    BUTTONS = ((1, 1, "quit"), (2, 1, "on"), (2, -1, "off"))
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = TABLE
    INITIAL = OFF
    LED: ClassVar[dict[str, str]] = {ON: "blue", OFF: "green", PAUSED: "yellow", EXIT: "red"}
    TEXT = ("GRAVITY COMPENSATION EXAMPLE\n\n(On/Off) - Toggles gravity compensation on/off:\n"
            "        ON  - Enable gravity compensation\n        OFF - Disable gravity compensation\n\n"
            "(Quit) - Exits the demo")

    def __init__(self, arm: Any, gate: Any, user_data: dict[str, Any] | None = None) -> None:
        super().__init__(arm, gate, user_data)
        plugin = arm.plugin("GravityCompensationEffort")
        if plugin is None:
            raise ConfigError("the gravity-compensation toggle needs a GravityCompensationEffort plugin",
                              key="plugins")
        self.plugin = plugin
        self.state = ON if plugin.enabled else OFF

    def start(self) -> None:
        self.do_gravcomp(None)  # type: ignore[arg-type]  # the action reads no frame

    def do_enable(self, frame: Frame) -> None:
        self.plugin.enabled = True

    def do_disable(self, frame: Frame) -> None:
        self.plugin.enabled = False

    def do_resume(self, frame: Frame) -> None:
        self.plugin.enabled = True
        self.do_gravcomp(frame)
