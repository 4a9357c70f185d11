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
long the controller takes between opening the backend and its first command (building the Arm and
its plugins, checking a goal, connecting to a broker), time in which uncommanded modules would let
the arm fall. The sim's own kernels are compiled or loaded when the backend is built, not in the
first step.

Every physics step runs the simulated firmware (:mod:`sim_backend.actuator`) once, so the
modules' PID loops run at the physics rate however slowly the controller loop runs. A sample is
the physics state at the last step at or before the sample time.

Semantics kept from HEBI modules: NaN in a command field = not commanded; a write replaces all
three fields; a command older than ``command_lifetime`` expires and the modules go limp (the
motor is switched off; an arm then falls, unlike the mock, which holds). Feedback effort is the
torque the module applies; orientation is each module's input frame (its IMU) in the world,
from the simulated pose. The modules' own safety (firmware position limits, M-stop, command
lifetime) runs every step too (:mod:`sim_backend.firmware`); :meth:`SimBackend.set_safety`,
:meth:`SimBackend.press_mstop`. A double shoulder's second module is one more simulated module on
the same joint (:meth:`SimBackend.open_extra_modules`). Faults are scheduled like the mock's
(:attr:`SimBackend.faults`: dropped, frozen, delayed or NaN feedback, a module that stops
answering, commands that do not arrive), see :mod:`sim_backend.modules`. Delayed feedback
(``faults.delay_feedback(latency)``) delivers, at each sample time, the sample taken ``latency``
earlier (from the last :data:`HISTORY_SAMPLES` samples), its ``time`` field saying when it was taken.
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl import jit
from hebictl._typing import FloatArray
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.gains import GroupGains
from hebictl.hardware.base import Backend, Command, Feedback
from hebictl.hardware.clock import Clock
from hebictl.hardware.faults import FaultKind, FaultSchedule
from hebictl.hardware.firmware import ModuleSafety
from hebictl.hardware.group import FeedbackGrid, ModuleGroup, check_read, disconnected
from sim_backend.actuator import ActuatorGroup, actuator_step
from sim_backend.firmware import F_HI, F_LIMIT_STATE, F_LO, FirmwareState, firmware_step, install_command
from sim_backend.modules import ExtraModules, apply_feedback_faults, next_deliverable
from sim_backend.payload import PAYLOAD_KEY
from sim_backend.scene import Scene

__all__ = ["TRACE_ENV", "SharedPhysics", "SimBackend"]

#: environment variable naming a file the sim appends its physical state to (see SimBackend)
TRACE_ENV = "HEBICTL_SIM_TRACE"

log = logging.getLogger(__name__)
#: [kg, kg·m²] the mass and inertia of an empty grip (MuJoCo's compiler gives massless bodies this)
_MASS_FLOOR = 1e-13
_EPS_T = 1e-9  # [s] a sample or step due within 1 ns of now counts as due now
_VIEWER_PERIOD = 1.0 / 60.0  # [s] wall time between viewer refreshes


# rows of the packed copy of the last sample that frozen feedback repeats (orientation: 4 rows)
_FR_TIME, _FR_POS, _FR_VEL, _FR_EFF, _FR_ORIENT, _FR_PCMD, _FR_VCMD, _FR_ECMD, _FR_MSTOP, _FR_LIMIT = (
    0, 1, 2, 3, 4, 8, 9, 10, 11, 12)
_FR_ROWS = 13
#: samples kept for delayed feedback (``faults.delay_feedback``): 0.256 s at 1 kHz, 1.28 s at 200 Hz
HISTORY_SAMPLES = 256


@jit.kernel("f8[::1], f8[::1], f8[:, ::1], i8[:, ::1], f8[:, ::1], f8[::1], i8[::1], f8[:, ::1], f8[:, ::1], "
            "f8[:, ::1], f8, f8[::1], f8[::1], f8[::1], f8[::1], f8[:, ::1], f8[::1], f8[::1], f8[::1], f8[::1], "
            "f8[::1]", cold="compile", cache=jit.CACHE)
