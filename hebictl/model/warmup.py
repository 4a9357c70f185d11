"""Start-up of the model kernels: numba imported on first use, interpreted while the cache is cold.

Why: importing numba takes about a third of a command's start-up, and commands such as
``hebictl model info`` never call a kernel; and the first time after an install numba compiles
the four entry kernels of :mod:`hebictl.model.kernels` in about 6 s (its own start-up included),
so a fresh install's first ``hebictl run`` would reach its first command only after several
seconds and stall the control loop the first time each kernel is needed. The compiled code is
cached on disk (``cache=True``: in the package's ``__pycache__`` when that is writable, else in
numba's per-user cache folder), so that happens once per install.

How:

* ``kernels.py`` decorates with :func:`lazy_njit`: a kernel stays plain Python (:class:`LazyJit`)
  until the first call of an entry kernel, which imports numba and makes every kernel a numba
  dispatcher at once (:func:`materialize`; they call each other, so all or none);
* the entry kernels are :class:`Kernel` objects. On the first call, if the stamp file beside
  numba's cache says the compiled kernels are there, the dispatchers replace the Kernel objects
  (no wrapper stays on the hot path; numba loads them from the cache). If the cache is cold, batches of
  up to :data:`INTERPRETED_MAX_BATCH` configurations run the kernels' own Python source (the very
  code numba compiles: same results, about 1-2 ms per configuration on a 6-DoF arm) while
  ``python -m hebictl.model._warm`` compiles everything in the background (nice 10, another
  core); larger batches compile in-process. When that process is done, a thread loads the
  compiled kernels and swaps them in.

Other packages' kernel modules use the same machinery (``hebictl.control.cycle_kernels``): a
module lists its own ``ENTRY_KERNELS`` and calls :func:`install` at its end; one background
process compiles every kernel module and stamps each.

``HEBICTL_JIT=eager`` imports numba at once and compiles on first call (numba's own behaviour;
the warm-up process uses it); ``HEBICTL_JIT=interpreted`` keeps the interpreted kernels.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: batches up to this size run interpreted while the cache is cold (a goal's effort check samples
#: 64 configurations: ~0.15 s interpreted against ~4 s to compile); larger ones compile at once
INTERPRETED_MAX_BATCH = 256
#: a warm-up lock older than this is stale (its process died)
LOCK_STALE_S = 300.0
ENTRY_KERNELS = ("frame_poses_batch", "jacobians_batch", "gravity_batch", "rnea_batch")


def entry_kernels(module: types.ModuleType) -> tuple[str, ...]:
    """The entry kernels of ``module`` (its ``ENTRY_KERNELS``; the model kernels' by default)."""
    return tuple(getattr(module, "ENTRY_KERNELS", ENTRY_KERNELS))


def _mode() -> str:
    return os.environ.get("HEBICTL_JIT", "auto").strip().lower()


class LazyJit:
    """A kernel before numba is imported: the Python function and its ``numba.njit`` options."""

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func = func
        self.options = options
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any) -> Any:
        """A direct call of a non-entry kernel: compile everything, then call the dispatcher."""
        module = sys.modules[self.py_func.__module__]
        materialize(module)
        return getattr(module, self.__name__)(*args)


def lazy_njit(**options: Any) -> Callable[[Callable[..., Any]], LazyJit]:
    """``numba.njit(**options)`` applied later, by :func:`materialize` (numba is not imported here)."""
    return lambda func: LazyJit(func, options)


_MATERIALIZE_LOCK = threading.Lock()


def materialize(module: types.ModuleType) -> None:
    """Import numba and turn every :class:`LazyJit` of ``module`` into a dispatcher (once).

    Entry kernels wrapped in :class:`Kernel` get their dispatcher stored on the wrapper; the
    wrapper stays in the module until :meth:`Kernel.swap_in`.
    """
    with _MATERIALIZE_LOCK:
        if getattr(module, "_materialized", False):
            return
        from numba import njit

        for name, value in list(vars(module).items()):
            if isinstance(value, LazyJit):
                setattr(module, name, njit(**value.options)(value.py_func))
            elif isinstance(value, Kernel) and value.dispatcher is None:
                value.dispatcher = njit(**value.lazy.options)(value.lazy.py_func)
        module._materialized = True  # type: ignore[attr-defined]  # a marker on the module object


def dispatcher_of(module: types.ModuleType, name: str) -> Any:
    """The numba dispatcher of kernel ``name`` (materializing the module if needed)."""
    materialize(module)
    value = getattr(module, name)
    return value.dispatcher if isinstance(value, Kernel) else value


def stamp_path(module: types.ModuleType) -> Path | None:
    """The file that says "every entry kernel of this source is in numba's cache", or None.

    It sits in numba's cache folder for ``module`` and its name hashes the kernel source, numba's
    and Python's versions, so an upgrade or an edited kernel makes it stale.
    """
    dispatcher = dispatcher_of(module, entry_kernels(module)[0])
    folder = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
    if folder is None:
        return None
    import numba

    source = Path(module.__file__).read_bytes() if module.__file__ else b""
    key = hashlib.sha1(source + numba.__version__.encode() + sys.version.encode()).hexdigest()[:16]
    return Path(folder) / f"hebictl-kernels-{key}.warm"


def install(module: types.ModuleType) -> None:
    """Called at the end of ``kernels.py``: wrap the entry kernels (see the module docstring)."""
    if _mode() == "eager":
        materialize(module)
        return
    interpreted = interpreted_namespace(module)
    warm = WarmUp(module)
    for name in entry_kernels(module):
        setattr(module, name, Kernel(module, name, getattr(module, name), interpreted[name], warm))


