"""HRDF spec tables (versions, enums, attributes, interfaces) and the types a parsed document is made of.

The tables follow hebi-hrdf's FORMAT.md and CHANGELOG.md: each enum value and attribute with the
first version that has it, so the parser can name the version a file would need. The frozen
dataclasses are the parser's output and the assembler's input (:mod:`hebictl.formats.hrdf.assemble`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hebictl._typing import FloatArray

if TYPE_CHECKING:
    pass


#: Supported values of ``<robot version=...>``, oldest first; a missing version means 1.0.0.
VERSIONS: Final[tuple[str, ...]] = ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0")
#: Versions newer than :data:`VERSIONS` that hebi-py (2.16.1) loads. Measured, not guessed: hebi-py
#: accepts exactly the strings "1.0.0" to "1.7.0" (minor releases, patch 0) and rejects every other
#: one (1.6.1, 1.7.1, 1.8.0, 2.0.0, 9.0.0, "1.7", " 1.7.0", "01.7.0", ...); see
#: tests/formats/hrdf/test_vs_hebi.py::test_version_rule_matches_hebi. Read by the newest rules we know.
HEBI_PY_NEWER_VERSIONS: Final[tuple[str, ...]] = ("1.7.0",)

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

ENUMS: dict[tuple[str, str], dict[str, str]] = {
    ("actuator", "type"): ACTUATOR_TYPES, ("link", "type"): LINK_TYPES, ("bracket", "type"): BRACKET_TYPES,
    ("end-effector", "type"): END_EFFECTOR_TYPES, ("link", "input"): LINK_INTERFACE_TYPES,
    ("link", "output"): LINK_INTERFACE_TYPES, ("joint", "axis"): JOINT_AXES,
}

ROBOT_ELEMENTS: Final[tuple[str, ...]] = ("actuator", "link", "bracket", "rigid-body", "joint", "end-effector",
                                          "include")
ELEMENT_VERSION = {"actuator": "1.0.0", "link": "1.0.0", "bracket": "1.0.0", "rigid-body": "1.0.0",
                    "joint": "1.0.0", "end-effector": "1.2.0", "include": "1.3.0", "output": "1.3.0"}

# attribute -> (value kind, first version)
_INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
INERTIA_INDEX = {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}
_OVERRIDES = {"mass": ("formula", "1.1.0"), "mass_offset": ("formula", "1.1.0"), "com_rot": ("rotation", "1.1.0"),
              "com_trans": ("translation", "1.1.0"), "com_trans_offset": ("translation", "1.1.0"),
              **{k: ("formula", "1.1.0") for k in _INERTIA_KEYS}}
_TAG = {"tag": ("string", "1.4.0")}
ATTRIBUTES: dict[str, dict[str, tuple[str, str]]] = {
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
REQUIRED = {"actuator": ("type",), "link": ("type", "extension", "twist"), "bracket": ("type",),
             "rigid-body": ("mass",), "joint": ("axis",), "include": ("path",)}
WITH_OUTPUTS = ("rigid-body", "bracket")
URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def version_tuple(version: str) -> tuple[int, ...]:
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
