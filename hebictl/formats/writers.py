"""What every writer shares: valid output names, skeleton bones, and refusing what a format cannot say.

The writers live in their formats' folders (:mod:`hebictl.formats.urdf.writer`,
:mod:`hebictl.formats.sdf.writer`, :mod:`hebictl.formats.mjcf.writer`) and are chosen by
:func:`hebictl.formats.convert`; the helpers here keep their output names valid and refuse what a
target format cannot express rather than write a file that means something else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats.building import unique
from hebictl.model.tree import JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


def body_names(model: RobotModel) -> list[str]:
    """One unique, non-empty name per body (original names kept where they are already unique)."""
    used: set[str] = set()
    out: list[str] = []
    counts: dict[str, int] = {}
    for b in model.bodies:
        counts[b.name] = counts.get(b.name, 0) + 1
    for i, b in enumerate(model.bodies):
        base = b.name if b.name and counts[b.name] == 1 else (f"{b.name}_{i}" if b.name else f"body{i}")
        out.append(unique(_clean(base), used))
    return out


def _clean(name: str) -> str:
    # XML attributes hold any text, but control characters make files unreadable for other tools
    return re.sub(r"[\x00-\x1f]", "_", name)


def check_expressible(model: RobotModel, fmt: str, path: object = None) -> None:
    """Refuse joint scales (HRDF gear ratios) and joint kinds ``fmt`` has no way to state."""
    for b in model.bodies:
        j = b.joint
        if j.kind is not JointKind.FIXED and j.scale != 1.0:
            raise FormatError(f"joint {j.name!r} has scale {j.scale:g} (an HRDF gear_ratio of {1.0 / j.scale:g}): "
                              f"{fmt.upper()} joints move by their coordinate itself, so the model cannot be written "
                              "without changing what q means", None if path is None else str(path))
        if fmt == "urdf" and j.kind is JointKind.BALL:
            raise FormatError(f"joint {j.name!r} is a ball joint, which URDF cannot express",
                              None if path is None else str(path))


def bones(model: RobotModel) -> dict[int, list[FloatArray]]:
    """Per body, the origins of its children (body frame) — simple stick visuals for bodies without any."""
    out: dict[int, list[FloatArray]] = {}
    for b in model.bodies:
        if b.parent >= 0 and float(np.linalg.norm(b.placement[:3, 3])) > 1e-6:
            out.setdefault(b.parent, []).append(b.placement[:3, 3].copy())
    return out
