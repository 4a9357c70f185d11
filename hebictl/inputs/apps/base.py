"""What the Mobile IO apps share: a transition table, the link events, and the arm's actions.

An app is an explicit state machine: ``TABLE[(state, event)] = (next state, action)``, nothing
else changes its state. Each control cycle :meth:`App.step` turns the guard's frame
(:class:`hebictl.inputs.guard.Frame`) into events, in this order, and fires each through the table
(an event the table does not list for the current state does nothing):

1. link events: ``stale`` (the guard marked the link stale this cycle: hold), ``timeout`` (no
   sample for more than :data:`DISCONNECT_AFTER`, HEBI's 1.0 s: DISCONNECTED), ``reconnect``
   (the first sample after that);
2. button events: the app's ``BUTTONS`` as (button, edge, event), in priority order (HEBI's
   examples check them in an ``if/elif`` chain: one per sample), or all of them (``ONE_BUTTON =
   False``, as ex_teach_repeat does);
3. the app's own events (``at_goal``, a fresh ``sample``) from :meth:`App.cycle_events`.

An action returns False to refuse its transition (e.g. playback with fewer than two waypoints): the
state stays. LED colours and the text line per state follow HEBI's examples (:data:`App.LED`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState
from hebictl.errors import CommandRejected, ConfigError
from hebictl.inputs.guard import Frame, PoseGate

if TYPE_CHECKING:
    from hebictl.control.arm import Arm

log = logging.getLogger(__name__)

#: [s] without a sample the apps go DISCONNECTED (HEBI's examples: ``t - last_mio_recv > 1.0``)
DISCONNECT_AFTER = 1.0

Transition = tuple[str, str]  # (next state, action name)


class App:
    """Base of the Mobile IO apps (see the module docstring)."""

    name: ClassVar[str] = ""
    #: the button whose press re-arms motion after a reconnect (the guard's enable)
    ENABLE: ClassVar[int] = 3
    QUIT: ClassVar[int] = 8
    #: (button 1..8, edge +1/-1, event) in priority order
    BUTTONS: ClassVar[tuple[tuple[int, int, str], ...]] = ()
    ONE_BUTTON: ClassVar[bool] = True
    TABLE: ClassVar[dict[tuple[str, str], Transition]] = {}
    INITIAL: ClassVar[str] = ""
    LED: ClassVar[dict[str, str]] = {}
    TEXT: ClassVar[str] = ""

    def __init__(self, arm: Arm, gate: PoseGate, user_data: dict[str, Any] | None = None) -> None:
        self.arm = arm
        self.gate = gate
        self.user_data = dict(user_data or {})
        self.state = self.INITIAL
        self.done = False
        self.start_time = arm.clock.now()
        self.last_sample_time: float | None = None
        self.history: list[tuple[float, str, str, str]] = []  # (time, event, from, to)
        self.notes: list[str] = []

    # ------------------------------------------------------------------ the machine
    @property
    def led(self) -> str | None:
        return self.LED.get(self.state)

    def start(self) -> None:
        """Called once before the first cycle (after the arm's first update)."""

    def step(self, frame: Frame) -> None:
        """One control cycle: fire this frame's events through the table."""
        for event in self.events(frame):
            if self.done:
                return
            self.fire(event, frame)

    def events(self, frame: Frame) -> list[str]:
        out: list[str] = []
        if frame.fresh:
            if self.last_sample_time is None or frame.came_back:
                out.append("reconnect")
            self.last_sample_time = frame.now
        else:
            if frame.went_stale:
                out.append("stale")
            since = frame.now - (self.last_sample_time if self.last_sample_time is not None else self.start_time)
            if since > DISCONNECT_AFTER:
                out.append("timeout")
        for button, edge, event in self.BUTTONS:
            if frame.edge(button) == edge:
                out.append(event)
                if self.ONE_BUTTON:
                    break
        out.extend(self.cycle_events(frame))
        return out

    def cycle_events(self, frame: Frame) -> list[str]:
        """The app's own events this cycle (after the link and button events)."""
        return []

    def fire(self, event: str, frame: Frame) -> None:
        move = self.TABLE.get((self.state, event))
        if move is None:
            return
        target, action = move
        run: Callable[[Frame], bool | None] = getattr(self, f"do_{action}")
        if run(frame) is False:
            return
        if target != self.state or event not in ("sample", "at_goal"):
            self.history.append((frame.now, event, self.state, target))
        self.state = target
        if target == "exit":
            self.done = True

    def note(self, text: str) -> None:
        log.info("%s: %s", self.name, text)
        self.notes.append(text)

    # ------------------------------------------------------------------ the arm's actions
    def do_none(self, frame: Frame) -> None:
        return None

    def do_hold(self, frame: Frame) -> None:
        """Brake from the measured velocity and hold where the arm stops (idle: hold); a hand-guided arm
        (gravity compensation, no position command to brake from) holds where it is measured."""
        guided = self.arm.idle != "hold"
        self.arm.set_idle("hold")
        position = self.arm.last_feedback.position.copy() if guided else None
        self.arm.hold(position, detail=f"{self.name}: input {self.state} -> hold")

    def do_finish(self, frame: Frame) -> None:
        self.do_hold(frame)

    def do_gravcomp(self, frame: Frame) -> None:
        """Hand-guiding: gravity compensation only, no position command (hebi-py's arm without a goal)."""
        arm = self.arm
        if arm.state is ArmState.HOLD:
            arm.clear_fault(f"{self.name}: gravity compensation")
        arm.set_idle("gravcomp")
        arm.cancel_goal()

    def go_to(self, position: Any, duration: float | None) -> bool:
        """A goal to ``position`` (``duration`` s, or timed by the arm's limits) through the admission."""
        self.arm.set_idle("hold")
        try:
            self.arm.set_goal(Goal(self.arm.dof).add_waypoint(t=duration, position=np.asarray(position, float)))
        except CommandRejected as exc:
            self.note(f"goal refused: {exc}")
            return False
        return True


def config_vector(ud: dict[str, Any], key: str, n: int) -> FloatArray:
    """``user_data[key]`` as ``n`` finite numbers (a ConfigError naming the key otherwise)."""
    v = ud.get(key)
    try:
        arr = np.asarray(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        arr = np.empty(0)
    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
        raise ConfigError(f"this app needs {n} finite numbers, got {v!r}"[:200], key=f"user_data.{key}")
    return arr


def config_number(ud: dict[str, Any], key: str, default: float) -> float:
    """``user_data[key]`` as a number >= 0, ``default`` when absent."""
    v = ud.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
        raise ConfigError(f"must be a number >= 0, got {v!r}"[:200], key=f"user_data.{key}")
    return float(v)
