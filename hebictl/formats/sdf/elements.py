"""SDFormat element access: parsing, typed children, versions, and the reader base every part shares.

:class:`ElementReader` holds one load's state (search paths, files being included, what was
ignored) and checks each element against the schema of the file's version, so the parts of the
reader (links, joints, includes) see the same rules and report the same way.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError, SdfWarning
from hebictl.formats._xml import DRAKE_NS, elements, line_of, local_name, namespace, parse_xml
from hebictl.formats.lenient import bend
from hebictl.formats.sdf.frames import SCOPE, pose_from_element
from hebictl.formats.sdf.schema import ATTRIBUTES, CHILDREN, VERSIONED, allowed, versions_of

if TYPE_CHECKING:
    pass


SUPPORTED = ((1, 0), (1, 12))
UNBOUNDED = 1e16
SDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "revolute2", "screw",
                   "gearbox")
DRAKE_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "planar", "screw")
_RESERVED = ("world",)
_PATH_VARS = ("SDF_PATH", "GZ_SIM_RESOURCE_PATH", "IGN_GAZEBO_RESOURCE_PATH", "GAZEBO_MODEL_PATH")
COLOR_TAGS = ("ambient", "diffuse", "specular", "emissive")
_NUMBER_PREFIX = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


# ====================================================================== parsing
_PREFIX_RE = re.compile(rb"<\s*/?\s*([A-Za-z_][\w.-]*):[A-Za-z_]|\s([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*\s*=")
_ROOT_OPEN_RE = re.compile(rb"<\s*sdf\b")


def parse_sdf_xml(source: str | bytes | Path, file: str) -> etree._Element:
    """Parse SDF text, tolerating namespace prefixes the file never declares.

    libsdformat reads XML without namespaces, so files in the wild use ``<drake:...>`` or
    ``<custom:...>`` without ``xmlns:`` declarations; they are declared here on the root
    element (``drake`` as Drake's namespace) and the file is parsed again, lines unchanged.
    """
    try:
        return parse_xml(source, file)
    except FormatError as exc:
        if "Namespace prefix" not in exc.message:
            raise
    data = limits.read_regular_file(source, what="SDFormat file") if isinstance(source, Path) else (
        source.encode() if isinstance(source, str) else source)
    prefixes = {m.group(1) or m.group(2) for m in _PREFIX_RE.finditer(data)} - {b"xmlns", b"xml"}
    declared = set(re.findall(rb"xmlns:([A-Za-z_][\w.-]*)\s*=", data))
    decl = b"".join(b' xmlns:%s="%s"' % (p, DRAKE_NS.encode() if p == b"drake" else b"urn:sdf-undeclared:" + p)
                    for p in sorted(prefixes - declared))
    m = _ROOT_OPEN_RE.search(data)
    if m is None:
        return parse_xml(source, file)
    return parse_xml(data[:m.end()] + decl + data[m.end():], file)


# ====================================================================== small element helpers
def child_of(elem: etree._Element, tag: str) -> etree._Element | None:
    """First un-namespaced child ``tag`` (SDF elements are never namespaced)."""
    for c in elem:
        if c.tag == tag:
            return c
    return None


def children_of(elem: etree._Element, tag: str) -> list[etree._Element]:
    return [c for c in elem if c.tag == tag]


def text_of(elem: etree._Element | None) -> str:
    return (elem.text or "").strip() if elem is not None else ""


def sdf_float(elem: etree._Element | None, file: str, default: float, what: str | None = None) -> float:
    """A double element's value (``default`` when absent)."""
    if elem is None:
        return default
    text = text_of(elem)
    try:
        value = float(text)
    except ValueError:
        # libsdformat reads the leading number and ignores trailing junk ("2.35\""); so do we, loudly
        m = _NUMBER_PREFIX.match(text)
        if m is None:
            raise FormatError(f"<{what or local_name(elem)}> value {text!r} is not a number", file,
                              line_of(elem)) from None
        value = float(m.group(0))
        warnings.warn(f"{file}:{line_of(elem)}: <{what or local_name(elem)}> value {text!r} has trailing characters; "
                      f"read as {value!r}", category=SdfWarning, stacklevel=2)
    if math.isnan(value):
        raise FormatError(f"<{what or local_name(elem)}> value {text!r} is not a number", file, line_of(elem))
    return value


def sdf_floats(elem: etree._Element, file: str, count: int | Sequence[int]) -> np.ndarray:
    text = text_of(elem).split()
    try:
        values = np.array([float(t) for t in text], dtype=np.float64)
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> value {' '.join(text)!r} is not a list of numbers", file,
                          line_of(elem)) from None
    counts = (count,) if isinstance(count, int) else tuple(count)
    if len(values) not in counts or not np.all(np.isfinite(values)):
        want = " or ".join(str(c) for c in counts)
        raise FormatError(f"<{local_name(elem)}> needs {want} finite numbers, got {' '.join(text)!r}", file,
                          line_of(elem))
    return values


def bounded_value(value: float) -> float:
    if value >= UNBOUNDED:
        return math.inf
    if value <= -UNBOUNDED:
        return -math.inf
    return value


def parse_version(text: str | None, elem: etree._Element, file: str) -> tuple[int, int]:
    """``"1.9"`` -> (1, 9); an error for missing or unsupported versions."""
    if text is None:
        raise FormatError("<sdf> is missing the required attribute 'version' (e.g. version=\"1.9\")", file,
                          line_of(elem))
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if m is None:
        raise FormatError(f"<sdf version={text!r}> is not a version number like \"1.9\"", file, line_of(elem))
    version = (int(m.group(1)), int(m.group(2)))
    if not SUPPORTED[0] <= version <= SUPPORTED[1]:
        raise FormatError(f"SDFormat version {text.strip()} is not supported (1.0 to 1.12 are)", file,
                          line_of(elem))
    return version


