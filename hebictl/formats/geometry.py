"""Mass properties of solid shapes, and combining several into one body inertia.

Formats that infer inertia from geometry (MJCF geoms, SKEL shapes, x_xy geoms, OpenRAVE
``mimicgeom``) all need the same few formulas; they live here once. Shapes are centred at their
own origin with MuJoCo's axis conventions (capsule and cylinder along z). Every function returns
``(mass [kg], rotational inertia about the centroid [kg·m²], shape axes)`` for a given density
[kg/m³]; :func:`combine` adds shapes posed in a body frame with the parallel-axis theorem.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError


@dataclass(frozen=True)
class MassProperties:
    """Mass [kg], centroid [m] and inertia about the centroid [kg·m²], in some frame."""

    mass: float
    com: FloatArray
    inertia: FloatArray

    def transformed(self, T: FloatArray) -> MassProperties:
        """The same solid seen from a frame in which this one's frame has pose ``T`` (4x4)."""
        R = T[:3, :3]
        return MassProperties(self.mass, R @ self.com + T[:3, 3], R @ self.inertia @ R.T)


# ---------------------------------------------------------------- volumes and unit inertias
def sphere_volume(radius: float) -> float:
    return 4.0 / 3.0 * math.pi * radius**3


def sphere_inertia(mass: float, radius: float) -> FloatArray:
    return np.eye(3) * (0.4 * mass * radius**2)


def ellipsoid_volume(a: float, b: float, c: float) -> float:
    """Volume [m³] of an ellipsoid with semi-axes a, b, c [m]."""
    return 4.0 / 3.0 * math.pi * a * b * c


def ellipsoid_inertia(mass: float, a: float, b: float, c: float) -> FloatArray:
    return np.diag([mass * (b * b + c * c) / 5.0, mass * (a * a + c * c) / 5.0, mass * (a * a + b * b) / 5.0])


def box_volume(hx: float, hy: float, hz: float) -> float:
    """Volume [m³] of a box given its half sizes [m]."""
    return 8.0 * hx * hy * hz


def box_inertia(mass: float, hx: float, hy: float, hz: float) -> FloatArray:
    """Inertia of a solid box with half sizes hx, hy, hz [m]."""
    return np.diag([mass * (hy * hy + hz * hz) / 3.0, mass * (hx * hx + hz * hz) / 3.0,
                    mass * (hx * hx + hy * hy) / 3.0])


def cylinder_volume(radius: float, half_length: float) -> float:
    return math.pi * radius * radius * 2.0 * half_length


def cylinder_inertia(mass: float, radius: float, half_length: float) -> FloatArray:
    """Solid cylinder along z with the given radius and half length [m]."""
    h = 2.0 * half_length
    ixx = mass * (3.0 * radius * radius + h * h) / 12.0
    return np.diag([ixx, ixx, 0.5 * mass * radius * radius])


def capsule_volume(radius: float, half_length: float) -> float:
    """Cylinder of half length ``half_length`` along z capped by two hemispheres."""
    return cylinder_volume(radius, half_length) + sphere_volume(radius)


def capsule_inertia(mass: float, radius: float, half_length: float) -> FloatArray:
    """Solid capsule along z: cylinder plus two hemispheres, each shifted by the parallel-axis theorem."""
    h = 2.0 * half_length
    v_cyl = cylinder_volume(radius, half_length)
    v_sph = sphere_volume(radius)
    m_cyl = mass * v_cyl / (v_cyl + v_sph)
    m_sph = mass - m_cyl
    ixx = m_cyl * (3.0 * radius * radius + h * h) / 12.0
    izz = 0.5 * m_cyl * radius * radius
    # hemispheres: 2/5 m r^2 about the centre of their flat face, then moved to the capsule centre
    ixx += 0.4 * m_sph * radius * radius + m_sph * (h * h / 4.0 + 3.0 * h * radius / 8.0)
    izz += 0.4 * m_sph * radius * radius
    return np.diag([ixx, ixx, izz])


