"""MJCF documents: the ``<mujoco>`` sections, ``<compiler>`` options, assets, and models brought in by ``<attach>``.

A :class:`~hebictl.formats.mjcf.context.Doc` is one file after its includes are spliced in
(:mod:`hebictl.formats.mjcf.includes`) and its default classes read
(:mod:`hebictl.formats.mjcf.defaults`); an attached model is a document of its own, with its own
compiler options and classes, read once per load.
"""

from __future__ import annotations

import math
from pathlib import Path

from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError
from hebictl.formats._xml import elements, local_name, parse_xml
from hebictl.formats.mjcf.attributes import floats, mjcf_bool
from hebictl.formats.mjcf.context import SRC, Doc, ReadContext
from hebictl.formats.mjcf.defaults import read_defaults
from hebictl.formats.mjcf.includes import expand_includes

FRAMES_TEXT = "hebictl:frames"  # <custom><text name=...> written by write_mjcf: the model's frames
JOINTS_TEXT = "hebictl:joints"  # ... and joint data MJCF has no attribute for (max_velocity, one-sided limits)

_SECTIONS = {"compiler", "option", "size", "statistic", "visual", "asset", "worldbody", "default", "contact",
             "equality", "tendon", "actuator", "sensor", "keyframe", "custom", "extension", "deformable"}
#: MuJoCo's values of the options <compiler conflict> compares when a document does not set them
_OPTION_DEFAULTS = {"timestep": "0.002", "gravity": "0 0 -9.81", "iterations": "100"}


def load_document(rc: ReadContext, root: etree._Element, file: str, base_dir: Path | None) -> Doc:
    """A parsed ``<mujoco>`` as a document: includes spliced, sections checked, compiler, defaults,
    options and assets read (bodies are read later, by :mod:`hebictl.formats.mjcf.bodies`)."""
    if local_name(root) != "mujoco":
        raise FormatError(f"MJCF root element must be <mujoco>, got <{local_name(root)}>", file, root.sourceline)

    if file != rc.file:  # an attached model: its elements report their own file
        for child in elements(root):
            child.set(SRC, file)

    expand_includes(rc, root, base_dir, base_dir, [str(Path(file).resolve())], file)
    doc = Doc(file, base_dir, root)

    for el in elements(root):
        tag = local_name(el)
        if tag not in _SECTIONS:
            raise rc.fail(f"unrecognized element <{tag}> in <mujoco>", el)

    for el in root.iterchildren("compiler"):
        read_compiler(rc, el, doc)

    doc.defaults = {"main": {}}

    for el in root.iterchildren("default"):
        read_defaults(rc, el, doc, "main", None)

    for el in root.iterchildren("option"):
        for k, v in el.attrib.items():
            doc.options[k] = v
        for fl in el.iterchildren("flag"):
            doc.flags.update(fl.attrib)

    for asset in root.iterchildren("asset"):
        for el in elements(asset):
            tag = local_name(el)
            if tag == "mesh":
                name = el.get("name") or (Path(el.get("file", "")).stem if el.get("file") else None)
                if name is None:
                    raise rc.fail("<mesh> needs a name or a file", el)
                if name in doc.meshes:
                    raise rc.fail(f"repeated name {name!r} in mesh", el)
                doc.meshes[name] = el
            elif tag == "model":
                src = el.get("file")
                if src is None:
                    raise rc.fail("<model> asset needs a file", el)
                doc.models[el.get("name") or ""] = el

    return doc


