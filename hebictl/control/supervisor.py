"""The arm's motion state (mode value, latch level, latch, pending stop) and the one table that says
which mode may follow which.

Why a table: the Arm used to keep its mode in nine fields (trajectory, hold position, brake, stop
behaviour, state, ...) whose combinations were the mode; every fix in that area was about two of
them disagreeing. Here the mode is one value, every change goes through :meth:`Supervisor.fire`,
and a change the table does not list raises :class:`IllegalTransition` (a bug in the caller, never
a fault of the robot). ``docs/supervisor.md`` is generated from these tables
(:func:`markdown`) and a test checks it against them.

Two values describe the arm:

* :class:`Mode`, what is commanded: ``follow`` (a trajectory), ``jog`` (a streamed velocity),
  ``brake`` (the brake ramp from the
  measured velocity to standstill), ``hold`` (a position at standstill under gravity compensation),
  ``damp`` (gravity compensation and joint damping, no position), ``gravcomp`` (idle hand-guiding:
  plugin efforts only) and ``release`` (nothing: a brakeless arm falls);
* :class:`~hebictl.control.safety.ArmState`, the latch level the public API always had:
  ``running``, ``hold`` (after a fault or an operator hold; a goal leaves it) and ``stopped``
  (latched until ``clear_fault()``, with its cause and requested :class:`StopBehaviour` in
  :class:`Latch`).

The mode is held as a value (:mod:`hebictl.control.modes`) that carries its own data: firing a
trigger replaces it, so no data of an earlier mode survives. Besides it the supervisor keeps the rest
of the arm's motion state: the stop waiting for a brake to end (:attr:`Supervisor.pending`, set only
through :meth:`Supervisor.brake_then`), how the next fresh sample re-anchors a hold or brake
(:class:`Resync`), the recovery range of joints outside their limits and the idle behaviour
(:class:`IdleBehaviour`).

The rules the Arm applies on top of the table (where the *positions* come from) are in the Arm:
every entry into a mode starts from the measured state; see ``docs/supervisor.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hebictl._typing import FloatArray
from hebictl.control.modes import Mode, MotionMode, at_rest
from hebictl.control.modes.kinds import IdleBehaviour, Resync, Trigger
from hebictl.control.safety import ArmState, StopBehaviour
from hebictl.errors import HebictlError

__all__ = ["ALLOWED_MODES", "LEVEL_TABLE", "MODE_TABLE", "IdleBehaviour", "IllegalTransition", "Latch", "Level",
           "Mode", "Resync", "Supervisor", "Trigger", "markdown"]


class IllegalTransition(HebictlError):
    """The Arm asked for a mode change the supervisor's table does not allow (a bug, not a fault)."""


class Level(StrEnum):
    """What changes the latch level (:class:`ArmState`)."""

    GOAL = "goal"    # a goal accepted
    HOLD = "hold"    # hold() or a fault that holds
    STOP = "stop"    # stop(): latched
    CLEAR = "clear"  # clear_fault()


