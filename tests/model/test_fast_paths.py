"""The single-configuration calls pass their arguments to the kernels' compiled entry points
unchecked by numba (hebictl.jit.direct), so every input form must be turned into exactly the
declared types first: lists, ints, strided views and a gravity set as a list give the same
numbers as C-contiguous float64 arrays, and what cannot be converted is a ModelError."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.errors import ModelError
from hebictl.formats import load_model
from tests._support.paths import REPO_ROOT


@pytest.fixture(scope="module")
def model():
    return load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")


def test_every_input_form_gives_the_float64_result(model):
    q = np.array([0.0, 1.0, 2.0, -1.0, 1.0, 0.0])
    g = np.array([0.0, 0.0, -9.81])
    forms = [q.tolist(), q.astype(np.int64), np.repeat(q, 2)[::2], q.astype(np.float32)]
    for x in forms:
        assert np.array_equal(model.forward_kinematics(x), model.forward_kinematics(q))
        assert np.array_equal(model.jacobian_end_effector(x), model.jacobian_end_effector(q))
        assert np.array_equal(model.gravity_compensation(x, [0, 0, -9.81]), model.gravity_compensation(q, g))
        assert np.array_equal(model.inverse_dynamics(x, x, x, g), model.inverse_dynamics(q, q, q, g))
    assert np.abs(model.gravity_compensation(q, g)).max() > 1.0


def test_gravity_is_validated_where_it_is_set(model):
    before = model.gravity.copy()
    try:
        model.gravity = [0, 0, -5]  # ints, a list: stored as float64
        assert model.gravity.dtype == np.float64 and model.gravity.flags.c_contiguous
        q = model.neutral_configuration()
        assert np.allclose(model.gravity_compensation(q), model.gravity_compensation(q, [0.0, 0.0, -5.0]))
        with pytest.raises(ModelError, match="gravity"):
            model.gravity = [0.0, -9.81]
    finally:
        model.gravity = before


def test_an_output_buffer_must_be_writeable(model):
    q = model.neutral_configuration()
    out = np.empty((model.frame_count("output"), 4, 4))
    out.flags.writeable = False
    with pytest.raises(ModelError, match="writeable"):
        model.forward_kinematics(q, out=out)
    with pytest.raises(ModelError):
        model.forward_kinematics(q, out=[[0.0]])


def _expected(model, qs):
    g = np.array([0.0, 0.0, -9.81])
    return [(model.forward_kinematics(q), model.jacobian_end_effector(q), model.gravity_compensation(q, g),
             model.inverse_dynamics(q, q, q, g)) for q in qs]


def test_threads_share_the_held_scratch_safely(model):
    """The single-call FK, Jacobian and gravity kernels reuse scratch held in the packed model
    (hebictl.jit.exclusive): four threads calling them on one model with their own
    configurations, beside a thread running batches (which release the GIL and allocate their
    own scratch), get exactly the single-threaded results."""
    import threading

    rng = np.random.default_rng(7)
    per_thread = [rng.uniform(-np.pi, np.pi, (50, model.nq)) for _ in range(4)]
    expected = [_expected(model, qs) for qs in per_thread]
    Q = rng.uniform(-np.pi, np.pi, (3000, model.nq))
    batch_expected = model.forward_kinematics(Q)
    g = np.array([0.0, 0.0, -9.81])
    wrong = []

    def single(k):
        for _ in range(40):
            for q, want in zip(per_thread[k], expected[k], strict=True):
                got = (model.forward_kinematics(q), model.jacobian_end_effector(q), model.gravity_compensation(q, g),
                       model.inverse_dynamics(q, q, q, g))
                wrong.extend(k for a, b in zip(got, want, strict=True) if not np.array_equal(a, b))

    def batches():
        for _ in range(20):
            if not np.array_equal(model.forward_kinematics(Q), batch_expected):
                wrong.append("batch")

    threads = [threading.Thread(target=single, args=(k,)) for k in range(4)] + [threading.Thread(target=batches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = 4 * 40 * 50 * 4
    print(f"{calls} single calls in 4 threads beside 20 batches of {len(Q)}: {len(wrong)} differ")
    assert not wrong


_INTERPRETED_THREADS = """
import sys, threading
import numpy as np
from hebictl.formats import load_model
model = load_model(sys.argv[1])
rng = np.random.default_rng(3)
qs = [rng.uniform(-np.pi, np.pi, (40, model.nq)) for _ in range(4)]
expected = [[model.forward_kinematics(q) for q in x] for x in qs]  # one thread: nothing to share
wrong = []
def run(k):
    for q, want in zip(qs[k], expected[k]):
        if not np.array_equal(model.forward_kinematics(q), want):
            wrong.append(k)
