"""GravityCompensationEffort: the joint efforts that hold the arm against gravity.

Differs from hebi-py on purpose in one way: it falls back to a configured gravity vector
(default: the model's, i.e. world -z) when the IMU module reports no orientation, instead of
producing NaN (hebi-py's plugin does on an imitation group).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name


def _gravity_direction(w: float, x: float, y: float, z: float) -> tuple[float, float, float]:
    """World -z expressed in the frame of an IMU with orientation (w, x, y, z) (R^T @ [0, 0, -1])."""
    return -2.0 * (x * z - y * w), -2.0 * (y * z + x * w), -1.0 + 2.0 * (x * x + y * y)


def gravity_from_quaternion(q: FloatArray) -> FloatArray:
    """Unit vector of gravity (world -z) in the frame of an IMU with orientation q (w x y z)."""
    return np.array(_gravity_direction(*(float(v) for v in q)))


class GravityCompensationEffort(ArmPlugin):
    """Adds the efforts that hold the arm against gravity at the feedback position.

    Gravity's direction comes from module ``imu_feedback_index``'s IMU, rotated into the world
    through input frame ``imu_frame_index`` and ``imu_rotation_offset``, exactly like hebi-py;
    if that module reports no orientation (NaN: e.g. hebi's imitation group), ``gravity``
    [m/s², world] is used instead.
    """

    type_name = "GravityCompensationEffort"
    gravity_source = True

    def __init__(self, name: str = default_name("GravityCompensationEffort"), enabled: bool = True,
                 ramp_time: float = 0.0, *, imu_feedback_index: int = 0, imu_frame_index: int = 0,
                 imu_rotation_offset: ArrayLike | None = None, gravity: ArrayLike | None = None) -> None:
        super().__init__(name, enabled, ramp_time)
        self.imu_feedback_index = int(imu_feedback_index)
        self.imu_frame_index = int(imu_frame_index)
        off = np.eye(3) if imu_rotation_offset is None else np.asarray(imu_rotation_offset, dtype=np.float64)
        self.imu_rotation_offset = off.reshape(3, 3)
        self.fallback_gravity = None if gravity is None else np.asarray(gravity, dtype=np.float64).reshape(3)
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.efforts = np.zeros(0)
        self._g_imu = np.zeros(3)
        self._static_rotation: FloatArray | None = None
        #: False once the IMU was found implausible (hebictl.control.monitors.imu): the configured
        #: gravity is used from then on
        self.use_imu = True

    def on_associated(self, arm: ArmView) -> None:
        if self.fallback_gravity is None:
            self.fallback_gravity = arm.model.gravity.copy()
        self.efforts = np.zeros(arm.dof)
        # an IMU on the base module (the usual case) sits on a frame no joint moves: rotate once
        static = arm.model.static_frame_pose("input", self.imu_frame_index)
        self._static_rotation = None if static is None else static[:3, :3] @ self.imu_rotation_offset

    def world_gravity(self, arm: ArmView) -> FloatArray:
        """Gravity [m/s², world] from the IMU, or the fallback vector when there is none.

        Scalar arithmetic on purpose: this runs every cycle and numpy's per-call overhead on
        3-vectors would cost more than the maths.
        """
        orientation = arm.last_feedback.orientation
        if not self.use_imu:
            return self.fallback_gravity  # type: ignore[return-value]  # set by on_associated
        if math.isnan(orientation[self.imu_feedback_index, 0]):  # no IMU (the usual NaN row): one lookup
            return self.fallback_gravity  # type: ignore[return-value]  # set by on_associated
        w, x, y, z = orientation[self.imu_feedback_index]
        if not math.isfinite(w + x + y + z):
            return self.fallback_gravity  # type: ignore[return-value]  # set by on_associated
        gx, gy, gz = _gravity_direction(w, x, y, z)
        norm = math.sqrt(gx * gx + gy * gy + gz * gz)
        k = 9.81 / norm if norm > 0.0 else 0.0
        g = self._g_imu
        g[0], g[1], g[2] = gx * k, gy * k, gz * k
        if self._static_rotation is not None:
            return self._static_rotation @ g
        frame = arm.input_frames()[self.imu_frame_index, :3, :3]
        return frame @ (self.imu_rotation_offset @ g)

    def gravity_vector(self) -> FloatArray:
        """The gravity of the last cycle: the IMU's, or the configured one without it."""
        return self.gravity

    def update(self, arm: ArmView, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio == 0.0:
            return True
        self.gravity = self.world_gravity(arm)
        arm.model.gravity_compensation_into(arm.last_feedback.position, self.gravity, self.efforts)
        if self.enabled_ratio != 1.0:
            self.efforts *= self.enabled_ratio
        arm.pending_command.effort += self.efforts
        return True
