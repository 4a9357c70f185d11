"""SDFormat ``<include>``: resolving URIs (``model://``, ``package://``, paths) and merging included models.

An included SDF file is read as a nested model; an included URDF file is loaded by the URDF
reader (:mod:`hebictl.formats.urdf`) and seen as an SDF model through the SDF writer's
``<model>`` element, so only the two formats' public entry points are involved.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError
from hebictl.formats._xml import line_of, local_name, parse_xml
from hebictl.formats.sdf.elements import (
    SUPPORTED,
    ElementReader,
    child_of,
    children_of,
    parse_sdf_xml,
    parse_version,
    text_of,
)
from hebictl.formats.sdf.frames import Entity, Scope, add_model_entity, parse_bool
from hebictl.formats.sdf.writer import model_element
from hebictl.formats.urdf import load_urdf

if TYPE_CHECKING:
    pass


@dataclass
class SdfInclude:
    """What an ``<include>`` overrides on the model it brings in."""

    name: str | None = None
    pose: np.ndarray | None = None
    relative_to: str = ""
    pose_line: int | None = None
    static: bool | None = None
    placement_frame: str = ""


class IncludeReader(ElementReader):
    """The ``<include>`` part of an SDFormat read."""

    def read_include(self, scope: Scope, elem: etree._Element, file: str, version: tuple[int, int],
                     base_dir: Path | None) -> None:
        self.check_element(elem, file, version)
        uri_el = child_of(elem, "uri")
        uri = text_of(uri_el)
        if not uri:
            raise FormatError("<include> needs a <uri>", file, line_of(elem))
        path = self.resolve_uri(uri, base_dir, file, line_of(uri_el))
        if path is None:
            where = ", ".join(str(p) for p in self.model_paths) or "none given"
            raise FormatError(f"<include> uri {uri!r} not found (searched beside the file and the model paths: "
                              f"{where}; pass model_paths= or package_map=, or set SDF_PATH)", file, line_of(uri_el))
        if os.path.isdir(path):
            path = self.model_config(path, file, uri_el)
        inc = SdfInclude()
        nm = child_of(elem, "name")
        if nm is not None:
            inc.name = text_of(nm)
        if child_of(elem, "pose") is not None:
            inc.pose, inc.relative_to, inc.pose_line = self.pose_of(elem, file, version)
        st = child_of(elem, "static")
        if st is not None:
            inc.static = parse_bool(text_of(st), st, file, "<static>")
        pf = child_of(elem, "placement_frame")
        if pf is not None:
            inc.placement_frame = text_of(pf)
        merge = parse_bool(elem.get("merge", "false"), elem, file, "merge attribute")
        resolved = path.resolve()
        if resolved in self.include_stack:
            raise FormatError(f"<include> of {path} is recursive (it includes itself)", file, line_of(elem))
        lim = limits.current()
        self.include_count = getattr(self, "include_count", 0) + 1
        if self.include_count > lim.max_include_count or len(self.include_stack) >= lim.max_include_depth:
            which = "max_include_count" if self.include_count > lim.max_include_count else "max_include_depth"
            raise limits.exceeded("includes" if which == "max_include_count" else "include depth",
                                  self.include_count if which == "max_include_count" else len(self.include_stack) + 1,
                                  which, file, line_of(elem))
        self.include_stack.append(resolved)
        try:
            sub = self.included_model(path, inc, scope, file, elem)
        finally:
            self.include_stack.pop()
        if sub is None:
            return
        if inc.name:
            self.name_of(etree.Element("model", name=inc.name), file, version, "model")
        if merge:
            self.merge_into(scope, sub, elem, file)
        else:
            add_model_entity(scope, sub, elem, file)

    def read_model(self, elem: etree._Element, file: str, version: tuple[int, int], base_dir: Path | None,
                   parent: Scope | None, include: SdfInclude | None = None) -> Scope:
        """Read a ``<model>`` (an included one here): the full reader defines it (it also reads the
        top-level model); declared here because including a model means reading one."""
        raise NotImplementedError

    def included_model(self, path: Path, inc: SdfInclude, parent: Scope, file: str,
                       elem: etree._Element) -> Scope | None:
        if path.suffix.lower() == ".urdf":
            return self.included_urdf(path, inc, parent, file, elem)
        root = parse_sdf_xml(path, str(path))
        if local_name(root) != "sdf":
            raise FormatError(f"<include>d file {path} is not SDF (root <{local_name(root)}>)", file, line_of(elem))
        version = parse_version(root.get("version"), root, str(path))
        models = children_of(root, "model")
        if len(models) != 1:
            if not models and (children_of(root, "actor") or children_of(root, "light")):
                self.ignored["<include> of an actor or light"] = self.ignored.get("<include> of an actor or light",
                                                                                   0) + 1
                return None
            raise FormatError(f"<include>d file {path} must hold exactly one <model>, it has {len(models)}", file,
                              line_of(elem))
        return self.read_model(models[0], str(path), version, path.resolve().parent, parent, inc)

    def included_urdf(self, path: Path, inc: SdfInclude, parent: Scope, file: str,
                      elem: etree._Element) -> Scope:
        """A URDF brought in by <include>: read by the URDF reader, then seen as an SDF model."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            urdf = load_urdf(path, package_map=self.package_map, strict=self.strict)
        model_el = model_element(urdf, weld_root=False)
        return self.read_model(model_el, str(path), (1, 9), path.resolve().parent, parent, inc)

    def merge_into(self, scope: Scope, sub: Scope, elem: etree._Element, file: str) -> None:
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

    def model_config(self, folder: Path, file: str, elem: etree._Element | None) -> Path:
        """The SDF file a model folder's model.config names (the newest version), else model.sdf."""
        cfg = folder / "model.config"
        if limits.is_regular_file(cfg):
            root = parse_xml(cfg, str(cfg))
            best: tuple[tuple[int, int], str] | None = None
            for s in root.iter("sdf"):
                m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", s.get("version", "0.0"))
                v = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
                if v <= SUPPORTED[1] and text_of(s) and (best is None or v > best[0]):
                    best = (v, text_of(s))
            if best is not None and limits.is_regular_file(folder / best[1]):
                return limits.resolve_reference(best[1], folder, file=str(cfg), what="model.config <sdf>")
        if limits.is_regular_file(folder / "model.sdf"):
            return folder / "model.sdf"
        raise FormatError(f"<include>d folder {folder} has no model.config naming an SDF file and no model.sdf", file,
                          line_of(elem))
