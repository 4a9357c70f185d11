"""SimBackend: hebictl's hardware interface on a MuJoCo simulation of the arm.

Time: physics runs on a fixed grid of ``timestep`` seconds and is advanced only by ``read`` and
``write``, up to the injected clock's time (nothing runs in the background):

* ``read`` steps physics to the next feedback sample (a grid of ``feedback_frequency`` Hz, like
  the mock and like ``Group.get_next_feedback``), then sleeps the clock until that sample's time.
  With :class:`~hebictl.hardware.clock.SimClock` the sleep is a jump, so a run is deterministic
  and as fast as the CPU allows; with :class:`~hebictl.hardware.clock.MonotonicClock` physics is
  computed ahead and the sleep paces it to real time.
* ``write`` first steps physics to the clock's present under the old command (the loop's own
  latency, as on hardware), then installs the new command.

Physics starts (time origin of the step grid) at the first ``write``: until the controller first
commands the modules, the arm waits at ``initial_position`` and reads return that state, however
long the controller takes to start (a first control cycle that loads compiled kernels can take
100 ms, during which uncommanded modules would let the arm fall).

Every physics step runs the simulated firmware (:mod:`sim_backend.actuator`) once, so the
modules' PID loops run at the physics rate however slowly the controller loop runs. A sample is
the physics state at the last step at or before the sample time.

Semantics kept from HEBI modules: NaN in a command field = not commanded; a write replaces all
three fields; a command older than ``command_lifetime`` expires and the modules go limp (the
motor is switched off; an arm then falls, unlike the mock, which holds). Feedback effort is the
torque the module applies; orientation is each module's input frame (its IMU) in the world,
from the simulated pose.
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Sequence

import mujoco
import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.gains import GroupGains
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock
from hebictl.hardware.group import ModuleGroup, checked_frequency, grid_index
from sim_backend.actuator import ActuatorGroup, actuator_step
from sim_backend.scene import Scene

__all__ = ["SimBackend"]

log = logging.getLogger(__name__)
_EPS_T = 1e-9  # [s] a sample or step due within 1 ns of now counts as due now
_CACHE = os.environ.get("HEBICTL_NUMBA_CACHE", "1") != "0"
_VIEWER_PERIOD = 1.0 / 60.0  # [s] wall time between viewer refreshes


@njit(cache=_CACHE)
def _sample(qpos, qvel, xquat, qadr, dadr, body, offset, effort, echo, t, times, pos, vel, eff, orient, pcmd, vcmd,
            ecmd):
    """Fill a Feedback: joint state, applied effort, command echo, sample time ``t`` and each
    module's world orientation (xquat ⊗ offset). One call instead of a dozen numpy copies."""
    for i in range(qadr.shape[0]):
        times[i] = t
        pos[i] = qpos[qadr[i]]
        vel[i] = qvel[dadr[i]]
        eff[i] = effort[i]
        pcmd[i] = echo[0, i]
        vcmd[i] = echo[1, i]
        ecmd[i] = echo[2, i]
        b = body[i]
        w1, x1, y1, z1 = xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3]
        w2, x2, y2, z2 = offset[i, 0], offset[i, 1], offset[i, 2], offset[i, 3]
        w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
        y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
        z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
        if w < 0.0:  # one sign convention (w >= 0) for a quaternion that could be either
            w, x, y, z = -w, -x, -y, -z
        orient[i, 0], orient[i, 1], orient[i, 2], orient[i, 3] = w, x, y, z


def _display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or os.name == "nt"


