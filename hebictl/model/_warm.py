"""``python -m hebictl.model._warm``: compile every kernel (model and control) into numba's cache, then stamp them.

Started in the background by :mod:`hebictl.model.warmup` on the first run after an install (with
``HEBICTL_JIT=eager``, so the kernels compile here instead of being interpreted). It calls the
public model API on a small HRDF arm, single configurations and a small batch, so the cached
signatures are the ones every caller uses.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

import numpy as np

#: every kernel module this compiles and stamps (hebictl.model.warmup installs each)
KERNEL_MODULES = ("hebictl.model.kernels", "hebictl.control.cycle_kernels", "hebictl.control.monitors.kernels")

ARM = """<?xml version="1.0" encoding="UTF-8"?>
<robot version="1.2.0">
  <actuator type="X5-9"/>
  <bracket type="X5LightRight"/>
  <actuator type="X5-4"/>
  <link type="X5" extension="0.3" twist="0"/>
  <actuator type="X5-1"/>
  <end-effector type="X5Parallel"/>
</robot>
"""


def compile_all() -> None:
    """Every entry kernel, for one configuration and for a batch, through the public API."""
    from hebictl.formats import load_model_string

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model_string(ARM, "hrdf")
    q = np.linspace(0.1, 0.5, model.nq)
    batch = np.tile(q, (3, 1))
    g = np.array([0.0, 0.0, -9.81])
    for x in (q, batch):
        model.gravity_compensation(x)
        model.inverse_dynamics(x, x, x)
        model.forward_kinematics(x, frame="output")
        model.jacobians(x, frame="com")
    out = np.empty(model.nv)
    model.gravity_compensation_into(q, g, out)
    model.inverse_dynamics_into(q, q, q, g, out)
    model.forward_kinematics_into(q, "output", np.empty((model.frame_count("output"), 4, 4)))
    from hebictl.control import cycle_kernels  # the controller's per-cycle kernels, as an Arm loads them

    cycle_kernels.load(model, model.dof)
    from hebictl.control.monitors import kernels as monitor_kernels  # the execution monitors' observer

    monitor_kernels.load(model.dof)


def main() -> int:
    """Compile, then stamp every kernel module (the parent passes the stamp it waits for).

    Also usable by hand after an install (``python -m hebictl.model._warm``, e.g. in an image build)
    so that even the first run uses compiled kernels.
    """
    os.environ["HEBICTL_JIT"] = "eager"  # before hebictl.model.kernels is imported
    stamp = os.environ.get("HEBICTL_WARM_STAMP")
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)  # the foreground process (the control loop) comes first
    try:
        compile_all()
    finally:
        if stamp:
            with contextlib.suppress(OSError):
                Path(stamp).with_suffix(".lock").unlink()
    import importlib

    from hebictl.model import warmup

    stamps = {stamp} if stamp else set()
    for name in KERNEL_MODULES:  # every kernel module compiled above: stamp each
        path = warmup.stamp_path(importlib.import_module(name))
        if path is not None:
            stamps.add(str(path))
    for done in stamps:
        with contextlib.suppress(OSError):
            Path(done).write_text("compiled\n")
            Path(done).with_suffix(".lock").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
