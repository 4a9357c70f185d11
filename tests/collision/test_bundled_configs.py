"""The bundled configs are right (issue 19.6): every home is collision-free with the default table,
and the README's statements about the limits hold (forward kinematics + the collision model)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.collision.attach import attach_from_config
from hebictl.config import load_config
from hebictl.formats import load_model
from tests.conftest import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")


def _setup(name):
    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    model = load_model(cfg.hrdf)
    world = attach_from_config(model, cfg.user_data, cfg.path)
    limits = cfg.user_data["joint_limits"]
    lo, hi = np.array(limits["position_min"], float), np.array(limits["position_max"], float)
    return cfg, model, world, lo, hi, np.array(cfg.user_data["home_position"], float)


def _joint(model, word):
    return next(i for i, n in enumerate(model.joint_names) if word in n.lower())


def _output_z(model, q, joint):
    names = [f.name for f in model.frames if f.kind == "output"]
    return model.forward_kinematics(q, "output")[..., names.index(model.joint_names[joint]), 2, 3]


@pytest.mark.parametrize("name", CONFIGS)
def test_home_is_inside_the_limits_above_the_table_and_free_of_self_collision(name):
    _, model, world, lo, hi, home = _setup(name)
    assert np.all((lo <= home) & (home <= hi))
    assert world.workspace.shapes[0].name == "table" and world.workspace.table_height == 0.0
    assert world.violations(home) == {}, world.violations(home)
    self_d, table_d = world.min_distances(home)
    print(f"{name}: home clear of itself by {self_d * 1000:.0f} mm and of the table by "
          f"{table_d * 1000 if np.isfinite(table_d) else np.inf:.0f} mm beyond the clearances")


@pytest.mark.parametrize("name", CONFIGS)
def test_shoulder_range_keeps_the_elbow_5_cm_up_and_the_arm_clear_of_itself(name):
    """README: the shoulder's limits keep the elbow >= 5 cm above the base plane over the whole
    range (the elbow's height does not depend on the joints after it); no self-collision on the way."""
    _, model, world, lo, hi, home = _setup(name)
    s, e = _joint(model, "shoulder"), _joint(model, "elbow")
    qs = np.repeat(home[None], 301, axis=0)
    qs[:, s] = np.linspace(lo[s], hi[s], 301)
    z = _output_z(model, qs, e)
    assert z.min() >= 0.05, f"elbow at {z.min():.3f} m"
    assert not [q for q in qs if any(p.kind == "self" for p in world.violations(q).values())]
    print(f"{name}: lowest elbow {z.min() * 1000:.0f} mm over the shoulder range [{lo[s]}, {hi[s]}]")


@pytest.mark.parametrize("name", CONFIGS)
def test_elbow_range_keeps_the_wrist_up_and_the_forearm_off_the_upper_arm(name):
    """README: with the shoulder at home the wrist stays above the base plane over the elbow's range,
    the forearm never folds past 2.7 rad and never reaches into the upper arm (self collision)."""
    _, model, world, lo, hi, home = _setup(name)
    e = _joint(model, "elbow")
    assert max(abs(lo[e]), abs(hi[e])) <= 2.7
    qs = np.repeat(home[None], 301, axis=0)
    qs[:, e] = np.linspace(lo[e], hi[e], 301)
    z = _output_z(model, qs, e + 1)
    assert z.min() > 0.0
    bad = [(q[e], p) for q in qs for p in world.violations(q).values() if p.kind == "self"]
    assert not bad, bad[:1]


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_stay_loadable_by_hebi_py(hebi, name):
    cfg = hebi.config.load_config(str(REPO_ROOT / "configs" / f"{name}.cfg.yaml"))
    assert cfg.user_data["workspace"]["table"] == {"height": 0.0, "clearance": 0.0, "physical": False}
