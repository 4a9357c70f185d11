"""The collision shapes a model file declares: URDF/SDF ``<collision>`` and MJCF geoms.

The readers keep that geometry as body metadata (``collisions`` for URDF and SDF, ``geoms`` for
MJCF); this module turns it into :class:`~hebictl.collision.shapes.Shape` with MuJoCo's size
conventions (half extents, half lengths). Meshes are kept by path and collided by MuJoCo through
their convex hull; a mesh whose file is missing or in a format MuJoCo does not read, and shapes
MuJoCo has no primitive for (ellipsoids, heightfields), are skipped and counted in
:func:`file_shapes`'s second result. Every MJCF geom counts (the reader keeps no contact bits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hebictl.collision.shapes import Shape
from hebictl.model.robot import RobotModel

#: mesh files MuJoCo reads (others, e.g. COLLADA, are skipped and counted)
MESH_SUFFIXES = (".stl", ".obj", ".msh")


def _pose(entry: Mapping[str, Any]) -> np.ndarray:
    raw = entry.get("origin", entry.get("pose"))
    T = np.eye(4) if raw is None else np.asarray(raw, dtype=np.float64)
    return T if T.shape == (4, 4) and np.all(np.isfinite(T)) else np.eye(4)


def _shape(entry: Mapping[str, Any], body: int, name: str, mjcf: bool) -> Shape | None:
    kind = str(entry.get("type", "sphere" if mjcf else ""))
    T = _pose(entry)
    size = [float(v) for v in entry.get("size", ())]
    half = 1.0 if mjcf else 0.5  # MJCF sizes are already half sizes
    if kind == "box" and len(size) >= 3:
        return Shape("box", tuple(s * half for s in size[:3]), T, body, name)
    if kind == "sphere":
        r = float(entry.get("radius", size[0] if size else 0.0))
        return Shape("sphere", (r,), T, body, name) if r > 0 else None
    if kind in ("capsule", "cylinder"):
        if mjcf:
            r = size[0] if size else 0.0
            h = float(entry.get("half_length", size[1] if len(size) > 1 else 0.0))
        else:
            r, h = float(entry.get("radius", 0.0)), 0.5 * float(entry.get("length", 0.0))
        return Shape(kind, (r, h), T, body, name) if r > 0 else None
    if kind == "mesh" and str(entry.get("mesh_path") or "").lower().endswith(MESH_SUFFIXES):
        scale = entry.get("scale", (1.0, 1.0, 1.0))
        if not isinstance(scale, list | tuple) or len(scale) != 3:
            scale = (1.0, 1.0, 1.0)
        return Shape("mesh", (), T, body, name, mesh_path=str(entry["mesh_path"]),
                     mesh_scale=(float(scale[0]), float(scale[1]), float(scale[2])))
    return None


def file_shapes(model: RobotModel) -> tuple[list[Shape], int]:
    """The model file's collision shapes and how many declared shapes could not be used."""
    mjcf = model.format == "mjcf"
    shapes: list[Shape] = []
    skipped = 0
    for i, b in enumerate(model.bodies):
        entries = b.metadata.get("geoms" if mjcf else "collisions", ())
        for k, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                continue
            name = f"{b.name}/{entry.get('name') or k}"
            s = _shape(entry, i, name, mjcf)
            if s is None:
                skipped += 1
            else:
                shapes.append(s)
    return shapes, skipped
