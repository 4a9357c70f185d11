"""MJCF reader: a file or text into a RobotModel, through one :class:`~hebictl.formats.mjcf.context.ReadContext`.

The read is plain functions by concept, each taking the context: the document (includes,
compiler, defaults, assets) by :mod:`~hebictl.formats.mjcf.document`, the body tree by
:mod:`~hebictl.formats.mjcf.bodies` (content expansion, joints, inertia and actuators in their
own modules). What the reader follows is listed in :mod:`hebictl.formats.mjcf`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from hebictl.errors import FormatError, MjcfWarning
from hebictl.formats._xml import parse_xml
from hebictl.formats.building import add_standard_frames, building
from hebictl.formats.mjcf.actuators import scan_actuators
from hebictl.formats.mjcf.attributes import floats
from hebictl.formats.mjcf.bodies import world_content
from hebictl.formats.mjcf.context import Ctx, Doc, ReadContext
from hebictl.formats.mjcf.document import FRAMES_TEXT, JOINTS_TEXT, custom_text, load_document
from hebictl.model.builder import ModelBuilder

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


def restore_frames(rc: ReadContext, builder: ModelBuilder, text: str, root: etree._Element) -> None:
    """Frames saved by write_mjcf: a JSON list of ``[kind, site name, frame name or null]``."""
    by_name = {name: (T, body) for name, T, body in rc.site_frames}
    try:
        entries = json.loads(text)
        ok = isinstance(entries, list) and all(isinstance(e, list) and len(e) == 3 for e in entries)
    except json.JSONDecodeError:
        ok = False
    if not ok:
        raise rc.fail(f"<custom><text name={FRAMES_TEXT!r}> must hold a JSON list of [kind, site, name]", root)
    for kind, site, fname in entries:
        if site not in by_name:
            raise rc.fail(f"<custom><text name={FRAMES_TEXT!r}> refers to unknown site {site!r}", root)
        T, body = by_name[site]
        builder.add_frame(str(kind), body, T, fname)


def read_bodies(rc: ReadContext, doc: Doc) -> RobotModel:
    """The model of a loaded document: actuators and saved joint data first, then the world's bodies,
    gravity, frames (hebictl's saved ones, else the standard ones and the sites)."""
    root = doc.root
    scan_actuators(rc, doc)
    extras = custom_text(root, JOINTS_TEXT)
    if extras is not None:
        try:
            rc.joint_extras = json.loads(extras)
            ok = isinstance(rc.joint_extras, dict) and all(
                isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values())
                for v in rc.joint_extras.values())
        except json.JSONDecodeError:
            ok = False
        if not ok:
            raise rc.fail(f"<custom><text name={JOINTS_TEXT!r}> must hold a JSON object of joint data", root)
    builder = ModelBuilder(root.get("model") or "MuJoCo Model", source=rc.file if rc.file != "<string>"
                           else None, format="mjcf")
    ctx = Ctx(doc)
    for wb in root.iterchildren("worldbody"):
        for a in wb.attrib:
            if not a.startswith("{"):
                raise rc.fail(f"unrecognized attribute {a!r} in <worldbody>", wb)
        world_content(rc, builder, wb, np.eye(4), ctx)
    unknown = sorted(set(rc.actuators) - set(rc.names["joint"]))
    if unknown:
        raise rc.fail(f"actuator refers to unknown joint {unknown[0]!r}", rc.actuators[unknown[0]][0]["elem"])
    gravity = np.array([0.0, 0.0, -9.81])
    if "gravity" in doc.options:
        gravity = floats(rc, root, doc.options["gravity"], "gravity", 3)
    disabled = doc.flags.get("gravity") == "disable"
    frames_text = custom_text(root, FRAMES_TEXT)
    if frames_text is not None:
        restore_frames(rc, builder, frames_text, root)
    else:
        add_standard_frames(builder)
        for name, T, body in rc.site_frames:
            builder.add_frame("site", body, T, name)
    if rc.missing_meshes:
        warnings.warn(f"{rc.file}: {len(rc.missing_meshes)} mesh file(s) of body geoms not found (first: "
                      f"{rc.missing_meshes[0]}); kinematics and dynamics do not need them",
                      category=MjcfWarning, stacklevel=4)
    return builder.build(gravity=np.zeros(3) if disabled else gravity,
                         metadata={"gravity_disabled": disabled, "world_geoms": rc.world_geoms,
                                   "missing_meshes": rc.missing_meshes,
                                   "option_gravity": gravity.tolist(), "compiler_angle":
                                   "degree" if doc.compiler.angle != 1.0 else "radian"})


def _read(source: str | bytes | Path, file: str, base_dir: Path | None) -> RobotModel:
    with building(file):  # size="1e308": one FormatError naming the body, no numpy warnings first
        return _read_model(source, file, base_dir)


def _read_model(source: str | bytes | Path, file: str, base_dir: Path | None) -> RobotModel:
    rc = ReadContext(file, base_dir)
    doc = load_document(rc, parse_xml(source, file), file, base_dir)
    model = read_bodies(rc, doc)
    target = doc.compiler.settotalmass
    if target > 0 and model.total_mass > 0:
        # MuJoCo scales every mass and inertia so the total matches: read again with that scale
        rc = ReadContext(file, base_dir, mass_scale=target / model.total_mass)
        model = read_bodies(rc, load_document(rc, parse_xml(source, file), file, base_dir))
    return model


def _check_options(floating_base: bool, package_map: Mapping[str, Path] | None, file: str) -> None:
    if floating_base:
        raise FormatError("floating_base is for URDF: an MJCF file declares its free joints itself (<freejoint>)",
                          file)
    if package_map:
        raise FormatError("package_map is for URDF: MJCF asset paths are relative to the file (compiler meshdir)",
                          file)


def load_mjcf(path: str | Path, *, floating_base: bool = False,
              package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read an MJCF file (see the module docstring for what is supported).

    ``floating_base`` and ``package_map`` exist so every reader takes the same options; MJCF
    has no use for them, so setting them is an error rather than silently ignored.
    """
    p = Path(path)
    _check_options(floating_base, package_map, str(p))
    return _read(p, str(p), p.resolve().parent)


def load_mjcf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     floating_base: bool = False, package_map: Mapping[str, Path] | None = None) -> RobotModel:
    """Read MJCF text; includes, meshes and attached models resolve against ``base_dir``."""
    _check_options(floating_base, package_map, source_name)
    return _read(text, source_name, Path(base_dir) if base_dir is not None else None)
