"""The cycle's questions to the current mode: its position and velocity command, its efforts, and
the command filter every mode's command goes through.

``Arm.update`` reads, runs the monitors, then asks the mode (the value the supervisor holds) for its
command through these functions. The interface every mode value implements is
``position_command(ctx, now, cmd, blind)``: write the mode's position and velocity into ``cmd`` and
set ``ctx.reference`` (the trajectory's or the ramp's state, else None), from the measured state in
``ctx`` (:class:`~hebictl.control.modes.context.ModeContext`). The laws behind it live beside each
value (:meth:`Follow.command <hebictl.control.modes.follow.Follow.command>`,
:meth:`Braking.step <hebictl.control.modes.brake.Braking.step>`,
:meth:`Holding.command <hebictl.control.modes.hold.Holding.command>`,
:meth:`Jogging.step <hebictl.control.modes.jog.Jogging.step>` (run by the Arm among the plugins),
:meth:`Damp.command <hebictl.control.modes.effort.Damp.command>`, ...). The cycle asks in one of
three settings:

* running (:func:`position_command`, the plugins, :func:`running_efforts`, :func:`finish`);
* latched (:func:`latched_command`: the stop's mode, no plugins but those that mirror the command);
* blind, a cycle without usable feedback (:func:`blind_command`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hebictl.control.modes.brake import BLIND_LEAD, Braking
from hebictl.control.modes.effort import Damp, Release
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.jog import Jogging
from hebictl.control.modes.kinds import Mode, Resync, Trigger

if TYPE_CHECKING:
    from hebictl._typing import FloatArray
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command, Feedback

__all__ = ["BLIND_LEAD", "blind_command", "finish", "latched_command", "position_command", "running_efforts"]

# Enum member lookups go through a descriptor on every access; the hot path compares against these.
_FOLLOW, _JOG, _BRAKE, _HOLDING, _GRAVCOMP = Mode.FOLLOW, Mode.JOG, Mode.BRAKE, Mode.HOLD, Mode.GRAVCOMP


def position_command(ctx: ModeContext, now: float, cmd: Command, *, blind: bool = False) -> None:
    """Position and velocity of the mode's command (FOLLOW, BRAKE, HOLD; JOG's last); NaN otherwise:
    the current mode value's ``position_command``, except while an M-stop is pressed (a hold or brake
    then stays where the arm was last measured).

    ``blind`` (no fresh feedback this cycle): a brake ramp is commanded at the middle of the
    period the modules will hold the command for (:data:`BLIND_LEAD` of the cycle ahead: a blind
    cycle waits ``feedback_timeout`` for feedback, so it lasts longer than the nominal period;
    half a nominal period left r6's base ringing at 0.057 rad/s, 9 mm at the end effector). A HEBI
    module holds the last position and velocity it was sent until the next command (no
    interpolation), so a ramp sampled at the cycle's start is on average half a period behind
    the ramp: the position loop pulls back by about kp x v x period / 2 (x6's base at 3.7 rad/s,
    200 Hz: 9 mrad, 0.46 N·m). With feedback the controller's damping term takes that up and
    the hold re-anchors to the measured stop; blind, the arm over-braked and ended 8 mrad short
    of the ramp, a lag the module then closed at up to 0.07 rad/s after the arm had stopped."""
    m = ctx.supervisor.motion
    if (ctx.supervisor.resync is Resync.ALL and isinstance(m, Braking | Holding)
            and np.all(np.isfinite(ctx.rate.last))):
        # M-stop pressed: the modules run their own strategy; the command stays where the arm was
        # last measured (no ramp advances while nothing executes it), so the release moves nothing
        ctx.reference = None
        cmd.position[:] = ctx.rate.last
        cmd.velocity.fill(0.0)
        return
    m.position_command(ctx, now, cmd, blind)


def running_efforts(ctx: ModeContext, fb: Feedback) -> None:
    """The running mode's efforts after the plugins': the unknown load fed forward (in every position
    mode), a brake ramp's deceleration fed forward, and the damping of a stop's ringing."""
    cmd = ctx.command
    carrying = ctx.loads.feedforward.mass != 0.0 and math.isfinite(float(cmd.position.sum()))
    if carrying:
        ctx.loads.feed(fb.position, cmd, ctx.reference)  # the unknown load, in every position mode
    m = ctx.supervisor.motion
    braking = isinstance(m, Braking)
    if braking and ctx.reference is not None:  # braking: feed the ramp forward
        cmd.effort += ctx.planner.missing_effort(ctx.reference, ctx.plugins)  # (not plugins')
    if braking or (isinstance(m, Holding | Jogging) and (m.damps or carrying)):
        # damp the ringing (of the stop; of a load carried in a hold, or a jog on it, as it is taken over),
        # at a speed the arm can have (a transient reading kicked the still arm)
        cmd.effort -= ctx.damping * np.nan_to_num(ctx.plausible_velocity() - cmd.velocity)


def finish(ctx: ModeContext, fb_position: FloatArray) -> None:
    """Clamp the command to the limits, rate-limit the position to the rated speed (over at most
    the nominal period: after a gap no step is larger than one cycle's) and brake it before a
    position limit (it reaches the limit at rest, within the rated deceleration)."""
    cmd = ctx.command
    mode = ctx.supervisor.mode
    recovering = (ctx.supervisor.recovery if mode is _FOLLOW or mode is _HOLDING or mode is _BRAKE or mode is _JOG
                  else None)
    rate = ctx.rate
    if rate.clamp_and_apply(cmd.position, cmd.velocity, cmd.effort, ctx.cycle.rate_dt, fb_position,
                            recovering) and (mode is _HOLDING or mode is _BRAKE or mode is _JOG):
        # a hold or ramp the command is carried on to (after a brake from the measured state): the
        # position moves at most at the rated speed, the velocity command stays the mode's own (zero,
        # or the ramp's), not the rated speed the limiter moves at (fed forward, that kicked a
        # just-stopped arm: r6's elbow swung 0.6 rad/s after a module's return); a jog's limited joints
        # too, as when the jog ran on top of a hold (kept so: the jog tests' bounds were measured so)
        state = ctx.reference if mode is _BRAKE else None
        limited = rate.limited
        cmd.velocity[limited] = state[1][limited] if state is not None else 0.0


def latched_command(ctx: ModeContext, now: float, feedback_ok: bool) -> bool:
    """What the latched stop's mode commands this cycle (see ``Arm.stop``), before the plugins that
    mirror the command and :func:`finish`; False for a release, which commands nothing (then neither runs)."""
    cmd = ctx.command
    mode = ctx.supervisor.mode
    if mode is _BRAKE or mode is _HOLDING:
        position_command(ctx, now, cmd, blind=not feedback_ok)
    m = ctx.supervisor.motion
    if isinstance(m, Release):
        m.command(cmd)
        ctx.rate.reset()
        ctx.reference = None
        return False
    fb = ctx.feedback
    if isinstance(m, Damp):  # gravity + damping at the feedback; without feedback the modules' velocity loop damps
        ctx.reference = None
        m.command(cmd, ctx.loads.gravity_efforts(fb.position if feedback_ok else ctx.last_good_position()),
                  ctx.damping, fb.velocity if feedback_ok else None)
    else:
        latched_position_efforts(ctx, cmd, feedback_ok)
    return True


def latched_position_efforts(ctx: ModeContext, cmd: Command, feedback_ok: bool) -> None:
    """A latched brake's or hold's efforts: gravity, the ramp's deceleration and the unknown load
    fed forward, the joints' ringing after the brake damped (no plugins run)."""
    q = ctx.feedback.position if feedback_ok else cmd.position
    cmd.effort[:] = ctx.loads.gravity_efforts(q)
    if ctx.reference is not None:  # braking: feed the deceleration forward (no plugins run)
        cmd.effort += ctx.planner.missing_effort(ctx.reference, ())
    ctx.loads.feed(q, cmd, ctx.reference)  # the unknown load
    if feedback_ok:  # damp the joints' ringing after the brake (same damping as 'damp'; a plausible speed)
        cmd.effort -= ctx.damping * np.nan_to_num(ctx.plausible_velocity() - cmd.velocity)


def blind_command(ctx: ModeContext, now: float) -> None:
    """A hold or brake command valid without feedback: position, velocity, model gravity there."""
    cmd = ctx.command
    sup = ctx.supervisor
    position_command(ctx, now, cmd, blind=True)
    if sup.mode is _GRAVCOMP:  # hand-guiding without feedback: the hold is safer
        ctx.fire(Trigger.HOLD_AT, Holding(ctx.anchor()))
        position_command(ctx, now, cmd, blind=True)
    cmd.effort[:] = ctx.loads.gravity_efforts(cmd.position)
    if ctx.reference is not None and sup.mode is _BRAKE:
        cmd.effort += ctx.planner.brake_effort(*ctx.reference)
    if sup.mode is not _GRAVCOMP:
        ctx.loads.feed(cmd.position, cmd, ctx.reference)  # the unknown load
    finish(ctx, ctx.feedback.position)
