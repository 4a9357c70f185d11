"""The first-run path of the model kernels: interpreted kernels, a background compile, the swap.

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


@pytest.fixture
def interpreted(monkeypatch):
    """The kernels module with interpreted entry kernels (as on a cold cache), restored afterwards."""
    for name in warmup.ENTRY_KERNELS:
        monkeypatch.setattr(kernels, name, getattr(kernels, name))  # restore whatever is there now
    monkeypatch.setenv("HEBICTL_JIT", "interpreted")
    monkeypatch.setattr(warmup, "_LAST_ARGS", {})
    compiled = {n: getattr(kernels, n) for n in warmup.ENTRY_KERNELS}
    for n, k in compiled.items():  # the dispatchers themselves, if a Kernel wraps them now
        monkeypatch.setattr(kernels, n, getattr(k, "dispatcher", k))
    warmup.install(kernels)
    assert all(isinstance(getattr(kernels, n), warmup.Kernel) for n in warmup.ENTRY_KERNELS)
    return kernels


def _queries(model, q, qd, qdd):
    return (model.forward_kinematics(q, frame="output"), model.jacobians(q, frame="com"),
            model.gravity_compensation(q), model.inverse_dynamics(q, qd, qdd))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interpreted_kernels_equal_the_compiled_ones(seed, interpreted, monkeypatch):
    """FK, Jacobians, gravity and inverse dynamics: interpreted == compiled to 1e-12."""
    rng = np.random.default_rng(seed)
    models = [random_tree(seed, n=9, kinds=ALL_KINDS, root=JointKind.FREE if seed == 2 else None)]
    if seed == 0:
        models.append(load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf"))
    for model in models:
        q, qd, qdd = random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        slow = _queries(model, q, qd, qdd)
        with monkeypatch.context() as m:
            for n in warmup.ENTRY_KERNELS:
                m.setattr(kernels, n, getattr(kernels, n).dispatcher)
            fast = _queries(model, q, qd, qdd)
        for a, b in zip(slow, fast, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_large_batches_compile_instead_of_interpreting(interpreted, monkeypatch):
    """A batch over INTERPRETED_MAX_BATCH is not interpreted: the compiled kernel runs and is swapped in."""
    monkeypatch.setenv("HEBICTL_JIT", "auto")
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    kernel = kernels.gravity_batch
    kernel.keep_interpreted = False
    kernel.warm.started = True  # no background process from a test
    model.gravity_compensation(np.zeros((warmup.INTERPRETED_MAX_BATCH + 1, model.nq)))
    assert kernels.gravity_batch is kernel.dispatcher


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