def _sample(qpos, qvel, xquat, idx, offset, effort, mstop, F, frozen, echo, t, times, pos, vel, eff, orient, pcmd,
            vcmd, ecmd, mst, lim):
    """Fill a Feedback: joint state, applied effort, command echo (``echo[:, i]``), sample time
    ``t``, each module's world orientation (xquat ⊗ offset), M-stop and limit state; and the same
    values into ``frozen`` (rows ``_FR_*``), what frozen feedback repeats. One call instead of a
    dozen numpy copies: this runs every control cycle. ``idx`` rows: qpos index, qvel index and
    IMU body of each module (packed: the call costs per argument)."""
    m = float(mstop[0])
    for i in range(idx.shape[1]):
        p, v, e = qpos[idx[0, i]], qvel[idx[1, i]], effort[i]
        pc, vc, ec, ls = echo[0, i], echo[1, i], echo[2, i], F[F_LIMIT_STATE, i]
        times[i] = t
        pos[i] = p
        vel[i] = v
        eff[i] = e
        pcmd[i] = pc
        vcmd[i] = vc
        ecmd[i] = ec
        mst[i] = m
        lim[i] = ls
        frozen[_FR_TIME, i] = t
        frozen[_FR_POS, i] = p
        frozen[_FR_VEL, i] = v
        frozen[_FR_EFF, i] = e
        frozen[_FR_PCMD, i] = pc
        frozen[_FR_VCMD, i] = vc
        frozen[_FR_ECMD, i] = ec
        frozen[_FR_MSTOP, i] = m
        frozen[_FR_LIMIT, i] = ls
        b = idx[2, i]
        w1, x1, y1, z1 = xquat[b, 0], xquat[b, 1], xquat[b, 2], xquat[b, 3]
        w2, x2, y2, z2 = offset[i, 0], offset[i, 1], offset[i, 2], offset[i, 3]
        w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
        y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
        z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
        if w < 0.0:  # one sign convention (w >= 0) for a quaternion that could be either
            w, x, y, z = -w, -x, -y, -z
        orient[i, 0], orient[i, 1], orient[i, 2], orient[i, 3] = w, x, y, z
        frozen[_FR_ORIENT, i], frozen[_FR_ORIENT + 1, i] = w, x
        frozen[_FR_ORIENT + 2, i], frozen[_FR_ORIENT + 3, i] = y, z


def _display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or os.name == "nt"