# ---------------------------------------------------------------------- meshes
def mesh_properties(vertices: FloatArray, faces: NDArray[np.int64], density: float) -> MassProperties:
    """Mass properties of a closed triangle mesh (outward-facing triangles) of uniform density.

    Sums signed tetrahedra between the origin and each triangle (exact for closed meshes).
    Raises ValueError for a mesh that encloses no volume.
    """
    v, f = check_mesh(vertices, faces)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    vol6 = np.einsum("ij,ij->i", a, np.cross(b, c))  # 6 x signed tetra volume
    volume = vol6.sum() / 6.0
    if not abs(volume) > 1e-300:
        raise ValueError("mesh encloses no volume")
    if volume < 0:  # inward-facing triangles: flip
        vol6, volume = -vol6, -volume
    com = (vol6[:, None] * (a + b + c)).sum(axis=0) / (24.0 * volume)
    # second moments  ∫ x_i x_j dV over each tetra (origin, a, b, c)
    s = a + b + c
    second = np.einsum("k,ki,kj->ij", vol6, a, a) + np.einsum("k,ki,kj->ij", vol6, b, b) \
        + np.einsum("k,ki,kj->ij", vol6, c, c) + np.einsum("k,ki,kj->ij", vol6, s, s)
    second /= 120.0  # = sum over tetras of V/20 (sum_v v v^T + s s^T), with V = vol6/6
    mass = density * volume
    cov = density * second - mass * np.outer(com, com)  # about the centroid
    inertia = np.trace(cov) * np.eye(3) - cov
    return MassProperties(mass, com, 0.5 * (inertia + inertia.T))


