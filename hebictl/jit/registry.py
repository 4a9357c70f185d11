"""The kernel registry: what each kernel module declares, and how a kernel becomes compiled code.

Why a registry: a kernel module (``hebictl.model.kernels``, ``hebictl.control.cycle_kernels``,
``sim_backend.actuator`` ...) declares each entry kernel with its numba signatures. From those the
machinery compiles, loads and warms every kernel without knowing any caller: the background
compile (:mod:`hebictl.jit.compile`) and :func:`preload` call ``dispatcher.compile(signature)``,
so no hand-written dummy arrays have to track the kernels' arguments. A package registers its
kernels by decorating them; this package imports none of them.

Declaring kernels (in the kernel module)::

    from hebictl import jit

    @jit.helper(inline="always")          # called by kernels only: compiled with them
    def _minimum(a, b): ...

    @jit.kernel("f8[::1], f8[::1], f8")   # an entry kernel: what Python code calls
    def first_outside(position, lo, tolerance): ...

Signatures are numba type strings (``f8[::1]`` a C-contiguous float64 vector, ``b1`` a bool,
``i8`` an int); they must be the types callers pass (``tests/jit`` checks that the Arm's cycle
compiles nothing else). An entry kernel must not call another entry kernel inside compiled code
(call a helper both share).

Life of a module's kernels (:class:`KernelModule`): every kernel stays plain Python until the first
call of an entry kernel or :func:`preload`, which imports numba and makes every kernel of the
module a numba dispatcher at once (:func:`materialize`; they call each other, so all or none).
Entry kernels are :class:`Kernel` objects on the module until the compiled dispatcher takes
their place (:meth:`Kernel.swap_in`), so no wrapper stays on the hot path; what happens before
that (interpreted while the cache is cold, or compiled at once) is :mod:`hebictl.jit.cache`'s.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hebictl.jit.borrow import install as install_borrowed

#: cold-cache policies of an entry kernel: run its Python source until the background compile is
#: done ("interpret"; the model and control kernels: one call per cycle, ~1 ms interpreted), or
#: compile in the caller as numba does ("compile"; the simulator's per-step kernels, which would
#: slow the simulated time interpreted)
COLD_POLICIES = ("interpret", "compile")


class LazyJit:
    """A kernel before numba is imported: the Python function and its ``numba.njit`` options."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = func
        self.options = options
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any) -> Any:
        """A direct call of a helper from Python: compile the module, then call the dispatcher."""
        module = module_of(self.py_func.__module__)
        module.materialize()
        return getattr(module.module, self.__name__)(*args)


@dataclass
class Kernel:
    """An entry kernel: its signatures, cold-cache policy and (once numba is imported) dispatcher.

    Until :meth:`swap_in` it is also the object on the module, and calls go through
    :func:`hebictl.jit.cache.call_cold`.
    """

    lazy: LazyJit
    signatures: tuple[str, ...]
    cold: str = "interpret"
    #: index of the argument whose first axis is a batch (large batches compile at once), or None
    batch: int | None = None
    dispatcher: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.name = self.lazy.__name__
        self.py_func = self.lazy.py_func
        self.__doc__ = self.lazy.__doc__
        self.module_name = self.py_func.__module__

    @property
    def key(self) -> str:
        return f"{self.module_name}.{self.name}"

    def swap_in(self) -> None:
        """Put the compiled dispatcher on the module in this wrapper's place (no-op if already there),
        and the compiled entry point in the module's :func:`direct` namespace."""
        if self.dispatcher is None:
            return
        module = sys.modules[self.module_name]
        if getattr(module, self.name, None) is self:
            setattr(module, self.name, self.dispatcher)
        namespace = module_of(self.module_name).direct
        if getattr(namespace, self.name, None) is self:
            setattr(namespace, self.name, self._direct_call())

    def _direct_call(self) -> Callable[..., Any]:
        """The compiled entry point of the one declared signature, once numba has it (loaded or
        compiled); until then a call that loads or compiles that signature, puts its entry point in
        the namespace and calls it. Not numba's dispatcher: for arguments of the declared dtypes and
        dimensions but other strides (which a kernel may check itself) it would compile another
        signature in the caller, seconds on a control thread."""
        if len(self.signatures) != 1:
            return self.dispatcher
        try:
            return self.dispatcher.get_overload(self.signatures[0])
        except KeyError:
            pass

        def first_call(*args: Any) -> Any:
            self.compile_signatures()
            entry = self.dispatcher.get_overload(self.signatures[0])
            setattr(module_of(self.module_name).direct, self.name, entry)
            return entry(*args)

        return first_call

    def compile_signatures(self) -> None:
        """Compile (or load from numba's cache) every declared signature."""
        with self._lock:
            for sig in self.signatures:
                self.dispatcher.compile(sig)

    def __call__(self, *args: Any) -> Any:
        return _COLD_CALL[0](self, args)


