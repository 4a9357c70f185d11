"""Scheduled faults for the mock backend: how real module groups misbehave, on demand.

Each fault is a time window ``[start, start + duration)`` on the backend's clock, so a test can
say "freeze feedback from t=1.0 s for 50 ms" and get exactly that, reproducibly, with a
:class:`~hebictl.hardware.clock.SimClock`. The schedule only describes faults; the backend that
owns it decides what each one does to a read or a write.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from hebictl.errors import ConfigError
from hebictl.hardware.clock import Clock

__all__ = ["FEEDBACK_ARRAY_FIELDS", "Fault", "FaultKind", "FaultSchedule"]

#: Feedback fields a NaN fault can blank (``Feedback`` attributes holding per-module arrays).
FEEDBACK_ARRAY_FIELDS = ("time", "position", "velocity", "effort", "orientation",
                         "position_command", "velocity_command", "effort_command")


class FaultKind(StrEnum):
    """What goes wrong while a fault is active."""

    FROZEN = "frozen"                      # reads succeed but repeat the last sample and sequence
    DROPPED = "dropped"                    # samples are lost: reads time out and return False
    LATENCY = "latency"                    # samples arrive ``latency_s`` late
    NAN = "nan"                            # chosen fields of one module read NaN
    DISCONNECTED = "disconnected"          # one module stops answering: read raises HardwareError
    COMMANDS_IGNORED = "commands_ignored"  # writes "succeed" but the modules never act on them


@dataclass(frozen=True, slots=True)
class Fault:
    """One scheduled fault; ``module`` is a module index where the kind needs one."""

    kind: FaultKind
    start: float
    duration: float = math.inf
    module: int | None = None
    fields: tuple[str, ...] = ()
    latency_s: float = 0.0

    @property
    def end(self) -> float:
        """First instant [s] at which the fault is no longer active (inf = never ends)."""
        return self.start + self.duration

    def active_at(self, t: float) -> bool:
        """True while ``start <= t < end`` [s]."""
        return self.start <= t < self.start + self.duration


class FaultSchedule:
    """The faults scheduled on one backend; empty (and falsy) in normal operation."""

    __slots__ = ("_clock", "_faults", "_names")

    def __init__(self, clock: Clock, names: Sequence[str]) -> None:
        self._clock = clock
        self._names = tuple(names)
        self._faults: list[Fault] = []

    # ----------------------------------------------------------------- scheduling
    def freeze_feedback(self, *, start: float | None = None, duration: float = math.inf) -> Fault:
        """Reads keep returning the last sample (same values, ``time`` and ``sequence``)."""
        return self._add(FaultKind.FROZEN, start, duration)

    def drop_feedback(self, *, start: float | None = None, duration: float = math.inf) -> Fault:
        """Samples in the window are lost; a read waiting for one times out and returns False."""
        return self._add(FaultKind.DROPPED, start, duration)

    def delay_feedback(self, latency_s: float, *, start: float | None = None,
                       duration: float = math.inf) -> Fault:
        """Samples delivered in the window show the robot as it was ``latency_s`` [s] earlier."""
        if not (math.isfinite(latency_s) and latency_s > 0.0):
            raise ConfigError(f"latency must be finite and > 0 s, got {latency_s!r}", key="latency_s")
        return self._add(FaultKind.LATENCY, start, duration, latency_s=float(latency_s))

    def nan_feedback(self, module: str | int,
                     fields: Sequence[str] = ("position", "velocity", "effort"), *,
                     start: float | None = None, duration: float = math.inf) -> Fault:
        """The given feedback ``fields`` of ``module`` (name or index) read NaN."""
        fields_t = (fields,) if isinstance(fields, str) else tuple(fields)
        bad = [f for f in fields_t if f not in FEEDBACK_ARRAY_FIELDS]
        if bad or not fields_t:
            raise ConfigError(f"cannot blank feedback field(s) {bad or fields_t!r}; choose from "
                              f"{', '.join(FEEDBACK_ARRAY_FIELDS)}", key="fields")
        return self._add(FaultKind.NAN, start, duration, module=self._module_index(module),
                         fields=fields_t)

    def disconnect(self, module: str | int, *, start: float | None = None,
                   duration: float = math.inf) -> Fault:
        """``module`` (name or index) stops answering: reads raise HardwareError naming it."""
        return self._add(FaultKind.DISCONNECTED, start, duration, module=self._module_index(module))

    def ignore_commands(self, *, start: float | None = None, duration: float = math.inf) -> Fault:
        """Writes report success but change nothing (and do not refresh the command lifetime)."""
        return self._add(FaultKind.COMMANDS_IGNORED, start, duration)

    def clear(self, fault: Fault | FaultKind | None = None) -> None:
        """Remove one fault, every fault of a kind, or (no argument) all faults."""
        if fault is None:
            self._faults.clear()
        elif isinstance(fault, FaultKind):
            self._faults[:] = [f for f in self._faults if f.kind is not fault]
        else:
            self._faults[:] = [f for f in self._faults if f is not fault]

    # ----------------------------------------------------------------- queries
    @property
    def scheduled(self) -> tuple[Fault, ...]:
        """Every fault not yet cleared, active or not, in the order they were added."""
        return tuple(self._faults)

    def active(self, t: float | None = None) -> tuple[Fault, ...]:
        """Faults active at ``t`` [s] (default: now)."""
        t = self._clock.now() if t is None else t
        return tuple(f for f in self._faults if f.active_at(t))

    def first_active(self, kind: FaultKind, t: float) -> Fault | None:
        """The earliest-added fault of ``kind`` active at ``t`` [s], or None."""
        for f in self._faults:
            if f.kind is kind and f.start <= t < f.start + f.duration:
                return f
        return None

    def module_name(self, index: int) -> str:
        """Name of the module at ``index``, for error messages."""
        return self._names[index]

    def __len__(self) -> int:
        return len(self._faults)

    def __bool__(self) -> bool:
        return bool(self._faults)

    def __repr__(self) -> str:
        return f"FaultSchedule({self._faults!r})"

    # ----------------------------------------------------------------- helpers
    def _module_index(self, module: str | int) -> int:
        if isinstance(module, str):
            if module not in self._names:
                raise ConfigError(f"no module named {module!r}; modules: {', '.join(self._names)}",
                                  key="module")
            return self._names.index(module)
        if isinstance(module, int) and not isinstance(module, bool) and 0 <= module < len(self._names):
            return module
        raise ConfigError(f"module index {module!r} out of range 0..{len(self._names) - 1}", key="module")

    def _add(self, kind: FaultKind, start: float | None, duration: float, *, module: int | None = None,
             fields: tuple[str, ...] = (), latency_s: float = 0.0) -> Fault:
        start = self._clock.now() if start is None else float(start)
        if not math.isfinite(start):
            raise ConfigError(f"fault start must be a finite time, got {start!r}", key="start")
        if not (duration > 0.0):  # also rejects NaN
            raise ConfigError(f"fault duration must be > 0 s (inf = until cleared), got {duration!r}",
                              key="duration")
        fault = Fault(kind, start, float(duration), module=module, fields=fields, latency_s=latency_s)
        self._faults.append(fault)
        return fault
