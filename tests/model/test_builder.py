"""ModelBuilder (hebictl.model.builder): the checks every reader relies on, and what build() freezes."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.errors import ModelError
from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Inertia, Joint, JointKind


def _arm() -> ModelBuilder:
    b = ModelBuilder("arm", source="arm.test", format="test")
    base = b.add_body("base", -1, inertia=Inertia(1.0))
    shoulder = b.add_body("shoulder", base, np.eye(4), Joint("j1"), Inertia(0.5, (0.0, 0.0, 0.1)))
    b.add_body("slider", shoulder, np.eye(4), Joint("j2", JointKind.PRISMATIC, axis=(1, 0, 0)))
    b.add_body("wrist", shoulder, np.eye(4), Joint("j3", JointKind.BALL))
    b.add_frame("end_effector", 3, name="tool")
    return b


def test_build_freezes_bodies_frames_and_coordinates():
    """build() gives a RobotModel with the bodies in order, coordinates per joint and the metadata."""
    model = _arm().build(gravity=(0.0, 0.0, -3.7), metadata={"k": 1})
    assert isinstance(model, RobotModel)
    assert model.link_names == ("base", "shoulder", "slider", "wrist")
    assert model.joint_names == ("j1", "j2", "j3")
    assert (model.nq, model.nv) == (1 + 1 + 4, 1 + 1 + 3)
    assert model.q_names == ("j1", "j2", "j3_qw", "j3_qx", "j3_qy", "j3_qz")
    assert model.coordinate_index(3) == (2, 2)
    assert model.frame_names("end_effector") == ("tool",)
    assert (model.name, model.source, model.format, model.metadata) == ("arm", "arm.test", "test", {"k": 1})
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -3.7])
    assert model.total_mass == pytest.approx(1.5)


def test_bodies_view_is_read_only():
    b = _arm()
    assert isinstance(b.bodies, tuple) and len(b.bodies) == 4


@pytest.mark.parametrize(("action", "message"), [
    (lambda b: b.add_body("x", 7), "parent index 7 does not exist"),
    (lambda b: b.add_body("x", -2), "parent index -2"),
    (lambda b: b.add_body("x", 0, joint=Joint("j1")), "duplicate joint name 'j1'"),
    (lambda b: b.add_body("x", 0, joint=Joint("", JointKind.REVOLUTE)), "needs a name"),
    (lambda b: b.add_body("x", 0, placement=np.ones((3, 3))), "placement of 'x'"),
    (lambda b: b.add_frame("output", 9), "body index 9 does not exist"),
    (lambda b: b.add_frame("output", 0, offset=np.full((4, 4), np.nan)), "offset of frame"),
    (lambda b: b.build(base=np.eye(3)), "base transform"),
    (lambda b: b.build(gravity=(0, 0)), "gravity"),
])
def test_builder_refuses_inconsistent_trees(action, message):
    """Parents must exist already (topological order), moving joints need unique names."""
    with pytest.raises(ModelError, match=message):
        action(_arm())


def test_fixed_joints_may_share_the_empty_name():
    """Only moving joints are named; any number of rigid connections may be anonymous."""
    b = _arm()
    b.add_body("bracket1", 1)
    b.add_body("bracket2", 1)
    assert b.build().joint_names == ("j1", "j2", "j3")


def test_builder_is_public_and_not_in_tree():
    """``hebictl.ModelBuilder`` is the builder; tree.py holds only data types (no import cycle)."""
    import hebictl
    from hebictl.model import tree

    assert hebictl.ModelBuilder is ModelBuilder
    assert not hasattr(tree, "ModelBuilder")
