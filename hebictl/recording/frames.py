"""The arm's link frames as ``foxglove.FrameTransforms``, named as in the URDF hebictl exports.

Foxglove's 3D panel draws each URDF link in the frame of the same name and takes the frames'
poses from transform messages. A frame has one parent, so each link is published relative to its
URDF parent link (``inverse(T_world_parent) @ T_world_child`` from the model's forward kinematics),
which is exactly the tree the URDF declares; a root link the exporter adds (``world``) is the world
origin. When the URDF has no such root, a ``world`` frame is published above the first link so a
layout can always use ``world`` as its display frame (the shipped layout does).
"""

from __future__ import annotations

import numpy as np
from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from lxml import etree
from scipy.spatial.transform import Rotation

from hebictl._typing import FloatArray
from hebictl.formats.urdf.writer import write_urdf
from hebictl.formats.writers import body_names
from hebictl.model.robot import RobotModel

WORLD = "world"


class LinkFrames:
    """Turns a joint position into one FrameTransforms message for every link of ``model``."""

    def __init__(self, model: RobotModel) -> None:
        self.model = model
        self.names = body_names(model)  # the link names write_urdf gives the same model
        self.parents = [b.parent for b in model.bodies]
        self._child = np.array([i for i, p in enumerate(self.parents) if p >= 0], dtype=np.intp)
        self._parent = np.array([p for p in self.parents if p >= 0], dtype=np.intp)
        self.urdf = write_urdf(model)
        # the link the exporter added above the bodies, if any ("world", or a unique variant of it)
        tree = etree.fromstring(self.urdf.encode())
        added = {link.get("name") for link in tree.iter("link")} - set(self.names)
        self.root = added.pop() if added else WORLD
        # a top-level body that is itself called like the root is the world frame: nothing to publish for it
        self.child_frames = tuple(n for i, n in enumerate(self.names)
                                  if not (self.parents[i] < 0 and n == self.root))

    def frame_ids(self) -> tuple[str, ...]:
        """Every child frame published (each URDF link, except the exporter's root)."""
        return self.child_frames

    def relative_poses(self, q: FloatArray) -> FloatArray:
        """(n_links, 4, 4): each link's pose in its parent link (top links: in the world)."""
        world = self.model.link_poses(q)
        out = world.copy()
        child, parent = self._child, self._parent
        if child.size:  # the rigid inverse of the parent's pose: R^T, -R^T p (no general 4x4 solve per link)
            Rp_t = world[parent, :3, :3].transpose(0, 2, 1)
            out[child, :3, :3] = Rp_t @ world[child, :3, :3]
            out[child, :3, 3] = (Rp_t @ (world[child, :3, 3] - world[parent, :3, 3])[:, :, None])[:, :, 0]
        return out

    def message(self, q: FloatArray, stamp_ns: int, *, prefix: str = "",
                base: FloatArray | None = None) -> FrameTransforms:
        """Every link's transform at ``q``. ``prefix`` (a multi-arm recording's ``NAME/``) goes before
        every frame name, the root's too; the prefixed root is then placed in ``world`` at ``base``
        (4x4, identity if None)."""
        rel = self.relative_poses(q)
        quats = Rotation.from_matrix(rel[:, :3, :3]).as_quat()  # x, y, z, w
        msg = FrameTransforms()
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        for i, name in enumerate(self.names):
            p = self.parents[i]
            parent = self.names[p] if p >= 0 else self.root  # top-level links hang off the world
            if parent == name:
                continue
            _transform(msg, sec, nsec, prefix + parent, prefix + name, rel[i, :3, 3], quats[i])
        if prefix:
            pose = np.eye(4) if base is None else np.asarray(base, dtype=float)
            _transform(msg, sec, nsec, WORLD, prefix + self.root, pose[:3, 3],
                       Rotation.from_matrix(pose[:3, :3]).as_quat())
        return msg


def _transform(msg: FrameTransforms, sec: int, nsec: int, parent: str, child: str, xyz: FloatArray,
               quat: FloatArray) -> None:
    tf = msg.transforms.add()
    tf.timestamp.seconds, tf.timestamp.nanos = sec, nsec
    tf.parent_frame_id = parent
    tf.child_frame_id = child
    tf.translation.x, tf.translation.y, tf.translation.z = (float(x) for x in xyz)
    tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w = (float(x) for x in quat)