#: mode -> trigger -> next mode. A pair not listed is illegal. Note what is missing on purpose:
#: ``brake`` takes no ``damp``/``release``/``gravcomp``/``brake``-restart: a running brake is never
#: dropped or restarted by a later, weaker stop (the Arm keeps that stop pending until ``still``).
#: A jog, like a goal, may take over from a brake, but not from ``damp`` or ``release`` (latched
#: stops only), and a jog is never restarted (``jog`` -> ``jog``): its stream carries the new samples.
MODE_TABLE: dict[Mode, dict[Trigger, Mode]] = {
    Mode.FOLLOW: {Trigger.GOAL: Mode.FOLLOW, Trigger.JOG: Mode.JOG, Trigger.BRAKE: Mode.BRAKE,
                  Trigger.HOLD_AT: Mode.HOLD, Trigger.DAMP: Mode.DAMP, Trigger.GRAVCOMP: Mode.GRAVCOMP,
                  Trigger.RELEASE: Mode.RELEASE},
    Mode.JOG: {Trigger.GOAL: Mode.FOLLOW, Trigger.BRAKE: Mode.BRAKE, Trigger.HOLD_AT: Mode.HOLD,
               Trigger.DAMP: Mode.DAMP, Trigger.GRAVCOMP: Mode.GRAVCOMP, Trigger.RELEASE: Mode.RELEASE},
    Mode.BRAKE: {Trigger.GOAL: Mode.FOLLOW, Trigger.JOG: Mode.JOG, Trigger.HOLD_AT: Mode.HOLD,
                 Trigger.STILL: Mode.HOLD},
    Mode.HOLD: {Trigger.GOAL: Mode.FOLLOW, Trigger.JOG: Mode.JOG, Trigger.BRAKE: Mode.BRAKE,
                Trigger.HOLD_AT: Mode.HOLD, Trigger.DAMP: Mode.DAMP, Trigger.GRAVCOMP: Mode.GRAVCOMP,
                Trigger.RELEASE: Mode.RELEASE},
    Mode.DAMP: {Trigger.BRAKE: Mode.BRAKE, Trigger.HOLD_AT: Mode.HOLD, Trigger.DAMP: Mode.DAMP,
                Trigger.RELEASE: Mode.RELEASE},
    Mode.GRAVCOMP: {Trigger.GOAL: Mode.FOLLOW, Trigger.JOG: Mode.JOG, Trigger.BRAKE: Mode.BRAKE,
                    Trigger.HOLD_AT: Mode.HOLD, Trigger.DAMP: Mode.DAMP, Trigger.GRAVCOMP: Mode.GRAVCOMP,
                    Trigger.RELEASE: Mode.RELEASE},
    Mode.RELEASE: {Trigger.BRAKE: Mode.BRAKE, Trigger.HOLD_AT: Mode.HOLD, Trigger.DAMP: Mode.DAMP,
                   Trigger.RELEASE: Mode.RELEASE},
}

#: latch level -> action -> next level. ``stopped`` is left only by ``clear``; hold() while stopped
#: and a goal while stopped are refused by the Arm before they get here.
LEVEL_TABLE: dict[ArmState, dict[Level, ArmState]] = {
    ArmState.RUNNING: {Level.GOAL: ArmState.RUNNING, Level.HOLD: ArmState.HOLD, Level.STOP: ArmState.STOPPED,
                       Level.CLEAR: ArmState.RUNNING},
    ArmState.HOLD: {Level.GOAL: ArmState.RUNNING, Level.HOLD: ArmState.HOLD, Level.STOP: ArmState.STOPPED,
                    Level.CLEAR: ArmState.RUNNING},
    ArmState.STOPPED: {Level.STOP: ArmState.STOPPED, Level.CLEAR: ArmState.RUNNING},
}

#: the modes each latch level may be in (the Arm never follows a goal or hand-guides while latched)
ALLOWED_MODES: dict[ArmState, frozenset[Mode]] = {
    ArmState.RUNNING: frozenset({Mode.FOLLOW, Mode.JOG, Mode.BRAKE, Mode.HOLD, Mode.GRAVCOMP}),
    ArmState.HOLD: frozenset({Mode.BRAKE, Mode.HOLD}),
    ArmState.STOPPED: frozenset({Mode.BRAKE, Mode.HOLD, Mode.DAMP, Mode.RELEASE}),
}


@dataclass(frozen=True)
class Latch:
    """A latched stop: its cause (an EventKind value), detail and the behaviour asked for."""

    cause: str
    detail: str
    behaviour: StopBehaviour


