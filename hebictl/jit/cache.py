"""Start-up of the registered kernels: numba imported on first use, interpreted while the cache is cold.

Why: importing numba takes about a third of a command's start-up, and commands such as
``hebictl model info`` never call a kernel; and the first time after an install numba compiles
the kernels in several seconds, so a fresh install's first ``hebictl run`` would reach its first
command only after that and stall the control loop the first time each kernel is needed. The
compiled code is cached on disk (``cache=True``: in the package's ``__pycache__`` when that is
writable, else in numba's per-user cache folder), so that happens once per install.

How, per kernel module (:class:`WarmUp`):

* on the first call of an entry kernel (or :func:`preload`), the stamp file beside numba's cache
  says whether every signature the module declares is compiled there. If so, the dispatchers
  replace the wrappers (numba loads the code from the cache);
* if the cache is cold, kernels whose policy is ``"interpret"`` run their own Python source (the
  very code numba compiles: same results) for batches up to :data:`INTERPRETED_MAX_BATCH`, while
  ``python -m hebictl.jit.compile`` compiles the declared signatures in the background (nice 10,
  another core); larger batches, and ``"compile"`` kernels, compile in the caller. When the
  background process is done, a thread loads the compiled signatures and swaps them in.

``HEBICTL_JIT=eager`` compiles in the caller (numba's own behaviour; the background process uses
it); ``HEBICTL_JIT=interpreted`` keeps the interpreted kernels.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hebictl.jit.registry import Kernel, KernelModule, module_of, registered, set_cold_call
from hebictl.jit.stamps import stamp_path

log = logging.getLogger(__name__)

#: batches up to this size run interpreted while the cache is cold (a goal's effort check samples
#: 64 configurations: ~0.15 s interpreted against ~4 s to compile); larger ones compile at once
INTERPRETED_MAX_BATCH = 256
#: a compile lock older than this is stale (its process died)
LOCK_STALE_S = 300.0


def mode() -> str:
    """``HEBICTL_JIT``: ``auto`` (the default), ``eager`` or ``interpreted``."""
    return os.environ.get("HEBICTL_JIT", "auto").strip().lower()


class WarmUp:
    """What one process knows about one kernel module's cache: warm, cold, being compiled, loaded."""

    def __init__(self, km: KernelModule) -> None:
        self.km = km
        self.stamp: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.decided = False
        self.warm = False
        self.loading = False
        self._lock = threading.Lock()

    def decide(self) -> bool:
        """On the first kernel call: materialize, and tell whether the compiled kernels are cached."""
        with self._lock:
            if not self.decided:
                self.decided = True
                self.stamp = stamp_path(self.km.name)
                self.warm = self.stamp is not None and self.stamp.exists()
                if not self.warm:
                    self.start()
        return self.warm

    def start(self) -> None:
        """Start the background compile of this module unless another process already compiles it."""
        if self.stamp is None:
            return
        running = _COMPILERS.get(self.km.name)
        if running is not None and running.poll() is None:
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
        # every registered module still cold goes to the same process: one compiler, not one each
        names = [self.km.name] + [m.name for m in registered() if m.name != self.km.name
                                  and m.name not in _COMPILERS and _interprets(m) and _cold(m)]
        log.info("compiling the kernels in the background (first run after an install): %s", ", ".join(names))
        env = {**os.environ, "HEBICTL_JIT": "eager"}
        self.proc = subprocess.Popen([sys.executable, "-m", "hebictl.jit.compile", *names], env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        for name in names:
            _COMPILERS[name] = self.proc

    def ready(self) -> bool:
        """True once the compiled kernels are in the cache (ours or another process's compile)."""
        if self.stamp is None or mode() == "interpreted":
            return False
        if self.proc is not None and self.proc.poll() is None:
            return False
        return self.stamp.exists()

    def load_in_background(self) -> None:
        """Load the declared signatures from the cache in a thread, then swap the dispatchers in."""
        with self._lock:
            if self.loading:
                return
            self.loading = True

        def load() -> None:
            for entry in self.km.entries.values():
                try:
                    entry.compile_signatures()
                except Exception:  # pragma: no cover - keep interpreting rather than fail the caller
                    log.exception("kernels: loading %s failed; staying interpreted", entry.key)
                    continue
                entry.swap_in()
            log.debug("kernels: compiled versions of %s in use", self.km.name)

        threading.Thread(target=load, name="hebictl-kernel-load", daemon=True).start()


def compile_processes() -> tuple[subprocess.Popen[bytes], ...]:
    """The background compile processes this process started (one serves every module cold at the time)."""
    return tuple(dict.fromkeys(_COMPILERS.values()))


def _interprets(km: KernelModule) -> bool:
    """True if a kernel of the module runs interpreted while the cache is cold (worth compiling in the background)."""
    return any(entry.cold == "interpret" for entry in km.entries.values())


def _cold(km: KernelModule) -> bool:
    stamp = stamp_path(km.name)
    return stamp is not None and not stamp.exists()


def warm_up_of(km: KernelModule) -> WarmUp:
    """The one :class:`WarmUp` of a kernel module in this process."""
    with _WARM_LOCK:
        warm = _WARM.get(km.name)
        if warm is None:
            warm = _WARM[km.name] = WarmUp(km)
        return warm


def call_cold(entry: Kernel, args: tuple[Any, ...]) -> Any:
    """A call of an entry kernel whose dispatcher is not yet on the module (see the module docstring)."""
    km = module_of(entry.module_name)
    how = mode()
    if how == "interpreted":
        return km.interpreted()[entry.name](*args)
    if how == "eager":
        km.swap_in()
        return entry.dispatcher(*args)
    warm = warm_up_of(km)
    if warm.decide():  # cached: compiled kernels from now on
        km.swap_in()
        return entry.dispatcher(*args)
    big = entry.batch is not None and args[entry.batch].shape[0] > INTERPRETED_MAX_BATCH
    if entry.cold == "compile" or big:
        km.materialize()
        with entry._lock:  # compile (or load) now, as numba would
            result = entry.dispatcher(*args)
        entry.swap_in()
        return result
    if warm.ready():
        warm.load_in_background()
    return km.interpreted()[entry.name](*args)


def preload(*module_names: str) -> None:
    """Load every declared signature of these kernel modules now, e.g. while an arm is built, so
    no control cycle waits for numba to load one (about 0.4 s for the controller's kernels).

    With a cold cache (auto mode) this starts the background compile instead and returns: the
    kernels run interpreted meanwhile (``"compile"`` kernels compile here, as their first call would).
    """
    how = mode()
    for name in module_names:
        importlib.import_module(name)  # registers its kernels (a no-op when the caller imported it)
        km = module_of(name)
        if how == "interpreted":
            continue
        compile_only = all(entry.cold == "compile" for entry in km.entries.values())
        if how == "eager" or compile_only or warm_up_of(km).decide():
            km.materialize()  # cached (or compiled in the caller anyway): load every signature now
            for entry in km.entries.values():
                entry.compile_signatures()
                entry.swap_in()
            continue
        for entry in km.entries.values():  # cold: the background compile has started
            if entry.cold == "compile":
                entry.compile_signatures()
                entry.swap_in()


set_cold_call(call_cold)

#: the background compile process of each kernel module this process started
_COMPILERS: dict[str, subprocess.Popen[bytes]] = {}
_WARM: dict[str, WarmUp] = {}
_WARM_LOCK = threading.Lock()

__all__ = ["INTERPRETED_MAX_BATCH", "LOCK_STALE_S", "WarmUp", "call_cold", "compile_processes", "mode", "preload",
           "warm_up_of"]
