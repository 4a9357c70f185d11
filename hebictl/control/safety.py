"""Safety states of an arm and the checks that move it between them.

The arm is always in one :class:`ArmState`. Faults never raise out of the control loop (an
exception there would leave the modules with whatever they were last told); they move the
arm into a defined safe state within the same cycle and record a :class:`SafetyEvent`:

* ``HOLD``: brake along the brake ramp (:mod:`hebictl.control.braking`) from the measured state
  (without a fresh sample: from the command the modules follow), then hold where the arm stopped
  with zero velocity and gravity compensation computed from the model at that position (valid
  even without feedback). Used for NaN feedback, feedback missed (or frozen) for more than
  ``missed_feedback_limit`` cycles, a joint beyond its limit (held at the measured position put
  back inside the limits), a module's own limit acting, monitors whose reaction is ``hold``, and
  operator holds. The modes behind these levels: :mod:`hebictl.control.supervisor`.
* ``STOPPED``: a latched stop (until :meth:`Arm.clear_fault`) that does what its
  :class:`StopBehaviour` says. X- and R-series modules have no brakes, so the default is
  ``HOLD`` (brake, then hold under gravity compensation, also when feedback is lost: the modules
  run their own position loop); commanding nothing (``RELEASE``) lets the arm fall once the
  command lifetime ends and is done only on explicit request. Used for e-stops, the watchdog
  (no fresh feedback for ``watchdog_timeout``), hardware errors and interrupts.

Event kinds are the :class:`EventKind` enum; their string values are what logs and MQTT show.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from hebictl.control import cycle_kernels

log = logging.getLogger("hebictl.safety")


class ArmState(StrEnum):
    RUNNING = "running"    # following the goal (or idle, commanding nothing)
    HOLD = "hold"          # holding a position after a fault or stop
    STOPPED = "stopped"    # latched stop (see StopBehaviour) until clear_fault()


class StopBehaviour(StrEnum):
    """What a latched stop commands. Strings are the config's ``user_data.safety.stop_behaviour``."""

    HOLD = "hold"        # brake within rated deceleration, then hold position + gravity compensation
    DAMP = "damp"        # gravity compensation + joint damping, no position target (can be pushed)
    RELEASE = "release"  # command nothing: a brakeless arm falls once the command lifetime ends


class Reaction(StrEnum):
    """What a monitor's finding does (:meth:`Arm.react <hebictl.control.arm.Arm.react>`); the strings
    are the config's ``user_data.safety.monitors.*.reaction``."""

    EVENT = "event"  # record only
    HOLD = "hold"    # brake from the measured state, then hold (not latched: a goal leaves it)
    STOP = "stop"    # a latched stop that brakes and holds at the measured standstill
    DAMP = "damp"    # a latched damp stop (braking first if moving)


class EventKind(StrEnum):
    """Every safety-event kind; the values appear in logs and on MQTT, so they never change."""

    GOAL = "goal"                          # a goal was accepted, leaving HOLD
    CLEARED = "cleared"                    # clear_fault()
    HOLD = "hold"                          # operator hold
    ESTOP = "estop"                        # e-stop (API or teleop)
    RELEASE = "release"                    # explicit release: command nothing
    INTERRUPT = "interrupt"                # Ctrl-C (SIGINT)
    TERMINATE = "terminate"                # SIGTERM
    WATCHDOG = "watchdog"                  # no fresh feedback for watchdog_timeout
    FEEDBACK_LOST = "feedback_lost"        # missed feedback samples
    FEEDBACK_NAN = "feedback_nan"          # NaN/inf position feedback
    POSITION_LIMIT = "position_limit"      # feedback beyond a joint limit
    HARDWARE_ERROR = "hardware_error"      # backend read/write failed
    INTERNAL_ERROR = "internal_error"      # an exception in the loop's own code
    MSTOP = "mstop"                        # a module's M-stop input was pressed
    FIRMWARE_LIMIT = "firmware_limit"      # a module's own (firmware) position limit is acting
    TELEOP_STOP = "teleop_stop"
    TELEOP_JOG_RELEASED = "teleop_jog_released"
    TELEOP_JOG_EXPIRED = "teleop_jog_expired"
    TELEOP_MODE = "teleop_mode"
    TELEOP_LINK_LOST = "teleop_link_lost"
    TELEOP_SHUTDOWN = "teleop_shutdown"
    # --- execution monitors (hebictl.control.monitors; reactions and thresholds in docs/monitors.md)
    CONTACT = "contact"                    # effort residual (momentum observer): the arm hit something
    TRACKING_ERROR = "tracking_error"      # measured position too far from the command for its speed
    MODEL_MISMATCH = "model_mismatch"      # steady residual at rest: an unknown payload (mass estimated)
    COMMAND_LOST = "command_lost"          # send() failed, or the modules' echo differs from what was sent
    CONTROL_GAP = "control_gap"            # a control cycle later than the command lifetime
    IMU_IMPLAUSIBLE = "imu_implausible"    # base IMU disagrees with the configured mounting
    FEEDBACK_LATE = "feedback_late"        # feedback older than its bound when it arrives
    FEEDBACK_IMPLAUSIBLE = "feedback_implausible"  # a velocity reading beyond what the actuators can do:
    #                                                not a brake ramp's input (hebictl.control.plausible)
    DAMP_SINKING = "damp_sinking"          # a 'damp' stop sinking faster than its bound: switched to hold
    GRAVCOMP_SINKING = "gravcomp_sinking"  # idle gravity compensation sinking under a load: held where it is
    MIRROR_LOST = "mirror_lost"            # a double shoulder's mirror module does not take its commands


