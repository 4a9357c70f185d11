"""HRDF reader: HEBI Robot Description Format 1.0.0–1.6.0 into a :class:`RobotModel`.

Why a reader of our own: hebictl must load HEBI kits without libhebi, and must say precisely
what is wrong with a bad file (file, line, attribute, column) where libhebi says "Unable to add
link at position 3". The spec is hebi-hrdf's FORMAT.md/GRAMMAR.md/CHANGELOG.md; where the spec
is silent we do what hebi-py 2.16.1 does, where hebi-py accepts what the spec forbids we follow
the spec (see ``tests/formats/test_hrdf_errors.py`` for the list).

Two stages, both public:

* :func:`parse_hrdf` / :func:`parse_hrdf_string` read and validate the XML (versions, elements,
  attributes, value grammars, includes, tags, ``<output>`` trees, interface compatibility) into
  an :class:`HrdfDocument` of :class:`HrdfElement` values;
* :func:`build_model` turns a document into a model through
  :class:`~hebictl.model.tree.ModelBuilder`, with the physical data of built-in elements from
  :mod:`hebictl.model.library`.

Model layout, chosen so the frames match hebi-py's exactly (same counts, same order):

* every element gets one ``input`` frame; every element but ``<joint>`` one ``com`` frame;
  one ``output`` frame per output interface; ``<end-effector>`` (and the implicit one of
  version <= 1.1.0 files, appended to the end of the chain) one ``end_effector`` frame at its
  output. Elements are numbered depth-first in document order with includes expanded in place;
  input/com/end-effector frames follow that order, output frames are depth-first too, output
  ``k`` of an element coming right before the subtree attached to it.
* an actuator is a fixed housing body (library mass/inertia) plus a massless output body on a
  revolute joint (placement = library output frame at q = 0, axis = library joint axis); a
  ``<joint>`` is a massless body on a revolute/prismatic joint of ``scale = 1/gear_ratio``; any
  other element is one fixed body. ``<rigid-body mesh_path=...>`` adds a ``mesh`` frame.
* joint names: the element's tag when it has a non-empty one, else ``J<k>_<type>`` (``k`` = 1-based
  degree-of-freedom index, ``type`` the actuator type or joint axis, e.g. ``J1_X8-9``,
  ``J4_rz``); a generated name that clashes with a tag gets a ``_2``, ``_3``... suffix.
* the robot's ``rot``/``trans`` are the model's base transform (hebi-py's ``base_frame``).
* ``model.metadata``: ``version``, ``description``, ``files`` (every file read) and
  ``elements``, one record per element in element order (see :func:`build_model`).
"""

from __future__ import annotations

import bisect
import math
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError, HrdfWarning, ModelError
from hebictl.formats.hrdf_grammar import (
    HEBI_PI,
    GrammarError,
    parse_float,
    parse_formula,
    parse_rotation,
    parse_translation,
)

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel



#: Supported values of ``<robot version=...>``, oldest first; a missing version means 1.0.0.
VERSIONS: Final[tuple[str, ...]] = ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0")

# --------------------------------------------------------------------------- spec tables
# Enum values (canonical spelling) -> first version supporting them (CHANGELOG.md).
_X_ACTUATORS = ("X5-1", "X5-4", "X5-9", "X8-3", "X8-9", "X8-16")
ACTUATOR_TYPES: Final[dict[str, str]] = {
    **dict.fromkeys(_X_ACTUATORS, "1.0.0"),
    **dict.fromkeys(("R8-3", "R8-9", "R8-16"), "1.2.0"),
    **dict.fromkeys(("T5-1", "T5-4", "T5-9", "T8-3", "T8-9", "T8-16"), "1.4.0"),
    **dict.fromkeys(("R25-8", "R25-20", "R25-40", "T25-8", "T25-20", "T25-40"), "1.6.0"),
}
LINK_TYPES: Final[dict[str, str]] = {"X5": "1.0.0", "R8": "1.2.0", "R25": "1.6.0", "R25-R8": "1.6.0"}
_BRACKET_STYLES = ("LightLeft", "LightRight", "HeavyLeftInside", "HeavyLeftOutside", "HeavyRightInside",
                   "HeavyRightOutside")
BRACKET_TYPES: Final[dict[str, str]] = {
    **{f"X5{s}": "1.0.0" for s in _BRACKET_STYLES},
    **{f"R8{s}": "1.2.0" for s in _BRACKET_STYLES},
    **{f"R25{s}": "1.6.0" for s in _BRACKET_STYLES},
}
END_EFFECTOR_TYPES: Final[dict[str, str]] = {"Custom": "1.2.0", "X5Parallel": "1.2.0", "R8Parallel": "1.2.0"}
LINK_INTERFACE_TYPES: Final[dict[str, str]] = {"RightAngle": "1.2.0", "Inline": "1.2.0"}
JOINT_AXES: Final[dict[str, str]] = dict.fromkeys(("rx", "ry", "rz", "tx", "ty", "tz"), "1.0.0")

_ENUMS: dict[tuple[str, str], dict[str, str]] = {
    ("actuator", "type"): ACTUATOR_TYPES, ("link", "type"): LINK_TYPES, ("bracket", "type"): BRACKET_TYPES,
    ("end-effector", "type"): END_EFFECTOR_TYPES, ("link", "input"): LINK_INTERFACE_TYPES,
    ("link", "output"): LINK_INTERFACE_TYPES, ("joint", "axis"): JOINT_AXES,
}

