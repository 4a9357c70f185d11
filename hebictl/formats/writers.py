"""Writing a RobotModel in another format, and what every writer shares.

``hebictl model convert FILE --to urdf|mjcf`` calls :func:`convert`. The writers themselves live
in :mod:`hebictl.formats.write_urdf` and :mod:`hebictl.formats.write_mjcf`; the helpers here keep
their output names valid and refuse what a target format cannot express rather than write a
file that means something else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.model.tree import JointKind

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


#: formats :func:`convert` can write, with the writer behind each
FORMATS = {"urdf": ("hebictl.formats.write_urdf", "write_urdf"),
           "mjcf": ("hebictl.formats.write_mjcf", "write_mjcf"),
           "sdf": ("hebictl.formats.write_sdf", "write_sdf")}


def convert(model: RobotModel, fmt: str) -> str:
    """The text of ``model`` written as ``fmt`` ("urdf", "mjcf" or "sdf")."""
    import importlib

    key = fmt.lower().lstrip(".")
    if key == "xml":
        key = "mjcf"
    if key not in FORMATS:
        raise FormatError(f"cannot write format {fmt!r}; known: {', '.join(sorted(FORMATS))}")
    module, func = FORMATS[key]
    return getattr(importlib.import_module(module), func)(model, None)


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


def unique(name: str, used: set[str], first_suffix: int = 2) -> str:
    """``name``, or ``name_2``, ``name_3``... whichever is not in ``used`` (which is updated).

    ``first_suffix`` is the number tried first after ``name`` itself.
    """
    out, k = name, first_suffix
    while out in used:
        out = f"{name}_{k}"
        k += 1
    used.add(out)
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
