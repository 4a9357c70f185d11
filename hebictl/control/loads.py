"""What the arm carries beyond its model, and the gravity it weighs under: :class:`Loads`.

Three things add effort to a command for a load: the gravity vector (an IMU plugin's, else the
model's), a payload the user declared (:meth:`hebictl.control.arm.Arm.set_payload`: in the
gravity model of holds, stops and monitors) and the unknown load the model-mismatch monitor
estimates (fed forward by :mod:`hebictl.control.payload_feedforward` in every position mode).
They were Arm methods spread between its cycle and its stops; here they are one object the arm's
cycle asks, so no mode computes a load's effort its own way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.monitors import Payload
from hebictl.control.monitors.payload import payload_efforts
from hebictl.control.payload_feedforward import PayloadFeedForward
from hebictl.errors import ConfigError

if TYPE_CHECKING:
    from hebictl.control.plugins import ArmPlugin
    from hebictl.hardware.base import Command
    from hebictl.model.robot import RobotModel

__all__ = ["Loads"]


class Loads:
    """The gravity vector, the declared payload and the unknown load's feed-forward of one arm.

    ``plugins``: the arm's plugin list itself (not a copy): the first gravity source among them
    gives the gravity. ``measured``: the backend measures effort, so the unknown load can be
    estimated and fed forward (see :class:`PayloadFeedForward`)."""

    def __init__(self, model: RobotModel, plugins: Sequence[ArmPlugin], *, measured: bool) -> None:
        self.model = model
        self.plugins = plugins
        #: a payload the gravity model includes (:meth:`declare`), else None
        self.payload: Payload | None = None
        #: the feed-forward of the end-effector load the model does not know (every position mode)
        self.feedforward = PayloadFeedForward(model, measured=measured)

    def gravity_vector(self) -> FloatArray:
        """The first gravity source plugin's gravity (an IMU's), else the model's."""
        for p in self.plugins:
            if p.gravity_source:
                g = p.gravity_vector()
                if g is not None:
                    return g
        return self.model.gravity

    def gravity_efforts(self, q: FloatArray) -> FloatArray:
        """The model's gravity compensation at ``q`` with the declared payload (NaN where ``q`` is not finite)."""
        g = self.gravity_vector()
        if not np.all(np.isfinite(q)):
            return np.full(self.model.dof, np.nan)
        out = self.model.gravity_compensation(q, g)
        if self.payload is not None:  # a payload declared with set_payload
            out += payload_efforts(self.model, q, self.payload, g)
        return out

    def declared_efforts(self, q: FloatArray, cmd: Command) -> None:
        """Add the declared payload's gravity at ``q`` to a position command (plugins give the
        model's own gravity; nothing without a payload or a position)."""
        if self.payload is not None and np.all(np.isfinite(cmd.position)):
            cmd.effort += payload_efforts(self.model, q, self.payload, self.gravity_vector())

    def declare(self, mass: float, com: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Include an end-effector payload of ``mass`` [kg] at ``com`` [m, end-effector frame] in
        the gravity model; ``mass=0`` removes it. The feed-forward gives up what the model now carries."""
        m = float(mass)
        if not (math.isfinite(m) and m >= 0.0):
            raise ConfigError(f"payload mass must be finite and >= 0 kg, got {mass!r}", key="payload")
        c = np.asarray(com, dtype=np.float64)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ConfigError(f"payload com must be 3 finite numbers [m], got {com!r}", key="payload")
        before = self.payload.mass if self.payload is not None else 0.0
        self.payload = Payload(m, c) if m > 0.0 else None
        self.feedforward.model_took(m - before)  # the model carries it now: not fed forward twice

    def feed(self, q: FloatArray, cmd: Command, state: tuple[FloatArray, FloatArray, FloatArray] | None) -> None:
        """Add the unknown load's feed-forward at ``q`` to a position command: weight, and inertia
        along ``state`` (the cycle's trajectory or brake ramp sample; without one a jog's command
        velocity gives the direction, its acceleration it feeds itself). Nothing when no load is estimated."""
        ff = self.feedforward
        if ff.mass == 0.0:
            return
        v: FloatArray | None = None
        a: FloatArray | None = None
        if state is not None:  # a goal or a brake ramp (at full speed the velocity-product term matters:
            # without it in a goal, r6 with 1 kg stopped from 0.95x rated in 0.485 s instead of 0.39 s)
            v, a = state[1], state[2]
        elif math.isfinite(float(cmd.velocity.sum())):
            v = cmd.velocity  # a jog (the hold's command is still): its direction depends on it
        cmd.effort += ff.effort(q, v, a, self.gravity_vector())

    def follow(self, estimate: dict[str, Any] | None, dt: float, hold_target: FloatArray | None,
               measured: FloatArray) -> None:
        """Move the unknown load's feed-forward toward the monitor's ``estimate``; a hold takes the
        load over where the arm is: its ``hold_target`` follows the feed-forward's ramp to the
        ``measured`` position, so nothing moves (a latched hold least of all)."""
        ff = self.feedforward
        if ff.measured and (ff.active or estimate is not None):
            ff.follow(estimate, dt)
            if hold_target is not None:
                ff.carry_over(hold_target, measured)
