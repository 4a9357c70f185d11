"""The hardware interface every backend (real modules, mock, simulator) implements.

Modelled on ros2_control's hardware interface: a backend owns a fixed, ordered set of modules
and exchanges one :class:`Feedback` and one :class:`Command` per control cycle. Both are
preallocated buffers refilled in place, because a 1 kHz loop that allocates a dozen arrays per
cycle spends its budget in the allocator; that is also why they are mutable dataclasses rather
than the frozen values used elsewhere in hebictl.

Conventions shared by all backends:

* arrays have shape ``(n,)`` (``(n, 4)`` for orientations), dtype float64, C-contiguous;
* units are SI: rad or m for position, rad/s or m/s for velocity, N·m or N for effort;
* NaN in a :class:`Command` field means "not commanded" for that module (as in hebi-py);
* NaN in a :class:`Feedback` field means the backend has no such value for that module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from hebictl.errors import HardwareError

__all__ = ["Backend", "Command", "Feedback"]


def _nan_array(*shape: int) -> NDArray[np.float64]:
    return np.full(shape, np.nan, dtype=np.float64)


def _check_buffer(owner: str, name: str, value: object, shape: tuple[int, ...]) -> None:
    """Reject buffers backends cannot fill in place (wrong shape, dtype or memory layout)."""
    if not isinstance(value, np.ndarray):
        raise HardwareError(f"{owner}.{name} must be a numpy array, got {type(value).__name__}")
    if value.shape != shape or value.dtype != np.float64 or not value.flags.c_contiguous:
        raise HardwareError(
            f"{owner}.{name} must be a C-contiguous float64 array of shape {shape}, "
            f"got shape {value.shape}, dtype {value.dtype}, contiguous={value.flags.c_contiguous}")


@dataclass(eq=False, slots=True)
class Feedback:
    """One sample of every module's state, refilled in place by :meth:`Backend.read`.

    ``time`` is each module's sample timestamp in the backend's own clock [s]; ``rx_time`` is the
    time [s] of the clock injected into the backend when ``read`` returned. Their difference is the
    feedback's age (latency). ``sequence`` increments once per *new* sample, so a consumer that
    sees it unchanged across reads knows the feedback is frozen even though reads succeed.

    The modules' own safety state, as HEBI modules report it: ``mstop`` is 1.0 where the module's
    M-stop input is pressed, 0.0 where it is not (NaN: the backend cannot tell); hebi-py's
    ``mstop_state`` reads 0 (``Triggered``) for a pressed M-stop, so ``mstop = (mstop_state == 0)``.
    ``position_limit_state`` holds hebi's raw ``position_limit_state`` values
    (:class:`hebictl.hardware.firmware.LimitState`: 0 below the firmware's lower limit, 2 inside,
    4 above, 5 not yet armed; NaN unknown).
    """

    time: NDArray[np.float64]
    position: NDArray[np.float64]
    velocity: NDArray[np.float64]
    effort: NDArray[np.float64]
    orientation: NDArray[np.float64]
    position_command: NDArray[np.float64]
    velocity_command: NDArray[np.float64]
    effort_command: NDArray[np.float64]
    # None -> filled with NaN in __post_init__ (backends that report no M-stop or limit state)
    mstop: NDArray[np.float64] = field(default=None)  # type: ignore[arg-type]  # None only until __post_init__ fills it
    position_limit_state: NDArray[np.float64] = field(default=None)  # type: ignore[arg-type]  # None only until __post_init__ fills it
    sequence: int = 0
    rx_time: float = float("nan")

    def __post_init__(self) -> None:
        n = self.position.shape[0] if isinstance(self.position, np.ndarray) and self.position.ndim else -1
        if self.mstop is None:
            self.mstop = _nan_array(max(n, 0))
        if self.position_limit_state is None:
            self.position_limit_state = _nan_array(max(n, 0))
        for f in fields(self):
            if f.name in ("sequence", "rx_time"):
                continue
            shape = (n, 4) if f.name == "orientation" else (n,)
            _check_buffer("Feedback", f.name, getattr(self, f.name), shape)

    @classmethod
    def empty(cls, n: int) -> Feedback:
        """All-NaN feedback for ``n`` modules, ``sequence`` 0: a buffer to pass to ``read``."""
        if n < 1:
            raise HardwareError(f"Feedback needs at least one module, got n={n}")
        return cls(time=_nan_array(n), position=_nan_array(n), velocity=_nan_array(n),
                   effort=_nan_array(n), orientation=_nan_array(n, 4),
                   position_command=_nan_array(n), velocity_command=_nan_array(n),
                   effort_command=_nan_array(n))

    @property
    def size(self) -> int:
        """Number of modules."""
        return int(self.position.shape[0])

    @property
    def m_stopped(self) -> bool:
        """True when any module reports its M-stop pressed (``hebi.arm.Arm.m_stopped``)."""
        return bool(np.any(self.mstop == 1.0))

    def copy(self) -> Feedback:
        """Deep copy, for keeping a sample beyond the next ``read`` into this buffer."""
        return Feedback(time=self.time.copy(), position=self.position.copy(),
                        velocity=self.velocity.copy(), effort=self.effort.copy(),
                        orientation=self.orientation.copy(),
                        position_command=self.position_command.copy(),
                        velocity_command=self.velocity_command.copy(),
                        effort_command=self.effort_command.copy(), mstop=self.mstop.copy(),
                        position_limit_state=self.position_limit_state.copy(),
                        sequence=self.sequence, rx_time=self.rx_time)

    def copy_into(self, other: Feedback) -> None:
        """Copy every field into ``other`` without allocating."""
        np.copyto(other.time, self.time)
        np.copyto(other.position, self.position)
        np.copyto(other.velocity, self.velocity)
        np.copyto(other.effort, self.effort)
        np.copyto(other.orientation, self.orientation)
        np.copyto(other.position_command, self.position_command)
        np.copyto(other.velocity_command, self.velocity_command)
        np.copyto(other.effort_command, self.effort_command)
        np.copyto(other.mstop, self.mstop)
        np.copyto(other.position_limit_state, self.position_limit_state)
        other.sequence = self.sequence
        other.rx_time = self.rx_time


@dataclass(eq=False, slots=True)
class Command:
    """Setpoints for every module; NaN in a field means that module is not commanded there.

    ``position`` [rad or m], ``velocity`` [rad/s or m/s], ``effort`` [N·m or N]. Reuse one
    instance per loop and overwrite its arrays in place (``cmd.position[:] = q``).
    """

    position: NDArray[np.float64]
    # None -> NaN (not commanded) in __post_init__
    velocity: NDArray[np.float64] = field(default=None)  # type: ignore[arg-type]  # None only until __post_init__ fills it
    effort: NDArray[np.float64] = field(default=None)  # type: ignore[arg-type]  # None only until __post_init__ fills it

    def __post_init__(self) -> None:
        n = self.position.shape[0] if isinstance(self.position, np.ndarray) and self.position.ndim else -1
        if self.velocity is None:
            self.velocity = _nan_array(max(n, 0))
        if self.effort is None:
            self.effort = _nan_array(max(n, 0))
        for name in ("position", "velocity", "effort"):
            _check_buffer("Command", name, getattr(self, name), (n,))

    @classmethod
    def empty(cls, n: int) -> Command:
        """A command for ``n`` modules that commands nothing (all NaN)."""
        if n < 1:
            raise HardwareError(f"Command needs at least one module, got n={n}")
        return cls(position=_nan_array(n), velocity=_nan_array(n), effort=_nan_array(n))

    @property
    def size(self) -> int:
        """Number of modules."""
        return int(self.position.shape[0])

    def clear(self) -> None:
        """Command nothing (set every field to NaN), in place."""
        self.position.fill(np.nan)
        self.velocity.fill(np.nan)
        self.effort.fill(np.nan)


@runtime_checkable
class Backend(Protocol):
    """A fixed, ordered group of modules that can be read and commanded.

    Concrete backends may subclass this protocol explicitly to inherit the context-manager
    methods (``with open_backend(...) as b:`` closes ``b`` on exit).
    """

    @property
    def names(self) -> tuple[str, ...]:
        """Module names, in group order."""
        ...

    @property
    def families(self) -> tuple[str, ...]:
        """Module families, one per module, in group order."""
        ...

    @property
    def size(self) -> int:
        """Number of modules ``n``."""
        ...

    @property
    def feedback_frequency(self) -> float:
        """Rate at which the backend produces feedback [Hz]; 0 stops feedback."""
        ...

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None: ...

    @property
    def command_lifetime(self) -> float:
        """How long a command stays in force without a newer one [s]; 0 = forever."""
        ...

    @command_lifetime.setter
    def command_lifetime(self, seconds: float) -> None: ...

    @property
    def read_waits_for_feedback(self) -> bool:
        """Whether ``read`` blocks until the next sample at ``feedback_frequency``, so that a loop may
        be paced by its reads (as ``hebi.arm`` runs). hebi-py's imitation group answers at once
        with the same sample: a loop paced by it would spin."""
        ...

    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        """Wait up to ``timeout_s`` [s] for the next feedback sample and copy it into ``into``.

        Returns False, leaving ``into`` untouched, when no fresh sample arrived in time.
        """
        ...

    def write(self, command: Command) -> bool:
        """Send ``command`` (NaN = not commanded); False when it could not be sent.

        Feedback shows the command from the next sample on, not in a sample taken at the very
        instant of the write.
        """
        ...

    def set_gains(self, gains: object) -> None:
        """Send control gains (a ``hebictl.gains.GroupGains`` or anything with ``apply_to``)."""
        ...

    def close(self) -> None:
        """Release the modules; idempotent. ``read``/``write`` afterwards raise HardwareError."""
        ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
