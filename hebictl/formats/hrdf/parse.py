"""HRDF parsing: read and validate an HRDF file (with its includes) into an :class:`HrdfDocument`.

First of the reader's two stages (the second is :mod:`hebictl.formats.hrdf.assemble`): versions,
elements, attributes, value grammars, includes, tags, ``<output>`` trees and interface
compatibility are checked here, each error naming file, line and attribute. With
``strict=False`` what hebi-py accepts and the spec only discourages is read with an
:class:`~hebictl.errors.HrdfWarning`; ``strict=True`` rejects it.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import numpy as np
from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError, HrdfWarning, ModelError
from hebictl.formats.hrdf.grammar import (
    HEBI_PI,
    GrammarError,
    parse_float,
    parse_formula,
    parse_rotation,
    parse_translation,
)
from hebictl.formats.hrdf.source import Source
from hebictl.formats.hrdf.spec import (
    ATTRIBUTES,
    ELEMENT_VERSION,
    ENUMS,
    HEBI_PY_NEWER_VERSIONS,
    NONE,
    REQUIRED,
    ROBOT_ELEMENTS,
    URL_SCHEME,
    VERSIONS,
    WITH_OUTPUTS,
    HrdfDocument,
    HrdfElement,
    HrdfOutput,
    compatible,
    interfaces,
    version_tuple,
)

if TYPE_CHECKING:
    pass




# --------------------------------------------------------------------------- parser
def _enum_list(table: Mapping[str, str], version: str) -> str:
    return ", ".join(v for v, since in table.items() if version_tuple(since) <= version_tuple(version))


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
        src = Source(data, display, base_dir)
        self.files.append(display)
        if path is not None:
            self.stack.append((path.resolve(), display))
        root = src.root
        self._check_root(root, src)
        version = root.get("version")
        if version is None:
            version = "1.0.0"
        version = self._known_version(version, display, src.attr_line(root, "version"))
        self.version, self.vt = version, version_tuple(version)
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
    def _check_root(root: Any, src: Source) -> None:
        # not lenient: hebi-py "loads" a <Robot> root as an empty robot, which is not what the file means
        if root.tag != "robot":
            raise FormatError(f"root element is {_display_tag(root)}, expected <robot> (no XML namespace)",
                              src.display, src.line(root))

    def _include(self, el: Any, src: Source) -> list[HrdfElement]:
        raw = self._attributes(el, "include", src)["path"]
        line = src.attr_line(el, "path")
        if src.base_dir is None:
            raise FormatError("<include> in an HRDF string needs a base directory: load the file, or pass "
                              "base_dir= to load_hrdf_string", src.display, line)
        # relative to this file, '..' included (FORMAT.md); a confined load keeps it in the allowed folders
        target = limits.resolve_reference(raw, src.base_dir, file=src.display, line=line,
                                          what="<include> attribute 'path'")
        display = os.path.normpath(os.path.join(os.path.dirname(src.display), raw)) \
            if not src.display.startswith("<") else str(target)
        if not limits.is_regular_file(target):
            why = "is a directory" if os.path.isdir(target) else "not found"
            raise FormatError(f"<include> attribute 'path': included file {raw!r} {why} (resolved to {target})",
                              src.display, line)
        lim = limits.current()
        if len(self.stack) >= lim.max_include_depth:
            raise limits.exceeded("include depth", len(self.stack) + 1, "max_include_depth", src.display, line)
        if len(self.files) >= lim.max_include_count:
            raise limits.exceeded("number of included files", len(self.files), "max_include_count", src.display,
                                  line)
        real = target
        for i, (p, _) in enumerate(self.stack):
            if p == real:
                names = [d for _, d in self.stack[i:]] + [display]
                raise FormatError(f"<include> cycle: {' -> '.join(names)}", src.display, line)
        data = limits.read_regular_file(target, lim, f"included file {raw!r}", file=src.display, line=line)
        inc = Source(data, display, target.parent)
        self.files.append(display)
        root = inc.root
        self._check_root(root, inc)
        version = root.get("version") or "1.0.0"
        if version != self.version:
            self._lax(f"included file {raw!r} has HRDF version {version} but the including file has "
                      f"{self.version}; included files must match", src.display, line)
        version = self._known_version(version, display, inc.attr_line(root, "version"))
        saved = self.version, self.vt
        self.version, self.vt = version, version_tuple(version)  # (strict=False) each file by its own rules
        self.stack.append((real, display))
        try:
            self._attributes(root, "robot", inc)  # validated, then ignored (FORMAT.md, <include>)
            return list(self._chain(root, "robot", inc))
        finally:
            self.stack.pop()
            self.version, self.vt = saved

    # ---------------------------------------------------------------- structure
    def _children(self, el: Any, kind: str, src: Source) -> list[Any]:
        """Element children of ``el``; rejects stray text and entity references."""
        stray = src.stray_text(el)
        if stray is not None:
            text, line = stray
            short = text if len(text) <= 30 else text[:27] + "..."
            allowed = ("robot elements" if kind in ("robot", "output") else
                       "<output> elements" if kind in WITH_OUTPUTS else "nothing")
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

    def _chain(self, container: Any, kind: str, src: Source) -> list[HrdfElement]:
        chain: list[HrdfElement] = []
        budget = limits.current().max_bodies
        for child in self._children(container, kind, src):
            self.n_elements = getattr(self, "n_elements", 0) + 1
            if self.n_elements > budget:
                raise limits.exceeded("HRDF elements (includes expanded)", self.n_elements, "max_bodies", src.display,
                                      src.line(child))
            name = self._element_name(child, kind, src, ROBOT_ELEMENTS)
            if name == "include":
                chain.extend(self._include(child, src))
            else:
                chain.append(self._element(child, name, src))
        return chain

    def _element_name(self, el: Any, parent: str, src: Source, allowed: tuple[str, ...]) -> str:
        name = _name(el.tag)
        if name != el.tag:
            raise FormatError(f"{_display_tag(el)} is not allowed inside <{parent}>: HRDF elements have no XML "
                              "namespace", src.display, src.line(el))
        ok = [a for a in allowed if self.vt >= version_tuple(ELEMENT_VERSION[a])]
        if name in allowed and name not in ok:
            raise FormatError(f"<{name}> needs HRDF version >= {ELEMENT_VERSION[name]} (this file is "
                              f"{self.version})", src.display, src.line(el))
        if name not in ok:
            hint = next((f"; element names are case-sensitive: write <{a}>" for a in ok if a.lower() == name.lower()),
                        "")
            expected = ", ".join(f"<{a}>" for a in ok) or "no child elements"
            raise FormatError(f"<{name}> is not allowed inside <{parent}> (expected {expected}){hint}", src.display,
                              src.line(el))
        return name

    def _element(self, el: Any, kind: str, src: Source) -> HrdfElement:
        values = self._attributes(el, kind, src)
        line = src.line(el)
        type_ = values.get("axis") if kind == "joint" else values.get("type")
        if kind == "end-effector" and type_ is None:
            type_ = "Custom"
        tag = values.get("tag")
        children = self._children(el, kind, src)
        outputs: list[HrdfOutput] = []
        if kind in WITH_OUTPUTS:
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

    def _output(self, el: Any, parent: str, src: Source) -> HrdfOutput:
        values = self._attributes(el, "output", src)
        for name in ("rot", "trans"):
            if parent != "rigid-body" and name in values:
                raise FormatError(f"<output> attribute {name!r} is only allowed under <rigid-body>: a bracket's "
                                  "output interfaces are fixed by its type", src.display, src.attr_line(el, name))
        return HrdfOutput(file=src.display, line=src.line(el), rot=values.get("rot"),
                          trans=values.get("trans"), chain=tuple(self._chain(el, "output", src)))

    # ---------------------------------------------------------------- attributes
    def _attributes(self, el: Any, kind: str, src: Source) -> dict[str, Any]:
        table = ATTRIBUTES[kind]
        values: dict[str, Any] = {}
        for raw_name, raw in el.attrib.items():
            name = _name(raw_name)
            line = src.attr_line(el, raw_name)
            if raw_name != name or name not in table:
                known = [a for a, (_, since) in table.items() if self.vt >= version_tuple(since)]
                raise FormatError(f"<{kind}> has no attribute {raw_name!r} in HRDF {self.version} (allowed: "
                                  f"{', '.join(known) or 'none'})", src.display, line)
            value_kind, since = table[name]
            if self.vt < version_tuple(since):
                raise FormatError(f"<{kind}> attribute {name!r} needs HRDF version >= {since} (this file is "
                                  f"{self.version})", src.display, line)
            value = self._value(kind, name, value_kind, raw, src.display, line)
            if value is not None:  # None: an empty mesh path, read as no mesh
                values[name] = value
        for name in REQUIRED.get(kind, ()):
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
            shown = raw if len(raw) <= 80 else raw[:60] + f"... ({len(raw)} characters)"
            raise FormatError(f"<{kind}> attribute {name!r}: invalid {what[value_kind]} {shown!r} ({exc})", file,
                              line) from None
        if value_kind == "enum":
            return self._enum(kind, name, raw, file, line)
        if value_kind == "mesh":
            return self._path(kind, name, raw, file, line, urls=True)
        if value_kind == "include":
            return self._path(kind, name, raw, file, line, urls=False)
        return raw  # "string", "version"

    def _known_version(self, version: str, file: str, line: int) -> str:
        """``version`` if supported; one of hebi-py's newer minor versions is read by the newest rules
        unless strict, exactly as hebi-py does; any other string is an error, as in hebi-py."""
        if version in VERSIONS:
            return version
        message = (f"<robot> attribute 'version': unsupported HRDF version {version!r} (supported: "
                   f"{', '.join(VERSIONS)}")
        if version not in HEBI_PY_NEWER_VERSIONS:
            raise FormatError(f"{message}; hebi-py also reads {', '.join(HEBI_PY_NEWER_VERSIONS)})", file, line)
        self._lax(f"{message}); a newer minor version of 1.x that hebi-py reads: read as {VERSIONS[-1]}",
                  file, line)
        return VERSIONS[-1]

    def _lax(self, message: str, file: str, line: int) -> None:
        """A spec violation hebi-py tolerates: an error when strict, else a warning."""
        if self.strict:
            raise FormatError(f"{message} (hebi-py accepts this; load with strict=False to do the same)", file,
                              line)
        warnings.warn(f"{file}:{line}: {message}; accepted because strict=False", HrdfWarning, stacklevel=3)

    def _enum(self, kind: str, name: str, raw: str, file: str, line: int) -> str:
        table = ENUMS[(kind, name)]
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
        if self.vt < version_tuple(since):
            raise FormatError(f"<{kind}> attribute {name!r}: {canonical!r} needs HRDF version >= {since} (this "
                              f"file is {self.version})", file, line)
        if canonical != raw:
            if self.vt < (1, 1, 0):
                self._lax(f"<{kind}> attribute {name!r}: {raw!r} must be written {canonical!r} (enum values are "
                          "case-sensitive before HRDF 1.1.0)", file, line)
                return canonical
            warnings.warn(f"{file}:{line}: <{kind}> attribute {name!r}: {raw!r} read as {canonical!r}; write "
                          "enum values in their canonical case", HrdfWarning, stacklevel=2)
        return canonical

    def _path(self, kind: str, name: str, raw: str, file: str, line: int, *, urls: bool) -> str | None:
        """A file reference. ``urls`` means a mesh: only drawn, never read here, so what hebi-py
        tolerates in one (empty, absolute, another URL scheme) is a warning unless strict; an
        include is read, and its path must be a relative file path."""
        if not raw:
            if not urls:
                raise FormatError(f"<{kind}> attribute {name!r} is empty", file, line)
            self._lax(f"<{kind}> attribute {name!r} is empty (read as no mesh)", file, line)
            return None
        if URL_SCHEME.match(raw):
            if not urls:
                raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} is a URL; includes must be relative file "
                                  "paths", file, line)
            if not raw.lower().startswith(("http://", "https://")):
                self._lax(f"<{kind}> attribute {name!r}: web URLs must start with http:// or https:// "
                          f"(got {raw!r})", file, line)
                return raw
            if self.vt < (1, 4, 0):
                self._lax(f"<{kind}> attribute {name!r}: web URLs need HRDF version >= 1.4.0 (this file is "
                          f"{self.version})", file, line)
            return raw
        if PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() or raw.startswith("\\") \
                or PureWindowsPath(raw).drive:
            if urls:  # kept as the mesh frame's name; hebictl never opens it
                self._lax(f"<{kind}> attribute {name!r}: {raw!r} is an absolute path; paths must be relative to "
                          "the HRDF file", file, line)
                return raw
            raise FormatError(f"<{kind}> attribute {name!r}: {raw!r} is an absolute path; paths must be relative to "
                              "the HRDF file", file, line)
        return raw

    def _check_combinations(self, kind: str, values: dict[str, Any], el: Any, src: Source) -> None:
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
    from hebictl.formats.hrdf.library import element_spec

    try:
        return len(element_spec("bracket", str(type_)).outputs)
    except ModelError as exc:
        raise FormatError(f"<bracket>: {exc}", file, line) from None


# --------------------------------------------------------------------------- public: parse
def parse_hrdf(path: str | Path, *, pi: float = HEBI_PI, strict: bool = False) -> HrdfDocument:
    """Read and validate an HRDF file (includes resolved relative to it).

    ``pi`` is the value of the formula constant ``pi``. The default,
    :data:`hebictl.formats.hrdf.grammar.HEBI_PI`, is the float32 value HEBI's own library uses,
    so every frame agrees with hebi-py (and HEBI's tools) to rounding; pass ``math.pi`` for the
    exact constant (frames then differ from hebi-py's by up to ~1e-7 m).
    By default (``strict=False``) the spec violations hebi-py tolerates and HEBI's own example
    kits use are accepted with an :class:`HrdfWarning` naming file and line: included files of
    another version, web-URL meshes before 1.4.0 and reversed joint axes (``axis="-rz"``).
    ``strict=True`` rejects them (``hebictl model validate --strict``).
    """
    p = Path(path)
    with limits.model_folder(p):
        data = limits.read_regular_file(p, what="HRDF file")  # bounded; never a device or FIFO
        return _Parser(pi, strict).document(data, str(path), p, p.parent)


def parse_hrdf_string(text: str | bytes, *, base_dir: str | Path | None = None, source_name: str = "<string>",
                      pi: float = HEBI_PI, strict: bool = False) -> HrdfDocument:
    """Read and validate HRDF text; ``<include>`` paths resolve against ``base_dir`` (error if None)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if isinstance(text, str):
        # lxml refuses str with an encoding declaration; the bytes are UTF-8 now, so drop it.
        data = re.sub(rb"^(\s*<\?xml[^>]*?)\s+encoding\s*=\s*(['\"])[^'\"]*\2", rb"\1", data, count=1)
    with limits.model_folder(base_dir, is_dir=True):
        return _Parser(pi, strict).document(data, source_name, None,
                                            Path(base_dir) if base_dir is not None else None)