def interpreted_namespace(module: types.ModuleType) -> dict[str, Callable[..., Any]]:
    """Every kernel of ``module`` as plain Python, calling each other (never numba): the cold-cache
    path, and the reference the tests compare the compiled kernels with."""
    namespace = dict(vars(module))
    for name, value in vars(module).items():
        f = value.lazy.py_func if isinstance(value, Kernel) else getattr(value, "py_func", None)
        if isinstance(f, types.FunctionType):
            namespace[name] = types.FunctionType(f.__code__, namespace, name, f.__defaults__, f.__closure__)
    return namespace


class WarmUp:
    """What one process knows about the cache: warm, cold, being compiled, loaded."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.stamp: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.decided = False
        self.warm = False
        self.loading = False

    def decide(self) -> bool:
        """On the first kernel call: materialize, and tell whether the compiled kernels are cached."""
        if not self.decided:
            self.decided = True
            if _mode() == "interpreted":
                return False
            self.stamp = stamp_path(self.module)
            self.warm = self.stamp is not None and self.stamp.exists()
            if not self.warm:
                self.start()
        return self.warm

    def start(self) -> None:
        """Start the compile process unless another process already is compiling."""
        if self.stamp is None:
            return
        running = next((p for p in _COMPILERS if p.poll() is None), None)
        if running is not None:  # it compiles and stamps every kernel module, this one included
            self.proc = running
            return
        lock = self.stamp.with_suffix(".lock")
        try:
            if lock.exists() and time.time() - lock.stat().st_mtime < LOCK_STALE_S:
                log.debug("kernels: another process is compiling them (%s)", lock)
                return
            self.stamp.parent.mkdir(parents=True, exist_ok=True)
            lock.write_text(str(os.getpid()))
        except OSError as exc:
            log.debug("kernels: no background compile (%s)", exc)
            return
        env = {**os.environ, "HEBICTL_JIT": "eager", "HEBICTL_WARM_STAMP": str(self.stamp)}
        log.info("compiling the model and control kernels in the background (first run after an install)")
        self.proc = subprocess.Popen([sys.executable, "-m", "hebictl.model._warm"], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        _COMPILERS.append(self.proc)

    def ready(self) -> bool:
        """True once the compiled kernels are in the cache (ours or another process's warm-up)."""
        if self.stamp is None or _mode() == "interpreted":
            return False
        if self.proc is not None and self.proc.poll() is None:
            return False
        return self.stamp.exists()

    def load_in_background(self) -> None:
        """Load the compiled kernels from the cache in a thread, then swap them in."""
        if self.loading:
            return
        self.loading = True
        kernels = [k for k in (getattr(self.module, n) for n in entry_kernels(self.module)) if isinstance(k, Kernel)]

        def load() -> None:
            for k in kernels:
                sample = _LAST_ARGS.get(k.key)
                try:
                    if sample is not None:  # load this signature now; unused kernels load on first call
                        k.dispatcher(*_copies(sample))
                except Exception:  # pragma: no cover - keep interpreting rather than fail the caller
                    log.exception("kernels: loading %s failed; staying interpreted", k.name)
                    continue
                k.swap_in()
            log.debug("kernels: compiled versions in use")

        threading.Thread(target=load, name="hebictl-kernel-load", daemon=True).start()


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Arguments for a throw-away call: same types, own output buffers."""
    return tuple(a.copy() if hasattr(a, "copy") else a for a in args)


class Kernel:
    """An entry kernel until the compiled one takes its place (see the module docstring)."""

    def __init__(self, module: types.ModuleType, name: str, lazy: LazyJit, interpreted: Callable[..., Any],
                 warm: WarmUp) -> None:
        self.module = module
        self.name = name
        self.key = f"{module.__name__}.{name}"
        self.lazy = lazy
        self.py_func = lazy.py_func
        self.dispatcher: Any = None
        self.interpreted = interpreted
        self.warm = warm
        self.__doc__ = lazy.__doc__
        self._compile_lock = threading.Lock()

    def swap_in(self) -> None:
        """Replace this object by the compiled dispatcher in the kernels module."""
        if getattr(self.module, self.name) is self:
            setattr(self.module, self.name, self.dispatcher)

    def __call__(self, *args: Any) -> Any:
        warm = self.warm
        if _mode() == "interpreted":
            return self.interpreted(*args)
        if warm.decide():  # cached: compiled kernels from now on
            for name in entry_kernels(self.module):
                k = getattr(self.module, name)
                if isinstance(k, Kernel):
                    k.swap_in()
            return self.dispatcher(*args)
        if args[0].shape[0] > INTERPRETED_MAX_BATCH:
            materialize(self.module)
            with self._compile_lock:  # a big batch: compile (or load) now, as numba would
                result = self.dispatcher(*args)
            self.swap_in()
            return result
        if self.key not in _LAST_ARGS:
            _LAST_ARGS[self.key] = _copies(args)
        if warm.ready():
            warm.load_in_background()
        return self.interpreted(*args)


#: the background compile processes this process started (one is enough for every kernel module)
_COMPILERS: list[subprocess.Popen[bytes]] = []
#: one sample call per kernel (copied), replayed by the loader thread to load the same signature
_LAST_ARGS: dict[str, tuple[Any, ...]] = {}

__all__ = ["INTERPRETED_MAX_BATCH", "Kernel", "LazyJit", "dispatcher_of", "entry_kernels",
           "install", "lazy_njit", "materialize", "stamp_path"]
