"""A mobile base: a group of wheel modules commanded in velocity, with no kinematic model.

HEBI's mobile manipulators (Rosie: an omni base and an arm in one loop) command the wheels in
velocity (``kits/bases/omni_base.py``: ``base_command.velocity = J @ v_chassis``). hebictl keeps
the base a plain velocity group, so what it checks is what a wheel can do, not where the chassis
goes:

* **a command carries a ttl** (a dead-man): a non-zero velocity not renewed within its ttl is a
  *stale command*, a fault that stops the base (:meth:`VelocityBase.command`). Holding still
  (:meth:`VelocityBase.hold`) never goes stale: it is the state a stale command ends in.
* **the command is acceleration-limited from the measured velocity**: each cycle it moves towards
  the target by at most ``max_acceleration x dt``, ``dt`` the time that actually passed since the
  last command, clipped to :data:`MAX_DT_CYCLES` periods (a late cycle does not catch up with a
  jump), from the previous command held within ``max_acceleration x`` :data:`LEAD_TIME` of the
  wheels' measured velocity (the lag of their velocity loop: a blocked wheel's command does not run
  away, and a stop ramps down from where the wheels are). A velocity reading is taken only where it is physically
  possible (:class:`~hebictl.control.plausible.VelocityHistory`, as for an arm's brake: a lone
  transient of full speed on a still wheel would otherwise be commanded); without a fresh
  sample the ramp goes on from the previous command.
* **a stop** (a fault, an operator's or the group's) decelerates every wheel to zero at
  ``max_acceleration`` from the measured velocity, never faster than the previous command, then
  commands zero velocity: :attr:`BaseState.STOPPED`, latched. Nothing resumes by itself:
  :meth:`VelocityBase.clear` (an operator's act) leaves the base holding zero velocity, and only a
  new :meth:`VelocityBase.command` moves it.
* **faults**: no fresh feedback for :data:`FEEDBACK_TIMEOUT_CYCLES` periods (``feedback_lost``),
  NaN or infinite feedback (``feedback_nan``), a failed read or write (``hardware_error``), a stale
  command (``command_stale``). An :class:`~hebictl.control.group.ArmGroup` with a base holds every
  arm when the base faults and stops the base when an arm trips.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.plausible import VelocityHistory
from hebictl.errors import CommandRejected, HardwareError
from hebictl.hardware.base import Backend, Command, Feedback

__all__ = ["FEEDBACK_TIMEOUT_CYCLES", "LEAD_TIME", "MAX_DT_CYCLES", "PLAUSIBLE_ACCELERATION_FACTOR", "BaseEvent",
           "BaseLimits", "BaseState", "VelocityBase"]

#: the ramp's ``dt`` is the time since the last command, at most this many periods: after a late
#: cycle the command moves as after two, it does not catch up
MAX_DT_CYCLES = 2.0
#: no fresh sample for this many periods is lost feedback: a fault (an arm holds after a few missed
#: samples too; a base has nothing to hold on to but its velocity loop)
FEEDBACK_TIMEOUT_CYCLES = 5
#: a wheel's reading may differ from the sample before by this many times ``max_acceleration x dt``
#: (plus noise) before it is judged implausible: the modules' velocity loop lags and overshoots the
#: ramp, but not by a factor of three
PLAUSIBLE_ACCELERATION_FACTOR = 3.0
#: [s] the command may lead the measured velocity by ``max_acceleration x`` this (a velocity loop
#: following a ramp lags it by about its time constant, tens of ms on HEBI's modules); further, the
#: ramp starts again from the measured velocity (a blocked or slipping wheel, a stop from speed)
LEAD_TIME = 0.05
#: events kept
EVENTS_KEPT = 256


class BaseState(StrEnum):
    RUNNING = "running"     # following the target (zero when holding)
    STOPPING = "stopping"   # a latched stop: decelerating to zero at max_acceleration
    STOPPED = "stopped"     # a latched stop: commanding zero velocity until clear()


@dataclass(frozen=True)
class BaseEvent:
    """One thing the base did: ``time`` [s, clock], ``kind`` (``command_stale``, ``feedback_lost``,
    ``feedback_nan``, ``hardware_error``, ``estop``, ``stop``, ``stopped``, ``cleared``,
    ``feedback_implausible``), what it says, and the state it left the base in."""

    time: float
    kind: str
    detail: str
    state: BaseState


@dataclass(frozen=True, eq=False)
class BaseLimits:
    """Per wheel ``max_velocity`` [rad/s] and ``max_acceleration`` [rad/s^2]; ``command_ttl`` [s]
    the longest a command holds; ``rated_speed`` [rad/s] the actuator's (the noise of a reading is
    judged against it)."""

    max_velocity: FloatArray
    max_acceleration: FloatArray
    command_ttl: float
    rated_speed: float


class VelocityBase:
    """The wheels of a mobile base behind one backend, under the law of the module doc.

    A cycle: :meth:`update` (read, check), then the owner's :meth:`command`/:meth:`hold`/:meth:`stop`
    (an :class:`~hebictl.control.group.ArmGroup` supervises), then :meth:`send` (ramp, write)."""

    def __init__(self, name: str, backend: Backend, clock: Any, limits: BaseLimits, period: float) -> None:
        n = backend.size
        if limits.max_velocity.shape != (n,) or limits.max_acceleration.shape != (n,):
            raise HardwareError(f"base {name}: limits for {limits.max_velocity.shape} wheels, the backend has {n}")
        self.name, self.backend, self.clock, self.limits, self.period = name, backend, clock, limits, period
        self.size = n
        self.feedback = Feedback.empty(n)
        self.out = Command(np.full(n, np.nan), np.zeros(n), np.full(n, np.nan))
        self.state = BaseState.RUNNING
        #: the event that latched the stop (None: running)
        self.latch: BaseEvent | None = None
        self.events: deque[BaseEvent] = deque(maxlen=EVENTS_KEPT)
        self.target = np.zeros(n)
        self.expiry = math.inf          # [s] when the target goes stale (inf: holding zero)
        self.measured = np.full(n, np.nan)   # the plausible measured velocity of the last fresh sample
        self.history = VelocityHistory(n, np.full(n, limits.rated_speed))
        now = clock.now()
        self.t_command = now            # [s] when the last command was computed
        self.t_fresh = now              # [s] when the last fresh sample arrived (the open counts as one)
        self.sequence = 0
        self.fresh = False              # a fresh sample this cycle
        self.had_feedback = False
        self.implausible = 0            # readings judged implausible so far
        self.implausible_run = 0        # ... in a row, up to now

    # ------------------------------------------------------------------ the owner's commands
    def command(self, velocity: Any, ttl: float | None = None) -> None:
        """Follow ``velocity`` [rad/s per wheel] for ``ttl`` s (default and at most the config's
        ``command_ttl``); refused while stopped, for a velocity not finite or over ``max_velocity``."""
        if self.state is not BaseState.RUNNING:
            raise CommandRejected("base_stopped", f"base {self.name} is {self.state.value}: clear it first")
        v = np.asarray(velocity, dtype=np.float64)
        if v.shape != (self.size,) or not np.isfinite(v).all():
            raise CommandRejected("bad_velocity", f"base {self.name} needs {self.size} finite wheel velocities "
                                                  f"[rad/s], got {np.array2string(v, precision=3)}")
        over = np.abs(v) > self.limits.max_velocity
        if over.any():
            i = int(np.argmax(over))
            raise CommandRejected("over_max_velocity", f"wheel {i} asked {v[i]:+.3f} rad/s, max_velocity is "
                                                       f"{self.limits.max_velocity[i]:.3f} rad/s")
        ttl = self.limits.command_ttl if ttl is None else float(ttl)
        if not 0.0 < ttl <= self.limits.command_ttl:
            raise CommandRejected("ttl_too_long", f"a base command may hold at most {self.limits.command_ttl:g} s, "
                                                  f"this one asks {ttl:g} s")
        self.target[:] = v
        self.expiry = self.clock.now() + ttl

    def hold(self) -> None:
        """Hold zero velocity (ramping down from the measured velocity); never goes stale."""
        self.target[:] = 0.0
        self.expiry = math.inf

    def stop(self, kind: str, detail: str) -> BaseEvent | None:
        """A latched stop: decelerate to zero at max acceleration, then command zero (the first
        stop's event is the latch; a later one changes nothing and returns None)."""
        if self.state is not BaseState.RUNNING:
            return None
        self.state = BaseState.STOPPING
        self.hold()
        self.latch = self.note(kind, detail)
        return self.latch

    def clear(self, detail: str = "cleared by the operator; holding zero velocity") -> bool:
        """Clear a latched stop (refused while the feedback is lost): the base holds zero velocity."""
        if self.state is BaseState.RUNNING:
            return True
        if not self.feedback_alive(self.clock.now()):
            self.note("clear_refused", "no fresh feedback")
            return False
        self.state, self.latch = BaseState.RUNNING, None
        self.hold()
        self.note("cleared", detail)
        return True

    # ------------------------------------------------------------------ the cycle
    def update(self) -> bool:
        """Read the wheels and check them (faults stop the base); True when the sample was fresh."""
        self.fresh = False
        try:
            got = self.backend.read(self.feedback, timeout_s=2 * self.period)   # as an arm waits
        except HardwareError as exc:
            self.stop("hardware_error", f"read failed: {exc}")
            return False
        now = self.clock.now()
        if got and self.feedback.sequence != self.sequence:
            self.sequence = self.feedback.sequence
            self.take(self.feedback.velocity, now)
        if not self.feedback_alive(now):
            self.stop("feedback_lost", f"no fresh feedback for {now - self.t_fresh:.3f} s "
                                       f"({FEEDBACK_TIMEOUT_CYCLES} periods)")
        if self.state is BaseState.RUNNING and now > self.expiry:   # seen by the group's supervision this cycle
            self.stale(now)
        return self.fresh

    def take(self, velocity: FloatArray, now: float) -> None:
        """A fresh sample: NaN is a fault; else its plausible velocity (module doc)."""
        self.t_fresh = now
        if not np.isfinite(velocity).all() or not np.isfinite(self.feedback.position).all():
            self.stop("feedback_nan", f"wheel feedback not finite: velocity {np.array2string(velocity, precision=3)}")
            self.history.clear()
            self.measured[:] = np.nan
            return
        self.fresh = self.had_feedback = True
        self.history.push(now, velocity)
        judged = self.history.judge(velocity, now, PLAUSIBLE_ACCELERATION_FACTOR * self.limits.max_acceleration,
                                    self.out.velocity, self.period)
        self.measured[:] = judged.velocity
        if judged.implausible.any():
            self.implausible += 1
            if self.implausible_run == 0:   # the first of a run of implausible samples
                self.note("feedback_implausible", judged.describe([f"W{i + 1}" for i in range(self.size)]))
        self.implausible_run = self.implausible_run + 1 if judged.implausible.any() else 0

    def feedback_alive(self, now: float) -> bool:
        return now - self.t_fresh <= FEEDBACK_TIMEOUT_CYCLES * self.period

    def send(self) -> bool:
        """Compute this cycle's velocity (module doc) and write it; a failed write is a fault."""
        self.step(self.clock.now())
        try:
            ok = self.backend.write(self.out)
        except HardwareError as exc:
            ok, why = False, str(exc)
        else:
            why = "the backend did not take the command"
        if not ok:
            self.stop("hardware_error", f"write failed: {why}")
        return ok

    def step(self, now: float) -> None:
        """The velocity to command now: towards the target (zero when stopping) from the measured
        velocity, by at most max_acceleration x dt; zero once a stop has reached it."""
        dt = min(max(now - self.t_command, 0.0), MAX_DT_CYCLES * self.period)
        self.t_command = now
        if self.state is BaseState.RUNNING and now > self.expiry:
            self.stale(now)
        v = self.out.velocity
        if self.state is BaseState.STOPPED:
            v[:] = 0.0
            return
        ref = v
        if self.fresh:   # the command leads the measured velocity by at most what the wheels' loop lags
            lead = self.limits.max_acceleration * LEAD_TIME
            ref = np.clip(v, self.measured - lead, self.measured + lead)
        reach = self.limits.max_acceleration * dt
        new = ref + np.clip(self.target - ref, -reach, reach)
        bound = np.abs(v) if self.state is BaseState.STOPPING else self.limits.max_velocity
        np.clip(new, -bound, bound, out=v)
        if self.state is BaseState.STOPPING and not v.any():
            self.state = BaseState.STOPPED
            self.note("stopped", f"at rest after {self.latch.kind if self.latch else 'a stop'}: commanding zero")

    def stale(self, now: float) -> None:
        """The target's ttl ran out: a fault when it asked for motion, a quiet hold otherwise."""
        if self.target.any():
            self.stop("command_stale", f"no fresh command for {now - self.expiry:.3f} s past its ttl: "
                                       f"stopping at {float(self.limits.max_acceleration.min()):.2f} rad/s^2")
        else:
            self.hold()

    def note(self, kind: str, detail: str) -> BaseEvent:
        ev = BaseEvent(self.clock.now(), kind, detail, self.state)
        self.events.append(ev)
        return ev

    @property
    def velocity_command(self) -> FloatArray:
        """[rad/s] what was last commanded, per wheel."""
        return self.out.velocity

    @property
    def still(self) -> bool:
        """Commanding zero and measured at rest (within 1 % of the rated speed)."""
        return not self.out.velocity.any() and bool(
            np.all(np.abs(np.nan_to_num(self.feedback.velocity, nan=np.inf)) <= 0.01 * self.limits.rated_speed))

    def close(self) -> None:
        self.backend.close()

    @classmethod
    def from_entry(cls, entry: Any, backend: Backend, clock: Any, period: float) -> VelocityBase:
        """From a multi-arm config's :class:`~hebictl.multi_config.BaseEntry` (duck-typed: control
        sits below the readers)."""
        limits = BaseLimits(np.asarray(entry.max_velocity, dtype=np.float64),
                            np.asarray(entry.max_acceleration, dtype=np.float64),
                            float(entry.command_ttl), float(entry.rated_speed))
        return cls(entry.name, backend, clock, limits, period)
