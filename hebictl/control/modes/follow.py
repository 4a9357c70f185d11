"""Follow: the arm commands a goal's trajectory."""

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


@dataclass(eq=False)
class Follow:
    """A goal being followed: the trajectory (admitted by :mod:`hebictl.control.admission`)."""

    trajectory: Trajectory
    kind: ClassVar[Mode] = Mode.FOLLOW

    def command(self, now: float, cmd: Command) -> State:
        """Write the trajectory's position and velocity at ``now`` into ``cmd``; returns (p, v, a)."""
        p, v, a = self.trajectory.get_state(now)
        cmd.position[:] = p
        cmd.velocity[:] = v
        return p, v, a

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        """The mode's position and velocity this cycle (:func:`hebictl.control.modes.command.position_command`):
        the trajectory at ``now``, its state the cycle's reference."""
        ctx.reference = self.command(now, cmd)

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