#: events an operator causes on purpose (a goal, a hold, Ctrl-C, a dead-man release): logged at INFO
OPERATOR_EVENTS: frozenset[EventKind] = frozenset({
    EventKind.GOAL, EventKind.CLEARED, EventKind.HOLD, EventKind.RELEASE, EventKind.INTERRUPT, EventKind.TERMINATE,
    EventKind.TELEOP_STOP, EventKind.TELEOP_JOG_RELEASED, EventKind.TELEOP_MODE, EventKind.TELEOP_SHUTDOWN})


@dataclass(frozen=True)
class SafetyEvent:
    """One fault or state change, kept so nothing is lost between log reads."""

    time: float          # s, arm clock
    kind: EventKind
    state: ArmState      # state the arm entered
    detail: str


class EventLog:
    """Bounded record of safety events (also sent to the ``hebictl.safety`` logger)."""

    def __init__(self, maxlen: int = 1000, start: float = 0.0) -> None:
        self.events: deque[SafetyEvent] = deque(maxlen=maxlen)
        self.dropped = 0
        #: clock time the run started: log lines show event times since then (events keep clock time)
        self.start = start

    def record(self, time: float, kind: EventKind | str, state: ArmState, detail: str) -> SafetyEvent:
        """Keep and log one event; ``kind`` must be an :class:`EventKind` value."""
        if len(self.events) == self.events.maxlen:
            self.dropped += 1
        ev = SafetyEvent(time, EventKind(kind), state, detail)
        self.events.append(ev)
        # operator actions are news, not faults: INFO; everything else (faults) WARNING
        level = logging.INFO if ev.kind in OPERATOR_EVENTS else logging.WARNING
        log.log(level, "t=%.3f s %s -> %s: %s", time - self.start, ev.kind.value, state.value, detail)
        return ev

    def kinds(self) -> list[EventKind]:
        return [e.kind for e in self.events]

    @property
    def last(self) -> SafetyEvent | None:
        return self.events[-1] if self.events else None


@dataclass
class Limits:
    """Joint limits [rad or m, rad/s or m/s, N·m or N, rad/s²]; ±inf where unlimited.

    ``acceleration_max`` is the rated acceleration, also used as the braking deceleration
    (default: unlimited; the assembly sets it, see :mod:`hebictl.control.settings`).
    """

    position_min: NDArray[np.float64]
    position_max: NDArray[np.float64]
    velocity_max: NDArray[np.float64]
    effort_max: NDArray[np.float64]
    position_tolerance: float = 0.02   # rad past a limit in feedback before it is a fault
    # None (unlimited) only until __post_init__ fills it with inf
    acceleration_max: NDArray[np.float64] = field(default=None)  # type: ignore[arg-type]  # None only until __post_init__

    def clamp_command(self, position: NDArray[np.float64], velocity: NDArray[np.float64],
                      effort: NDArray[np.float64],
                      bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None) -> None:
        """Clamp a command in place to the limits (positions to ``bounds`` when given); NaN (not
        commanded) stays NaN."""
        # np.minimum/np.maximum propagate NaN and cost a fraction of np.clip's wrapper
        if bounds is not None:
            np.minimum(position, bounds[1], out=position)
            np.maximum(position, bounds[0], out=position)
        elif self._bounded:
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
        if self.acceleration_max is None:
            self.acceleration_max = np.full(self.velocity_max.shape, np.inf)
        self._velocity_min = -self.velocity_max
        self._effort_min = -self.effort_max
        self._bounded = bool(np.isfinite(self.position_min).any() or np.isfinite(self.position_max).any())

    @property
    def bounded(self) -> bool:
        """Some joint has a finite position limit (recomputed by :meth:`refresh`)."""
        return self._bounded

    def position_violation(self, position: NDArray[np.float64],
                           bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None) -> int:
        """Index of the first joint beyond its limit (or ``bounds``) by more than the tolerance, else -1."""
        if bounds is not None:
            return int(cycle_kernels.first_outside(position, bounds[0], bounds[1], self.position_tolerance))
        if not self._bounded:
            return -1
        return int(cycle_kernels.first_outside(position, self.position_min, self.position_max,
                                               self.position_tolerance))
