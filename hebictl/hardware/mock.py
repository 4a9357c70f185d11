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
The mock's 1 kHz loop is benchmarked, so the per-joint arithmetic is scalar Python over lists:
for a handful of joints that is several times cheaper than one numpy call per step.

Faults (frozen, dropped or delayed feedback, NaN fields, a disconnected module, ignored commands)
are scheduled through :attr:`MockBackend.faults`; see :mod:`hebictl.hardware.faults`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock, MonotonicClock
from hebictl.hardware.faults import FaultKind, FaultSchedule
from hebictl.hardware.firmware import LimitState, LimitStrategy, ModuleSafety, MstopStrategy
from hebictl.hardware.group import FeedbackGrid, ModuleGroup, check_read, disconnected, grid_index, resolve_modules

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


class _Segment(NamedTuple):
    """One accepted command, as the closed form needs it; per-joint fields are lists of floats."""

    t0: float            # [s] write time
    expiry: float        # [s] when the command runs out (inf: never)
    r0: list[float]      # reference at t0
    v: list[float]       # reference velocity (clipped to max_speed)
    vt: list[float]      # v * tau: steady-state tracking error
    e0m: list[float]     # error when the lag phase starts, minus v * tau
    x0: list[float]      # position at t0
    s1: list[float]      # [s] end of the speed-saturated phase (0: none, inf: never ends)
    vsat: list[float]    # velocity during the saturated phase (±max_speed)
    effort: list[float]  # applied effort (NaN command -> 0)
    effort_clipped: list[float]  # the same clipped to max_effort (what feedback shows without a model)
    pc: list[float]      # command echoes (NaN = not commanded)
    vc: list[float]
    ec: list[float]