class SimBackend(ModuleGroup):
    """Simulated HEBI modules on a MuJoCo model; see the module docstring for timing and semantics."""

    # the firmware kernel's schedule [s, clock], set by _run_kernels (which __init__ calls)
    _fw_next: float  # earliest command expiry
    _fw_due: float  # the firmware kernel runs at the first step starting after this

    def __init__(self, names: Sequence[str], families: Sequence[str], scene: Scene, actuators: ActuatorGroup, *,
                 clock: Clock, initial_position: ArrayLike | None = None, feedback_frequency: float = 100.0,
                 command_lifetime: float = 0.25, viewer: bool = False, gas_spring: ArrayLike | None = None,
                 rotor_inertia: ArrayLike | None = None) -> None:
        """Modules ``names``/``families`` (one per joint of ``scene``, in joint order) driven by
        ``actuators``; ``initial_position`` [rad or m] (default: zeros), ``feedback_frequency``
        [Hz], ``command_lifetime`` [s] (0 = never expires), ``viewer``: show MuJoCo's passive
        viewer when a display is available, ``gas_spring`` [N·m] constant torque per joint of a
        gas spring (e.g. ``[0, 7, 0, 0, 0, 0]`` for a kit whose config offsets -7 N·m),
        ``rotor_inertia`` [kg·m²] per joint: the armature one more module on it adds."""
        super().__init__(names, families)
        n = self._n
        if len(self._families) != n:
            raise ConfigError(f"{n} names but {len(self._families)} families", key="families")
        if n != scene.qadr.shape[0] or n != actuators.size:
            raise ConfigError(f"{n} module names for a model of {scene.qadr.shape[0]} joints", key="names")
        self._clock = clock
        self.scene = scene
        self.actuators = actuators
        #: HEBICTL_SIM_TRACE=PATH: append every feedback sample's physical state (time [s, clock], wall
        #: time [s, perf_counter], joint positions, velocities: 2 + 2n float64 per row) to PATH, so a process driving
        #: the sim (e.g. ``hebictl teleop`` in benchmarks/safety.py) can be judged on its true state
        trace = os.environ.get(TRACE_ENV)
        self._trace = open(trace, "ab") if trace else None  # noqa: SIM115  (closed by close())
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
        if gas_spring is not None:
            try:
                spring = np.array(np.broadcast_to(np.asarray(gas_spring, dtype=np.float64), (n,)))
            except ValueError:
                raise ConfigError(f"gas_spring needs one torque [N·m] or {n}, got {gas_spring!r}",
                                  key="gas_spring") from None
            if not np.all(np.isfinite(spring)):
                raise ConfigError(f"gas_spring must be finite, got {spring}", key="gas_spring")
            d.qfrc_applied[scene.dadr] = spring  # MuJoCo keeps applied forces from step to step
        mujoco.mj_forward(m, d)
        self._dt = float(m.opt.timestep)
        self._t0 = clock.now()
        self._started = False
        self._t_next = math.inf  # [s] clock time at which the next physics step is due
        self._steps = 0
        # the command echo: while _pending_echo (a command written, no physics step since), the
        # feedback echoes _echo_snap, the command held before it; otherwise the command held now
        self._echo_snap = np.full((3, n), np.nan)
        self._pending_echo = False
        self._closed = False
        self._writes = 0
        self.grid = FeedbackGrid(self._t0)  # the feedback instants, and the last delivered
        self._seq = 0
        self._last_sample_t = math.nan
        #: the physics this backend shares with other arms' backends (None: its own, stepped here)
        self.physics: SharedPhysics | None = None
        self.faults = FaultSchedule(clock, self._names)
        # the last delivered sample (rows _FR_*, filled by _sample; its sequence is _seq), which
        # frozen feedback repeats
        self._frozen = np.full((_FR_ROWS, n), np.nan)
        #: the last HISTORY_SAMPLES samples (rows _FR_*), indexed by sequence: what delayed feedback shows
        self._history = np.full((HISTORY_SAMPLES, _FR_ROWS, n), np.nan)
        # module i drives joint _joint[i] with sign _sign[i]; the first n are the arm's own modules
        self._joint = np.arange(n, dtype=np.int64)
        self._sign = np.ones(n)
        self.extra: list[ExtraModules] = []
        self.safety: ModuleSafety | None = None
        self.rotor_inertia = np.zeros(n) if rotor_inertia is None else np.array(
            np.broadcast_to(np.asarray(rotor_inertia, dtype=np.float64), (n,)))
        self.firmware = FirmwareState.create(actuators.motor[0].copy(), actuators.motor[1].copy())
        self.feedback_frequency = feedback_frequency
        self.command_lifetime = command_lifetime
        self._bind()
        self._run_kernels(self._t0)  # compile (or load) the kernels now, not inside the first control cycle
        self._viewer: Any = None  # MuJoCo's passive viewer handle (mujoco ships no type stubs), None: headless
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
        return self.grid.hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        # restart the sample grid at the last delivered sample so no sample is repeated
        self.grid.restart(hz, self._last_sample_t if self._seq else self._clock.now(), delivered=self._seq > 0)

    @property
    def last_command(self) -> Command:
        """Copy of the command the modules hold now (NaN = not commanded or expired)."""
        c = self.firmware.commanded[:, :self._n]
        return Command(position=c[0].copy(), velocity=c[1].copy(), effort=c[2].copy())

    # ------------------------------------------------------------------ Backend methods
    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """Simulate up to the next feedback sample (waiting at most ``timeout_s`` [s]) and fill ``into``."""
        check_read("sim", self._closed, into, timeout_s, self._n)
        clock = self._clock
        now = clock.now()
        deadline = now + timeout_s
        grid = self.grid
        hz = grid.hz
        faults = self.faults
        faulty = bool(faults)  # once: nothing in a read changes the schedule
        if hz > 0.0:
            k = grid.next_index(now)
            if faulty:
                k = next_deliverable(faults, k, grid.origin, hz, deadline)
            t_k = grid.time(k)
        if hz <= 0.0 or t_k > deadline:
            self._advance(deadline)
            clock.sleep_until(deadline)
            return False
        self._advance(t_k)
        clock.sleep_until(t_k)
        grid.k = k
        if self._trace is not None:
            sc = self.scene
            row = np.concatenate(([t_k, time.perf_counter()], self._d.qpos[sc.qadr], self._d.qvel[sc.dadr]))
            self._trace.write(row.tobytes())
        if faulty:
            disconnected(faults, t_k, self._names, self._families)
            if self._seq and faults.first_active(FaultKind.FROZEN, t_k) is not None:
                self._repeat_frozen(into)
                into.rx_time = clock.now()
                return True
        mujoco.mj_kinematics(self._m, self._d)  # xquat of the state just reached (mj_step leaves it one step old)
        _sample(*self._sample_args, self._echo_snap if self._pending_echo else self._cmd, t_k, into.time,
                into.position, into.velocity, into.effort, into.orientation, into.position_command,
                into.velocity_command, into.effort_command, into.mstop, into.position_limit_state)
        self._seq = seq = self._seq + 1  # _sample also wrote this sample into _frozen, should a freeze start now
        self._last_sample_t = t_k
        history = self._history  # every sample kept a while, for delayed feedback (one copy per read)
        np.copyto(history[seq % history.shape[0]], self._frozen)
        into.sequence = seq
        into.rx_time = clock.now()
        if faulty:
            delay = faults.first_active(FaultKind.LATENCY, t_k)
            if delay is not None:
                self._repeat_delayed(into, t_k - delay.latency_s)
            apply_feedback_faults(faults, into, t_k)
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
        if now >= self._t_next:
            self._advance(now)
        faults = self.faults
        lost = None
        if faults:
            if faults.first_active(FaultKind.COMMANDS_IGNORED, now) is not None:
                return True  # lost on the way: the modules' command lifetime runs out
            lost = faults.first_active(FaultKind.DISCONNECTED, now)
        if lost is None:
            # command_modules(slice(0, n), ...) in one kernel call (this runs every control cycle)
            life = self._lifetime
            expiry = now + life if life > 0.0 else math.inf
            fw = self.firmware
            install_command(0, pc, vc, ec, fw.commanded, self.actuators.command, fw.F, expiry, self._echo_snap,
                            not self._pending_echo)
            if expiry < self._fw_next:
                self._fw_next = expiry
                self._fw_due = min(self._fw_due, expiry - _EPS_T)
        else:  # the other modules still get theirs; the lost one's last command runs out
            self._hold_echo()
            keep = self.firmware.commanded[:, lost.module].copy()
            expiry = float(self.firmware.expiry[lost.module])
            self.command_modules(slice(0, n), pc, vc, ec, now)
            self.firmware.commanded[:, lost.module] = keep
            self.firmware.expiry[lost.module] = expiry
            self._fw_due = -math.inf  # the firmware kernel hands the kept command to the loops next step
        # the command echo shows the command from the next sample on, as the Backend protocol says
        self._pending_echo = True
        self._writes += 1
        return lost is None

    def set_payload(self, mass: float, com: ArrayLike | None = None) -> None:
        """The simulated tool picks up (or lets go of) a load now: the payload body's mass [kg] and
        centre of mass ``com`` [m, end-effector frame; None: unchanged], as a point mass. Physics only:
        the controller is not told, as when a real gripper closes on an object of unknown weight.
        Needs a one-arm scene built with a payload (``payload={"mass": 0}`` for an empty grip)."""
        m = self._m
        # the body with_payload marked (named "payload", or "payload_2" beside a link of that name)
        name = next((b.name for b in self.scene.robot.bodies if PAYLOAD_KEY in b.metadata), None)
        body = -1 if name is None else mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        if body < 0:
            raise HardwareError("this sim scene has no payload body: build it with payload={'mass': 0} "
                                "to pick a load up later")
        try:
            kg = float(mass)
        except (TypeError, ValueError):
            kg = math.nan
        if not (math.isfinite(kg) and kg >= 0.0):
            raise HardwareError(f"payload mass must be finite and >= 0 kg, got {mass!r}")
        c = None
        if com is not None:
            try:
                c = np.asarray(com, dtype=np.float64).reshape(3)
            except (TypeError, ValueError):
                raise HardwareError(f"payload com must be 3 numbers [m], got {com!r}") from None
            if not np.all(np.isfinite(c)):
                raise HardwareError(f"payload com must be finite, got {c.tolist()}")
        self.advance_to_now()  # the physics so far with the old load
        m.body_mass[body] = max(kg, _MASS_FLOOR)
        m.body_inertia[body] = _MASS_FLOOR  # a point mass (MuJoCo needs inertia > 0 on a body with mass)
        if c is not None:
            m.body_ipos[body] = c

    def true_state(self) -> tuple[FloatArray, FloatArray]:
        """The joints' physical position and velocity now (whatever the feedback shows; for tests)."""
        self.advance_to_now()
        d, sc = self._d, self.scene
        return d.qpos[sc.qadr].copy(), d.qvel[sc.dadr].copy()

    def command_modules(self, modules: slice, pc: ArrayLike, vc: ArrayLike, ec: ArrayLike, now: float,
                        lifetime: float | None = None) -> None:
        """Install a command for ``modules`` (indices into all simulated modules) written at ``now``,
        in force for ``lifetime`` [s] (default the backend's; 0 = forever)."""
        if (modules.start or 0) < self._n:
            self._hold_echo()
        fw = self.firmware
        cmd, run = fw.commanded, self.actuators.command
        cmd[0, modules] = run[0, modules] = pc
        cmd[1, modules] = run[1, modules] = vc
        cmd[2, modules] = run[2, modules] = ec
        life = self._lifetime if lifetime is None else lifetime
        expiry = now + life if life > 0.0 else math.inf
        fw.expiry[modules] = expiry
        self._fw_next = min(self._fw_next, expiry)
        self._fw_due = min(self._fw_due, expiry - _EPS_T)

    def _hold_echo(self) -> None:
        """Keep the feedback echoing the command held now until the next physics step: call
        before changing the arm modules' command (the Backend protocol's echo timing)."""
        if not self._pending_echo:
            np.copyto(self._echo_snap, self._cmd[:, :self._n])
            self._pending_echo = True

    def _repeat_frozen(self, into: Feedback) -> None:
        """Fill ``into`` with the last delivered sample (frozen feedback), its sequence included."""
        f = self._frozen
        for name, row in (("time", _FR_TIME), ("position", _FR_POS), ("velocity", _FR_VEL), ("effort", _FR_EFF),
                          ("position_command", _FR_PCMD), ("velocity_command", _FR_VCMD),
                          ("effort_command", _FR_ECMD), ("mstop", _FR_MSTOP), ("position_limit_state", _FR_LIMIT)):
            np.copyto(getattr(into, name), f[row])
        np.copyto(into.orientation, f[_FR_ORIENT:_FR_ORIENT + 4].T)
        into.sequence = self._seq

    def _repeat_delayed(self, into: Feedback, t: float) -> None:
        """Fill ``into`` with the newest kept sample taken at or before ``t`` [s] (delayed
        feedback: the robot as it was ``latency`` ago, its sample ``time`` saying so), else the
        oldest kept one; the sequence stays new, as a late but fresh packet's would."""
        history, seq = self._history, self._seq
        size = history.shape[0]
        pick = history[max(seq - size + 1, 1) % size]
        for k in range(seq, max(seq - size, 0), -1):
            row = history[k % size]
            if row[_FR_TIME, 0] <= t + _EPS_T:
                pick = row
                break
        for name, r in (("time", _FR_TIME), ("position", _FR_POS), ("velocity", _FR_VEL), ("effort", _FR_EFF),
                        ("position_command", _FR_PCMD), ("velocity_command", _FR_VCMD),
                        ("effort_command", _FR_ECMD), ("mstop", _FR_MSTOP), ("position_limit_state", _FR_LIMIT)):
            np.copyto(getattr(into, name), pick[r])
        np.copyto(into.orientation, pick[_FR_ORIENT:_FR_ORIENT + 4].T)

    def set_safety(self, safety: ModuleSafety) -> None:
        """Firmware limits and strategies per joint (:mod:`sim_backend.firmware`); a double
        shoulder's second module gets its joint's, mirrored."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if safety.size != self._n:
            raise ConfigError(f"safety settings for {safety.size} modules, the sim has {self._n}", key="module_safety")
        self.firmware.apply(safety, self._joint, self._sign)
        self.safety = safety
        self._firmware_changed()

    def _firmware_changed(self) -> None:
        """Run the firmware kernel next step; every step while limits or the M-stop need it."""
        fw = self.firmware
        self._fw_always = bool(fw.mstop[0]) or bool(np.isfinite(fw.F[F_LO]).any() or np.isfinite(fw.F[F_HI]).any())
        self._fw_due = -math.inf

    @property
    def mstop_pressed(self) -> bool:
        return bool(self.firmware.mstop[0])

    def press_mstop(self) -> None:
        """Press the M-stop input of every module (simulated up to now first)."""
        self.advance_to_now()
        fw = self.firmware
        if not fw.mstop[0]:
            fw.hold_q[:] = self._sign * self._d.qpos[self._qadr_all]
            fw.mstop[0] = 1
            self._firmware_changed()

    def release_mstop(self) -> None:
        """Release the M-stop: modules run their (unexpired) commands again."""
        self.advance_to_now()
        self.firmware.mstop[0] = 0
        self._firmware_changed()

    def open_extra_modules(self, names: Sequence[str], families: Sequence[str], *, joints: Sequence[int],
                           signs: Sequence[float]) -> Backend:
        """More simulated modules on this arm's joints, e.g. a double shoulder's mirrored module
        (``joints[i]``: the joint module ``i`` drives, ``signs[i] = -1``: mounted mirrored). Each is
        the joint's own module type with its gains; its rotor inertia is added to the joint."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        view = ExtraModules.attach(self, names, families, joints, signs)
        self.extra.append(view)
        return view

    def add_modules(self, joints: NDArray[np.int64], signs: FloatArray) -> int:
        """Grow the simulated module arrays by one module per joint; returns the first new index.

        The extra modules' interface (:class:`sim_backend.modules.ExtraModules` uses only these public
        methods: :meth:`add_modules`, :meth:`advance_to_now`, :meth:`module_joints`,
        :meth:`module_motion`, :meth:`set_module_gains`, :meth:`command_modules`)."""
        if np.any((joints < 0) | (joints >= self._n)) or np.any(np.abs(np.abs(signs) - 1.0) > 0):
            raise ConfigError(f"extra modules need joints in 0..{self._n - 1} and signs ±1, got {joints}, {signs}",
                              key="joints")
        first = self._joint.shape[0]
        self.actuators = self.actuators.with_modules(joints)
        fw_new = FirmwareState.create(self.actuators.motor[0, first:].copy(), self.actuators.motor[1, first:].copy())
        self.firmware = fw = self.firmware.extended(fw_new)
        fw.mstop_strategy[first:] = fw.mstop_strategy[joints]
        self._joint = np.concatenate([self._joint, joints])
        self._sign = np.concatenate([self._sign, signs])
        dadr = self.scene.dadr[joints]
        np.add.at(self._m.dof_armature, dadr, self.rotor_inertia[joints])  # the second rotor
        # and its torque: the exported joint's actuatorfrcrange bounds one module's effort, and MuJoCo
        # clips the joint's summed actuator force to it (x7's double shoulder applied 44 of the 71
        # N·m its two modules reported once a brake asked for more than one module's worth)
        jnt = self._m.dof_jntid[dadr]
        extra = self.actuators.motor[2, first:]
        np.add.at(self._m.jnt_actfrcrange[:, 0], jnt, -extra)
        np.add.at(self._m.jnt_actfrcrange[:, 1], jnt, extra)
        self._bind()
        if self.safety is not None:
            self.firmware.apply(self.safety, self._joint, self._sign)
        self._firmware_changed()
        return first

    def module_joints(self, modules: slice) -> NDArray[np.int64]:
        """The arm joint each of ``modules`` drives (a copy)."""
        return self._joint[modules].copy()

    def module_motion(self, modules: slice, position: FloatArray, velocity: FloatArray) -> None:
        """Write the position and velocity ``modules`` measure (their mounting sign applied) into the
        two arrays, at the physics' present (call :meth:`advance_to_now` first)."""
        sign, joint, d = self._sign[modules], self._joint[modules], self._d
        np.multiply(sign, d.qpos[self.scene.qadr[joint]], out=position)
        np.multiply(sign, d.qvel[self.scene.dadr[joint]], out=velocity)

    def set_module_gains(self, modules: slice, table: FloatArray, strategy: NDArray[np.int64] | None) -> None:
        """Load a gain table (and control strategy) into ``modules``; their PID loops restart."""
        acts = self.actuators
        acts.gains[:, :, modules] = table
        if strategy is not None:
            acts.strategy[modules] = strategy
        acts.state[:, :, modules] = 0.0
        self._firmware_changed()

    def set_gains(self, gains: object) -> None:
        """Load a :class:`hebictl.gains.GroupGains` into the simulated modules (PID loops restart);
        extra modules take their joint's gains."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if not isinstance(gains, GroupGains):
            raise HardwareError(f"the sim backend takes hebictl.gains.GroupGains, got {type(gains).__name__}")
        acts, n = self.actuators, self._n
        acts.set_gains(gains, n)
        extra = self._joint[n:]
        if extra.size:
            acts.gains[:, :, n:] = acts.gains[:, :, extra]
            acts.strategy[n:] = acts.strategy[extra]
            acts.state[:, :, n:] = 0.0
        self._firmware_changed()

    def close(self) -> None:
        """Stop the simulation and close the viewer; idempotent."""
        self._closed = True
        if self._trace is not None:
            self._trace.close()
            self._trace = None
        if self._viewer is not None:
            try:
                self._viewer.close()
            finally:
                self._viewer = None

    def __repr__(self) -> str:
        return (f"SimBackend({self.scene.robot.name!r}, dof={self._n}, timestep={self._dt}, "
                f"feedback_frequency={self.grid.hz}, t={self.sim_time:.6f})")

    def replace_scene(self, scene: Scene) -> None:
        """Simulate ``scene`` from now on (same joints and modules, e.g. with contact geoms added by
        :func:`sim_backend.obstacles.add_contact_boxes`); its data must hold the current state."""
        if scene.qadr.shape != self.scene.qadr.shape:
            raise ConfigError("the new scene has other joints than the arm's", key="scene")
        self.scene = scene
        self._m, self._d = scene.model, scene.data
        mujoco.mj_forward(self._m, self._d)
        self._bind()

    # ------------------------------------------------------------------ physics
    def advance(self, t: float) -> None:
        """Simulate up to time ``t`` [s, clock time] without touching the clock (tests, tools)."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        if not self._started:
            self._start(self._clock.now())
        self._advance(t)

    def _start(self, now: float) -> None:
        if self.physics is not None:
            self.physics.start(now)
            return
        self._started = True
        self._t0 = now
        self._t_next = now + self._dt - _EPS_T

    def _advance(self, t: float) -> None:
        """Step physics while the next step still ends at or before ``t`` [s] (runs every control cycle)."""
        if t < self._t_next or not self._started:
            return
        if self.physics is not None:
            self.physics.advance(t)
            return
        dt = self._dt
        steps = math.floor((t - self._t0) / dt + _EPS_T / dt) - self._steps
        m, d = self._m, self._d
        args, fw_args = self._step_args, self._fw_args
        step = mujoco.mj_step
        t_step = self._t0 + self._steps * dt  # start of the next step
        # the firmware kernel only when it can change something: limits or M-stop active, a
        # setting changed, or a command's lifetime running out (writes install their command directly)
        fw_due = self._fw_due
        for _ in range(steps):
            if t_step > fw_due:
                firmware_step(t_step, *fw_args)  # an expired command: the echo reads NaN after this step
                self._fw_next = fw_next = float(self.firmware.expiry.min())
                self._fw_due = fw_due = -math.inf if self._fw_always else fw_next - _EPS_T
            actuator_step(*args)
            step(m, d)
            t_step += dt
        if steps > 0:
            self._pending_echo = False  # a step ran: the echo shows the command held now
        self._steps += steps
        self._t_next = self._t0 + (self._steps + 1) * dt - _EPS_T

    def advance_to_now(self) -> None:
        """Simulate up to the clock's present (the first call starts the physics)."""
        if self._closed:
            raise HardwareError("sim backend is closed")
        now = self._clock.now()
        if not self._started:
            self._start(now)
        self._advance(now)

    @property
    def _qadr_all(self) -> NDArray[np.int64]:
        return self.scene.qadr[self._joint]

    def _bind(self) -> None:
        """Kernel arguments, bound once per module set (views into MuJoCo's buffers stay valid)."""
        a, d, m, fw, sc = self.actuators, self._d, self._m, self.firmware, self.scene
        qadr, dadr = np.ascontiguousarray(sc.qadr[self._joint]), np.ascontiguousarray(sc.dadr[self._joint])
        # this arm's actuators: all of the model's, or its block of a scene shared with other arms
        acts = slice(sc.actuator_offset, sc.actuator_offset + sc.qadr.shape[0])
        self._step_args = (a.gains, fw.eff_strategy, a.motor, a.command, a.state, d.qpos, d.qvel, qadr, dadr,
                           self._dt, d.ctrl[acts], m.actuator_biasprm[acts], a.effort, a.slope, self._joint,
                           self._sign)
        self._fw_args = (fw.commanded, fw.F, fw.I, fw.mstop, a.command, a.strategy, d.qpos, d.qvel, qadr, dadr,
                         self._sign)
        self._cmd = fw.commanded  # what the echo shows (its first n columns) once a step has run
        idx = np.ascontiguousarray(np.stack([sc.qadr, sc.dadr, sc.imu_body]), dtype=np.int64)
        self._sample_args = (d.qpos, d.qvel, d.xquat, idx, sc.imu_offset, a.effort, fw.mstop, fw.F, self._frozen)

    def _run_kernels(self, t: float) -> None:
        """Load (or compile) every sim kernel's declared signatures now, not inside the first control
        cycle, and run the firmware and actuator kernels once at ``t``: the modules' state at start."""
        jit.preload("sim_backend.actuator", "sim_backend.firmware", __name__)
        # the firmware kernel runs at the first step starting after _fw_due [s, clock]: -inf while limits
        # or the M-stop are active (_fw_always) or a setting changed, else when the first command expires
        self._fw_always = False
        self._fw_next = math.inf  # [s] earliest command expiry
        self._fw_due = math.inf
        firmware_step(t, *self._fw_args)
        actuator_step(*self._step_args)

    def join(self, physics: SharedPhysics, scene: Scene) -> None:
        """Simulate this arm as part of ``physics`` (several arms in one MuJoCo scene) from now on;
        ``scene`` is this arm's view of it (its joints' and actuators' places in the shared model).
        Call before any backend of ``physics`` is first commanded."""
        if self._started or physics.started:
            raise HardwareError("a sim backend joins a shared scene before its first command")
        self.replace_scene(scene)
        self.physics = physics
        physics.members.append(self)

    def _physics_step(self, t_step: float) -> None:
        """This arm's simulated firmware and modules for the physics step starting at ``t_step``
        (:class:`SharedPhysics` runs every member's before one ``mj_step``)."""
        if t_step > self._fw_due:
            firmware_step(t_step, *self._fw_args)
            self._fw_next = fw_next = float(self.firmware.expiry.min())
            self._fw_due = -math.inf if self._fw_always else fw_next - _EPS_T
        actuator_step(*self._step_args)

    def _physics_stepped(self, physics: SharedPhysics, steps: int) -> None:
        self._started, self._t0, self._steps = True, physics.t0, physics.steps
        self._t_next = physics.t_next
        if steps > 0:
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


