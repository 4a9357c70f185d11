"""Braking: bring moving joints to rest with a constant deceleration, then hold.

When a jog stream ends or an operator says stop, cutting the velocity command to zero at once
would make the position controller fight the arm's momentum. Instead every joint decelerates
linearly from its current velocity ``v0`` to zero over one common time ``T`` (so the arm stops
along the path it was moving on), which puts the final position at ``p0 + v0 T / 2``.
``T`` is set by the joint that needs longest at ``decel`` [rad/s²] and capped at
``max_duration`` [s] so that a stop always completes quickly.
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
                  max_duration: float = 0.25) -> BrakeProfile:
    """Profile that stops every joint at the same time, decelerating at most ``decel`` [rad/s²]
    per joint unless that would take longer than ``max_duration`` [s]."""
    p = np.array(position, dtype=np.float64)
    v = np.array(velocity, dtype=np.float64)
    v = np.where(np.isfinite(v), v, 0.0)
    a = np.broadcast_to(np.asarray(decel, dtype=np.float64), v.shape)
    T = float(np.max(np.abs(v) / a)) if v.size else 0.0
    return BrakeProfile(start=float(start), position=p, velocity=v, duration=min(T, float(max_duration)))
