"""SDFormat ``<include>`` targets: the file or folder a URI names (``model://``, ``package://``, ``file://``,
paths) and what the include overrides on the model it brings in.

Reading the included model is :func:`hebictl.formats.sdf.models.read_include`'s (an included model
is a nested model); this module only finds it, as libsdformat searches: beside the including
file, in the model paths and ``SDF_PATH``-like variables, and in ``package_map`` folders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError
from hebictl.formats._xml import line_of, parse_xml
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.elements import SUPPORTED, text_of


@dataclass
class SdfInclude:
    """What an ``<include>`` overrides on the model it brings in."""

    name: str | None = None
    pose: np.ndarray | None = None
    relative_to: str = ""
    pose_line: int | None = None
    static: bool | None = None
    placement_frame: str = ""


def resolve_uri(rc: ReadContext, uri: str, base_dir: Path | None, file: str | None = None,
                line: int | None = None) -> Path | None:
    """The file or folder a URI names, searched like libsdformat; a confined load (``confine=True``)
    keeps it inside the model's folder, a model path, a package_map folder or (for ``model://``) a
    sibling model folder."""
    candidates: list[Path] = []
    limits.check_path_text(uri, file=file, line=line, what="uri")
    roots: list[Path] = [*rc.model_paths, *rc.package_map.values()]
    if uri.startswith("model://"):
        rest = uri[len("model://"):]
        candidates += [p / rest for p in rc.model_paths]
        if base_dir is not None:
            candidates += [base_dir / rest, base_dir.parent / rest]
            roots.append(base_dir.parent)
        pkg, _, tail = rest.partition("/")
        if pkg in rc.package_map:
            candidates.append(rc.package_map[pkg] / tail)
    elif uri.startswith("package://"):
        pkg, _, tail = uri[len("package://"):].partition("/")
        if pkg in rc.package_map:
            candidates.append(rc.package_map[pkg] / tail)
        if base_dir is not None:
            candidates += [anc / tail for anc in (base_dir, *base_dir.parents) if anc.name == pkg]
    elif uri.startswith("file://"):
        candidates.append(Path(uri[len("file://"):]))
    elif "://" not in uri:
        p = Path(uri)
        if p.is_absolute():
            candidates.append(p)
        else:
            if base_dir is not None:
                candidates.append(base_dir / p)
            candidates += [m / p for m in rc.model_paths]

    for c in candidates:
        if limits.exists(c):
            return limits.resolve_reference(c, base_dir or Path.cwd(), roots, file=file, line=line,
                                            what=f"uri {uri!r}")

    return None


def model_config(folder: Path, file: str, elem: etree._Element | None) -> Path:
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
