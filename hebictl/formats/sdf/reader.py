"""SDFormat reader: documents, worlds, models and frames into scopes, then a RobotModel.

Links, joints and includes are read by the bases in :mod:`~hebictl.formats.sdf.links`,
:mod:`~hebictl.formats.sdf.joints` and :mod:`~hebictl.formats.sdf.include`; the scopes are built into
a model by :mod:`~hebictl.formats.sdf.build`. What the reader follows is listed in :mod:`hebictl.formats.sdf`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError
from hebictl.formats._xml import DRAKE_NS, HEBICTL_NS, elements, line_of, local_name, namespace
from hebictl.formats.rotations import inverse_transform
from hebictl.formats.sdf.build import Flattener, build
from hebictl.formats.sdf.elements import child_of, children_of, parse_sdf_xml, parse_version, sdf_floats, text_of
from hebictl.formats.sdf.frames import SCOPE, Entity, Scope, add_model_entity, parse_bool
from hebictl.formats.sdf.include import IncludeReader, SdfInclude
from hebictl.formats.sdf.joints import JointReader
from hebictl.formats.sdf.links import LinkReader

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


# ====================================================================== reader
class _Reader(IncludeReader, LinkReader, JointReader):
    """One load: documents, worlds and models read into scopes (includes, links and joints by the bases)."""

    # ------------------------------------------------------------------ documents
    def read_document(self, root: etree._Element, file: str, base_dir: Path | None) -> tuple[Scope, tuple[int, int]]:
        """The world or the model of an ``<sdf>`` document."""
        tag = local_name(root)
        if tag == "element" and root.get("name") is not None:
            raise FormatError("this is an SDFormat specification (schema) file describing the element "
                              f"<{root.get('name')}>, not a robot description", file, line_of(root))
        if tag != "sdf" or namespace(root) is not None:
            raise FormatError(f"SDFormat root element must be <sdf version=...>, got <{tag}>", file, line_of(root))
        version = parse_version(root.get("version"), root, file)
        worlds = children_of(root, "world")
        models = children_of(root, "model")
        others = [c for c in elements(root) if c.tag in ("actor", "light")]
        if worlds and (models or len(worlds) > 1):
            raise FormatError(f"an <sdf> may hold one <world> or one <model>; this one has {len(worlds)} world(s) "
                              f"and {len(models)} model(s)", file, line_of(root))
        if worlds:
            return self.read_world(worlds[0], file, version, base_dir), version
        if len(models) > 1:
            raise FormatError(f"an <sdf> may hold only one <model>, this one has {len(models)} (put several in a "
                              "<world>)", file, line_of(models[1]))
        if models and others:
            raise FormatError(f"the <sdf> root may hold only one of <model>, <light> or <actor>; it also has "
                              f"<{others[0].tag}>", file, line_of(others[0]))
        if not models:
            raise FormatError("no <model> or <world> in this SDF file", file, line_of(root))
        for c in elements(root):
            if c.tag not in ("model", "world", "actor", "light") and namespace(c) is None:
                raise FormatError(f"<{c.tag}> is not an SDFormat root element", file, line_of(c))
        return self.read_model(models[0], file, version, base_dir, None), version

    def read_world(self, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None) -> Scope:
        name = elem.get("name")
        if not name:
            raise FormatError("<world> is missing the required attribute 'name'", file, line_of(elem))
        world = Scope("world", name, elem, file, version)
        gravity = child_of(elem, "gravity")
        physics = child_of(elem, "physics")
        if gravity is None and physics is not None and version < (1, 5):
            gravity = child_of(physics, "gravity")
        world.entities_data = {"gravity": sdf_floats(gravity, file, 3) if gravity is not None
                               else np.array([0.0, 0.0, -9.8])}
        for c in elements(elem):
            tag = c.tag
            if tag == "model":
                sub = self.read_model(c, file, version, base_dir, world)
                add_model_entity(world, sub, c, file)
            elif tag == "include":
                self.read_include(world, c, file, version, base_dir)
            elif tag == "frame":
                world.add(self.read_frame(c, file, version, world))
            elif tag in ("light", "actor"):
                nm = c.get("name")
                if nm:
                    world.add(Entity(tag, nm, c, file, np.eye(4)))
        world.check_references()
        return world

    # ------------------------------------------------------------------ models

    def read_model(self, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None,
                   parent: Scope | None, include: SdfInclude | None = None) -> Scope:
        self.check_element(elem, file, version)
        name = include.name if include and include.name else self.name_of(elem, file, version, "model")
        scope = Scope("model", name, elem, file, version, parent)
        scope.base_dir = base_dir
        scope.file_root = parent is None or include is not None or parent.kind == "world"
        scope.canonical_attr = (elem.get("canonical_link") or "").strip()
        scope.placement_frame = (elem.get("placement_frame") or "").strip()
        if include is not None and include.placement_frame:
            scope.placement_frame = include.placement_frame
        if scope.placement_frame == "__root__":
            raise FormatError("placement_frame=\"__root__\": '__root__' is reserved and cannot be used", file,
                              line_of(elem))
        st = child_of(elem, "static")
        scope.static = parse_bool(text_of(st), st, file, "<static>") if st is not None else False
        if include is not None and include.static is not None:
            scope.static = include.static
        pose, rel, line = self.pose_of(elem, file, version)
        if include is not None and include.pose is not None:
            pose, rel, line = include.pose, include.relative_to, include.pose_line
        scope.own_pose = (pose, rel, line)
        scope.drake = {}
        for c in elements(elem):
            tag, ns = c.tag, namespace(c)
            if ns is not None:
                if ns == DRAKE_NS:
                    self.read_drake_model_element(scope, c, file, version)
                elif ns == HEBICTL_NS and local_name(c) == "frames" and parent is None:
                    self.hebictl_frames = [f for f in c if local_name(f) == "frame"]
                elif ns == HEBICTL_NS and local_name(c) == "gravity" and parent is None:
                    self.gravity = sdf_floats(c, file, 3)
                continue
            if tag == "link":
                scope.add(self.read_link(c, file, version, scope))
            elif tag == "joint":
                scope.add(self.read_joint(c, file, version, scope, drake=False))
            elif tag == "frame":
                scope.add(self.read_frame(c, file, version, scope))
            elif tag == "model":
                sub = self.read_model(c, file, version, base_dir, scope)
                add_model_entity(scope, sub, c, file)
            elif tag == "include":
                self.read_include(scope, c, file, version, base_dir)
        if not scope.static and not scope.of_kind("link") and not scope.of_kind("model"):
            raise FormatError(f"model {name!r} has no link: a model must have at least one link (or be <static>)",
                              file, line_of(elem))
        if scope.static:
            for j in scope.of_kind("joint"):
                if j.data["type"] != "fixed":
                    raise FormatError(f"joint {j.name!r} of static model {name!r} is {j.data['type']}: only fixed "
                                      "joints are permitted in static models", j.file, line_of(j.elem))
        self.check_model(scope)
        return scope

    def check_model(self, scope: Scope) -> None:
        """The specification's validity rules for one model scope (references, joints, canonical link)."""
        scope.check_references()
        file = scope.file
        if scope.canonical_attr and (scope.canonical_attr == "__root__"
                                     or scope._find_link(scope.canonical_attr) is None):
            raise FormatError(f"canonical_link {scope.canonical_attr!r} is not a link of model {scope.name!r}",
                              file, line_of(scope.elem))
        if scope.placement_frame and not scope.has_frame(scope.placement_frame):
            raise FormatError(f"placement_frame {scope.placement_frame!r} is not a frame of model {scope.name!r}",
                              file, line_of(scope.elem))
        for j in scope.of_kind("joint"):
            jf, jl = j.file, line_of(j.elem)
            if j.child == "world":
                raise FormatError(f"joint {j.name!r}: the child may not be 'world'", jf, jl)
            if j.parent == j.name:
                raise FormatError(f"joint {j.name!r} names itself as its parent frame", jf, jl)
            if j.child == j.name:
                raise FormatError(f"joint {j.name!r} names itself as its child frame (an attached_to cycle)", jf, jl)
            if j.parent == j.child:
                raise FormatError(f"joint {j.name!r} has the same parent and child frame {j.child!r}", jf, jl)
            for role, ref in (("parent", j.parent), ("child", j.child)):
                if ref == "world" and role == "parent":
                    continue
                if ref == "__root__" or not scope.has_frame(ref):
                    raise FormatError(f"joint {j.name!r}: {role} frame {ref!r} is not a link, joint, frame or nested "
                                      f"model of model {scope.name!r}", jf, jl)
            expressed = j.data.get("expressed_in", [])
            for e in expressed:
                if e and not scope.has_frame(e):
                    raise FormatError(f"joint {j.name!r}: axis xyz expressed_in frame {e!r} is not a frame of "
                                      f"model {scope.name!r}", jf, jl)
        # attached-to graph: every frame reaches a link (cycle errors come from here)
        for e in scope.entities.values():
            if e.kind in ("frame", "joint"):
                scope.link_of(e.name)
        for j in scope.of_kind("joint"):
            parent = None if j.parent == "world" else scope.link_of(j.parent)
            child = scope.link_of(j.child)
            if child is None:
                raise FormatError(f"joint {j.name!r}: child frame {j.child!r} is not attached to any link", j.file,
                                  line_of(j.elem))
            if parent is not None and parent[0] is child[0] and parent[1] == child[1]:
                raise FormatError(f"joint {j.name!r}: parent {j.parent!r} and child {j.child!r} both resolve to link "
                                  f"{child[1]!r}; they must be different links", j.file, line_of(j.elem))
        for e in scope.entities.values():
            scope.pose(e.name)  # relative_to cycles

    # ------------------------------------------------------------------ joints and frames

    def read_frame(self, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> Entity:
        self.check_element(elem, file, version)
        name = self.name_of(elem, file, version, "frame")
        pose, rel, line = self.pose_of(elem, file, version)
        attached = (elem.get("attached_to") or "").strip() if version >= (1, 7) else ""
        return Entity("frame", name, elem, file, pose, rel, line, attached_to=attached)

    def read_drake_model_element(self, scope: Scope, c: etree._Element, file: str, version: tuple[int, int]) -> None:
        tag = local_name(c)
        drake = scope.drake
        if tag == "joint":
            scope.add(self.read_joint(c, file, version, scope, drake=True))
        elif tag == "collision_filter_group":
            drake.setdefault("collision_filter_groups", []).append({
                "name": c.get("name"), "ignore": c.get("ignore"),
                "members": [text_of(m) for m in c if local_name(m) == "member"],
                "member_groups": [text_of(m) for m in c if local_name(m) == "member_group"],
                "ignored_groups": [text_of(m) for m in c if local_name(m) == "ignored_collision_filter_group"]})
        elif tag in ("ball_constraint", "linear_bushing_rpy", "weld_constraint"):
            drake.setdefault(tag, []).append({local_name(k): text_of(k) for k in elements(c)})
        else:
            drake.setdefault("other", []).append(tag)


# ====================================================================== public API
def _load(root: etree._Element, file: str, base_dir: Path | None, *, model: str | None, floating_base: bool,
          package_map: Mapping[str, str | Path] | None, model_paths: Sequence[str | Path] | None,
          source: str | None, strict: bool = False) -> RobotModel:
    reader = _Reader(package_map, model_paths, floating_base, strict)
    reader.file = file
    scope, version = reader.read_document(root, file, base_dir)
    flat = Flattener(reader)
    gravity = np.array([0.0, 0.0, -9.81])
    meta: dict[str, Any] = {"sdf_version": f"{version[0]}.{version[1]}"}
    if scope.kind == "world":
        gravity = scope.entities_data["gravity"]
        meta["world"] = scope.name
        names = [e.name for e in scope.of_kind("model")]
        if model is not None:
            if model not in names:
                raise FormatError(f"world {scope.name!r} has no model {model!r}; it has {names}", file,
                                  line_of(scope.elem))
            chosen = scope.entities[model]
            assert chosen.scope is not None
            flat.model(chosen.scope, scope.pose(model), "")
            name = model
        else:
            for e in scope.of_kind("model"):
                assert e.scope is not None
                flat.model(e.scope, scope.pose(e.name), e.name + SCOPE)
            for e in scope.of_kind("frame"):
                found = scope.link_of(e.name)
                flat.frames.append(("frame", e.name, None if found is None else found[0].prefix + found[1],
                                    scope.pose(e.name)))
            name = scope.name
    else:
        if model is not None and model != scope.name:
            raise FormatError(f"the file's model is {scope.name!r}, not {model!r}", file, line_of(scope.elem))
        pose, rel, line = scope.own_pose
        if rel and rel != "world":
            raise FormatError(f"the top-level model's pose is relative_to {rel!r}; only the world frame is defined "
                              "outside a model", file, line)
        X_W = pose
        if scope.placement_frame:
            X_W = X_W @ inverse_transform(scope.pose(scope.placement_frame))
        flat.model(scope, X_W, "")
        name = scope.name
    if reader.gravity is not None:
        gravity = reader.gravity
    meta["models"] = flat.models
    if flat.drake:
        meta["drake"] = flat.drake
    if reader.ignored:
        meta["ignored_elements"] = dict(reader.ignored)
    if reader.missing_meshes:
        meta["missing_meshes"] = list(reader.missing_meshes)
    return build(flat, name, source, gravity, floating_base, meta)


def load_sdf(path: str | Path, *, model: str | None = None, floating_base: bool = False,
             package_map: Mapping[str, str | Path] | None = None,
             model_paths: Sequence[str | Path] | None = None, strict: bool = False) -> RobotModel:
    """Read an SDFormat file (``.sdf`` or ``.world``).

    ``model`` picks one model of a world (default: all of them, names prefixed ``<model>::``);
    ``floating_base`` gives links that no joint moves a free joint instead of welding them to
    the world; ``package_map`` maps ``package://`` names to folders; ``model_paths`` are searched
    for ``<include>`` URIs (as libsdformat's ``SDF_PATH``). ``strict=True`` rejects what Drake's
    libsdformat only tolerates (an element of another SDFormat version) instead of warning.
    """
    p = Path(path)
    root = parse_sdf_xml(p, str(p))
    return _load(root, str(p), p.resolve().parent, model=model, floating_base=floating_base,
                 package_map=package_map, model_paths=model_paths, source=str(p), strict=strict)


def load_sdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                    model: str | None = None, floating_base: bool = False,
                    package_map: Mapping[str, str | Path] | None = None,
                    model_paths: Sequence[str | Path] | None = None, strict: bool = False) -> RobotModel:
    """Read SDFormat text; relative ``<include>`` URIs resolve against ``base_dir`` (``strict``: see load_sdf)."""
    root = parse_sdf_xml(text, source_name)
    return _load(root, source_name, Path(base_dir) if base_dir is not None else None, model=model,
                 floating_base=floating_base, package_map=package_map, model_paths=model_paths,
                 source=None if source_name == "<string>" else source_name, strict=strict)
