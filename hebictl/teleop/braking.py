"""Braking: bring moving joints to rest with a constant deceleration, then hold.

When a jog stream ends or an operator says stop, cutting the velocity command to zero at once
would make the position controller fight the arm's momentum. Instead every joint decelerates
linearly from its current velocity ``v0`` to zero over one common time ``T`` (so the arm stops
along the path it was moving on), which puts the final position at ``p0 + v0 T / 2``.
``T`` is set by the joint that needs longest at ``decel`` [rad/s²]; a joint so fast that this
would take longer than ``max_duration`` [s] brakes harder, but never harder than its rated
deceleration ``max_decel`` (the actuator could not follow, and the arm would overshoot the
commanded stop instead). So a stop is short when it can be and feasible always.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray


@dataclass(frozen=True)
class BrakeProfile:
    """Linear velocity ramp to zero from ``(position, velocity)`` [rad, rad/s] at ``start`` [s]."""

    start: float
    position: FloatArray
    velocity: FloatArray
    duration: float   # s; 0 means already at rest

    @property
    def final_position(self) -> FloatArray:
        """Where the joints come to rest [rad]."""
        return self.position + 0.5 * self.duration * self.velocity

    @property
    def end(self) -> float:
        return self.start + self.duration

    def sample(self, t: float, position_out: FloatArray, velocity_out: FloatArray) -> bool:
        """Write the profile's position and velocity at time ``t`` [s]; False once it has ended."""
        T = self.duration
        s = min(max(t - self.start, 0.0), T)
        if T <= 0.0 or s >= T:
            np.copyto(position_out, self.final_position)
            velocity_out.fill(0.0)
            return False
        np.multiply(self.velocity, s - 0.5 * s * s / T, out=position_out)
        position_out += self.position
        np.multiply(self.velocity, 1.0 - s / T, out=velocity_out)
        return True


def brake_profile(start: float, position: ArrayLike, velocity: ArrayLike, decel: ArrayLike,
                  max_duration: float = 0.25, max_decel: ArrayLike | None = None) -> BrakeProfile:
    """Profile that stops every joint at the same time, decelerating at ``decel`` [rad/s²] per
    joint, harder where that would take longer than ``max_duration`` [s], but never beyond
    ``max_decel`` [rad/s², the rated deceleration; None or inf: unbounded]."""
    p = np.array(position, dtype=np.float64)
    v = np.array(velocity, dtype=np.float64)
    v = np.where(np.isfinite(v), v, 0.0)
    speed = np.abs(v)
    a = np.maximum(np.broadcast_to(np.asarray(decel, dtype=np.float64), v.shape), speed / float(max_duration))
    if max_decel is not None:
        rated = np.broadcast_to(np.asarray(max_decel, dtype=np.float64), v.shape)
        a = np.where(np.isfinite(rated) & (rated > 0), np.minimum(a, rated), a)
    T = float(np.max(np.divide(speed, a, out=np.zeros_like(speed), where=a > 0))) if v.size else 0.0
    return BrakeProfile(start=float(start), position=p, velocity=v, duration=T)
