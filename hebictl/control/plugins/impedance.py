"""ImpedanceController: a virtual spring-damper between commanded and actual end-effector pose.

Same law as hebi-py's ``ImpedanceController`` plugin; the rotation error uses SciPy's rotation
vector, which is robust near 0 and pi (hebi-py special-cases the singular angles by hand).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name


def _rotation_error(R: FloatArray) -> FloatArray:
    """Rotation vector [rad] of R (robust near 0 and pi, unlike the trace formula alone).

    SciPy's rotations are imported here, on the plugin's first cycle: every arm's wiring imports
    the plugin table, and scipy.spatial cost each ``hebictl`` process 0.3-0.45 s of start-up even
    where no impedance controller runs."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(R).as_rotvec()


class ImpedanceController(ArmPlugin):
    """A virtual spring-damper (and integrator) between commanded and actual end-effector pose.

    kp [N/m, N·m/rad], kd [N/(m/s)], ki [N/(m·s)], i_clamp [N or N·m]; each
    ``[x, y, z, rx, ry, rz]``, in the end-effector frame if ``gains_in_end_effector_frame``.
    Only linear velocity error is damped, as in hebi-py.
    """

    type_name = "ImpedanceController"

    def __init__(self, name: str = default_name("ImpedanceController"), enabled: bool = True,
                 ramp_time: float = 0.0, *, kp: ArrayLike = (0,) * 6, kd: ArrayLike = (0,) * 6,
                 ki: ArrayLike = (0,) * 6, i_clamp: ArrayLike | None = None,
                 gains_in_end_effector_frame: bool = False) -> None:
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

    def update(self, arm: ArmView, dt: float) -> bool:
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
