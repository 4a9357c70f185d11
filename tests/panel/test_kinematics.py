"""The panel draws arms from the JSON tree of ``state/description`` alone: its forward kinematics
must agree with hebi-py's own model of the same HRDF kit (an independent implementation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.formats import load_model
from hebictl.panel.kinematics import DescribedArm
from hebictl.teleop.description import kinematic_tree

REPO = Path(__file__).resolve().parents[2]
KITS = ["x-series-6dof", "r-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder"]


@pytest.mark.parametrize("kit", KITS)
def test_end_effector_matches_hebi_py(kit: str) -> None:
    hebi = pytest.importorskip("hebi")
    cfg = load_config(REPO / "configs" / f"{kit}.cfg.yaml")
    model = load_model(cfg.hrdf)
    tree = json.loads(json.dumps(kinematic_tree(model)))  # exactly what crosses the broker
    arm = DescribedArm(tree)
    ref = hebi.robot_model.import_from_hrdf(str(cfg.hrdf))
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform(-2.0, 2.0, model.dof)
        np.testing.assert_allclose(arm.end_effector(q.tolist()), ref.get_end_effector(q), atol=1e-12)


def test_output_frames_lie_on_the_drawn_arm() -> None:
    """Every actuator output frame of hebi-py coincides with a drawn body origin (the stick figure
    passes through the joints, it is not merely right at the tip)."""
    hebi = pytest.importorskip("hebi")
    cfg = load_config(REPO / "configs" / "x-series-6dof.cfg.yaml")
    model = load_model(cfg.hrdf)
    arm = DescribedArm(kinematic_tree(model))
    ref = hebi.robot_model.import_from_hrdf(str(cfg.hrdf))
    q = np.array([0.3, 1.1, 1.7, -0.4, 0.9, 0.2])
    origins = arm.body_poses(q.tolist())[:, :3, 3]
    for T in ref.get_forward_kinematics("output", q)[:-1]:  # the last is the end effector (checked above)
        assert np.min(np.linalg.norm(origins - np.asarray(T)[:3, 3], axis=1)) < 1e-9
    segs = np.array(arm.segments(arm.body_poses(q.tolist())))
    assert segs.shape[1] == 6 and len(segs) >= model.dof


def test_bad_trees_are_refused() -> None:
    with pytest.raises(ValueError):
        DescribedArm({"base": np.eye(4).tolist(), "bodies": [
            {"name": "a", "parent": 1, "placement": np.eye(4).tolist(), "joint": {"kind": "fixed"}}]})
    with pytest.raises(ValueError):
        DescribedArm({"base": [[1, 0], [0, 1]], "bodies": []})