class ElementReader:
    """One load: files read so far (include cycles), search paths, collected warnings."""

    def __init__(self, package_map: Mapping[str, str | Path] | None, model_paths: Sequence[str | Path] | None,
                 floating_base: bool, strict: bool = False) -> None:
        self.strict = strict
        self.package_map = {k: Path(v) for k, v in (package_map or {}).items()}
        paths = [Path(p) for p in (model_paths or ())]
        for var in _PATH_VARS:
            paths.extend(Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p)
        self.model_paths = paths
        self.floating_base = floating_base
        self.ignored: dict[str, int] = {}
        self.include_stack: list[Path] = []
        self.missing_meshes: list[str] = []
        self.hebictl_frames: list[etree._Element] | None = None
        self.file = ""
        self.gravity: np.ndarray | None = None

    def check_element(self, elem: etree._Element, file: str, version: tuple[int, int]) -> None:
        """Un-namespaced children/attributes the specification does not define are errors."""
        tag = local_name(elem)
        for c in elements(elem):
            if namespace(c) is not None:
                continue
            ok = allowed(tag, c.tag, version)
            if ok is False:
                newer = VERSIONED.get((tag, c.tag), ((0, 0),))[0] > version
                if c.tag in CHILDREN.get(tag, ()) and newer:  # an older file: libsdformat copies it, Drake reads it
                    bend(self.strict, f"<{c.tag}> in <{tag}> exists only in {versions_of(tag, c.tag)}, this file is "
                         f"SDFormat {version[0]}.{version[1]}", file, line_of(c), SdfWarning, "Drake (libsdformat)",
                         stacklevel=5)
                    continue
                if c.tag in CHILDREN.get(tag, ()):
                    raise FormatError(f"<{c.tag}> in <{tag}> exists only in {versions_of(tag, c.tag)}, this file is "
                                      f"SDFormat {version[0]}.{version[1]}", file, line_of(c))
                raise FormatError(f"<{c.tag}> is not an SDFormat child of <{tag}> (custom elements need a "
                                  f"namespace prefix, e.g. <my_ns:{c.tag}>)", file, line_of(c))
        for attr in elem.attrib:
            if attr.startswith("{") or ":" in attr:
                continue
            ok = allowed(tag, attr, version, attribute=True)
            if ok is False:
                where = (f"exists only in {versions_of(tag, attr)}, this file is SDFormat "
                         f"{version[0]}.{version[1]}" if attr in ATTRIBUTES.get(tag, ())
                         else "is not defined by SDFormat (custom attributes need a namespace prefix)")
                raise FormatError(f"attribute {attr!r} of <{tag}> {where}", file, line_of(elem))

    def name_of(self, elem: etree._Element, file: str, version: tuple[int, int], kind: str) -> str:
        name = elem.get("name")
        if name is None or name == "":
            raise FormatError(f"<{local_name(elem)}> is missing the required attribute 'name'", file, line_of(elem))
        if name in _RESERVED and kind != "model":
            raise FormatError(f"the {kind} name {name!r} is reserved", file, line_of(elem))
        if name.startswith("__") and name.endswith("__"):
            raise FormatError(f"the {kind} name {name!r} is reserved (names starting and ending with '__')", file,
                              line_of(elem))
        if SCOPE in name and version >= (1, 8):
            raise FormatError(f"the {kind} name {name!r} may not contain the scope delimiter '::'", file,
                              line_of(elem))
        return name

    def pose_of(self, elem: etree._Element, file: str, version: tuple[int, int]) -> tuple[np.ndarray, str, int | None]:
        """(pose, relative_to, line) of an element's ``<pose>`` child."""
        p = child_of(elem, "pose")
        if p is None:
            return np.eye(4), "", None
        self.check_element(p, file, version)
        if p.get("frame"):
            raise FormatError("<pose frame=...> has no defined meaning in SDFormat before 1.7 and is not supported; "
                              "use SDFormat 1.7+ <pose relative_to=...>", file, line_of(p))
        return pose_from_element(p, file), (p.get("relative_to") or "").strip(), line_of(p)

    def resolve_uri(self, uri: str, base_dir: Path | None, file: str | None = None,
                    line: int | None = None) -> Path | None:
        """The file or folder a URI names, searched like libsdformat; a confined load (``confine=True``)
        keeps it inside the model's folder, a model path, a package_map folder or (for ``model://``) a
        sibling model folder."""
        candidates: list[Path] = []
        limits.check_path_text(uri, file=file, line=line, what="uri")
        roots: list[Path] = [*self.model_paths, *self.package_map.values()]
        if uri.startswith("model://"):
            rest = uri[len("model://"):]
            candidates += [p / rest for p in self.model_paths]
            if base_dir is not None:
                candidates += [base_dir / rest, base_dir.parent / rest]
                roots.append(base_dir.parent)
            pkg, _, tail = rest.partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / tail)
        elif uri.startswith("package://"):
            pkg, _, tail = uri[len("package://"):].partition("/")
            if pkg in self.package_map:
                candidates.append(self.package_map[pkg] / tail)
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
                candidates += [m / p for m in self.model_paths]
        for c in candidates:
            if limits.exists(c):
                return limits.resolve_reference(c, base_dir or Path.cwd(), roots, file=file, line=line,
                                                what=f"uri {uri!r}")
        return None
