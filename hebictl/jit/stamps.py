"""The stamp file that says a kernel module's declared signatures are all in numba's disk cache.

Why a file of our own: numba's cache answers per signature, on a call; the start-up has to know
before the first call whether to wait for numba (warm) or to interpret (cold), without compiling.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from hebictl.jit.registry import module_of


def stamp_path(module_name: str) -> Path | None:
    """The file that says "every declared signature of this module is in numba's cache", or None.

    It sits in numba's cache folder for the module and its name hashes the module's source and
    numba's and Python's versions, so an upgrade or an edited kernel makes it stale.
    """
    km = module_of(module_name)
    km.materialize()
    if not km.entries:
        return None
    dispatcher = next(iter(km.entries.values())).dispatcher
    folder = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
    if folder is None:
        return None
    import numba

    file = km.module.__file__
    source = Path(file).read_bytes() if file else b""
    key = hashlib.sha1(source + numba.__version__.encode() + sys.version.encode()).hexdigest()[:16]
    return Path(folder) / f"hebictl-kernels-{module_name.rsplit('.', 1)[-1]}-{key}.warm"


__all__ = ["stamp_path"]
