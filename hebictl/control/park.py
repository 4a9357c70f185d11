"""Parking at ``user_data.rest_position`` when a service manager stops the arm (issue 29, item 7).

A robot config may name a rest pose: ``user_data.rest_position`` [rad, one per joint], a folded pose
where a limp arm is supported (or at least low and still). When it does, SIGTERM (and the unattended
exit after a latched safety stop that left the arm controllable) does not just hold and exit: it

1. brakes (the arm's ``hold`` stop, as before);
2. moves to the rest pose on a rest-to-rest minimum-jerk trajectory through the arm's normal goal
   admission (joint limits, effort, the path check against the arm itself and its workspace), timed
   from the distance so that no joint exceeds :data:`PARK_SPEED_FRACTION` of its rated speed nor
   :data:`PARK_ACCEL_FRACTION` of its rated acceleration, and never shorter than :data:`PARK_MIN_S`;
3. holds there :data:`PARK_HOLD_S` and exits with the summary.

Bounds: the move may take at most :data:`PARK_MAX_MOVE_S`, and must be reached (at-goal tolerances of
``user_data.safety``) within :data:`PARK_SETTLE_S` of its end; the whole park, from the signal to the
exit, is bounded by :data:`PARK_BOUND_S` (brake included), well under systemd's 90 s
``TimeoutStopSec``. A rest pose the admission refuses, one too far to reach within the cap, one not
reached in time, or a safety stop during the move, falls back to the hold of before (brake, hold
``fallback_hold``, exit); the event says why. A second SIGTERM or Ctrl-C ends the park at once: the
arm brakes (the ``hold`` stop) and the run exits once the brake has ended and the arm is measured
still (at most :data:`ABORT_SETTLE_S` later).

Why a quarter of the rated speed: an unattended move, watched by nobody, should be slow enough that
a person or object in the way is pushed gently and the contact monitor (which stays on) catches it
early; kinetic energy scales with the speed squared (1/16 of a rated-speed move) and the braking
distance within the rated deceleration too. The minimum-jerk profile's peak speed is 1.875 x the mean
speed, so the move time below is computed from the peak, not the mean.

The events report measured positions only (the last feedback), never the command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hebictl.control.safety import EventKind
from hebictl.errors import CommandRejected, ConfigError

#: peak joint speed of the park move, as a fraction of each joint's rated speed (module doc)
PARK_SPEED_FRACTION = 0.25
#: peak joint acceleration of the park move, as a fraction of each joint's rated acceleration
PARK_ACCEL_FRACTION = 0.25
#: [s] the park move never takes less than this (a rest pose next to where the arm stopped)
PARK_MIN_S = 2.0
#: [s] the park move may take at most this; a farther rest pose is not parked at (the arm holds)
PARK_MAX_MOVE_S = 40.0
#: [s] after the move's end, the rest pose must be reached (at goal) within this, else the arm holds
PARK_SETTLE_S = 3.0
#: [s] the hold at the rest pose before the exit
PARK_HOLD_S = 2.0
#: [s] from the signal to the exit, whatever happens (brake, move, settle, hold, or a fall-back hold):
#: well under systemd's 90 s TimeoutStopSec
PARK_BOUND_S = 60.0
#: after a park ended early (a second signal, the bound), the run exits once the brake has ended and the
#: arm is measured still: every joint below STILL_RAD_S for STILL_SAMPLES samples in a row (one sample
#: is never trusted), or ABORT_SETTLE_S after the brake's end at the latest (the arm's hold goes on in
#: the modules for their command lifetime either way)
STILL_RAD_S = 0.02
STILL_SAMPLES = 3
ABORT_SETTLE_S = 0.5
#: the minimum-jerk (quintic, rest to rest) peak speed over mean speed, and peak acceleration x T^2 / d
MIN_JERK_PEAK_SPEED = 1.875
MIN_JERK_PEAK_ACCEL = 10.0 / math.sqrt(3.0)
#: safety stops after which the arm is still controllable and the unattended exit parks; after any
#: other (e-stop, M-stop, lost or implausible feedback, a lost command, a contact with something the
#: path check does not know) it keeps holding
PARK_AFTER: frozenset[str] = frozenset({
    EventKind.CONTROL_GAP, EventKind.TRACKING_ERROR, EventKind.MODEL_MISMATCH, EventKind.FEEDBACK_LATE,
    EventKind.DAMP_SINKING, EventKind.GRAVCOMP_SINKING, EventKind.TERMINATE, EventKind.INTERRUPT,
})


def rest_position(cfg: Any, dof: int) -> np.ndarray | None:
    """The config's ``user_data.rest_position`` (None: none given), ``dof`` finite numbers inside the
    config's joint limits where it gives them; else a ConfigError naming the file, line and key (the
    config loader checks the count and the types the same way, with the line)."""
    value = (cfg.user_data or {}).get("rest_position")
    if value is None:
        return None
    key = "user_data.rest_position"
    try:
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ConfigError(f"rest_position must be {dof} numbers, got {value!r}"[:200], file=cfg.path, key=key) from None
    if arr.shape != (dof,) or not np.all(np.isfinite(arr)):
        raise ConfigError(f"rest_position needs {dof} finite values, got {value!r}"[:200], file=cfg.path, key=key)
    return arr


def park_time(distance: np.ndarray, velocity_max: np.ndarray, acceleration_max: np.ndarray) -> float:
    """[s] The park move's duration: the shortest minimum-jerk time keeping every joint within
    :data:`PARK_SPEED_FRACTION` of its rated speed and :data:`PARK_ACCEL_FRACTION` of its rated
    acceleration, at least :data:`PARK_MIN_S` (may exceed :data:`PARK_MAX_MOVE_S`: the caller checks)."""
    d = np.abs(np.asarray(distance, dtype=float))
    v = np.where(np.isfinite(velocity_max), velocity_max, 1.0) * PARK_SPEED_FRACTION
    a = np.where(np.isfinite(acceleration_max), acceleration_max, 2.0) * PARK_ACCEL_FRACTION
    t_speed = float(np.max(MIN_JERK_PEAK_SPEED * d / v, initial=0.0))
    t_accel = float(np.max(np.sqrt(MIN_JERK_PEAK_ACCEL * d / a), initial=0.0))
    return max(PARK_MIN_S, t_speed, t_accel)


def _measured(arm: Any) -> str:
    return "[" + " ".join(f"{x:+.3f}" for x in np.asarray(arm.last_feedback.position, dtype=float)) + "] rad"


class Park:
    """The park after a stop (module doc), one :meth:`step` per control cycle. ``why`` names the
    cause (``SIGTERM``, the safety stop); :attr:`outcome` says how it ended (for the summary)."""

    def __init__(self, arm: Any, rest: np.ndarray, clock: Any, why: str, fallback_hold: float) -> None:
        self.arm, self.rest, self.clock, self.why = arm, np.asarray(rest, dtype=float), clock, why
        self.fallback_hold = fallback_hold  # [s] the hold where the park falls back (TERM_HOLD_S)
        self.started = clock.now()
        self.phase = "brake"          # brake -> move -> parked | hold (fell back) | aborted
        self.move_end: float | None = None
        self.exit_at: float | None = None
        self.abort = False            # a second SIGTERM/Ctrl-C
        self.outcome = "braking"
        self.duration: float | None = None
        self.brake_end: float | None = None   # when the early end's brake ended (phase "aborted")
        self.still = 0                        # samples in a row with every joint below STILL_RAD_S

    def step(self) -> bool:
        """One cycle of the park; False once the run should exit."""
        now = self.clock.now()
        late = now >= self.started + PARK_BOUND_S
        if late and self.phase in ("parked", "hold"):
            return False
        if (self.abort or late) and self.phase != "aborted":
            self._end_now("a second signal" if self.abort else f"its bound of {PARK_BOUND_S:g} s")
        handler = {"brake": self._brake, "move": self._move}.get(self.phase)
        if handler is not None:
            handler(now)
            return True
        if self.phase == "aborted":
            return self._settling(now)
        return now < (self.exit_at or math.inf)

    def _settling(self, now: float) -> bool:
        """After an early end: go on while the brake runs, then until the arm is measured still (or
        ABORT_SETTLE_S after the brake ended)."""
        if self.arm.braking:
            return True
        if self.brake_end is None:
            self.brake_end = now
        speed = np.abs(np.asarray(self.arm.last_feedback.velocity, dtype=float))
        self.still = self.still + 1 if bool(np.all(speed < STILL_RAD_S)) else 0
        return self.still < STILL_SAMPLES and now < self.brake_end + ABORT_SETTLE_S

    def _end_now(self, cause: str) -> None:
        """Brake (a ``hold`` stop) and exit once the brake has ended and the arm is still (:meth:`_settling`):
        a second signal, or the bound reached while still braking or moving."""
        self.phase = "aborted"
        self.outcome = f"ended by {cause}; braked"
        self.arm.stop(EventKind.TERMINATE, f"{self.why}: park ended by {cause}; braking, then exiting at "
                      f"{_measured(self.arm)} (measured)", behaviour="hold")

    def _brake(self, now: float) -> None:
        arm = self.arm
        if arm.braking:
            return
        start = np.asarray(arm.last_feedback.position, dtype=float)
        lim = arm.limits
        t = park_time(self.rest - start, lim.velocity_max, lim.acceleration_max)
        if t > PARK_MAX_MOVE_S:
            self._fall_back(now, f"the rest pose is {t:.1f} s away at {PARK_SPEED_FRACTION:g} of rated speed, "
                                 f"more than {PARK_MAX_MOVE_S:g} s")
            return
        from hebictl.control.admission import plan
        from hebictl.control.goal import Goal

        goal = Goal(arm.dof)
        goal.add_waypoint(t=t, position=self.rest)
        try:
            admitted = plan(goal, now, arm.current_state(), arm.limits, arm.model)
            arm.clear_fault(f"{self.why}: parking at user_data.rest_position in {t:.2f} s from "
                            f"{_measured(arm)} (measured)")
            arm.set_goal(goal, admitted=admitted)
        except CommandRejected as exc:
            self._fall_back(now, f"the rest pose was refused: {exc.reason}: {exc.detail}")
            return
        self.phase, self.duration, self.move_end = "move", t, now + t
        self.outcome = f"moving to the rest pose ({t:.2f} s)"

    def _move(self, now: float) -> None:
        arm = self.arm
        if arm.state.value == "stopped":  # a safety stop during the move: it holds (its own stop)
            self._fall_back(now, "a safety stop during the park move", stop=False)
            return
        if arm.at_goal:
            self.phase, self.exit_at = "parked", now + PARK_HOLD_S
            self.outcome = f"parked at the rest pose, measured {_measured(arm)}"
            arm.hold(reason=EventKind.TERMINATE, detail=f"{self.why}: parked at user_data.rest_position, measured "
                     f"{_measured(arm)}; holding {PARK_HOLD_S:g} s, then exiting")
            return
        if now > (self.move_end or 0.0) + PARK_SETTLE_S:
            self._fall_back(now, f"the rest pose was not reached within {PARK_SETTLE_S:g} s of the move's end")

    def stop_short(self, reason: str) -> None:
        """End a park still braking or moving from outside (another arm of a multi-arm run stopped, or
        closes in on this one): the fall-back hold, its event saying ``reason``. No-op once it ended."""
        if self.phase in ("brake", "move"):
            self._fall_back(self.clock.now(), reason)

    def _fall_back(self, now: float, reason: str, *, stop: bool = True) -> None:
        hold = self.fallback_hold
        self.phase = "hold"
        self.exit_at = min(now + hold, self.started + PARK_BOUND_S)
        self.outcome = f"not parked ({reason}); held"
        if stop:
            self.arm.stop(EventKind.TERMINATE, f"{self.why}: not parking: {reason}; holding at {_measured(self.arm)} "
                          f"(measured) for {hold:g} s, then exiting")


def watch_parks(parks: Mapping[str, Park], note: Callable[[str, str, str], Any],
                closing: Callable[[str], str | None]) -> None:
    """One cycle's look across several arms' parks (a multi-arm ``hebictl run`` or ``teleop``): an arm
    stopped by a safety stop during its park move ends every other park still braking or moving in
    the fall-back hold (``note("fault", arm, ...)``); a park move that ``closing(arm)`` says closes in
    on another arm is held short (``note("held", arm, why)``). Parks told to end (``abort``) are left
    to end."""
    for name, park in parks.items():
        arm = park.arm
        if park.abort:
            continue
        if park.phase == "move" and arm.state.value == "stopped":   # its own safety stop
            cause = f"{arm.latch.cause}: {arm.latch.detail}" if arm.latch is not None else "stopped"
            note("fault", name, f"during its park: {cause}")
            for other in parks.values():
                if other is not park:
                    other.stop_short(f"arm {name} stopped during its park ({cause})")
        elif park.phase == "move" and not arm.at_goal:
            detail = closing(name)
            if detail is not None:
                park.stop_short(detail)
                note("held", name, detail)
