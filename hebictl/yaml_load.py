"""Bounded YAML reading for robot configs and model directives: size, depth and alias limits, clean errors.

PyYAML's ``SafeLoader`` runs no code, but it is not safe against hostile *shape*: its composer
recurses once per nesting level (``RecursionError`` at about 1000), its constructors raise bare
``ValueError`` for ``!!float x``, ``!!int abc`` or 5,000-digit integers, and an alias bomb
(``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, ...) builds 9^9 shared references that any
``repr()`` or walk then expands. It is also slow: pure Python took 25 s for a 1 MiB config.

:func:`load_yaml` therefore parses the text once, with libyaml's C parser where PyYAML was built
with it (``yaml.CSafeLoader``; libyaml itself stops at 1,000 nesting levels, so its composer's
recursion is bounded), into PyYAML's node graph. Before any Python object is built, one
non-recursive walk of that graph checks nesting depth and the number of nodes aliases expand to
(an alias is a node reached a second time; the graph is built with sharing, so a 9^9 bomb is a
few dozen nodes). Constructors then run with errors that carry the YAML line. The node graph is
kept (for the last few files) so :func:`key_line` finds the line of a key in an error message
without reading the file again. Everything raised is the caller's error class (``ConfigError``
by default) naming the file and the line.
"""

from __future__ import annotations

import contextlib
import os
import re
import reprlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import yaml

from hebictl import limits as _limits
from hebictl.errors import ConfigError, FormatError

#: Integers beyond this magnitude are refused at load: no config value needs them, and
#: ``float()``/``math.isnan()`` on them overflow.
MAX_INT_MAGNITUDE = 2**64

_short = reprlib.Repr()
_short.maxstring = 40
_short.maxother = 40
_short.maxlong = 40
_short.maxlevel = 2
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 4


def describe(value: Any) -> str:
    """How a wrong value reads in an error message: its type and a short repr, bounded in time and size.

    ``reprlib`` stops after a few items and levels, so a huge (or alias-shared) structure never
    gets walked; integers too long for ``repr()`` are described by their digit count.
    """
    if value is None:
        return "nothing (null)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT_MAGNITUDE:
        return f"int of about {value.bit_length() * 0.30103:.0f} digits"
    try:
        text = _short.repr(value)
    except (ValueError, RecursionError):  # pragma: no cover - defensive
        text = "<unprintable>"
    return f"{type(value).__name__} {text}"


