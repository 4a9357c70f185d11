"""DoubledJointMirror: a second module driven in parallel with one joint (a double shoulder)."""

from __future__ import annotations

import math
from typing import Any

from hebictl.control.plugins.base import ArmPlugin, ArmView, default_name
from hebictl.errors import ConfigError, HardwareError
from hebictl.hardware.base import Command


class DoubledJointMirror(ArmPlugin):
    """Drives a second module in parallel with joint ``index`` (a double shoulder).

    The joint's effort is split evenly between both modules; the mirror module gets the
    negated command when ``mirror`` (it is mounted facing the other way). The mirror module is
    opened on the arm's backend as a group of one.
    """

    type_name = "DoubledJointMirror"
    runs_while_stopped = True  # it only mirrors the arm's own command (a stopped arm's hold included)
    forwards_command = True  # the arm's command must be complete (a jog's included) when it runs

    def __init__(self, name: str = default_name("DoubledJointMirror"), enabled: bool = True,
                 ramp_time: float = 0.0, *, index: int, group_family: str | list[str],
                 group_name: str | list[str], mirror: bool = True) -> None:
        super().__init__(name, enabled, ramp_time)
        self.index = int(index)
        self.family = group_family[0] if isinstance(group_family, list) else group_family
        self.module = group_name[0] if isinstance(group_name, list) else group_name
        self.sign = -1.0 if mirror else 1.0
        self.backend: Any = None
        self.command = Command.empty(1)
        self.last_send_ok = True
        self.last_error: str | None = None

    def on_associated(self, arm: ArmView) -> None:
        if not 0 <= self.index < arm.dof:
            raise ConfigError(f"DoubledJointMirror index {self.index} out of range for {arm.dof} joints", key="index")
        self.backend = arm.open_extra_modules([self.module], [self.family], joints=[self.index], signs=[self.sign])

    def update(self, arm: ArmView, dt: float) -> bool:
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

    def send(self, arm: ArmView) -> bool:
        """Write the mirror's command. A failure is kept (``last_error``, for the ``mirror_lost``
        monitor) and returned as False, never raised: the arm's own modules were commanded already,
        and an exception here would end the control loop with the arm unattended."""
        try:
            ok = bool(self.backend.write(self.command))
        except HardwareError as exc:
            self.last_error = str(exc)
            ok = False
        else:
            self.last_error = None if ok else "the mirror module's write failed"
        self.last_send_ok = ok
        return ok

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
