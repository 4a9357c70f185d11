"""Backend on hebi-py's ``Group``: real modules found by ``Lookup``, or hebi's imitation group.

Both variants run the same code, so tests on ``"hebi-imitation"`` exercise exactly the
hebi-py calls the real robot uses. The hot path reuses one ``GroupFeedback`` and one
``GroupCommand`` and reads velocity, effort and orientation through the zero-copy views hebi-py
keeps on a ``GroupFeedback``, so a read+write allocates (almost) nothing.

Differences of the imitation group (hebi-py 2.16) that this backend papers over or documents:
its feedback has no timestamps (``receive_time`` is 0) and no IMU, so ``Feedback.time`` is the
read time and ``orientation`` is NaN; ``get_next_feedback`` returns at once whatever
``feedback_frequency`` is; feedback echoes the last command (NaN where it was not commanded,
position included: after a gains or effort-only command it reports no position at all), and
commands never expire; ``mstop_state`` reads 0 (``Triggered``) though there is no M-stop.
Real modules always report a position, so in imitation the backend keeps one: it seeds the
group with ``initial_position`` and, where the echo has no position, reports the last one moved
by the commanded velocity (velocity and effort NaN read 0); the M-stop reads "not pressed".
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock, MonotonicClock
from hebictl.hardware.firmware import ModuleSafety
from hebictl.hardware.group import ModuleGroup, checked_frequency, checked_lifetime, resolve_modules

with contextlib.redirect_stdout(io.StringIO()):  # hebi-py prints "matplotlib not found" on import
    import hebi

__all__ = ["HebiBackend", "open_hebi", "open_hebi_imitation"]


class HebiBackend(ModuleGroup):
    """A hebi-py ``Group`` behind the :class:`~hebictl.hardware.base.Backend` interface."""

    @property
    def measures_effort(self) -> bool:
        """Real modules measure effort through their springs; hebi's imitation group only echoes
        the command, which effort-based monitors (contact) would read as an external push."""
        return not self._imitation

    def __init__(self, group: Any, names: Sequence[str], families: Sequence[str], *, clock: Clock,
                 imitation: bool = False, feedback_frequency: float = 100.0,
                 command_lifetime: float = 0.25, gains_timeout_s: float = 0.5,
                 initial_position: Any = 0.0) -> None:
        """Wrap ``group`` (a ``hebi.Group``) whose modules are ``names``/``families`` in order.

        ``feedback_frequency`` [Hz], ``command_lifetime`` [s] (0 = commands never expire),
        ``gains_timeout_s`` [s] to wait for the modules to acknowledge gains,
        ``initial_position`` [rad or m] where an imitation group starts (ignored for real modules).
        """
        super().__init__(names, families)
        n = int(group.size)
        if n != self._n or n != len(self._families):
            raise HardwareError(f"hebi group has {n} modules but {len(self._names)} names were given")
        self._group: Any | None = group
        self._clock = clock
        self._imitation = imitation
        self._gains_timeout_s = float(gains_timeout_s)
        self._fbk = hebi.GroupFeedback(n)
        self._cmd = hebi.GroupCommand(n)
        # Zero-copy float32 views into the reused GroupFeedback (refreshed by every reuse).
        self._vel_view = self._fbk.velocity
        self._eff_view = self._fbk.effort
        self._ori_view = self._fbk.orientation
        self._ori_bad = np.empty((n, 4), dtype=bool)
        self._ori_bad_row = np.empty(n, dtype=bool)
        self._mstop_bool = np.empty(n, dtype=bool)
        self._seq = 0
        self._imit_pos = np.zeros(n)
        self._imit_t = math.nan
        self.safety: ModuleSafety | None = None
        self.feedback_frequency = feedback_frequency
        self.command_lifetime = command_lifetime
        if imitation:
            self._seed(initial_position)

    def _seed(self, initial_position: Any) -> None:
        """Give the imitation group a position, as real modules always have one."""
        try:
            q0 = np.array(np.broadcast_to(np.asarray(initial_position, dtype=np.float64), (self._n,)))
        except ValueError:
            raise ConfigError(f"initial_position needs {self._n} values, got {initial_position!r}",
                              key="initial_position") from None
        if not np.all(np.isfinite(q0)):
            raise ConfigError(f"initial_position must be finite, got {q0}", key="initial_position")
        self._imit_pos[:] = q0
        seed = hebi.GroupCommand(self._n)
        seed.position = q0
        self._live_group().send_command(seed)

    # ------------------------------------------------------------------ Backend properties
    @property
    def hebi_group(self) -> Any:
        """The underlying ``hebi.Group`` (for logging, info requests, ...)."""
        return self._live_group()

    @property
    def feedback_frequency(self) -> float:
        return float(self._live_group().feedback_frequency)

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        hz = checked_frequency(hz)
        self._live_group().feedback_frequency = hz

    @property
    def read_waits_for_feedback(self) -> bool:
        """Real modules: yes. The imitation group answers at once with the same sample."""
        return not self._imitation

    @property
    def command_lifetime(self) -> float:
        return self._live_group().command_lifetime * 1e-3  # hebi keeps milliseconds

    @command_lifetime.setter
    def command_lifetime(self, seconds: float) -> None:
        seconds = checked_lifetime(seconds)
        self._live_group().command_lifetime = round(seconds * 1e3)

    # ------------------------------------------------------------------ Backend methods
    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """``Group.get_next_feedback`` into the reused GroupFeedback, then copy into ``into``."""
        group = self._group
        if group is None:
            raise HardwareError("hebi backend is closed")
        if not 0.0 <= timeout_s < math.inf:
            raise HardwareError(f"read timeout must be finite and >= 0 s, got {timeout_s!r}")
        if into.position.shape[0] != self._n:
            raise HardwareError(f"feedback buffer is for {into.position.shape[0]} modules, "
                                f"the group has {self._n}")
        fbk = group.get_next_feedback(timeout_ms=math.ceil(timeout_s * 1e3), reuse_fbk=self._fbk)
        if fbk is None:
            return False
        rx_time = self._clock.now()
        fbk.get_position(into.position)
        np.copyto(into.velocity, self._vel_view)
        np.copyto(into.effort, self._eff_view)
        fbk.get_position_command(into.position_command)
        fbk.get_velocity_command(into.velocity_command)
        fbk.get_effort_command(into.effort_command)
        if self._imitation:
            into.time.fill(rx_time)
            into.orientation.fill(np.nan)
            self._imitate(into, rx_time)
            into.mstop.fill(0.0)
            into.position_limit_state.fill(np.nan)
        else:
            np.equal(fbk.mstop_state, 0, out=self._mstop_bool)  # 0 = Triggered
            np.copyto(into.mstop, self._mstop_bool)
            np.copyto(into.position_limit_state, fbk.position_limit_state)
            np.copyto(into.time, fbk.receive_time)
            ori = into.orientation
            np.copyto(ori, self._ori_view)
            # A module without an IMU must read all-NaN, not a partly filled quaternion.
            np.isnan(ori, out=self._ori_bad)
            np.any(self._ori_bad, axis=1, out=self._ori_bad_row)
            if self._ori_bad_row.any():
                ori[self._ori_bad_row] = np.nan
        self._seq += 1
        into.sequence = self._seq
        into.rx_time = rx_time
        return True

    def write(self, command: Command) -> bool:
        """Fill the reused GroupCommand (NaN = not commanded) and ``Group.send_command`` it."""
        group = self._group
        if group is None:
            raise HardwareError("hebi backend is closed")
        n = self._n
        if command.position.shape[0] != n or command.velocity.shape[0] != n or command.effort.shape[0] != n:
            raise CommandRejected("size_mismatch", f"command has {command.position.shape[0]} entries, "
                                  f"the group has {n} modules")
        cmd = self._cmd
        cmd.position = command.position
        cmd.velocity = command.velocity
        cmd.effort = command.effort
        return bool(group.send_command(cmd))

    def _imitate(self, into: Feedback, now: float) -> None:
        """Fill what the imitation echo leaves NaN as a module would report it (see the module doc)."""
        pos, vel = into.position, into.velocity
        # the usual case (position, velocity and effort all commanded) in two dot products: NaN in
        # any of them makes the sum NaN (so does 0 * inf, which only takes the general path)
        if math.isnan(pos @ vel + into.effort @ into.effort):
            np.copyto(vel, 0.0, where=np.isnan(vel))
            np.copyto(into.effort, 0.0, where=np.isnan(into.effort))
            dt = now - self._imit_t if math.isfinite(self._imit_t) else 0.0
            missing = np.isnan(pos)
            if missing.any():
                moved = self._imit_pos + vel * max(dt, 0.0)
                np.copyto(pos, moved, where=missing)
        np.copyto(self._imit_pos, pos)
        self._imit_t = now

    def set_safety(self, safety: ModuleSafety) -> None:
        """Send firmware position limits, their strategies and the M-stop strategy to the modules."""
        if safety.size != self._n:
            raise ConfigError(f"safety settings for {safety.size} modules, the group has {self._n}",
                              key="module_safety")
        group = self._live_group()
        cmd = hebi.GroupCommand(self._n)
        safety.apply_to(cmd)
        if not group.send_command_with_acknowledgement(cmd, timeout_ms=math.ceil(self._gains_timeout_s * 1e3)):
            raise HardwareError(f"modules {list(self._names)} did not acknowledge the safety settings within "
                                f"{self._gains_timeout_s} s")
        self.safety = safety

    def set_gains(self, gains: object) -> None:
        """Send ``gains.apply_to(group_command)`` and wait for the modules to acknowledge it."""
        group = self._live_group()
        apply_to = getattr(gains, "apply_to", None)
        if not callable(apply_to):
            raise ConfigError(f"gains must have an apply_to(hebi.GroupCommand) method, "
                              f"got {type(gains).__name__}", key="gains")
        gains_cmd = hebi.GroupCommand(self._n)
        apply_to(gains_cmd)
        if not group.send_command_with_acknowledgement(gains_cmd,
                                                       timeout_ms=math.ceil(self._gains_timeout_s * 1e3)):
            raise HardwareError(f"modules {list(self._names)} did not acknowledge the gains within "
                                f"{self._gains_timeout_s} s")

    def close(self) -> None:
        """Stop feedback and drop the group (hebi releases it when collected); idempotent."""
        group, self._group = self._group, None
        if group is not None:
            group.feedback_frequency = 0.0
            group.clear_feedback_handlers()

    def __repr__(self) -> str:
        kind = "imitation" if self._imitation else "hebi"
        state = "closed" if self._group is None else f"{self._n} modules"
        return f"HebiBackend({kind}, {list(self._names)}, {state})"

    def _live_group(self) -> Any:
        if self._group is None:
            raise HardwareError("hebi backend is closed")
        return self._group


def _entry_label(entry: Any) -> str:
    return f"{entry.family}/{entry.name}"


def open_hebi(*, names: Sequence[str] | None = None, families: str | Sequence[str] | None = None,
              dof: int | None = None, clock: Clock | None = None, lookup_timeout_s: float = 3.0,
              interfaces: Sequence[str] | None = None, feedback_frequency: float = 100.0,
              command_lifetime: float = 0.25, gains_timeout_s: float = 0.5) -> HebiBackend:
    """Factory registered as ``"hebi"``: find real modules by family and name.

    Waits up to ``lookup_timeout_s`` [s] for every module to be discovered, on the network
    ``interfaces`` (broadcast addresses such as ``"10.10.10.255"``; default all but loopback).
    Raises HardwareError naming the missing modules and everything the lookup did see.
    """
    names_t, families_t = resolve_modules(names, families, dof)
    if not (math.isfinite(lookup_timeout_s) and lookup_timeout_s >= 0.0):
        raise ConfigError(f"lookup timeout must be finite and >= 0 s, got {lookup_timeout_s!r}",
                          key="lookup_timeout_s")
    if isinstance(interfaces, str):
        interfaces = [interfaces]
    lookup = hebi.Lookup(list(interfaces) if interfaces else [])
    group = lookup.get_group_from_names(list(families_t), list(names_t),
                                        timeout_ms=math.ceil(lookup_timeout_s * 1e3))
    if group is None:
        seen = [_entry_label(e) for e in (lookup.entrylist or [])]
        wanted = [f"{f}/{n}" for f, n in zip(families_t, names_t, strict=True)]
        missing = [w for w in wanted if w not in seen]
        raise HardwareError(
            f"hebi lookup found no group for {wanted} within {lookup_timeout_s} s; missing: {missing}; "
            f"the lookup saw: {seen if seen else 'no modules'}")
    return HebiBackend(group, names_t, families_t, clock=clock if clock is not None else MonotonicClock(),
                       feedback_frequency=feedback_frequency, command_lifetime=command_lifetime,
                       gains_timeout_s=gains_timeout_s)


def open_hebi_imitation(*, names: Sequence[str] | None = None,
                        families: str | Sequence[str] | None = None, dof: int | None = None,
                        clock: Clock | None = None, feedback_frequency: float = 100.0,
                        command_lifetime: float = 0.25, initial_position: Any = 0.0) -> HebiBackend:
    """Factory registered as ``"hebi-imitation"``: ``hebi.util.create_imitation_group(n)``,
    seeded at ``initial_position`` [rad or m] (one value or one per module)."""
    names_t, families_t = resolve_modules(names, families, dof, default_family="Imitation")
    group = hebi.util.create_imitation_group(len(names_t))
    return HebiBackend(group, names_t, families_t, clock=clock if clock is not None else MonotonicClock(),
                       imitation=True, feedback_frequency=feedback_frequency,
                       command_lifetime=command_lifetime, initial_position=initial_position)
