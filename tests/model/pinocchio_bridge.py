"""Build a pinocchio model straight from a hebictl tree (no file in between).

Used to check hebictl's kernels against pinocchio's own algorithms, joint by joint: fixed
bodies are merged into their parent joint like every URDF loader does.
"""

from __future__ import annotations

import numpy as np

from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind


def to_pinocchio(model: RobotModel):
    import pinocchio as pin

    pm = pin.Model()
    # for every body: (pinocchio joint id, pose of the body frame in that joint's frame at q=0)
    attach: list[tuple[int, np.ndarray]] = []
    for b in model.bodies:
        if b.parent < 0:
            pj, pose = 0, model.base.copy()
        else:
            pj, pose = attach[b.parent]
        placement = pose @ b.placement
        j = b.joint
        if j.kind is JointKind.FIXED:
            jid, body_pose = pj, placement
        else:
            assert j.scale == 1.0, "pinocchio has no joint scale; test scale separately"
            axis = np.array(j.axis)
            if j.kind is JointKind.REVOLUTE:
                jm = pin.JointModelRevoluteUnaligned(axis)
            elif j.kind is JointKind.PRISMATIC:
                jm = pin.JointModelPrismaticUnaligned(axis)
            elif j.kind is JointKind.BALL:
                jm = pin.JointModelSpherical()
            else:
                jm = pin.JointModelFreeFlyer()
            jid = pm.addJoint(pj, jm, pin.SE3(placement[:3, :3], placement[:3, 3]), j.name)
            body_pose = np.eye(4)
        attach.append((jid, body_pose))
        inert = b.inertia
        com_j = body_pose[:3, :3] @ np.array(inert.com) + body_pose[:3, 3]
        I_j = body_pose[:3, :3] @ np.array(inert.rotational) @ body_pose[:3, :3].T
        pm.appendBodyToJoint(jid, pin.Inertia(inert.mass, com_j, I_j), pin.SE3.Identity())
        pm.addFrame(pin.Frame(b.name, jid, 0, pin.SE3(body_pose[:3, :3], body_pose[:3, 3]), pin.FrameType.BODY))
    return pm, attach


def q_to_pinocchio(model: RobotModel, q: np.ndarray) -> np.ndarray:
    """hebictl stores quaternions w x y z; pinocchio x y z w."""
    out = []
    for i in model.joint_bodies:
        kind = model.bodies[i].joint.kind
        s = model.coordinate_index(i)[0]
        if kind is JointKind.BALL:
            w, x, y, z = q[s:s + 4]
            out.extend([x, y, z, w])
        elif kind is JointKind.FREE:
            out.extend(q[s:s + 3])
            w, x, y, z = q[s + 3:s + 7]
            out.extend([x, y, z, w])
        else:
            out.append(q[s])
    return np.array(out)