sys.setswitchinterval(1e-5)
threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
from hebictl.model import kernels
print(type(kernels.frame_poses).__name__, len(wrong))
"""


def test_interpreted_kernels_do_not_share_the_held_scratch():
    """Run interpreted (HEBICTL_JIT=interpreted, as with a cold cache), a kernel does not hold the
    GIL through a call: four threads calling FK on one model with a thread switch every 10 µs
    still get the single-threaded results, because jit.exclusive gives each interpreted call a
    private copy of the held scratch (with the region itself instead, 108 of 160 results differed)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HEBICTL_JIT": "interpreted"}
    kit = REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf"
    run = subprocess.run([sys.executable, "-c", _INTERPRETED_THREADS, str(kit)], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    kind, wrong = run.stdout.split()
    print(f"interpreted FK, 4 threads x 40 calls on one model, switch every 10 µs: {wrong} differ")
    assert kind == "Kernel"  # still the interpreted wrapper: numba never compiled it
    assert wrong == "0"


def test_the_fk_kernel_checks_sizes_and_strides(model):
    """forward_kinematics hands a float64 vector and out straight to the kernel, which checks
    their sizes and strides itself: a strided out or q, or a wrong length, never reaches the
    arithmetic (a ModelError, or the checked path's copy), and an out of the right layout is filled."""
    q = np.array([0.0, 1.0, 2.0, -1.0, 1.0, 0.0])
    want = model.forward_kinematics(q.tolist())
    n = model.frame_count("output")
    strided_out = np.zeros((n, 4, 8))[:, :, ::2]
    with pytest.raises(ModelError, match="C-contiguous"):
        model.forward_kinematics(q, out=strided_out)
    assert not strided_out.any()
    with pytest.raises(ModelError, match="shape"):
        model.forward_kinematics(q, out=np.empty((n + 1, 4, 4)))
    with pytest.raises(ModelError, match="shape"):
        model.forward_kinematics(q[:5])
    assert np.array_equal(model.forward_kinematics(np.repeat(q, 3)[::3]), want)
    out = np.full((n, 4, 4), np.nan)
    assert model.forward_kinematics(q, out=out) is out and np.array_equal(out, want)
    with pytest.raises(ModelError, match="shape"):  # the unchecked path: the kernel declines, the checked call says why
        model.forward_kinematics_into(q, "output", np.empty((n - 1, 4, 4)))


def test_the_dynamics_kernels_check_sizes_and_strides(model):
    """gravity, RNEA and the Jacobians take float64 vectors straight to their kernels, which check
    every size and stride: a strided gravity or qd gives the contiguous result, a wrong length is a
    ModelError (also through the unchecked ``*_into`` paths, whose kernels decline and hand over to
    the checked calls)."""
    q = np.array([0.0, 1.0, 2.0, -1.0, 1.0, 0.0])
    g = np.array([0.0, 0.0, -9.81])
    # contiguous calls first: they install the kernels' compiled entry points, which take a strided
    # view as it is (the kernel declines it); numba's dispatcher would compile a strided signature
    tau = model.gravity_compensation(q, g)
    rnea = model.inverse_dynamics(q, q, q, g)
    jac = model.jacobians(q, "end_effector")
    assert np.array_equal(model.gravity_compensation(q, np.repeat(g, 2)[::2]), tau)
    assert np.array_equal(model.inverse_dynamics(q, np.repeat(q, 2)[::2], q, g), rnea)
    assert np.array_equal(model.jacobians(np.repeat(q, 2)[::2], "end_effector"), jac)
    with pytest.raises(ModelError, match="gravity"):
        model.gravity_compensation(q, np.zeros(2))
    with pytest.raises(ModelError, match="qd"):
        model.inverse_dynamics(q, q[:5], q, g)
    with pytest.raises(ModelError, match="shape"):
        model.jacobians(q, "end_effector", out=np.empty((2, 6, 5)))
    out = np.full(model.nv, np.nan)
    model.gravity_compensation_into(q, g, out)
    assert np.array_equal(out, tau)
    with pytest.raises(ModelError, match="gravity"):
        model.gravity_compensation_into(q, np.zeros(4), out)
    with pytest.raises(ModelError):
        model.inverse_dynamics_into(q, q, q, g, np.empty(model.nv + 1))
