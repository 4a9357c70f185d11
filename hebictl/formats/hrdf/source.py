"""One HRDF file's XML with the raw text beside it, for exact lines of attributes and stray text.

lxml gives each element's line but not each attribute's; HRDF errors name the attribute's own
line (the spec asks for file, line and attribute), so the start tags are scanned here once.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

from hebictl.errors import FormatError

if TYPE_CHECKING:
    pass


# --------------------------------------------------------------------------- XML source
_XML_PARSER_OPTIONS = {"resolve_entities": False, "no_network": True, "load_dtd": False, "huge_tree": False,
                       "remove_comments": False, "remove_pis": False, "strip_cdata": True}
_NAME_START = re.compile(r"<([A-Za-z_][\w.:-]*)")
_ATTR = re.compile(r"""\s*([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')""")


class Source:
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
