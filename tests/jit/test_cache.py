"""Start-up of the registered kernels (hebictl.jit.cache): numba imported on first use, interpreted
kernels on a cold cache, the background compile generated from the declared signatures.

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

from hebictl import jit
from hebictl.formats import load_model
from hebictl.jit import cache, registry
from hebictl.model import kernels
from hebictl.model.tree import JointKind
from tests._support.paths import REPO_ROOT
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
        return (Q, fs.packed, np.zeros((*lead, len(fs.body), 4, 4)))
    if name.startswith("jacobians"):
        fs = model._frame_sets["com"]
        return (Q, fs.packed, np.zeros((*lead, len(fs.body), 6, model.nv)))
    if name.startswith("gravity"):
        return (Q, gravity, model._packed, np.zeros((*lead, model.nv)))
    if name == "damped_least_squares":  # not a model kernel: a (6, nv) system made of the state
        J = np.cos(np.add.outer(np.arange(6.0), np.resize(np.asarray(qd, dtype=np.float64), model.nv)))
        return (J, np.resize(np.asarray(qdd, dtype=np.float64), 6), 1e-2, np.zeros(model.nv))
    return (Q, V, A, gravity, model._packed, np.zeros((*lead, model.nv)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interpreted_kernels_equal_the_compiled_ones(seed):
    """FK, Jacobians, gravity and inverse dynamics of every joint kind: interpreted == compiled to 1e-12."""
    rng = np.random.default_rng(seed)
    interpreted = jit.interpreted_namespace(kernels.__name__)
    models = [random_tree(seed, n=9, kinds=ALL_KINDS, root=JointKind.FREE if seed == 2 else None)]
    if seed == 0:
        models.append(load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf"))
    for model in models:
        q, qd, qdd = random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        g = np.array([0.3, -0.2, -9.81])
        for name in jit.entry_kernels(kernels.__name__):
            slow, fast = _args(model, name, q, qd, qdd, g), _args(model, name, q, qd, qdd, g)
            interpreted[name](*slow)
            jit.dispatcher_of(kernels.__name__, name)(*fast)
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
    km = registry.module_of(kernels.__name__)
    km.materialize()
    warm = cache.warm_up_of(km)
    monkeypatch.setattr(warm, "decided", True)  # cold, and no background process from a test
    monkeypatch.setattr(warm, "warm", False)
    monkeypatch.setenv("HEBICTL_JIT", "auto")
    calls: dict[str, list] = {"gravity": [], "gravity_batch": []}
    namespace = dict(km.interpreted())
    for name in calls:
        entry = km.entries[name]
        monkeypatch.setattr(kernels, name, entry)  # the wrapper, as before the first call
        monkeypatch.setattr(jit.direct(kernels.__name__), name, entry)
        namespace[name] = lambda *a, f=namespace[name], c=calls[name]: c.append(a) or f(*a)
    monkeypatch.setattr(km, "interpreted", lambda: namespace)
    single = model.gravity_compensation(model.neutral_configuration())
    small = model.gravity_compensation(np.zeros((2, model.nq)))
    assert len(calls["gravity"]) == 1 and kernels.gravity is km.entries["gravity"]
    assert len(calls["gravity_batch"]) == 1 and kernels.gravity_batch is km.entries["gravity_batch"]
    assert single.shape == (model.nv,) and small.shape == (2, model.nv) and np.abs(single).max() > 0.1
    model.gravity_compensation(np.zeros((jit.INTERPRETED_MAX_BATCH + 1, model.nq)))
    assert len(calls["gravity_batch"]) == 1 and kernels.gravity_batch is km.entries["gravity_batch"].dispatcher


def test_compile_process_fills_the_cache_and_writes_the_stamps(tmp_path):
    """``python -m hebictl.jit.compile MODULE...`` compiles every declared signature (nothing else:
    it knows no caller) and leaves each module's stamp, no lock; without a module it says how to call it."""
    env = {**os.environ, "HEBICTL_JIT": "eager", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    names = ["hebictl.control.cycle_kernels", "hebictl.control.monitors.kernels"]
    r = subprocess.run([sys.executable, "-m", "hebictl.jit.compile", *names], env=env, capture_output=True,
                       text=True, timeout=600, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stderr
    stamps = sorted(p.name for p in (tmp_path / "numba").rglob("*.warm"))
    assert len(stamps) == 2 and all(s.startswith("hebictl-kernels-") for s in stamps), stamps
    assert not list((tmp_path / "numba").rglob("*.lock"))
    r = subprocess.run([sys.executable, "-m", "hebictl.jit.compile"], env=env, capture_output=True, text=True,
                       timeout=300, cwd=REPO_ROOT)
    assert r.returncode == 2 and "usage" in r.stderr


def test_stamp_names_the_kernel_source():
    """The stamp lives beside numba's cache and changes with the kernels' source (hash in its name)."""
    stamp = jit.stamp_path(kernels.__name__)
    assert stamp is not None and stamp.name.startswith("hebictl-kernels-") and stamp.suffix == ".warm"


def test_cold_start_compiles_every_kernel_module_in_one_background_process(tmp_path):
    """A fresh install's first arm loop: the control and monitor kernels have no stamp, so they are
    decided cold and the arm's cycles run them interpreted while one background process compiles
    every cold registered module and stamps each; the loop ends up on the compiled kernels of all
    of them without restarting.

    The model kernels come warm from this checkout's numba cache (index, machine code and stamp,
    when current; otherwise they start cold too): compiling them from nothing took 53 of this
    test's 56 s of CPU and adds nothing to what it checks. Their interpreted path is checked by
    test_cold_cache_interprets_small_batches_and_compiles_large_ones and
    test_interpreted_kernels_equal_the_compiled_ones; their compile from nothing runs on every
    fresh install (``python -m hebictl.jit.compile`` in `tools/dev`), and an edit of their source
    recompiles them in the first test that calls one."""
    code = f"""
import shutil
import time
from collections import Counter
from pathlib import Path
from hebictl.control import cycle_kernels
from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.control.monitors import kernels as monitor_kernels
from hebictl.jit import cache, entry_kernels, Kernel, registry, stamp_path
from hebictl.model import kernels

MODULES = (kernels, cycle_kernels, monitor_kernels)
# the model kernels' numba cache (index, machine code and stamp) as this checkout has it, when it is
# current; the control and monitor kernels start cold (no cache, no stamp) and compile from nothing
seed_from, model_stamp = Path(kernels.__file__).parent / "__pycache__", stamp_path(kernels.__name__)
seeded = (seed_from / model_stamp.name).is_file()
if seeded:
    model_stamp.parent.mkdir(parents=True, exist_ok=True)
    for f in [*seed_from.glob("kernels.*.nbi"), *seed_from.glob("kernels.*.nbc"), seed_from / model_stamp.name]:
        shutil.copy2(f, model_stamp.parent / f.name)
COLD = (cycle_kernels, monitor_kernels) if seeded else MODULES
assert not any(stamp_path(m.__name__).exists() for m in COLD)

def entries(m):
    return [getattr(m, k) for k in entry_kernels(m.__name__)]

# count the calls that ran interpreted, per module (observed only: the kernels are unchanged)
interpreted_calls = Counter()
as_interpreted = registry.KernelModule.interpreted
def counting(km):
    interpreted_calls[km.name] += 1
    return as_interpreted(km)
registry.KernelModule.interpreted = counting

arm = Arm.from_config({str(REPO_ROOT / 'configs' / 'x-series-6dof.cfg.yaml')!r}, backend="mock", clock=SimClock())
arm.update()
arm.send()
deadline = time.monotonic() + 400
while time.monotonic() < deadline and any(isinstance(k, Kernel) for m in MODULES for k in entries(m)):
    arm.update()
    arm.send()
    time.sleep(0.001)
assert not any(isinstance(k, Kernel) for m in MODULES for k in entries(m)), "never swapped in"
assert len(cache.compile_processes()) == 1, cache.compile_processes()
for m in MODULES:
    assert stamp_path(m.__name__).exists(), m.__name__
cold = [m.__name__ for m in MODULES if not cache.warm_up_of(registry.module_of(m.__name__)).warm]
assert cycle_kernels.__name__ in cold, cold
assert interpreted_calls[cycle_kernels.__name__] > 0, "cold cache: the control cycle ran interpreted first"
print("model kernels", "seeded" if seeded else "cold", "; decided cold at their first call:", cold,
      "; calls run interpreted:", dict(interpreted_calls))
print("ok", arm.state)
"""
    env = {**os.environ, "HEBICTL_JIT": "auto", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                       cwd=REPO_ROOT)
    assert r.returncode == 0, r.stderr
    assert "ok ArmState.RUNNING" in r.stdout or "ok running" in r.stdout, r.stdout
    print(r.stdout)
