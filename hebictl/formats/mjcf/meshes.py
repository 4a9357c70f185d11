"""MJCF mesh inertia: a mesh asset's vertices (inline, file, builtin or plugin) and its mass properties.

MuJoCo's rules reproduced so that a body whose inertia comes from a mesh agrees with ``mj_setConst``:
vertices kept in single precision, ``scale``/``refpos``/``refquat`` applied, the ``legacy``
(default), ``exact`` and ``convex`` algorithms, and the principal frame MuJoCo keeps.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from lxml import etree
from numpy.typing import NDArray

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.formats import geometry
from hebictl.formats.mjcf.attributes import floats
from hebictl.formats.mjcf.builtin_meshes import builtin_mesh
from hebictl.formats.mjcf.context import Ctx, ReadContext
from hebictl.formats.mjcf.defaults import lookup
from hebictl.formats.mjcf.document import asset_path
from hebictl.formats.mjcf.sdf_plugin_meshes import mesh_plugin_config, sdf_plugin_mesh
from hebictl.formats.rotations import quat_matrix


def mesh_mass(rc: ReadContext, el: etree._Element, ctx: Ctx, cls: str, body: str) -> geometry.MassProperties:
    """Volume (as mass at density 1), centroid and unit-density inertia of a mesh, in mesh coordinates.

    Computed once per mesh asset: a model may place one mesh thousands of times, and a convex hull
    per geom made such a file take seconds."""
    key = (id(ctx.doc), lookup(rc, el, "geom", "mesh", ctx, cls))
    if key not in rc.mesh_props:
        rc.mesh_props[key] = _mesh_mass(rc, el, ctx, cls, body)
    return rc.mesh_props[key]


def _mesh_mass(rc: ReadContext, el: etree._Element, ctx: Ctx, cls: str, body: str) -> geometry.MassProperties:
    mname = lookup(rc, el, "geom", "mesh", ctx, cls)
    if mname is None:
        raise rc.fail("mesh geom needs a mesh attribute", el)
    mesh = ctx.doc.meshes.get(mname)
    if mesh is None:
        raise rc.fail(f"mesh {mname!r} not found in geom", el)
    mdefaults = ctx.doc.defaults.get(mesh.get("class") or "main", {}).get("mesh", {})

    def get(key: str) -> str | None:  # the mesh's attribute, else its class's
        own = mesh.get(key)
        return own if own is not None else mdefaults.get(key)

    plugin = mesh.find("plugin") if mesh.get("file") is None else None  # MuJoCo: a file wins over a plugin
    F: NDArray[np.int64] | None
    if plugin is not None:
        if get("scale") is not None and np.any(floats(rc, mesh, get("scale") or "", "scale", 3) != 1):
            raise rc.fail(f"attribute scale is not compatible with SDFs in mesh {mname!r}", mesh)
        try:
            V, F = sdf_plugin_mesh(*mesh_plugin_config(plugin, ctx.doc.root))
        except ValueError as exc:
            raise rc.fail(f"body {body!r} takes its inertia from mesh {mname!r}, which a plugin generates: "
                          f"{exc}; give the body an <inertial>", el) from None
    else:
        V, F = _mesh_data(rc, mesh, mname, el, ctx, body)

    V = V.astype(np.float32).astype(np.float64)  # MuJoCo keeps mesh vertices in single precision
    scale = get("scale")
    if scale is not None:
        V = V * floats(rc, mesh, scale, "scale", 3)
    refpos, refquat = mesh.get("refpos"), mesh.get("refquat")
    if refpos is not None:
        V = V - floats(rc, mesh, refpos, "refpos", 3)
    if refquat is not None:
        V = V @ quat_matrix(floats(rc, mesh, refquat, "refquat", 4))

    method = get("inertia") or "legacy"
    try:
        if F is None or method == "convex":
            props = geometry.convex_hull_properties(V, 1.0)
        elif method == "exact":
            props = geometry.mesh_properties(V, F, 1.0)
        elif method == "legacy":
            props = geometry.legacy_mesh_properties(V, F, 1.0)
        else:
            raise rc.fail(f"mesh inertia {method!r} is not supported (use convex, exact or legacy)", mesh)
    except ValueError as exc:
        raise rc.fail(f"mesh {mname!r}: {exc}", mesh) from None

    # MuJoCo keeps a mesh's inertia as moments in the principal frame it finds; it does not rotate by less
    # than ~1e-6 rad there, so the tiny products of inertia of a nearly symmetric mesh (float-rounded
    # vertices) are dropped: the mesh frame stays a permutation of the file's axes
    moments, R = geometry.principal_axes(props.inertia, converge=False)
    if plugin is not None:
        # MuJoCo leaves a plugin mesh's frame at the geom frame (mesh pos 0, quat identity) yet gives
        # the geom the mesh's principal moments along its axes, about its origin: reproduced as is
        return replace(props, com=np.zeros(3), inertia=np.diag(moments))
    if np.allclose(np.abs(R), np.round(np.abs(R)), rtol=0.0, atol=1e-12):
        props = replace(props, inertia=R @ np.diag(moments) @ R.T)
    return props


def _mesh_data(rc: ReadContext, mesh: etree._Element, mname: str, el: etree._Element, ctx: Ctx,
               body: str) -> tuple[FloatArray, NDArray[np.int64] | None]:
    """Vertices and triangles (None: only vertices, MuJoCo takes their convex hull) of a mesh that
    no plugin generates: inline ``vertex``/``face``, a mesh file, or a ``builtin`` shape."""
    if mesh.get("vertex") is not None:
        V = floats(rc, mesh, mesh.get("vertex", ""), "vertex")
        if len(V) % 3 or len(V) < 12:
            raise rc.fail("mesh vertex needs at least 4 points of 3 numbers", mesh)
        V = V.reshape(-1, 3)
        if mesh.get("face") is None:
            return V, None
        face = floats(rc, mesh, mesh.get("face", ""), "face")
        if len(face) % 3 or np.any(np.round(face) != face) or np.any((face < 0) | (len(V) <= face)):
            raise rc.fail(f"mesh face needs triangles of vertex indices in 0..{len(V) - 1}, got "
                          f"{len(face)} numbers", mesh)
        return V, face.astype(np.int64).reshape(-1, 3)

    if mesh.get("file") is not None:
        path = asset_path(rc, mesh.get("file", ""), ctx.doc, mesh=True, el=mesh)
        if path is None or not limits.is_regular_file(path):
            raise rc.fail(f"body {body!r} takes its inertia from mesh {mname!r}, whose file "
                          f"{mesh.get('file')!r} was not found ({path}); give the body an <inertial> or "
                          "provide the mesh", el)
        try:
            return geometry.load_mesh(path)
        except (ValueError, OSError) as exc:
            raise rc.fail(f"cannot read mesh {str(path)!r}: {exc}", mesh) from None

    if mesh.get("builtin") is not None:
        params = floats(rc, mesh, mesh.get("params", ""), "params")
        try:
            V, F, forced = builtin_mesh(mesh.get("builtin", ""), params)
        except ValueError as exc:
            raise rc.fail(f"mesh {mname!r}: {exc}", mesh) from None
        if forced == "shell":
            raise rc.fail(f"body {body!r} takes its inertia from builtin mesh {mname!r}, a plate whose "
                          "shell inertia is not supported; give the body an <inertial>", el)
        return V, F

    raise rc.fail(f"mesh {mname!r} has neither vertex nor file", mesh)
