"""Safety states of an arm and the checks that move it between them.

The arm is always in one :class:`ArmState`. Faults never raise out of the control loop (an
exception there would leave the modules with whatever they were last told); they move the
arm into a defined safe state within the same cycle and record a :class:`SafetyEvent`:

* ``HOLD``: command the hold position with zero velocity and gravity compensation computed
  from the model at that position (valid even without feedback). Used for NaN or frozen
  feedback, a missed feedback sample, limit violations and operator stops.
* ``STOPPED``: command nothing (NaN), so the modules stop driving once their command lifetime
  expires. Used when the watchdog expires (no fresh feedback for ``watchdog_timeout``) and on
  e-stop, which is latched until :meth:`Arm.clear_fault`.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger("hebictl.safety")


class ArmState(StrEnum):
    RUNNING = "running"    # following the goal (or idle, commanding nothing)
    HOLD = "hold"          # holding a position after a fault or stop
    STOPPED = "stopped"    # commanding nothing; latched until clear_fault()


@dataclass(frozen=True)
class SafetyEvent:
    """One fault or state change, kept so nothing is lost between log reads."""

    time: float          # s, arm clock
    kind: str            # e.g. "feedback_lost", "feedback_nan", "position_limit", "watchdog", "estop"
    state: ArmState      # state the arm entered
    detail: str


class EventLog:
    """Bounded record of safety events (also sent to the ``hebictl.safety`` logger)."""

    def __init__(self, maxlen: int = 1000) -> None:
        self.events: deque[SafetyEvent] = deque(maxlen=maxlen)
        self.dropped = 0

    def record(self, time: float, kind: str, state: ArmState, detail: str) -> SafetyEvent:
        if len(self.events) == self.events.maxlen:
            self.dropped += 1
        ev = SafetyEvent(time, kind, state, detail)
        self.events.append(ev)
        log.warning("t=%.4f %s -> %s: %s", time, kind, state.value, detail)
        return ev

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    @property
    def last(self) -> SafetyEvent | None:
        return self.events[-1] if self.events else None


@dataclass
class Limits:
    """Joint limits [rad or m, rad/s or m/s, N·m or N]; ±inf where unlimited."""

    position_min: NDArray[np.float64]
    position_max: NDArray[np.float64]
    velocity_max: NDArray[np.float64]
    effort_max: NDArray[np.float64]
    position_tolerance: float = 0.02   # rad past a limit in feedback before it is a fault

    def clamp_command(self, position: NDArray[np.float64], velocity: NDArray[np.float64],
                      effort: NDArray[np.float64]) -> None:
        """Clamp a command in place to the limits; NaN (not commanded) stays NaN."""
        # np.minimum/np.maximum propagate NaN and cost a fraction of np.clip's wrapper
        if self._bounded:
            np.minimum(position, self.position_max, out=position)
            np.maximum(position, self.position_min, out=position)
        np.minimum(velocity, self.velocity_max, out=velocity)
        np.maximum(velocity, self._velocity_min, out=velocity)
        np.minimum(effort, self.effort_max, out=effort)
        np.maximum(effort, self._effort_min, out=effort)

    def __post_init__(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Recompute derived bounds after editing the limit arrays in place."""
        self._velocity_min = -self.velocity_max
        self._effort_min = -self.effort_max
        self._pos_lo = self.position_min - self.position_tolerance
        self._pos_hi = self.position_max + self.position_tolerance
        self._bounded = bool(np.isfinite(self.position_min).any() or np.isfinite(self.position_max).any())

    def position_violation(self, position: NDArray[np.float64]) -> int:
        """Index of the first joint beyond its limit by more than the tolerance, else -1."""
        if not self._bounded:
            return -1
        bad = (position < self._pos_lo) | (position > self._pos_hi)
        return int(np.argmax(bad)) if bad.any() else -1