#: The fastest safe loader PyYAML has here: libyaml's C parser and composer, Python constructors.
BaseSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(BaseSafeLoader):
    """Safe loader that refuses duplicate mapping keys and turns constructor crashes into YAML errors.

    PyYAML keeps the last of duplicate keys silently; hebi reads configs the same way, but a
    duplicate is always a mistake in a hand-written file.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            value = super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.tag} value {_short.repr(getattr(node, 'value', ''))}: "
                f"{_first_line(exc)}", node.start_mark) from None
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT_MAGNITUDE:
            raise yaml.constructor.ConstructorError(
                None, None, f"integer out of range (magnitude over 2**64): {describe(value)}", node.start_mark)
        return value

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<' merge keys: later keys override, by design
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # unhashable key: let PyYAML report it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"duplicate key {describe(key)}",
                    key_node.start_mark)
        return super().construct_mapping(node, deep)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def check_shape(root: yaml.Node | None, limits: _limits.ReaderLimits | None = None) -> None:
    """Refuse a node graph nested deeper than ``max_yaml_depth`` or whose aliases expand past the budget.

    One iterative depth-first walk (no recursion, whatever the nesting): a node reached a second
    time is an alias, counted at the number of nodes it expands to (known once its first visit is
    finished), so the check is linear in the distinct nodes and a 9^9 alias bomb is refused after
    a few dozen. A node reached again while it is still open is a recursive alias, also refused.
    Raises ``yaml.MarkedYAMLError`` at the offending node's line.
    """
    if root is None:
        return
    limits = limits or _limits.current()
    sizes: dict[int, int] = {}  # id(node) -> nodes it expands to, once finished
    open_ids: set[int] = set()
    expanded = 0
    # each entry: (node, iterator over its children, nodes counted so far)
    stack: list[list[Any]] = []

    def enter(node: yaml.Node) -> int | None:
        """Count a scalar or a finished node at once (its size); push an unseen collection (None)."""
        nonlocal expanded
        key = id(node)
        if key in open_ids:
            raise yaml.composer.ComposerError(None, None, "recursive alias (a node that contains itself)",
                                              node.start_mark)
        if key in sizes:  # reached again: an alias
            expanded += sizes[key]
            if expanded > limits.max_yaml_alias_nodes:
                raise yaml.composer.ComposerError(
                    None, None, f"aliases expand to more than {limits.max_yaml_alias_nodes} nodes "
                    "(ReaderLimits.max_yaml_alias_nodes); an alias bomb?", node.start_mark)
            return sizes[key]
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            return 1
        if len(stack) >= limits.max_yaml_depth:
            raise yaml.composer.ComposerError(
                None, None, f"nesting deeper than {limits.max_yaml_depth} levels (ReaderLimits.max_yaml_depth)",
                node.start_mark)
        children = (c for pair in node.value for c in pair) if isinstance(node, yaml.MappingNode) else iter(node.value)
        open_ids.add(key)
        stack.append([node, children, 1])
        return None

    enter(root)
    while stack:
        top = stack[-1]
        child = next(top[1], None)
        if child is not None:
            size = enter(child)
            if size is not None:
                top[2] += size
            continue
        stack.pop()
        key = id(top[0])
        open_ids.discard(key)
        sizes[key] = top[2]
        if stack:
            stack[-1][2] += top[2]


#: Node graphs of the last files read, for :func:`key_line`: realpath -> ((mtime_ns, size), root node).
_COMPOSED: OrderedDict[str, tuple[tuple[int, int], yaml.Node | None]] = OrderedDict()
_COMPOSED_KEEP = 8
_COMPOSED_LOCK = threading.Lock()  # configs may load in several threads (teleop, panel)


def _stamp(path: str | os.PathLike[str]) -> tuple[str, tuple[int, int]] | None:
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return real, (st.st_mtime_ns, st.st_size)


def _remember(path: str | os.PathLike[str], root: yaml.Node | None) -> None:
    stamp = _stamp(path)
    if stamp is None:
        return
    with _COMPOSED_LOCK:
        _COMPOSED[stamp[0]] = (stamp[1], root)
        _COMPOSED.move_to_end(stamp[0])
        while len(_COMPOSED) > _COMPOSED_KEEP:
            _COMPOSED.popitem(last=False)


def composed(path: str | os.PathLike[str]) -> yaml.Node | None:
    """The node graph of a YAML file: the one :func:`load_yaml` kept if the file is unchanged, else
    read again within the same limits. ``None`` if it cannot be read or parsed (for messages only)."""
    stamp = _stamp(path)
    if stamp is not None:
        with _COMPOSED_LOCK:
            kept = _COMPOSED.get(stamp[0])
        if kept is not None and kept[0] == stamp[1]:
            return kept[1]
    try:
        _, root = _compose(path, ConfigError, StrictLoader, "file", None)
    except (ConfigError, FormatError):
        return None
    return root


def key_line(path: str | os.PathLike[str], key: str | None) -> int | None:
    """Line (1-based) of a key path such as ``plugins[2].ramp_tme`` in a YAML file, or None.

    Walks mapping keys and sequence indices of the file's node graph (kept from its load); the
    deepest part found wins.
    """
    if not key:
        return None
    node = composed(path)
    line = None
    for part in re.findall(r"\[\d+\]|[^.\[\]]+", key):
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and part.startswith("[") and int(part[1:-1]) < len(node.value):
            node = node.value[int(part[1:-1])]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _read_text(path: str | os.PathLike[str], error: type[ConfigError] | type[FormatError], what: str) -> str:
    limits = _limits.current()
    data = _limits.read_regular_file(path, limits, what, max_bytes=limits.max_yaml_bytes, error=error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise error(f"{what} is not UTF-8 text (byte {exc.start})", file=path, line=line) from None


def _compose(path: str | os.PathLike[str], error: type[ConfigError] | type[FormatError],
             loader_class: type[yaml.SafeLoader], what: str, text: str | None
             ) -> tuple[yaml.SafeLoader, yaml.Node | None]:
    """Parse once into a node graph and check its shape; the loader stays ready to construct it."""
    limits = _limits.current()
    if text is None:
        text = _read_text(path, error, what)
    elif len(text) > limits.max_yaml_bytes:
        raise error(f"{what} is {len(text)} characters, over the limit ReaderLimits.max_yaml_bytes="
                    f"{limits.max_yaml_bytes}", file=path)
    with _yaml_errors(path, error, text):
        loader = loader_class(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
        check_shape(root, limits)
    return loader, root


@contextlib.contextmanager
def _yaml_errors(path: str | os.PathLike[str], error: type[ConfigError] | type[FormatError],
                 text: str) -> Iterator[None]:
    """Turn PyYAML's exceptions into ``error`` naming the file and the line."""
    try:
        yield
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        problem = exc.problem
        if problem == "exceeded maximum nesting depth":  # libyaml's own stop, at 1000 levels
            limit = _limits.current().max_yaml_depth
            problem, context = f"nesting deeper than {limit} levels (ReaderLimits.max_yaml_depth)", ""
        err = error(f"{where}YAML error: {problem}{context}", file=path)
        err.line = mark.line + 1 if mark is not None else None  # the message already shows it
        raise err from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        err = error(f"line {line}: YAML error: {_first_line(exc)}", file=path)
        err.line = line
        raise err from None
    except yaml.YAMLError as exc:
        raise error(f"YAML error: {_first_line(exc)}", file=path) from None
    except (ValueError, TypeError, OverflowError, RecursionError, ArithmeticError) as exc:
        # last line of defence: StrictLoader and check_shape should have caught it with a line
        raise error(f"YAML error: {type(exc).__name__}: {_first_line(exc)}", file=path) from exc


def load_yaml(path: str | os.PathLike[str], *, error: type[ConfigError] | type[FormatError] = ConfigError,
              loader: type[yaml.SafeLoader] = StrictLoader, what: str = "config",
              text: str | None = None) -> Any:
    """Read, check and construct one YAML document; every failure is ``error`` naming the file and line.

    The file must be a regular file within ``ReaderLimits.max_yaml_bytes``. Pass ``text`` to
    check a string already in memory (``path`` then only names it in messages). The text is
    parsed once (see the module docstring); its node graph is kept for :func:`key_line`.
    """
    instance, root = _compose(path, error, loader, what, text)
    if text is None:
        _remember(path, root)
    if root is None:
        return None
    with _yaml_errors(path, error, ""):
        return instance.construct_document(root)


__all__ = ["MAX_INT_MAGNITUDE", "BaseSafeLoader", "StrictLoader", "check_shape", "composed", "describe", "key_line",
           "load_yaml"]
