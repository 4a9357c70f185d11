"""HEBI gains XML (``<group_gains>``): load, check, and apply to a hebi-py ``GroupCommand``.

A gains file holds, for every module of a group, the control strategy and the three cascaded
PID loops (position, velocity, effort) that run *on the actuator*. hebi-py reads these files in
its C core (``GroupCommand.read_gains``), which is lenient in ways that hide mistakes: ``"1,2,3"``
or tab-separated values silently become a broadcast ``1``, ``"2x"`` reads as ``2``, misspelled
elements and out-of-range control strategies are ignored or accepted. Loading the file here first
gives one clear :class:`~hebictl.errors.ConfigError` with file and line instead, and a typed value
the mock/sim backends can use without hebi-py.

The schema is exactly what ``GroupCommand.write_gains`` writes (checked against hebi-py 2.16):
``control_strategy`` plus ``position``/``velocity``/``effort`` blocks with the fourteen
:data:`PID_FIELDS`. Safety parameters (M-stop strategy, position-limit strategy, limits) live in
a separate ``<group_safety>`` file and are not part of gains; spring constant is in neither.

Width rules mirror hebi: every element of one file carries the same number of values (the file's
``width``); a width-1 file broadcasts to any group size, otherwise the group must match exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree
from numpy.typing import NDArray

from hebictl.errors import ConfigError
from hebictl.limits import read_regular_file

#: Per-joint fields of one PID block, in the order hebi-py writes them.
PID_FIELDS: tuple[str, ...] = (
    "kp", "ki", "kd", "feed_forward", "dead_zone", "i_clamp", "punch",
    "min_target", "max_target", "target_lowpass", "min_output", "max_output", "output_lowpass",
    "d_on_error",
)
#: The three cascaded loops, outermost first; also the XML block names.
PID_BLOCKS: tuple[str, ...] = ("position", "velocity", "effort")

#: HEBI control strategies, raw value -> hebi-py's name (``GroupCommand.control_strategy``);
#: 2-4 are the cascaded position/velocity/effort arrangements of HEBI's docs. hebi's C reader
#: accepts any integer, which the actuator would then reject; hebictl refuses it at load time.
CONTROL_STRATEGIES: dict[int, str] = {0: "Off", 1: "DirectPWM", 2: "Strategy2", 3: "Strategy3",
                                      4: "Strategy4"}

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True,
                          remove_pis=True, huge_tree=False)


@dataclass(frozen=True, eq=False)
class PidGains:
    """One PID loop's per-module parameters; each array has the file's width, NaN where absent.

    Units follow the loop: errors are in rad (position), rad/s (velocity) or N·m (effort), and
    ``min_output``/``max_output`` are in the units of the next loop in the cascade (PWM fraction
    for the innermost). ``d_on_error`` is 1.0/0.0 (a bool in hebi) so it can hold NaN too.
    No ``==``: arrays have no single truth value; compare fields with numpy.
    """

    kp: NDArray[np.float64]
    ki: NDArray[np.float64]
    kd: NDArray[np.float64]
    feed_forward: NDArray[np.float64]
    dead_zone: NDArray[np.float64]
    i_clamp: NDArray[np.float64]
    punch: NDArray[np.float64]
    min_target: NDArray[np.float64]
    max_target: NDArray[np.float64]
    target_lowpass: NDArray[np.float64]
    min_output: NDArray[np.float64]
    max_output: NDArray[np.float64]
    output_lowpass: NDArray[np.float64]
    d_on_error: NDArray[np.float64]

    def present(self) -> tuple[str, ...]:
        """Names of the fields the file gave (not all NaN), in :data:`PID_FIELDS` order."""
        return tuple(f for f in PID_FIELDS if not np.all(np.isnan(getattr(self, f))))

    def broadcast_to(self, width: int) -> PidGains:
        """Copy with every array repeated to ``width`` modules (only valid from width 1)."""
        return PidGains(**{f: _frozen(np.broadcast_to(getattr(self, f), (width,))) for f in PID_FIELDS})


@dataclass(frozen=True, eq=False)
class GroupGains:
    """A whole gains file: control strategy and the three PID loops for ``width`` modules.

    ``control_strategy`` is ``None`` when the file leaves it out (a command built from it then
    carries no strategy, so each module keeps its own). Arrays are read-only so the value can
    be shared safely.
    """

    path: Path | None
    width: int
    control_strategy: tuple[int, ...] | None
    position: PidGains
    velocity: PidGains
    effort: PidGains

    def broadcast_to(self, width: int) -> GroupGains:
        """These gains for a group of ``width`` modules (a width-1 file repeats, like hebi)."""
        if width == self.width:
            return self
        self._check_width(width)
        cs = None if self.control_strategy is None else self.control_strategy * width
        return GroupGains(self.path, width, cs, *(getattr(self, b).broadcast_to(width) for b in PID_BLOCKS))

    def apply_to(self, group_command: Any) -> None:
        """Replace the gains of a hebi-py ``GroupCommand`` exactly as ``read_gains`` would.

        Like hebi's reader, every gains field the file omits is cleared (control strategy reads
        back 0, floats NaN, ``d_on_error`` False) while non-gains fields (setpoints, LED, safety
        parameters) are kept: the gains are staged in a fresh command and moved over with
        ``copy_gains_from``. Raises :class:`ConfigError` if the command's module count is
        neither this width nor broadcastable from it.
        """
        from hebi import GroupCommand  # the caller holds a GroupCommand, so hebi is imported

        size = int(group_command.size)
        gains = self.broadcast_to(size)
        staged = GroupCommand(size)
        if gains.control_strategy is not None:
            staged.control_strategy = list(gains.control_strategy)
        for block in PID_BLOCKS:
            pid: PidGains = getattr(gains, block)
            for name in pid.present():
                values = getattr(pid, name)
                setattr(staged, f"{block}_{name}", values.astype(bool) if name == "d_on_error" else values)
        group_command.copy_gains_from(staged)

    def _check_width(self, width: int) -> None:
        if self.width != 1 or width < 1:
            raise ConfigError(f"gains are for {self.width} modules, the group has {width}",
                              file=self.path, key="width")


def load_gains(path: str | Path) -> GroupGains:
    """Read a HEBI ``<group_gains>`` XML file; every problem is a :class:`ConfigError`.

    The error's ``key`` is the element path (``position/kp``) and its message starts with
    ``line N`` taken from lxml's ``sourceline``.
    """
    # a regular file within ReaderLimits.max_file_bytes: no /dev/zero, FIFO or over-long name
    data = read_regular_file(path, what="gains file", error=ConfigError)
    path = Path(path)
    try:
        root = etree.fromstring(data, _PARSER, base_url=str(path))
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno is not None else "?"
        raise ConfigError(f"line {line}: malformed XML: {exc.msg}", file=path) from None
    return _parse_root(root, path)


def _parse_root(root: etree._Element, path: Path) -> GroupGains:
    """Walk the tree, collecting each field's values, then settle the common width."""
    if root.tag != "group_gains":
        raise ConfigError(f"line {root.sourceline}: root element is <{root.tag}>, expected <group_gains>",
                          file=path, key=str(root.tag))
    raw: dict[str, tuple[list[float], int]] = {}  # "position/kp" -> (values, line)
    for child in _elements(root, path, ""):
        if child.tag == "control_strategy":
            raw["control_strategy"] = (_numbers(child, path, "control_strategy"), child.sourceline)
        elif child.tag in PID_BLOCKS:
            for leaf in _elements(child, path, child.tag + "/"):
                key = f"{child.tag}/{leaf.tag}"
                if leaf.tag not in PID_FIELDS:
                    raise ConfigError(f"line {leaf.sourceline}: unknown gain <{leaf.tag}> "
                                      f"(expected one of {', '.join(PID_FIELDS)})", file=path, key=key)
                if key in raw:
                    raise ConfigError(f"line {leaf.sourceline}: duplicate <{leaf.tag}> in <{child.tag}>",
                                      file=path, key=key)
                raw[key] = (_numbers(leaf, path, key), leaf.sourceline)
        else:
            raise ConfigError(f"line {child.sourceline}: unknown element <{child.tag}> (expected "
                              f"control_strategy, {', '.join(PID_BLOCKS)}; safety parameters such as "
                              "M-stop or position-limit strategy belong in a <group_safety> file)",
                              file=path, key=str(child.tag))
    if not raw:
        raise ConfigError(f"line {root.sourceline}: <group_gains> holds no gains", file=path)
    width = _common_width(raw, path)

    control_strategy = None
    if "control_strategy" in raw:
        values, line = raw["control_strategy"]
        control_strategy = tuple(_strategy(v, line, path) for v in values)
    blocks = {}
    for block in PID_BLOCKS:
        arrays = {}
        for name in PID_FIELDS:
            values, line = raw.get(f"{block}/{name}", ([math.nan] * width, 0))
            if name == "d_on_error" and line and any(v not in (0.0, 1.0) for v in values):
                raise ConfigError(f"line {line}: d_on_error must be 0 or 1, got {values}",
                                  file=path, key=f"{block}/{name}")
            arrays[name] = _frozen(np.array(values, dtype=np.float64))
        blocks[block] = PidGains(**arrays)
    return GroupGains(path, width, control_strategy, **blocks)


