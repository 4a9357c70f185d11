"""Holding: a position at standstill (zero velocity) under gravity compensation.

Three things were all called "hold": the hold *target* (here, :attr:`Holding.target`), the hold
*mode* (this value, ``arm.mode == "hold"``) and the latched hold *level* (``ArmState.HOLD``: a fault
or an operator hold the next goal leaves, kept by the supervisor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from hebictl._typing import FloatArray
from hebictl.control.modes.kinds import Mode
from hebictl.control.motion import Brake

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command


@dataclass(eq=False)
class Holding:
    """``target`` [rad or m]: where the arm is held; None until the next command anchors it at the
    measured position. ``after``: the brake ramp whose end this hold is (None: entered otherwise)."""

    target: FloatArray | None = None
    after: Brake | None = None
    kind: ClassVar[Mode] = Mode.HOLD

    @property
    def damps(self) -> bool:
        """The hold came from a brake: the cycle damps the joints' ringing after that stop (any
        other change of mode ends it)."""
        return self.after is not None

    def command(self, measured: FloatArray, cmd: Command) -> None:
        """Hold the target (anchored at ``measured`` if it has none yet) at zero velocity."""
        if self.target is None:
            self.target = measured.copy()
        cmd.position[:] = self.target
        cmd.velocity.fill(0.0)

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        """The mode's position and velocity this cycle: the target (anchored at the measured position
        if it has none yet), at zero velocity; no reference state."""
        ctx.reference = None
        self.command(ctx.feedback.position, cmd)
