"""The simulated modules' own safety, run every physics step before the PID loops: command lifetime,
firmware position limits with their strategies, and the M-stop input with its strategy.

Why here and not in the controller: these are what a HEBI module does by itself when the PC has
stopped commanding it well (or at all), so the safety matrix can check what a real arm would do
when the process dies. Semantics (hebi-py's fields, :mod:`hebictl.hardware.firmware`):

* a module's command expires ``command_lifetime`` after it was written: it then commands nothing
  (the motor is off, a loaded joint falls);
* firmware limits arm once the module has been inside them since they were set (``Uninitialized``
  before that); beyond an armed limit: ``HoldPosition`` commands the limit position (velocity 0,
  the controller's effort kept; inside, a position target past the limit is limited to it and
  the state reads ``AtLower``/``AtUpper``, so the joint settles at the limit instead of
  chattering); ``DampedSpring`` replaces the position and velocity command by a spring-damper
  effort pushing back (``k = 10 max_effort`` per rad, ``c = 2 max_effort / max_speed``: assumed,
  HEBI does not publish its values); ``MotorOff`` switches the motor off; ``Disabled`` does
  nothing (the state still reads BELOW/ABOVE);
* while the M-stop is pressed: ``MotorOff`` switches the motor off, ``HoldPosition`` holds the
  position where it was pressed (position loop only: no gravity effort), ``Disabled`` ignores it.

All of it is one numba kernel over the modules, like the PID loops (:mod:`sim_backend.actuator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from hebictl import jit
from hebictl._typing import FloatArray
from hebictl.hardware.firmware import LimitState, LimitStrategy, ModuleSafety, MstopStrategy

__all__ = ["DEFAULT_MSTOP_STRATEGY", "FirmwareState", "firmware_step", "install_command"]

_EPS_T = 1e-9
#: what the simulated modules do on an M-stop until told otherwise (assumed; read yours with hebi's Info)
DEFAULT_MSTOP_STRATEGY = MstopStrategy.MOTOR_OFF

_HOLD, _SPRING, _OFF, _DISABLED = (int(LimitStrategy.HOLD_POSITION), int(LimitStrategy.DAMPED_SPRING),
                                   int(LimitStrategy.MOTOR_OFF), int(LimitStrategy.DISABLED))
_M_OFF, _M_HOLD = int(MstopStrategy.MOTOR_OFF), int(MstopStrategy.HOLD_POSITION)
_BELOW, _INSIDE, _ABOVE, _UNINIT = (float(LimitState.BELOW), float(LimitState.INSIDE), float(LimitState.ABOVE),
                                    float(LimitState.UNINITIALIZED))
_AT_LOWER, _AT_UPPER = float(LimitState.AT_LOWER), float(LimitState.AT_UPPER)


# rows of the packed per-module arrays (one float and one int array: numba's call overhead grows
# with the number of arguments, and this kernel runs every physics step)
F_EXPIRY, F_LO, F_HI, F_LIMIT_STATE, F_HOLD_Q, F_K, F_C = range(7)
I_EFF_STRATEGY, I_SMIN, I_SMAX, I_ARMED, I_MSTOP_STRATEGY = range(5)


@jit.helper(cache=jit.CACHE)
def _beyond(strategy, lim, q, w, F, i, cmd, eff_cmd, eff_strategy):
    if strategy == _HOLD:
        eff_cmd[0, i] = lim
        eff_cmd[1, i] = 0.0
    elif strategy == _SPRING:
        e = cmd[2, i]
        eff_cmd[0, i] = math.nan
        eff_cmd[1, i] = math.nan
        eff_cmd[2, i] = (0.0 if math.isnan(e) else e) - F[F_K, i] * (q - lim) - F[F_C, i] * w
    elif strategy == _OFF:
        eff_strategy[i] = 0


@jit.kernel("f8, f8[:, ::1], f8[:, ::1], i8[:, ::1], i8[::1], f8[:, ::1], i8[::1], f8[::1], f8[::1], i8[::1], i8[::1], "
            "f8[::1]", cold="compile",
            cache=jit.CACHE)
def firmware_step(t, cmd, F, I, mstop, eff_cmd, strategy, qpos, qvel, qadr, dadr, sign):
    """One step at time ``t`` [s]: expire commands, then write the command and strategy the PID
    loops run (``eff_cmd``, ``I[I_EFF_STRATEGY]``) and each module's limit state. ``mstop[0]`` is
    1 while the M-stop is pressed. Returns how many commands expired in this step."""
    expired = 0
    pressed = mstop[0] != 0
    eff_strategy = I[I_EFF_STRATEGY]
    for i in range(strategy.shape[0]):
        if t > F[F_EXPIRY, i] - _EPS_T:
            cmd[0, i] = math.nan
            cmd[1, i] = math.nan
            cmd[2, i] = math.nan
            F[F_EXPIRY, i] = math.inf
            expired += 1
        g = sign[i]
        q = g * qpos[qadr[i]]
        w = g * qvel[dadr[i]]
        eff_strategy[i] = strategy[i]
        eff_cmd[0, i] = cmd[0, i]
        eff_cmd[1, i] = cmd[1, i]
        eff_cmd[2, i] = cmd[2, i]
        lo, hi = F[F_LO, i], F[F_HI, i]
        smin, smax = I[I_SMIN, i], I[I_SMAX, i]
        state = _INSIDE
        if I[I_ARMED, i] == 0:
            if lo <= q <= hi:
                I[I_ARMED, i] = 1
            else:
                state = _UNINIT
        if I[I_ARMED, i] != 0:
            if q < lo:
                state = _BELOW
                _beyond(smin, lo, q, w, F, i, cmd, eff_cmd, eff_strategy)
            elif q > hi:
                state = _ABOVE
                _beyond(smax, hi, q, w, F, i, cmd, eff_cmd, eff_strategy)
            elif smin == _HOLD and eff_cmd[0, i] < lo:  # inside, pushed out: limit the target
                state = _AT_LOWER
                eff_cmd[0, i] = lo
                eff_cmd[1, i] = max(eff_cmd[1, i], 0.0)
            elif smax == _HOLD and eff_cmd[0, i] > hi:
                state = _AT_UPPER
                eff_cmd[0, i] = hi
                eff_cmd[1, i] = min(eff_cmd[1, i], 0.0)
        F[F_LIMIT_STATE, i] = state
        if pressed:
            ms = I[I_MSTOP_STRATEGY, i]
            if ms == _M_OFF:
                eff_strategy[i] = 0
            elif ms == _M_HOLD:
                eff_cmd[0, i] = F[F_HOLD_Q, i]
                eff_cmd[1, i] = 0.0
                eff_cmd[2, i] = math.nan
    return expired


@jit.kernel("i8, f8[::1], f8[::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8, f8[:, ::1], b1", cold="compile",
            cache=jit.CACHE)
def install_command(first, pc, vc, ec, cmd, run, F, expiry, snap, snapshot):
    """Command modules ``first ..`` with ``pc``, ``vc``, ``ec`` (into ``cmd``, what the controller
    wrote, and ``run``, what the PID loops run until the next :func:`firmware_step`), expiring at
    ``expiry`` [s]. With ``snapshot``, first copy the command held now (``cmd``'s first
    ``snap.shape[1]`` columns) into ``snap``. One call: a write runs every control cycle."""
    if snapshot:
        for r in range(3):
            for i in range(snap.shape[1]):
                snap[r, i] = cmd[r, i]
    for j in range(pc.shape[0]):
        i = first + j
        cmd[0, i] = run[0, i] = pc[j]
        cmd[1, i] = run[1, i] = vc[j]
        cmd[2, i] = run[2, i] = ec[j]
        F[F_EXPIRY, i] = expiry


@dataclass(eq=False)
class FirmwareState:
    """Per-module firmware settings and state, packed for :func:`firmware_step` (updated in place)."""

    commanded: FloatArray            # (3, N) what the controller wrote; NaN = nothing
    F: FloatArray                    # (7, N) rows F_*: expiry [s], limits, limit state, M-stop hold, spring k, c
    I: NDArray[np.int64]             # (5, N) rows I_*: strategy run this step, limit strategies, armed, M-stop
    mstop: NDArray[np.int64]         # (1,) 1 while pressed

    @classmethod
    def create(cls, max_effort: FloatArray, max_speed: FloatArray) -> FirmwareState:
        n = max_effort.shape[0]
        F = np.empty((7, n))
        F[F_EXPIRY], F[F_LO], F[F_HI] = np.inf, -np.inf, np.inf
        F[F_LIMIT_STATE], F[F_HOLD_Q] = _INSIDE, 0.0
        F[F_K], F[F_C] = 10.0 * max_effort, 2.0 * max_effort / max_speed
        I = np.zeros((5, n), dtype=np.int64)
        I[I_SMIN], I[I_SMAX], I[I_MSTOP_STRATEGY] = _DISABLED, _DISABLED, int(DEFAULT_MSTOP_STRATEGY)
        return cls(commanded=np.full((3, n), np.nan), F=F, I=I, mstop=np.zeros(1, np.int64))

    def extended(self, other: FirmwareState) -> FirmwareState:
        """This state followed by ``other``'s modules (the mstop flag is this one's)."""
        cat = np.concatenate
        return FirmwareState(commanded=np.ascontiguousarray(cat([self.commanded, other.commanded], axis=1)),
                             F=np.ascontiguousarray(cat([self.F, other.F], axis=1)),
                             I=np.ascontiguousarray(cat([self.I, other.I], axis=1)), mstop=self.mstop)

    @property
    def expiry(self) -> FloatArray:
        return self.F[F_EXPIRY]

    @property
    def limit_state(self) -> FloatArray:
        return self.F[F_LIMIT_STATE]

    @property
    def hold_q(self) -> FloatArray:
        return self.F[F_HOLD_Q]

    @property
    def eff_strategy(self) -> NDArray[np.int64]:
        return self.I[I_EFF_STRATEGY]

    @property
    def mstop_strategy(self) -> NDArray[np.int64]:
        return self.I[I_MSTOP_STRATEGY]

    def apply(self, safety: ModuleSafety, joint: NDArray[np.int64], sign: FloatArray) -> None:
        """Settings ``safety`` (one entry per joint) for every module; module ``i`` drives joint
        ``joint[i]``, a mirrored one (``sign[i] = -1``) gets that joint's limits mirrored and swapped."""
        lo, hi, smin, smax, sm = safety.arrays()
        F, I = self.F, self.I
        for i, (jj, g) in enumerate(zip(joint.tolist(), sign.tolist(), strict=True)):
            if g > 0:
                F[F_LO, i], F[F_HI, i], I[I_SMIN, i], I[I_SMAX, i] = lo[jj], hi[jj], smin[jj], smax[jj]
            else:
                F[F_LO, i], F[F_HI, i], I[I_SMIN, i], I[I_SMAX, i] = -hi[jj], -lo[jj], smax[jj], smin[jj]
            I[I_MSTOP_STRATEGY, i] = sm[jj]
            I[I_ARMED, i] = 0  # a limit arms once the module has been inside it
            F[F_LIMIT_STATE, i] = _UNINIT


# the simulator imports these kernels by name: dispatchers, not wrappers (numba compiles on first
# call or SimBackend's preload, as plain numba would)
jit.materialize(__name__)
