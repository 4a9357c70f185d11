"""The default table (a config without ``user_data.workspace``) is only checked where it is
consistent with the arm: a kit whose zero or home pose already reaches below its base plane (a
hanging or wall-mounted arm, e.g. HEBI's A-2303-01 in the corpus) keeps its self-collision checks,
with a warning naming the body and the pose; a declared table is always checked."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hebictl.collision.attach import attach_from_config
from hebictl.errors import ConfigWarning
from hebictl.formats import load_model
from hebictl.resources import bundled_kit


def _model():
    return load_model(bundled_kit("x-series-6dof.hrdf"))


def _pose_below_the_base_plane(model) -> np.ndarray:
    """A pose of the bundled 6-DoF kit that puts a link below z = 0 (found, not assumed)."""
    world = attach_from_config(model, {"workspace": {}})
    rng = np.random.default_rng(3)
    for _ in range(500):
        q = rng.uniform(-2.5, 2.5, model.dof)
        if any(v.kind == "workspace" for v in world.violations(q).values()):
            return q
    raise AssertionError("no pose of the kit reaches below its base plane")


def test_a_home_pose_below_the_undeclared_table_drops_it_with_a_warning():
    model = _model()
    home = _pose_below_the_base_plane(model)
    with pytest.warns(ConfigWarning, match="default table at the base plane would cut the arm at its home pose"):
        world = attach_from_config(model, {"home_position": home.tolist()}, "kit.cfg.yaml")
    assert not any(v.kind == "workspace" for v in world.violations(home).values())


def test_a_declared_table_is_kept_even_where_the_home_pose_cuts_it():
    model = _model()
    home = _pose_below_the_base_plane(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        world = attach_from_config(model, {"home_position": home.tolist(), "workspace": {"table": {"height": 0.0}}})
    assert any(v.kind == "workspace" for v in world.violations(home).values())


def test_the_undeclared_table_stays_where_the_arm_is_above_it():
    model = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        world = attach_from_config(model, {"home_position": [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]})
    q = _pose_below_the_base_plane(model)
    assert any(v.kind == "workspace" for v in world.violations(q).values())
