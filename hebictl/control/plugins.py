"""Arm plugins: one class per HEBI plugin type, each adding its share to the pending command.

Semantics follow hebi-py's ``hebi.arm`` plugins (same names, parameters and ramping), so a
robot-config YAML written for hebi-py behaves the same here. Differences, on purpose:

* GravityCompensationEffort falls back to a configured gravity vector (default: the model's,
  i.e. world -z) when the IMU module reports no orientation, instead of producing NaN
  (hebi-py's plugin does on an imitation group).
* DynamicsCompensationEffort uses full rigid-body inverse dynamics at the commanded state
  (rotational inertia and velocity-product terms included); hebi-py's ignores rotational inertia.

Plugins run in the 1 kHz hot path: they keep preallocated buffers and return a bool instead of
raising.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from hebictl._typing import FloatArray
from hebictl.errors import ConfigError

if TYPE_CHECKING:
    from hebictl.config import PluginConfig
    from hebictl.control.arm import Arm

log = logging.getLogger(__name__)


class ArmPlugin:
    """Base: ``enabled`` ramps the plugin's contribution in or out over ``ramp_time`` [s]."""

    type_name: ClassVar[str] = ""

    def __init__(self, name: str, enabled: bool = True, ramp_time: float = 0.0) -> None:
        self.name = name
        self.enabled = bool(enabled)
        self.ramp_time = float(ramp_time)
        self.enabled_ratio = 1.0 if self.enabled else 0.0

    def on_associated(self, arm: Arm) -> None:
        """Called once when added to an arm: allocate buffers sized for it."""

    def _ramp(self, dt: float) -> None:
        if self.enabled and self.enabled_ratio < 1.0:
            self.enabled_ratio = 1.0 if self.ramp_time <= 0.0 else min(1.0, self.enabled_ratio + dt / self.ramp_time)
        elif not self.enabled and self.enabled_ratio > 0.0:
            self.enabled_ratio = 0.0 if self.ramp_time <= 0.0 else max(0.0, self.enabled_ratio - dt / self.ramp_time)

    def update(self, arm: Arm, dt: float) -> bool:
        """Add this plugin's contribution to ``arm.pending_command``; False on failure."""
        self._ramp(dt)
        return True

    def send(self, arm: Arm) -> bool:
        """Plugins that drive extra modules send their own commands here."""
        return True

    def close(self) -> None:
        """Release anything the plugin opened."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, enabled={self.enabled}, ratio={self.enabled_ratio:.2f})"


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

    def __init__(self, name: str = "gravComp", enabled: bool = True, ramp_time: float = 0.0, *,
                 imu_feedback_index: int = 0, imu_frame_index: int = 0,
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

    def on_associated(self, arm: Arm) -> None:
        if self.fallback_gravity is None:
            self.fallback_gravity = arm.model.gravity.copy()
        self.efforts = np.zeros(arm.dof)
        # an IMU on the base module (the usual case) sits on a frame no joint moves: rotate once
        static = arm.model.static_frame_pose("input", self.imu_frame_index)
        self._static_rotation = None if static is None else static[:3, :3] @ self.imu_rotation_offset

    def world_gravity(self, arm: Arm) -> FloatArray:
        """Gravity [m/s², world] from the IMU, or the fallback vector when there is none.

        Scalar arithmetic on purpose: this runs every cycle and numpy's per-call overhead on
        3-vectors would cost more than the maths.
        """
        w, x, y, z = arm.last_feedback.orientation[self.imu_feedback_index]
        if not math.isfinite(w + x + y + z):
            return self.fallback_gravity  # type: ignore[return-value]
        gx, gy, gz = _gravity_direction(w, x, y, z)
        norm = math.sqrt(gx * gx + gy * gy + gz * gz)
        k = 9.81 / norm if norm > 0.0 else 0.0
        g = self._g_imu
        g[0], g[1], g[2] = gx * k, gy * k, gz * k
        if self._static_rotation is not None:
            return self._static_rotation @ g
        frame = arm.input_frames()[self.imu_frame_index, :3, :3]
        return frame @ (self.imu_rotation_offset @ g)

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio == 0.0:
            return True
        self.gravity = self.world_gravity(arm)
        arm.model.gravity_compensation_into(arm.last_feedback.position, self.gravity, self.efforts)
        if self.enabled_ratio != 1.0:
            self.efforts *= self.enabled_ratio
        arm.pending_command.effort += self.efforts
        return True


class DynamicsCompensationEffort(ArmPlugin):
    """Adds the efforts that produce the trajectory's commanded accelerations (no gravity term)."""

    type_name = "DynamicsCompensationEffort"
    _ZERO_G = np.zeros(3)

    def __init__(self, name: str = "dynamicsComp", enabled: bool = True, ramp_time: float = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.efforts = np.zeros(0)

    def on_associated(self, arm: Arm) -> None:
        self.efforts = np.zeros(arm.dof)

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        state = arm.trajectory_state
        if state is None or self.enabled_ratio == 0.0:
            return True
        p, v, a = state
        arm.model.inverse_dynamics_into(p, v, a, self._ZERO_G, self.efforts)
        if self.enabled_ratio != 1.0:
            self.efforts *= self.enabled_ratio
        arm.pending_command.effort += self.efforts
        return True


class EffortOffset(ArmPlugin):
    """Adds a constant effort per joint [N·m], e.g. to cancel a gas spring."""

    type_name = "EffortOffset"

    def __init__(self, name: str = "effortOffset", enabled: bool = True, ramp_time: float = 0.0, *,
                 offset: ArrayLike = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.offset = np.asarray(offset, dtype=np.float64)

    def on_associated(self, arm: Arm) -> None:
        self.offset = np.array(np.broadcast_to(self.offset, (arm.dof,)))

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio:
            arm.pending_command.effort += self.offset * self.enabled_ratio
        return True


def _rotation_error(R: FloatArray) -> FloatArray:
    """Rotation vector [rad] of R (robust near 0 and pi, unlike the trace formula alone)."""
    return Rotation.from_matrix(R).as_rotvec()


class ImpedanceController(ArmPlugin):
    """A virtual spring-damper (and integrator) between commanded and actual end-effector pose.

    kp [N/m, N·m/rad], kd [N/(m/s)], ki [N/(m·s)], i_clamp [N or N·m]; each
    ``[x, y, z, rx, ry, rz]``, in the end-effector frame if ``gains_in_end_effector_frame``.
    Only linear velocity error is damped, as in hebi-py.
    """

    type_name = "ImpedanceController"

    def __init__(self, name: str = "impedanceController", enabled: bool = True, ramp_time: float = 0.0, *,
                 kp: ArrayLike = (0,) * 6, kd: ArrayLike = (0,) * 6, ki: ArrayLike = (0,) * 6,
                 i_clamp: ArrayLike | None = None, gains_in_end_effector_frame: bool = False) -> None:
        super().__init__(name, enabled, ramp_time)
        self.kp = np.asarray(kp, dtype=np.float64).reshape(6)
        self.kd = np.asarray(kd, dtype=np.float64).reshape(6)
        self.ki = np.asarray(ki, dtype=np.float64).reshape(6)
        clamp = np.full(6, np.nan) if i_clamp is None else np.asarray(i_clamp, dtype=np.float64).reshape(6)
        valid = np.isfinite(clamp) & (self.ki != 0.0)
        self.max_accum = np.full(6, np.inf)
        np.divide(clamp, self.ki, out=self.max_accum, where=valid)
        self.max_accum = np.abs(self.max_accum)
        self.gains_in_end_effector_frame = bool(gains_in_end_effector_frame)
        self.i_err = np.zeros(6)

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        cmd = arm.pending_command
        if not self.enabled_ratio or np.isnan(cmd.position).any() or np.isnan(cmd.velocity).any():
            self.i_err[:] = 0.0
            return True
        model = arm.model
        fbk = arm.last_feedback
        desired = model.end_effector(cmd.position)
        actual = model.end_effector(fbk.position)
        J = model.jacobian_end_effector(fbk.position)
        pos_err = np.empty(6)
        pos_err[:3] = desired[:3, 3] - actual[:3, 3]
        pos_err[3:] = _rotation_error(desired[:3, :3] @ actual[:3, :3].T)
        vel_err = J @ np.nan_to_num(cmd.velocity - fbk.velocity)  # NaN velocity feedback: no damping
        vel_err[3:] = 0.0
        R = actual[:3, :3] if self.gains_in_end_effector_frame else np.eye(3)
        pos_err = np.concatenate([R.T @ pos_err[:3], R.T @ pos_err[3:]])
        vel_err = np.concatenate([R.T @ vel_err[:3], R.T @ vel_err[3:]])
        self.i_err += pos_err * dt
        np.clip(self.i_err, -self.max_accum, self.max_accum, out=self.i_err)
        wrench = self.kp * pos_err + self.ki * self.i_err + self.kd * vel_err
        wrench = np.concatenate([R @ wrench[:3], R @ wrench[3:]])
        cmd.effort += (J.T @ wrench) * self.enabled_ratio
        return True


class EndEffectorWrench(ArmPlugin):
    """Adds J^T w for a wrench ``w`` [N, N·m] (world frame) set at run time on the end effector."""

    type_name = "EndEffectorWrench"

    def __init__(self, name: str = "endEffectorWrench", enabled: bool = True, ramp_time: float = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.wrench = np.zeros(6)

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio and np.any(self.wrench):
            J = arm.model.jacobian_end_effector(arm.last_feedback.position)
            arm.pending_command.effort += (J.T @ self.wrench) * self.enabled_ratio
        return True


class DoubledJointMirror(ArmPlugin):
    """Drives a second module in parallel with joint ``index`` (a double shoulder).

    The joint's effort is split evenly between both modules; the mirror module gets the
    negated command when ``mirror`` (it is mounted facing the other way). The mirror module is
    opened on the arm's backend as a group of one.
    """

    type_name = "DoubledJointMirror"

    def __init__(self, name: str = "doubledJoint", enabled: bool = True, ramp_time: float = 0.0, *,
                 index: int, group_family: str | list[str], group_name: str | list[str],
                 mirror: bool = True) -> None:
        super().__init__(name, enabled, ramp_time)
        self.index = int(index)
        self.family = group_family[0] if isinstance(group_family, list) else group_family
        self.module = group_name[0] if isinstance(group_name, list) else group_name
        self.sign = -1.0 if mirror else 1.0
        self.backend: Any = None
        self.command: Any = None

    def on_associated(self, arm: Arm) -> None:
        from hebictl.hardware.base import Command

        if not 0 <= self.index < arm.dof:
            raise ConfigError(f"DoubledJointMirror index {self.index} out of range for {arm.dof} joints", key="index")
        self.backend = arm.open_extra_modules([self.module], [self.family])
        self.command = Command.empty(1)

    def update(self, arm: Arm, dt: float) -> bool:
        self._ramp(dt)
        cmd = arm.pending_command
        i = self.index
        self.command.position[0] = self.sign * cmd.position[i]
        self.command.velocity[0] = self.sign * cmd.velocity[i]
        if math.isnan(cmd.effort[i]):
            self.command.effort[0] = math.nan
        else:
            cmd.effort[i] *= 0.5
            self.command.effort[0] = self.sign * cmd.effort[i]
        return True

    def send(self, arm: Arm) -> bool:
        return bool(self.backend.write(self.command))

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()


PLUGIN_TYPES: dict[str, type[ArmPlugin]] = {cls.type_name: cls for cls in (
    GravityCompensationEffort, DynamicsCompensationEffort, EffortOffset, ImpedanceController,
    EndEffectorWrench, DoubledJointMirror)}


def plugin_from_config(cfg: PluginConfig) -> ArmPlugin | None:
    """Instantiate a plugin from its config entry; None (logged) for types hebictl lacks."""
    cls = PLUGIN_TYPES.get(cfg.type)
    if cls is None:
        log.warning("plugin type %s (%s) is not implemented by hebictl; skipped", cfg.type, cfg.name)
        return None
    params = dict(cfg.params)
    kwargs: dict[str, Any] = {"enabled": cfg.enabled, "ramp_time": cfg.ramp_time, **params}
    if cfg.name:
        kwargs["name"] = cfg.name
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"plugin {cfg.type}: {exc}", key=f"plugins.{cfg.name or cfg.type}") from exc
