"""Jogging from teleop: the sample stream and the handle the runner starts and ends a jog with.

The jog is a mode of the arm (``arm.mode == "jog"``, :class:`hebictl.control.modes.Jogging`); its
command law (joint and Cartesian jog, limits, collision slow-down, no catch-up after a late cycle)
is :mod:`hebictl.control.jog_law`. What stays here is the teleop side:

* :class:`JogMailbox`: the bridge drops every accepted jog message into it (latest value wins: a
  velocity stream has no use for old samples); the running jog reads it inside the arm's cycle,
  right after the feedback read, so a new velocity reaches the modules in the cycle it is picked up.
  A sample's ``ttl`` is capped at :data:`MAX_TTL`; a longer one is refused ``ttl_too_long``, so a
  silent client stops the arm within half a second.
* :class:`ArmJog` (the old name :class:`JogPlugin` is kept): the jog's settings on one arm
  (:func:`attach`), :meth:`ArmJog.start` (the arm jogs from the commanded state) and
  :meth:`ArmJog.halt` (the arm brakes from the jog's command on its own ramp,
  :mod:`hebictl.control.braking`, then holds, the same ramp as every other stop).

Starting and releasing (dead-man let go or ``ttl`` expired) are decided by the arm thread
(:mod:`hebictl.teleop.runner`) at the start of a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.jog_law import (
    BRAKE_FACTOR,
    CATCH_UP,
    CREEP_FRACTION,
    CREEP_RESUME,
    FULL_SPEED_DIRECTION_ERROR,
    LIMIT_BRAKE_FRACTION,
    LOOKAHEAD,
    MAX_ACCEL,
    MAX_DIRECTION_ERROR,
    MAX_LEAD,
    REST_SPEED,
    SAG_CHECK,
    SAG_TIME_CONSTANT,
    SPEED_HEADROOM,
    STOP_DECELERATION,
    JogLaw,
    JogSample,
    direction_scale,
    dls_joint_velocity,
)
from hebictl.control.modes import Jogging
from hebictl.errors import CommandRejected
from hebictl.teleop.schema import MAX_JOG_TTL

if TYPE_CHECKING:
    from hebictl.collision.world import CollisionWorld
    from hebictl.control.arm import Arm
    from hebictl.teleop.schema import JogCommand

__all__ = ["BRAKE_FACTOR", "CATCH_UP", "CREEP_FRACTION", "CREEP_RESUME", "FULL_SPEED_DIRECTION_ERROR",
           "LIMIT_BRAKE_FRACTION", "LOOKAHEAD", "MAX_ACCEL", "MAX_DIRECTION_ERROR", "MAX_LEAD", "MAX_TTL",
           "REST_SPEED", "SAG_CHECK", "SAG_TIME_CONSTANT", "SPEED_HEADROOM", "STOP_DECELERATION", "ArmJog",
           "JogMailbox", "JogPlugin", "JogSample", "attach", "direction_scale", "dls_joint_velocity"]

#: [s] the longest a jog sample may stay valid: the schema's cap, checked again here for a sample
#: that did not come through the schema (a direct ``offer``)
MAX_TTL = MAX_JOG_TTL


class JogMailbox:
    """Latest accepted jog sample, written by the bridge thread, read by the arm thread.

    A single attribute assignment publishes a sample atomically, so neither side locks."""

    def __init__(self) -> None:
        self.latest: JogSample | None = None
        self._count = 0

    def offer(self, cmd: JogCommand, received: float) -> JogSample:
        """Publish ``cmd`` received at ``received`` [s, arm clock]; a ``ttl`` over :data:`MAX_TTL` is refused."""
        if not cmd.ttl <= MAX_TTL:
            raise CommandRejected("ttl_too_long", f"a jog sample may be valid for at most {MAX_TTL:g} s, this one "
                                                  f"asks {cmd.ttl:g} s; stream samples more often")
        self._count += 1
        sample = JogSample(self._count, cmd.space, cmd.velocity, cmd.deadman, received + cmd.ttl,
                           cmd.envelope.seq, cmd.envelope.client)
        self.latest = sample
        return sample


class ArmJog:
    """The teleop handle of one arm's jog: its settings and mailbox; the jog itself is the arm's mode.

    ``accel`` [rad/s²] per joint (slew limit of the commanded velocity), ``speed_fraction`` of each
    joint's velocity limit a jog may use, ``damping`` [m] of the Cartesian solve, ``max_dt`` [s] the
    longest cycle integrated (see :class:`~hebictl.control.jog_law.JogLaw`)."""

    def __init__(self, mailbox: JogMailbox, *, accel: ArrayLike = 8.0, speed_fraction: float = 1.0,
                 damping: float = 0.02, max_dt: float = 0.05, name: str = "teleopJog") -> None:
        self.mailbox = mailbox
        self.name = name
        self.accel = accel
        self.speed_fraction = float(speed_fraction)
        self.damping = float(damping)
        self.max_dt = float(max_dt)
        self._arm: Arm | None = None
        self._law: JogLaw | None = None
        self._jog: Jogging | None = None  # the last jog started (kept after it ended: where it was)

    def attach(self, arm: Arm) -> None:
        self._arm = arm
        self._law = JogLaw(arm.model, arm.limits, accel=self.accel, speed_fraction=self.speed_fraction,
                           damping=self.damping, max_dt=self.max_dt)

    @property
    def law(self) -> JogLaw:
        if self._law is None:
            raise RuntimeError("the jog is not attached to an arm (attach(arm, jog))")
        return self._law

    @property
    def world(self) -> CollisionWorld | None:
        return self.law.world

    @property
    def active(self) -> bool:
        """The arm is jogging with this handle's last jog (``arm.mode == "jog"``)."""
        return self._arm is not None and self._jog is not None and self._arm.jogging is self._jog

    @property
    def sample(self) -> JogSample | None:
        return None if self._jog is None else self._jog.sample

    @property
    def position(self) -> FloatArray:
        """The (last) jog's commanded position [rad]."""
        return self._jog.position if self._jog is not None else np.zeros(0)

    @property
    def velocity(self) -> FloatArray:
        return self._jog.velocity if self._jog is not None else np.zeros(0)

    @property
    def scales(self) -> dict[str, float]:
        """What the last cycle scaled the jog by: direction, limits, collision (1 = not slowed)."""
        return self._jog.scales if self._jog is not None else {"direction": 1.0, "limits": 1.0, "collision": 1.0}

    def start(self, position: ArrayLike, sample: JogSample, velocity: ArrayLike | None = None) -> None:
        """The arm jogs from ``position`` [rad] (the last commanded position) at ``velocity`` (default
        rest), following the mailbox from ``sample`` on. An end-effector load the model does not know
        is fed forward by the arm in every mode (the hold before the jog included), so the arm is not
        sagged away from that command and the jog carries on from it without a step."""
        arm = self._arm
        if arm is None:
            raise RuntimeError("the jog is not attached to an arm (attach(arm, jog))")
        jog = Jogging.begin(self.law, self.mailbox, sample, np.asarray(position, dtype=np.float64),
                            None if velocity is None else np.asarray(velocity, dtype=np.float64),
                            arm.last_feedback.position)
        arm.start_jog(jog)
        self._jog = jog

    def halt(self) -> tuple[FloatArray, FloatArray]:
        """End the jog (the arm brakes from its command if it moves, else holds there); returns the
        jog's position and velocity at this moment."""
        p, v = self.position.copy(), self.velocity.copy()
        if self.active and self._arm is not None:
            self._arm.end_jog()
        return p, v


#: the old name (the jog was an arm plugin)
JogPlugin = ArmJog


def attach(arm: Arm, jog: ArmJog) -> None:
    """Give ``jog`` its arm (its law is built on the arm's model, limits and collision world)."""
    jog.attach(arm)
