"""A mock module group for running hebictl without hardware, like ros2_control's GenericSystem.

Each joint follows its command through a first-order lag with time constant ``tau`` [s], at most
at its rated speed ``max_speed`` [rad/s] (so an infeasible command shows up on the mock too):

* a position command ``p`` (optionally with a velocity ``v``) sets the joint's reference to the
  ramp ``r(t) = p + v (t - t_write)``;
* a velocity-only command keeps integrating the current reference: ``r(t) = r(t_write) + v ...``;
* a joint with neither holds where it is.

The actual position ``x`` obeys ``dx/dt = clip((r - x) / tau, -max_speed, max_speed)`` (the
reference's own speed ``|v|`` is clipped to ``max_speed`` first: the joint cannot follow more).
Per joint that is one saturated phase at ``±max_speed`` followed by the exponential lag, which has
the closed form used here, so the state is exact at any sample time however irregularly the loop
runs (``tau = 0`` is perfect tracking: ``x = r`` once caught up). Reported effort is the commanded
effort (0 where none) plus an optional ``effort_model(position)`` such as gravity torques, clipped
to the rated ``max_effort``; effort does not move the mock. A command expires ``command_lifetime``
seconds after it was written, as on HEBI modules: the joint then holds the position reached and the
command echoes read NaN.

The modules' own safety (:mod:`hebictl.hardware.firmware`), as far as a mock that cannot fall can
show it: with :meth:`MockBackend.set_safety`, a joint whose limit strategy is not ``Disabled``
stops at that firmware limit (``position_limit_state`` reads BELOW/ABOVE while the command pushes
past it); :meth:`MockBackend.press_mstop` holds every module whose ``mstop_strategy`` is not
``Disabled`` where it is (MotorOff, the assumed default, holds too: the mock has no gravity) and
feedback ``mstop`` reads 1.0 until :meth:`MockBackend.release_mstop`; commands written meanwhile move only the
modules whose strategy is ``Disabled``.

Feedback is produced on a grid of ``feedback_frequency`` Hz of the injected clock, and ``read``
waits (with ``clock.sleep_until``) for the next grid sample like ``Group.get_next_feedback``. With
a :class:`~hebictl.hardware.clock.SimClock` everything is deterministic and runs as fast as Python.

Faults (frozen, dropped or delayed feedback, NaN fields, a disconnected module, ignored commands)
are scheduled through :attr:`MockBackend.faults`; see :mod:`hebictl.hardware.faults`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock, MonotonicClock
from hebictl.hardware.faults import FaultKind, FaultSchedule
from hebictl.hardware.firmware import LimitState, LimitStrategy, ModuleSafety, MstopStrategy
from hebictl.hardware.group import ModuleGroup, checked_frequency, grid_index, resolve_modules

__all__ = ["EffortModel", "MockBackend", "open_mock"]

EffortModel = Callable[[NDArray[np.float64]], ArrayLike]

_EPS_T = 1e-9  # [s] grid-point tolerance: a sample due within 1 ns of now counts as due now


def _as_joint_array(value: ArrayLike, n: int, key: str, *, nonnegative: bool = False,
                    positive: bool = False, allow_inf: bool = False) -> NDArray[np.float64]:
    try:
        arr = np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"expected a number or {n} numbers, got {value!r}", key=key) from exc
    finite = ~np.isnan(arr) if allow_inf else np.isfinite(arr)
    if not np.all(finite) or (nonnegative and np.any(arr < 0.0)) or (positive and np.any(arr <= 0.0)):
        what = " and > 0" if positive else (" and >= 0" if nonnegative else "")
        raise ConfigError(f"values must be {'numbers' if allow_inf else 'finite'}{what}, got {arr}", key=key)
    return arr


def _rating(given: ArrayLike | None, model: object, attr: str, n: int, key: str) -> NDArray[np.float64]:
    """A joint rating from the argument, else the model's (NaN there = unrated), else unlimited."""
    if given is None and model is not None:
        given = np.asarray(getattr(model, attr), dtype=np.float64)
        given = np.where(np.isfinite(given) & (given > 0.0), given, np.inf)
    return _as_joint_array(np.inf if given is None else given, n, key, positive=True, allow_inf=True)