ROBOT_ELEMENTS: Final[tuple[str, ...]] = ("actuator", "link", "bracket", "rigid-body", "joint", "end-effector",
                                          "include")
_ELEMENT_VERSION = {"actuator": "1.0.0", "link": "1.0.0", "bracket": "1.0.0", "rigid-body": "1.0.0",
                    "joint": "1.0.0", "end-effector": "1.2.0", "include": "1.3.0", "output": "1.3.0"}

# attribute -> (value kind, first version)
_INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
_INERTIA_INDEX = {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}
_OVERRIDES = {"mass": ("formula", "1.1.0"), "mass_offset": ("formula", "1.1.0"), "com_rot": ("rotation", "1.1.0"),
              "com_trans": ("translation", "1.1.0"), "com_trans_offset": ("translation", "1.1.0"),
              **{k: ("formula", "1.1.0") for k in _INERTIA_KEYS}}
_TAG = {"tag": ("string", "1.4.0")}
_ATTRIBUTES: dict[str, dict[str, tuple[str, str]]] = {
    "robot": {"version": ("version", "1.0.0"), "rot": ("rotation", "1.0.0"), "trans": ("translation", "1.0.0"),
              "description": ("string", "1.2.0")},
    "actuator": {"type": ("enum", "1.0.0"), **_OVERRIDES, **_TAG},
    "link": {"type": ("enum", "1.0.0"), "extension": ("formula", "1.0.0"), "twist": ("formula", "1.0.0"),
             "input": ("enum", "1.2.0"), "output": ("enum", "1.2.0"), **_OVERRIDES, **_TAG},
    "bracket": {"type": ("enum", "1.0.0"), **_OVERRIDES, **_TAG},
    "rigid-body": {"mass": ("formula", "1.0.0"), "com_rot": ("rotation", "1.0.0"),
                   "com_trans": ("translation", "1.0.0"), "output_rot": ("rotation", "1.0.0"),
                   "output_trans": ("translation", "1.0.0"), **{k: ("formula", "1.1.0") for k in _INERTIA_KEYS},
                   "mesh_path": ("mesh", "1.3.0"), "mesh_rot": ("rotation", "1.3.0"),
                   "mesh_trans": ("translation", "1.3.0"), **_TAG},
    "joint": {"axis": ("enum", "1.0.0"), "gear_ratio": ("formula", "1.5.0"), **_TAG},
    "end-effector": {"type": ("enum", "1.2.0"), "output_rot": ("rotation", "1.2.0"),
                     "output_trans": ("translation", "1.2.0"), **_OVERRIDES, **_TAG},
    "include": {"path": ("include", "1.3.0")},
    "output": {"rot": ("rotation", "1.3.0"), "trans": ("translation", "1.3.0")},
}
_REQUIRED = {"actuator": ("type",), "link": ("type", "extension", "twist"), "bracket": ("type",),
             "rigid-body": ("mass",), "joint": ("axis",), "include": ("path",)}
