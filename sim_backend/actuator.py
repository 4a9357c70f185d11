"""A HEBI actuator as the simulator models it: the module's three cascaded PID loops and its motor.

Why a model of the firmware and not an ideal torque source: a controller tuned on hardware is
tuned against these loops (position kp in N·m/rad, velocity and effort loops closing on PWM), and
behaviour such as sagging under effort-only control, speed saturation or a limp arm after a
command expires only shows up if they are there. The loop topology follows HEBI's own Gazebo
plugin (``hebiros_gazebo_plugin``, ``ComputeForce``); the per-gain semantics follow HEBI's API
documentation of ``Gains`` (see ``docs/sim.md`` for the full model and where it approximates):

* strategy 0 (Off): motor off, the joint coasts (zero torque).
* strategy 1 (DirectPWM): the effort command is read as the PWM duty in [-1, 1] (hebictl's
  ``Command`` has no PWM field; HEBI's Gazebo plugin does the same).
* strategy 2: ``effort target = effort + position PID + velocity PID`` → effort PID → PWM.
* strategy 3: ``PWM = position PID + velocity PID + effort PID`` (each in PWM, each clipped to ±1).
* strategy 4: ``effort target = effort + position PID`` → effort PID → PWM, plus the velocity
  PID's PWM.

Motor, per module in output units: ``τ = τ_stall (u - ω / ω_free)``, clipped to ``±τ_max``, with
``u`` the PWM duty. ``τ_stall = τ_max = max_effort`` and ``ω_free = max_speed`` come from the
library tables, so the torque-speed line of the real module gives both the effort and the speed
saturation. Feed-forward gains are scaled by the firmware's unit conversions: effort
``1/τ_stall`` PWM per N·m, velocity ``1/ω_free`` PWM per rad/s (its ``feed_forward = 1`` cancels
the back-EMF at the commanded speed).

The effort loop closes on the measured effort, which on the module is the output torque itself.
Its own dynamics (current loop, rotor, series-elastic sensor) are much faster than the arm's, so
the loop is solved as an algebraic loop each physics step: the effort ``τ`` that satisfies
``τ = motor(PWM(effort PID(target, measured=τ)))``. That map is non-increasing in ``τ``, so the
root is unique and found by bracketing (Illinois false position); at the dead-zone jump it is
the jump point (the effort the module chatters around).

Everything runs in one numba kernel per physics step over all modules (the simulator's budget
at 1 kHz is tens of microseconds). The kernel also linearises each actuator (``∂τ/∂q``,
``∂τ/∂ω``) so MuJoCo integrates it implicitly: back-EMF, velocity-loop damping and position
stiffness acting on a light wrist link are far too stiff for an explicit 1 ms step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl import jit
from hebictl._typing import FloatArray
from hebictl.errors import ConfigError, HardwareError
from hebictl.gains import CONTROL_STRATEGIES, PID_BLOCKS, PID_FIELDS, GroupGains

__all__ = ["ActuatorGroup", "default_gain_table", "gain_table"]


# loop indices (PID_BLOCKS order) and gain-field indices (PID_FIELDS order)
POS, VEL, EFF = 0, 1, 2
(KP, KI, KD, FF, DEAD_ZONE, I_CLAMP, PUNCH, MIN_TARGET, MAX_TARGET, TARGET_LP, MIN_OUT, MAX_OUT, OUT_LP,
 D_ON_ERROR) = range(14)
# per-loop state rows: filtered target, filtered output, integrated error [error·s],
# previous derivative input, active flag (0 = the loop starts fresh on its next use)
S_TARGET, S_OUTPUT, S_INTEGRAL, S_PREV, S_ACTIVE = range(5)
N_STATE = 5
# motor rows: stall torque [N·m], free speed [rad/s], torque limit [N·m]
M_STALL, M_FREE, M_LIMIT = range(3)

#: what a gain absent from the gains file (NaN) means: a term that does nothing
NEUTRAL = {"kp": 0.0, "ki": 0.0, "kd": 0.0, "feed_forward": 0.0, "dead_zone": 0.0, "i_clamp": math.inf,
           "punch": 0.0, "min_target": -math.inf, "max_target": math.inf, "target_lowpass": 1.0,
           "min_output": -math.inf, "max_output": math.inf, "output_lowpass": 1.0, "d_on_error": 1.0}
# finite-difference steps for the actuator's slopes ∂τ/∂ω and ∂τ/∂q (the map is piecewise linear)
_SLOPE_DW = 1e-4  # [rad/s]
_SLOPE_DQ = 1e-6  # [rad]


# --------------------------------------------------------------------------------------- kernel
@jit.helper(cache=jit.CACHE, inline="always")
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@jit.helper(cache=jit.CACHE)
def _reset(st, loop, i):
    st[loop, S_ACTIVE, i] = 0.0
    st[loop, S_INTEGRAL, i] = 0.0


@jit.helper(cache=jit.CACHE)
def _pid(g, st, loop, i, target, meas, rate, use_rate, ff_scale, dt, commit):
    """One PID update of ``loop`` for module ``i``; state is written only when ``commit``.

    ``use_rate``: the derivative of the measurement is ``rate`` (the joint velocity, for the
    position loop, so MuJoCo integrates position kd implicitly) instead of a finite difference.
    """
    active = st[loop, S_ACTIVE, i] != 0.0
    r = _clip(target, g[loop, MIN_TARGET, i], g[loop, MAX_TARGET, i])
    a = g[loop, TARGET_LP, i]
    prev_r = st[loop, S_TARGET, i]
    rf = a * r + (1.0 - a) * prev_r if active else r
    e = rf - meas
    if abs(e) <= g[loop, DEAD_ZONE, i]:
        e = 0.0  # inside the dead zone: no proportional, integral or derivative input
    integ = (st[loop, S_INTEGRAL, i] if active else 0.0) + e * dt
    ki = g[loop, KI, i]
    if ki > 0.0:
        lim = g[loop, I_CLAMP, i] / ki
        integ = _clip(integ, -lim, lim)
    d_on_error = g[loop, D_ON_ERROR, i] != 0.0
    x = 0.0
    if use_rate:  # d(error)/dt = target rate - joint velocity (zero inside the dead zone)
        d = (0.0 if e == 0.0 else ((rf - prev_r) / dt if active else 0.0) - rate) if d_on_error else -rate
    else:
        x = e if d_on_error else -meas
        d = (x - st[loop, S_PREV, i]) / dt if active else 0.0
    raw = g[loop, KP, i] * e + ki * integ + g[loop, KD, i] * d + g[loop, FF, i] * ff_scale * rf
    if e > 0.0:
        raw += g[loop, PUNCH, i]
    elif e < 0.0:
        raw -= g[loop, PUNCH, i]
    raw = _clip(raw, g[loop, MIN_OUT, i], g[loop, MAX_OUT, i])
    ao = g[loop, OUT_LP, i]
    out = ao * raw + (1.0 - ao) * st[loop, S_OUTPUT, i] if active else raw
    if commit:
        st[loop, S_TARGET, i] = rf
        st[loop, S_OUTPUT, i] = out
        st[loop, S_INTEGRAL, i] = integ
        st[loop, S_PREV, i] = x
        st[loop, S_ACTIVE, i] = 1.0
    return out


@jit.helper(cache=jit.CACHE, inline="always")
def _motor(mot, i, u, w):
    return _clip(mot[M_STALL, i] * (u - w / mot[M_FREE, i]), -mot[M_LIMIT, i], mot[M_LIMIT, i])


@jit.helper(cache=jit.CACHE, inline="always")
def _pwm(g, st, mot, i, target, tau, others, dt, commit):
    ue = _pid(g, st, EFF, i, target, tau, 0.0, False, 1.0 / mot[M_STALL, i], dt, commit)
    return _clip(_clip(ue, -1.0, 1.0) + others, -1.0, 1.0)


@jit.helper(cache=jit.CACHE, inline="always")
def _residual(g, st, mot, i, target, others, w, dt, y):
    return y - _motor(mot, i, _pwm(g, st, mot, i, target, y, others, dt, False), w)


@jit.helper(cache=jit.CACHE)
def _solve_effort(g, st, mot, i, target, others, w, dt, guess, slope):
    """The effort τ with τ = motor(PWM(τ)): root of the increasing f(τ) = τ - motor(...).

    f is piecewise linear with slope >= 1, so a Newton step from ``guess`` (the last step's
    effort, or the unperturbed root) lands on the root whenever both lie on the same piece; the
    step uses ``slope`` when it is known (> 0), else a probe. Otherwise the bracket the
    evaluations built is narrowed by Illinois false position. |f| <= tol bounds the error by tol.
    Returns ``(τ, slope of f at τ)``, the slope 0 where the solve did not learn it.
    """
    lim = mot[M_LIMIT, i]
    tol = 1e-12 * lim
    y0 = _clip(guess, -lim, lim)
    f0 = _residual(g, st, mot, i, target, others, w, dt, y0)
    if abs(f0) <= tol:
        return y0, slope  # the hint stays the best estimate of the slope here
    if slope > 0.0:
        y1 = _clip(y0 - f0 / slope, -lim, lim)
        f1 = _residual(g, st, mot, i, target, others, w, dt, y1)
        if abs(f1) <= tol:
            return y1, slope
    # probe towards the root (f increases): the secant through y0 and y0 + h is a Newton step
    h = 1e-6 * lim if f0 < 0.0 else -1e-6 * lim
    y1 = y0 + h
    f1 = _residual(g, st, mot, i, target, others, w, dt, y1)
    if abs(f1) <= tol:
        return y1, 0.0
    if (f1 < 0.0) == (f0 < 0.0):
        slope = (f1 - f0) / h
        y2 = _clip(y0 - f0 / slope, -lim, lim) if slope > 0.0 else (lim if f0 < 0.0 else -lim)
        f2 = _residual(g, st, mot, i, target, others, w, dt, y2)
        if abs(f2) <= tol:
            return y2, slope
        if (f2 < 0.0) == (f0 < 0.0):  # not past the root yet: bracket with the limit beyond it
            y1, f1 = y2, f2
            y2 = lim if f0 < 0.0 else -lim
            f2 = _residual(g, st, mot, i, target, others, w, dt, y2)
            if (f2 < 0.0) == (f0 < 0.0):
                return y2, 0.0  # saturated: the root lies beyond the torque limit
        y0, f0, y1, f1 = y1, f1, y2, f2
    lo, flo, hi, fhi = (y0, f0, y1, f1) if f0 < 0.0 else (y1, f1, y0, f0)
    side = 0
    for _ in range(200):
        x = (lo * fhi - hi * flo) / (fhi - flo)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        fx = _residual(g, st, mot, i, target, others, w, dt, x)
        if abs(fx) <= tol:
            return x, 0.0
        if fx < 0.0:
            lo, flo = x, fx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, fhi = x, fx
            if side == 1:
                flo *= 0.5
            side = 1
        if hi - lo <= tol:
            break  # the root is a jump of f (the dead zone's edge): the jump point
    return 0.5 * (lo + hi), 0.0


COAST, OPEN_LOOP, EFFORT_LOOP = 0, 1, 2


@jit.helper(cache=jit.CACHE)
def _inputs(g, strategy, mot, cmd, st, i, q, w, dt, commit):
    """Run module ``i``'s position and velocity loops at ``q`` [rad], ``w`` [rad/s].

    Returns ``(mode, target, others)``: ``COAST`` (motor off), ``OPEN_LOOP`` (PWM ``others``) or
    ``EFFORT_LOOP`` (effort loop on ``target`` [N·m], plus PWM ``others``). State is written
    only when ``commit``.
    """
    s = strategy[i]
    pc, vc, ec = cmd[0, i], cmd[1, i], cmd[2, i]
    p_on, v_on, e_on = not math.isnan(pc), not math.isnan(vc), not math.isnan(ec)
    if s == 0 or s == 1 or not (p_on or v_on or e_on):
        if commit:
            _reset(st, POS, i)
            _reset(st, VEL, i)
            _reset(st, EFF, i)
        if s == 1 and e_on:
            return OPEN_LOOP, 0.0, _clip(ec, -1.0, 1.0)
        return COAST, 0.0, 0.0
    up = 0.0
    if p_on:
        up = _pid(g, st, POS, i, pc, q, w, True, 1.0, dt, commit)
    elif commit:
        _reset(st, POS, i)
    uv = 0.0
    if v_on:
        scale = mot[M_STALL, i] / mot[M_FREE, i] if s == 2 else 1.0 / mot[M_FREE, i]
        uv = _pid(g, st, VEL, i, vc, w, 0.0, False, scale, dt, commit)
    elif commit:
        _reset(st, VEL, i)
    if s == 2:
        return EFFORT_LOOP, (ec if e_on else 0.0) + up + uv, 0.0
    if s == 3:
        others = _clip(up, -1.0, 1.0) + _clip(uv, -1.0, 1.0)
        if e_on:
            return EFFORT_LOOP, ec, others
    else:  # 4
        others = _clip(uv, -1.0, 1.0)
        if e_on or p_on:
            return EFFORT_LOOP, (ec if e_on else 0.0) + up, others
    if commit:
        _reset(st, EFF, i)
    return OPEN_LOOP, 0.0, _clip(others, -1.0, 1.0)


@jit.helper(cache=jit.CACHE)
def _torque_at(g, strategy, mot, cmd, st, i, q, w, dt, tau, slope):
    """Torque at a perturbed ``q``, ``w``, solved from the unperturbed root ``tau`` (residual ``slope``)."""
    mode, target, others = _inputs(g, strategy, mot, cmd, st, i, q, w, dt, False)
    if mode == COAST:
        return 0.0
    if mode == OPEN_LOOP:
        return _motor(mot, i, others, w)
    return _solve_effort(g, st, mot, i, target, others, w, dt, tau, slope)[0]


@jit.kernel("f8[:, :, ::1], i8[::1], f8[:, ::1], f8[:, ::1], f8[:, :, ::1], f8[::1], f8[::1], i8[::1], i8[::1], f8, "
            "f8[::1], f8[:, ::1], f8[::1], f8[::1], i8[::1], f8[::1]", cold="compile",
            cache=jit.CACHE)
def actuator_step(gains, strategy, motor, cmd, state, qpos, qvel, qadr, dadr, dt, ctrl, bias, effort, slopes, act,
                  sign):
    """Advance every module's loops by one physics step ``dt`` [s] and set MuJoCo's actuators.

    Module ``i`` drives MuJoCo actuator ``act[i]`` (its joint's); ``sign[i] = -1`` for a module
    mounted mirrored (a double shoulder's second module): it measures ``-q`` and its torque acts
    as ``-τ`` on the joint. Modules on the same joint add up.
    Writes, per module ``i``, ``effort[i]`` = torque applied [N·m], and linearises the actuator
    for MuJoCo's implicit integrator: with ``τ_q = ∂τ/∂q`` and ``τ_ω = ∂τ/∂ω``,
    ``bias[i, 2] = -b`` with ``b = -(τ_ω + dt τ_q) >= 0`` and ``ctrl[i] = τ - τ_ω ω``, so the
    force at the end-of-step velocity ``ω'`` is ``τ + τ_q dt ω' + τ_ω (ω' - ω)``: the first-order
    value at the end of the step (``q' = q + dt ω'``). Both the loops' damping and their
    stiffness are then integrated implicitly, which keeps a near-massless wrist stable at 1 ms.
    ``slopes[i]`` keeps the effort loop's residual slope between steps (it rarely changes).
    """
    for a in range(ctrl.shape[0]):
        ctrl[a] = 0.0
        bias[a, 2] = 0.0
    for i in range(strategy.shape[0]):
        g = sign[i]
        q = g * qpos[qadr[i]]
        w = g * qvel[dadr[i]]
        mode, target, others = _inputs(gains, strategy, motor, cmd, state, i, q, w, dt, False)
        slope = 1.0
        if mode == COAST:
            tau = 0.0
        elif mode == OPEN_LOOP:
            tau = _motor(motor, i, others, w)
        else:
            tau, slope = _solve_effort(gains, state, motor, i, target, others, w, dt, effort[i], slopes[i])
            if slope <= 0.0:
                h = 1e-9 * motor[M_LIMIT, i]
                slope = max((_residual(gains, state, motor, i, target, others, w, dt, tau + h)
                             - _residual(gains, state, motor, i, target, others, w, dt, tau)) / h, 1.0)
            slopes[i] = slope
        tau_w = _torque_at(gains, strategy, motor, cmd, state, i, q, w + _SLOPE_DW, dt, tau, slope)
        if math.isnan(cmd[0, i]):
            tau_q = tau  # only the position loop reads q
        else:
            tau_q = _torque_at(gains, strategy, motor, cmd, state, i, q + _SLOPE_DQ, w, dt, tau, slope)
        _inputs(gains, strategy, motor, cmd, state, i, q, w, dt, True)
        if mode == EFFORT_LOOP:
            _pwm(gains, state, motor, i, target, tau, others, dt, True)
        d_w = (tau_w - tau) / _SLOPE_DW
        d_q = (tau_q - tau) / _SLOPE_DQ
        b = -(d_w + dt * d_q)
        effort[i] = tau
        a = act[i]
        if b > 0.0:  # in joint coordinates the slopes are unchanged (sign² = 1), the torque is g τ
            bias[a, 2] -= b
            ctrl[a] += g * (tau - d_w * w)
        else:  # the loops push away from rest (negative gains): integrate them explicitly
            ctrl[a] += g * tau


# --------------------------------------------------------------------------------------- gains
def gain_table(gains: GroupGains, n: int) -> tuple[FloatArray, NDArray[np.int64] | None]:
    """``(3, 14, n)`` gain array (absent gains → :data:`NEUTRAL`) and the strategies (None = keep)."""
    if not isinstance(gains, GroupGains):
        raise HardwareError(f"the sim backend needs hebictl.gains.GroupGains, got {type(gains).__name__}")
    if gains.width not in (1, n):
        raise ConfigError(f"gains are for {gains.width} modules, the sim has {n}", file=gains.path, key="width")
    g = gains.broadcast_to(n)
    table = np.empty((3, len(PID_FIELDS), n))
    for li, block in enumerate(PID_BLOCKS):
        pid = getattr(g, block)
        for fi, name in enumerate(PID_FIELDS):
            values = np.asarray(getattr(pid, name), dtype=np.float64)
            table[li, fi] = np.where(np.isnan(values), NEUTRAL[name], values)
    for li, block in enumerate(PID_BLOCKS):
        lp = table[li, [TARGET_LP, OUT_LP]]
        if np.any((lp < 0.0) | (lp > 1.0)):
            raise ConfigError(f"{block} lowpass gains must be in [0, 1], got {lp}", file=gains.path,
                              key=f"{block}/target_lowpass")
        if np.any(table[li, [KP, KI, KD, DEAD_ZONE, PUNCH]] < 0.0):
            raise ConfigError(f"{block} kp, ki, kd, dead_zone and punch must be >= 0 (the simulated firmware "
                              "assumes a non-inverting loop)", file=gains.path, key=f"{block}/kp")
    strategy = None
    if gains.control_strategy is not None:
        strategy = np.array(g.control_strategy, dtype=np.int64)
    return table, strategy


def default_gain_table(max_effort: FloatArray, max_speed: FloatArray) -> tuple[FloatArray, NDArray[np.int64]]:
    """Gains the simulated modules start with, before any ``set_gains`` (strategy 4).

    Shaped like HEBI's X-series defaults (and ``tools/make_kit_gains.py``): position kp gives the
    rated effort at 0.5 rad of error; velocity and effort loops close on PWM with unit
    feed-forward. ``Arm.from_config`` replaces them with the config's gains file.
    """
    n = max_effort.shape[0]
    table = np.empty((3, len(PID_FIELDS), n))
    for li in range(3):
        for fi, name in enumerate(PID_FIELDS):
            table[li, fi] = NEUTRAL[name]
    table[POS, KP] = 2.0 * max_effort
    table[POS, MIN_OUT], table[POS, MAX_OUT] = -max_effort, max_effort
    table[VEL, KP] = 0.03
    table[VEL, FF] = 1.0
    table[VEL, MIN_TARGET], table[VEL, MAX_TARGET] = -max_speed, max_speed
    table[VEL, MIN_OUT], table[VEL, MAX_OUT] = -1.0, 1.0
    table[VEL, OUT_LP] = 0.75
    table[EFF, KP] = 0.1
    table[EFF, KD] = 1e-4
    table[EFF, FF] = 1.0
    table[EFF, MIN_TARGET], table[EFF, MAX_TARGET] = -max_effort, max_effort
    table[EFF, MIN_OUT], table[EFF, MAX_OUT] = -1.0, 1.0
    table[EFF, OUT_LP] = 0.9
    table[EFF, D_ON_ERROR] = 0.0
    return table, np.full(n, 4, dtype=np.int64)


# --------------------------------------------------------------------------------------- group
def _joint_values(value: ArrayLike, n: int, key: str, *, positive: bool) -> FloatArray:
    try:
        arr = np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"expected a number or {n} numbers, got {value!r}", key=key) from exc
    bad = ~np.isfinite(arr) | ((arr <= 0.0) if positive else (arr < 0.0))
    if np.any(bad):
        raise ConfigError(f"{key} must be finite and {'> 0' if positive else '>= 0'} for every joint, "
                          f"got {arr}", key=key)
    return arr


@dataclass(eq=False)
class ActuatorGroup:
    """State of all simulated modules: gains, strategies, motor constants, active command, PID state.

    Mutable on purpose: the arrays are handed to the kernel every physics step and updated in place.
    """

    gains: FloatArray       # (3, 14, n)
    strategy: NDArray[np.int64]  # (n,)
    motor: FloatArray       # (3, n) stall torque, free speed, torque limit
    command: FloatArray     # (3, n) position, velocity, effort; NaN = not commanded
    state: FloatArray       # (3, N_STATE, n)
    effort: FloatArray      # (n,) torque applied in the last step [N·m]
    slope: FloatArray       # (n,) effort-loop residual slope of the last step (solver hint)

    @classmethod
    def create(cls, max_effort: ArrayLike, max_speed: ArrayLike) -> ActuatorGroup:
        """Modules with torque limit/stall torque ``max_effort`` [N·m] and free speed ``max_speed`` [rad/s]."""
        eff = np.asarray(max_effort, dtype=np.float64).reshape(-1)
        n = eff.shape[0]
        eff = _joint_values(eff, n, "max_effort", positive=True)
        spd = _joint_values(max_speed, n, "max_speed", positive=True)
        gains, strategy = default_gain_table(eff, spd)
        return cls(gains=gains, strategy=strategy, motor=np.ascontiguousarray(np.stack([eff, spd, eff])),
                   command=np.full((3, n), np.nan), state=np.zeros((3, N_STATE, n)), effort=np.zeros(n),
                   slope=np.zeros(n))

    @property
    def size(self) -> int:
        return int(self.strategy.shape[0])

    def set_gains(self, gains: GroupGains, size: int | None = None) -> None:
        """Load a gains file's values into the first ``size`` modules (default all); a file
        without ``control_strategy`` keeps each module's."""
        size = self.size if size is None else size
        table, strategy = gain_table(gains, size)
        if strategy is not None:
            unknown = sorted(set(strategy.tolist()) - set(CONTROL_STRATEGIES))
            if unknown:
                raise ConfigError(f"unknown control strategy {unknown}", file=gains.path, key="control_strategy")
            self.strategy[:size] = strategy
        self.gains[:, :, :size] = table
        self.state[:, S_ACTIVE, :size] = 0.0  # loops restart with the new gains

    def with_modules(self, joints: NDArray[np.int64]) -> ActuatorGroup:
        """This group plus one module per entry of ``joints``, each a copy of that joint's module
        (gains, strategy, motor): a double shoulder's second module is the same module type."""
        j = np.asarray(joints, dtype=np.int64)
        cat = np.concatenate
        return ActuatorGroup(gains=np.ascontiguousarray(cat([self.gains, self.gains[:, :, j]], axis=2)),
                             strategy=cat([self.strategy, self.strategy[j]]),
                             motor=np.ascontiguousarray(cat([self.motor, self.motor[:, j]], axis=1)),
                             command=cat([self.command, np.full((3, j.shape[0]), np.nan)], axis=1),
                             state=np.ascontiguousarray(cat([self.state, np.zeros((3, N_STATE, j.shape[0]))], axis=2)),
                             effort=cat([self.effort, np.zeros(j.shape[0])]),
                             slope=cat([self.slope, np.zeros(j.shape[0])]))

    def release(self) -> None:
        """Command nothing (expired or released command): every loop restarts on the next command."""
        self.command.fill(np.nan)
        self.state[:, S_ACTIVE, :] = 0.0


# the simulator imports these kernels by name: dispatchers, not wrappers (numba compiles on first
# call or SimBackend's preload, as plain numba would)
jit.materialize(__name__)
