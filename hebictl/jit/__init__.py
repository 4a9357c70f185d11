"""One compile machinery for every numba kernel of hebictl and sim_backend.

Why one: the model, the controller, the monitors and the simulator all run small numba kernels
every cycle, and all need the same things: numba imported only when a kernel is needed, code
cached on disk, a cold cache not stalling the first run, and kernels loaded before the first
control cycle. A kernel module registers its kernels with :func:`kernel` (entry points, with
their numba signatures) and :func:`helper` (compiled with them); this package imports only the
standard library (numba once a kernel is needed) and knows no kernel module.

* :mod:`hebictl.jit.registry`: the decorators and what they record;
* :mod:`hebictl.jit.borrow`: arrays a kernel uses but does not own (uncounted arguments, held scratch);
* :mod:`hebictl.jit.stamps`: the file that says a module's signatures are in numba's cache;
* :mod:`hebictl.jit.cache`: cold and warm cache, background compile, :func:`preload`;
* :mod:`hebictl.jit.compile`: ``python -m hebictl.jit.compile`` compiles the declared signatures.

``HEBICTL_NUMBA_CACHE=0`` turns numba's disk cache off (:data:`CACHE`); ``HEBICTL_JIT`` picks the
start-up mode (:func:`hebictl.jit.cache.mode`).
"""

from __future__ import annotations

import os

from hebictl.jit.borrow import borrowed, exclusive
from hebictl.jit.cache import INTERPRETED_MAX_BATCH, mode, preload
from hebictl.jit.registry import (
    Kernel,
    direct,
    dispatcher_of,
    entry_kernels,
    helper,
    interpreted_namespace,
    kernel,
    materialize,
    registered,
)
from hebictl.jit.stamps import stamp_path

#: numba's ``cache=`` for every kernel (``HEBICTL_NUMBA_CACHE=0``: compile in memory only)
CACHE = os.environ.get("HEBICTL_NUMBA_CACHE", "1") != "0"

__all__ = ["CACHE", "INTERPRETED_MAX_BATCH", "Kernel", "borrowed", "direct", "dispatcher_of", "entry_kernels",
           "exclusive", "helper", "interpreted_namespace", "kernel", "materialize", "mode", "preload", "registered",
           "stamp_path"]
