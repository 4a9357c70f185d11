"""ModelBuilder: the one way every reader turns a robot description into a RobotModel.

It lives apart from the data types of :mod:`hebictl.model.tree` because it is the only piece
that needs :class:`~hebictl.model.robot.RobotModel`; keeping it there made ``tree`` and
``robot`` import each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from numpy.typing import ArrayLike

from hebictl.errors import ModelError
from hebictl.model.bounds import check_body, check_gravity, check_translation
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Body, Frame, Inertia, Joint, JointKind, checked_pose, checked_vec3

__all__ = ["ModelBuilder"]


class ModelBuilder:
    """Collects bodies and frames in topological order and freezes them into a RobotModel."""

    def __init__(self, name: str = "robot", source: str | None = None, format: str = "hrdf") -> None:
        self.name = name
        self.source = source
        self.format = format
        self._bodies: list[Body] = []
        self._frames: list[Frame] = []
        self._joint_names: set[str] = set()

    @property
    def bodies(self) -> Sequence[Body]:
        return tuple(self._bodies)

    def add_body(self, name: str, parent: int, placement: ArrayLike | None = None,
                 joint: Joint | None = None, inertia: Inertia | None = None,
                 metadata: Mapping[str, Any] | None = None) -> int:
        """Append a body below ``parent`` (-1 = base) and return its index."""
        if not -1 <= parent < len(self._bodies):
            raise ModelError(f"body {name!r}: parent index {parent} does not exist yet")
        joint = joint or Joint.fixed()
        if joint.kind is not JointKind.FIXED:
            if not joint.name:
                raise ModelError(f"body {name!r}: a moving joint needs a name")
            if joint.name in self._joint_names:
                raise ModelError(f"duplicate joint name {joint.name!r}")
            self._joint_names.add(joint.name)
        pose = checked_pose(placement, f"placement of {name!r}")
        inertia = inertia or Inertia.zero()
        check_body(name, pose, joint, inertia, metadata)  # finite physics (issue 12.3)
        self._bodies.append(Body(name=name, parent=parent, placement=pose, joint=joint,
                                 inertia=inertia, metadata=dict(metadata or {})))
        return len(self._bodies) - 1

    def add_frame(self, kind: str, body: int, offset: ArrayLike | None = None,
                  name: str | None = None) -> int:
        """Attach a frame of ``kind`` to ``body`` (-1 = base) at ``offset`` (body frame)."""
        if not -1 <= body < len(self._bodies):
            raise ModelError(f"frame {name or kind!r}: body index {body} does not exist")
        pose = checked_pose(offset, f"offset of frame {name or kind}")
        check_translation(pose, f"frame {name or kind!r}")
        self._frames.append(Frame(kind=kind, body=body, offset=pose, name=name))
        return len(self._frames) - 1

    def build(self, base: ArrayLike | None = None, gravity: ArrayLike = (0.0, 0.0, -9.81),
              metadata: Mapping[str, Any] | None = None) -> RobotModel:
        """Freeze into a :class:`hebictl.model.robot.RobotModel` (compiles the kernel tables)."""
        base_pose, g = checked_pose(base, "base transform"), checked_vec3(gravity, "gravity")
        check_translation(base_pose, "the base transform")
        check_gravity(g)
        return RobotModel(name=self.name, bodies=tuple(self._bodies), frames=tuple(self._frames),
                          base=base_pose, gravity=g,
                          source=self.source, format=self.format, metadata=dict(metadata or {}))
