"""Bounded YAML reading for robot configs and model directives: size, depth and alias limits, clean errors.

PyYAML's ``SafeLoader`` runs no code, but it is not safe against hostile *shape*: its composer
recurses once per nesting level (``RecursionError`` at about 1000), its constructors raise bare
``ValueError`` for ``!!float x``, ``!!int abc`` or 5,000-digit integers, and an alias bomb
(``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]``, ...) builds 9^9 shared references that any
``repr()`` or walk then expands. :func:`load_yaml` first streams the parser's events (which are
produced without recursion) to check nesting depth and the number of nodes aliases would
expand to, then constructs with a loader whose scalar errors carry the YAML line. Everything it
raises is the caller's error class (``ConfigError`` by default) naming the file and the line.
"""

from __future__ import annotations

import os
import reprlib
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


class StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses duplicate mapping keys and turns constructor crashes into YAML errors.

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


def check_shape(text: str, limits: _limits.ReaderLimits | None = None) -> None:
    """Refuse a document nested deeper than ``max_yaml_depth`` or whose aliases expand past the budget.

    Walks the event stream once, keeping per open collection the number of nodes it holds
    (aliases counted at the size of what they point to), so the check is linear in the text and
    a 9^9 alias bomb is refused after a few hundred events. Raises ``yaml.MarkedYAMLError``.
    """
    limits = limits or _limits.current()
    sizes: dict[str, int] = {}  # anchor -> nodes it expands to
    stack: list[tuple[int, str | None]] = []  # (nodes so far, anchor) of each open collection
    expanded = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= limits.max_yaml_depth:
                raise yaml.composer.ComposerError(
                    None, None, f"nesting deeper than {limits.max_yaml_depth} levels (ReaderLimits.max_yaml_depth)",
                    event.start_mark)
            stack.append((1, event.anchor))
        elif isinstance(event, yaml.CollectionEndEvent):
            count, anchor = stack.pop()
            if anchor is not None:
                sizes[anchor] = count
            if stack:
                stack[-1] = (stack[-1][0] + count, stack[-1][1])
        elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            if isinstance(event, yaml.AliasEvent):
                count = sizes.get(event.anchor, 1)
                expanded += count
                if expanded > limits.max_yaml_alias_nodes:
                    raise yaml.composer.ComposerError(
                        None, None, f"aliases expand to more than {limits.max_yaml_alias_nodes} nodes "
                        "(ReaderLimits.max_yaml_alias_nodes); an alias bomb?", event.start_mark)
            else:
                count = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            if stack:
                stack[-1] = (stack[-1][0] + count, stack[-1][1])


def load_yaml(path: str | os.PathLike[str], *, error: type[ConfigError] | type[FormatError] = ConfigError,
              loader: type[yaml.SafeLoader] = StrictLoader, what: str = "config",
              text: str | None = None) -> Any:
    """Read, check and construct one YAML document; every failure is ``error`` naming the file and line.

    The file must be a regular file within ``ReaderLimits.max_yaml_bytes``. Pass ``text`` to
    check a string already in memory (``path`` then only names it in messages).
    """
    limits = _limits.current()
    if text is None:
        data = _limits.read_regular_file(path, limits, what, max_bytes=limits.max_yaml_bytes, error=error)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise error(f"{what} is not UTF-8 text (byte {exc.start})", file=path, line=line) from None
    elif len(text) > limits.max_yaml_bytes:
        raise error(f"{what} is {len(text)} characters, over the limit ReaderLimits.max_yaml_bytes="
                    f"{limits.max_yaml_bytes}", file=path)
    try:
        check_shape(text, limits)
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        err = error(f"{where}YAML error: {exc.problem}{context}", file=path)
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


__all__ = ["MAX_INT_MAGNITUDE", "StrictLoader", "check_shape", "describe", "load_yaml"]
