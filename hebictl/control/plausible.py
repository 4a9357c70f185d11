"""Which measured velocity a brake ramp may start from: one reading is not enough.

Why: every brake ramp starts from the measured velocity and commands ``p0 + v0 T / 2`` (see
:mod:`hebictl.control.motion`). One transient sample reading 0.9x rated on a still shoulder, followed
by a stop, a hold or a dead-man release, drove the arm 220-502 mrad (78-241 mm at the end effector)
on every bundled config: the stop itself was the motion.

So the arm keeps its last few samples (:class:`VelocityHistory`), and a brake (and the damping of
a stop) takes the newest reading only where it is physically possible: its speed may exceed the
sample before it (the previous command's velocity before there is one) by no more than what the
joint's actuator and gravity can add in the time between them (``max_acceleration x dt``,
:meth:`hebictl.control.braking.BrakePlanner.max_acceleration`) plus the sensor's noise, unless it is
what the previous command asked for (within the noise: the modules were told to go there; the mock
follows each command exactly). A reading beyond that is *implausible*: the median of the samples
before it is used instead (a lone transient does not move it) and the arm records a
``feedback_implausible`` event. A reading *slower* than the one before is always taken: an obstacle
can stop a joint faster than its actuator could, and a brake from the faster, older speed would
drive the arm into it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from hebictl._typing import FloatArray

__all__ = ["HISTORY", "NOISE_FRACTION", "Plausible", "PlausibleVelocity", "VelocityHistory"]

#: samples kept (the newest and the ones its reference is the median of)
HISTORY = 4
#: [fraction of the rated speed] a reading may exceed what the acceleration explains by this much (sensor noise)
NOISE_FRACTION = 0.05


class Plausible:
    """The velocity a brake may start from (``velocity``), the joints whose newest reading was not
    (``implausible``) and what it was judged against (``reading``, ``reference``, ``allowed``)."""

    __slots__ = ("allowed", "implausible", "reading", "reference", "velocity")

    def __init__(self, velocity: FloatArray, implausible: NDArray[np.bool_], reading: FloatArray,
                 reference: FloatArray, allowed: FloatArray) -> None:
        self.velocity = velocity
        self.implausible = implausible
        self.reading = reading
        self.reference = reference
        self.allowed = allowed

    def describe(self, names: list[str] | tuple[str, ...]) -> str:
        """One line naming each implausible joint, its reading and what was possible."""
        parts = [f"joint {j} ({names[j]}) read {self.reading[j]:+.3f} rad/s after {self.reference[j]:+.3f}, "
                 f"at most {self.allowed[j]:.3f} rad/s apart" for j in np.flatnonzero(self.implausible)]
        return "; ".join(parts) + "; the brake starts from the earlier samples' velocity"


class VelocityHistory:
    """The last :data:`HISTORY` fresh samples' velocities and times (a ring; pushing copies n floats)."""

    def __init__(self, dof: int, rated: FloatArray) -> None:
        self.times = np.full(HISTORY, np.nan)
        self.velocities = np.full((HISTORY, dof), np.nan)
        self.count = 0
        self.noise = NOISE_FRACTION * np.where(np.isfinite(rated), rated, 1.0)

    def push(self, t: float, velocity: FloatArray) -> None:
        i = self.count % HISTORY
        self.times[i] = t
        self.velocities[i] = velocity
        self.count += 1

    @property
    def latest_time(self) -> float:
        """[s] the newest sample's time (NaN before one)."""
        return float(self.times[(self.count - 1) % HISTORY]) if self.count else math.nan

    def clear(self) -> None:
        """Forget the samples (after a gap in the feedback: they no longer say how the arm moves)."""
        self.count = 0

    def judge(self, reading: FloatArray, now: float, max_acceleration: FloatArray,
              command_velocity: FloatArray, period: float) -> Plausible:
        """Judge ``reading`` (the newest sample's velocity, taken at ``now``; NaN: not read) against the
        earlier samples, or the previous ``command_velocity`` ``period`` ago when there are none."""
        earlier = min(self.count, HISTORY) - 1  # the newest sample is the reading itself
        command = np.nan_to_num(command_velocity)
        reference, filtered, dt = command, command, period
        if earlier >= 1:
            # judged against the sample before (one interval of acceleration), replaced by the earlier
            # samples' median (a lone transient does not move it); the previous command where not read
            i = (self.count - 2) % HISTORY
            reference = np.where(np.isfinite(self.velocities[i]), self.velocities[i], command)
            dt = float(now - self.times[i])
            rows = self.velocities[[(self.count - 2 - k) % HISTORY for k in range(earlier)]]
            filtered = np.median(np.where(np.isfinite(rows), rows, reference), axis=0)
        allowed = np.abs(max_acceleration) * max(dt, 0.0) + self.noise
        faster = np.abs(np.nan_to_num(reading)) > np.abs(reference)
        commanded = np.abs(reading - command) <= self.noise
        implausible = np.isfinite(reading) & faster & ~commanded & (np.abs(reading - reference) > allowed)
        velocity = np.where(implausible, filtered, reading)
        return Plausible(velocity, implausible, np.asarray(reading, dtype=np.float64).copy(), reference, allowed)


class PlausibleVelocity:
    """The arm's samples (:class:`VelocityHistory`) judged once per fresh sample: what a brake or a
    stop's damping asks for several times in a cycle is computed once.

    ``max_acceleration(q)``: what the actuators can add at pose ``q``
    (:meth:`hebictl.control.braking.BrakePlanner.max_acceleration` under the arm's gravity); computed
    again only once a joint moved ``repose`` from where it was last (it changes slowly with the
    pose, and a stop's damping asks every cycle)."""

    def __init__(self, dof: int, rated: FloatArray, max_acceleration: Callable[[FloatArray], FloatArray],
                 repose: float) -> None:
        self.history = VelocityHistory(dof, rated)
        self.max_acceleration_at = max_acceleration
        self.repose = repose
        self._judged: tuple[int, Plausible] | None = None  # (sample sequence, its judgement)
        self._amax: tuple[FloatArray, FloatArray] | None = None  # (pose, max_acceleration there)

    def push(self, t: float, velocity: FloatArray) -> None:
        self.history.push(t, velocity)

    def judge(self, sequence: int, position: FloatArray, reading: FloatArray, t: float,
              command_velocity: FloatArray, period: float) -> tuple[Plausible, bool]:
        """:meth:`VelocityHistory.judge` of sample ``sequence`` (at ``position``, read at ``t``), and
        whether this call judged it (False: the judgement of an earlier call on the same sample)."""
        cached = self._judged
        if cached is not None and cached[0] == sequence:
            return cached[1], False
        amax = self.max_acceleration(position)
        judged = self.history.judge(reading, t, amax, command_velocity, period)
        self._judged = (sequence, judged)
        return judged, True

    def max_acceleration(self, q: FloatArray) -> FloatArray:
        """``max_acceleration(q)``, kept until a joint moved ``repose`` from the pose it was computed at."""
        cached = self._amax
        if cached is not None and float(np.max(np.abs(q - cached[0]))) <= self.repose:
            return cached[1]
        amax = self.max_acceleration_at(q)
        self._amax = (q.copy(), amax)
        return amax
