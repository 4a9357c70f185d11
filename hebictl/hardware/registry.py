"""Backends by name: ``open_backend("mock", names=[...])`` instead of importing each backend.

A backend is a *factory* ``factory(*, names, families, dof, clock, **options) -> Backend``; it
turns ``names``/``families``/``dof`` into per-module tuples with :func:`resolve_modules` (giving its
own default family), so every backend reads them the same way. A factory declares what else it
needs from the arm being assembled by naming :class:`BackendSpec` fields as keyword parameters
(``model``, ``gains``, ``feedback_frequency``, ``command_lifetime``, ``user_data``,
``config_path``): :func:`open_backend` passes exactly those, so no caller special-cases a backend. Built-in
ones are listed as dotted paths and imported only when opened, so ``import hebictl`` never loads
hebi-py's C library or MuJoCo. Other packages add backends either by calling
:func:`register_backend` or through the ``hebictl.backends`` entry-point group (value
``"package.module:factory"``).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import ConfigError, HardwareError, InstallationError
from hebictl.hardware.base import Backend
from hebictl.hardware.clock import Clock
from hebictl.hardware.group import resolve_modules

if TYPE_CHECKING:
    from hebictl.gains import GroupGains
    from hebictl.model.robot import RobotModel

__all__ = ["BackendFactory", "BackendSpec", "available_backends", "open_backend", "register_backend",
           "resolve_modules"]


@dataclass(frozen=True)
class BackendSpec:
    """What the assembly knows about an arm that a backend may need (see :func:`open_backend`).

    ``command_lifetime`` and ``feedback_frequency`` are in s and Hz; ``gains`` is already loaded;
    ``config_path`` only serves error messages.
    """

    names: tuple[str, ...]
    families: tuple[str, ...]
    model: RobotModel | None = None
    gains: GroupGains | None = None
    feedback_frequency: float | None = None
    command_lifetime: float | None = None
    user_data: Mapping[str, Any] = field(default_factory=dict)
    config_path: Path | None = None


#: BackendSpec fields a factory receives when (and only when) its signature names them
_SPEC_FIELDS = ("model", "gains", "feedback_frequency", "command_lifetime", "user_data", "config_path")

BackendFactory = Callable[..., Backend]
ENTRY_POINT_GROUP = "hebictl.backends"

# Imported on first use; "sim" lives in the top-level sim_backend package (needs MuJoCo).
_BUILTIN: dict[str, str] = {
    "mock": "hebictl.hardware.mock:open_mock",
    "hebi": "hebictl.hardware.hebi_backend:open_hebi",
    "hebi-imitation": "hebictl.hardware.hebi_backend:open_hebi_imitation",
    "sim": "sim_backend:open_sim",
}
_registered: dict[str, BackendFactory | str] = {}
#: optional dependency of a built-in backend -> the hebictl extra that installs it
_EXTRAS = {"mujoco": "sim"}


def register_backend(name: str, factory: BackendFactory | str) -> None:
    """Make ``open_backend(name, ...)`` call ``factory`` (a callable or ``"module:attr"`` path).

    Re-registering a name replaces the previous factory, so a test or plugin can override a
    built-in backend.
    """
    if not name or not isinstance(name, str):
        raise HardwareError(f"backend name must be a non-empty string, got {name!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise HardwareError(f"backend {name!r}: factory must be callable or 'module:attr', got {factory!r}")
    _registered[name] = factory


def unregister_backend(name: str) -> None:
    """Forget what :func:`register_backend` registered under ``name`` (nothing if it registered
    nothing): a plugin or test that provides a backend for a while takes it back, and a built-in
    backend it had overridden comes back. Built-in and entry-point backends cannot be removed."""
    _registered.pop(name, None)


def _entry_point_backends() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_backends() -> tuple[str, ...]:
    """Every name :func:`open_backend` accepts (whether or not its dependencies are installed)."""
    return tuple(sorted({*_BUILTIN, *_entry_point_backends(), *_registered}))


def _load_factory(name: str) -> BackendFactory:
    spec = _registered.get(name)
    if spec is None:
        spec = _entry_point_backends().get(name) or _BUILTIN.get(name)
    if spec is None:
        raise HardwareError(f"unknown backend {name!r}; valid backends: {', '.join(available_backends())}")
    if callable(spec):
        return spec
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        extra = _EXTRAS.get(missing) if isinstance(exc, ModuleNotFoundError) else None
        if extra is not None:
            raise InstallationError(
                f"backend {name!r} needs {missing!r}, which is not installed: install the {extra!r} extra, "
                f"pip install 'hebictl[{extra}]' (in this repository: tools/dev demo installs it)") from exc
        raise HardwareError(
            f"backend {name!r} is not available: importing {module_name!r} failed ({exc})") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise HardwareError(
            f"backend {name!r} is not available: module {module_name!r} has no factory {attr!r}")
    return factory


def open_backend(name: str, spec: BackendSpec | None = None, *, names: Sequence[str] | None = None,
                 families: str | Sequence[str] | None = None, dof: int | None = None,
                 clock: Clock | None = None, **options: Any) -> Backend:
    """Open the backend registered as ``name`` for the given modules.

    With ``spec``, the modules are ``spec.names``/``spec.families`` and each other spec field the
    factory names as a keyword parameter is passed to it (``options`` win). ``options`` are the
    backend's own keyword arguments (``time_constant_s`` for ``"mock"``, ``lookup_timeout_s`` for
    ``"hebi"``, ...); one it does not take raises ConfigError naming it. ``clock`` defaults to the
    backend's choice (wall time for all built-in backends).
    """
    factory = _load_factory(name)
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins / C callables: let the call itself complain
        signature = None
    declared: dict[str, Any] = {}
    if spec is not None:
        names, families = spec.names, spec.families
        if signature is not None:
            declared = {f: getattr(spec, f) for f in _SPEC_FIELDS  # None = unknown: factory default
                        if f in signature.parameters and f not in options and getattr(spec, f) is not None}
    kwargs: dict[str, Any] = {"names": names, "families": families, "dof": dof, "clock": clock,
                              **declared, **options}
    if signature is not None:
        params = signature.parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        if not takes_any:
            unknown = sorted(k for k in options if k not in params)
            if unknown:
                allowed = sorted(k for k in params if k not in ("names", "families", "dof", "clock"))
                raise ConfigError(f"backend {name!r} does not take option(s) {', '.join(unknown)}; "
                                  f"it takes: {', '.join(allowed) or 'none'}", key=unknown[0])
    return factory(**kwargs)
