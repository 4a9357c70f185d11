"""EndEffectorWrench: joint efforts J^T w for a wrench set at run time on the end effector."""

from __future__ import annotations

import numpy as np

from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name


class EndEffectorWrench(ArmPlugin):
    """Adds J^T w for a wrench ``w`` [N, N·m] (world frame) set at run time on the end effector.

    The Jacobian is taken at the feedback position (hebi-py takes it at the previous cycle's
    position command echo when there is one; the two agree once the arm tracks its command).
    """

    type_name = "EndEffectorWrench"

    def __init__(self, name: str = default_name("EndEffectorWrench"), enabled: bool = True,
                 ramp_time: float = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.wrench = np.zeros(6)

    def update(self, arm: ArmView, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio and np.any(self.wrench):
            J = arm.model.jacobian_end_effector(arm.last_feedback.position)
            arm.pending_command.effort += (J.T @ self.wrench) * self.enabled_ratio
        return True
