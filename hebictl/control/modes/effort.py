"""The modes without a position target: damp, gravcomp (idle hand-guiding) and release."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.modes.kinds import Mode

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command


def no_position(ctx: ModeContext, cmd: Command) -> None:
    """No position or velocity command (NaN: the modules' position and velocity loops are off)."""
    ctx.reference = None
    cmd.position.fill(math.nan)
    cmd.velocity.fill(math.nan)


@dataclass(frozen=True)
class Damp:
    """Gravity compensation plus joint damping, no position target (the arm can be pushed)."""

    kind: ClassVar[Mode] = Mode.DAMP

    def command(self, cmd: Command, gravity: FloatArray, damping: FloatArray | float,
                velocity: FloatArray | None) -> None:
        """Gravity and damping at the measured ``velocity``; without feedback (``velocity`` None) the
        modules' velocity loop damps toward zero and ``gravity`` is taken at the last good position."""
        cmd.position.fill(math.nan)
        if velocity is not None:
            cmd.velocity.fill(math.nan)
            cmd.effort[:] = gravity - damping * np.nan_to_num(velocity)
        else:
            cmd.velocity.fill(0.0)
            cmd.effort[:] = gravity

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        no_position(ctx, cmd)


@dataclass(frozen=True)
class GravComp:
    """Idle hand-guiding: no position or velocity command, only the plugins' efforts."""

    kind: ClassVar[Mode] = Mode.GRAVCOMP

    def command(self, cmd: Command) -> None:
        cmd.position.fill(math.nan)
        cmd.velocity.fill(math.nan)

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        no_position(ctx, cmd)


@dataclass(frozen=True)
class Release:
    """Nothing commanded: a brakeless arm falls once the modules' command lifetime ends."""

    kind: ClassVar[Mode] = Mode.RELEASE

    def command(self, cmd: Command) -> None:
        cmd.clear()

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        no_position(ctx, cmd)
