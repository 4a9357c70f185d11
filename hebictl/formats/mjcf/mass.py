"""MJCF inertia: a body's mass properties from ``<inertial>`` or from its geoms and meshes, as MuJoCo computes them.

MuJoCo's compiler rules are reproduced here (``inertiafromgeom``, ``boundmass``/``boundinertia``,
``balanceinertia``, mesh inertia ``legacy``/``exact``/``convex``, shell inertia refused) so that
masses agree with ``mj_setConst`` to rounding.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.formats import geometry
from hebictl.formats.mjcf.builtin_meshes import builtin_mesh
from hebictl.formats.mjcf.document import (
    ORIENT,
    PRIMITIVES,
    VOLUME_TYPES,
    Compiler,
    Ctx,
    Doc,
    DocumentReader,
    Item,
    mjcf_bool,
)
from hebictl.formats.mjcf.sdf_plugin_meshes import mesh_plugin_config, sdf_plugin_mesh
from hebictl.formats.rotations import (
    MJMINVAL,
    quat_matrix,
    transform,
    z_to_vector,
)
from hebictl.model.tree import Inertia

if TYPE_CHECKING:
    pass


class MassReader(DocumentReader):
    """The inertia part of an MJCF read (bodies' mass properties from their geoms)."""

    def shape_pose(self, elem: etree._Element, tag: str, ctx: Ctx, cls: str) -> tuple[FloatArray, float | None]:
        """Pose of a geom/site in its body frame; with ``fromto``, also the half length it implies."""
        fromto = self.vec(elem, tag, "fromto", ctx, None, 6, cls)
        gtype = self.flag(elem, tag, "type", ctx, "sphere", cls)
        if fromto is not None and gtype in ("capsule", "cylinder", "box", "ellipsoid"):
            a, b = fromto[:3], fromto[3:]
            d = a - b  # MuJoCo points the shape's z axis from "to" back to "from"
            half = float(np.linalg.norm(d)) / 2.0
            if half < MJMINVAL:
                raise self.fail("fromto points coincide", elem)
            return transform(z_to_vector(d / (2 * half)), (a + b) / 2.0), half
        return self.pose(elem, tag, ctx, cls), None

    def geom_shape(self, item: Item, cls: str) -> tuple[FloatArray, float | None]:
        """A geom's pose in its body frame (frames applied) and fromto half length, cached on the item."""
        if item.shape is None:
            T, half = self.shape_pose(item.elem, "geom", item.ctx, cls)
            item.shape = (item.T @ T, half)
        return item.shape

    def body_inertia(self, el: etree._Element, name: str, items: list[Item], doc: Doc) -> Inertia:
        comp = doc.compiler
        inertials = [i for i in items if i.tag == "inertial"]
        if len(inertials) > 1:
            raise self.fail(f"body {name!r} has more than one <inertial>", inertials[1].elem)
        if inertials and comp.inertiafromgeom != "true":
            props = self.inertial(inertials[0])
        elif comp.inertiafromgeom == "false":
            props = geometry.MassProperties(0.0, np.zeros(3), np.zeros((3, 3)))
        else:
            moving = any(i.tag in ("joint", "freejoint") for i in items)
            parts = [self.geom_mass(i, name, moving) for i in items if i.tag == "geom"]
            props = geometry.combine(p for p in parts if p is not None)
        return self.mass_rules(props, name, el, comp)

    def mass_rules(self, props: geometry.MassProperties, name: str, el: etree._Element,
                   comp: Compiler) -> Inertia:
        """compiler boundmass/boundinertia/balanceinertia and settotalmass, and MuJoCo's A + B >= C check."""
        mass, I = props.mass, props.inertia
        if not (math.isfinite(mass) and np.all(np.isfinite(I)) and np.all(np.isfinite(props.com))):
            # e.g. a geom whose size or fromto is near 1e300: its volume or inertia overflows
            raise self.fail(f"mass properties of body {name!r} overflow (mass {mass:.3g}); check its geom "
                            "sizes, positions and densities", el)
        evals, evecs = np.linalg.eigh(I)
        changed = False
        if comp.boundmass > 0 and mass < comp.boundmass:
            mass, changed = comp.boundmass, True
        if comp.boundinertia > 0 and np.any(evals < comp.boundinertia):
            evals, changed = np.maximum(evals, comp.boundinertia), True
        if evals[0] + evals[1] < evals[2] - MJMINVAL:
            if not comp.balanceinertia:
                raise self.fail(f"inertia of body {name!r} must satisfy A + B >= C; use 'balanceinertia' to fix", el)
            evals, changed = np.full(3, evals.mean()), True
        if changed:
            I = evecs @ np.diag(evals) @ evecs.T
        com = props.com if props.mass > 0 else np.zeros(3)
        return Inertia(mass * self.mass_scale, com, 0.5 * (I + I.T) * self.mass_scale)

    def inertial(self, item: Item) -> geometry.MassProperties:
        el, ctx = item.elem, item.ctx
        if el.get("pos") is None or el.get("mass") is None:
            raise self.fail("<inertial> needs pos and mass", el)
        T = item.T @ self.pose(el, "inertial", ctx)
        mass = float(self.floats(el, el.get("mass", ""), "mass", 1)[0])
        if mass < 0:
            raise self.fail(f"negative mass {mass} in <inertial>", el)
        if el.get("fullinertia") is not None:
            if any(el.get(a) is not None for a in ORIENT):
                raise self.fail("<inertial>: at most one of 'fullinertia', 'quat', 'axisangle', 'xyaxes', 'zaxis', "
                                "'euler' can be specified", el)
            v = self.floats(el, el.get("fullinertia", ""), "fullinertia", 6)
            I = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
            if el.get("diaginertia") is not None:
                raise self.fail("<inertial> cannot have both diaginertia and fullinertia", el)
        elif el.get("diaginertia") is not None:
            I = np.diag(self.floats(el, el.get("diaginertia", ""), "diaginertia", 3))
        else:
            raise self.fail("<inertial> needs diaginertia or fullinertia", el)
        R = T[:3, :3]
        return geometry.MassProperties(mass, T[:3, 3].copy(), R @ I @ R.T)

    def geom_mass(self, item: Item, body: str, moving: bool) -> geometry.MassProperties | None:
        el, ctx = item.elem, item.ctx
        comp = ctx.doc.compiler
        cls = self.cls(el, ctx)
        gtype = self.flag(el, "geom", "type", ctx, "sphere", cls)
        group = int(self.num(el, "geom", "group", ctx, 0.0, cls))
        lo, hi = comp.inertiagrouprange
        if not lo <= group <= hi:
            return None
        if gtype == "plane":
            if moving:
                raise self.fail("plane only allowed in static bodies", el)
            return None
        fitted = self.get(el, "geom", "mesh", ctx, cls)
        if gtype in PRIMITIVES and fitted is not None:
            raise self.fail(f"geom in body {body!r} is a {gtype} fitted to mesh {fitted!r}: fitting primitives to "
                            "meshes is not supported; give the body an <inertial>", el)
        if gtype not in VOLUME_TYPES:
            raise self.fail(f"geom type {gtype!r} in body {body!r}: inertia from it is not supported; give the body "
                            "an <inertial>", el)
        if mjcf_bool(self.flag(el, "geom", "shellinertia", ctx, "false", cls), "shellinertia", self, el):
            raise self.fail("shellinertia is not supported; give the body an <inertial>", el)
        T, half = self.geom_shape(item, cls)
        mass_text = self.get(el, "geom", "mass", ctx, cls)
        density = self.num(el, "geom", "density", ctx, 1000.0, cls)
        if gtype in ("mesh", "sdf"):
            if mass_text is not None and float(self.floats(el, mass_text, "mass", 1)[0]) == 0.0:
                return None  # a massless mesh adds nothing, whatever its shape (MuJoCo's tactile sensor meshes)
            props = self.mesh_mass(el, ctx, cls, body)
            volume = props.mass  # computed with density 1
            if mass_text is not None:
                density = float(self.floats(el, mass_text, "mass", 1)[0]) / volume
            local = geometry.MassProperties(props.mass * density, props.com, props.inertia * density)
            return local.transformed(T)
        if gtype == "hfield":
            gtype, size = "box", self.hfield_box(el, ctx, cls)
        else:
            size = self.vec(el, "geom", "size", ctx, (0.0, 0.0, 0.0), (1, 2, 3), cls)
            size = np.concatenate([size, np.zeros(3 - len(size))])
        if half is not None:
            if gtype in ("capsule", "cylinder"):
                size[1] = half
            else:  # box, ellipsoid: MuJoCo uses size[0] across the segment
                size[1:] = size[0], half
        need = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}[gtype]
        for k in range(need):
            if size[k] <= 0:
                raise self.fail(f"size {k} must be positive in geom", el)
        volume, unit = _shape(gtype, size)
        mass = density * volume
        if mass_text is not None:
            mass = float(self.floats(el, mass_text, "mass", 1)[0])
        return geometry.MassProperties(mass, T[:3, 3].copy(), T[:3, :3] @ (unit * mass) @ T[:3, :3].T)

    def hfield_box(self, el: etree._Element, ctx: Ctx, cls: str) -> FloatArray:
        """Half sizes of the box MuJoCo uses for a height field's inertia: (rx, ry, (elevation/2 + base)/2)."""
        name = self.get(el, "geom", "hfield", ctx, cls)
        asset = next((h for a in ctx.doc.root.iterchildren("asset") for h in a.iterchildren("hfield")
                      if h.get("name") == name or (h.get("file") and Path(h.get("file", "")).stem == name)), None)
        if asset is None:
            raise self.fail(f"hfield {name!r} not found in geom", el)
        size = self.floats(asset, asset.get("size", ""), "size", 4)
        return np.array([size[0], size[1], (size[2] / 2.0 + size[3]) / 2.0])

    def mesh_mass(self, el: etree._Element, ctx: Ctx, cls: str, body: str) -> geometry.MassProperties:
        """Volume (as mass at density 1), centroid and unit-density inertia of a mesh, in mesh coordinates.

        Computed once per mesh asset: a model may place one mesh thousands of times, and a convex hull
        per geom made such a file take seconds."""
        key = (id(ctx.doc), self.get(el, "geom", "mesh", ctx, cls))
        cache: dict[tuple[int, str | None], geometry.MassProperties] = self.__dict__.setdefault("_mesh_props", {})
        if key not in cache:
            cache[key] = self._mesh_mass(el, ctx, cls, body)
        return cache[key]

    def _mesh_mass(self, el: etree._Element, ctx: Ctx, cls: str, body: str) -> geometry.MassProperties:  # noqa: C901 (one branch per attribute of the element it reads)
        mname = self.get(el, "geom", "mesh", ctx, cls)
        if mname is None:
            raise self.fail("mesh geom needs a mesh attribute", el)
        mesh = ctx.doc.meshes.get(mname)
        if mesh is None:
            raise self.fail(f"mesh {mname!r} not found in geom", el)
        mcls = mesh.get("class") or "main"
        mdefaults = ctx.doc.defaults.get(mcls, {}).get("mesh", {})
        get = lambda key: mesh.get(key) if mesh.get(key) is not None else mdefaults.get(key)  # noqa: E731
        plugin = mesh.find("plugin") if mesh.get("file") is None else None  # MuJoCo: a file wins over a plugin
        if plugin is not None:
            if get("scale") is not None and np.any(self.floats(mesh, get("scale") or "", "scale", 3) != 1):
                raise self.fail(f"attribute scale is not compatible with SDFs in mesh {mname!r}", mesh)
            try:
                V, F = sdf_plugin_mesh(*mesh_plugin_config(plugin, ctx.doc.root))
            except ValueError as exc:
                raise self.fail(f"body {body!r} takes its inertia from mesh {mname!r}, which a plugin generates: "
                                f"{exc}; give the body an <inertial>", el) from None
        elif mesh.get("vertex") is not None:
            V = self.floats(mesh, mesh.get("vertex", ""), "vertex")
            if len(V) % 3 or len(V) < 12:
                raise self.fail("mesh vertex needs at least 4 points of 3 numbers", mesh)
            V = V.reshape(-1, 3)
            F = None
            if mesh.get("face") is not None:
                face = self.floats(mesh, mesh.get("face", ""), "face")
                if len(face) % 3 or np.any(np.round(face) != face) or np.any((face < 0) | (len(V) <= face)):
                    raise self.fail(f"mesh face needs triangles of vertex indices in 0..{len(V) - 1}, got "
                                    f"{len(face)} numbers", mesh)
                F = face.astype(np.int64).reshape(-1, 3)
        elif mesh.get("file") is not None:
            path = self.asset_path(mesh.get("file", ""), ctx.doc, mesh=True, el=mesh)
            if path is None or not limits.is_regular_file(path):
                raise self.fail(f"body {body!r} takes its inertia from mesh {mname!r}, whose file "
                                f"{mesh.get('file')!r} was not found ({path}); give the body an <inertial> or "
                                "provide the mesh", el)
            try:
                V, F = geometry.load_mesh(path)
            except (ValueError, OSError) as exc:
                raise self.fail(f"cannot read mesh {str(path)!r}: {exc}", mesh) from None
        elif mesh.get("builtin") is not None:
            params = self.floats(mesh, mesh.get("params", ""), "params")
            try:
                V, F, forced = builtin_mesh(mesh.get("builtin", ""), params)
            except ValueError as exc:
                raise self.fail(f"mesh {mname!r}: {exc}", mesh) from None
            if forced == "shell":
                raise self.fail(f"body {body!r} takes its inertia from builtin mesh {mname!r}, a plate whose "
                                "shell inertia is not supported; give the body an <inertial>", el)
        else:
            raise self.fail(f"mesh {mname!r} has neither vertex nor file", mesh)
        V = V.astype(np.float32).astype(np.float64)  # MuJoCo keeps mesh vertices in single precision
        scale = get("scale")
        if scale is not None:
            V = V * self.floats(mesh, scale, "scale", 3)
        refpos, refquat = mesh.get("refpos"), mesh.get("refquat")
        if refpos is not None:
            V = V - self.floats(mesh, refpos, "refpos", 3)
        if refquat is not None:
            V = V @ quat_matrix(self.floats(mesh, refquat, "refquat", 4))
        method = get("inertia") or "legacy"
        try:
            if F is None or method == "convex":
                props = geometry.convex_hull_properties(V, 1.0)
            elif method == "exact":
                props = geometry.mesh_properties(V, F, 1.0)
            elif method == "legacy":
                props = geometry.legacy_mesh_properties(V, F, 1.0)
            else:
                raise self.fail(f"mesh inertia {method!r} is not supported (use convex, exact or legacy)", mesh)
        except ValueError as exc:
            raise self.fail(f"mesh {mname!r}: {exc}", mesh) from None
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


def _shape(gtype: str, size: FloatArray) -> tuple[float, FloatArray]:
    """Volume [m³] and inertia per unit mass of a MuJoCo primitive."""
    if gtype == "sphere":
        return geometry.sphere_volume(size[0]), geometry.sphere_inertia(1.0, size[0])
    if gtype == "capsule":
        return geometry.capsule_volume(size[0], size[1]), geometry.capsule_inertia(1.0, size[0], size[1])
    if gtype == "cylinder":
        return geometry.cylinder_volume(size[0], size[1]), geometry.cylinder_inertia(1.0, size[0], size[1])
    if gtype == "ellipsoid":
        return geometry.ellipsoid_volume(*size[:3]), geometry.ellipsoid_inertia(1.0, *size[:3])
    return geometry.box_volume(*size[:3]), geometry.box_inertia(1.0, *size[:3])
