"""Braking: a brake ramp (:class:`~hebictl.control.motion.Brake`) to standstill, and how it ends.

The value owns everything a brake decides with: the ramp, whether it was started from the measured
state (``chase``: a monitor, a module's return or an M-stop release; the modules were not following
the command), whether the arm was then faster than the rated speed the ramp may start from
(``overrun``: it fell or was flung), how often it braked again for that reason, and the ramp's own
clock (how far along the ramp the last command was, see :meth:`Braking.ramp_time`).

The brake's law is here too: where a brake from a live command starts (:func:`brake_start`), the ramp
from the measured velocity at the deceleration the actuators can deliver (:func:`new_brake`, within
:func:`ramp_bounds`), its sample each cycle and its braking again (:meth:`Braking.step`), and its end
in a hold at the stopping point (:meth:`Braking.end`). They read and write the arm through a
:class:`~hebictl.control.modes.context.ModeContext`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from numpy.typing import NDArray

from hebictl._typing import FloatArray
from hebictl.control.cycle_clock import FRESH_S
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.kinds import IdleBehaviour, Mode, Trigger
from hebictl.control.motion import Brake
from hebictl.control.safety import ArmState, EventKind

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command

#: [rad or m] a moving joint's brake starts from its measured position only if its command lags or leads
#: it by more than this (below, the step is not worth it: the ramp starts from the command exactly)
LAG_MIN_RAD = 1e-3
#: [cycles] a blind brake ramp is commanded this far ahead of the cycle's time (x the blind cycle's
#: length, at least the nominal period): the middle of the time the modules hold each command for
#: (see :func:`hebictl.control.modes.command.position_command`)
BLIND_LEAD = 0.5
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
    #: [rad] per joint, where a joint that ran ahead of an overrun brake's ramp came to rest (NaN:
    #: still on the ramp; None: none yet): see :meth:`land`
    landed: FloatArray | None = None
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

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        """The mode's position and velocity this cycle: the ramp's (:meth:`step`), ``BLIND_LEAD`` of the
        cycle ahead when ``blind`` (see :func:`hebictl.control.modes.command.position_command`); once the
        ramp has ended, the command of the mode it ended in (a hold, then maybe a damp or release)."""
        state = self.step(ctx, now, BLIND_LEAD * max(ctx.cycle.dt, ctx.cycle.nominal) if blind else 0.0)
        if state is not None:
            cmd.position[:] = state[0]
            cmd.velocity[:] = state[1]
            if self.overrun and not blind:
                self.land(ctx, now, cmd)
            return
        ctx.supervisor.motion.position_command(ctx, now, cmd, blind)

    def land(self, ctx: ModeContext, now: float, cmd: Command) -> None:
        """An overrun brake (the arm fell or was flung faster than the rated speed its ramp starts
        from): a joint that ran ahead of the ramp along its braking direction and is now slower than
        the ramp there is held where it is, the command landing on it and following it on along that
        direction until it stops (velocity command zero: the modules' loops brake it), never pulled
        back onto the ramp that trails it (or onto the command the rate limiter carries on from before
        a control gap). While the arm is faster than its ramp, the ramp's lag is what stops the fall
        (the position loop pulls against it); once the ramp is the faster, the same lag drives the
        joint back toward where it fell from (r6 after an 800 ms stall mid-goal: the ramp 0.27 rad
        behind a shoulder that had stopped, the end effector pulled back 12.9 mm; an elbow pulled
        back dragged the shoulder on, 45 mm). A command step onto the measured position, along the
        motion, commands no motion."""
        if not ctx.fresh():
            return
        direction = np.sign(self.ramp.v0)
        meas = ctx.feedback.position
        along = ctx.measured_velocity(now, math.inf) * direction
        if self.landed is None:
            self.landed = np.full(ctx.dof, np.nan)
        landed = self.landed
        last = ctx.rate.last  # what the modules hold: after a gap the rate limiter carries it from before
        commanded = np.where(np.isfinite(last), last, cmd.position)
        ahead = (direction != 0.0) & ((meas - commanded) * direction > LAG_MIN_RAD)
        new = ahead & (along <= np.abs(cmd.velocity)) & np.isnan(landed)
        np.copyto(landed, meas, where=new)
        np.copyto(landed, meas, where=(meas - landed) * direction > 0.0)  # (NaN: False) it went on: follow
        held = np.isfinite(landed)
        if not bool(held.any()):
            return
        np.copyto(cmd.position, landed, where=held)
        np.copyto(cmd.velocity, 0.0, where=held)
        np.copyto(ctx.rate.last, landed, where=held)  # the rate limiter starts the held joints there
        lim = ctx.limits  # held where it fell, even past a limit (the others: as they are)
        ctx.allow_outside(np.where(held, landed, np.clip(meas, lim.position_min, lim.position_max)))
        if ctx.reference is not None:  # what is fed forward (gravity, the ramp's deceleration): there too;
            # a held joint still moving on keeps the ramp's deceleration (the braking the lag gave), a
            # stopped one none (nothing pushes it back)
            p, v, a = (x.copy() for x in ctx.reference)
            np.copyto(p, landed, where=held)
            v[held] = 0.0
            a[held & (along <= ctx.safety.at_goal_velocity_tolerance)] = 0.0
            ctx.reference = (p, v, a)

    def step(self, ctx: ModeContext, now: float, lead: float = 0.0) -> State | None:
        """The brake ramp at ``now + lead`` (:meth:`sample`); once it has ended, brake again
        (:meth:`may_rebrake`) or hold where the arm stopped (:meth:`end`: then a pending damp or
        release, or the idle hand-guiding). Sets and returns the ramp's state, None once it has ended."""
        state = self.sample(now, lead)
        if state is None and self.may_rebrake(ctx.speed(), ctx.fresh()):
            # brake again from where the arm is rather than hold a point it runs past and is pulled back to
            # (from the measured position; the command lands there, a step onto the arm, except after a control
            # gap: then the rate limiter carries it on at most at the rated speed, no step follows a gap)
            latch = ctx.supervisor.latch
            gap = latch is not None and latch.cause == EventKind.CONTROL_GAP.value
            again = new_brake(ctx, now, ctx.anchor(True, apply=not gap), chase=True, again=self)
            ctx.supervisor.restart_brake(again)
            state = again.ramp.state(now)
        ctx.reference = state
        if state is None:
            self.end(ctx)
        return state

    def end(self, ctx: ModeContext) -> None:
        """The ramp has ended: hold at its stopping point (:meth:`stopping_point`), then do what was
        pending (a damp or release stop), or the idle hand-guiding."""
        c = ctx.cycle
        fresh = c.have_feedback and c.now - c.fresh_time <= FRESH_S
        measured = ctx.feedback.position if fresh else None
        target, over = self.stopping_point(ctx.rate.last, measured, ctx.safety.at_goal_velocity_tolerance,
                                           ctx.planner.payload_mass != 0.0)
        # a joint that lagged the ramp (a payload the model does not know) lands the command on it; after a
        # brake a monitor started from the measured state (a control gap: the limp arm fell, maybe faster than
        # the rated speed the ramp could start from) the rate limiter carries the command on to the arm at
        # most at the rated speed instead (no step above it after a gap)
        if over is not None and measured is not None and not self.chase:
            np.copyto(ctx.rate.last, measured, where=over)
        sup = ctx.supervisor
        pending = sup.pending
        sup.fire(Trigger.STILL, Holding(ctx.anchor(command=target), after=self.ramp))
        if pending is not None:
            ctx.fire(pending)
        elif sup.idle is IdleBehaviour.GRAVCOMP and sup.level is ArmState.RUNNING:
            ctx.fire(Trigger.GRAVCOMP)


def new_brake(ctx: ModeContext, now: float, p: FloatArray, chase: bool = False,
              again: Braking | None = None) -> Braking:
    """The brake ramp from ``p`` and the measured velocity, at the deceleration the actuators
    can deliver with the effort the modules measure (:mod:`hebictl.control.braking`).
    ``chase``: started from the measured state by a monitor (see :meth:`Braking.stopping_point`);
    ``again``: the brake from the measured state that ended with the arm still moving."""
    ff = ctx.loads.feedforward
    if ff.measured:
        ff.retarget(ctx.payload_estimate())
    planner = ctx.planner
    planner.set_payload_mass(ff.mass, ff.com)
    v = ctx.measured_velocity(now)
    overrun = again.overrun if again is not None else False
    if chase:  # started from the measured state: the modules were not following the command (a module came
        # back, an M-stop was released, the loop stalled, a monitor reacted); the effort they measure as
        # they take it up again is a transient (saturated at an M-stop release), not a load: the model's
        # gravity and the estimated unknown load count instead
        if again is None:  # the arm runs faster than the ramp may start from (the rated speed): it fell or
            # was flung without a command; it is stopped with the effort it has, not the rated deceleration
            # that shapes commanded motion, and may brake again at the ramp's end
            fast = ctx.measured_velocity(now, math.inf)
            overrun = bool(np.any(np.abs(fast) > np.abs(v) + 1e-9))
        amax = planner.deceleration(p, ctx.loads.gravity_vector(), None, rated=not overrun)
    else:
        amax = planner.deceleration(p, ctx.loads.gravity_vector(),
                                    ctx.feedback.effort if ctx.cycle.have_feedback else None)
    lo, hi = ramp_bounds(ctx, now, p, v, amax, chase)
    # the arm does not follow a ramp from the measured state, or with a load the model does not know, exactly:
    # its deceleration ends more gently (docs/supervisor.md, "The brake ramp")
    ramp = Brake(now, p, v, amax, ctx.limits.velocity_max, lo, hi, hold=ctx.cycle.nominal,
                 taper=Brake.taper_for(chase, planner.payload_mass != 0.0))
    return Braking(ramp, chase=chase, overrun=overrun, rebrakes=again.rebrakes + 1 if again is not None else 0)


def ramp_bounds(ctx: ModeContext, now: float, p: FloatArray, v: FloatArray, amax: FloatArray,
                chase: bool) -> tuple[FloatArray, FloatArray]:
    """The positions a brake ramp from ``p`` may end in: the limits, or the recovery range of a
    brake from the measured state that takes in the ramp's stopping point of a joint outside them.

    A joint outside its limits (it fell or swung there while nothing commanded it, e.g. an M-stop
    with MotorOff) still moving outward is braked along its way, not pulled back to the limit by a
    ramp clipped there (x6's base, 6 rad past its limit at 1.5 rad/s: 124 mrad of position error
    and a 1.1 rad/s swing back)."""
    lim = ctx.limits
    lo, hi = lim.position_min, lim.position_max
    if not chase or ctx.supervisor.recovery is None:
        return lo, hi
    outside = (p < lo) | (p > hi)
    if bool(np.any(outside)):
        free = Brake(now, p, v, amax, lim.velocity_max, np.full(ctx.dof, -np.inf), np.full(ctx.dof, np.inf))
        ctx.allow_outside(np.where(outside, free.target, p))
    recovery = ctx.supervisor.recovery
    return recovery if recovery is not None else (lo, hi)


def brake_start(ctx: ModeContext, now: float) -> FloatArray:
    """Where a brake from a live command starts: a moving joint from its measured position (the
    position loop's tracking lag would otherwise keep pushing it on and the hold would ring), a
    still joint from its last command (its sag under load). The rate limiter carries the command
    onto the ramp, at most rated speed x dt per cycle, the velocity command staying the ramp's (the
    measured one: :func:`hebictl.control.modes.command.finish`). Landing the command on the arm in one
    cycle stepped 1.21x rated on r6 (its base trails its command by 41 mrad at 0.8x rated, two rated
    steps) when the brake started inside a cycle (a NaN reading, a module gone)."""
    last = ctx.rate.last
    fb = ctx.feedback
    p = np.where(np.isfinite(last), last, fb.position)
    age = now - ctx.cycle.fresh_time
    if not ctx.cycle.fresh(now):
        return p
    v = ctx.measured_velocity(now)
    est = fb.position + v * age
    moving = (np.abs(v) > ctx.safety.at_goal_velocity_tolerance) & (np.abs(est - p) > LAG_MIN_RAD)
    if ctx.planner.payload_mass != 0.0:  # the load is fed forward: no joint needs its sag
        moving = np.abs(est - p) > LAG_MIN_RAD
    np.copyto(p, est, where=moving)
    return p  # the rate limiter carries the command there
