"""The URDF link tree: one root, no link with two parents, no cycle; the order joints are added in;
and each joint with its child link added to the model (joints the kernels have no kind for as chains).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lxml import etree

import hebictl.formats.urdf.drake as drake
from hebictl.errors import ModelError
from hebictl.formats._xml import line_of
from hebictl.formats.building import joint_stages
from hebictl.formats.urdf.context import ReadContext
from hebictl.formats.urdf.joints import UrdfJoint
from hebictl.formats.urdf.links import UrdfLink
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Joint, JointKind


def check_tree(rc: ReadContext, links: dict[str, UrdfLink], joints: dict[str, UrdfJoint],
               root: etree._Element) -> tuple[str, dict[str, list[UrdfJoint]]]:
    """Check the link graph is one tree; return its root and each link's child joints (file order)."""
    parent_joint: dict[str, UrdfJoint] = {}
    children: dict[str, list[UrdfJoint]] = {}
    for j in joints.values():
        for role, lname in (("parent", j.parent), ("child", j.child)):
            if lname not in links:
                hint = (" (Drake treats 'world' as implicit; URDF needs <link name=\"world\"/>)"
                        if lname == "world" else "")
                raise rc.fail(f"joint {j.name!r}: {role} link {lname!r} is not defined{hint}", j.elem)
        if j.parent == j.child:
            raise rc.fail(f"joint {j.name!r} connects link {j.child!r} to itself", j.elem)
        if j.child in parent_joint:
            first = parent_joint[j.child]
            raise rc.fail(f"link {j.child!r} has two parents: joint {first.name!r} (line {line_of(first.elem)}) "
                          f"and joint {j.name!r}", j.elem)
        parent_joint[j.child] = j
        children.setdefault(j.parent, []).append(j)

    roots = [n for n in links if n not in parent_joint]
    if len(roots) > 1:
        raise rc.fail(f"URDF must have exactly one root link, found {len(roots)}: "
                      + ", ".join(repr(r) for r in roots[:5]) + (" ..." if len(roots) > 5 else ""),
                      links[roots[1]].elem)

    if not roots:
        raise rc.fail("the joints form a cycle: every link has a parent, so there is no root link", root)

    seen = {roots[0]}
    stack = [roots[0]]
    while stack:
        for j in children.get(stack.pop(), []):
            seen.add(j.child)
            stack.append(j.child)

    if len(seen) != len(links):
        loop = next(n for n in links if n not in seen)
        raise rc.fail(f"the joints form a cycle through link {loop!r} (not reachable from root "
                      f"{roots[0]!r})", parent_joint[loop].elem)

    return roots[0], children


def joint_order(root: str, joints: dict[str, UrdfJoint],
                children: dict[str, list[UrdfJoint]]) -> list[UrdfJoint]:
    """Joints in file order when that already lists parents first (hebictl's writer does), else depth first
    with children in file order (pinocchio's order)."""
    placed = {root}
    for j in joints.values():
        if j.parent not in placed:
            break
        placed.add(j.child)
    else:
        return list(joints.values())

    out: list[UrdfJoint] = []
    stack = list(reversed(children.get(root, [])))
    while stack:
        j = stack.pop()
        out.append(j)
        stack.extend(reversed(children.get(j.child, [])))

    return out


def add_joint(rc: ReadContext, builder: ModelBuilder, index: dict[str, int], j: UrdfJoint,
              child: UrdfLink) -> None:
    """The child link of a joint, on a joint of the kernel's kind (or a chain of them)."""
    parent = index[j.parent]
    meta = {**j.metadata, "urdf_type": j.type}
    if j.drake:
        meta["drake_joint"] = True

    try:
        if j.type in ("revolute", "continuous", "prismatic"):
            kind = JointKind.PRISMATIC if j.type == "prismatic" else JointKind.REVOLUTE
            joint = Joint(j.name, kind, tuple(j.axis), lower=j.lower, upper=j.upper, metadata=meta,
                          armature=j.armature, max_velocity=j.velocity, max_effort=j.effort, damping=j.damping,
                          friction=j.friction)
            index[child.name] = builder.add_body(child.name, parent, j.origin, joint, child.inertia,
                                                 child.metadata)
        elif j.type == "fixed":
            index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                 Joint(j.name, JointKind.FIXED, metadata=meta),
                                                 child.inertia, child.metadata)
        elif j.type == "floating":
            index[child.name] = builder.add_body(child.name, parent, j.origin,
                                                 Joint(j.name, JointKind.FREE, metadata=meta,
                                                       max_velocity=j.velocity, max_effort=j.effort,
                                                       damping=j.damping, friction=j.friction),
                                                 child.inertia, child.metadata)
        else:  # planar, ball, screw, universal: the chain SDF's Drake joints become
            index[child.name] = add_chain(builder, parent, j, child, meta)
    except ModelError as exc:
        raise rc.fail(f"joint {j.name!r}: {exc}", j.elem) from None


def add_chain(builder: ModelBuilder, parent: int, j: UrdfJoint, child: UrdfLink, meta: dict[str, Any]) -> int:
    """A joint the kernels have no kind for, as Drake defines it: massless bodies between one-DoF
    stages (:func:`hebictl.formats.building.joint_stages`); the child sits on the joint frame."""
    R = np.eye(3)
    if j.type == "planar":  # Drake: the plane's z is the axis, x/y the rotation closest to the joint frame
        R = drake.closest_rotation_from_z(j.axis)
        meta = {**meta, "planar_normal": tuple(j.axis)}

    axes = [np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])] if j.type == "universal" else [j.axis]
    stages = joint_stages(j.type, axes, [{"damping": j.damping}] * 2)
    dampings = meta.get("planar_damping", (0.0,) * 3)
    at = parent
    placement: np.ndarray | None = j.origin  # the first stage's; the later ones sit on the joint frame
    for k, (kind, axis, suffix, lim) in enumerate(stages):
        damping = dampings[k] if j.type == "planar" else lim.get("damping", 0.0)
        joint = Joint(j.name + suffix, kind, tuple(R @ axis), damping=damping, friction=j.friction,
                      max_velocity=j.velocity, max_effort=j.effort, armature=j.armature if k == 0 else 0.0,
                      metadata=meta)
        last = k == len(stages) - 1
        name = child.name if last else f"{child.name}__{j.name}{suffix}"
        at = builder.add_body(name, at, placement, joint, child.inertia if last else None,
                              child.metadata if last else {"synthetic": j.type, "joint": j.name})
        placement = None

    return at
