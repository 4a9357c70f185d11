"""SDFormat reader: a file or text into a RobotModel, through one :class:`~hebictl.formats.sdf.context.ReadContext`.

The document is read into scopes (one per world or model, with its frame graph) by
:mod:`~hebictl.formats.sdf.models`, which reads links and joints with
:mod:`~hebictl.formats.sdf.links` and :mod:`~hebictl.formats.sdf.joints`; the scopes are built
into a model by :mod:`~hebictl.formats.sdf.build`. What the reader follows is listed in
:mod:`hebictl.formats.sdf`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl.errors import FormatError
from hebictl.formats._xml import line_of
from hebictl.formats.rotations import inverse_transform
from hebictl.formats.sdf.build import Flattener, build
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.elements import parse_sdf_xml
from hebictl.formats.sdf.frames import SCOPE
from hebictl.formats.sdf.models import read_document

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


def _load(root: etree._Element, file: str, base_dir: Path | None, *, model: str | None, floating_base: bool,
          package_map: Mapping[str, str | Path] | None, model_paths: Sequence[str | Path] | None,
          source: str | None, strict: bool = False) -> RobotModel:
    rc = ReadContext.create(file, package_map, model_paths, strict)
    scope, version = read_document(rc, root, file, base_dir)
    flat = Flattener(rc)
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
    if rc.gravity is not None:
        gravity = rc.gravity
    meta["models"] = flat.models
    if flat.drake:
        meta["drake"] = flat.drake
    if rc.ignored:
        meta["ignored_elements"] = dict(rc.ignored)
    if rc.missing_meshes:
        meta["missing_meshes"] = list(rc.missing_meshes)
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