def convex_hull_properties(vertices: FloatArray, density: float) -> MassProperties:
    """Mass properties of the convex hull of a point cloud (what MuJoCo uses for face-less meshes)."""
    from scipy.spatial import ConvexHull, QhullError

    pts, _ = check_mesh(vertices, None)
    if len(pts) < 4:
        raise ValueError(f"mesh has {len(pts)} vertices; its convex hull needs at least 4")
    try:
        hull = ConvexHull(pts)
    except QhullError as exc:  # all points on a plane or a line: no volume
        raise ValueError(f"mesh is flat or degenerate, its convex hull has no volume ({str(exc).split(':')[0]})") \
            from None
    faces = hull.simplices.copy()
    # orient every triangle outwards
    centre = pts[hull.vertices].mean(axis=0)
    a, b, c = pts[faces[:, 0]], pts[faces[:, 1]], pts[faces[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - centre) < 0
    faces[flip] = faces[flip][:, ::-1]
    return mesh_properties(pts, faces, density)


# ---------------------------------------------------------------------- combining
def combine(parts: Iterable[MassProperties]) -> MassProperties:
    """Sum of solids given in one frame: total mass, common centroid, inertia about it."""
    parts = [p for p in parts if p.mass > 0.0]
    if not parts:
        return MassProperties(0.0, np.zeros(3), np.zeros((3, 3)))
    mass = sum(p.mass for p in parts)
    weighted = np.zeros(3)
    for p in parts:  # summed in order, as sum() did (the same floats bit for bit)
        weighted = weighted + p.mass * p.com
    com = weighted / mass
    inertia = np.zeros((3, 3))
    for p in parts:
        d = p.com - com
        inertia += p.inertia + p.mass * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return MassProperties(mass, com, 0.5 * (inertia + inertia.T))


def legacy_mesh_properties(vertices: FloatArray, faces: NDArray[np.int64], density: float) -> MassProperties:
    """MuJoCo's default (``inertia="legacy"``) mesh mass properties, reproduced.

    The centroid uses unsigned tetrahedra between the area-weighted surface centre and each
    triangle; volume and inertia then use unsigned tetrahedra between that centroid and each
    triangle. Equal to :func:`mesh_properties` for convex meshes; differs for others.
    """
    v, f = check_mesh(vertices, faces)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    if not area.sum() > 0:
        raise ValueError("mesh has no surface area")
    centre = (area[:, None] * (a + b + c) / 3.0).sum(axis=0) / area.sum()
    vol = np.abs(np.einsum("ij,ij->i", a - centre, np.cross(b - centre, c - centre))) / 6.0
    if not vol.sum() > 0:
        raise ValueError("mesh encloses no volume")
    com = (vol[:, None] * (a + b + c + centre) / 4.0).sum(axis=0) / vol.sum()
    a, b, c = a - com, b - com, c - com
    vol6 = np.abs(np.einsum("ij,ij->i", a, np.cross(b, c)))
    volume = vol6.sum() / 6.0
    s = a + b + c
    second = (np.einsum("k,ki,kj->ij", vol6, a, a) + np.einsum("k,ki,kj->ij", vol6, b, b)
              + np.einsum("k,ki,kj->ij", vol6, c, c) + np.einsum("k,ki,kj->ij", vol6, s, s)) / 120.0
    cov = density * second
    inertia = np.trace(cov) * np.eye(3) - cov
    return MassProperties(density * volume, com, 0.5 * (inertia + inertia.T))


def check_mesh(vertices: FloatArray, faces: NDArray[np.int64] | None) -> tuple[FloatArray, NDArray[np.int64]]:
    """Vertices as (n, 3) finite floats and faces as (m, 3) indices into them, else ValueError.

    Applies ``ReaderLimits.max_mesh_vertices``/``max_mesh_faces`` too, so every mesh reaches
    numpy's fancy indexing and scipy's Qhull in a shape they cannot choke on.
    """
    lim = limits.current()
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"mesh vertices must be triples of numbers, got an array of shape {v.shape}")
    if len(v) > lim.max_mesh_vertices:
        raise ValueError(f"mesh has {len(v)} vertices, over the limit ReaderLimits.max_mesh_vertices="
                         f"{lim.max_mesh_vertices}")
    if not np.all(np.isfinite(v)):
        raise ValueError("mesh has non-finite vertex coordinates")
    if faces is None:
        return v, np.zeros((0, 3), dtype=np.int64)
    f = np.asarray(faces)
    if f.ndim != 2 or f.shape[1] != 3:
        raise ValueError(f"mesh faces must be triangles (3 indices each), got an array of shape {f.shape}")
    if len(f) > lim.max_mesh_faces:
        raise ValueError(f"mesh has {len(f)} faces, over the limit ReaderLimits.max_mesh_faces={lim.max_mesh_faces}")
    if f.dtype.kind == "f" and not (np.all(np.isfinite(f)) and np.all(f == np.round(f))):
        raise ValueError("mesh face indices must be whole numbers")
    if f.size and (f.min() < 0 or f.max() >= len(v)):
        raise ValueError(f"mesh face index {int(f.max()) if f.max() >= len(v) else int(f.min())} is out of range "
                         f"for {len(v)} vertices")
    return v, f.astype(np.int64)


