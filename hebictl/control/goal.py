"""Goals: waypoints an arm should pass through, turned into a trajectory from its current state.

Mirrors ``hebi.arm.Goal``: waypoint times are relative to the moment the goal is set, an
unspecified velocity or acceleration is a *zero* constraint (pass NaN for "free"), and the
trajectory starts from where the arm is commanded to be now, so a goal set mid-motion
blends smoothly instead of jumping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.errors import CommandRejected
from hebictl.trajectory import Trajectory, create_trajectory, estimate_segment_times


@dataclass
class Goal:
    """Waypoints for ``dof`` joints. ``t`` of each waypoint is seconds after the goal is set."""

    dof: int
    times: list[float | None] = field(default_factory=list)
    positions: list[FloatArray] = field(default_factory=list)
    velocities: list[FloatArray] = field(default_factory=list)
    accelerations: list[FloatArray] = field(default_factory=list)

    def _vector(self, value: ArrayLike | None, what: str, default: float) -> FloatArray:
        if value is None:
            return np.full(self.dof, default)
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
        if arr.shape != (self.dof,):
            raise CommandRejected("wrong_length", f"{what} needs {self.dof} values, got {arr.size}")
        return arr

    def add_waypoint(self, t: float | None = None, position: ArrayLike | None = None,
                     velocity: ArrayLike | None = None, acceleration: ArrayLike | None = None) -> Goal:
        """Append a waypoint: position [rad or m] (required), velocity and acceleration (default 0).

        ``t`` [s] after the goal starts; ``None`` for every waypoint lets the arm pick segment
        times from its velocity/acceleration limits.
        """
        if position is None:
            raise CommandRejected("missing_position", "a waypoint needs a position")
        pos = self._vector(position, "position", np.nan)
        if not np.all(np.isfinite(pos)):
            raise CommandRejected("not_finite", "waypoint positions must be finite")
        if t is not None:
            if not np.isfinite(t) or t <= 0.0:
                raise CommandRejected("bad_time", f"waypoint time must be finite and > 0 s, got {t}")
            prev = [x for x in self.times if x is not None]
            if prev and t <= prev[-1]:
                raise CommandRejected("bad_time", f"waypoint times must increase: {t} after {prev[-1]}")
        if self.times and (t is None) != (self.times[0] is None):
            raise CommandRejected("bad_time", "give a time for every waypoint or for none")
        vel = self._vector(velocity, "velocity", 0.0)
        acc = self._vector(acceleration, "acceleration", 0.0)
        if np.any(np.isinf(vel)) or np.any(np.isinf(acc)):
            raise CommandRejected("not_finite", "waypoint velocities/accelerations must be finite or NaN")
        self.times.append(t)
        self.positions.append(pos)
        self.velocities.append(vel)
        self.accelerations.append(acc)
        return self

    @property
    def waypoint_count(self) -> int:
        return len(self.positions)

    def build_trajectory(self, start_time: float, position: FloatArray, velocity: FloatArray,
                         acceleration: FloatArray, max_velocity: FloatArray | None = None,
                         max_acceleration: FloatArray | None = None) -> Trajectory:
        """Trajectory from the current state (at ``start_time`` [s]) through the waypoints."""
        if not self.positions:
            raise CommandRejected("empty_goal", "the goal has no waypoints")
        pos = np.column_stack([position, *self.positions])
        vel = np.column_stack([velocity, *self.velocities])
        acc = np.column_stack([acceleration, *self.accelerations])
        if self.times[0] is None:
            vmax = max_velocity if max_velocity is not None else np.full(self.dof, 1.0)
            amax = max_acceleration if max_acceleration is not None else np.full(self.dof, 2.0)
            seg = estimate_segment_times(pos, np.where(np.isfinite(vmax), vmax, 1.0),
                                         np.where(np.isfinite(amax), amax, 2.0))
            rel = np.concatenate([[0.0], np.cumsum(seg)])
        else:
            rel = np.array([0.0, *self.times], dtype=np.float64)
        return create_trajectory(start_time + rel, pos, vel, acc)
