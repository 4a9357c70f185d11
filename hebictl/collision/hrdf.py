"""The collision shapes of an HRDF arm, derived from its element types and HEBI's element data.

An HRDF file names HEBI parts, not shapes, so the arm's body is built from one table
(:data:`ELEMENT_SHAPES`, documented in docs/collision.md): every actuator is a box (its housing:
footprint from HEBI's datasheets, height = the library's input-to-output distance), every link,
bracket and end effector a capsule along the segment from its input frame to its output frame
(an end effector's capsule starts one radius above its mounting face, so its rounded end does not
reach into the wrist it is bolted to)
(lengths, extension and twist come from the library through the model's frames, so they are
never restated here) with a radius per part family. ``rigid-body`` and ``joint`` elements carry no
shape (they have no extent HEBI describes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.collision.shapes import Shape, segment_pose
from hebictl.model.robot import RobotModel


@dataclass(frozen=True)
class ActuatorBox:
    """An actuator housing in its input frame: x from ``-back`` to ``front`` (the output axis is
    at x = 0, the rounded front end concentric with it), y +-``width``/2, z from 0 to the output."""

    back: float
    front: float
    width: float


#: Housing footprint per actuator family [m] (HEBI datasheets: X-series 110 x 74 mm, the output
#: 37 mm from the front; R8 120 x 86 mm; R25 160 x 120 mm). T-series share the X/R housings.
ACTUATOR_BOXES: Mapping[str, ActuatorBox] = {
    "X5": ActuatorBox(0.073, 0.037, 0.074), "X8": ActuatorBox(0.073, 0.037, 0.074),
    "T5": ActuatorBox(0.073, 0.037, 0.074), "T8": ActuatorBox(0.073, 0.037, 0.074),
    "R8": ActuatorBox(0.077, 0.043, 0.086), "T25": ActuatorBox(0.100, 0.060, 0.120),
    "R25": ActuatorBox(0.100, 0.060, 0.120),
}

#: Capsule radius [m] of links, brackets and end effectors per part (the tube or plate plus its
#: fasteners; the parallel grippers' fingers when open).
CAPSULE_RADII: Mapping[tuple[str, str], float] = {
    ("link", "X5"): 0.018, ("link", "R8"): 0.022, ("link", "R25"): 0.035, ("link", "R25-R8"): 0.03,
    ("bracket", "X5"): 0.02, ("bracket", "R8"): 0.025, ("bracket", "R25"): 0.035,
    ("end-effector", "Custom"): 0.015, ("end-effector", "X5Parallel"): 0.035,
    ("end-effector", "R8Parallel"): 0.04,
}

#: the table as docs/collision.md prints it: (element kind, type pattern, shape, size)
ELEMENT_SHAPES: tuple[tuple[str, str, str, str], ...] = (
    *(("actuator", f"{fam}-*", "box", f"{b.back + b.front:.3f} x {b.width:.3f} m, height = output z")
      for fam, b in ACTUATOR_BOXES.items()),
    *((kind, typ, "capsule input->output", f"r = {r:.3f} m") for (kind, typ), r in CAPSULE_RADII.items()),
)


def _family(kind: str, typ: str) -> str:
    if kind == "actuator":
        return typ.split("-")[0]
    if kind == "bracket":
        for fam in ("R25", "R8", "X5"):
            if typ.startswith(fam):
                return fam
    return typ


def _frames_by_element(model: RobotModel, kind: str, count: int) -> Sequence[tuple[int, FloatArray]] | None:
    frames = [(f.body, f.offset) for f in model.frames if f.kind == kind]
    return frames if len(frames) == count else None


def _in_body(model: RobotModel, body: int, target: int, offset: FloatArray) -> FloatArray | None:
    """``offset`` on body ``target`` expressed in body ``body``'s frame, if ``target`` is ``body``
    or a fixed descendant of it (an element's output frame on the same rigid part)."""
    T = np.asarray(offset, dtype=np.float64)
    b = target
    while b != body:
        if b < 0 or model.bodies[b].joint.nv:
            return None
        T = model.bodies[b].placement @ T
        b = model.bodies[b].parent
    return T


def hrdf_shapes(model: RobotModel) -> list[Shape]:
    """Shapes of every HRDF element with a table entry (see the module doc)."""
    elements: list[Mapping[str, Any]] = list(model.metadata.get("elements", ()))
    inputs = _frames_by_element(model, "input", len(elements))
    outputs = _frames_by_element(model, "output", len(elements))
    if inputs is None or outputs is None:
        return []
    shapes: list[Shape] = []
    for el, (ib, ioff), (ob, ooff) in zip(elements, inputs, outputs, strict=True):
        kind, typ = str(el.get("kind")), str(el.get("type"))
        label = el.get("tag") or f"e{el.get('index')}"
        name = f"{label} ({kind} {typ})"
        fam = _family(kind, typ)
        if kind == "actuator" and fam in ACTUATOR_BOXES:
            box = ACTUATOR_BOXES[fam]
            # the output frame at q = 0, on the housing
            out = _in_body(model, ib, model.bodies[ob].parent, model.bodies[ob].placement @ ooff)
            height = float(out[2, 3]) if out is not None else 0.03
            local = np.eye(4)
            local[:3, 3] = [(box.front - box.back) / 2, 0.0, height / 2]
            shapes.append(Shape("box", ((box.front + box.back) / 2, box.width / 2, height / 2),
                                ioff @ local, ib, name, meta={"element": el.get("index")}))
            continue
        radius = CAPSULE_RADII.get((kind, fam))
        if radius is None:
            continue
        out = _in_body(model, ib, ob, ooff)
        if out is None:
            continue
        a, b = ioff[:3, 3], out[:3, 3]
        length = float(np.linalg.norm(b - a))
        if kind == "end-effector" and length > 2 * radius:
            a = a + (b - a) * (radius / length)  # its rounded end sits on the mounting face, not inside the wrist
        pose, half = segment_pose(a, b)
        if half < 1e-6:
            shapes.append(Shape("sphere", (radius,), pose, ib, name, meta={"element": el.get("index")}))
        else:
            shapes.append(Shape("capsule", (radius, half), pose, ib, name, meta={"element": el.get("index")}))
    return shapes
