"""What one MJCF read holds: its documents, the scope an element is read in, and the read context.

The reader is plain functions by concept (documents, defaults, poses, inertia, actuators, body
content, bodies, joints) that all take a :class:`ReadContext`: the file being read, the names
given so far (MuJoCo numbers unnamed elements across the whole model), what was counted against
the limits, and what the body walk collects for the model (sites, world geoms, missing meshes).
Everything a read accumulates lives here, so a function's inputs are its arguments and nothing
is shared through a base class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.formats import geometry

SRC = "{urn:hebictl:src}file"  # marks elements spliced in from an included file
FLEX_FREE = "{urn:hebictl:src}flexfree"  # marks the vertex bodies of a flexcomp that pins nothing to its parent


@dataclass
class Compiler:
    """The ``<compiler>`` options of one document (MuJoCo's defaults until the file sets them)."""

    angle: float = math.pi / 180.0
    eulerseq: str = "xyz"
    inertiafromgeom: str = "auto"
    inertiagrouprange: tuple[int, int] = (0, 5)
    boundmass: float = 0.0
    boundinertia: float = 0.0
    balanceinertia: bool = False
    settotalmass: float = -1.0
    autolimits: bool = True
    discardvisual: bool = False
    alignfree: bool = False
    meshdir: Path | None = None
    conflict: str | None = None


@dataclass
class Doc:
    """One MJCF document after includes: the main file, or a model brought in by ``<attach>``."""

    file: str
    base_dir: Path | None
    root: etree._Element
    compiler: Compiler = field(default_factory=Compiler)
    defaults: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    meshes: dict[str, etree._Element] = field(default_factory=dict)
    models: dict[str, etree._Element] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ctx:
    """Where one element is read: its document, inherited childclass and name affixes."""

    doc: Doc
    childclass: str | None = None
    prefix: str = ""
    suffix: str = ""

    def name(self, raw: str | None) -> str | None:
        return None if not raw else f"{self.prefix}{raw}{self.suffix}"


@dataclass
class Item:
    """One element of a body's content with its pose in the body frame (frames/replicates flattened)."""

    tag: str
    elem: etree._Element
    T: FloatArray
    ctx: Ctx
    shape: tuple[FloatArray, float | None] | None = None  # geom pose and fromto half length, computed once


@dataclass
class ReadContext:
    """One read of an MJCF file: where it comes from, what it has named and counted, what it collects.

    ``mass_scale`` is 1 except for the second read that ``settotalmass`` needs (MuJoCo scales
    every mass and inertia so that the total matches).
    """

    file: str
    base_dir: Path | None
    mass_scale: float = 1.0
    #: MuJoCo's running index per kind, for unnamed elements (body 0 is the world)
    counts: dict[str, int] = field(default_factory=lambda: {"body": 1, "joint": 0, "site": 0, "geom": 0})
    names: dict[str, dict[str, etree._Element]] = field(
        default_factory=lambda: {"body": {}, "joint": {}, "site": {}, "geom": {}})
    #: names of the massless bodies made for joint chains
    synthetic: set[str] = field(default_factory=set)
    #: documents brought in by <attach>, by (file, model name)
    attached: dict[tuple[str, str], Doc] = field(default_factory=dict)
    #: actuators acting on each joint, read before the bodies
    actuators: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: joint data saved by hebictl's writer (max_velocity, one-sided limits), by joint name
    joint_extras: dict[str, dict[str, float]] = field(default_factory=dict)
    #: mass properties per (document, mesh name): one mesh may be placed thousands of times
    mesh_props: dict[tuple[int, str | None], geometry.MassProperties] = field(default_factory=dict)
    # counted against hebictl.limits over the whole read
    include_count: int = 0
    expanded: int = 0  # elements after <replicate>/<attach> expansion
    replicated: int = 0  # copies made by <replicate>
    # collected by the body walk for the model
    site_frames: list[tuple[str, FloatArray, int]] = field(default_factory=list)
    world_geoms: list[dict[str, Any]] = field(default_factory=list)
    missing_meshes: list[str] = field(default_factory=list)

    def where(self, elem: etree._Element | None) -> tuple[str, int | None]:
        """File and line of an element: the included or attached file it came from, else the main file."""
        if elem is None:
            return self.file, None
        for e in (elem, *elem.iterancestors()):
            src = e.get(SRC)
            if src is not None:
                return src, elem.sourceline
        return self.file, elem.sourceline

    def fail(self, message: str, elem: etree._Element | None = None) -> FormatError:
        file, line = self.where(elem)
        return FormatError(message, file, line)

    def register(self, kind: str, item: Item, name: str | None = None) -> str:
        """Check the name is new for its kind; return it, or MuJoCo-style ``<kind><index>`` if unnamed."""
        index = self.counts[kind]
        self.counts[kind] += 1
        name = name if name is not None else item.ctx.name(item.elem.get("name"))
        if name:
            if name in self.names[kind]:
                raise self.fail(f"repeated name {name!r} in {kind}", item.elem)
            self.names[kind][name] = item.elem
            return name
        return f"{kind}{index}"

    def unique_body(self, name: str) -> str:
        """A body name no MuJoCo body and no earlier chain body has (``name``, ``name_1``, ...)."""
        out, k = name, 1
        while out in self.names["body"] or out in self.synthetic:
            out = f"{name}_{k}"
            k += 1
        self.synthetic.add(out)
        return out
