"""Jogging: integrate a streamed velocity into the arm's position command, inside its loop.

The bridge drops every accepted jog message into a :class:`JogMailbox` (latest value wins: a
velocity stream has no use for old samples). :class:`JogPlugin` is an arm plugin, so it runs
inside :meth:`Arm.update` right after the feedback read and before the command is clamped and
sent: a new velocity reaches the modules in the same cycle it is picked up, without queueing.
Each cycle it

1. takes the newest sample with the dead-man held,
2. turns a Cartesian twist into joint velocities by damped least squares on the end-effector
   Jacobian (:func:`dls_joint_velocity`), scales them into the joints' velocity limits,
3. slews the commanded velocity toward it at no more than ``accel`` [rad/s²],
4. integrates it into the jog position (clamped at the joint limits) and commands both.

Starting and releasing (dead-man let go or ``ttl`` expired) are decided by the arm thread
(:mod:`hebictl.teleop.runner`) at the start of a cycle; after a release the plugin stops
commanding and the Arm brakes from the jog's last command on its own ramp
(:mod:`hebictl.control.braking`), the same ramp as every other stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import ArmState

if TYPE_CHECKING:
    from hebictl.control.arm import Arm
    from hebictl.teleop.schema import JogCommand



@dataclass(frozen=True)
class JogSample:
    """One accepted jog message: ``expiry`` [s, arm clock] = receipt time + ttl."""

    index: int
    space: str
    velocity: FloatArray
    deadman: bool
    expiry: float
    seq: int
    client: str


class JogMailbox:
    """Latest accepted jog sample, written by the bridge thread, read by the arm thread.

    A single attribute assignment publishes a sample atomically, so neither side locks."""

    def __init__(self) -> None:
        self.latest: JogSample | None = None
        self._count = 0

    def offer(self, cmd: JogCommand, received: float) -> JogSample:
        """Publish ``cmd`` received at ``received`` [s, arm clock]."""
        self._count += 1
        sample = JogSample(self._count, cmd.space, cmd.velocity, cmd.deadman, received + cmd.ttl,
                           cmd.envelope.seq, cmd.envelope.client)
        self.latest = sample
        return sample


def dls_joint_velocity(jacobian: ArrayLike, twist: ArrayLike, damping: float) -> FloatArray:
    """Joint velocities ``J^T (J J^T + λ² I)^-1 twist`` (damped least squares).

    ``jacobian`` (6, n) world-frame [linear; angular], ``twist`` [vx vy vz m/s, wx wy wz rad/s],
    ``damping`` λ [m]: near a singularity the solution trades accuracy for bounded joint speed
    instead of blowing up (λ = 0 gives the pseudo-inverse solution)."""
    J = np.asarray(jacobian, dtype=np.float64)
    w = np.asarray(twist, dtype=np.float64)
    JJt = J @ J.T
    JJt[np.diag_indices_from(JJt)] += damping * damping
    return J.T @ np.linalg.solve(JJt, w)


class JogPlugin(ArmPlugin):
    """Drives the arm from a :class:`JogMailbox` while a jog is active (see module doc).

    ``accel`` [rad/s²] per joint (slew limit of the commanded velocity), ``speed_fraction`` of
    each joint's velocity limit a jog may use, ``damping`` [m] of the Cartesian solve."""

    type_name = "TeleopJog"

    def __init__(self, mailbox: JogMailbox, *, accel: ArrayLike = 8.0, speed_fraction: float = 1.0,
                 damping: float = 0.02, max_dt: float = 0.05, name: str = "teleopJog") -> None:
        super().__init__(name, enabled=True)
        self.mailbox = mailbox
        self._accel_in = accel
        self.speed_fraction = float(speed_fraction)
        self.damping = float(damping)
        self.max_dt = float(max_dt)
        self.active = False
        self.position = np.zeros(0)
        self.velocity = np.zeros(0)
        self.sample: JogSample | None = None
        self._target = np.zeros(0)

    def on_associated(self, arm: Arm) -> None:
        n = arm.dof
        self.accel = np.broadcast_to(np.asarray(self._accel_in, dtype=np.float64), (n,)).copy()
        self.position = np.zeros(n)
        self.velocity = np.zeros(n)
        self._target = np.zeros(n)
        self._vmax = np.where(np.isfinite(arm.limits.velocity_max), arm.limits.velocity_max, 1.0) * self.speed_fraction
        self._lo, self._hi = arm.limits.position_min, arm.limits.position_max

    # ---------------------------------------------------------------- called by the arm thread
    def start(self, position: ArrayLike, sample: JogSample) -> None:
        """Begin jogging from ``position`` [rad] (the last commanded position) at rest."""
        self.position[:] = position
        self.velocity.fill(0.0)
        self.sample = sample
        self.active = True

    def halt(self) -> tuple[FloatArray, FloatArray]:
        """Stop jogging; returns the jog's position and velocity at this moment (to brake from)."""
        self.active = False
        return self.position.copy(), self.velocity.copy()

    # ---------------------------------------------------------------- inside Arm.update
    def update(self, arm: Arm, dt: float) -> bool:
        if self.active:
            if arm.state is not ArmState.RUNNING or arm.trajectory is not None:
                self.active = False  # something else owns the arm now
                return True
            self._jog(arm, min(dt, self.max_dt))
        return True

    def _jog(self, arm: Arm, dt: float) -> None:
        latest = self.mailbox.latest
        if latest is not None and latest is not self.sample and latest.deadman:
            self.sample = latest
        sample = self.sample
        target = self._target
        if sample is None:
            target.fill(0.0)
        elif sample.space == "joint":
            np.copyto(target, sample.velocity)
        else:
            J = arm.model.jacobian_end_effector(self.position)
            np.copyto(target, dls_joint_velocity(J, sample.velocity, self.damping))
        # scale uniformly into the velocity limits (keeps the Cartesian direction)
        peak = float(np.max(np.abs(target) / self._vmax))
        if peak > 1.0:
            target /= peak
        step = self.accel * dt
        np.clip(target, self.velocity - step, self.velocity + step, out=self.velocity)
        pos = self.position
        pos += self.velocity * dt
        at_lo, at_hi = pos <= self._lo, pos >= self._hi
        if at_lo.any() or at_hi.any():
            np.clip(pos, self._lo, self._hi, out=pos)
            self.velocity[(at_lo & (self.velocity < 0)) | (at_hi & (self.velocity > 0))] = 0.0
        cmd = arm.pending_command
        cmd.position[:] = pos
        cmd.velocity[:] = self.velocity
        if not math.isfinite(float(pos.sum())):  # never command garbage: fall back to holding
            self.active = False
            cmd.position[:] = arm.last_feedback.position
            cmd.velocity.fill(0.0)