class Supervisor:
    """The arm's motion state; the mode changed only through the tables above."""

    __slots__ = ("_pending", "idle", "latch", "level", "motion", "recovery", "resync")

    def __init__(self, mode: Mode | MotionMode = Mode.HOLD, idle: IdleBehaviour = IdleBehaviour.HOLD) -> None:
        value = at_rest(mode) if isinstance(mode, Mode) else mode
        if value is None:
            raise IllegalTransition(f"mode {mode} cannot start without its data")
        #: the current mode's value (its data and sub-state: :mod:`hebictl.control.modes`)
        self.motion: MotionMode = value
        self.level = ArmState.RUNNING
        self.latch: Latch | None = None
        self._pending: Trigger | None = None
        #: how the next fresh sample re-anchors a hold or brake
        self.resync = Resync.NONE
        #: (low, high) range joints switched on (or fallen) outside their limits may move in, shrinking
        #: to the limits as they come back; None: every joint inside
        self.recovery: tuple[FloatArray, FloatArray] | None = None
        self.idle = idle

    @property
    def mode(self) -> Mode:
        """The current mode's name."""
        return self.motion.kind

    @property
    def pending(self) -> Trigger | None:
        """What the brake becomes once the arm is still (a damp or release stop asked for while braking)."""
        return self._pending

    def can(self, trigger: Trigger) -> bool:
        nxt = MODE_TABLE[self.mode].get(trigger)
        return nxt is not None and nxt in ALLOWED_MODES[self.level]

    def fire(self, trigger: Trigger, value: MotionMode | None = None) -> Mode:
        """Change the mode by ``trigger`` to ``value`` (default: the next mode without data, for the
        modes that need none); raises IllegalTransition when the table does not allow it or the
        value is not the table's next mode."""
        nxt = MODE_TABLE[self.mode].get(trigger)
        if nxt is None or nxt not in ALLOWED_MODES[self.level]:
            raise IllegalTransition(f"mode {self.mode.value} ({self.level.value}) does not take {trigger.value}")
        if value is None:
            value = at_rest(nxt)
        if value is None or value.kind is not nxt:
            raise IllegalTransition(f"{trigger.value} leads to {nxt.value}, which needs its own value")
        self.motion = value
        if nxt is not Mode.BRAKE:
            self._pending = None
        return nxt

    def restart_brake(self, value: MotionMode) -> None:
        """Replace a running brake's ramp (braking again from the measured state): its sub-state, not
        a change of mode (the table has no brake -> brake)."""
        if self.mode is not Mode.BRAKE or value.kind is not Mode.BRAKE:
            raise IllegalTransition(f"mode {self.mode.value} has no brake to restart")
        self.motion = value

    def brake_then(self, trigger: Trigger | None) -> None:
        """What the running brake becomes once the arm is still: ``damp`` or ``release`` (a weaker stop
        asked for while braking), or None (it ends in a hold)."""
        if trigger is not None and (self.mode is not Mode.BRAKE or trigger not in (Trigger.DAMP, Trigger.RELEASE)):
            raise IllegalTransition(f"mode {self.mode.value} cannot keep {trigger.value} for after a brake")
        self._pending = trigger

    def set_level(self, action: Level, latch: Latch | None = None) -> ArmState:
        """Change the latch level by ``action`` (``stop`` with its :class:`Latch`)."""
        nxt = LEVEL_TABLE[self.level].get(action)
        if nxt is None:
            raise IllegalTransition(f"state {self.level.value} does not take {action.value}")
        self.level = nxt
        self.latch = latch if nxt is ArmState.STOPPED else None
        return nxt

    def check(self) -> None:
        """Raise IllegalTransition if the mode is not allowed at the latch level (after a level change
        the Arm fires the mode trigger that makes them agree)."""
        if self.mode not in ALLOWED_MODES[self.level]:
            raise IllegalTransition(f"mode {self.mode.value} is not allowed while {self.level.value}")


def markdown() -> str:
    """The tables as Markdown (``docs/supervisor.md`` holds this text between its markers)."""
    triggers = list(Trigger)
    lines = ["| mode \\ trigger | " + " | ".join(t.value for t in triggers) + " |",
             "|---|" + "---|" * len(triggers)]
    for mode, row in MODE_TABLE.items():
        lines.append(f"| **{mode.value}** | " + " | ".join(row[t].value if t in row else "-" for t in triggers)
                     + " |")
    lines += ["", "| state \\ action | " + " | ".join(a.value for a in Level) + " | modes allowed |",
              "|---|" + "---|" * (len(Level) + 1)]
    for level, lrow in LEVEL_TABLE.items():
        allowed = ", ".join(m.value for m in Mode if m in ALLOWED_MODES[level])
        lines.append(f"| **{level.value}** | " + " | ".join(lrow[a].value if a in lrow else "-" for a in Level)
                     + f" | {allowed} |")
    return "\n".join(lines) + "\n"
