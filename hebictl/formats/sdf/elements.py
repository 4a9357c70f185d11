"""SDFormat element access: parsing, typed children, versions, names, poses, and the schema check.

Every part of the reader (models, links, joints, includes) checks its elements with
:func:`check_element` against the schema of the file's version and reads names and poses with
:func:`name_of` and :func:`pose_of`, so all parts see the same rules and report the same way.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError, SdfWarning
from hebictl.formats._xml import DRAKE_NS, elements, line_of, local_name, namespace, parse_xml
from hebictl.formats.lenient import bend
from hebictl.formats.sdf.context import ReadContext
from hebictl.formats.sdf.frames import SCOPE, pose_from_element
from hebictl.formats.sdf.schema import ATTRIBUTES, CHILDREN, VERSIONED, allowed, versions_of

SUPPORTED = ((1, 0), (1, 12))
UNBOUNDED = 1e16
SDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "revolute2", "screw",
                   "gearbox")
DRAKE_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "ball", "universal", "planar", "screw")
_RESERVED = ("world",)
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


def check_element(rc: ReadContext, elem: etree._Element, file: str, version: tuple[int, int]) -> None:
    """Un-namespaced children/attributes the specification does not define are errors."""
    tag = local_name(elem)
    for c in elements(elem):
        if namespace(c) is not None:
            continue
        ok = allowed(tag, c.tag, version)
        if ok is False:
            newer = VERSIONED.get((tag, c.tag), ((0, 0),))[0] > version
            if c.tag in CHILDREN.get(tag, ()) and newer:  # an older file: libsdformat copies it, Drake reads it
                bend(rc.strict, f"<{c.tag}> in <{tag}> exists only in {versions_of(tag, c.tag)}, this file is "
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


def name_of(elem: etree._Element, file: str, version: tuple[int, int], kind: str) -> str:
    """The ``name`` attribute of a link, joint, frame or model, checked against the reserved names."""
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


def pose_of(rc: ReadContext, elem: etree._Element, file: str,
            version: tuple[int, int]) -> tuple[np.ndarray, str, int | None]:
    """(pose, relative_to, line) of an element's ``<pose>`` child."""
    p = child_of(elem, "pose")
    if p is None:
        return np.eye(4), "", None
    check_element(rc, p, file, version)
    if p.get("frame"):
        raise FormatError("<pose frame=...> has no defined meaning in SDFormat before 1.7 and is not supported; "
                          "use SDFormat 1.7+ <pose relative_to=...>", file, line_of(p))
    return pose_from_element(p, file), (p.get("relative_to") or "").strip(), line_of(p)
