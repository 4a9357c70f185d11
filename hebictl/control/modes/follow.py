"""Follow: the arm commands a goal's trajectory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from hebictl._typing import FloatArray
from hebictl.control.modes.kinds import Mode

if TYPE_CHECKING:
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