_WITH_OUTPUTS = ("rigid-body", "bracket")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _vt(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


# Interfaces (FORMAT.md "Interface types"): (type, polarity); ANY matches anything, NONE takes nothing.
ANY: Final = "any"
NONE: Final = "none"


def interfaces(kind: str, type: str | None) -> tuple[str, str]:
    """(input, output) interface of an element, e.g. ``("X-AH-A", "X-AO-A")`` for an X5-4."""
    if kind in ("rigid-body", "joint"):
        return ANY, ANY
    assert type is not None
    if kind == "actuator":
        family = "X" if type.startswith("X") else "R25" if type.startswith(("R25", "T25")) else "R8"
        return f"{family}-AH-A", f"{family}-AO-A"
    if kind in ("bracket", "link"):
        if type == "R25-R8":
            return "R25-AO-B", "R8-AH-B"
        family = "X" if type.startswith("X") else "R25" if type.startswith("R25") else "R8"
        return f"{family}-AO-B", f"{family}-AH-B"
    if kind == "end-effector":
        return {"Custom": ANY, "X5Parallel": "X-AO-B", "R8Parallel": "R8-AO-B"}[type], NONE
    raise ValueError(f"no interfaces for {kind!r}")


def compatible(output: str, input: str) -> bool:
    """Whether an output interface can take an input: same type, different polarity (or ANY)."""
    if output == NONE:
        return False
    if ANY in (output, input):
        return True
    return output[:-2] == input[:-2] and output[-1] != input[-1]


# --------------------------------------------------------------------------- document
@dataclass(frozen=True)
class HrdfOutput:
    """An ``<output>`` child: its pose override (None = the parent's default) and its chain."""

    file: str
    line: int
    rot: FloatArray | None
    trans: FloatArray | None
    chain: tuple[HrdfElement, ...]


@dataclass(frozen=True)
class HrdfElement:
    """One robot model element with its attributes parsed.

    ``type`` is the canonical type (joint: its axis; rigid-body: None). ``values`` maps
    attribute names to parsed values: floats for formulas, (3,3)/(3,) arrays for rotations and
    translations, canonical strings for enums. ``outputs`` are explicit ``<output>`` children.
    """

    kind: str
    type: str | None
    file: str
    line: int
    tag: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[HrdfOutput, ...] = ()
    implicit: bool = False

    def describe(self, where: bool = True) -> str:
        """``<link X5>``, with `` (file:line)`` unless ``where`` is False."""
        what = f"<{self.kind}>" if self.type is None else f"<{self.kind} {self.type}>"
        return f"{what} ({os.path.basename(self.file)}:{self.line})" if where else what


@dataclass(frozen=True)
class HrdfDocument:
    """A parsed, validated HRDF file with its includes expanded."""

    version: str
    description: str | None
    base: FloatArray
    chain: tuple[HrdfElement, ...]
    file: str
    files: tuple[str, ...]


# --------------------------------------------------------------------------- XML source
_XML_PARSER_OPTIONS = {"resolve_entities": False, "no_network": True, "load_dtd": False, "huge_tree": False,
                       "remove_comments": False, "remove_pis": False, "strip_cdata": True}
_NAME_START = re.compile(r"<([A-Za-z_][\w.:-]*)")
_ATTR = re.compile(r"""\s*([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')""")


class _Source:
    """One XML file (or string): its tree plus the raw text, for exact attribute/text lines."""

    def __init__(self, data: bytes, display: str, base_dir: Path | None) -> None:
        self.display = display
        self.base_dir = base_dir
        try:
            self.root = etree.fromstring(data, etree.XMLParser(**_XML_PARSER_OPTIONS))
        except etree.XMLSyntaxError as exc:
            raise FormatError(f"not well-formed XML: {exc.msg}", display, exc.lineno) from None
        docinfo = self.root.getroottree().docinfo
        dtd = docinfo.internalDTD
        if dtd is not None and any(True for _ in dtd.iterentities()):
            raise FormatError("entity declarations (<!ENTITY>) are not allowed in HRDF", display, 1)
        self.text = data.decode("utf-8", errors="replace")
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        # lxml's sourceline is where a start tag *ends*; scan the raw text once for where each
        # start tag begins and where each attribute sits (same order as the tree's elements).
        tags = self._scan_start_tags()
        elements = list(self.root.iter(etree.Element))
        self._tags: dict[Any, tuple[int, dict[str, int], int]] = (
            dict(zip(elements, tags, strict=True)) if len(tags) == len(elements) else {})

    def _line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset)

    def _scan_start_tags(self) -> list[tuple[int, dict[str, int], int]]:
        """(line of '<', attribute -> line, line of '>') of every start tag, in document order."""
        text, i, out = self.text, 0, []
        while (j := text.find("<", i)) >= 0:
            for opener, closer in (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>")):
                if text.startswith(opener, j):
                    k = text.find(closer, j)
                    i = k + len(closer) if k >= 0 else len(text)
                    break
            else:
                m = _NAME_START.match(text, j)
                if m is None:  # end tag, <!DOCTYPE ...>, <!ENTITY ...>
                    i = j + 1
                    continue
                pos, attrs = m.end(), {}
                while (a := _ATTR.match(text, pos)) is not None:
                    attrs[a.group(1)] = self._line_of(a.start(1))
                    pos = a.end()
                end = text.find(">", pos)
                end = end if end >= 0 else len(text) - 1
                out.append((self._line_of(j), attrs, self._line_of(end)))
                i = end + 1
        return out

    def line(self, el: Any) -> int:
        """Line where ``el``'s start tag begins."""
        info = self._tags.get(el)
        return info[0] if info else (el.sourceline or 1)

    def _start_tag_end(self, el: Any) -> int:
        info = self._tags.get(el)
        return info[2] if info else (el.sourceline or 1)

    def attr_line(self, el: Any, name: str) -> int:
        """Line of attribute ``name`` of ``el`` (the element's line if it cannot be located)."""
        info = self._tags.get(el)
        return info[1].get(name, info[0]) if info else (el.sourceline or 1)

    def end_line(self, node: Any) -> int:
        """Line where ``node`` ends (its end tag, or the '>' of an empty element)."""
        if not isinstance(node.tag, str):  # comment / processing instruction
            return node.sourceline or 1  # libxml2 reports where a comment/PI ends
        children = list(node)
        if children:
            return self.end_line(children[-1]) + (children[-1].tail or "").count("\n")
        return self._start_tag_end(node) + (node.text or "").count("\n")

    def stray_text(self, el: Any) -> tuple[str, int] | None:
        """First non-whitespace text directly inside ``el`` and its line, if any."""
        segments = [(el.text, self._start_tag_end(el))]
        segments += [(child.tail, self.end_line(child)) for child in el]
        for text, start in segments:
            if text and text.strip(" \t\r\n"):
                k = len(text) - len(text.lstrip(" \t\r\n"))
                return text.strip(" \t\r\n"), start + text[:k].count("\n")
        return None


# --------------------------------------------------------------------------- parser
def _enum_list(table: Mapping[str, str], version: str) -> str:
    return ", ".join(v for v, since in table.items() if _vt(since) <= _vt(version))


class _Parser:
    """Reads one HRDF document (with its includes) into :class:`HrdfElement` values."""

    def __init__(self, pi: float, strict: bool) -> None:
        self.pi = pi
        self.strict = strict
        self.version = "1.0.0"
        self.vt: tuple[int, ...] = (1, 0, 0)
        self.tags: dict[str, HrdfElement] = {}
        self.stack: list[tuple[Path, str]] = []
        self.files: list[str] = []

    # ---------------------------------------------------------------- documents
    def document(self, data: bytes, display: str, path: Path | None, base_dir: Path | None) -> HrdfDocument:
        src = _Source(data, display, base_dir)
        self.files.append(display)
        if path is not None:
            self.stack.append((path.resolve(), display))
        root = src.root
        self._check_root(root, src)
        version = root.get("version")
        if version is None:
            version = "1.0.0"
        elif version not in VERSIONS:
            raise FormatError(f"<robot> attribute 'version': unsupported HRDF version {version!r} (supported: "
                              f"{', '.join(VERSIONS)})", display, src.attr_line(root, "version"))
        self.version, self.vt = version, _vt(version)
        values = self._attributes(root, "robot", src)
        base = np.eye(4)
        if "rot" in values:
            base[:3, :3] = values["rot"]
        if "trans" in values:
            base[:3, 3] = values["trans"]
        chain = list(self._chain(root, "robot", src))
        if self.vt <= (1, 1, 0):
            # FORMAT.md: files <= 1.1.0 have no end-effector element; the API adds one at the end.
            chain.append(HrdfElement(kind="end-effector", type="Custom", file=display, line=src.line(root),
                                     implicit=True))
        chain_t = tuple(chain)
        self._check_links(chain_t, None)
        return HrdfDocument(version=version, description=values.get("description"), base=base, chain=chain_t,
                            file=display, files=tuple(dict.fromkeys(self.files)))

    @staticmethod
    def _check_root(root: Any, src: _Source) -> None:
        if root.tag != "robot":
            raise FormatError(f"root element is {_display_tag(root)}, expected <robot> (no XML namespace)",
                              src.display, src.line(root))

    def _include(self, el: Any, src: _Source) -> list[HrdfElement]:
        raw = self._attributes(el, "include", src)["path"]
        line = src.attr_line(el, "path")
        if src.base_dir is None:
            raise FormatError("<include> in an HRDF string needs a base directory: load the file, or pass "
                              "base_dir= to load_hrdf_string", src.display, line)
        target = src.base_dir / raw
        display = os.path.normpath(os.path.join(os.path.dirname(src.display), raw)) \
            if not src.display.startswith("<") else str(target)
        if not target.is_file():
            why = "is a directory" if target.is_dir() else "not found"
            raise FormatError(f"<include> attribute 'path': included file {raw!r} {why} (resolved to {target})",
                              src.display, line)
        real = target.resolve()
        for i, (p, _) in enumerate(self.stack):
            if p == real:
                names = [d for _, d in self.stack[i:]] + [display]
                raise FormatError(f"<include> cycle: {' -> '.join(names)}", src.display, line)
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise FormatError(f"<include> attribute 'path': cannot read {raw!r}: {exc.strerror}", src.display,
                              line) from None
        inc = _Source(data, display, target.parent)
        self.files.append(display)
        root = inc.root
        self._check_root(root, inc)
        version = root.get("version") or "1.0.0"
        if version != self.version:
            self._lax(f"included file {raw!r} has HRDF version {version} but the including file has "
                      f"{self.version}; included files must match", src.display, line)
        if version not in VERSIONS:
            raise FormatError(f"<robot> attribute 'version': unsupported HRDF version {version!r} (supported: "
                              f"{', '.join(VERSIONS)})", display, inc.attr_line(root, "version"))
        saved = self.version, self.vt
        self.version, self.vt = version, _vt(version)  # (strict=False) each file by its own rules
        self.stack.append((real, display))
        try:
            self._attributes(root, "robot", inc)  # validated, then ignored (FORMAT.md, <include>)
            return list(self._chain(root, "robot", inc))
        finally:
            self.stack.pop()
            self.version, self.vt = saved

    # ---------------------------------------------------------------- structure
    def _children(self, el: Any, kind: str, src: _Source) -> list[Any]:
        """Element children of ``el``; rejects stray text and entity references."""
        stray = src.stray_text(el)
        if stray is not None:
            text, line = stray
            short = text if len(text) <= 30 else text[:27] + "..."
            allowed = ("robot elements" if kind in ("robot", "output") else
                       "<output> elements" if kind in _WITH_OUTPUTS else "nothing")
            raise FormatError(f"unexpected text {short!r} inside <{kind}> (it may contain {allowed}; "
                              "use <!-- --> for comments)", src.display, line)
        out = []
        for child in el:
            if isinstance(child, etree._Entity):
                raise FormatError(f"entity reference &{child.name}; is not allowed inside <{kind}>", src.display,
                                  src.line(child))
            if isinstance(child.tag, str):
                out.append(child)
        return out

    def _chain(self, container: Any, kind: str, src: _Source) -> list[HrdfElement]:
        chain: list[HrdfElement] = []
        for child in self._children(container, kind, src):
            name = self._element_name(child, kind, src, ROBOT_ELEMENTS)
            if name == "include":
                chain.extend(self._include(child, src))
            else:
                chain.append(self._element(child, name, src))
        return chain

    def _element_name(self, el: Any, parent: str, src: _Source, allowed: tuple[str, ...]) -> str:
        name = _name(el.tag)
        if name != el.tag:
            raise FormatError(f"{_display_tag(el)} is not allowed inside <{parent}>: HRDF elements have no XML "
                              "namespace", src.display, src.line(el))
        ok = [a for a in allowed if self.vt >= _vt(_ELEMENT_VERSION[a])]
        if name in allowed and name not in ok:
            raise FormatError(f"<{name}> needs HRDF version >= {_ELEMENT_VERSION[name]} (this file is "
                              f"{self.version})", src.display, src.line(el))
        if name not in ok:
            hint = next((f"; element names are case-sensitive: write <{a}>" for a in ok if a.lower() == name.lower()),
                        "")
            expected = ", ".join(f"<{a}>" for a in ok) or "no child elements"
            raise FormatError(f"<{name}> is not allowed inside <{parent}> (expected {expected}){hint}", src.display,
                              src.line(el))
        return name

    def _element(self, el: Any, kind: str, src: _Source) -> HrdfElement:
        values = self._attributes(el, kind, src)
        line = src.line(el)
        type_ = values.get("axis") if kind == "joint" else values.get("type")
        if kind == "end-effector" and type_ is None:
            type_ = "Custom"
        tag = values.get("tag")
        children = self._children(el, kind, src)
        outputs: list[HrdfOutput] = []
        if kind in _WITH_OUTPUTS:
            limit = _bracket_outputs(type_, src.display, line) if kind == "bracket" else None
            for child in children:
                self._element_name(child, kind, src, ("output",))
                if limit is not None and len(outputs) == limit:
                    raise FormatError(f"<bracket type={type_!r}> has {limit} output interface"
                                      f"{'s' if limit != 1 else ''}; this is <output> number {limit + 1}",
                                      src.display, src.line(child))
                outputs.append(self._output(child, kind, src))
        elif children:
            raise FormatError(f"<{kind}> cannot contain child elements (found <{_name(children[0].tag)}>)",
                              src.display, src.line(children[0]))
        element = HrdfElement(kind=kind, type=type_, file=src.display, line=line, tag=tag, values=values,
                              outputs=tuple(outputs))
        if tag is not None:
            prev = self.tags.get(tag)
            if prev is not None:
                raise FormatError(f"tag {tag!r} is already used by {prev.describe()}; tags must be unique in the whole "
                                  "robot, includes too", src.display, src.attr_line(el, "tag"))
            self.tags[tag] = element
        return element

    def _output(self, el: Any, parent: str, src: _Source) -> HrdfOutput:
        values = self._attributes(el, "output", src)
        for name in ("rot", "trans"):
            if parent != "rigid-body" and name in values:
                raise FormatError(f"<output> attribute {name!r} is only allowed under <rigid-body>: a bracket's "
                                  "output interfaces are fixed by its type", src.display, src.attr_line(el, name))
        return HrdfOutput(file=src.display, line=src.line(el), rot=values.get("rot"),
                          trans=values.get("trans"), chain=tuple(self._chain(el, "output", src)))

    # ---------------------------------------------------------------- attributes
    def _attributes(self, el: Any, kind: str, src: _Source) -> dict[str, Any]:
        table = _ATTRIBUTES[kind]
        values: dict[str, Any] = {}
        for raw_name, raw in el.attrib.items():
            name = _name(raw_name)
            line = src.attr_line(el, raw_name)
            if raw_name != name or name not in table:
                known = [a for a, (_, since) in table.items() if self.vt >= _vt(since)]
                raise FormatError(f"<{kind}> has no attribute {raw_name!r} in HRDF {self.version} (allowed: "
                                  f"{', '.join(known) or 'none'})", src.display, line)
            value_kind, since = table[name]
            if self.vt < _vt(since):
                raise FormatError(f"<{kind}> attribute {name!r} needs HRDF version >= {since} (this file is "
                                  f"{self.version})", src.display, line)
            values[name] = self._value(kind, name, value_kind, raw, src.display, line)
        for name in _REQUIRED.get(kind, ()):
            if name not in values:
                raise FormatError(f"<{kind}> is missing required attribute {name!r}", src.display,
                                  src.line(el))
        self._check_combinations(kind, values, el, src)
        return values

    def _value(self, kind: str, name: str, value_kind: str, raw: str, file: str, line: int) -> Any:
        old = self.vt < (1, 1, 0)
        try:
            if value_kind == "formula" and old:
                try:
                    return parse_float(raw.strip(" "))
                except GrammarError:
                    # hebi-py reads the leading number of '0.3 + 0.1' in a 1.0.0 file and drops the rest
                    raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} is not a number; formulas need HRDF "
                                      f"version >= 1.1.0 (this file is {self.version})", file, line) from None
            if value_kind == "formula":
                return parse_formula(raw, pi=self.pi)
            if value_kind == "rotation":
                return parse_rotation(raw, pi=self.pi, functions=not old, spaces_only=old)
            if value_kind == "translation":
                return parse_translation(raw, spaces_only=old)
        except GrammarError as exc:
            what = {"formula": "formula", "rotation": "rotation matrix", "translation": "translation vector"}
            raise FormatError(f"<{kind}> attribute {name!r}: invalid {what[value_kind]} {raw!r} ({exc})", file,
                              line) from None
        if value_kind == "enum":
            return self._enum(kind, name, raw, file, line)
        if value_kind == "mesh":
            return self._path(kind, name, raw, file, line, urls=True)
        if value_kind == "include":
            return self._path(kind, name, raw, file, line, urls=False)
        return raw  # "string", "version"

    def _lax(self, message: str, file: str, line: int) -> None:
        """A spec violation hebi-py tolerates: an error when strict, else a warning."""
        if self.strict:
            raise FormatError(f"{message} (hebi-py accepts this; load with strict=False to do the same)", file,
                              line)
        warnings.warn(f"{file}:{line}: {message}; accepted because strict=False", HrdfWarning, stacklevel=3)

    def _enum(self, kind: str, name: str, raw: str, file: str, line: int) -> str:
        table = _ENUMS[(kind, name)]
        if (kind, name) == ("joint", "axis") and raw[:1] == "-" and raw[1:].lower() in table:
            # hebi-py's undocumented reversed axes ("-rx" turns the other way)
            self._lax(f"<joint> attribute 'axis': {raw!r} is not an HRDF axis (allowed: "
                      f"{_enum_list(table, self.version)})", file, line)
            return "-" + self._enum(kind, name, raw[1:], file, line)
        canonical = raw if raw in table else next((v for v in table if v.lower() == raw.lower()), None)
        if canonical is None:
            raise FormatError(f"<{kind}> attribute {name!r}: unknown value {raw!r} (HRDF {self.version} allows: "
                              f"{_enum_list(table, self.version)})", file, line)
        since = table[canonical]
        if self.vt < _vt(since):
            raise FormatError(f"<{kind}> attribute {name!r}: {canonical!r} needs HRDF version >= {since} (this "
                              f"file is {self.version})", file, line)
        if canonical != raw:
            if self.vt < (1, 1, 0):
                raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} must be written {canonical!r} (enum "
                                  "values are case-sensitive before HRDF 1.1.0)", file, line)
            warnings.warn(f"{file}:{line}: <{kind}> attribute {name!r}: {raw!r} read as {canonical!r}; write "
                          "enum values in their canonical case", HrdfWarning, stacklevel=2)
        return canonical

    def _path(self, kind: str, name: str, raw: str, file: str, line: int, *, urls: bool) -> str:
        if not raw:
            raise FormatError(f"<{kind}> attribute {name!r} is empty", file, line)
        if _URL.match(raw):
            if not urls:
                raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} is a URL; includes must be relative file "
                                  "paths", file, line)
            if not raw.lower().startswith(("http://", "https://")):
                raise FormatError(f"<{kind}> attribute {name!r}: web URLs must start with http:// or https:// "
                                  f"(got {raw!r})", file, line)
            if self.vt < (1, 4, 0):
                self._lax(f"<{kind}> attribute {name!r}: web URLs need HRDF version >= 1.4.0 (this file is "
                          f"{self.version})", file, line)
            return raw
        if PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() or raw.startswith("\\") \
                or PureWindowsPath(raw).drive:
            raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} is an absolute path; paths must be relative to "
                              "the HRDF file", file, line)
        return raw

    def _check_combinations(self, kind: str, values: dict[str, Any], el: Any, src: _Source) -> None:
        for a, b in (("mass", "mass_offset"), ("com_trans", "com_trans_offset")):
            if a in values and b in values and kind != "rigid-body":
                raise FormatError(f"<{kind}> has both {a!r} and {b!r}: an override and an offset of the same "
                                  "property cannot be combined", src.display, src.attr_line(el, b))
        if kind == "rigid-body":
            for name in ("mesh_rot", "mesh_trans"):
                if name in values and "mesh_path" not in values:
                    raise FormatError(f"<rigid-body> attribute {name!r} requires a 'mesh_path'", src.display,
                                      src.attr_line(el, name))
        if kind == "joint" and values.get("gear_ratio") == 0.0:
            raise FormatError("<joint> attribute 'gear_ratio' must not be 0 (the output would move infinitely "
                              "fast)", src.display, src.attr_line(el, "gear_ratio"))
        if kind == "link" and values.get("type") == "R25-R8" and values.get("output") == "Inline":
            raise FormatError("<link type='R25-R8'> cannot have an Inline output (only RightAngle)", src.display,
                              src.attr_line(el, "output"))

    # ---------------------------------------------------------------- connections
    def _check_links(self, chain: tuple[HrdfElement, ...], parent: tuple[HrdfElement, str] | None) -> None:
        """Connection rules: what may follow what (FORMAT.md "Connecting Robot Model Elements")."""
        prev = parent
        for i, el in enumerate(chain):
            if prev is not None:
                p, p_out = prev
                if i > 0 and p.outputs:
                    raise FormatError(f"{el.describe(False)} cannot follow {p.describe()}, which has <output> "
                                      "children: attach it inside one of the <output> elements", el.file, el.line)
                if p_out == NONE:
                    raise FormatError(f"{el.describe(False)} cannot follow {p.describe()}: an end-effector has no "
                                      "output interface, it must end its chain", el.file, el.line)
                e_in = interfaces(el.kind, el.type)[0]
                if self.vt >= (1, 2, 0) and not compatible(p_out, e_in):
                    raise FormatError(f"{el.describe(False)} with input interface {e_in} cannot attach to "
                                      f"{p.describe()} with output interface {p_out} (interfaces must have the "
                                      "same type and opposite polarity)", el.file, el.line)
            out = interfaces(el.kind, el.type)[1]
            for o in el.outputs:
                self._check_links(o.chain, (el, out))
            prev = (el, out)