def read_compiler(rc: ReadContext, el: etree._Element, doc: Doc) -> None:
    """One ``<compiler>`` into ``doc.compiler``; attributes that change no kinematics are accepted and ignored."""
    c = doc.compiler
    for key, text in el.attrib.items():
        if key == "angle":
            if text not in ("degree", "radian"):
                raise rc.fail(f"compiler angle must be 'degree' or 'radian', got {text!r}", el)
            c.angle = math.pi / 180.0 if text == "degree" else 1.0
        elif key == "eulerseq":
            if len(text) != 3 or any(ch not in "xyzXYZ" for ch in text):
                raise rc.fail(f"eulerseq must be 3 characters from xyzXYZ, got {text!r}", el)
            c.eulerseq = text
        elif key == "inertiafromgeom":
            if text not in ("true", "false", "auto"):
                raise rc.fail(f"inertiafromgeom must be true, false or auto, got {text!r}", el)
            c.inertiafromgeom = text
        elif key == "inertiagrouprange":
            lo, hi = floats(rc, el, text, key, 2)
            c.inertiagrouprange = (int(lo), int(hi))
        elif key in ("boundmass", "boundinertia", "settotalmass"):
            setattr(c, key, float(floats(rc, el, text, key, 1)[0]))
        elif key in ("balanceinertia", "autolimits", "discardvisual", "alignfree"):
            setattr(c, key, mjcf_bool(text, key, rc, el))
        elif key in ("meshdir", "assetdir"):
            if key == "meshdir" or c.meshdir is None:
                c.meshdir = Path(text)
        elif key == "coordinate":
            if text != "local":
                raise rc.fail("compiler coordinate='global' is not supported (MuJoCo 3 removed it)", el)
        elif key == "conflict":
            c.conflict = text
        elif key not in ("strippath", "fitaabb", "texturedir", "usethread", "fusestatic", "saveinertial",
                         "exactmeshinertia") and not key.startswith("{"):
            raise rc.fail(f"unrecognized attribute {key!r} in <compiler>", el)


def attached_document(rc: ReadContext, el: etree._Element, model_name: str, parent: Doc) -> Doc:
    """The document of the model an ``<attach>`` names (a ``<model>`` asset), read once per load."""
    asset = parent.models.get(model_name)
    key_path = None
    if asset is None:
        # a <model file> without a name is known by the model name inside the file
        for m in parent.models.values():
            path = asset_path(rc, m.get("file", ""), parent, el=m)
            if path is not None and limits.is_regular_file(path):
                try:
                    inner = parse_xml(path, str(path)).get("model")
                except FormatError:
                    continue
                if inner == model_name:
                    asset, key_path = m, path
                    break

    if asset is None:
        raise rc.fail(f"<attach>: unknown model {model_name!r} (declare it with <asset><model>)", el)

    path = key_path or asset_path(rc, asset.get("file", ""), parent, el=asset)
    if path is None or not limits.is_regular_file(path):
        raise rc.fail(f"<attach>: model file {asset.get('file')!r} not found", asset)

    key = (str(path), model_name)
    if key not in rc.attached:
        doc = load_document(rc, parse_xml(path, str(path)), str(path), path.parent)
        check_conflict(rc, parent, doc, el)
        rc.attached[key] = doc

    return rc.attached[key]


def check_conflict(rc: ReadContext, parent: Doc, child: Doc, el: etree._Element) -> None:
    """``<compiler conflict="error">``: option values set by both documents must agree (MuJoCo rule);
    ``merge``: gravity must agree."""
    policy = parent.compiler.conflict
    if policy not in ("error", "merge"):
        return

    keys = set(child.options) if policy == "error" else {"gravity"} & set(child.options)
    for k in sorted(keys):
        pv = parent.options.get(k, _OPTION_DEFAULTS.get(k))
        cv = child.options[k]
        if pv is None or _normalize(pv) != _normalize(cv):
            raise rc.fail(f"attach conflict ({policy} policy): option {k}: parent has {pv!r}, "
                          f"child has {cv!r}", el)

    if policy == "error":
        for k, cv in child.flags.items():
            if parent.flags.get(k) != cv:
                raise rc.fail(f"attach conflict (error policy): flag {k!r}: parent has "
                              f"{parent.flags.get(k)!r}, child has {cv!r}", el)


def asset_path(rc: ReadContext, name: str, doc: Doc, mesh: bool = False,
               el: etree._Element | None = None) -> Path | None:
    """The file an asset names (``meshdir`` applied), resolved and kept inside the allowed folders."""
    if not name:
        return None
    ref = name
    if mesh and doc.compiler.meshdir is not None and not Path(name).is_absolute():
        ref = str(doc.compiler.meshdir / name)  # an absolute or ../ meshdir is checked like the file
    file, line = rc.where(el) if el is not None else (doc.file, None)
    return limits.resolve_reference(ref, doc.base_dir or Path.cwd(), file=file, line=line, what="asset file")


def custom_text(root: etree._Element, name: str) -> str | None:
    """The data of ``<custom><text name=...>`` (hebictl's writer saves frames and joint data there)."""
    for custom in root.iterchildren("custom"):
        for t in custom.iterchildren("text"):
            if t.get("name") == name:
                return t.get("data", "")
    return None


def _normalize(text: str) -> tuple[float, ...] | str:
    try:
        return tuple(float(t) for t in text.split())
    except ValueError:
        return text.strip()
