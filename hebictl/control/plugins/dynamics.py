"""DynamicsCompensationEffort: the joint efforts that produce the trajectory's accelerations.

Full rigid-body inverse dynamics at the commanded state (rotational inertia and
velocity-product terms included), without the gravity term (GravityCompensationEffort adds
that); hebi-py's plugin ignores the links' rotational inertia.
"""

from __future__ import annotations

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name


class DynamicsCompensationEffort(ArmPlugin):
    """Adds the efforts that produce the trajectory's commanded accelerations (no gravity term)."""

    type_name = "DynamicsCompensationEffort"
    feed_forward_effort = True
    _ZERO_G = np.zeros(3)

    def __init__(self, name: str = default_name("DynamicsCompensationEffort"), enabled: bool = True,
                 ramp_time: float = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.efforts = np.zeros(0)

    def on_associated(self, arm: ArmView) -> None:
        self.efforts = np.zeros(arm.dof)

    def update(self, arm: ArmView, dt: float) -> bool:
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

    def feed_forward_efforts(self) -> FloatArray:
        """The efforts added for the trajectory's accelerations (ramped with ``enabled``)."""
        return self.efforts
