"""The bodies MuJoCo's ``<flexcomp>`` generates: one small body per free vertex, with slide joints.

A flexcomp is a deformable object (cloth, rope, soft box) whose vertices MuJoCo turns into bodies
at compile time (``mjCFlexcomp::Make``). For kinematics and gravity only those bodies matter:
their names (``<flexcomp name>_<vertex index>``), positions in the parent body, masses
(``mass / number of points``), inertias (``mass * 2 * inertiabox² / 3`` about each axis) and
joints (``dof="full"``: slides along x, y, z; ``"2d"``: x, y; ``"radial"``: one slide away from
the flexcomp origin). Pinned vertices, and every vertex of a ``rigid`` flexcomp, stay on the
parent body and make no body. The flex itself (its elasticity, edges, contacts and equality
constraints) only acts in simulation and is not represented in hebictl.

Generated point sets follow MuJoCo's order for types ``grid``, ``circle``, ``square``, ``disc``,
``box``, ``cylinder``, ``ellipsoid`` and ``direct``. Types read from files (``mesh``, ``gmsh``)
and the interpolated dofs (``trilinear``, ``quadratic``, whose bodies are control nodes rather than
vertices) are not supported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from hebictl._typing import FloatArray
from hebictl.formats.rotations import MJMINVAL

GENERATED_TYPES = ("grid", "circle", "square", "disc", "box", "cylinder", "ellipsoid")
SUPPORTED_DOFS = ("full", "radial", "2d")


@dataclass(frozen=True)
class Flexcomp:
    """What a flexcomp element says, parsed: the reader fills this from the XML."""

    name: str
    type: str = "grid"
    dim: int = 2
    dof: str = "full"
    count: tuple[int, int, int] = (10, 10, 10)
    spacing: tuple[float, float, float] = (0.02, 0.02, 0.02)
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    mass: float = 1.0
    inertiabox: float = 0.005
    rigid: bool = False
    point: tuple[float, ...] = ()
    element: tuple[int, ...] = ()
    pin_id: tuple[int, ...] = ()
    pin_range: tuple[int, ...] = ()
    pin_grid: tuple[int, ...] = ()
    pin_gridrange: tuple[int, ...] = ()


@dataclass(frozen=True)
class VertexBody:
    """One generated body: name, position [m] in the flexcomp's frame, mass [kg], inertia [kg·m²]
    about each axis, and the unit axes of its slide joints (in the same frame)."""

    name: str
    position: FloatArray
    mass: float
    inertia: float
    slide_axes: tuple[tuple[float, float, float], ...]


def vertex_bodies(fc: Flexcomp, R: FloatArray, pos: FloatArray) -> tuple[list[VertexBody], int]:
    """Bodies of a flexcomp posed by rotation ``R`` and offset ``pos`` [m] in its parent's frame, and
    the number of vertices that stay on the parent (pinned).

    Raises ValueError with MuJoCo's reason where MuJoCo refuses the flexcomp, or where hebictl
    does not generate what it asks for (the message then says "not supported").
    """
    if fc.type not in (*GENERATED_TYPES, "direct"):
        raise ValueError(f"flexcomp type {fc.type!r} is not supported (hebictl generates "
                         f"{', '.join(GENERATED_TYPES)} and direct)")
    if fc.dof not in SUPPORTED_DOFS:
        raise ValueError(f"flexcomp dof {fc.dof!r} is not supported (interpolated dofs make control-node bodies; "
                         f"hebictl generates {', '.join(SUPPORTED_DOFS)})")
    dim = 2 if fc.type in ("square", "disc") else fc.dim
    if not 1 <= dim <= 3:
        raise ValueError("Invalid dim, must be between 1 and 3")
    if any(c < 1 or (fc.dof == "radial" and c < 2 and dim == 3) for c in fc.count):
        raise ValueError("Count too small")
    if min(fc.scale) < MJMINVAL:
        raise ValueError("Scale must be larger than mjMINVAL")
    if fc.mass < MJMINVAL or fc.inertiabox < MJMINVAL:
        raise ValueError("Mass and inertiabox must be larger than mjMINVAL")
    if fc.type == "direct":
        points, elements = _direct(fc, dim)
    elif fc.type in ("box", "cylinder", "ellipsoid"):
        points, elements = _box(fc, dim), None
    else:
        points, elements = _grid(fc, dim), None
    if len(points) == 0:
        raise ValueError("Point and element required")
    points = points @ R.T + pos
    npnt = len(points)
    pinned = _pinned(fc, dim, npnt)
    if elements is not None:  # direct: points no element uses are dropped
        used = np.zeros(npnt, dtype=bool)
        used[elements] = True
        points, pinned, npnt = points[used], pinned[used], int(used.sum())
    if fc.rigid or pinned.all():
        return [], npnt
    mass = fc.mass / npnt
    inertia = mass * (2.0 * fc.inertiabox * fc.inertiabox) / 3.0
    out = []
    for i, p in enumerate(points):
        if pinned[i]:
            continue
        if fc.dof == "radial":
            n = math.sqrt(float(p @ p))
            axes: tuple[tuple[float, float, float], ...] = (
                (float(p[0] / n), float(p[1] / n), float(p[2] / n)) if n >= MJMINVAL else (0.0, 0.0, 0.0),)
        else:
            axes = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))[:3 if fc.dof == "full" else 2]
        out.append(VertexBody(f"{fc.name}_{i}", p.copy(), mass, inertia, axes))
    return out, int(pinned.sum())


def _pinned(fc: Flexcomp, dim: int, npnt: int) -> NDArray[np.bool_]:
    pinned = np.zeros(npnt, dtype=bool)
    if fc.rigid:
        return pinned | True
    for i in fc.pin_id:
        if not 0 <= i < npnt:
            raise ValueError("pinid out of range")
        pinned[i] = True
    if len(fc.pin_range) % 2:
        raise ValueError("Pin range number must be multiple of 2")
    for a, b in zip(fc.pin_range[::2], fc.pin_range[1::2], strict=True):
        if not (0 <= a < npnt and 0 <= b < npnt):
            raise ValueError("pinrange out of range")
        pinned[a:b + 1] = True
    if (fc.pin_grid or fc.pin_gridrange) and (fc.type != "grid" or dim == 1):
        raise ValueError("Pin grid(range) can only be used with grid types of dim 2 or 3")
    if len(fc.pin_grid) % max(dim, 1) or len(fc.pin_gridrange) % (2 * dim):
        raise ValueError("Pin grid (range) numbers must be multiples of dim (2*dim)")
    c = fc.count
    grid_id = (lambda g: g[0] * c[1] + g[1]) if dim == 2 else (lambda g: g[0] * c[1] * c[2] + g[1] * c[2] + g[2])
    for k in range(0, len(fc.pin_grid), dim):
        g = fc.pin_grid[k:k + dim]
        if any(not 0 <= g[j] < c[j] for j in range(dim)):
            raise ValueError("pingrid out of range")
        pinned[grid_id(g)] = True
    for k in range(0, len(fc.pin_gridrange), 2 * dim):
        r = fc.pin_gridrange[k:k + 2 * dim]
        if any(not 0 <= r[j] < c[j % dim] for j in range(2 * dim)):
            raise ValueError("pingridrange out of range")
        ranges = [range(r[j], r[j + dim] + 1) for j in range(dim)]
        for g in np.ndindex(*(len(x) for x in ranges)):
            pinned[grid_id([ranges[j][g[j]] for j in range(dim)])] = True
    if fc.dof == "radial":
        pinned[0] = True  # the centre of a radial flexcomp never moves
    return pinned


def _grid(fc: Flexcomp, dim: int) -> FloatArray:
    """``grid``/``circle`` points (and ``square``/``disc``, which are 2-D grids, the disc projected)."""
    c, s = fc.count, fc.spacing
    pts: list[tuple[float, float, float]] = []
    if dim == 1:
        for ix in range(c[0]):
            if fc.type == "circle":
                if ix >= c[0] - 1:
                    continue
                theta = 2 * math.pi / (c[0] - 1)
                radius = s[0] / math.sin(theta / 2) / 2
                pts.append((radius * math.cos(theta * ix), radius * math.sin(theta * ix), 0.0))
            else:
                pts.append((s[0] * (ix - 0.5 * (c[0] - 1)), 0.0, 0.0))
        if len(pts) < 2:
            raise ValueError("No elements were created in grid")
    elif dim == 2:
        pts = [(s[0] * (ix - 0.5 * (c[0] - 1)), s[1] * (iy - 0.5 * (c[1] - 1)), 0.0)
               for ix in range(c[0]) for iy in range(c[1])]
        if c[0] < 2 or c[1] < 2:
            raise ValueError("No elements were created in grid")
    else:
        pts = [(s[0] * (ix - 0.5 * (c[0] - 1)), s[1] * (iy - 0.5 * (c[1] - 1)), s[2] * (iz - 0.5 * (c[2] - 1)))
               for ix in range(c[0]) for iy in range(c[1]) for iz in range(c[2])]
        if min(c) < 2:
            raise ValueError("No elements were created in grid")
    out = np.array(pts, dtype=np.float64)
    if fc.type == "disc":
        size = (0.5 * s[0] * (c[0] - 1), 0.5 * s[1] * (c[1] - 1))
        for p in out:
            L0 = max(abs(p[0]), abs(p[1]))
            _normalize(p, 2)
            p[0] *= size[0] * L0
            p[1] *= size[1] * L0
    return out


def _normalize(v: FloatArray, n: int) -> None:
    """MuJoCo's mjuu_normvec on the first ``n`` entries: a (near) zero vector stays as it is."""
    norm = math.sqrt(sum(float(v[i]) * float(v[i]) for i in range(n)))
    if norm >= MJMINVAL:
        v[:n] /= norm


