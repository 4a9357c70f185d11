"""Extra simulated modules on an arm's joints (a double shoulder's second module), and the sim's
feedback faults.

Why a view on the same simulation and not a second backend: a double shoulder's two modules
drive one joint; opened as a separate simulated robot the second module would move nothing. HEBI
builds the joint from two identical modules, the second mounted facing the other way, and
hebi-py's ``DoubledJointMirror`` plugin sends it the negated command with half the effort; so the
simulator adds one more module of the joint's type on the same MuJoCo joint, measuring ``-q``
and applying ``-τ`` (:func:`sim_backend.actuator.actuator_step`), with its own PID loops, command
lifetime and firmware safety.

Faults use the mock's :class:`~hebictl.hardware.faults.FaultSchedule` (time windows on the
clock): dropped samples time out, frozen feedback repeats the last sample and its sequence, NaN
blanks fields of a module, a disconnected module makes reads raise and writes fail, ignored
commands never reach the modules (whose command lifetime then runs out: they go limp). Extra
modules have their own schedule (``ExtraModules.faults``): ignored commands, and a disconnected
module whose writes raise HardwareError (what a mirror's failing group does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.gains import GroupGains
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.faults import FaultKind, FaultSchedule
from hebictl.hardware.group import ModuleGroup, grid_index
from sim_backend.actuator import gain_table

if TYPE_CHECKING:
    from sim_backend.backend import SimBackend

__all__ = ["ExtraModules", "apply_feedback_faults", "next_deliverable"]


def next_deliverable(faults: FaultSchedule, k: int, origin: float, hz: float, deadline: float) -> int:
    """Index of the first grid sample at or after ``k`` that no dropped-feedback fault swallows."""
    t_k = origin + k / hz
    while t_k <= deadline:
        drop = faults.first_active(FaultKind.DROPPED, t_k)
        if drop is None:
            return k
        k = grid_index(drop.end, origin, hz, k) if math.isfinite(drop.end) else k + 1 + math.ceil((deadline - t_k) * hz)
        t_k = origin + k / hz
    return k


def apply_feedback_faults(faults: FaultSchedule, into: Feedback, t: float) -> None:
    """Blank the fields NaN faults active at ``t`` [s] name."""
    for fault in faults.scheduled:
        if fault.kind is FaultKind.NAN and fault.active_at(t):
            for name in fault.fields:
                getattr(into, name)[fault.module] = np.nan


class ExtraModules(ModuleGroup):
    """Modules added to a :class:`~sim_backend.backend.SimBackend`, read and commanded on their own."""

    def __init__(self, sim: SimBackend, names: Sequence[str], families: Sequence[str], first: int) -> None:
        super().__init__(names, families)
        self._sim = sim
        self._first = first
        self._slice = slice(first, first + self._n)
        self._seq = 0
        self._closed = False
        self._lifetime = sim.command_lifetime
        #: faults of these modules (their own schedule: ``ignore_commands`` and ``disconnect`` act on writes)
        self.faults = FaultSchedule(sim.clock, self._names)

    @classmethod
    def attach(cls, sim: SimBackend, names: Sequence[str], families: Sequence[str], joints: Sequence[int],
               signs: Sequence[float]) -> ExtraModules:
        names_t, fam_t = tuple(names), tuple(families)
        if len(fam_t) == 1:
            fam_t = fam_t * len(names_t)
        if not names_t or len(fam_t) != len(names_t) or len(joints) != len(names_t) or len(signs) != len(names_t):
            raise ConfigError(f"{len(names_t)} extra module names need as many families, joints and signs",
                              key="names")
        first = sim.add_modules(np.asarray(joints, dtype=np.int64), np.asarray(signs, dtype=np.float64))
        return cls(sim, names_t, fam_t, first)

    @property
    def joints(self) -> tuple[int, ...]:
        """The arm joint each module drives."""
        return tuple(self._sim.module_joints(self._slice).tolist())

    @property
    def feedback_frequency(self) -> float:
        return self._sim.feedback_frequency

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        """The extra modules report with the arm's modules; their rate is the arm's."""

    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """The modules' state now (simulated up to the clock's present): they share the arm's physics."""
        if self._closed:
            raise HardwareError("extra sim modules are closed")
        if into.position.shape[0] != self._n:
            raise HardwareError(f"feedback buffer is for {into.position.shape[0]} modules, the group has {self._n}")
        sim = self._sim
        sim.advance_to_now()
        now = sim.clock.now()
        sl = self._slice
        into.time.fill(now)
        sim.module_motion(sl, into.position, into.velocity)
        np.copyto(into.effort, sim.actuators.effort[sl])
        into.orientation.fill(np.nan)
        cmd = sim.firmware.commanded
        np.copyto(into.position_command, cmd[0, sl])
        np.copyto(into.velocity_command, cmd[1, sl])
        np.copyto(into.effort_command, cmd[2, sl])
        into.mstop.fill(float(sim.firmware.mstop[0]))
        np.copyto(into.position_limit_state, sim.firmware.limit_state[sl])
        self._seq += 1
        into.sequence = self._seq
        into.rx_time = now
        return True

    def write(self, command: Command) -> bool:
        """Command the extra modules from now on (NaN = not commanded), with their own lifetime."""
        if self._closed:
            raise HardwareError("extra sim modules are closed")
        if command.size != self._n:
            raise CommandRejected("size_mismatch", f"command has {command.size} entries, the group has {self._n}")
        sim = self._sim
        sim.advance_to_now()
        now = sim.clock.now()
        if self.faults:
            lost = self.faults.first_active(FaultKind.DISCONNECTED, now)
            if lost is not None:
                module = lost.module
                assert module is not None, "FaultSchedule.disconnect always names the module"
                raise HardwareError(f"extra module {self._names[module]!r} stopped responding")
            if self.faults.first_active(FaultKind.COMMANDS_IGNORED, now) is not None:
                return True  # lost on the way: their command lifetime runs out
        sim.command_modules(self._slice, command.position, command.velocity, command.effort, now, self._lifetime)
        return True

    def set_gains(self, gains: object) -> None:
        """Gains for the extra modules (one module's or one per module); they start with their joint's."""
        if not isinstance(gains, GroupGains):
            raise HardwareError(f"the sim backend takes hebictl.gains.GroupGains, got {type(gains).__name__}")
        table, strategy = gain_table(gains, self._n)
        self._sim.set_module_gains(self._slice, table, strategy)

    def close(self) -> None:
        """Stop using the modules; like a real group, their last command runs out by its lifetime."""
        self._closed = True

    def __repr__(self) -> str:
        return f"ExtraModules({list(self._names)}, joints={list(self.joints)})"