class KernelModule:
    """The registry entry of one kernel module: its entry kernels, in declaration order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: dict[str, Kernel] = {}
        #: the entry kernels without numba's type dispatch (see :func:`direct`)
        self.direct = types.SimpleNamespace()
        self.materialized = False
        self._interpreted: dict[str, Callable[..., Any]] | None = None

    @property
    def module(self) -> types.ModuleType:
        return sys.modules[self.name]

    def materialize(self) -> None:
        """Import numba and turn every kernel of the module into a dispatcher (once)."""
        with _MATERIALIZE_LOCK:
            if self.materialized:
                return
            from numba import njit

            install_borrowed()  # kernels may call jit.borrowed: its compiled form must be known first
            module = self.module
            for name, value in list(vars(module).items()):
                if isinstance(value, LazyJit) and value.py_func.__module__ == self.name:
                    setattr(module, name, njit(**value.options)(value.py_func))
            for entry in self.entries.values():
                if entry.dispatcher is None:
                    entry.dispatcher = njit(**entry.lazy.options)(entry.py_func)
            self.materialized = True

    def swap_in(self) -> None:
        """Compiled dispatchers in place of every entry kernel's wrapper."""
        self.materialize()
        for entry in self.entries.values():
            entry.swap_in()

    def interpreted(self) -> dict[str, Callable[..., Any]]:
        """Every kernel of the module as plain Python calling each other (never numba): the
        cold-cache path, and the reference tests compare the compiled kernels with."""
        if self._interpreted is None:
            module = self.module
            namespace = dict(vars(module))
            for name, value in vars(module).items():
                f = value.py_func if isinstance(value, LazyJit | Kernel) else getattr(value, "py_func", None)
                if isinstance(f, types.FunctionType):
                    namespace[name] = types.FunctionType(f.__code__, namespace, name, f.__defaults__, f.__closure__)
            for name, entry in self.entries.items():
                f = entry.py_func
                namespace[name] = types.FunctionType(f.__code__, namespace, name, f.__defaults__, f.__closure__)
            self._interpreted = namespace
        return self._interpreted


def _no_cold_call(entry: Kernel, args: tuple[Any, ...]) -> Any:
    raise RuntimeError(f"{entry.key}: import hebictl.jit (its cache module handles a kernel's first calls)")


#: what a call of a wrapped entry kernel does: set by :mod:`hebictl.jit.cache` (which sits above
#: this module) through :func:`set_cold_call`
_COLD_CALL: list[Callable[[Kernel, tuple[Any, ...]], Any]] = [_no_cold_call]


def set_cold_call(handler: Callable[[Kernel, tuple[Any, ...]], Any]) -> None:
    """Install what a call of an entry kernel does before its dispatcher takes its place."""
    _COLD_CALL[0] = handler


_MATERIALIZE_LOCK = threading.RLock()
#: every kernel module registered in this process, by module name
_MODULES: dict[str, KernelModule] = {}


