"""``python -m hebictl.jit.compile MODULE...``: compile every declared signature of these kernel modules
into numba's cache, then stamp each module.

Started in the background by :mod:`hebictl.jit.cache` on the first run after an install (with
``HEBICTL_JIT=eager``). It imports each module (which registers its kernels) and compiles each
entry kernel's declared signatures: no caller, model or dummy data is needed, so this package
knows none of the kernel modules. Run by hand (e.g. in an image build) so that even the first run
uses compiled kernels::

    python -m hebictl.jit.compile hebictl.model.kernels hebictl.control.cycle_kernels \\
        hebictl.control.monitors.kernels sim_backend.actuator sim_backend.firmware sim_backend.backend
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path

from hebictl.jit.registry import module_of
from hebictl.jit.stamps import stamp_path


def compile_modules(names: list[str] | tuple[str, ...]) -> list[Path]:
    """Compile every declared signature of each module; return the stamps written."""
    stamps = []
    for name in names:
        importlib.import_module(name)
        km = module_of(name)
        km.materialize()
        for entry in km.entries.values():
            entry.compile_signatures()
        stamp = stamp_path(name)
        if stamp is not None:
            with contextlib.suppress(OSError):
                stamp.parent.mkdir(parents=True, exist_ok=True)
                stamp.write_text("compiled\n")
                stamps.append(stamp)
    return stamps


def main(argv: list[str] | None = None) -> int:
    """Compile, stamp, and remove the compile locks the parent left (also on failure)."""
    os.environ["HEBICTL_JIT"] = "eager"
    names = list(sys.argv[1:] if argv is None else argv)
    if not names:
        print("usage: python -m hebictl.jit.compile MODULE [MODULE ...]  (kernel modules to compile)",
              file=sys.stderr)
        return 2
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)  # the foreground process (the control loop) comes first
    try:
        compile_modules(names)
    finally:
        for name in names:
            with contextlib.suppress(Exception):
                stamp = stamp_path(name)
                if stamp is not None:
                    stamp.with_suffix(".lock").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
