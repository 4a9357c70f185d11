"""XML plumbing shared by the XML-based readers and writers: safe parsing, typed attributes, namespaces.

Every reader reports bad input as :class:`~hebictl.errors.FormatError` naming the file and the
line of the offending element, so the helpers here take the element (for ``sourceline``) and the
file name with every value they parse. Parsing never resolves entities or touches the network:
robot descriptions come from strangers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import overload

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl._typing import FloatArray
from hebictl.errors import FormatError

#: XML namespace of hebictl's own extension elements in files it writes (frames of any kind).
HEBICTL_NS = "urn:hebictl:model"

#: XML namespace of Drake's extensions (``drake:joint``, ``drake:rotor_inertia``...), read by the URDF and
#: SDF readers and written by both writers: defined once here.
DRAKE_NS = "http://drake.mit.edu"

_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, remove_blank_text=False,
                       huge_tree=False, load_dtd=False)


def parse_xml(source: str | bytes | Path, file: str | Path | None = None) -> etree._Element:
    """Parse XML text or a file into its root element, turning syntax errors into FormatError."""
    parser = etree.XMLParser(**_PARSER_OPTIONS)
    lim = limits.current()
    if isinstance(source, Path):
        # a regular file within ReaderLimits.max_file_bytes: never /dev/zero, a FIFO or a directory
        data = limits.read_regular_file(source, lim, "file")
        file = file or source
    else:
        # bytes: lxml refuses str input that carries an encoding declaration
        data = source.encode() if isinstance(source, str) else source
        if len(data) > lim.max_file_bytes:
            raise FormatError(f"text is {len(data)} bytes, over the limit ReaderLimits.max_file_bytes="
                              f"{lim.max_file_bytes}", file)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise FormatError(f"XML syntax error: {exc.msg}", file, line) from None
    check_tree(root, file)
    return root


def check_tree(root: etree._Element, file: str | Path | None) -> None:
    """Refuse a tree past ``ReaderLimits.max_elements`` (libxml2 already stops nesting at 256)."""
    lim = limits.current()
    for count, el in enumerate(root.iter(), 1):
        if count > lim.max_elements:
            raise limits.exceeded("number of XML elements", count, "max_elements", file, el.sourceline)


def local_name(elem: etree._Element) -> str:
    """Tag without its namespace ('' for comments and processing instructions)."""
    tag = elem.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def namespace(elem: etree._Element) -> str | None:
    """Namespace URI of an element, or None."""
    tag = elem.tag
    if isinstance(tag, str) and tag.startswith("{"):
        return tag[1:].split("}", 1)[0]
    return None


def elements(parent: etree._Element) -> list[etree._Element]:
    """Child elements only (no comments, processing instructions or entities)."""
    return [c for c in parent if isinstance(c.tag, str)]


def line_of(elem: etree._Element | None) -> int | None:
    return None if elem is None else elem.sourceline


def parse_floats(text: str, elem: etree._Element, attr: str, file: str | Path | None,
                 count: int | Sequence[int] | None = None) -> FloatArray:
    """Whitespace-separated floats of ``attr``; ``count`` = required length(s)."""
    try:
        parsed = [float(t) for t in text.split()]
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} is not a list of numbers",
                          file, line_of(elem)) from None
    if not all(map(math.isfinite, parsed)):
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} has non-finite numbers",
                          file, line_of(elem))
    if count is not None:
        allowed = (count,) if isinstance(count, int) else tuple(count)
        if len(parsed) not in allowed:
            want = " or ".join(str(c) for c in allowed)
            raise FormatError(f"<{local_name(elem)}> attribute {attr} needs {want} numbers, got {len(parsed)} "
                              f"({text!r})", file, line_of(elem))
    return np.array(parsed, dtype=np.float64)


# The overloads tell the checker what the code does: with a default the result is never None.
@overload
def attr_floats(elem: etree._Element, attr: str, file: str | Path | None, count: int | Sequence[int] | None = None,
                *, default: Sequence[float]) -> FloatArray: ...


@overload
def attr_floats(elem: etree._Element, attr: str, file: str | Path | None, count: int | Sequence[int] | None,
                default: Sequence[float]) -> FloatArray: ...


@overload
def attr_floats(elem: etree._Element, attr: str, file: str | Path | None, count: int | Sequence[int] | None = None,
                default: None = None) -> FloatArray | None: ...


def attr_floats(elem: etree._Element, attr: str, file: str | Path | None, count: int | Sequence[int] | None = None,
                default: Sequence[float] | None = None) -> FloatArray | None:
    """Float list attribute, or ``default`` (as an array; None stays None) when absent."""
    text = elem.get(attr)
    if text is None:
        return None if default is None else np.array(default, dtype=np.float64)
    return parse_floats(text, elem, attr, file, count)


@overload
def attr_float(elem: etree._Element, attr: str, file: str | Path | None, default: float,
               *, allow_inf: bool = False) -> float: ...


@overload
def attr_float(elem: etree._Element, attr: str, file: str | Path | None, default: None = None,
               *, allow_inf: bool = False) -> float | None: ...


def attr_float(elem: etree._Element, attr: str, file: str | Path | None, default: float | None = None,
               *, allow_inf: bool = False) -> float | None:
    """One float attribute, or ``default`` when absent."""
    text = elem.get(attr)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} is not a number",
                          file, line_of(elem)) from None
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} must be finite", file, line_of(elem))
    return value


def require(elem: etree._Element, attr: str, file: str | Path | None) -> str:
    """A required attribute's text."""
    value = elem.get(attr)
    if value is None:
        raise FormatError(f"<{local_name(elem)}> is missing the required attribute {attr!r}", file, line_of(elem))
    return value


def fmt_floats(values: Sequence[float] | FloatArray) -> str:
    """Space-separated shortest round-trip representations (``repr`` of floats)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).reshape(-1):
        f = float(v)
        if f == 0.0:
            f = 0.0  # no "-0.0"
        out.append(repr(f))
    return " ".join(out)