def _elements(parent: etree._Element, path: Path, prefix: str) -> list[etree._Element]:
    """Child elements, refusing entity references (never expanded) and stray text."""
    children = []
    for child in parent:
        if not isinstance(child.tag, str):  # an unexpanded entity reference
            raise ConfigError(f"line {child.sourceline}: entity references are not allowed",
                              file=path, key=prefix.rstrip("/") or None)
        children.append(child)
        if child.tail and child.tail.strip():
            raise ConfigError(f"line {child.sourceline}: stray text {child.tail.strip()!r}",
                              file=path, key=prefix + str(child.tag))
    if parent.text and parent.text.strip():
        raise ConfigError(f"line {parent.sourceline}: stray text {parent.text.strip()!r}",
                          file=path, key=prefix.rstrip("/") or None)
    return children


def _numbers(element: etree._Element, path: Path, key: str) -> list[float]:
    """Whitespace-separated floats of a leaf element (``inf``/``nan`` allowed, like hebi)."""
    if any(not isinstance(child.tag, str) for child in element):
        raise ConfigError(f"line {element.sourceline}: entity references are not allowed",
                          file=path, key=key)
    if len(element):
        raise ConfigError(f"line {element.sourceline}: <{element.tag}> must hold numbers, not elements",
                          file=path, key=key)
    tokens = (element.text or "").split()
    if not tokens:
        raise ConfigError(f"line {element.sourceline}: <{element.tag}> is empty", file=path, key=key)
    values = []
    for i, token in enumerate(tokens):
        try:
            values.append(float(token))
        except ValueError:
            raise ConfigError(f"line {element.sourceline}: value {i} of <{element.tag}> is not a "
                              f"number: {token!r}", file=path, key=key) from None
    return values


def _common_width(raw: dict[str, tuple[list[float], int]], path: Path) -> int:
    """The one value count all elements share; hebi refuses files that mix counts."""
    first_key, (first_values, _) = next(iter(raw.items()))
    for key, (values, line) in raw.items():
        if len(values) != len(first_values):
            raise ConfigError(f"line {line}: {len(values)} values, but {first_key} has "
                              f"{len(first_values)}; every gain needs one value per module",
                              file=path, key=key)
    return len(first_values)


def _strategy(value: float, line: int, path: Path) -> int:
    if value not in CONTROL_STRATEGIES:
        raise ConfigError(f"line {line}: control strategy {value:g} is not one of "
                          f"{sorted(CONTROL_STRATEGIES)}", file=path, key="control_strategy")
    return int(value)


def _frozen(array: NDArray[np.float64]) -> NDArray[np.float64]:
    array = np.array(array, dtype=np.float64)
    array.setflags(write=False)
    return array


__all__ = ["CONTROL_STRATEGIES", "PID_BLOCKS", "PID_FIELDS", "GroupGains", "PidGains", "load_gains"]