class SharedPhysics:
    """One MuJoCo model and data stepped for several :class:`SimBackend` (arms in one scene, so they
    can touch): physics starts at the first command any of them writes, and each step runs every
    arm's simulated firmware and modules, then one ``mj_step``. Built by :mod:`sim_backend.world`."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        self.model, self.data = model, data
        self.dt = float(model.opt.timestep)
        self.members: list[SimBackend] = []
        self.started = False
        self.t0 = 0.0
        self.steps = 0
        self.t_next = math.inf
        #: arm name -> its collision geoms' ids (:func:`sim_backend.world.arm_geoms`)
        self.geom_sets: dict[str, frozenset[int]] = {}

    @property
    def sim_time(self) -> float:
        return self.t0 + self.steps * self.dt

    def start(self, now: float) -> None:
        if not self.started:
            self.started, self.t0 = True, now
            self.t_next = now + self.dt - _EPS_T
            for b in self.members:
                b._physics_stepped(self, 0)

    def advance(self, t: float) -> None:
        """Step every member's modules and the shared physics up to ``t`` [s, clock time]."""
        if not self.started or t < self.t_next:
            return
        dt = self.dt
        steps = math.floor((t - self.t0) / dt + _EPS_T / dt) - self.steps
        m, d, members, step = self.model, self.data, self.members, mujoco.mj_step
        t_step = self.t0 + self.steps * dt
        for _ in range(steps):
            for b in members:
                b._physics_step(t_step)
            step(m, d)
            t_step += dt
        self.steps += steps
        self.t_next = self.t0 + (self.steps + 1) * dt - _EPS_T
        for b in members:
            b._physics_stepped(self, steps)


# the simulator imports these kernels by name: dispatchers, not wrappers (numba compiles on first
# call or SimBackend's preload, as plain numba would)
jit.materialize(__name__)