def module_of(name: str) -> KernelModule:
    """The registry entry of kernel module ``name`` (created on its first kernel)."""
    entry = _MODULES.get(name)
    if entry is None:
        entry = _MODULES[name] = KernelModule(name)
    return entry


def registered() -> tuple[KernelModule, ...]:
    """Every kernel module registered so far in this process."""
    return tuple(_MODULES.values())


def helper(**options: Any) -> Callable[[Callable[..., Any]], LazyJit]:
    """``numba.njit(**options)``, applied when the module's first entry kernel is needed."""
    return lambda func: LazyJit(func, options)


def kernel(*signatures: str, cold: str = "interpret", batch: int | None = None,
           **options: Any) -> Callable[[Callable[..., Any]], Kernel]:
    """Register an entry kernel with its numba signatures (argument types, see the module docstring).

    ``cold``: what a call does while numba's cache is cold (:data:`COLD_POLICIES`); ``batch``: the
    argument whose first axis is a batch (batches over
    :data:`hebictl.jit.cache.INTERPRETED_MAX_BATCH` compile at once); ``options``: ``numba.njit``'s.
    """
    if not signatures:
        raise ValueError("a kernel needs at least one signature")
    if cold not in COLD_POLICIES:
        raise ValueError(f"cold must be one of {COLD_POLICIES}, got {cold!r}")

    def register(func: Callable[..., Any]) -> Kernel:
        entry = Kernel(LazyJit(func, options), tuple(f"({s},)" if "," not in s else f"({s})" for s in signatures),
                       cold, batch)
        km = module_of(func.__module__)
        if km.materialized:  # the module runs again (importlib.reload): its new kernels need dispatchers too
            km.materialized = False
        km.entries[entry.name] = entry
        setattr(km.direct, entry.name, entry)
        return entry

    return register


def materialize(module_name: str) -> None:
    """Make every kernel of ``module_name`` a numba dispatcher now (imports numba; compiles nothing).

    For a module whose entry kernels other modules import by name (``from m import kernel``):
    called at its end, they import the dispatcher itself, not a wrapper that stays in between.
    """
    module_of(module_name).swap_in()


def direct(module_name: str) -> types.SimpleNamespace:
    """The entry kernels of ``module_name`` as attributes that skip numba's type dispatch.

    Why: numba's dispatcher types every argument and looks the signature up on each call, about a
    fifth of a single model call (FK, gravity). Once a kernel's one declared signature is compiled
    or loaded, its attribute here is numba's compiled entry point for that signature, which unboxes
    the arguments as the declared types without checking them: callers MUST pass arrays of the
    declared dtypes and numbers of dimensions (unboxing a 2-D array as a 1-D one writes past its
    struct), and either the declared layout or one the kernel checks itself before indexing
    (``RobotModel``'s single-configuration calls: the model kernels check sizes and strides).
    Before the module's first call, the attribute is the kernel's wrapper (interpreted while the
    cache is cold); after it, a first call that loads the declared signature.
    """
    return module_of(module_name).direct


def dispatcher_of(module_name: str, name: str) -> Any:
    """The numba dispatcher of kernel ``name`` of ``module_name`` (materializing the module if needed)."""
    module = module_of(module_name)
    module.materialize()
    entry = module.entries.get(name)
    return entry.dispatcher if entry is not None else getattr(module.module, name)


def interpreted_namespace(module_name: str) -> dict[str, Callable[..., Any]]:
    """Every kernel of ``module_name`` as plain Python (see :meth:`KernelModule.interpreted`)."""
    return module_of(module_name).interpreted()


def entry_kernels(module_name: str) -> tuple[str, ...]:
    """The names of the entry kernels ``module_name`` registered, in declaration order."""
    return tuple(module_of(module_name).entries)


__all__ = ["COLD_POLICIES", "Kernel", "KernelModule", "LazyJit", "direct", "dispatcher_of", "entry_kernels", "helper",
           "interpreted_namespace", "kernel", "materialize", "module_of", "registered", "set_cold_call"]
