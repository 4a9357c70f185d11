"""First start after an install: the kernels run interpreted while another process compiles them.

Why: numba compiles the four entry kernels of :mod:`hebictl.model.kernels` in about 6 s the first
time (numba's own start-up included), so a fresh install's first ``hebictl run`` would reach its
first command only after several seconds, and the control loop would stall the first time each
kernel is needed. The compiled code is cached on disk (``cache=True``: in the package's
``__pycache__`` when that is writable, else in numba's per-user cache folder), so this happens
once per install.

How, while the cache is cold (no stamp file beside numba's cache):

* each entry kernel is a :class:`Kernel` that runs the kernel's own Python source (the very code
  numba compiles, run by the interpreter: same results, about 1-2 ms per call on a 6-DoF arm)
  for single configurations, and compiles in-process for batches (a batch of thousands is not
  something to interpret);
* the first call starts ``python -m hebictl.model._warm`` in the background (nice 10, on another
  core), which compiles every entry kernel into the cache and writes the stamp;
* when that process has finished, a thread loads the compiled kernels from the cache and puts
  them in place of the :class:`Kernel` objects, so the process speeds up without a stall.

Later processes find the stamp and use numba's dispatchers directly (no wrapper on the hot
path). ``HEBICTL_JIT=eager`` restores plain compile-on-first-call (the warm-up process uses it);
``HEBICTL_JIT=interpreted`` keeps the interpreted kernels (for debugging).
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

#: batches up to this size run interpreted while the cache is cold; larger ones compile at once
INTERPRETED_MAX_BATCH = 8
#: a warm-up lock older than this is stale (its process died)
LOCK_STALE_S = 300.0
ENTRY_KERNELS = ("frame_poses_batch", "jacobians_batch", "gravity_batch", "rnea_batch")


def _mode() -> str:
    return os.environ.get("HEBICTL_JIT", "auto").strip().lower()


def stamp_path(module: types.ModuleType) -> Path | None:
    """The file that says "every entry kernel of this source is in numba's cache", or None.

    It sits in numba's cache folder for ``module`` and its name hashes the kernel source, numba's
    and Python's versions, so an upgrade or an edited kernel makes it stale.
    """
    dispatcher = getattr(module, ENTRY_KERNELS[0])
    cache = getattr(dispatcher, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    if folder is None:
        return None
    import numba

    source = Path(module.__file__ or "").read_bytes() if module.__file__ else b""
    key = hashlib.sha1(source + numba.__version__.encode() + sys.version.encode()).hexdigest()[:16]
    return Path(folder) / f"hebictl-kernels-{key}.warm"


def install(module: types.ModuleType) -> None:
    """Put :class:`Kernel` objects in place of ``module``'s entry kernels when the cache is cold."""
    mode = _mode()
    if mode == "eager":
        return
    stamp = stamp_path(module)
    if mode != "interpreted" and (stamp is None or stamp.exists()):
        return
    interpreted = _interpreted_namespace(module)
    warm = _WarmUp(stamp, module)
    for name in ENTRY_KERNELS:
        setattr(module, name, Kernel(module, name, getattr(module, name), interpreted[name], warm,
                                     keep_interpreted=mode == "interpreted"))


def _interpreted_namespace(module: types.ModuleType) -> dict[str, Callable[..., Any]]:
    """Every njit function of ``module`` as plain Python, calling each other (not the dispatchers)."""
    from numba.core.registry import CPUDispatcher

    namespace = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, CPUDispatcher):
            f = value.py_func
            namespace[name] = types.FunctionType(f.__code__, namespace, name, f.__defaults__, f.__closure__)
    return namespace


class _WarmUp:
    """The background compile: started once per process, finished when the stamp appears."""

    def __init__(self, stamp: Path | None, module: types.ModuleType) -> None:
        self.stamp = stamp
        self.module = module
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = False
        self.loading = False
        self.lock = threading.Lock()

    def start(self) -> None:
        """Start the compile process unless another process already is compiling."""
        self.started = True
        if self.stamp is None or _mode() == "interpreted":
            return
        lock = self.stamp.with_suffix(".lock")
        try:
            if lock.exists() and time.time() - lock.stat().st_mtime < LOCK_STALE_S:
                log.debug("kernels: another process is compiling them (%s)", lock)
                return
            self.stamp.parent.mkdir(parents=True, exist_ok=True)
            lock.write_text(str(os.getpid()))
        except OSError as exc:
            log.debug("kernels: no warm-up (%s)", exc)
            return
        env = {**os.environ, "HEBICTL_JIT": "eager", "HEBICTL_WARM_STAMP": str(self.stamp)}
        log.info("compiling the model kernels in the background (first run after an install)")
        self.proc = subprocess.Popen([sys.executable, "-m", "hebictl.model._warm"], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

    def ready(self) -> bool:
        """True once the compiled kernels are in the cache (ours or another process's warm-up)."""
        if self.stamp is None or _mode() == "interpreted":
            return False
        if self.proc is not None and self.proc.poll() is None:
            return False
        return self.stamp.exists()

    def load_in_background(self, kernels: list[Kernel], args: dict[str, tuple[Any, ...]]) -> None:
        """Load the compiled kernels from the cache in a thread, then swap them in."""
        if self.loading:
            return
        self.loading = True

        def load() -> None:
            for k in kernels:
                sample = args.get(k.name)
                try:
                    if sample is not None:  # load this signature now; kernels not used yet load on first call
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
    """An entry kernel while numba's cache is cold: interpreted for small batches (see module doc)."""

    def __init__(self, module: types.ModuleType, name: str, dispatcher: Any, interpreted: Callable[..., Any],
                 warm: _WarmUp, *, keep_interpreted: bool = False) -> None:
        self.module = module
        self.name = name
        self.dispatcher = dispatcher
        self.interpreted = interpreted
        self.warm = warm
        self.keep_interpreted = keep_interpreted
        self.__doc__ = dispatcher.__doc__
        self._compile_lock = threading.Lock()

    def swap_in(self) -> None:
        """Replace this object by the compiled dispatcher in the kernels module."""
        if getattr(self.module, self.name) is self:
            setattr(self.module, self.name, self.dispatcher)

    def __call__(self, *args: Any) -> Any:
        batch = args[0].shape[0]
        if self.keep_interpreted:
            return self.interpreted(*args)
        if batch > INTERPRETED_MAX_BATCH:
            with self._compile_lock:  # big batch: compile (or load) now, as numba would
                result = self.dispatcher(*args)
            self.swap_in()
            return result
        warm = self.warm
        if not warm.started:
            warm.start()
        if self.name not in _LAST_ARGS:
            _LAST_ARGS[self.name] = _copies(args)
        if warm.ready():
            kernels = [k for k in (getattr(self.module, n) for n in ENTRY_KERNELS) if isinstance(k, Kernel)]
            warm.load_in_background(kernels, _LAST_ARGS)
        return self.interpreted(*args)


#: one sample call per kernel (copied), replayed by the loader thread to load the same signature
_LAST_ARGS: dict[str, tuple[Any, ...]] = {}

__all__ = ["INTERPRETED_MAX_BATCH", "Kernel", "install", "stamp_path"]
