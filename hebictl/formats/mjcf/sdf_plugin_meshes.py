"""Meshes MuJoCo generates from its first-party SDF plugins (``<mesh><plugin instance="..."/></mesh>``).

A mesh whose ``<plugin>`` names one of MuJoCo's own signed-distance plugins (``mujoco.sdf.torus``,
``gear``, ``nut``, ``bolt``, ``bowl``) has no vertex data in the file: MuJoCo's compiler
(``mjCMesh::LoadSDF``) samples the plugin's distance function on a grid spanning the plugin's
bounding box, with about 300 points along the sum of the box half sizes, and runs MarchingCubeCpp on
it. A body taking its inertia from such a mesh gets the mass properties of *that* polyhedron, so this
module rebuilds it the same way: the distance in double precision stored as ``float``, edge
crossings interpolated in ``float`` in grid units, mapped back to the box in double and stored as
``float`` vertices. Faces are MarchingCubeCpp's triangles; the reader then computes the inertia
like for any mesh. Vertices are returned one per crossed grid edge (MuJoCo's order is not
reproduced; the polyhedron is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from lxml import etree
from numpy.typing import NDArray

from hebictl._typing import FloatArray

IntArray = NDArray[np.int64]
Distance = Callable[[FloatArray, FloatArray, FloatArray, tuple[float, ...]], FloatArray]

#: grid points along the sum of the bounding box half sizes (``n`` in ``mjCMesh::LoadSDF``)
GRID_POINTS = 300.0

#: MarchingCubeCpp's triangle table: per corner-sign configuration, the triangle count in the low
#: nibble, then the cube edges of each triangle corner, one nibble each
_MC_TRIS = (
    0, 33793, 36945, 159668546, 18961, 144771090, 5851666, 595283255635,
    20913, 67640146, 193993474, 655980856339, 88782242, 736732689667, 797430812739, 194554754,
    26657, 104867330, 136709522, 298069416227, 109224258, 8877909667, 318136408323, 1567994331701604,
    189884450, 350847647843, 559958167731, 3256298596865604, 447393122899, 651646838401572, 2538311371089956,
    737032694307,
    29329, 43484162, 91358498, 374810899075, 158485010, 178117478419, 88675058979, 433581536604804,
    158486962, 649105605635, 4866906995, 3220959471609924, 649165714851, 3184943915608436, 570691368417972,
    595804498035,
    124295042, 431498018963, 508238522371, 91518530, 318240155763, 291789778348404, 1830001131721892,
    375363605923,
    777781811075, 1136111028516116, 3097834205243396, 508001629971, 2663607373704004, 680242583802939237,
    333380770766129845, 179746658,
    42545, 138437538, 93365810, 713842853011, 73602098, 69575510115, 23964357683, 868078761575828,
    28681778, 713778574611, 250912709379, 2323825233181284, 302080811955, 3184439127991172, 1694042660682596,
    796909779811,
    176306722, 150327278147, 619854856867, 1005252473234484, 211025400963, 36712706, 360743481544788,
    150627258963,
    117482600995, 1024968212107700, 2535169275963444, 4734473194086550421, 628107696687956, 9399128243,
    5198438490361643573, 194220594,
    104474994, 566996932387, 427920028243, 2014821863433780, 492093858627, 147361150235284, 2005882975110676,
    9671606099636618005,
    777701008947, 3185463219618820, 482784926917540, 2900953068249785909, 1754182023747364,
    4274848857537943333, 13198752741767688709, 2015093490989156,
    591272318771, 2659758091419812, 1531044293118596, 298306479155, 408509245114388, 210504348563,
    9248164405801223541, 91321106,
    2660352816454484, 680170263324308757, 8333659837799955077, 482966828984116, 4274926723105633605,
    3184439197724820, 192104450, 15217,
    45937, 129205250, 129208402, 529245952323, 169097138, 770695537027, 382310500883, 2838550742137652,
    122763026, 277045793139, 81608128403, 1991870397907988, 362778151475, 2059003085103236, 2132572377842852,
    655681091891,
    58419234, 239280858627, 529092143139, 1568257451898804, 447235128115, 679678845236084, 2167161349491220,
    1554184567314086709,
    165479003923, 1428768988226596, 977710670185060, 10550024711307499077, 1305410032576132,
    11779770265620358997, 333446212255967269, 978168444447012,
    162736434, 35596216627, 138295313843, 891861543990356, 692616541075, 3151866750863876, 100103641866564,
    6572336607016932133,
    215036012883, 726936420696196, 52433666, 82160664963, 2588613720361524, 5802089162353039525, 214799000387,
    144876322,
    668013605731, 110616894681956, 1601657732871812, 430945547955, 3156382366321172, 7644494644932993285,
    3928124806469601813, 3155990846772900,
    339991010498708, 10743689387941597493, 5103845475, 105070898, 3928064910068824213, 156265010,
    1305138421793636, 27185,
    195459938, 567044449971, 382447549283, 2175279159592324, 443529919251, 195059004769796, 2165424908404116,
    1554158691063110021,
    504228368803, 1436350466655236, 27584723588724, 1900945754488837749, 122971970, 443829749251, 302601798803,
    108558722,
    724700725875, 43570095105972, 2295263717447940, 2860446751369014181, 2165106202149444, 69275726195,
    2860543885641537797, 2165106320445780,
    2280890014640004, 11820349930268368933, 8721082628082003989, 127050770, 503707084675, 122834978,
    2538193642857604, 10129,
    801441490467, 2923200302876740, 1443359556281892, 2901063790822564949, 2728339631923524,
    7103874718248233397, 12775311047932294245, 95520290,
    2623783208098404, 1900908618382410757, 137742672547, 2323440239468964, 362478212387, 727199575803140,
    73425410, 34337,
    163101314, 668566030659, 801204361987, 73030562, 591509145619, 162574594, 100608342969108, 5553,
    724147968595, 1436604830452292, 176259090, 42001, 143955266, 2385, 18433, 0,
)


def _triangle_table() -> IntArray:
    """(256, 15) cube edges of each configuration's triangle corners, -1 past its triangles."""
    table = np.full((256, 15), -1, dtype=np.int64)
    for config, bits in enumerate(_MC_TRIS):
        for i in range(3 * (bits & 0xF)):
            table[config, i] = (bits >> (4 + 4 * i)) & 0xF
    return table