def load_mesh(path: str | Path) -> tuple[FloatArray, NDArray[np.int64]]:
    """Vertices [file units] and triangles of an STL (binary or ASCII) or Wavefront OBJ file.

    Only what mass properties need: positions and faces (polygons fanned into triangles).
    Raises ValueError for other formats or unreadable content.
    """
    p = Path(path)
    lim = limits.current()
    # a regular file within ReaderLimits.max_mesh_file_bytes: never /dev/zero or a FIFO
    try:
        data = limits.read_regular_file(p, lim, "mesh file", max_bytes=lim.max_mesh_file_bytes)
    except FormatError as exc:  # callers add the referencing file and line to a ValueError
        raise ValueError(exc.message) from None
    suffix = p.suffix.lower()
    if suffix == ".stl":
        if data[:5].lower() == b"solid" and b"facet" in data[:1024]:
            if data.count(b"vertex") > lim.max_mesh_vertices:
                raise ValueError(f"STL has more than {lim.max_mesh_vertices} vertices (ReaderLimits.max_mesh_vertices)")
            nums = [line.split()[1:] for line in data.decode(errors="replace").splitlines()
                    if line.strip().startswith("vertex")]
            v = np.array(nums, dtype=np.float64)
        else:
            if len(data) < 84:
                raise ValueError("truncated binary STL")
            n = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0])
            if n > lim.max_mesh_faces:
                raise ValueError(f"STL has {n} triangles, over the limit ReaderLimits.max_mesh_faces="
                                 f"{lim.max_mesh_faces}")
            if len(data) < 84 + 50 * n:
                raise ValueError("truncated binary STL")
            rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                                count=n, offset=84)
            v = rec["v"].reshape(-1, 3).astype(np.float64)
        if len(v) == 0 or len(v) % 3:
            raise ValueError("no triangles in STL")
        return check_mesh(v, np.arange(len(v), dtype=np.int64).reshape(-1, 3))
    if suffix == ".obj":
        verts: list[list[float]] = []
        tris: list[list[int]] = []
        for line in io.BytesIO(data):  # lazily: a list of a 100 MB file's lines would be ten times its size
            parts = line.split()
            if not parts:
                continue
            if parts[0] == b"v":
                verts.append([float(x) for x in parts[1:4]])
            elif parts[0] == b"f":
                idx = [int(t.split(b"/")[0]) for t in parts[1:]]
                idx = [i - 1 if i > 0 else len(verts) + i for i in idx]
                if any(not 0 <= i < len(verts) for i in idx):
                    bad = next(i for i in idx if not 0 <= i < len(verts))
                    raise ValueError(f"OBJ face index {bad + 1} is out of range for {len(verts)} vertices")
                tris.extend([idx[0], idx[k], idx[k + 1]] for k in range(1, len(idx) - 1))
            if len(verts) > lim.max_mesh_vertices or len(tris) > lim.max_mesh_faces:
                break  # check_mesh names the limit
        if not tris:
            raise ValueError("no faces in OBJ")
        return check_mesh(np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int64))
    raise ValueError(f"unsupported mesh format {suffix!r} (STL and OBJ are read)")


def principal_axes(inertia: FloatArray, *, converge: bool = True) -> tuple[FloatArray, FloatArray]:
    """Principal moments (decreasing) and axes (rotation matrix columns) of a symmetric 3x3 inertia.

    MuJoCo's choice of axes (``mju_eig3``): Jacobi rotations accumulated in a quaternion, then a
    bubble sort that turns the frame by 90 degrees per swap, so the axes — not just the moments —
    are the ones MuJoCo picks; formats whose body frames move to the inertial frame (MJCF free
    joints with ``align``) need the very same frame. Each rotation's half angle is computed from
    ``t = tan(theta)`` (``sin(theta/2) = |t| c / sqrt(2 (1 + c))``), not as ``sqrt((1 - c)/2)``,
    which cancels catastrophically for small angles, and the iteration runs to convergence
    (off-diagonal below 1e-15 of the largest moment): MuJoCo 4 converges as tightly, and the
    older cut-off at ``c > 1 - 1e-12`` left the axes up to ~1e-6 rad away (poses off by 2e-8 m).
    The quaternion products use MuJoCo's pairwise sums. ``converge=False`` keeps the early stop
    (no rotation by less than ~1.4e-6 rad), which is what MuJoCo's mesh frames still amount to: the
    tiny products of inertia of a nearly symmetric mesh are dropped.
    """
    M = [float(v) for v in np.asarray(inertia, dtype=np.float64).reshape(9)]
    q = [1.0, 0.0, 0.0, 0.0]  # w x y z
    vals = [M[0], M[4], M[8]]
    for _ in range(500):
        V = _quat_to_matrix(q)
        tmp = [V[i] * M[j] + V[3 + i] * M[3 + j] + V[6 + i] * M[6 + j] for i in range(3) for j in range(3)]
        D = [tmp[3 * i] * V[j] + tmp[3 * i + 1] * V[3 + j] + tmp[3 * i + 2] * V[6 + j]
             for i in range(3) for j in range(3)]
        vals = [D[0], D[4], D[8]]
        if abs(D[1]) > abs(D[2]) and abs(D[1]) > abs(D[5]):
            r, c, axis = 0, 1, 2
        elif abs(D[2]) > abs(D[5]):
            r, c, axis = 0, 2, 1
        else:
            r, c, axis = 1, 2, 0
        off = D[3 * r + c]
        if off == 0.0 or abs(off) <= _EIG_REL * max(abs(D[0]), abs(D[4]), abs(D[8])):
            break
        if not converge and abs(off) < _EIG_EPS:
            break
        tau = (D[4 * c] - D[4 * r]) / (2.0 * off)
        t = 1.0 / (tau + math.sqrt(1.0 + tau * tau)) if tau >= 0 else -1.0 / (-tau + math.sqrt(1.0 + tau * tau))
        cos = 1.0 / math.sqrt(1.0 + t * t)
        if not converge and cos > 1.0 - _EIG_EPS:
            break
        half = abs(t) * cos / math.sqrt(2.0 * (1.0 + cos)) if converge else math.sqrt(0.5 - 0.5 * cos)
        step = [0.0, 0.0, 0.0, 0.0]
        step[axis + 1] = -half if tau >= 0 else half
        if axis == 1:
            step[axis + 1] = -step[axis + 1]
        step[0] = math.sqrt(1.0 - step[axis + 1] * step[axis + 1])
        q = _normalize_quat(_quat_mul(q, _normalize_quat(step)))
    for j in range(3):  # bubble sort into decreasing order, turning the frame by 90 degrees per swap
        j1 = j % 2
        if vals[j1] + _EIG_EPS < vals[j1 + 1]:
            vals[j1], vals[j1 + 1] = vals[j1 + 1], vals[j1]
            turn = [0.707106781186548, 0.0, 0.0, 0.0]
            turn[(j1 + 2) % 3 + 1] = turn[0]
            q = _normalize_quat(_quat_mul(q, turn))
    return np.array(vals), np.array(_quat_to_matrix(q)).reshape(3, 3)