class SimBackend(ModuleGroup):
    """Simulated HEBI modules on a MuJoCo model; see the module docstring for timing and semantics."""

    def __init__(self, names: Sequence[str], families: Sequence[str], scene: Scene, actuators: ActuatorGroup, *,
                 clock: Clock, initial_position: ArrayLike | None = None, feedback_frequency: float = 100.0,
                 command_lifetime: float = 0.25, viewer: bool = False) -> None:
        """Modules ``names``/``families`` (one per joint of ``scene``, in joint order) driven by
        ``actuators``; ``initial_position`` [rad or m] (default: zeros), ``feedback_frequency``
        [Hz], ``command_lifetime`` [s] (0 = never expires), ``viewer``: show MuJoCo's passive
        viewer when a display is available."""
        super().__init__(names, families)
        n = self._n
        if len(self._families) != n:
            raise ConfigError(f"{n} names but {len(self._families)} families", key="families")
        if n != scene.qadr.shape[0] or n != actuators.size:
            raise ConfigError(f"{n} module names for a model of {scene.qadr.shape[0]} joints", key="names")
        self._clock = clock
        self.scene = scene
        self.actuators = actuators
        m, d = scene.model, scene.data
        self._m, self._d = m, d
        q0 = np.zeros(n) if initial_position is None else np.asarray(initial_position, dtype=np.float64)
        try:
            q0 = np.array(np.broadcast_to(q0, (n,)))
        except ValueError:
            raise ConfigError(f"initial_position needs {n} values, got {q0.size}", key="initial_position") from None
        if not np.all(np.isfinite(q0)):
            raise ConfigError(f"initial_position must be finite, got {q0}", key="initial_position")
        d.qpos[scene.qadr] = q0
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        self._dt = float(m.opt.timestep)
        self._t0 = clock.now()
        self._started = False
        self._t_next = math.inf  # [s] clock time at which the next physics step is due
        self._steps = 0
        self._expiry = math.inf
        self._cmd_echo = np.full((3, n), np.nan)
        self._pending_echo = False
        self._closed = False
        self._writes = 0
        self._fb_hz = 0.0
        self._grid_origin = self._t0
        self._k = -1
        self._seq = 0
        self._last_sample_t = math.nan
        self.feedback_frequency = feedback_frequency
        self.command_lifetime = command_lifetime
        # kernel arguments, bound once (views into MuJoCo's buffers stay valid for the model's life)
        self._step_args = (actuators.gains, actuators.strategy, actuators.motor, actuators.command, actuators.state,
                           d.qpos, d.qvel, scene.qadr, scene.dadr, self._dt, d.ctrl, m.actuator_biasprm,
                           actuators.effort, actuators.slope)
        self._sample_args = (d.qpos, d.qvel, d.xquat, scene.qadr, scene.dadr, scene.imu_body, scene.imu_offset,
                             actuators.effort, self._cmd_echo)
        actuator_step(*self._step_args)  # compile (or load) the kernel now, not inside the first control cycle
        self._viewer = None
        self._viewer_sync = 0.0
        if viewer:
            self._open_viewer()

    # ------------------------------------------------------------------ Backend properties
    @property
    def clock(self) -> Clock:
        """The clock this simulation follows."""
        return self._clock

    @property
    def sim_time(self) -> float:
        """Time of the physics state [s, clock time]."""
        return self._t0 + self._steps * self._dt

    @property
    def timestep(self) -> float:
        """Physics (and simulated firmware) step [s]."""
        return self._dt

    @property
    def mj_model(self) -> mujoco.MjModel:
        return self._m

    @property
    def mj_data(self) -> mujoco.MjData:
        return self._d

    @property
    def write_count(self) -> int:
        return self._writes

    @property
    def feedback_frequency(self) -> float:
        return self._fb_hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        hz = checked_frequency(hz)
        # restart the sample grid at the last delivered sample so no sample is repeated
        self._grid_origin = self._last_sample_t if self._seq else self._clock.now()
        self._k = 0 if self._seq else -1
        self._fb_hz = hz

    @property
    def last_command(self) -> Command:
        """Copy of the command the modules hold now (NaN = not commanded or expired)."""
        c = self.actuators.command
        return Command(position=c[0].copy(), velocity=c[1].copy(), effort=c[2].copy())

    # ------------------------------------------------------------------ Backend methods
    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """Simulate up to the next feedback sample (waiting at most ``timeout_s`` [s]) and fill ``into``."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if not 0.0 <= timeout_s < math.inf:
            raise HardwareError(f"read timeout must be finite and >= 0 s, got {timeout_s!r}")
        if into.position.shape[0] != self._n:
            raise HardwareError(f"feedback buffer is for {into.position.shape[0]} modules, the backend has {self._n}")
        clock = self._clock
        now = clock.now()
        deadline = now + timeout_s
        hz = self._fb_hz
        if hz > 0.0:
            origin = self._grid_origin
            k = grid_index(now, origin, hz, self._k)
            t_k = origin + k / hz
        if hz <= 0.0 or t_k > deadline:
            self._advance(deadline)
            clock.sleep_until(deadline)
            return False
        self._advance(t_k)
        clock.sleep_until(t_k)
        self._k = k
        mujoco.mj_kinematics(self._m, self._d)  # xquat of the state just reached (mj_step leaves it one step old)
        _sample(*self._sample_args, t_k, into.time, into.position, into.velocity, into.effort, into.orientation,
                into.position_command, into.velocity_command, into.effort_command)
        self._seq += 1
        self._last_sample_t = t_k
        into.sequence = self._seq
        into.rx_time = clock.now()
        if self._viewer is not None:
            self._sync_viewer()
        return True

    def write(self, command: Command) -> bool:
        """Simulate up to now under the old command, then command ``command`` (NaN = not commanded)."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        n = self._n
        pc, vc, ec = command.position, command.velocity, command.effort
        if pc.shape[0] != n or vc.shape[0] != n or ec.shape[0] != n:
            raise CommandRejected("size_mismatch", f"command has {pc.shape[0]}/{vc.shape[0]}/{ec.shape[0]} "
                                  f"entries, the backend has {n} modules")
        now = self._clock.now()
        if not self._started:
            self._start(now)
        self._advance(now)
        cmd = self.actuators.command
        cmd[0] = pc
        cmd[1] = vc
        cmd[2] = ec
        # the command echo shows the command from the next sample on, as the Backend protocol says
        self._pending_echo = True
        self._expiry = now + self._lifetime if self._lifetime > 0.0 else math.inf
        self._writes += 1
        return True

    def set_gains(self, gains: object) -> None:
        """Load a :class:`hebictl.gains.GroupGains` into the simulated modules (PID loops restart)."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if not isinstance(gains, GroupGains):
            raise HardwareError(f"the sim backend takes hebictl.gains.GroupGains, got {type(gains).__name__}")
        self.actuators.set_gains(gains)

    def close(self) -> None:
        """Stop the simulation and close the viewer; idempotent."""
        self._closed = True
        if self._viewer is not None:
            try:
                self._viewer.close()
            finally:
                self._viewer = None

    def __repr__(self) -> str:
        return (f"SimBackend({self.scene.robot.name!r}, dof={self._n}, timestep={self._dt}, "
                f"feedback_frequency={self._fb_hz}, t={self.sim_time:.6f})")

    # ------------------------------------------------------------------ physics
    def advance(self, t: float) -> None:
        """Simulate up to time ``t`` [s, clock time] without touching the clock (tests, tools)."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if not self._started:
            self._start(self._clock.now())
        self._advance(t)

    def _start(self, now: float) -> None:
        self._started = True
        self._t0 = now
        self._t_next = now + self._dt - _EPS_T

    def _advance(self, t: float) -> None:
        """Step physics while the next step still ends at or before ``t`` [s] (runs every control cycle)."""
        if t < self._t_next or not self._started:
            return
        dt = self._dt
        steps = math.floor((t - self._t0) / dt + _EPS_T / dt) - self._steps
        m, d = self._m, self._d
        args = self._step_args
        step = mujoco.mj_step
        t_step = self._t0 + self._steps * dt  # start of the next step
        for _ in range(steps):
            if t_step > self._expiry - _EPS_T:
                self._expire()
            actuator_step(*args)
            step(m, d)
            if self._pending_echo:
                self._pending_echo = False
                np.copyto(self._cmd_echo, self.actuators.command)
            t_step += dt
        self._steps += steps
        self._t_next = self._t0 + (self._steps + 1) * dt - _EPS_T

    def _expire(self) -> None:
        self._expiry = math.inf
        self.actuators.release()
        self._cmd_echo.fill(np.nan)
        self._pending_echo = False

    # ------------------------------------------------------------------ viewer
    def _open_viewer(self) -> None:
        if not _display_available():
            warnings.warn("viewer=True but no display is available; the simulation runs headless",
                          RuntimeWarning, stacklevel=3)
            return
        try:
            import mujoco.viewer

            self._viewer = mujoco.viewer.launch_passive(self._m, self._d)
        except Exception as exc:  # no OpenGL, macOS without mjpython, ...
            warnings.warn(f"cannot open MuJoCo's viewer ({exc}); the simulation runs headless",
                          RuntimeWarning, stacklevel=3)
            self._viewer = None

    def _sync_viewer(self) -> None:
        wall = time.perf_counter()
        if wall - self._viewer_sync < _VIEWER_PERIOD:
            return
        self._viewer_sync = wall
        if not self._viewer.is_running():
            log.info("MuJoCo viewer closed; the simulation continues headless")
            self._viewer = None
            return
        self._viewer.sync()