class MockBackend(ModuleGroup):
    """Simulated module group with first-order joint dynamics and injectable faults."""

    #: the effort it reports is the commanded effort (plus ``effort_model``), not what moving the
    #: arm takes: effort-based monitors (contact) would read every acceleration as an external push
    measures_effort = False

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
        x0 = _as_joint_array(initial_position, n, "initial_position")
        vmax = _rating(max_speed, model, "max_speeds", n, "max_speed")
        emax = _rating(max_effort, model, "max_efforts", n, "max_effort")
        # Per-joint constants as Python floats: for a handful of joints scalar arithmetic is several
        # times cheaper per cycle than a numpy call per step (each costs ~0.5 us on 6 elements).
        self._tau = tau.tolist()
        self._nolag = (tau == 0.0).tolist()
        self._inv_tau = np.divide(1.0, tau, out=np.zeros(n), where=tau != 0.0).tolist()
        self._vmax = vmax.tolist()
        self._emax = emax.tolist()
        self._emax_arr = emax
        # [rad] error band within which the lag is not speed-saturated: max_speed * tau
        vmax_f = np.where(np.isfinite(vmax), vmax, 0.0)
        self._vmax_f = vmax_f.tolist()
        self._band = np.where(np.isfinite(vmax), vmax_f * tau, np.inf).tolist()
        self._lim_lo = [-math.inf] * n
        self._lim_hi = [math.inf] * n
        self._has_limits = False
        self._held = [True] * n      # modules an M-stop press holds (default MotorOff, as the sim)
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
        # closed-form state at any time inside the segment (see _Segment). Segments are never
        # modified once installed, so a read may share their lists.
        now = clock.now()
        zeros, nans, x0_l = [0.0] * n, [math.nan] * n, x0.tolist()
        # (slots past _count are never looked at: they just start as the initial segment)
        self._segs = [_Segment(now, math.inf, x0_l, zeros, zeros, zeros, x0_l, zeros, zeros,
                               zeros, zeros, nans, nans, nans)] * k
        self._seg_t0 = [0.0] * k
        self._seg_t0[0] = now
        self._head = 0
        self._count = 1
        self._t_open = now
        self._history_warned = False
        self._memo: tuple[_Segment | None, float, tuple[list[float], list[float], bool, list[float] | None]] = (
            None, math.nan, ([], [], False, None))   # last _evaluate: (segment, time, result)

        self.grid = FeedbackGrid(now)  # the feedback instants, and the last delivered
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
        return self.grid.hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        self.grid.restart(hz, self._last_sample_grid_time(), delivered=self._seq > 0)

    @property
    def write_count(self) -> int:
        """Commands accepted so far (ignored and refused ones not counted)."""
        return self._writes

    @property
    def last_command(self) -> Command:
        """Copy of the last accepted command, as the modules hold it (NaN = not commanded)."""
        seg = self._segs[self._head]
        return Command(position=np.array(seg.pc, dtype=np.float64), velocity=np.array(seg.vc, dtype=np.float64),
                       effort=np.array(seg.ec, dtype=np.float64))

    # ------------------------------------------------------------------ Backend methods
    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """Wait for the next sample on the feedback grid (at most ``timeout_s`` [s]); fill ``into``."""
        check_read("mock", self._closed, into, timeout_s, self._n)
        clock = self._clock
        now = clock.now()
        deadline = now + timeout_s
        grid = self.grid
        hz = grid.hz
        if hz <= 0.0:
            clock.sleep_until(deadline)
            return False
        k = grid.next_index(now)
        t_k = grid.time(k)
        faults = self.faults
        sample_t = t_k
        if faults:
            k, t_k, sample_t = self._next_deliverable(k, t_k, hz, deadline)
        if t_k > deadline:
            clock.sleep_until(deadline)
            return False
        clock.sleep_until(t_k)
        grid.k = k
        if faults:
            disconnected(faults, t_k, self._names, self._families)
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
        pl, vl, el = pc.tolist(), vc.tolist(), ec.tolist()  # fresh lists: they are the echoes too
        self._install(now, pl, vl, el, pl, vl, el, expiry, self._held if self._mstop else None)
        self._writes += 1
        return True

    def true_state(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The joints' position and velocity now, whatever the feedback shows (for tests)."""
        pos, vel, _, _ = self._evaluate(self._segs[self._head], self._clock.now())
        return np.array(pos, dtype=np.float64), np.array(vel, dtype=np.float64)

    def open_extra_modules(self, names: Sequence[str], families: Sequence[str], *, joints: Sequence[int] = (),
                           signs: Sequence[float] = ()) -> MockBackend:
        """More mock modules on this arm's joints, e.g. a double shoulder's mirror module, as the sim offers.

        Module ``i`` starts where joint ``joints[i]`` is now, times ``signs[i]`` (-1: mounted
        mirrored), with that joint's lag and ratings, on this mock's clock and feedback rate. So
        the arm's ``initial_position`` (one value per arm joint) seeds the extra modules too,
        instead of being handed to a group of another size. Unlike the sim, the joints' physics
        are not shared: the group follows its own commands with its own first-order dynamics.
        Without ``joints`` the modules are an independent group starting at zero.
        """
        n_new = len(names)
        if not len(joints):
            return MockBackend(names, families, clock=self._clock, feedback_frequency=self.feedback_frequency,
                               command_lifetime=self.command_lifetime)
        j = np.asarray(joints, dtype=np.int64)
        sign = np.ones(n_new) if not len(signs) else np.asarray(signs, dtype=np.float64)
        if j.shape != (n_new,) or sign.shape != (n_new,) or np.any((j < 0) | (j >= self._n)) \
                or np.any(np.abs(np.abs(sign) - 1.0) > 0):
            raise ConfigError(f"extra modules need one joint in 0..{self._n - 1} and one sign ±1 per name, got "
                              f"joints {list(joints)}, signs {list(signs)}", key="joints")
        position, _ = self.true_state()
        return MockBackend(names, families, time_constant_s=np.asarray(self._tau)[j],
                           initial_position=sign * position[j], max_speed=np.asarray(self._vmax)[j],
                           max_effort=np.asarray(self._emax)[j], clock=self._clock,
                           feedback_frequency=self.feedback_frequency, command_lifetime=self.command_lifetime)

    def set_safety(self, safety: ModuleSafety) -> None:
        """Firmware limits and strategies (:mod:`hebictl.hardware.firmware`); see the module doc."""
        if safety.size != self._n:
            raise ConfigError(f"safety settings for {safety.size} modules, the mock has {self._n}",
                              key="module_safety")
        lo, hi, smin, smax, smstop = safety.arrays()
        self._lim_lo = np.where(smin != LimitStrategy.DISABLED, lo, -np.inf).tolist()
        self._lim_hi = np.where(smax != LimitStrategy.DISABLED, hi, np.inf).tolist()
        # no limit enforced anywhere (the usual mock): reads skip the per-joint limit checks
        self._has_limits = any(lo_j > -math.inf for lo_j in self._lim_lo) or any(
            hi_j < math.inf for hi_j in self._lim_hi)
        self._held = (smstop != MstopStrategy.DISABLED).tolist()
        self._memo = (None, math.nan, self._memo[2])  # the limits change the state
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
        seg = self._segs[self._head]
        # continue each module's reference as it is (velocity-only form), except the held ones
        cont = [math.nan if held else v for held, v in zip(self._held, seg.v, strict=True)]
        self._install(self._clock.now(), [math.nan] * self._n, cont, seg.effort,
                      seg.pc, seg.vc, seg.ec, seg.expiry, self._held)

    def release_mstop(self) -> None:
        """Release the M-stop; held modules follow the next command written (at most at rated speed)."""
        self._mstop = False

    def _install(self, now: float, pc: list[float], vc: list[float], ec: list[float],
                 echo_p: list[float], echo_v: list[float], echo_e: list[float],
                 expiry: float, held: list[bool] | None) -> None:
        """Start a new command segment at ``now``; ``held`` modules ignore ``pc``/``vc`` and hold.

        Scalar per joint (see __init__); the lists passed in are kept, not copied.
        """
        # State at the moment of the write, from the current segment.
        cur = self._segs[self._head]
        x_w, _, expired, _ = self._evaluate(cur, now)
        s = max(now - cur.t0, 0.0)
        isfinite, inf = math.isfinite, math.inf
        r0_l: list[float] = []
        v_l: list[float] = []
        vt_l: list[float] = []
        e0m_l: list[float] = []
        s1_l: list[float] = []
        vsat_l: list[float] = []
        for j, (p, vc_j, x, vm, vm_f, band, tau) in enumerate(
                zip(pc, vc, x_w, self._vmax, self._vmax_f, self._band, self._tau, strict=True)):
            hold = held is not None and held[j]
            has_v = not hold and isfinite(vc_j)
            if not hold and isfinite(p):
                r = p                                 # position (+ velocity feed-forward)
            elif has_v and not expired:
                r = cur.v[j] * s + cur.r0[j]          # velocity-only: keep integrating the reference
            else:
                r = x                                 # uncommanded joints hold where they are
            # the joint cannot follow a faster reference than its rated speed
            v = min(max(vc_j, -vm), vm) if has_v else 0.0
            vt = v * tau
            e0 = r - x
            # speed-saturated phase: |r - x| beyond max_speed * tau moves x at ±max_speed until the
            # error is back at the band's edge (a reference at exactly max_speed is never caught up)
            if abs(e0) > band:
                s0 = 1.0 if e0 > 0.0 else -1.0
                closing = vm - s0 * v
                s1_l.append((abs(e0) - band) / closing if closing > 0.0 else inf)
                vsat_l.append(s0 * vm_f)
                e0m_l.append(s0 * band - vt)
            else:
                s1_l.append(0.0)
                vsat_l.append(0.0)
                e0m_l.append(e0 - vt)
            r0_l.append(r)
            v_l.append(v)
            vt_l.append(vt)
        effort = [e if isfinite(e) else 0.0 for e in ec]
        clipped = [min(max(e, -em), em) for e, em in zip(effort, self._emax, strict=True)]
        j = self._head + 1
        if j == len(self._segs):
            j = 0
        self._segs[j] = _Segment(now, expiry, r0_l, v_l, vt_l, e0m_l, x_w, s1_l, vsat_l, effort, clipped,
                                 echo_p, echo_v, echo_e)
        self._seg_t0[j] = now
        self._head = j
        if self._count < len(self._segs):
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
        return (f"MockBackend(names={list(self._names)}, feedback_frequency={self.grid.hz}, "
                f"command_lifetime={self._lifetime}, t={self._clock.now():.6f})")

    # ------------------------------------------------------------------ internals
    def _last_sample_grid_time(self) -> float:
        if self._seq:
            return self._last_delivery_t
        return self._clock.now()

    def _next_deliverable(self, k: int, t_k: float, hz: float, deadline: float) -> tuple[int, float, float]:
        """Skip grid samples that dropped-feedback or latency faults keep from arriving by ``deadline``."""
        faults = self.faults
        origin = self.grid.origin
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
        size = len(t0)
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

    def _evaluate(self, seg: _Segment, t: float) -> tuple[list[float], list[float], bool, list[float] | None]:
        """Closed-form ``(position, velocity, expired, limit states)`` at ``t`` [s] in ``seg``.

        The limit states are None while no joint is at an enforced firmware limit. The last result
        is kept: a control loop writes at the very time it just read, and segments never change, so
        the write reuses the read's state instead of evaluating it again (the lists are shared and
        must not be modified).
        """
        memo = self._memo
        if memo[0] is seg and memo[1] == t:
            return memo[2]
        t0, expiry, r0_l, v_l, vt_l, e0m_l, x0_l, s1_l, vsat_l = seg[:9]
        expired = t > expiry
        s = (expiry if expired else t) - t0
        if s < 0.0:
            s = 0.0
        exp = math.exp
        pos: list[float] = []
        vel: list[float] = []
        for r0, v, vt, e0m, x0, s1, vsat, inv_tau, nolag in zip(
                r0_l, v_l, vt_l, e0m_l, x0_l, s1_l, vsat_l, self._inv_tau, self._nolag, strict=True):
            if s < s1:                      # still in the speed-saturated phase
                pos.append(x0 + vsat * s)
                vel.append(vsat)
                continue
            # lag phase: tracking error e = r - x = v tau + (e1 - v tau) exp(-(s - s1) / tau)
            err = e0m * (0.0 if nolag else exp(inv_tau * -(s - s1))) + vt
            pos.append(v * s + r0 - err)
            vel.append(v if nolag else err * inv_tau)
        if expired:
            vel = [0.0] * len(vel)
        lim = None
        if self._has_limits:                # firmware position limits: the joint stops at the limit
            for j, (x, lo, hi) in enumerate(zip(pos, self._lim_lo, self._lim_hi, strict=True)):
                below, above = x < lo, x > hi
                if below or above:
                    if lim is None:
                        lim = [float(LimitState.INSIDE)] * len(pos)
                    lim[j] = float(LimitState.ABOVE if above else LimitState.BELOW)
                    pos[j] = min(max(x, lo), hi)
                    vel[j] = 0.0
        result = (pos, vel, expired, lim)
        self._memo = (seg, t, result)
        return result

    def _fill(self, into: Feedback, sample_t: float, delivery_t: float) -> None:
        seg = self._segs[self._segment_at(sample_t)]
        pos, vel, expired, lim = self._evaluate(seg, sample_t)
        into.position[:] = pos
        into.velocity[:] = vel
        into.time.fill(sample_t)
        if expired:
            into.effort.fill(0.0)
            into.position_command.fill(np.nan)
            into.velocity_command.fill(np.nan)
            into.effort_command.fill(np.nan)
        else:
            into.effort[:] = seg.effort if self._effort_model is not None else seg.effort_clipped
            into.position_command[:] = seg.pc
            into.velocity_command[:] = seg.vc
            into.effort_command[:] = seg.ec
        if self._effort_model is not None:
            into.effort += np.asarray(self._effort_model(into.position.copy()), dtype=np.float64)
            np.clip(into.effort, -self._emax_arr, self._emax_arr, out=into.effort)
        into.mstop.fill(1.0 if self._mstop else 0.0)
        if lim is None:
            into.position_limit_state.fill(float(LimitState.INSIDE))
        else:
            into.position_limit_state[:] = lim
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
