"""Follow: the arm commands a goal's trajectory, and resumes it where the arm is after a late cycle.

A cycle that comes late (the process stalled: a busy robot PC, a page fault, a blocked thread)
finds the trajectory's clock ahead of the arm: the modules held the last command meanwhile. Read at
the clock's time, the trajectory asked the arm to catch up, and the rate limiter let it chase at up
to its rated speed: measured on the sim after a stall mid-goal, peak joint speeds of 1.25-1.43x (100
ms) and 1.78-2.37x (200 ms) the plan's on the four bundled configs, with no event (now 0.90-1.02x).
So after a late cycle the goal resumes from the point of its path nearest to where the arm is
(:meth:`Follow.resume`): the trajectory is shifted later by the time the arm did not follow it, and
goes on at its planned speed, the command filter stepping from the measured position. Never behind
the last command (a projection behind it would pull the arm back: the modules kept moving on the last
velocity command), never ahead of the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.modes.kinds import Mode

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command
    from hebictl.trajectory import Trajectory

State = tuple[FloatArray, FloatArray, FloatArray]


#: a cycle longer than this many nominal periods is late (the cycle clock's gap rule,
#: :class:`~hebictl.control.cycle_clock.CycleClock`): the goal resumes where the arm is
LATE_CYCLE = 1.5
#: points of the path between the last command and the clock searched for the arm's position
RESUME_SAMPLES = 24
#: a resumed goal speeds back up to its planned pace at this fraction of each joint's rated acceleration
RESUME_ACCELERATION = 0.3


@dataclass(eq=False)
class Follow:
    """A goal being followed: the trajectory (admitted by :mod:`hebictl.control.admission`), shifted
    later by every late cycle's share the arm did not follow (``delay``, the sum of the shifts).

    After a late cycle the goal goes on at ``pace`` (the share of its planned speed, from the arm's
    own speed along the path) rising by ``pace_rate`` per second back to 1: the path's time then
    runs slower than the clock and the trajectory is shifted by the difference every cycle."""

    trajectory: Trajectory
    #: [s] how far the trajectory was shifted after late cycles (the time the goal was paused)
    delay: float = 0.0
    #: the clock's (and the shifted trajectory's) time of the last command (None before the first)
    commanded_at: float | None = None
    #: the goal's pace, a share of its planned speed (1 but while it speeds back up after a late cycle)
    pace: float = 1.0
    #: [1/s] how fast the pace rises back to 1
    pace_rate: float = 0.0
    kind: ClassVar[Mode] = Mode.FOLLOW

    def command(self, now: float, cmd: Command) -> State:
        """Write the trajectory's position and velocity at ``now`` into ``cmd`` (at the goal's pace);
        returns (p, v, a)."""
        if self.pace < 1.0 and self.commanded_at is not None:
            self._advance(now)
        p, v, a = self.trajectory.get_state(now)
        if self.pace < 1.0:
            v, a = self.pace * v, self.pace * self.pace * a + self.pace_rate * v
        cmd.position[:] = p
        cmd.velocity[:] = v
        self.commanded_at = now
        return p, v, a

    def velocity(self, now: float) -> FloatArray:
        """The velocity the goal commands at ``now`` (the trajectory's, at the goal's pace)."""
        return self.pace * self.trajectory.get_state(now)[1]

    def _advance(self, now: float) -> None:
        """The path's time from the last command to ``now`` at the rising pace: the trajectory is
        shifted by the time the path did not advance."""
        assert self.commanded_at is not None
        dt = max(now - self.commanded_at, 0.0)
        pace = min(1.0, self.pace + self.pace_rate * dt)
        shift = dt - 0.5 * (self.pace + pace) * dt
        if shift > 0.0:
            self.trajectory = self.trajectory.shifted(shift)
            self.delay += shift
        self.pace = pace

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        """The mode's position and velocity this cycle (:func:`hebictl.control.modes.command.position_command`):
        the trajectory at ``now``, its state the cycle's reference; after a late cycle, first resumed
        where the arm is (:meth:`resume`)."""
        cycle = ctx.cycle
        if not blind and cycle.dt > LATE_CYCLE * cycle.nominal and self.commanded_at is not None:
            self.resume(now, ctx.feedback.position, ctx.plausible_velocity(), cycle.nominal,
                        ctx.limits.acceleration_max)
            # the command filter steps from where the arm is, not from the last command: the arm went on
            # past it on its velocity meanwhile, and stepping up from it the filter let the command catch
            # up at the rated speed (with the shift alone, x6 still reached 1.20x its plan after 100 ms)
            ctx.rate.reset()
        ctx.reference = self.command(now, cmd)

    def resume(self, now: float, position: FloatArray, velocity: FloatArray, period: float,
               acceleration: FloatArray) -> float:
        """After a late cycle: shift the trajectory so that ``now`` is the time of the path's point
        nearest the measured ``position`` between the last command plus one ``period`` (the progress
        of a cycle on time) and ``now`` (no shift); the goal goes on at the pace of the arm's
        measured ``velocity`` along the path (the modules' position loops stopped it or pulled it
        back meanwhile: from rest, a command at the planned speed left the arm lagging, and the
        loops closed that lag at 1.5x the plan's speed), rising to the planned pace at
        :data:`RESUME_ACCELERATION` x the rated ``acceleration``. Returns the shift [s]."""
        last = self.commanded_at
        if last is None or not np.all(np.isfinite(position)):
            return 0.0
        traj = self.trajectory
        lo = min(last + period, now)
        shift = 0.0
        if now - lo > 0.0:
            times = np.linspace(lo, now, RESUME_SAMPLES)
            path = traj.get_states(times)[0]
            shift = now - float(times[int(np.argmin(np.sum((path - position) ** 2, axis=1)))])
        if shift > 0.0:
            traj = self.trajectory = traj.shifted(shift)
            self.delay += shift
        self.commanded_at = now   # the pace runs from here
        planned = traj.get_state(now)[1]
        speed2 = float(planned @ planned)
        if speed2 <= 1e-12:
            self.pace, self.pace_rate = 1.0, 0.0
            return shift
        measured = np.nan_to_num(velocity)
        self.pace = float(np.clip(measured @ planned / speed2, 0.0, 1.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            ramp = np.abs(planned) / (RESUME_ACCELERATION * acceleration)
        longest = float(np.max(np.where(np.isfinite(ramp), ramp, 0.0)))   # [s] from rest to the planned pace
        self.pace_rate = 1.0 / max(longest, period)
        return shift

    def progress(self, now: float) -> float:
        """The trajectory's time fraction at ``now``, 0..1 (1 once its time is up, reached or not)."""
        traj = self.trajectory
        if traj.duration <= 0.0:
            return 1.0
        return float(min(max(now - traj.start_time, 0.0), traj.duration) / traj.duration)

    def reached(self, now: float, position: FloatArray, velocity: FloatArray, position_tolerance: float,
                velocity_tolerance: float) -> bool:
        """The trajectory has ended at ``now`` and the measured ``position`` is within
        ``position_tolerance`` of its end, every joint slower than ``velocity_tolerance`` (a NaN
        velocity reading is not checked)."""
        traj = self.trajectory
        if now < traj.end_time:
            return False
        if not bool(np.all(np.abs(position - traj.positions[:, -1]) <= position_tolerance)):
            return False
        return not bool(np.any(np.abs(velocity) > velocity_tolerance))
