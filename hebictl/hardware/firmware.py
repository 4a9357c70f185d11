"""The modules' own safety settings (firmware position limits, M-stop strategy) as HEBI exposes them.

Why a model of them here: when the PC is gone (process killed, cable cut) what keeps a brakeless
arm inside its range is what the modules do by themselves. hebi-py sends these settings in a
``GroupCommand`` (``position_limit_min/max``, ``min/max_position_limit_strategy``,
``mstop_strategy``) and reports ``mstop_state`` and ``position_limit_state`` in feedback; the mock
and the sim model the same behaviours so each can be tested without hardware, and the hebi
backend sends them. The enum values are hebi-py's raw values (its string names map to them).

What each strategy does, per hebi-py's documentation of the fields and HEBI's feedback states
("the motor output is set to return the module to within the limits"):

* position limit ``HoldPosition``: beyond a limit the module holds the limit position;
* ``DampedSpring``: beyond a limit a spring-damper pushes the module back inside;
* ``MotorOff``: beyond a limit the motor is switched off (a loaded joint falls);
* ``Disabled``: the limit is not enforced.

Limits are armed only once the module has been inside them since they were set (hebi's
``Uninitialized`` state). M-stop ``MotorOff`` switches the motor off while the M-stop is pressed,
``HoldPosition`` holds the position where it was pressed, ``Disabled`` ignores the input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.errors import ConfigError

__all__ = ["LimitState", "LimitStrategy", "ModuleSafety", "MstopStrategy", "safety_from_user_data"]


class LimitStrategy(IntEnum):
    """``min/max_position_limit_strategy`` (hebi-py raw values)."""

    HOLD_POSITION = 0
    DAMPED_SPRING = 1
    MOTOR_OFF = 2
    DISABLED = 3


class MstopStrategy(IntEnum):
    """``mstop_strategy`` (hebi-py raw values)."""

    DISABLED = 0
    MOTOR_OFF = 1
    HOLD_POSITION = 2


class LimitState(IntEnum):
    """``position_limit_state`` in feedback (hebi-py raw values)."""

    BELOW = 0
    AT_LOWER = 1
    INSIDE = 2
    AT_UPPER = 3
    ABOVE = 4
    UNINITIALIZED = 5


_HEBI_NAMES = {LimitStrategy.HOLD_POSITION: "HoldPosition", LimitStrategy.DAMPED_SPRING: "DampedSpring",
               LimitStrategy.MOTOR_OFF: "MotorOff", LimitStrategy.DISABLED: "Disabled"}
_MSTOP_NAMES = {MstopStrategy.DISABLED: "Disabled", MstopStrategy.MOTOR_OFF: "MotorOff",
                MstopStrategy.HOLD_POSITION: "HoldPosition"}


_Strategy = TypeVar("_Strategy", bound=IntEnum)  # LimitStrategy or MstopStrategy


def _strategy(value: Any, enum: type[_Strategy], names: Mapping[_Strategy, str], key: str) -> _Strategy:
    if isinstance(value, str):
        for member, name in names.items():
            if value == name or value.upper() == member.name:
                return member
        raise ConfigError(f"unknown strategy {value!r}; valid: {', '.join(names.values())}", key=key)
    try:
        return enum(int(value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"unknown strategy {value!r}; valid: {', '.join(names.values())}", key=key) from exc


def _per_module(value: Any, n: int, enum: type[_Strategy], names: Mapping[_Strategy, str],
                key: str) -> tuple[_Strategy, ...]:
    items = [value] * n if isinstance(value, str | int) else list(value)
    if len(items) == 1:
        items = items * n
    if len(items) != n:
        raise ConfigError(f"needs one strategy or {n}, got {len(items)}", key=key)
    return tuple(_strategy(v, enum, names, key) for v in items)


@dataclass(frozen=True)
class ModuleSafety:
    """Firmware safety settings for ``n`` modules: position limits [rad or m] and strategies."""

    position_min: tuple[float, ...]
    position_max: tuple[float, ...]
    min_strategy: tuple[LimitStrategy, ...]
    max_strategy: tuple[LimitStrategy, ...]
    mstop_strategy: tuple[MstopStrategy, ...]

    @classmethod
    def create(cls, position_min: ArrayLike, position_max: ArrayLike, *,
               min_strategy: Any = LimitStrategy.HOLD_POSITION, max_strategy: Any = LimitStrategy.HOLD_POSITION,
               mstop_strategy: Any = MstopStrategy.HOLD_POSITION) -> ModuleSafety:
        """Settings from per-module limits (-inf/inf = none) and strategies (names or raw values)."""
        lo = np.atleast_1d(np.asarray(position_min, dtype=np.float64))
        hi = np.atleast_1d(np.asarray(position_max, dtype=np.float64))
        if lo.shape != hi.shape or lo.ndim != 1:
            raise ConfigError(f"position_min and position_max need the same length, got {lo.shape} and {hi.shape}",
                              key="position_min")
        if np.any(np.isnan(lo) | np.isnan(hi)) or np.any(lo > hi):
            raise ConfigError(f"position limits must be ordered numbers, got {lo} .. {hi}", key="position_min")
        n = lo.shape[0]
        return cls(tuple(lo.tolist()), tuple(hi.tolist()),
                   _per_module(min_strategy, n, LimitStrategy, _HEBI_NAMES, "min_strategy"),
                   _per_module(max_strategy, n, LimitStrategy, _HEBI_NAMES, "max_strategy"),
                   _per_module(mstop_strategy, n, MstopStrategy, _MSTOP_NAMES, "mstop_strategy"))

    @property
    def size(self) -> int:
        return len(self.position_min)

    def arrays(self) -> tuple[FloatArray, FloatArray, np.ndarray, np.ndarray, np.ndarray]:
        """``(min, max, min_strategy, max_strategy, mstop_strategy)`` as arrays (int64 strategies)."""
        return (np.array(self.position_min), np.array(self.position_max),
                np.array([int(s) for s in self.min_strategy], dtype=np.int64),
                np.array([int(s) for s in self.max_strategy], dtype=np.int64),
                np.array([int(s) for s in self.mstop_strategy], dtype=np.int64))

    def apply_to(self, command: Any) -> None:
        """Fill a ``hebi.GroupCommand`` with these settings (infinite limits are left unset)."""
        lo = [v if math.isfinite(v) else math.nan for v in self.position_min]
        hi = [v if math.isfinite(v) else math.nan for v in self.position_max]
        command.position_limit_min = lo
        command.position_limit_max = hi
        command.min_position_limit_strategy = [int(s) for s in self.min_strategy]
        command.max_position_limit_strategy = [int(s) for s in self.max_strategy]
        command.mstop_strategy = [int(s) for s in self.mstop_strategy]

    def describe(self, names: Sequence[str] | None = None) -> str:
        """One line per module: what :meth:`apply_to` sends (the dry-run output)."""
        names = list(names) if names is not None else [f"module {i}" for i in range(self.size)]
        width = max(len(n) for n in names)
        lines = []
        for i, name in enumerate(names):
            lines.append(f"{name:<{width}}  position_limit_min={self.position_min[i]:+.4f} "
                         f"({_HEBI_NAMES[self.min_strategy[i]]})  position_limit_max={self.position_max[i]:+.4f} "
                         f"({_HEBI_NAMES[self.max_strategy[i]]})  "
                         f"mstop_strategy={_MSTOP_NAMES[self.mstop_strategy[i]]}")
        return "\n".join(lines)


#: key under a config's ``user_data`` that sets the modules' firmware safety (off unless ``send: true``)
USER_DATA_KEY = "module_safety"
_KEYS = ("send", "min_strategy", "max_strategy", "mstop_strategy", "margin")


def safety_from_user_data(user_data: Mapping[str, Any], position_min: ArrayLike, position_max: ArrayLike
                          ) -> tuple[bool, ModuleSafety] | None:
    """``(send, settings)`` from ``user_data.module_safety`` and the arm's joint limits, or None.

    ``module_safety: {send: false, min_strategy: HoldPosition, max_strategy: HoldPosition,
    mstop_strategy: HoldPosition, margin: 0.05}``: the firmware limits are the arm's joint limits
    widened by ``margin`` [rad] (so the controller's own limit check acts first). ``send`` is off
    by default: the settings are then only printed (dry run).
    """
    cfg = user_data.get(USER_DATA_KEY)
    if cfg is None:
        return None
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"must be a mapping with keys {', '.join(_KEYS)}, got {cfg!r}",
                          key=f"user_data.{USER_DATA_KEY}")
    unknown = sorted(str(k) for k in cfg if k not in _KEYS)
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(unknown)}; valid: {', '.join(_KEYS)}",
                          key=f"user_data.{USER_DATA_KEY}.{unknown[0]}")
    margin = float(cfg.get("margin", 0.05))
    if not (math.isfinite(margin) and margin >= 0.0):
        raise ConfigError(f"margin must be finite and >= 0 rad, got {margin!r}",
                          key=f"user_data.{USER_DATA_KEY}.margin")
    lo = np.asarray(position_min, dtype=np.float64) - margin
    hi = np.asarray(position_max, dtype=np.float64) + margin
    settings = ModuleSafety.create(lo, hi, min_strategy=cfg.get("min_strategy", "HoldPosition"),
                                   max_strategy=cfg.get("max_strategy", "HoldPosition"),
                                   mstop_strategy=cfg.get("mstop_strategy", "HoldPosition"))
    return bool(cfg.get("send", False)), settings
