"""What every concrete backend shares: a fixed, named group of modules and checked rate settings.

``resolve_modules`` lives here, not in the registry, because the registry names the backends'
modules (for importlib) and the backends must not import it back.

Backends subclass :class:`ModuleGroup` and keep only what differs (how feedback arrives, how
commands leave); the names/families/size bookkeeping and the validation of
``feedback_frequency`` and ``command_lifetime`` live here once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hebictl.errors import ConfigError, HardwareError
from hebictl.hardware.base import Backend, Feedback
from hebictl.hardware.faults import FaultKind, FaultSchedule


def checked_frequency(hz: float) -> float:
    """A feedback frequency [Hz]: finite and >= 0 (0 stops feedback)."""
    hz = float(hz)
    if not (math.isfinite(hz) and hz >= 0.0):
        raise ConfigError(f"feedback frequency must be finite and >= 0 Hz, got {hz!r}", key="feedback_frequency")
    return hz


def checked_lifetime(seconds: float) -> float:
    """A command lifetime [s]: finite and >= 0 (0 = commands never expire)."""
    seconds = float(seconds)
    if not (math.isfinite(seconds) and seconds >= 0.0):
        raise ConfigError(f"command lifetime must be finite and >= 0 s, got {seconds!r}", key="command_lifetime")
    return seconds


class ModuleGroup(Backend):
    """Base of the concrete backends: the modules' names and families, in group order."""

    def __init__(self, names: Sequence[str], families: Sequence[str]) -> None:
        self._names = tuple(names)
        self._families = tuple(families)
        self._n = len(self._names)
        self._lifetime = 0.0

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def families(self) -> tuple[str, ...]:
        return self._families

    @property
    def size(self) -> int:
        return self._n

    @property
    def read_waits_for_feedback(self) -> bool:
        """Real modules and the simulated groups deliver feedback on its grid: reads wait for it."""
        return True

    @property
    def command_lifetime(self) -> float:
        """How long a command stays in force [s]; 0 = forever. Simulated groups keep it here."""
        return self._lifetime

    @command_lifetime.setter
    def command_lifetime(self, seconds: float) -> None:
        self._lifetime = checked_lifetime(seconds)


#: [s] a sample due within 1 ns of now counts as due now (grid times are sums of floats)
GRID_EPS = 1e-9


def grid_index(t: float, origin: float, hz: float, after: int) -> int:
    """Index ``k > after`` of the first feedback instant ``origin + k/hz`` at or after ``t`` [s].

    Simulated backends deliver feedback on this grid so that a reader polling at any rate sees
    samples at exactly the configured frequency, never the same sample twice.
    """
    return max(after + 1, math.ceil((t - origin) * hz - GRID_EPS * hz))


class FeedbackGrid:
    """The instants ``origin + k/hz`` at which a simulated group delivers feedback (the mock's and the
    sim's), and ``k``, the index of the last one delivered (-1: none yet)."""

    __slots__ = ("hz", "k", "origin")

    def __init__(self, origin: float) -> None:
        self.hz = 0.0
        self.origin = origin
        self.k = -1

    def restart(self, hz: float, at: float, delivered: bool) -> None:
        """A new frequency [Hz] on a grid starting ``at`` [s], the last delivered sample's time when
        ``delivered`` (so no sample is repeated), else now."""
        hz = checked_frequency(hz)
        self.origin = at
        self.k = 0 if delivered else -1
        self.hz = hz

    def next_index(self, now: float) -> int:
        """The first instant at or after ``now`` that has not been delivered (:func:`grid_index`)."""
        return grid_index(now, self.origin, self.hz, self.k)

    def time(self, k: int) -> float:
        return self.origin + k / self.hz


def check_read(backend: str, closed: bool, into: Feedback, timeout_s: float, size: int) -> None:
    """What every simulated group's ``read`` refuses: a closed backend, a timeout that is not finite
    and >= 0, a feedback buffer for another number of modules."""
    if closed:
        raise HardwareError(f"{backend} backend is closed")
    if not 0.0 <= timeout_s < math.inf:
        raise HardwareError(f"read timeout must be finite and >= 0 s, got {timeout_s!r}")
    if into.position.shape[0] != size:
        raise HardwareError(f"feedback buffer is for {into.position.shape[0]} modules, the backend has {size}")


def disconnected(faults: FaultSchedule, t: float, names: Sequence[str], families: Sequence[str]) -> None:
    """Raise the HardwareError of a module that a scheduled fault disconnected at ``t`` [s]."""
    lost = faults.first_active(FaultKind.DISCONNECTED, t)
    if lost is not None:
        module = lost.module
        assert module is not None, "FaultSchedule.disconnect always names the module"
        raise HardwareError(f"module {names[module]!r} (family {families[module]!r}) stopped responding at "
                            f"t={t:.6f} s")


def resolve_modules(names: Sequence[str] | None, families: str | Sequence[str] | None,
                    dof: int | None, *, default_family: str | None = None
                    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Module names and one family per module, from whatever subset the caller gave.

    Without ``names``, ``dof`` modules are named ``J1..Jn``. A single family (a string or a
    one-element list) applies to every module, as in hebi-py's ``get_group_from_names``.
    """
    if names is None:
        if dof is None:
            raise ConfigError("give module names or the number of modules (dof)", key="names")
        if not (isinstance(dof, int) and dof >= 1):
            raise ConfigError(f"dof must be a positive integer, got {dof!r}", key="dof")
        names = [f"J{i + 1}" for i in range(dof)]
    if isinstance(names, str):
        raise ConfigError(f"names must be a list of module names, got the string {names!r}", key="names")
    names_t = tuple(str(n) for n in names)
    if not names_t:
        raise ConfigError("names is empty", key="names")
    if dof is not None and dof != len(names_t):
        raise ConfigError(f"dof={dof} but {len(names_t)} module names were given", key="dof")
    if families is None:
        if default_family is None:
            raise ConfigError("give the module families", key="families")
        families = default_family
    fam_t = (families,) if isinstance(families, str) else tuple(str(f) for f in families)
    if len(fam_t) == 1:
        fam_t = fam_t * len(names_t)
    if len(fam_t) != len(names_t):
        raise ConfigError(f"{len(fam_t)} families for {len(names_t)} modules "
                          "(give one family, or one per module)", key="families")
    return names_t, fam_t