def _box_project(fc: Flexcomp, ix: int, iy: int, iz: int) -> tuple[float, float, float]:
    c, s = fc.count, fc.spacing
    p = np.array([2.0 * ix / (c[0] - 1) - 1, 2.0 * iy / (c[1] - 1) - 1, 2.0 * iz / (c[2] - 1) - 1])
    size = (0.5 * s[0] * (c[0] - 1), 0.5 * s[1] * (c[1] - 1), 0.5 * s[2] * (c[2] - 1))
    if fc.type == "cylinder":
        L0 = max(abs(p[0]), abs(p[1]))
        _normalize(p, 2)
        p[0] *= size[0] * L0
        p[1] *= size[1] * L0
        p[2] *= size[2]
    else:
        if fc.type == "ellipsoid":
            _normalize(p, 3)
        p *= size
    return float(p[0]), float(p[1]), float(p[2])


def _box(fc: Flexcomp, dim: int) -> FloatArray:
    """Surface points of a ``box``/``cylinder``/``ellipsoid`` (plus its centre when ``dim=3``), in
    MuJoCo's order: the z faces, then the y faces, then the x faces. A 2-D one is open at the top
    (a basket): MuJoCo leaves out the face at the largest z."""
    c = fc.count
    if min(c) < 2:
        raise ValueError("Count too small")
    open_top = dim == 2
    pts = [(0.0, 0.0, 0.0)] if dim == 3 else []
    for iz in (0,) if open_top else (0, c[2] - 1):
        pts += [_box_project(fc, ix, iy, iz) for ix in range(c[0]) for iy in range(c[1])]
    sides = range(1, c[2] if open_top else c[2] - 1)
    for iy in (0, c[1] - 1):
        pts += [_box_project(fc, ix, iy, iz) for ix in range(c[0]) for iz in sides]
    for ix in (0, c[0] - 1):
        pts += [_box_project(fc, ix, iy, iz) for iy in range(1, c[1] - 1) for iz in sides]
    return np.array(pts, dtype=np.float64)


def _direct(fc: Flexcomp, dim: int) -> tuple[FloatArray, NDArray[np.int64]]:
    if len(fc.point) % 3:
        raise ValueError("Point size must be a multiple of 3")
    if len(fc.element) % (dim + 1):
        raise ValueError("Element size must be a multiple of dim+1")
    points = np.array(fc.point, dtype=np.float64).reshape(-1, 3) * np.array(fc.scale)
    elements = np.array(fc.element, dtype=np.int64)
    if not len(points) or not len(elements):
        raise ValueError("Point and element required")
    if elements.min() < 0 or elements.max() >= len(points):
        raise ValueError(f"element has a point id outside 0..{len(points) - 1}")
    return points, elements


def parse_ints(values: Iterable[float]) -> tuple[int, ...]:
    """Integers written as numbers in XML (``"3 4 5"``), as MuJoCo reads them."""
    return tuple(int(v) for v in values)
