"""Start-up of the model kernels: numba imported on first use, interpreted kernels on a cold cache.

The interpreted kernels are the numba kernels' own Python source, so they must give the compiled
kernels' results (which test_kernels.py checks against pinocchio and test_robot.py against finite
differences); here the two are compared on a bundled kit and random trees with every joint kind.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hebictl.formats import load_model
from hebictl.model import kernels, warmup
from hebictl.model.tree import JointKind
from tests.conftest import REPO_ROOT
from tests.model.random_trees import random_configuration, random_tree

ALL_KINDS = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED, JointKind.BALL)


def _args(model, name, q, qd, qdd, gravity):
    """Arguments and output buffer of one entry kernel (single configuration, or a batch of one for
    the ``*_batch`` kernels), with the model packed as robot.py packs it."""
    batch = name.endswith("_batch")
    Q, V, A = (np.ascontiguousarray(x, dtype=np.float64).reshape((1, -1) if batch else (-1,)) for x in (q, qd, qdd))
    lead = (1,) if batch else ()
    if name.startswith("frame_poses"):
        fs = model._frame_sets["output"]
        return (Q, fs.ints, fs.floats, np.zeros((*lead, len(fs.body), 4, 4)))
    if name.startswith("jacobians"):
        fs = model._frame_sets["com"]
        return (Q, fs.ints, fs.floats, np.zeros((*lead, len(fs.body), 6, model.nv)))
    if name.startswith("gravity"):
        return (Q, gravity, model._ints, model._floats, np.zeros((*lead, model.nv)))
    return (Q, V, A, gravity, model._ints, model._floats, np.zeros((*lead, model.nv)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interpreted_kernels_equal_the_compiled_ones(seed):
    """FK, Jacobians, gravity and inverse dynamics of every joint kind: interpreted == compiled to 1e-12."""
    rng = np.random.default_rng(seed)
    interpreted = warmup._interpreted_namespace(kernels)
    models = [random_tree(seed, n=9, kinds=ALL_KINDS, root=JointKind.FREE if seed == 2 else None)]
    if seed == 0:
        models.append(load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf"))
    for model in models:
        q, qd, qdd = random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        g = np.array([0.3, -0.2, -9.81])
        for name in warmup.entry_kernels(kernels):
            slow, fast = _args(model, name, q, qd, qdd, g), _args(model, name, q, qd, qdd, g)
            interpreted[name](*slow)
            warmup.dispatcher_of(kernels, name)(*fast)
            assert np.abs(slow[-1]).max() > 0.0
            np.testing.assert_allclose(slow[-1], fast[-1], rtol=0, atol=1e-12, err_msg=name)


def test_numba_is_imported_only_when_a_kernel_runs():
    """Loading a model (``hebictl model info``) does not import numba; the first kernel call does."""
    code = ("import sys\nfrom hebictl.formats import load_model\n"
            f"m = load_model({str(REPO_ROOT / 'hrdf_kits' / 'x-series-6dof.hrdf')!r})\n"
            "assert 'numba' not in sys.modules, 'numba imported by load_model'\n"
            "m.gravity_compensation(m.neutral_configuration())\n"
            "assert 'numba' in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "HEBICTL_JIT": "auto"})
    assert r.returncode == 0, r.stderr


def test_cold_cache_interprets_small_batches_and_compiles_large_ones(monkeypatch):
    """On a cold cache a single configuration and a small batch run interpreted; a batch over
    INTERPRETED_MAX_BATCH is compiled in-process and the dispatcher replaces the wrapper."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    warm = warmup._WarmUp(kernels)
    warm.decided, warm.warm = True, False  # cold, and no background process from a test
    monkeypatch.setattr(warmup, "_LAST_ARGS", {})
    calls: dict[str, list] = {"gravity": [], "gravity_batch": []}
    wrappers = {}
    for name, options in (("gravity", {"cache": True}), ("gravity_batch", {"cache": True, "nogil": True})):
        lazy = warmup.LazyJit(getattr(kernels, name).py_func, options)
        kernel = warmup.Kernel(kernels, name, lazy, warmup._interpreted_namespace(kernels)[name], warm)
        kernel.dispatcher = warmup.dispatcher_of(kernels, name)
        monkeypatch.setattr(kernels, name, kernel)
        monkeypatch.setattr(kernel, "interpreted", lambda *a, k=kernel, c=calls[name]: c.append(a) or k.py_func(*a))
        wrappers[name] = kernel
    single = model.gravity_compensation(model.neutral_configuration())
    small = model.gravity_compensation(np.zeros((2, model.nq)))
    assert len(calls["gravity"]) == 1 and kernels.gravity is wrappers["gravity"]
    assert len(calls["gravity_batch"]) == 1 and kernels.gravity_batch is wrappers["gravity_batch"]
    assert single.shape == (model.nv,) and small.shape == (2, model.nv) and np.abs(single).max() > 0.1
    model.gravity_compensation(np.zeros((warmup.INTERPRETED_MAX_BATCH + 1, model.nq)))
    assert len(calls["gravity_batch"]) == 1 and kernels.gravity_batch is wrappers["gravity_batch"].dispatcher


def test_warm_process_fills_the_cache_and_writes_the_stamp(tmp_path):
    """``python -m hebictl.model._warm`` compiles everything (eagerly) and leaves the stamp, no lock."""
    stamp = tmp_path / "k.warm"
    stamp.with_suffix(".lock").write_text("1")
    env = {**os.environ, "HEBICTL_JIT": "eager", "HEBICTL_WARM_STAMP": str(stamp)}
    r = subprocess.run([sys.executable, "-m", "hebictl.model._warm"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert stamp.read_text() == "compiled\n" and not stamp.with_suffix(".lock").exists()


def test_stamp_names_the_kernel_source():
    """The stamp lives beside numba's cache and changes with the kernels' source (hash in its name)."""
    stamp = warmup.stamp_path(kernels)
    assert stamp is not None and stamp.name.startswith("hebictl-kernels-") and stamp.suffix == ".warm"


def test_cold_start_compiles_every_kernel_module_in_one_background_process(tmp_path):
    """A fresh install's first arm loop: the model and control kernels run interpreted, one
    background process compiles both modules and stamps each, and the loop ends up on the
    compiled kernels of both without restarting."""
    code = f"""
import time
from hebictl.control import cycle_kernels
from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.model import kernels, warmup

def entries(m):
    return [getattr(m, k) for k in warmup.entry_kernels(m)]

arm = Arm.from_config({str(REPO_ROOT / 'configs' / 'x-series-6dof.cfg.yaml')!r}, backend="mock", clock=SimClock())
arm.update()
arm.send()
assert any(isinstance(k, warmup.Kernel) for k in entries(cycle_kernels)), "cold cache: interpreted first"
deadline = time.monotonic() + 400
while time.monotonic() < deadline and any(isinstance(k, warmup.Kernel) for m in (kernels, cycle_kernels)
                                          for k in entries(m)):
    arm.update()
    arm.send()
    time.sleep(0.001)
assert not any(isinstance(k, warmup.Kernel) for m in (kernels, cycle_kernels) for k in entries(m)), "never swapped in"
assert len(warmup._COMPILERS) == 1, warmup._COMPILERS
for m in (kernels, cycle_kernels):
    assert warmup.stamp_path(m).exists(), m.__name__
print("ok", arm.state)
"""
    env = {**os.environ, "HEBICTL_JIT": "auto", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                       cwd=REPO_ROOT)
    assert r.returncode == 0, r.stderr
    assert "ok ArmState.RUNNING" in r.stdout or "ok running" in r.stdout, r.stdout
