"""MJCF ``<include>``: the children of an included ``<mujoco>`` spliced in place, recursively.

Included paths are tried beside the including file, then beside the main file (``..`` followed, as
MuJoCo does); spliced elements are marked with their file (:data:`~hebictl.formats.mjcf.context.SRC`)
so that errors name the file and line they come from.
"""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from hebictl import limits
from hebictl.errors import FormatError
from hebictl.formats._xml import elements, local_name, parse_xml
from hebictl.formats.mjcf.context import SRC, ReadContext


def expand_includes(rc: ReadContext, root: etree._Element, here: Path | None, main: Path | None, stack: list[str],
                    file: str) -> None:
    """Replace every <include file=...> by the children of the included <mujoco> (recursively).

    ``here`` is the folder of the file holding ``root``; included paths are tried there, then
    in the main file's folder. Spliced elements are marked with their file for error messages.
    """
    includes = list(root.iter("include"))
    # counted before any is read: splicing thousands of includes is quadratic
    rc.include_count += len(includes)

    if rc.include_count > limits.current().max_include_count:
        raise limits.exceeded("number of includes", rc.include_count, "max_include_count", file,
                              includes[-1].sourceline)

    for inc in includes:
        src = inc.get("file")
        if src is None:
            raise FormatError("<include> needs a file attribute", file, inc.sourceline)
        # tried beside the including file, then beside the main file ('..' followed, as MuJoCo does;
        # a confined load keeps both inside the allowed folders)
        candidates = [limits.resolve_reference(src, p, file=file, line=inc.sourceline, what="<include> file")
                      for p in [q for q in (here, main) if q is not None] or [Path.cwd()]]
        path = next((c for c in candidates if limits.is_regular_file(c)), None)
        if path is None:
            why = "is not a regular file" if any(limits.exists(c) for c in candidates) else "not found"
            raise FormatError(f"included file {src!r} {why}", file, inc.sourceline)
        key = str(path)
        if key in stack:
            raise FormatError(f"include cycle: {src!r} is already being included", file, inc.sourceline)
        if len(stack) > limits.current().max_include_depth:
            raise limits.exceeded("include depth", len(stack), "max_include_depth", file, inc.sourceline)
        sub = parse_xml(path, str(path))
        if local_name(sub) != "mujoco":
            raise FormatError(f"included file must have a <mujoco> root, got <{local_name(sub)}>", str(path),
                              sub.sourceline)
        expand_includes(rc, sub, path.parent, main, [*stack, key], str(path))
        parent = inc.getparent()
        if parent is None:
            raise FormatError("<include> cannot be the root element", file, inc.sourceline)
        pos = parent.index(inc)
        for k, child in enumerate(elements(sub)):
            if child.get(SRC) is None:
                child.set(SRC, str(path))
            parent.insert(pos + k, child)
        parent.remove(inc)