class MockBackend(ModuleGroup):
    """Simulated module group with first-order joint dynamics and injectable faults."""

    def __init__(self, names: Sequence[str], families: Sequence[str], *, clock: Clock,
                 time_constant_s: ArrayLike = 0.0, initial_position: ArrayLike = 0.0,
                 orientation: ArrayLike = (1.0, 0.0, 0.0, 0.0),
                 effort_model: EffortModel | None = None, feedback_frequency: float = 100.0,
                 command_lifetime: float = 0.25, history_size: int = 1024,
                 max_speed: ArrayLike | None = None, max_effort: ArrayLike | None = None,
                 model: object = None) -> None:
        """Mock of the modules ``names``/``families`` (same length).

        ``time_constant_s`` [s] lag per joint (scalar or per joint), ``initial_position`` [rad or
        m], ``orientation`` unit quaternion w x y z (one, or one per module) reported by every
        IMU, ``effort_model(position) -> effort`` [N·m or N] added to the commanded effort,
        ``feedback_frequency`` [Hz], ``command_lifetime`` [s] (0 = never expires),
        ``history_size`` commands kept so delayed feedback can look back in time,
        ``max_speed`` [rad/s or m/s] and ``max_effort`` [N·m or N] the joints' ratings (default
        the ``model``'s ``max_speeds``/``max_efforts`` where given, else unlimited).
        """
        super().__init__(names, families)
        n = self._n
        if n < 1 or len(self._families) != n:
            raise ConfigError(f"{n} names but {len(self._families)} families", key="families")
        self._clock = clock
        self.faults = FaultSchedule(clock, self._names)
        self.gains: object | None = None

        tau = _as_joint_array(time_constant_s, n, "time_constant_s", nonnegative=True)
        self._tau = tau
        self._nolag = tau == 0.0
        self._inv_tau = np.divide(1.0, tau, out=np.zeros(n), where=~self._nolag)
        x0 = _as_joint_array(initial_position, n, "initial_position")
        self._vmax = _rating(max_speed, model, "max_speeds", n, "max_speed")
        self._emax = _rating(max_effort, model, "max_efforts", n, "max_effort")
        # [rad] error band within which the lag is not speed-saturated: max_speed * tau
        self._vmax_f = np.where(np.isfinite(self._vmax), self._vmax, 0.0)
        self._band = np.where(np.isfinite(self._vmax), self._vmax_f * tau, np.inf)
        self._lim_lo = np.full(n, -np.inf)
        self._lim_hi = np.full(n, np.inf)
        self._held = np.ones(n, dtype=bool)      # modules an M-stop press holds (default MotorOff, as the sim)
        self._mstop = False
        self.safety: ModuleSafety | None = None

        q = np.asarray(orientation, dtype=np.float64)
        if q.shape not in ((4,), (n, 4)) or not np.all(np.isfinite(q)):
            raise ConfigError(f"orientation must be one quaternion (w, x, y, z) or one per module, "
                              f"got {q!r}", key="orientation")
        if np.any(np.abs(np.linalg.norm(q, axis=-1) - 1.0) > 1e-6):
            raise ConfigError(f"orientation quaternion(s) must have unit norm, got {q!r}", key="orientation")
        self._orientation = np.array(np.broadcast_to(q, (n, 4)))

        self._effort_model = effort_model
        if effort_model is not None:
            try:
                probe = np.asarray(effort_model(x0.copy()), dtype=np.float64)
            except Exception as exc:
                raise ConfigError(f"effort_model failed at the initial position: {exc!r}",
                                  key="effort_model") from exc
            if probe.shape != (n,):
                raise ConfigError(f"effort_model must return {n} efforts, got shape {probe.shape}",
                                  key="effort_model")

        if not (isinstance(history_size, int) and history_size >= 2):
            raise ConfigError(f"history_size must be an integer >= 2, got {history_size!r}",
                              key="history_size")
        k = history_size
        # Ring of command segments, one per accepted write: everything needed to evaluate the
        # closed-form state at any time inside the segment.
        self._seg_t0 = np.zeros(k)
        self._seg_expiry = np.full(k, math.inf)
        self._seg_r0 = np.zeros((k, n))       # reference at t0
        self._seg_v = np.zeros((k, n))        # reference velocity
        self._seg_vt = np.zeros((k, n))       # v * tau: steady-state tracking error
        self._seg_e0m = np.zeros((k, n))      # error when the lag phase starts, minus v * tau
        self._seg_x0 = np.zeros((k, n))       # position at t0
        self._seg_x0[0] = x0
        self._seg_s1 = np.zeros((k, n))       # [s] end of the speed-saturated phase (0: none, inf: never ends)
        self._seg_vsat = np.zeros((k, n))     # velocity during the saturated phase (±max_speed)
        self._seg_effort = np.zeros((k, n))   # applied effort (NaN command -> 0)
        self._seg_pc = np.full((k, n), np.nan)  # command echoes
        self._seg_vc = np.full((k, n), np.nan)
        self._seg_ec = np.full((k, n), np.nan)
        self._head = 0
        self._count = 1
        now = clock.now()
        self._t_open = now
        self._seg_t0[0] = now
        self._seg_r0[0] = x0
        self._history_warned = False

        # Scratch buffers so read/write allocate nothing.
        self._decay = np.empty(n)
        self._err = np.empty(n)
        self._x_w = np.empty(n)
        self._v_w = np.empty(n)
        self._r_w = np.empty(n)
        self._has_p = np.empty(n, dtype=bool)
        self._has_v = np.empty(n, dtype=bool)
        self._u = np.empty(n)
        self._sat = np.empty(n, dtype=bool)
        self._below = np.zeros(n, dtype=bool)
        self._above = np.zeros(n, dtype=bool)

        self._fb_hz = 0.0
        self._grid_origin = now
        self._k = -1                # index of the last delivered grid sample
        self._seq = 0
        self._last_sample_t = math.nan
        self._last_delivery_t = math.nan
        self._writes = 0
        self._closed = False
        self.feedback_frequency = feedback_frequency
        self.command_lifetime = command_lifetime

    # ------------------------------------------------------------------ Backend properties
    @property
    def clock(self) -> Clock:
        """The clock this mock runs on."""
        return self._clock

    @property
    def feedback_frequency(self) -> float:
        return self._fb_hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        hz = checked_frequency(hz)
        # Restart the sample grid at the last delivered sample so no sample is repeated.
        self._grid_origin = self._last_sample_grid_time()
        self._k = 0 if self._seq else -1
        self._fb_hz = hz

    @property
    def write_count(self) -> int:
        """Commands accepted so far (ignored and refused ones not counted)."""
        return self._writes

    @property
    def last_command(self) -> Command:
        """Copy of the last accepted command, as the modules hold it (NaN = not commanded)."""
        h = self._head
        return Command(position=self._seg_pc[h].copy(), velocity=self._seg_vc[h].copy(),
                       effort=self._seg_ec[h].copy())

    # ------------------------------------------------------------------ Backend methods
    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """Wait for the next sample on the feedback grid (at most ``timeout_s`` [s]); fill ``into``."""
        if self._closed:
            raise HardwareError("mock backend is closed")
        if not 0.0 <= timeout_s < math.inf:
            raise HardwareError(f"read timeout must be finite and >= 0 s, got {timeout_s!r}")
        if into.position.shape[0] != self._n:
            raise HardwareError(f"feedback buffer is for {into.position.shape[0]} modules, "
                                f"the backend has {self._n}")
        clock = self._clock
        now = clock.now()
        deadline = now + timeout_s
        hz = self._fb_hz
        if hz <= 0.0:
            clock.sleep_until(deadline)
            return False
        origin = self._grid_origin
        k = grid_index(now, origin, hz, self._k)
        t_k = origin + k / hz
        faults = self.faults
        sample_t = t_k
        if faults:
            k, t_k, sample_t = self._next_deliverable(k, t_k, hz, deadline)
        if t_k > deadline:
            clock.sleep_until(deadline)
            return False
        clock.sleep_until(t_k)
        self._k = k
        if faults:
            lost = faults.first_active(FaultKind.DISCONNECTED, t_k)
            if lost is not None:
                name = faults.module_name(lost.module)  # type: ignore[arg-type]
                raise HardwareError(f"module {name!r} (family {self._families[lost.module]!r}) "  # type: ignore[index]
                                    f"stopped responding at t={t_k:.6f} s")
            if self._seq and faults.first_active(FaultKind.FROZEN, t_k) is not None:
                self._fill(into, self._last_sample_t, self._last_delivery_t)
                into.sequence = self._seq
                into.rx_time = clock.now()
                return True
        self._fill(into, sample_t, t_k)
        self._seq += 1
        self._last_sample_t = sample_t
        self._last_delivery_t = t_k
        into.sequence = self._seq
        into.rx_time = clock.now()
        return True

    def write(self, command: Command) -> bool:
        """Start following ``command`` now; False (and no effect) while a module is disconnected."""
        if self._closed:
            raise HardwareError("mock backend is closed")
        n = self._n
        pc, vc, ec = command.position, command.velocity, command.effort
        if pc.shape[0] != n or vc.shape[0] != n or ec.shape[0] != n:
            raise CommandRejected("size_mismatch", f"command has {pc.shape[0]}/{vc.shape[0]}/"
                                  f"{ec.shape[0]} entries, the backend has {n} modules")
        now = self._clock.now()
        faults = self.faults
        if faults:
            if faults.first_active(FaultKind.DISCONNECTED, now) is not None:
                return False
            if faults.first_active(FaultKind.COMMANDS_IGNORED, now) is not None:
                return True
        expiry = now + self._lifetime if self._lifetime > 0.0 else math.inf
        self._install(now, pc, vc, ec, pc, vc, ec, expiry, self._held if self._mstop else None)
        self._writes += 1
        return True

    def true_state(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The joints' position and velocity now, whatever the feedback shows (for tests)."""
        pos, vel = np.empty(self._n), np.empty(self._n)
        self._evaluate(self._head, self._clock.now(), pos, vel)
        return pos, vel

    def set_safety(self, safety: ModuleSafety) -> None:
        """Firmware limits and strategies (:mod:`hebictl.hardware.firmware`); see the module doc."""
        if safety.size != self._n:
            raise ConfigError(f"safety settings for {safety.size} modules, the mock has {self._n}",
                              key="module_safety")
        lo, hi, smin, smax, smstop = safety.arrays()
        self._lim_lo = np.where(smin != LimitStrategy.DISABLED, lo, -np.inf)
        self._lim_hi = np.where(smax != LimitStrategy.DISABLED, hi, np.inf)
        self._held = smstop != MstopStrategy.DISABLED
        self.safety = safety

    @property
    def mstop_pressed(self) -> bool:
        """Whether the (simulated) M-stop input is pressed."""
        return self._mstop

    def press_mstop(self) -> None:
        """Press the M-stop: modules whose ``mstop_strategy`` is not Disabled hold where they are."""
        if self._closed:
            raise HardwareError("mock backend is closed")
        if self._mstop:
            return
        self._mstop = True
        h = self._head
        # continue each module's reference as it is (velocity-only form), except the held ones
        cont = np.where(self._held, np.nan, self._seg_v[h])
        self._install(self._clock.now(), np.full(self._n, np.nan), cont, self._seg_effort[h].copy(),
                      self._seg_pc[h].copy(), self._seg_vc[h].copy(), self._seg_ec[h].copy(),
                      float(self._seg_expiry[h]), self._held)

    def release_mstop(self) -> None:
        """Release the M-stop; held modules follow the next command written (at most at rated speed)."""
        self._mstop = False

    def _install(self, now: float, pc: NDArray[np.float64], vc: NDArray[np.float64], ec: NDArray[np.float64],
                 echo_p: NDArray[np.float64], echo_v: NDArray[np.float64], echo_e: NDArray[np.float64],
                 expiry: float, held: NDArray[np.bool_] | None) -> None:
        """Start a new command segment at ``now``; ``held`` modules ignore ``pc``/``vc`` and hold."""
        # State at the moment of the write, from the current segment.
        h = self._head
        x_w, r_w = self._x_w, self._r_w
        expired = self._evaluate(h, now, x_w, self._v_w)
        if expired:
            np.copyto(r_w, x_w)
        else:
            s = max(now - self._seg_t0[h], 0.0)
            np.multiply(self._seg_v[h], s, out=r_w)
            r_w += self._seg_r0[h]
        j = h + 1 if h + 1 < self._seg_t0.shape[0] else 0
        has_p, has_v = self._has_p, self._has_v
        np.isfinite(pc, out=has_p)
        np.isfinite(vc, out=has_v)
        if held is not None:
            has_p &= ~held
            has_v &= ~held
        r0, v = self._seg_r0[j], self._seg_v[j]
        np.copyto(r0, x_w)                    # uncommanded joints hold where they are
        np.copyto(r0, r_w, where=has_v)       # velocity-only: keep integrating the reference
        np.copyto(r0, pc, where=has_p)        # position (+ velocity feed-forward)
        v.fill(0.0)
        np.copyto(v, vc, where=has_v)
        np.clip(v, -self._vmax, self._vmax, out=v)  # the joint cannot follow a faster reference
        vt, e0m = self._seg_vt[j], self._seg_e0m[j]
        np.multiply(v, self._tau, out=vt)
        # speed-saturated phase: |r - x| beyond max_speed * tau moves x at ±max_speed until the
        # error is back at the band's edge (a reference at exactly max_speed is never caught up)
        e0 = r0 - x_w
        s0 = np.sign(e0)
        band = self._band
        sat = np.abs(e0) > band
        closing = self._vmax - s0 * v
        s1 = self._seg_s1[j]
        s1.fill(0.0)
        np.divide(np.abs(e0) - band, closing, out=s1, where=sat & (closing > 0.0))
        s1[sat & (closing <= 0.0)] = math.inf
        np.copyto(self._seg_vsat[j], np.where(sat, s0 * self._vmax_f, 0.0))
        np.copyto(e0m, np.where(sat, s0 * np.where(np.isfinite(band), band, 0.0), e0))
        e0m -= vt
        np.copyto(self._seg_x0[j], x_w)
        eff = self._seg_effort[j]
        eff.fill(0.0)
        np.isfinite(ec, out=has_p)  # has_p is free again: reuse it as "effort commanded"
        np.copyto(eff, ec, where=has_p)
        np.copyto(self._seg_pc[j], echo_p)
        np.copyto(self._seg_vc[j], echo_v)
        np.copyto(self._seg_ec[j], echo_e)
        self._seg_t0[j] = now
        self._seg_expiry[j] = expiry
        self._head = j
        if self._count < self._seg_t0.shape[0]:
            self._count += 1

    def set_gains(self, gains: object) -> None:
        """Keep ``gains`` (as :attr:`gains`) so tests can check what a controller sent."""
        if self._closed:
            raise HardwareError("mock backend is closed")
        self.gains = gains

    def close(self) -> None:
        """Stop the mock; idempotent."""
        self._closed = True

    def __repr__(self) -> str:
        return (f"MockBackend(names={list(self._names)}, feedback_frequency={self._fb_hz}, "
                f"command_lifetime={self._lifetime}, t={self._clock.now():.6f})")

    # ------------------------------------------------------------------ internals
    def _last_sample_grid_time(self) -> float:
        if self._seq:
            return self._last_delivery_t
        return self._clock.now()

    def _next_deliverable(self, k: int, t_k: float, hz: float, deadline: float) -> tuple[int, float, float]:
        """Skip grid samples that dropped-feedback or latency faults keep from arriving by ``deadline``."""
        faults = self.faults
        origin = self._grid_origin
        while t_k <= deadline:
            drop = faults.first_active(FaultKind.DROPPED, t_k)
            if drop is not None:
                k = grid_index(drop.end, origin, hz, k) if math.isfinite(
                    drop.end) else k + 1 + math.ceil((deadline - t_k) * hz)
                t_k = origin + k / hz
                continue
            delay = faults.first_active(FaultKind.LATENCY, t_k)
            if delay is None:
                return k, t_k, t_k
            sample_t = t_k - delay.latency_s
            if sample_t >= self._t_open - _EPS_T:
                return k, t_k, max(sample_t, self._t_open)
            # Nothing sampled that long ago exists yet: the first delayed sample is still in flight.
            k = grid_index(self._t_open + delay.latency_s, origin, hz, k)
            t_k = origin + k / hz
        return k, t_k, t_k

    def _segment_at(self, t: float) -> int:
        """Ring index of the command segment in force at ``t`` [s].

        A command takes effect just *after* the instant it was written (within 1 ns), so a sample
        taken at a write time shows the previous command. That is the order of a control loop
        (read, then write at the same clock time), and it makes re-evaluating a past sample (for
        frozen or delayed feedback) return exactly what a read at that time returned.
        """
        h = self._head
        t0 = self._seg_t0
        t = t - _EPS_T
        if t > t0[h]:
            return h
        size = t0.shape[0]
        count = self._count
        oldest = h - count + 1
        lo, hi = 0, count - 1  # logical indices, 0 = oldest; t0[oldest] < t <= t0[head]
        if t <= t0[oldest % size]:
            if count == size and not self._history_warned:
                self._history_warned = True
                warnings.warn(f"mock feedback delayed past the {size} commands kept; raise history_size",
                              RuntimeWarning, stacklevel=3)
            return oldest % size
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if t0[(oldest + mid) % size] < t:
                lo = mid
            else:
                hi = mid - 1
        return (oldest + lo) % size

    def _evaluate(self, i: int, t: float, pos: NDArray[np.float64], vel: NDArray[np.float64]) -> bool:
        """Closed-form position and velocity at ``t`` [s] in segment ``i``; True if expired."""
        expiry = self._seg_expiry[i]
        expired = t > expiry
        s = (expiry if expired else t) - self._seg_t0[i]
        if s < 0.0:
            s = 0.0
        decay, err, u, sat = self._decay, self._err, self._u, self._sat
        s1 = self._seg_s1[i]
        np.subtract(s, s1, out=u)             # time into the lag phase
        np.maximum(u, 0.0, out=u)
        np.multiply(self._inv_tau, -u, out=decay)
        np.exp(decay, out=decay)
        np.copyto(decay, 0.0, where=self._nolag)
        # lag phase: tracking error e = r - x = v tau + (e1 - v tau) exp(-(s - s1) / tau)
        np.multiply(self._seg_e0m[i], decay, out=err)
        err += self._seg_vt[i]
        np.multiply(self._seg_v[i], s, out=pos)
        pos += self._seg_r0[i]
        pos -= err
        np.multiply(err, self._inv_tau, out=vel)
        np.copyto(vel, self._seg_v[i], where=self._nolag)
        np.less(s, s1, out=sat)               # still in the speed-saturated phase
        if sat.any():
            vsat = self._seg_vsat[i]
            np.copyto(pos, self._seg_x0[i] + vsat * s, where=sat)
            np.copyto(vel, vsat, where=sat)
        if expired:
            vel.fill(0.0)
        # firmware position limits: the joint stops at the limit
        np.less(pos, self._lim_lo, out=self._below)
        np.greater(pos, self._lim_hi, out=self._above)
        if self._below.any() or self._above.any():
            np.clip(pos, self._lim_lo, self._lim_hi, out=pos)
            vel[self._below | self._above] = 0.0
        return bool(expired)

    def _fill(self, into: Feedback, sample_t: float, delivery_t: float) -> None:
        i = self._segment_at(sample_t)
        expired = self._evaluate(i, sample_t, into.position, into.velocity)
        into.time.fill(sample_t)
        if expired:
            into.effort.fill(0.0)
            into.position_command.fill(np.nan)
            into.velocity_command.fill(np.nan)
            into.effort_command.fill(np.nan)
        else:
            np.copyto(into.effort, self._seg_effort[i])
            np.copyto(into.position_command, self._seg_pc[i])
            np.copyto(into.velocity_command, self._seg_vc[i])
            np.copyto(into.effort_command, self._seg_ec[i])
        if self._effort_model is not None:
            into.effort += np.asarray(self._effort_model(into.position.copy()), dtype=np.float64)
        np.clip(into.effort, -self._emax, self._emax, out=into.effort)
        into.mstop.fill(1.0 if self._mstop else 0.0)
        lim = into.position_limit_state
        lim.fill(float(LimitState.INSIDE))
        lim[self._below] = float(LimitState.BELOW)
        lim[self._above] = float(LimitState.ABOVE)
        np.copyto(into.orientation, self._orientation)
        faults = self.faults
        if faults:
            for fault in faults.scheduled:
                if fault.kind is FaultKind.NAN and fault.active_at(delivery_t):
                    for name in fault.fields:
                        getattr(into, name)[fault.module] = np.nan


def open_mock(*, names: Sequence[str] | None = None, families: str | Sequence[str] | None = None,
              dof: int | None = None, clock: Clock | None = None, time_constant_s: ArrayLike = 0.0,
              initial_position: ArrayLike = 0.0, orientation: ArrayLike = (1.0, 0.0, 0.0, 0.0),
              effort_model: EffortModel | None = None, feedback_frequency: float = 100.0,
              command_lifetime: float = 0.25, history_size: int = 1024, max_speed: ArrayLike | None = None,
              max_effort: ArrayLike | None = None, model: object = None) -> MockBackend:
    """Factory registered as backend ``"mock"``; family defaults to ``"Mock"``, clock to wall time.

    ``model`` (a RobotModel) supplies the joints' rated ``max_speed``/``max_effort``."""
    names_t, families_t = resolve_modules(names, families, dof, default_family="Mock")
    return MockBackend(names_t, families_t, clock=clock if clock is not None else MonotonicClock(),
                       time_constant_s=time_constant_s, initial_position=initial_position,
                       orientation=orientation, effort_model=effort_model,
                       feedback_frequency=feedback_frequency, command_lifetime=command_lifetime,
                       history_size=history_size, max_speed=max_speed, max_effort=max_effort, model=model)
