"""SDFormat documents, worlds and models into scopes: the model or world a file holds, nested and included models.

An ``<include>`` is read here too, because including a model means reading one (the included
file's ``<model>``, or a URDF seen as one); where the file is comes from
:mod:`~hebictl.formats.sdf.include`. Links and joints are read by :mod:`~hebictl.formats.sdf.links`
and :mod:`~hebictl.formats.sdf.joints`; each model's frame graph is its
:class:`~hebictl.formats.sdf.frames.Scope`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError
from hebictl.formats._xml import DRAKE_NS, HEBICTL_NS, elements, line_of, local_name, namespace
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.elements import (
    check_element,
    child_of,
    children_of,
    name_of,
    parse_sdf_xml,
    parse_version,
    pose_of,
    sdf_floats,
    text_of,
)
from hebictl.formats.sdf.frames import Entity, Scope, add_model_entity, parse_bool
from hebictl.formats.sdf.include import SdfInclude, model_config, resolve_uri
from hebictl.formats.sdf.joints import read_joint
from hebictl.formats.sdf.links import read_link
from hebictl.formats.sdf.writer import model_element
from hebictl.formats.urdf import load_urdf


def read_document(rc: ReadContext, root: etree._Element, file: str,
                  base_dir: Path | None) -> tuple[Scope, tuple[int, int]]:
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
        return read_world(rc, worlds[0], file, version, base_dir), version

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

    return read_model(rc, models[0], file, version, base_dir, None), version


def read_world(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int],
               base_dir: Path | None) -> Scope:
    """A ``<world>``: its gravity, models (read or included) and frames."""
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
            sub = read_model(rc, c, file, version, base_dir, world)
            add_model_entity(world, sub, c, file)
        elif tag == "include":
            read_include(rc, world, c, file, version, base_dir)
        elif tag == "frame":
            world.add(read_frame(rc, c, file, version, world))
        elif tag in ("light", "actor"):
            nm = c.get("name")
            if nm:
                world.add(Entity(tag, nm, c, file, np.eye(4)))

    world.check_references()
    return world


def read_model(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None,
               parent: Scope | None, include: SdfInclude | None = None) -> Scope:
    check_element(rc, elem, file, version)
    name = include.name if include and include.name else name_of(elem, file, version, "model")
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

    pose, rel, line = pose_of(rc, elem, file, version)

    if include is not None and include.pose is not None:
        pose, rel, line = include.pose, include.relative_to, include.pose_line

    scope.own_pose = (pose, rel, line)

    scope.drake = {}

    for c in elements(elem):
        tag, ns = c.tag, namespace(c)
        if ns is not None:
            if ns == DRAKE_NS:
                read_drake_model_element(rc, scope, c, file, version)
            elif ns == HEBICTL_NS and local_name(c) == "frames" and parent is None:
                rc.hebictl_frames = [f for f in c if local_name(f) == "frame"]
            elif ns == HEBICTL_NS and local_name(c) == "gravity" and parent is None:
                rc.gravity = sdf_floats(c, file, 3)
            continue
        if tag == "link":
            scope.add(read_link(rc, c, file, version, scope))
        elif tag == "joint":
            scope.add(read_joint(rc, c, file, version, scope, drake=False))
        elif tag == "frame":
            scope.add(read_frame(rc, c, file, version, scope))
        elif tag == "model":
            sub = read_model(rc, c, file, version, base_dir, scope)
            add_model_entity(scope, sub, c, file)
        elif tag == "include":
            read_include(rc, scope, c, file, version, base_dir)

    if not scope.static and not scope.of_kind("link") and not scope.of_kind("model"):
        raise FormatError(f"model {name!r} has no link: a model must have at least one link (or be <static>)",
                          file, line_of(elem))

    if scope.static:
        for j in scope.of_kind("joint"):
            if j.data["type"] != "fixed":
                raise FormatError(f"joint {j.name!r} of static model {name!r} is {j.data['type']}: only fixed "
                                  "joints are permitted in static models", j.file, line_of(j.elem))

    check_model(scope)
    return scope


def check_model(scope: Scope) -> None:
    """The specification's validity rules for one model scope (references, joints, canonical link)."""
    scope.check_references()
    file = scope.file
    if scope.canonical_attr and (scope.canonical_attr == "__root__"
                                 or scope.find_link(scope.canonical_attr) is None):
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


def read_frame(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int], scope: Scope) -> Entity:
    check_element(rc, elem, file, version)
    name = name_of(elem, file, version, "frame")
    pose, rel, line = pose_of(rc, elem, file, version)
    attached = (elem.get("attached_to") or "").strip() if version >= (1, 7) else ""
    return Entity("frame", name, elem, file, pose, rel, line, attached_to=attached)


def read_drake_model_element(rc: ReadContext, scope: Scope, c: etree._Element, file: str,
                             version: tuple[int, int]) -> None:
    """A ``<drake:...>`` child of a model: a Drake joint, or a constraint/filter group kept as metadata."""
    tag = local_name(c)
    drake = scope.drake
    if tag == "joint":
        scope.add(read_joint(rc, c, file, version, scope, drake=True))
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


