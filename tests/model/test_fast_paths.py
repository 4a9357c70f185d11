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