_TRIANGLES = _triangle_table()


# ---------------------------------------------------------------- the plugins' distance functions
def _norm2(a: FloatArray, b: FloatArray) -> FloatArray:
    """``mju_norm`` of a 2-vector: sqrt(a*a + b*b) in that order."""
    return np.sqrt(a * a + b * b)


def _torus(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> FloatArray:
    q = np.sqrt(x * x + y * y) - attr[0]
    return np.sqrt(q * q + z * z) - attr[1]


def _bowl(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> FloatArray:
    height, radius, thick = attr
    width = np.sqrt(radius * radius - height * height)
    q0 = _norm2(x, y)
    rim = _norm2(q0 - width, z - height)
    shell = np.abs(_norm2(q0, z) - radius)
    return np.where(height * q0 < width * z, rim, shell) - thick


def _smooth_union(a: FloatArray, b: FloatArray, k: float) -> FloatArray:
    h = np.clip(0.5 + 0.5 * (b - a) / k, 0.0, 1.0)
    return b * (1.0 - h) + a * h - k * h * (1.0 - h)


def _smooth_intersection(a: FloatArray, b: FloatArray, k: float) -> FloatArray:
    return np.maximum(np.maximum(a, b), -_smooth_union(np.maximum(a, -b), np.maximum(b, -a), k))


def _mod(x: FloatArray, y: float) -> FloatArray:
    return x - y * np.floor(x / y)


def _gear(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> FloatArray:
    alpha, D, N, thickness, inner_diameter = attr
    psi = 3.096e-5 * N * N - 6.557e-3 * N + 0.551  # pressure angle
    R = D / 2.0
    rho = _norm2(x, y)
    Pd = N / D
    P = np.pi / Pd
    a = 1.0 / Pd
    Ro = (D + 2.0 * a) / 2.0
    h = 2.2 / Pd
    innerR = Ro - h - 0.14 * D if inner_diameter < 0.0 else inner_diameter / 2.0
    Rb = D * np.cos(psi) / 2.0
    fi = np.arctan2(y, x) + alpha
    stride = P / R
    inv_alpha = np.arccos(Rb / R)
    inv_phi = np.tan(inv_alpha) - inv_alpha
    shift = stride / 2.0 - 2.0 * inv_phi
    fia = _mod(fi + shift / 2.0, stride) - shift / 2.0
    fib = _mod(-fi - shift + shift / 2.0, stride) - shift / 2.0
    outside_base = Rb < rho
    with np.errstate(invalid="ignore", divide="ignore"):
        acos_rb = np.arccos(np.where(outside_base, Rb / rho, 1.0))
    ta = np.sqrt(np.where(outside_base, rho * rho - Rb * Rb, 0.0))
    dista = np.where(outside_base, ta - Rb * (fia + acos_rb), -1.0e6)
    distb = np.where(outside_base, ta - Rb * (fib + acos_rb), -1.0e6)
    cogs = np.maximum(dista, distb)
    base_walls = np.maximum(fia - (stride - shift), fib - (stride - shift))
    cogs = np.maximum(base_walls, cogs)
    cogs = _smooth_intersection(rho - Ro, cogs, 0.0035 * D)
    cogs = _smooth_union(rho - (Ro - h), cogs, Rb - Ro + h)
    cogs = np.maximum(cogs, -(rho - innerR))
    sdf2d = np.where(innerR - rho > 0.0, innerR - rho, np.where(Ro - rho < -0.2, rho - Ro, cogs))
    # extrusion to half thickness
    w1 = np.abs(z) - thickness / 2.0
    return np.minimum(np.maximum(sdf2d, w1), 0.0) + _norm2(np.maximum(sdf2d, 0.0), np.maximum(w1, 0.0))


_SQRT12 = np.sqrt(2.0) / 2.0


def _hex_head(x: FloatArray, y: FloatArray, z: FloatArray, radius: FloatArray) -> FloatArray:
    """The hexagonal head shared by nut and bolt (shadertoy XtffzX)."""
    k = 6.0 / np.pi / 2.0
    angle = -np.floor(np.arctan2(y, x) * k + 0.5) / k
    s0, s1 = np.sin(angle), np.sin(angle + np.pi * 0.5)
    head = (s1 * x + -s0 * y) - 0.5
    head = np.maximum(head, np.abs(z + 0.25) - 0.25)
    return np.maximum(head, (z + radius - 0.22) * _SQRT12)


def _thread(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> tuple[FloatArray, FloatArray]:
    """Radial distance to the thread core and the threaded surface of nut and bolt."""
    screw = 12.0
    radius = np.sqrt(x * x + y * y) - attr[0]
    u = z * screw - np.arctan2(y, x) / np.pi / 2.0
    triangle = np.abs(u - np.floor(u) - 0.5)
    return radius, (radius - triangle / screw) * _SQRT12


def _nut(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> FloatArray:
    radius, thread = _thread(x, y, z, attr)
    cone = (z - radius) * _SQRT12
    hole = np.maximum(thread, -(cone + 0.5 * _SQRT12))
    hole = np.minimum(hole, -cone - 0.05 * _SQRT12)
    return np.maximum(_hex_head(x, y, z, radius), -hole)


def _bolt(x: FloatArray, y: FloatArray, z: FloatArray, attr: tuple[float, ...]) -> FloatArray:
    radius, thread = _thread(x, y, z, attr)
    bolt = np.maximum(thread, -(0.5 - np.abs(z + 0.5)))
    cone = (z - radius) * _SQRT12
    bolt = np.maximum(bolt, -(cone + 1.0 * _SQRT12))
    return np.minimum(bolt, _hex_head(x, y, z, radius))


def _box(center: tuple[float, float, float], half: tuple[float, float, float]) -> tuple[float, ...]:
    return (*center, *half)


#: plugin name -> (attribute names, defaults, distance, bounding box (centre, half sizes) from attributes)
PLUGINS: dict[str, tuple[tuple[str, ...], tuple[float, ...], Distance, Callable[[tuple[float, ...]],
                                                                                  tuple[float, ...]]]] = {
    "mujoco.sdf.torus": (("radius1", "radius2"), (0.35, 0.15), _torus,
                         lambda a: _box((0, 0, 0), (a[0] + a[1], a[0] + a[1], a[1]))),
    "mujoco.sdf.bowl": (("height", "radius", "thickness"), (0.4, 1.0, 0.02), _bowl,
                        lambda a: _box((0, 0, 0), (a[1] + a[2],) * 3)),
    "mujoco.sdf.gear": (("alpha", "diameter", "teeth", "thickness", "innerdiameter"), (0.0, 2.8, 25.0, 0.2, -1.0),
                        _gear, lambda a: _box((0, 0, 0), (a[1] / 2.0 * 1.25, a[1] / 2.0 * 1.25, a[3] / 2.0 * 1.1))),
    "mujoco.sdf.nut": (("radius",), (0.26,), _nut, lambda a: _box((0, 0, 0), (0.6, 0.6, 1.0))),
    "mujoco.sdf.bolt": (("radius",), (0.26,), _bolt, lambda a: _box((0, 0, 0), (0.6, 0.6, 1.0))),
}


def plugin_attributes(plugin: str, config: Mapping[str, str]) -> tuple[float, ...]:
    """The plugin's numeric attributes from ``<config key value>`` strings; absent or empty -> default.

    Raises ValueError for an unknown plugin or a value that is not a number.
    """
    if plugin not in PLUGINS:
        raise ValueError(f"plugin {plugin!r} is not one of MuJoCo's SDF plugins this reader reproduces "
                         f"({', '.join(PLUGINS)})")
    names, defaults, _, _ = PLUGINS[plugin]
    values = []
    for name, default in zip(names, defaults, strict=True):
        text = (config.get(name) or "").strip()
        try:
            values.append(float(text) if text else default)
        except ValueError:
            raise ValueError(f"plugin {plugin!r} attribute {name!r} must be a number, got {text!r}") from None
    return tuple(values)


def sdf_plugin_mesh(plugin: str, config: Mapping[str, str]) -> tuple[FloatArray, IntArray]:
    """Vertices [m] (single-precision values, one per crossed grid edge) and outward triangles of the
    mesh MuJoCo's compiler generates from one SDF plugin instance.

    Raises ValueError for an unknown plugin or bad attribute values.
    """
    attr = plugin_attributes(plugin, config)
    _, _, distance, aabb = PLUGINS[plugin]
    box = aabb(attr)
    total = box[3] + box[4] + box[5]
    n = [int(np.floor(GRID_POINTS / total * box[3 + i])) + 1 for i in range(3)]
    if min(n) < 2:
        raise ValueError(f"plugin {plugin!r}: bounding box too thin for a grid ({n})")
    # grid coordinates exactly as LoadSDF: centre - half + 2*half*i/(n-1), in double
    axes = [(box[i] - box[3 + i]) + 2.0 * box[3 + i] * np.arange(n[i], dtype=np.float64) / (n[i] - 1)
            for i in range(3)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    field = distance(x, y, z, attr).astype(np.float32)  # MC_FLOAT is float
    inside = field < 0

    # one vertex per grid edge whose end points differ in sign, placed in float grid units
    vert_id: list[IntArray] = []
    verts: list[NDArray[np.float32]] = []  # float grid units, as MarchingCubeCpp
    count = 0
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        va, vb = field[tuple(lo)], field[tuple(hi)]
        crossed = inside[tuple(lo)] != inside[tuple(hi)]
        idx = np.nonzero(crossed)
        ids = np.full(crossed.shape, -1, dtype=np.int64)
        ids[idx] = np.arange(count, count + len(idx[0]))
        count += len(idx[0])
        a, b = va[idx], vb[idx]
        grid = np.stack([i.astype(np.float32) for i in idx], axis=1)
        grid[:, axis] += a / (a - b)  # float32 throughout, as MarchingCubeCpp
        verts.append(grid)
        vert_id.append(ids)
    g = np.concatenate(verts).astype(np.float64)
    # back to model coordinates: 2*half*v/(n-1) + centre - half, in double, stored as float
    V = np.empty_like(g)
    for i in range(3):
        V[:, i] = 2.0 * box[3 + i] * g[:, i] / (n[i] - 1) + box[i] - box[3 + i]
    V = V.astype(np.float32).astype(np.float64)

    # cube configurations: bit c set when corner c (x fastest, then y, then z) is inside
    nx, ny, nz = n
    cube = np.zeros((nx - 1, ny - 1, nz - 1), dtype=np.int64)
    for c in range(8):
        dx, dy, dz = c & 1, (c >> 1) & 1, (c >> 2) & 1
        cube |= inside[dx:nx - 1 + dx, dy:ny - 1 + dy, dz:nz - 1 + dz].astype(np.int64) << c
    cx, cy, cz = np.nonzero((cube != 0) & (cube != 255))
    xe, ye, ze = vert_id
    edges = np.stack([
        xe[cx, cy, cz], xe[cx, cy + 1, cz], xe[cx, cy, cz + 1], xe[cx, cy + 1, cz + 1],
        ye[cx, cy, cz], ye[cx + 1, cy, cz], ye[cx, cy, cz + 1], ye[cx + 1, cy, cz + 1],
        ze[cx, cy, cz], ze[cx + 1, cy, cz], ze[cx, cy + 1, cz], ze[cx + 1, cy + 1, cz],
    ], axis=1)
    corners = _TRIANGLES[cube[cx, cy, cz]]
    valid = corners >= 0
    faces = np.take_along_axis(edges, np.where(valid, corners, 0), axis=1)[valid].reshape(-1, 3)
    return V, faces


def mesh_plugin_config(plugin_el: etree._Element, root: etree._Element) -> tuple[str, dict[str, str]]:
    """Plugin name and ``<config key value>`` strings of a ``<mesh><plugin>`` element.

    The element either names its plugin (``plugin="..."``, configs as children) or refers to an
    ``<extension><plugin plugin="..."><instance name="...">`` by ``instance``. Raises ValueError
    when the instance is missing or the element names neither.
    """
    name, instance = plugin_el.get("plugin"), plugin_el.get("instance")
    source: etree._Element | None = plugin_el
    if instance is not None:
        source = None
        for ext in root.iter("extension"):
            for plug in ext.iterchildren("plugin"):
                for inst in plug.iterchildren("instance"):
                    if inst.get("name") == instance:
                        name, source = plug.get("plugin"), inst
    if source is None:
        raise ValueError(f"plugin instance {instance!r} not found in <extension>")
    if not name:
        raise ValueError("mesh <plugin> needs a plugin or an instance attribute")
    return name, {c.get("key", ""): c.get("value", "") for c in source.iterchildren("config")}