# ---------------------------------------------------------------- included models
def read_include(rc: ReadContext, scope: Scope, elem: etree._Element, file: str, version: tuple[int, int],
                 base_dir: Path | None) -> None:
    check_element(rc, elem, file, version)
    uri_el = child_of(elem, "uri")
    uri = text_of(uri_el)
    if not uri:
        raise FormatError("<include> needs a <uri>", file, line_of(elem))

    path = resolve_uri(rc, uri, base_dir, file, line_of(uri_el))
    if path is None:
        where = ", ".join(str(p) for p in rc.model_paths) or "none given"
        raise FormatError(f"<include> uri {uri!r} not found (searched beside the file and the model paths: "
                          f"{where}; pass model_paths= or package_map=, or set SDF_PATH)", file, line_of(uri_el))

    if os.path.isdir(path):
        path = model_config(path, file, uri_el)

    inc = SdfInclude()
    nm = child_of(elem, "name")
    if nm is not None:
        inc.name = text_of(nm)

    if child_of(elem, "pose") is not None:
        inc.pose, inc.relative_to, inc.pose_line = pose_of(rc, elem, file, version)

    st = child_of(elem, "static")
    if st is not None:
        inc.static = parse_bool(text_of(st), st, file, "<static>")

    pf = child_of(elem, "placement_frame")
    if pf is not None:
        inc.placement_frame = text_of(pf)

    merge = parse_bool(elem.get("merge", "false"), elem, file, "merge attribute")
    resolved = path.resolve()
    if resolved in rc.include_stack:
        raise FormatError(f"<include> of {path} is recursive (it includes itself)", file, line_of(elem))

    lim = limits.current()
    rc.include_count += 1

    if rc.include_count > lim.max_include_count or len(rc.include_stack) >= lim.max_include_depth:
        which = "max_include_count" if rc.include_count > lim.max_include_count else "max_include_depth"
        raise limits.exceeded("includes" if which == "max_include_count" else "include depth",
                              rc.include_count if which == "max_include_count" else len(rc.include_stack) + 1,
                              which, file, line_of(elem))

    rc.include_stack.append(resolved)

    try:
        sub = included_model(rc, path, inc, scope, file, elem)
    finally:
        rc.include_stack.pop()

    if sub is None:
        return

    if inc.name:
        name_of(etree.Element("model", name=inc.name), file, version, "model")

    if merge:
        merge_into(scope, sub, elem, file)
    else:
        add_model_entity(scope, sub, elem, file)


def included_model(rc: ReadContext, path: Path, inc: SdfInclude, parent: Scope, file: str,
                   elem: etree._Element) -> Scope | None:
    if path.suffix.lower() == ".urdf":
        return included_urdf(rc, path, inc, parent, file, elem)

    root = parse_sdf_xml(path, str(path))
    if local_name(root) != "sdf":
        raise FormatError(f"<include>d file {path} is not SDF (root <{local_name(root)}>)", file, line_of(elem))

    version = parse_version(root.get("version"), root, str(path))
    models = children_of(root, "model")
    if len(models) != 1:
        if not models and (children_of(root, "actor") or children_of(root, "light")):
            rc.ignored["<include> of an actor or light"] = rc.ignored.get("<include> of an actor or light",
                                                                          0) + 1
            return None
        raise FormatError(f"<include>d file {path} must hold exactly one <model>, it has {len(models)}", file,
                          line_of(elem))

    return read_model(rc, models[0], str(path), version, path.resolve().parent, parent, inc)


def included_urdf(rc: ReadContext, path: Path, inc: SdfInclude, parent: Scope, file: str,
                  elem: etree._Element) -> Scope:
    """A URDF brought in by <include>: read by the URDF reader, then seen as an SDF model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        urdf = load_urdf(path, package_map=rc.package_map, strict=rc.strict)
    model_el = model_element(urdf, weld_root=False)
    return read_model(rc, model_el, str(path), (1, 9), path.resolve().parent, parent, inc)


def merge_into(scope: Scope, sub: Scope, elem: etree._Element, file: str) -> None:
    """``<include merge="true">``: the included model's frames join the including scope."""
    if sub.placement_frame:
        raise FormatError("<include merge=\"true\"> with a placement_frame is not supported", file, line_of(elem))

    proxy = f"_merged__{sub.name}__model__"
    pose, rel, line = sub.own_pose
    canonical = sub.canonical()
    attach = canonical[1] if canonical is not None else ""
    scope.add(Entity("frame", proxy, elem, file, pose, rel or scope.root_frame, line, attached_to=attach))

    def redirect(ref: str) -> str:
        return proxy if ref in ("", "__model__") else ref

    for e in sub.entities.values():
        if e.kind == "joint":
            e.parent = e.parent if e.parent == "world" else redirect(e.parent)
            e.child = redirect(e.child)
            e.data["expressed_in"] = [proxy if x == "__model__" else x for x in e.data.get("expressed_in", [])]
            e.relative_to = "" if not e.relative_to else redirect(e.relative_to)
        elif e.kind == "frame":
            e.attached_to = redirect(e.attached_to)
            e.relative_to = "" if not e.relative_to else redirect(e.relative_to)
        else:
            e.relative_to = redirect(e.relative_to)
        if e.scope is not None:
            e.scope.parent = scope
        scope.add(e)

    drake = getattr(scope, "drake", None)
    if drake is not None:
        for k, v in getattr(sub, "drake", {}).items():
            drake.setdefault(k, []).extend(v)


