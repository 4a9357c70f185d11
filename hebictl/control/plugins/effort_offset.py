"""EffortOffset: a constant effort per joint, e.g. to cancel a gas spring."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name


class EffortOffset(ArmPlugin):
    """Adds a constant effort per joint [N·m] (a scalar applies to every joint)."""

    type_name = "EffortOffset"

    def __init__(self, name: str = default_name("EffortOffset"), enabled: bool = True, ramp_time: float = 0.0, *,
                 offset: ArrayLike = 0.0) -> None:
        super().__init__(name, enabled, ramp_time)
        self.offset = np.asarray(offset, dtype=np.float64)

    def on_associated(self, arm: ArmView) -> None:
        self.offset = np.array(np.broadcast_to(self.offset, (arm.dof,)))

    def update(self, arm: ArmView, dt: float) -> bool:
        self._ramp(dt)
        if self.enabled_ratio:
            arm.pending_command.effort += self.offset * self.enabled_ratio
        return True
