"""Where a brake or a hold starts: from the MEASURED state (the rule the Arm applies on top of the
supervisor's table, see ``docs/supervisor.md``).

The last command is kept (no step) only for a joint whose modules were executing it and which is
within ``STALE_RAD`` of it (:meth:`ModeContext.anchor <hebictl.control.modes.context.ModeContext.anchor>`);
otherwise the joint starts where it is. Every brake starts from the measured velocity
(:func:`~hebictl.control.modes.brake.new_brake`). The Arm's public actions (``hold``, ``stop``,
``react``, ``cancel_goal``, ``clear_fault``, ``set_idle``) and the cycle's re-anchoring after the
modules were not following (:func:`reanchor`) enter the brake and hold modes through these functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.modes.brake import brake_start, new_brake
from hebictl.control.modes.context import STALE_RAD
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.kinds import Mode, Resync, Trigger

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext

__all__ = ["hold_at", "reanchor", "stop_or_hold", "to_brake"]


def to_brake(ctx: ModeContext, now: float, measured: bool = False) -> None:
    """Brake from the measured velocity (a running brake is kept: never restarted or dropped, only
    started again from the measured state when ``measured``)."""
    sup = ctx.supervisor
    if sup.mode is Mode.BRAKE:
        if measured:
            sup.restart_brake(new_brake(ctx, now, ctx.anchor(True), chase=True))
        return
    ctx.planner.set_payload_mass(ctx.loads.feedforward.mass, ctx.loads.feedforward.com)  # the ramp plans with the load
    start = brake_start(ctx, now) if ctx.live() and not measured else ctx.anchor(measured)
    ctx.fire(Trigger.BRAKE, new_brake(ctx, now, start, chase=measured))


def hold_at(ctx: ModeContext, position: FloatArray | None = None, measured: bool = False) -> None:
    """Hold ``position``, else where the arm is (:meth:`ModeContext.anchor`)."""
    target = np.array(position, dtype=np.float64) if position is not None else ctx.anchor(measured)
    ctx.fire(Trigger.HOLD_AT, Holding(target))


def stop_or_hold(ctx: ModeContext, now: float, measured: bool = False) -> None:
    """Brake if the arm moves, else hold where it is."""
    if ctx.moving():
        to_brake(ctx, now, measured)
    else:
        hold_at(ctx, measured=measured)


def reanchor(ctx: ModeContext, now: float) -> None:
    """A fresh sample after the modules were not following the command (M-stop, a module gone,
    missed feedback): a hold or brake restarts from where the arm is (joints off by more than
    ``STALE_RAD``, or every joint after an M-stop), braking first if it moves: that brake starts
    every joint from the measured state (the joints that kept following went on with the stale
    ramp; keeping their command drove the arm tens of mm once the returned joint had stopped)."""
    sup = ctx.supervisor
    every = sup.resync is Resync.ALL
    mode = sup.mode
    if (mode is Mode.HOLD or mode is Mode.BRAKE) and (
            every or not bool(np.all(np.abs(ctx.rate.last - ctx.feedback.position) <= STALE_RAD))):
        if ctx.speed() > 1.0:
            braking = new_brake(ctx, now, ctx.anchor(True), chase=True)
            if mode is Mode.HOLD:
                ctx.fire(Trigger.BRAKE, braking)
            else:
                sup.restart_brake(braking)
        else:
            pending = sup.pending
            hold_at(ctx, measured=every)
            if pending is not None and not bool(np.any(ctx.feedback.mstop == 1.0)):
                ctx.fire(pending)
    sup.resync = Resync.NONE