#: MuJoCo's eigEPS (1000 * mjMINVAL): moments closer than this are not swapped
_EIG_EPS = 1e-12
#: Jacobi stops when the largest off-diagonal element is this small relative to the largest moment
_EIG_REL = 1e-15


def _quat_to_matrix(q: list[float]) -> list[float]:
    """Row-major rotation matrix of a unit quaternion ``w x y z``, summed as MuJoCo's ``mju_quat2Mat``."""
    if q == [1.0, 0.0, 0.0, 0.0]:
        return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    q00, q01, q02, q03 = q[0] * q[0], q[0] * q[1], q[0] * q[2], q[0] * q[3]
    q11, q12, q13 = q[1] * q[1], q[1] * q[2], q[1] * q[3]
    q22, q23, q33 = q[2] * q[2], q[2] * q[3], q[3] * q[3]
    return [(q00 - q22) + (q11 - q33), 2 * (q12 - q03), 2 * (q13 + q02),
            2 * (q12 + q03), (q00 + q22) + (-q11 - q33), 2 * (q23 - q01),
            2 * (q13 - q02), 2 * (q23 + q01), (q00 - q22) + (-q11 + q33)]


def _quat_mul(a: list[float], b: list[float]) -> list[float]:
    """Quaternion product ``a b`` with MuJoCo's pairwise sums (``mju_mulQuat``)."""
    return [(a[0] * b[0] - a[1] * b[1]) + (-a[2] * b[2] - a[3] * b[3]),
            (a[0] * b[1] + a[1] * b[0]) + (a[2] * b[3] - a[3] * b[2]),
            (a[0] * b[2] - a[1] * b[3]) + (a[2] * b[0] + a[3] * b[1]),
            (a[0] * b[3] + a[1] * b[2]) + (-a[2] * b[1] + a[3] * b[0])]


def _normalize_quat(v: list[float]) -> list[float]:
    """MuJoCo's ``mju_normalize4``: unchanged when within 1e-15 of unit length, identity when ~0."""
    norm = math.sqrt((v[0] * v[0] + v[1] * v[1]) + (v[2] * v[2] + v[3] * v[3]))
    if norm < 1e-15:
        return [1.0, 0.0, 0.0, 0.0]
    if abs(norm - 1.0) > 1e-15:
        inv = 1.0 / norm
        return [x * inv for x in v]
    return v
