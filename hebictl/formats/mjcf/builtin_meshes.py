"""MuJoCo's builtin meshes (``<mesh builtin="..." params="...">``, MuJoCo 3.3+), generated as MuJoCo does.

A body whose inertia comes from a builtin mesh needs the very triangles MuJoCo makes: its mass
properties are those of that polyhedron, not of the ideal shape it approximates. Each generator
follows MuJoCo's ``mjCMesh::Make*`` (same vertex order, same faces, and single precision where
MuJoCo computes in ``float``); the reader then scales the vertices and computes the inertia with
the mesh's ``inertia`` mode like for any other mesh. ``cone`` and ``wedge`` have no faces: MuJoCo
(and the reader) use their convex hull. ``plate`` is a flat sheet whose inertia MuJoCo computes as a
shell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from hebictl._typing import FloatArray

IntArray = NDArray[np.int64]

#: builtin name -> number of parameters it takes
PARAM_COUNTS = {"sphere": 1, "hemisphere": 1, "supersphere": 3, "supertorus": 4, "wedge": 5, "plate": 2,
                "cone": 2}


#: Largest resolution parameter accepted (MuJoCo's own models use at most a few hundred).
MAX_RESOLUTION = 1000


def builtin_mesh(kind: str, params: Sequence[float] | FloatArray) -> tuple[FloatArray, IntArray | None, str | None]:
    """Vertices (unscaled, single-precision values), faces (None: use the convex hull) and the inertia
    mode MuJoCo forces (``"shell"`` for plates, else None) of one builtin mesh.

    Raises ValueError with MuJoCo's reason for an unknown kind or bad parameters.
    """
    if kind not in PARAM_COUNTS:
        raise ValueError(f"unknown builtin mesh {kind!r}; expected one of {', '.join(PARAM_COUNTS)}")
    if len(params) != PARAM_COUNTS[kind]:
        raise ValueError(f"builtin mesh {kind!r} needs {PARAM_COUNTS[kind]} parameters, got {len(params)}")
    p = [float(x) for x in params]
    # resolutions drive allocations (supersphere/supertorus/plate/wedge/cone grow with res or res^2):
    # bounded so a hostile file cannot ask for 1e9 x 1e9 vertices
    res_count = {"wedge": 2, "plate": 2}.get(kind, 1)
    if any(not abs(v) <= MAX_RESOLUTION for v in p[:res_count]):
        raise ValueError(f"builtin mesh {kind!r} resolution must be at most {MAX_RESOLUTION}, got {p[:res_count]}")
    if kind == "sphere":
        if not 0 <= int(p[0]) <= 4:
            raise ValueError("sphere subdivision must be between 0 and 4")
        V, F = _sphere(int(p[0]))
    elif kind == "hemisphere":
        if not 0 <= int(p[0]) <= 10:
            raise ValueError("hemisphere resolution must be between 0 and 10")
        V, F = _hemisphere(int(p[0]))
    elif kind == "supersphere":
        if int(p[0]) < 3 or p[1] < 0 or p[2] < 0:
            raise ValueError("supersphere needs resolution > 2 and non-negative exponents")
        V, F = _supersphere(int(p[0]), p[1], p[2])
    elif kind == "supertorus":
        if int(p[0]) < 3 or not 0 < p[1] <= 1 or p[2] <= 0 or p[3] <= 0:
            raise ValueError("supertorus needs resolution > 2, radius in (0, 1] and positive exponents")
        V, F = _supertorus(int(p[0]), p[1], p[2], p[3])
    elif kind == "wedge":
        res, fov, gamma = (int(p[0]), int(p[1])), (p[2], p[3]), p[4]
        if not (0 < fov[0] <= 180 and 0 < fov[1] <= 90 and min(res) > 0 and 0 <= gamma <= 1):
            raise ValueError("wedge needs positive resolutions, fov in (0, 180] x (0, 90] degrees, gamma in [0, 1]")
        return _wedge(res, fov, gamma), None, None
    elif kind == "plate":
        res = (int(p[0]), int(p[1]))
        if min(res) <= 0:
            raise ValueError("plate resolutions must be positive")
        V, F = _plate(res)
        return V, F, "shell"
    else:  # cone
        return _cone(int(p[0]), p[1]), None, None
    return V, F, None


def _single(values: FloatArray) -> FloatArray:
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def _sphere(subdiv: int) -> tuple[FloatArray, IntArray]:
    """Icosahedron subdivided ``subdiv`` times, midpoints normalised in single precision."""
    f32 = np.float32
    phi = f32((1.0 + math.sqrt(5.0)) / 2.0)
    base: list[tuple[float | np.float32, ...]] = [
        (-1, phi, 0), (1, phi, 0), (-1, -phi, 0), (1, -phi, 0), (0, -1, phi), (0, 1, phi), (0, -1, -phi),
        (0, 1, -phi), (phi, 0, -1), (phi, 0, 1), (-phi, 0, -1), (-phi, 0, 1)]
    norm = math.sqrt(1.0 + float(phi) * float(phi))
    verts = [np.array([f32(float(c) / norm) for c in v], dtype=np.float32) for v in base]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
             (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
             (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    for _ in range(subdiv):
        cache: dict[tuple[int, int], int] = {}

        def midpoint(a: int, b: int, cache: dict[tuple[int, int], int] = cache) -> int:
            key = (min(a, b), max(a, b))
            if key not in cache:
                m = (verts[a] + verts[b]) / f32(2.0)
                n = np.sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2])
                verts.append((m / n).astype(np.float32))
                cache[key] = len(verts) - 1
            return cache[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return np.array(verts, dtype=np.float64), np.array(faces, dtype=np.int64)


def _hemisphere(res: int) -> tuple[FloatArray, IntArray]:
    """Upper half of a unit sphere (rows of a projected square) closed by a fan around the origin."""
    pole = np.array([0.0, 0.0, 1.0])
    equator = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0], [0, -1.0, 0]])
    verts = [pole]
    for row in range(res + 1):
        for side in range(4):
            factor = (row + 1) / (res + 1)
            start = pole + factor * (equator[side] - pole)
            end = pole + factor * (equator[(side + 1) % 4] - pole)
            delta = (end - start) / (row + 1)
            for i in range(row + 1):
                q = start + i * delta
                verts.append(q / math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]))
    verts.append(np.zeros(3))
    nvert = len(verts)
    faces = [(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 1)]
    for row in range(res):
        start_curr, count_curr = 2 * row * (row + 1) + 1, 4 * (row + 1)
        start_next, count_next = start_curr + count_curr, 4 * (row + 2)
        for side in range(4):
            for i in range(row + 2):
                vc, vn = i + (row + 1) * side, i + (row + 2) * side
                faces.append((start_curr + vc % count_curr, start_next + vn % count_next,
                              start_next + (vn + 1) % count_next))
                if i < row + 1:
                    faces.append((start_curr + vc % count_curr, start_next + (vn + 1) % count_next,
                                  start_curr + (vc + 1) % count_curr))
    start, count = 2 * res * (res + 1) + 1, 4 * (res + 1)
    faces += [(start + i, nvert - 1, start + (i + 1) % count) for i in range(count)]
    return _single(np.array(verts)), np.array(faces, dtype=np.int64)


def _aux_c(w: float, m: float) -> float:
    c = math.cos(w)
    return math.copysign(abs(c) ** m, c)


def _aux_s(w: float, m: float) -> float:
    s = math.sin(w)
    return math.copysign(abs(s) ** m, s)


def _supersphere(res: int, e: float, n: float) -> tuple[FloatArray, IntArray]:
    """Superellipsoid: poles plus ``res - 1`` rings of ``res`` points."""
    verts = [(0.0, 0.0, -1.0)]
    for i in range(1, res):
        v = -math.pi / 2 + i * math.pi / res
        for j in range(res):
            u = -math.pi + j * 2 * math.pi / res
            verts.append((_aux_c(v, n) * _aux_c(u, e), _aux_c(v, n) * _aux_s(u, e), _aux_s(v, n)))
    verts.append((0.0, 0.0, 1.0))
    nvert = len(verts)
    faces = [(0, 1 + (j + 1) % res, 1 + j) for j in range(res)]
    for i in range(res - 2):
        for j in range(res):
            v1, v2 = 1 + i * res + j, 1 + i * res + (j + 1) % res
            v4, v3 = 1 + (i + 1) * res + j, 1 + (i + 1) * res + (j + 1) % res
            faces += [(v1, v2, v4), (v2, v3, v4)]
    last = 1 + (res - 2) * res
    faces += [(last + j, last + (j + 1) % res, nvert - 1) for j in range(res)]
    return _single(np.array(verts)), np.array(faces, dtype=np.int64)


def _supertorus(res: int, radius: float, s: float, t: float) -> tuple[FloatArray, IntArray]:
    """Supertoroid of unit major radius and minor radius ``radius``, ``res`` x ``res`` points."""
    verts = []
    for i in range(res):
        for j in range(res):
            u, v = 2 * math.pi * i / res, 2 * math.pi * j / res
            ring = 1 + radius * _aux_c(v, s)
            verts.append((ring * _aux_c(u, t), ring * _aux_s(u, t), radius * _aux_s(v, s)))
    faces = []
    for i in range(res):
        for j in range(res):
            i1, j1 = (i + 1) % res, (j + 1) % res
            v1, v2, v3, v4 = i * res + j, i1 * res + j, i1 * res + j1, i * res + j1
            faces += [(v1, v2, v4), (v2, v3, v4)]
    return _single(np.array(verts)), np.array(faces, dtype=np.int64)


def _bin_centres(n: int, fov_deg: float, gamma: float) -> FloatArray:
    acc, out = -1.0, []  # MuJoCo's LinSpace accumulates the increment
    for _ in range(n + 1):
        out.append(acc)
        acc += 2.0 / n
    edges = np.array(out)
    if gamma:
        g = max(0.0, min(1.0, gamma))
        edges = g * edges**5 + (1 - g) * edges
    edges = edges * (fov_deg * math.pi / 180)
    return 0.5 * (edges[1:] + edges[:-1])


def _wedge(res: tuple[int, int], fov: tuple[float, float], gamma: float) -> FloatArray:
    """Points of a spherical wedge (a tactile sensor's taxels): azimuth x elevation bin centres."""
    az, el = _bin_centres(res[0], fov[0], gamma), _bin_centres(res[1], fov[1], gamma)
    verts = [(math.cos(e) * math.sin(a), math.sin(e), -math.cos(e) * math.cos(a)) for a in az for e in el]
    return _single(np.array(verts))


def _plate(res: tuple[int, int]) -> tuple[FloatArray, IntArray]:
    """Cell centres of a ``[-1, 1]²`` grid at ``z = -1``, triangulated."""
    dx, dy = 2.0 / res[0], 2.0 / res[1]
    verts = [(-1 + (i + 0.5) * dx, -1 + (j + 0.5) * dy, -1.0) for i in range(res[0]) for j in range(res[1])]
    faces = []
    for i in range(1, res[0]):
        for j in range(1, res[1]):
            faces += [((i - 1) * res[1] + j - 1, i * res[1] + j - 1, (i - 1) * res[1] + j),
                      (i * res[1] + j, (i - 1) * res[1] + j, i * res[1] + j - 1)]
    return _single(np.array(verts)), np.array(faces, dtype=np.int64).reshape(-1, 3)


def _cone(nedge: int, radius: float) -> FloatArray:
    """A prism/frustum/pyramid: ``nedge`` points on the unit circle at z = -1, the top at z = 1."""
    bottom = [(math.cos(2 * i * math.pi / nedge), math.sin(2 * i * math.pi / nedge), -1.0) for i in range(nedge)]
    if radius > 0:
        top = [(radius * math.cos(2 * i * math.pi / nedge), radius * math.sin(2 * i * math.pi / nedge), 1.0)
               for i in range(nedge, 2 * nedge)]
    else:
        top = [(0.0, 0.0, 1.0)]
    return _single(np.array(bottom + top))