def _name(tag: str) -> str:
    """Local name of an lxml tag ('{ns}name' -> 'name')."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else str(tag)


def _display_tag(el: Any) -> str:
    """``<name>``, or ``<prefix:name>``/``<{namespace}name>`` for a namespaced element."""
    if el.tag == _name(el.tag):
        return f"<{el.tag}>"
    return f"<{el.prefix}:{_name(el.tag)}>" if el.prefix else f"<{el.tag}>"


def _bracket_outputs(type_: str | None, file: str, line: int) -> int:
    from hebictl.model.library import element_spec

    try:
        return len(element_spec("bracket", str(type_)).outputs)
    except ModelError as exc:
        raise FormatError(f"<bracket>: {exc}", file, line) from None


# --------------------------------------------------------------------------- public: parse
def parse_hrdf(path: str | Path, *, pi: float = HEBI_PI, strict: bool = False) -> HrdfDocument:
    """Read and validate an HRDF file (includes resolved relative to it).

    ``pi`` is the value of the formula constant ``pi``. The default,
    :data:`hebictl.formats.hrdf_grammar.HEBI_PI`, is the float32 value HEBI's own library uses,
    so every frame agrees with hebi-py (and HEBI's tools) to rounding; pass ``math.pi`` for the
    exact constant (frames then differ from hebi-py's by up to ~1e-7 m).
    By default (``strict=False``) the spec violations hebi-py tolerates and HEBI's own example
    kits use are accepted with an :class:`HrdfWarning` naming file and line: included files of
    another version, web-URL meshes before 1.4.0 and reversed joint axes (``axis="-rz"``).
    ``strict=True`` rejects them (``hebictl model validate --strict``).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read HRDF file: {exc.strerror}", p) from None
    return _Parser(pi, strict).document(data, str(path), p, p.parent)


def parse_hrdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                      pi: float = HEBI_PI, strict: bool = False) -> HrdfDocument:
    """Read and validate HRDF text; ``<include>`` paths resolve against ``base_dir`` (error if None)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if isinstance(text, str):
        # lxml refuses str with an encoding declaration; the bytes are UTF-8 now, so drop it.
        data = re.sub(rb"^(\s*<\?xml[^>]*?)\s+encoding\s*=\s*(['\"])[^'\"]*\2", rb"\1", data, count=1)
    return _Parser(pi, strict).document(data, source_name, None,
                                        Path(base_dir) if base_dir is not None else None)


# --------------------------------------------------------------------------- public: build
_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def _pose(rot: FloatArray | None, trans: FloatArray | None, default: FloatArray | None = None) -> FloatArray:
    T = np.eye(4) if default is None else default.copy()
    if rot is not None:
        T[:3, :3] = rot
    if trans is not None:
        T[:3, 3] = trans
    return T


@dataclass
class _Dynamics:
    mass: float
    com: FloatArray  # (4,4) COM frame in the element's input frame
    inertia: FloatArray  # (3,3) about the COM, COM axes


def _dynamics(el: HrdfElement, base: _Dynamics) -> _Dynamics:
    """Library values with the element's overrides (replace) and offsets (add) applied."""
    v = el.values
    mass = float(v.get("mass", base.mass)) + float(v.get("mass_offset", 0.0))
    com = base.com.copy()
    if "com_rot" in v:
        com[:3, :3] = v["com_rot"]
    if "com_trans" in v:
        com[:3, 3] = v["com_trans"]
    if "com_trans_offset" in v:  # in the element's input frame (checked against hebi-py)
        com[:3, 3] += v["com_trans_offset"]
    inertia = base.inertia.copy()
    for key, (i, j) in _INERTIA_INDEX.items():
        if key in v:
            inertia[i, j] = inertia[j, i] = v[key]
    if not mass >= 0.0:
        raise FormatError(f"{el.describe(False)} has mass {mass:g} kg; masses must not be negative", el.file, el.line)
    return _Dynamics(mass, com, inertia)


class _Assembler:
    """Walks a document depth-first, adding bodies and frames in hebi-py's element order."""

    def __init__(self, doc: HrdfDocument, name: str | None) -> None:
        from hebictl.model.tree import ModelBuilder

        self.doc = doc
        stem = "robot" if doc.file.startswith("<") else Path(doc.file).stem
        self.builder = ModelBuilder(name=name or doc.description or stem, source=doc.file, format="hrdf")
        self.records: list[dict[str, Any]] = []
        self.dof = 0
        self.tags = set(_all_tags(doc.chain))
        self.joint_names: set[str] = set()

    def run(self) -> RobotModel:
        self._chain(self.doc.chain, (-1, np.eye(4)), -1, 0)
        meta = {"format": "hrdf", "version": self.doc.version, "description": self.doc.description,
                "files": list(self.doc.files), "elements": self.records}
        try:
            return self.builder.build(base=self.doc.base, metadata=meta)
        except ModelError as exc:
            raise FormatError(str(exc), self.doc.file) from None

    def _chain(self, chain: tuple[HrdfElement, ...], attach: tuple[int, FloatArray], parent: int,
               parent_output: int) -> None:
        for el in chain:
            # the parser guarantees only the last element of a chain has <output> children
            parent, attach = self._element(el, attach, parent, parent_output)
            parent_output = 0

    def _joint_name(self, el: HrdfElement) -> str:
        self.dof += 1
        if el.tag:
            name = el.tag
        else:
            name = candidate = f"J{self.dof}_{el.type}"
            k = 2
            while name in self.tags or name in self.joint_names:
                name = f"{candidate}_{k}"
                k += 1
        self.joint_names.add(name)
        return name

    def _element(self, el: HrdfElement, attach: tuple[int, FloatArray], parent: int,
                 parent_output: int) -> tuple[int, tuple[int, FloatArray]]:
        """Add one element (and the subtrees of its <output>s); returns its index and attach point."""
        from hebictl.model.library import element_spec
        from hebictl.model.tree import Inertia, Joint, JointKind

        b = self.builder
        index = len(self.records)
        label = el.tag or f"e{index}_{el.type or el.kind}"
        record: dict[str, Any] = {"index": index, "kind": el.kind, "type": el.type, "tag": el.tag, "file": el.file,
                                  "line": el.line, "parent": parent, "parent_output": parent_output,
                                  "implicit": el.implicit, "joint": None, "mass": 0.0}
        record.update({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in el.values.items()
                       if k not in ("type", "tag", "axis")})
        self.records.append(record)
        pbody, poffset = attach

        if el.kind == "joint":
            assert el.type is not None
            sign = -1.0 if el.type.startswith("-") else 1.0
            axis_kind, axis = el.type[-2], tuple(sign * a for a in _AXES[el.type[-1]])
            gear = float(el.values.get("gear_ratio", 1.0))
            jname = self._joint_name(el)
            b.add_frame("input", pbody, poffset, name=label)
            body = b.add_body(label, pbody, poffset, joint=Joint(
                name=jname, kind=JointKind.REVOLUTE if axis_kind == "r" else JointKind.PRISMATIC, axis=axis,
                scale=1.0 / gear, metadata={"hrdf_element": index}))
            record.update(joint=jname, gear_ratio=gear)
            b.add_frame("output", body, None, name=label)
            return index, (body, np.eye(4))

        spec = None
        if el.kind == "rigid-body":
            base = _Dynamics(0.0, np.eye(4), np.zeros((3, 3)))
        else:
            try:
                spec = element_spec(el.kind, str(el.type),
                                    **({"extension": el.values["extension"], "twist": el.values["twist"],
                                        "input": el.values.get("input", "RightAngle"),
                                        "output": el.values.get("output", "RightAngle")}
                                       if el.kind == "link" else {}))
            except ModelError as exc:
                raise FormatError(f"{el.describe(False)}: {exc}", el.file, el.line) from None
            base = _Dynamics(spec.mass, np.array(spec.com), np.array(spec.inertia))
        dyn = _dynamics(el, base)
        record["mass"] = dyn.mass
        Rc = dyn.com[:3, :3]
        inertia = Inertia(mass=dyn.mass, com=tuple(dyn.com[:3, 3]), rotational=Rc @ dyn.inertia @ Rc.T)
        body = b.add_body(label, pbody, poffset, inertia=inertia, metadata={"hrdf_element": index})
        b.add_frame("input", body, None, name=label)
        b.add_frame("com", body, dyn.com, name=label)

        if el.kind == "actuator":
            assert spec is not None and spec.joint_axis is not None
            jname = self._joint_name(el)
            record["joint"] = jname
            out_body = b.add_body(f"{label}_output", body, np.array(spec.outputs[0]), joint=Joint(
                name=jname, kind=JointKind.REVOLUTE, axis=tuple(spec.joint_axis),
                max_velocity=spec.max_speed if spec.max_speed is not None else math.inf,
                max_effort=spec.max_effort if spec.max_effort is not None else math.inf,
                metadata={"hrdf_element": index}))
            b.add_frame("output", out_body, None, name=label)
            return index, (out_body, np.eye(4))

        if el.kind == "rigid-body":
            default = _pose(el.values.get("output_rot"), el.values.get("output_trans"))
            poses = [_pose(o.rot, o.trans, default) for o in el.outputs] or [default]
            if "mesh_path" in el.values:
                b.add_frame("mesh", body, _pose(el.values.get("mesh_rot"), el.values.get("mesh_trans")),
                            name=el.values["mesh_path"])
        else:
            assert spec is not None
            poses = [np.array(T) for T in spec.outputs]
            if el.kind == "end-effector":
                poses = [_pose(el.values.get("output_rot"), el.values.get("output_trans"), poses[0])]

        for k, T in enumerate(poses):
            b.add_frame("output", body, T, name=label if len(poses) == 1 else f"{label}[{k}]")
            if el.kind == "end-effector":
                b.add_frame("end_effector", body, T, name=label)
            if k < len(el.outputs):
                self._chain(el.outputs[k].chain, (body, T), index, k)
        return index, (body, poses[0])


def _all_tags(chain: tuple[HrdfElement, ...]) -> list[str]:
    out: list[str] = []
    for el in chain:
        if el.tag:
            out.append(el.tag)
        for o in el.outputs:
            out.extend(_all_tags(o.chain))
    return out


def build_model(doc: HrdfDocument, *, name: str | None = None) -> RobotModel:
    """Build the :class:`RobotModel` of a parsed document (library data + overrides).

    ``model.metadata["elements"]`` holds one dict per element in element order: ``index``,
    ``kind``, ``type`` (joint: axis), ``tag``, ``file``, ``line``, ``parent`` (element index, -1
    = base), ``parent_output``, ``implicit``, ``joint`` (joint name of actuators/joints),
    ``mass`` [kg] (after overrides), and the element's parsed attributes (``extension`` [m],
    ``twist`` [rad], ``gear_ratio``, ``mesh_path``, ... as plain floats/lists).
    """
    asm = _Assembler(doc, name)
    return asm.run()


# --------------------------------------------------------------------------- public: load
def load_hrdf(path: str | Path, *, pi: float = HEBI_PI, strict: bool = False) -> RobotModel:
    """Load an HRDF file into a :class:`RobotModel`; bad input raises ``FormatError`` (file, line).

    ``pi`` and ``strict``: see :func:`parse_hrdf`.
    """
    return build_model(parse_hrdf(path, pi=pi, strict=strict))


def load_hrdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                     pi: float = HEBI_PI, strict: bool = False) -> RobotModel:
    """Load HRDF text; ``<include>`` paths resolve against ``base_dir`` (an error without it)."""
    return build_model(parse_hrdf_string(text, base_dir=base_dir, source_name=source_name, pi=pi, strict=strict))
