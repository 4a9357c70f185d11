"""Jogging: the arm follows a streamed velocity (joint or Cartesian), integrated into its command.

The value owns the jog's data: the stream it reads (latest sample wins), the sample it is following,
its integrated position and velocity, the sag it learned (a steady position error under a load the
model does not know, which is no lead), whether a Cartesian jog crept to a stop, and what the last
cycle scaled the jog by. The command law is :class:`hebictl.control.jog_law.JogLaw`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.jog_law import REST_SPEED, SAG_TIME_CONSTANT, JogLaw, JogSample, JogStream
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.kinds import Mode, Trigger

if TYPE_CHECKING:
    from hebictl.control.modes.context import ModeContext
    from hebictl.hardware.base import Command, Feedback


@dataclass(eq=False)
class Jogging:
    """A running jog (see module doc). ``position``/``velocity`` [rad or m, /s]: the jog's command;
    ``offset``: the learned sag (command - measured at rest); ``damps``: the hold it started from
    damped a brake's ringing, which the jog goes on damping (as the hold would have)."""

    law: JogLaw
    stream: JogStream
    sample: JogSample
    position: FloatArray
    velocity: FloatArray
    offset: FloatArray
    damps: bool = False
    crept: bool = False
    cartesian: bool = False
    target: FloatArray = field(default_factory=lambda: np.zeros(0))
    scales: dict[str, float] = field(default_factory=lambda: {"direction": 1.0, "limits": 1.0, "collision": 1.0})
    rejoin_until: float = -math.inf
    kind: ClassVar[Mode] = Mode.JOG

    @classmethod
    def begin(cls, law: JogLaw, stream: JogStream, sample: JogSample, position: FloatArray,
              velocity: FloatArray | None = None, measured: FloatArray | None = None) -> Jogging:
        """A jog from ``position`` (the last command) at ``velocity`` (default: rest). Where the arm is
        ``measured``, the command's offset from it is taken as sag from the start (an unknown load is
        fed forward in every mode, so the arm is not sagged away from the command and the jog carries
        on from it without a step)."""
        p = np.array(position, dtype=np.float64)
        v = np.zeros_like(p) if velocity is None else np.array(velocity, dtype=np.float64)
        offset = np.zeros_like(p)
        if measured is not None and np.all(np.isfinite(measured)):
            offset = p - measured
        return cls(law, stream, sample, p, v, offset, target=np.zeros_like(p))

    def take(self, now: float) -> JogSample | None:
        """The sample to follow this cycle: the newest with the dead-man held; None once let go or
        expired (since the stream's owner last looked, up to a period ago: the jog slows toward rest
        in this cycle's command already, the owner's brake takes over at the next)."""
        latest = self.stream.latest
        if latest is not None and latest is not self.sample and latest.deadman:
            self.sample = latest
        sample: JogSample | None = self.sample
        if (latest is not None and not latest.deadman) or now > self.sample.expiry:
            sample = None
        self.cartesian = sample is not None and sample.space != "joint"
        return sample

    def learn_sag(self, error: FloatArray, measured_velocity: FloatArray, dt: float) -> None:
        """Follow the static part of the position error (command - feedback) on joints at rest.

        A joint whose command and measurement are both still is not lagging: its error is sag (an
        unknown payload's torque over the position loop's stiffness), and that changes with the
        pose. Counted as lead it stalled the jog for good (measured on the sim: the r6 wrist with
        1 kg sagged 77 mrad after 0.5 rad of travel and the jog never moved again)."""
        # a NaN velocity reading counts as still (not >= REST_SPEED)
        still = (np.abs(self.velocity) < REST_SPEED) & ~(np.abs(measured_velocity) >= REST_SPEED)
        if still.any():
            k = min(1.0, dt / SAG_TIME_CONSTANT)
            self.offset[still] += k * (error[still] - self.offset[still])

    def command(self, now: float, dt: float, period: float, measured: FloatArray, measured_velocity: FloatArray,
                cmd: Command) -> FloatArray | None:
        """This cycle's jog command into ``cmd`` (:meth:`JogLaw.step`); returns its acceleration,
        None if it is not finite (the Arm then holds where the arm is)."""
        return self.law.step(self, now, dt, period, measured, measured_velocity, cmd)

    def position_command(self, ctx: ModeContext, now: float, cmd: Command, blind: bool) -> None:
        """The mode's position and velocity ahead of its law, which runs among the plugins (:meth:`step`,
        from ``Arm._run_plugins``): the jog's last command (at rest when ``blind``: no law runs then)."""
        ctx.reference = None
        self.placeholder(cmd)
        if blind:
            cmd.velocity.fill(0.0)

    def placeholder(self, cmd: Command) -> None:
        """The jog's last command (what the plugins before the jog's turn in the cycle see)."""
        cmd.position[:] = self.position
        cmd.velocity[:] = self.velocity

    def step(self, ctx: ModeContext, fb: Feedback, now: float) -> None:
        """The jog's command (:meth:`command`), with its acceleration fed forward: the rigid-body
        dynamics at the commanded state, less what the feed-forward plugins added (without it the
        joints lag by their own inertia while speeding up and overshoot after stopping, and the end
        effector leaves its direction), and the unknown load's inertia. A result that is not finite is
        never commanded: the arm holds where it is instead."""
        cmd = ctx.command
        accel = self.command(now, ctx.cycle.dt, ctx.cycle.nominal, fb.position, fb.velocity, cmd)
        if accel is None:
            cmd.position[:] = fb.position
            cmd.velocity.fill(0.0)
            ctx.fire(Trigger.HOLD_AT, Holding(fb.position.copy()))
            return
        cmd.effort += ctx.planner.missing_effort((self.position, self.velocity, accel), ctx.plugins)
        ctx.loads.feedforward.accelerate(accel)
