"""A simulated one-DoF gripper spool: the gripper module of the ``mock`` and ``sim`` backends.

HEBI's kit grippers are an X-series actuator winding a spool: the arm software commands only an
*effort* (``gripper_close_effort``, negative, closes; ``gripper_open_effort`` opens), never a
position, and the jaws stop where they meet the object or their end stops. This backend models
that much and nothing more, so that ``cmd/gripper`` visibly opens and closes a gripper without
hardware:

* spool angle ``p`` [rad] between ``-travel`` (closed) and ``0`` (open), hard end stops;
* a return spring ``k`` [N·m/rad] pulling it open, viscous damping ``b`` [N·m·s/rad] and the
  spool's rated speed ``max_speed`` [rad/s]: the speed is ``(τ - k p) / b``, clipped to the rated
  speed (a massless first-order model: a gripper's inertia is negligible at this scale);
* a command stays in force for ``command_lifetime`` seconds, as on the modules; after that the
  spool is unpowered and only the spring acts.

With the defaults (travel 1.5 rad, k 2, b 1, 1.5 rad/s) the HEBI kit efforts close it fully in
about 1 s (-5 N·m) and open it in about 2 s (+1 N·m), and an intermediate blend settles in
between (the spring balances the effort), which is how an effort-controlled gripper behaves.

It implements the :class:`~hebictl.hardware.base.Backend` protocol for one module, on the clock
it is given; a read always returns the state at ``clock.now()`` (it never waits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hebictl.errors import ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock
from hebictl.hardware.group import ModuleGroup, checked_frequency


class SimulatedGripper(ModuleGroup):
    """One effort-driven spool with end stops, a return spring and damping (see module doc)."""

    def __init__(self, names: Sequence[str] = ("gripperSpool",), families: Sequence[str] = ("Arm",), *,
                 clock: Clock, travel: float = 1.5, spring: float = 2.0, damping: float = 1.0,
                 max_speed: float = 1.5, command_lifetime: float = 0.25, feedback_frequency: float = 100.0,
                 initial_opening: float = 1.0) -> None:
        if len(tuple(names)) != 1 or len(tuple(families)) != 1:
            raise ConfigError("a simulated gripper is one module", key="gripper")
        for what, value in (("travel", travel), ("damping", damping), ("max_speed", max_speed)):
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"gripper {what} must be finite and > 0, got {value!r}", key="gripper")
        if not (math.isfinite(spring) and spring >= 0):
            raise ConfigError(f"gripper spring must be finite and >= 0, got {spring!r}", key="gripper")
        if not 0.0 <= initial_opening <= 1.0:
            raise ConfigError(f"initial opening must be in [0, 1], got {initial_opening!r}", key="gripper")
        super().__init__(names, families)
        self.clock = clock
        self.travel = float(travel)
        self.spring = float(spring)
        self.damping = float(damping)
        self.max_speed = float(max_speed)
        self.command_lifetime = command_lifetime
        self._hz = checked_frequency(feedback_frequency)
        self._p = (float(initial_opening) - 1.0) * self.travel
        self._v = 0.0
        self._t = clock.now()
        self._effort_cmd = math.nan
        self._cmd_time = -math.inf
        self._seq = 0
        self._closed = False

    # -- Backend protocol --------------------------------------------------------------------
    @property
    def feedback_frequency(self) -> float:
        return self._hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        self._hz = checked_frequency(hz)

    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """The spool's state now (never waits)."""
        self._check_open()
        now = self.clock.now()
        self._advance(now)
        self._seq += 1
        into.time[0] = now
        into.position[0] = self._p
        into.velocity[0] = self._v
        into.effort[0] = self._applied(now)
        into.orientation[0] = (1.0, 0.0, 0.0, 0.0)
        into.position_command[0] = math.nan
        into.velocity_command[0] = math.nan
        into.effort_command[0] = self._effort_cmd
        into.mstop[0] = 0.0
        into.position_limit_state[0] = math.nan
        into.sequence = self._seq
        into.rx_time = now
        return True

    def write(self, command: Command) -> bool:
        """Take the effort (position and velocity are not used by an effort-driven spool)."""
        self._check_open()
        now = self.clock.now()
        self._advance(now)
        effort = float(command.effort[0])
        if math.isfinite(effort):
            self._effort_cmd = effort
            self._cmd_time = now
        return True

    def set_gains(self, gains: object) -> None:
        """Accepted and ignored: the model has no inner control loops to tune."""
        self._check_open()

    def close(self) -> None:
        self._closed = True

    # -- the spool ---------------------------------------------------------------------------
    @property
    def opening(self) -> float:
        """0 closed .. 1 open, from the spool angle."""
        return 1.0 + self._p / self.travel

    def _applied(self, now: float) -> float:
        """Effort acting now [N·m]: the last command while it lives, else none."""
        alive = self.command_lifetime <= 0.0 or now - self._cmd_time <= self.command_lifetime
        return self._effort_cmd if alive and math.isfinite(self._effort_cmd) else 0.0

    def _advance(self, now: float) -> None:
        dt_total = now - self._t
        if not dt_total > 0.0:
            return
        steps = max(1, math.ceil(dt_total / 0.001))  # 1 ms steps: the time constant b/k is 0.5 s
        dt = dt_total / steps
        for i in range(steps):
            tau = self._applied(self._t + (i + 1) * dt)
            v = float(np.clip((tau - self.spring * self._p) / self.damping, -self.max_speed, self.max_speed))
            p = self._p + v * dt
            if p <= -self.travel:
                p, v = -self.travel, 0.0 if v < 0 else v
            elif p >= 0.0:
                p, v = 0.0, 0.0 if v > 0 else v
            self._p, self._v = p, v
        self._t = now

    def _check_open(self) -> None:
        if self._closed:
            raise HardwareError("the simulated gripper is closed")
