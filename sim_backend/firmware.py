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
import os
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from hebictl._typing import FloatArray
from hebictl.hardware.firmware import LimitState, LimitStrategy, ModuleSafety, MstopStrategy

__all__ = ["DEFAULT_MSTOP_STRATEGY", "FirmwareState", "firmware_step"]

_CACHE = os.environ.get("HEBICTL_NUMBA_CACHE", "1") != "0"
_EPS_T = 1e-9
#: what the simulated modules do on an M-stop until told otherwise (assumed; read yours with hebi's Info)
DEFAULT_MSTOP_STRATEGY = MstopStrategy.MOTOR_OFF

_HOLD, _SPRING, _OFF, _DISABLED = (int(LimitStrategy.HOLD_POSITION), int(LimitStrategy.DAMPED_SPRING),
                                   int(LimitStrategy.MOTOR_OFF), int(LimitStrategy.DISABLED))
_M_OFF, _M_HOLD = int(MstopStrategy.MOTOR_OFF), int(MstopStrategy.HOLD_POSITION)
_BELOW, _INSIDE, _ABOVE, _UNINIT = (float(LimitState.BELOW), float(LimitState.INSIDE), float(LimitState.ABOVE),
                                    float(LimitState.UNINITIALIZED))
_AT_LOWER, _AT_UPPER = float(LimitState.AT_LOWER), float(LimitState.AT_UPPER)


@njit(cache=_CACHE)
def _beyond(strategy, lim, q, w, k, c, i, cmd, eff_cmd, eff_strategy):
    if strategy == _HOLD:
        eff_cmd[0, i] = lim
        eff_cmd[1, i] = 0.0
    elif strategy == _SPRING:
        e = cmd[2, i]
        eff_cmd[0, i] = math.nan
        eff_cmd[1, i] = math.nan
        eff_cmd[2, i] = (0.0 if math.isnan(e) else e) - k[i] * (q - lim) - c[i] * w
    elif strategy == _OFF:
        eff_strategy[i] = 0


@njit(cache=_CACHE)
def firmware_step(t, cmd, expiry, eff_cmd, strategy, eff_strategy, qpos, qvel, qadr, dadr, sign, lo, hi, smin,
                  smax, armed, limit_state, mstop, mstop_strategy, hold_q, k, c):
    """One step at time ``t`` [s]: expire commands, then write the command and strategy the PID
    loops run (``eff_cmd``, ``eff_strategy``) and each module's ``limit_state``. ``mstop[0]`` is 1
    while the M-stop is pressed. Returns how many commands expired in this step."""
    expired = 0
    pressed = mstop[0] != 0
    for i in range(strategy.shape[0]):
        if t > expiry[i] - _EPS_T:
            cmd[0, i] = math.nan
            cmd[1, i] = math.nan
            cmd[2, i] = math.nan
            expiry[i] = math.inf
            expired += 1
        g = sign[i]
        q = g * qpos[qadr[i]]
        w = g * qvel[dadr[i]]
        eff_strategy[i] = strategy[i]
        eff_cmd[0, i] = cmd[0, i]
        eff_cmd[1, i] = cmd[1, i]
        eff_cmd[2, i] = cmd[2, i]
        state = _INSIDE
        if armed[i] == 0:
            if lo[i] <= q <= hi[i]:
                armed[i] = 1
            else:
                state = _UNINIT
        if armed[i] != 0:
            if q < lo[i]:
                state = _BELOW
                _beyond(smin[i], lo[i], q, w, k, c, i, cmd, eff_cmd, eff_strategy)
            elif q > hi[i]:
                state = _ABOVE
                _beyond(smax[i], hi[i], q, w, k, c, i, cmd, eff_cmd, eff_strategy)
            elif smin[i] == _HOLD and eff_cmd[0, i] < lo[i]:  # inside, pushed out: limit the target
                state = _AT_LOWER
                eff_cmd[0, i] = lo[i]
                eff_cmd[1, i] = max(eff_cmd[1, i], 0.0)
            elif smax[i] == _HOLD and eff_cmd[0, i] > hi[i]:
                state = _AT_UPPER
                eff_cmd[0, i] = hi[i]
                eff_cmd[1, i] = min(eff_cmd[1, i], 0.0)
        limit_state[i] = state
        if pressed:
            ms = mstop_strategy[i]
            if ms == _M_OFF:
                eff_strategy[i] = 0
            elif ms == _M_HOLD:
                eff_cmd[0, i] = hold_q[i]
                eff_cmd[1, i] = 0.0
                eff_cmd[2, i] = math.nan
    return expired


@dataclass(eq=False)
class FirmwareState:
    """Per-module firmware settings and state (arrays handed to :func:`firmware_step` in place)."""

    commanded: FloatArray            # (3, N) what the controller wrote; NaN = nothing
    expiry: FloatArray               # (N,) [s] clock time each module's command expires (inf: never)
    eff_strategy: NDArray[np.int64]  # (N,) control strategy the loops run this step (0 = motor off)
    lo: FloatArray                   # (N,) firmware limits, module coordinates
    hi: FloatArray
    smin: NDArray[np.int64]
    smax: NDArray[np.int64]
    armed: NDArray[np.int64]
    limit_state: FloatArray
    mstop: NDArray[np.int64]         # (1,) 1 while pressed
    mstop_strategy: NDArray[np.int64]
    hold_q: FloatArray               # (N,) position where the M-stop was pressed (module coordinates)
    k: FloatArray                    # (N,) DampedSpring stiffness [N·m/rad]
    c: FloatArray                    # (N,) DampedSpring damping [N·m·s/rad]

    @classmethod
    def create(cls, max_effort: FloatArray, max_speed: FloatArray) -> FirmwareState:
        n = max_effort.shape[0]
        return cls(commanded=np.full((3, n), np.nan), expiry=np.full(n, np.inf), eff_strategy=np.zeros(n, np.int64),
                   lo=np.full(n, -np.inf), hi=np.full(n, np.inf), smin=np.full(n, _DISABLED, np.int64),
                   smax=np.full(n, _DISABLED, np.int64), armed=np.zeros(n, np.int64),
                   limit_state=np.full(n, _INSIDE), mstop=np.zeros(1, np.int64),
                   mstop_strategy=np.full(n, int(DEFAULT_MSTOP_STRATEGY), np.int64), hold_q=np.zeros(n),
                   k=10.0 * max_effort, c=2.0 * max_effort / max_speed)

    def apply(self, safety: ModuleSafety, joint: NDArray[np.int64], sign: FloatArray) -> None:
        """Settings ``safety`` (one entry per joint) for every module; module ``i`` drives joint
        ``joint[i]``, a mirrored one (``sign[i] = -1``) gets that joint's limits mirrored and swapped."""
        lo, hi, smin, smax, sm = safety.arrays()
        for i, (jj, g) in enumerate(zip(joint.tolist(), sign.tolist(), strict=True)):
            if g > 0:
                self.lo[i], self.hi[i], self.smin[i], self.smax[i] = lo[jj], hi[jj], smin[jj], smax[jj]
            else:
                self.lo[i], self.hi[i], self.smin[i], self.smax[i] = -hi[jj], -lo[jj], smax[jj], smin[jj]
            self.mstop_strategy[i] = sm[jj]
            self.armed[i] = 0  # a limit arms once the module has been inside it
            self.limit_state[i] = _UNINIT
