"""Braking: a brake ramp (:class:`~hebictl.control.motion.Brake`) to standstill, and how it ends.

The value owns everything a brake decides with: the ramp, whether it was started from the measured
state (``chase``: a monitor, a module's return or an M-stop release; the modules were not following
the command), whether the arm was then faster than the rated speed the ramp may start from
(``overrun``: it fell or was flung), how often it braked again for that reason, and the ramp's own
clock (how far along the ramp the last command was, see :meth:`Braking.ramp_time`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from hebictl._typing import FloatArray
from hebictl.control.modes.kinds import Mode
from hebictl.control.motion import Brake

#: [rad or m] a moving joint's brake starts from its measured position only if its command lags or leads
#: it by more than this (below, the step is not worth it: the ramp starts from the command exactly)
LAG_MIN_RAD = 1e-3
#: a brake from the measured state that ends with a joint faster than this x the at-goal velocity
#: tolerance brakes again from the measured state, at most ``REBRAKES`` times
REBRAKE_SPEED = 2.0
REBRAKES = 3

State = tuple[FloatArray, FloatArray, FloatArray]


@dataclass(eq=False)
class Braking:
    """A running brake (see module docstring). ``clock``: (ramp time commanded, arm time) of the last
    command, None before the first."""

    ramp: Brake
    chase: bool = False
    overrun: bool = False
    rebrakes: int = 0
    clock: tuple[float, float] | None = None
    kind: ClassVar[Mode] = Mode.BRAKE

    def ramp_time(self, now: float, lead: float = 0.0) -> float:
        """The ramp's time to command at ``now``, ``lead`` ahead (a blind cycle: see the Arm).

        The lead is taken up as the ramp slows: each cycle the ramp's time advances by at most the
        cycle's length x (start speed / commanded speed), so the command never moves faster than the
        ramp's start (an advance of half a period in one cycle stepped 1.5x the start speed; on the
        mock, which follows each command exactly, with the ramp's landing on the arm 1.33x the rated
        speed x period). On x6 at 3.7 rad/s the lead is in after about a quarter of the ramp."""
        t = now
        last = self.clock
        if lead > 0.0 and last is not None and now > last[1]:
            g = self.ramp.speed_fraction(last[0])
            t = min(now + lead, last[0] + (now - last[1]) / g) if g > 0.0 else now + lead
            t = max(t, now)
        self.clock = (t, now)
        return t

    def sample(self, now: float, lead: float = 0.0) -> State | None:
        """The ramp's (position, velocity, acceleration) at ``now`` (+ lead); None once it has ended."""
        t = self.ramp_time(now, lead)
        return self.ramp.state(t) if t < self.ramp.end_time else None

    def may_rebrake(self, speed: float, fresh: bool) -> bool:
        """Brake again at the ramp's end: a brake from the measured state that started below the arm's
        speed (capped at the rated one) ended with the arm still faster than ``REBRAKE_SPEED`` x the
        at-goal tolerance (``speed``, measured on a ``fresh`` sample). Not an arm that moves because a
        load the model does not know pulls it: that one is held."""
        return self.chase and self.overrun and self.rebrakes < REBRAKES and fresh and speed > REBRAKE_SPEED

    def stopping_point(self, last: FloatArray, measured: FloatArray | None, velocity_tolerance: float,
                       carried: bool) -> tuple[FloatArray, NDArray[np.bool_] | None]:
        """Where the hold after this brake holds, and the joints that hold where they are measured.

        The ramp's stopping point (or the ramp's ``last`` command, if it was cut short), except for a
        joint that went further along its braking direction (it lagged the ramp: a payload the model
        does not know, or an arm that fell faster than the rated speed during a control gap), which
        holds where it is instead of being driven back. ``measured``: None without a fresh sample.
        ``carried``: an unknown load is fed forward."""
        target = np.where(np.isfinite(last) & (np.abs(last - self.ramp.target) > LAG_MIN_RAD), last,
                          self.ramp.target)
        if measured is None:
            return target, None
        off = np.abs(measured - target) > LAG_MIN_RAD
        if self.chase or carried:
            # a brake from the measured state only stops uncommanded motion, and a carried load is fed
            # forward: every joint holds where it stopped (a joint another one dragged off the ramp, e.g.
            # r6's elbow behind a returning shoulder or a wrist under the load, is not swung back to it)
            over = off
        else:
            moving = np.abs(self.ramp.v0) > velocity_tolerance
            over = moving & ((measured - target) * self.ramp.v0 > 0.0) & off
        np.copyto(target, measured, where=over)
        return target, over
