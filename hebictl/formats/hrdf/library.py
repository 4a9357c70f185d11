"""Physical data of HEBI's built-in HRDF element types (actuators, links, brackets, end effectors).

Why a table and not hebi-py: a robot model must know each module's mass, centre of mass, inertia,
interface frames and limits without talking to libhebi. The numbers live in
``hebictl/formats/hrdf/library/*.yaml``, generated from hebi-py one-element models by
``tools/gen_library.py`` (which also documents the origin of every inertia tensor); this module
only loads them (once, lazily) and turns them into :class:`ElementSpec` values.

Links are parametric in extension and twist; their specs are computed from the model stored in
``links.yaml`` (see its ``model:`` text), which reproduces hebi-py to float64 round-off.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from hebictl.errors import ModelError

KINDS = ("actuator", "link", "bracket", "end-effector")
LINK_INTERFACES = ("RightAngle", "Inline")

_FILES = {"actuator": "actuators.yaml", "link": "links.yaml", "bracket": "brackets.yaml",
          "end-effector": "end_effectors.yaml"}


@dataclass(frozen=True, eq=False)
class ElementSpec:
    """Library data of one built-in element; all arrays are read-only (identity equality:
    arrays do not compare with ``==``).

    ``com`` and ``outputs`` are 4x4 homogeneous transforms in the element's input frame [m].
    ``inertia`` [kg m^2] is about the COM, in the COM frame's axes. For actuators ``outputs[0]`` is
    the output frame at q = 0 and the output at q is ``outputs[0] @ Rot(joint_axis, q)``
    (``joint_axis`` is expressed in that output frame); ``max_speed`` [rad/s] and ``max_effort``
    [N m] are hebi's per-type limits. For end effectors ``outputs[0]`` is the end-effector frame.
    """

    kind: str
    type: str
    mass: float
    com: NDArray[np.float64]
    inertia: NDArray[np.float64]
    outputs: tuple[NDArray[np.float64], ...]
    joint_axis: NDArray[np.float64] | None = None
    max_speed: float | None = None
    max_effort: float | None = None


def _frozen(a: Any) -> NDArray[np.float64]:
    """A read-only float64 copy, so cached specs cannot be altered by callers."""
    arr = np.array(a, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _transform(entry: dict) -> NDArray[np.float64]:
    """4x4 transform of a YAML frame entry ``{translation, rotation}``."""
    t = np.eye(4)
    t[:3, :3] = entry["rotation"]
    t[:3, 3] = entry["translation"]
    return t


@functools.cache
def _table(kind: str) -> dict[str, dict]:
    """The ``elements`` mapping of one family file (read on first use)."""
    folder = resources.files("hebictl.formats.hrdf").joinpath("library")
    text = folder.joinpath(_FILES[kind]).read_text(encoding="utf-8")
    # libyaml's parser when PyYAML has it (its wheels do): the four tables take ~0.3 s with the pure
    # Python parser, a large part of a command's start-up; same SafeConstructor, same values
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["elements"]


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ModelError(f"unknown element kind {kind!r} (expected one of {', '.join(KINDS)})")


def known_types(kind: str) -> tuple[str, ...]:
    """Canonical type names of a kind ("actuator", "link", "bracket", "end-effector"), in HRDF
    spec order; matching them case-insensitively is the parser's job."""
    _check_kind(kind)
    return tuple(_table(kind))


def _entry(kind: str, type: str) -> dict:
    _check_kind(kind)
    table = _table(kind)
    if type not in table:
        raise ModelError(f"unknown {kind} type {type!r} (known: {', '.join(table)})")
    return table[type]


@functools.cache
def _constant_spec(kind: str, type: str) -> ElementSpec:
    """Spec of a non-parametric element, built once per type."""
    e = _entry(kind, type)
    axis = e.get("joint_axis")
    return ElementSpec(
        kind=kind, type=type, mass=float(e["mass"]), com=_frozen(_transform(e["com"])),
        inertia=_frozen(e["inertia"]), outputs=tuple(_frozen(_transform(o)) for o in e["outputs"]),
        joint_axis=None if axis is None else _frozen(axis),
        max_speed=e.get("max_speed"), max_effort=e.get("max_effort"))


@dataclass(frozen=True)
class _LinkModel:
    """Parsed links.yaml entry of one link type (see the file's ``model:`` text)."""

    mass_per_meter: float
    mass0: dict[tuple[str, str], float]
    input_frame: dict[str, NDArray[np.float64]]
    com_offset: dict[str, NDArray[np.float64]]
    com_per_meter: dict[str, NDArray[np.float64]]
    tube_axis: dict[str, NDArray[np.float64]]
    output_frame: dict[str, NDArray[np.float64]]
    tube_radius: float
    axial_per_mass_r2: float
    transverse_per_mass_e2: float
    transverse_per_mass_r2: float


@functools.cache
def _link_model(type: str) -> _LinkModel:
    e = _entry("link", type)
    inputs, im = e["inputs"], e["inertia_model"]
    return _LinkModel(
        mass_per_meter=float(e["mass_per_meter"]),
        mass0={(i, o): float(m) for i, row in e["mass_at_zero_extension"].items() for o, m in row.items()},
        input_frame={i: _transform(v["frame"]) for i, v in inputs.items()},
        com_offset={i: np.array(v["com_offset"], dtype=float) for i, v in inputs.items()},
        com_per_meter={i: np.array(v["com_per_meter"], dtype=float) for i, v in inputs.items()},
        tube_axis={i: np.array(v["tube_axis"], dtype=float) for i, v in inputs.items()},
        output_frame={o: _transform(v) for o, v in e["outputs"].items()},
        tube_radius=float(im["tube_radius"]), axial_per_mass_r2=float(im["axial_per_mass_r2"]),
        transverse_per_mass_e2=float(im["transverse_per_mass_e2"]),
        transverse_per_mass_r2=float(im["transverse_per_mass_r2"]))


@functools.lru_cache(maxsize=1024)
def _link_spec(type: str, extension: float, twist: float, input: str, output: str) -> ElementSpec:
    """Spec of a link: output = A[input] . Tz(extension) . Rz(twist) . B[output] (links.yaml)."""
    m = _link_model(type)
    for side, value in (("input", input), ("output", output)):
        if value not in LINK_INTERFACES:
            raise ModelError(f"link {side} type {value!r} is not one of {', '.join(LINK_INTERFACES)}")
    if (input, output) not in m.mass0:
        raise ModelError(f"{type} link cannot have {input} input with {output} output "
                         f"(hebi: cannot have inline output for this link type)")
    c, s = math.cos(twist), math.sin(twist)
    tube = np.array([[c, -s, 0.0, 0.0], [s, c, 0.0, 0.0], [0.0, 0.0, 1.0, extension], [0.0, 0.0, 0.0, 1.0]])
    out = m.input_frame[input] @ tube @ m.output_frame[output]
    com = np.eye(4)
    com[:3, 3] = m.com_offset[input] + extension * m.com_per_meter[input]
    mass = m.mass0[(input, output)] + m.mass_per_meter * extension
    r2 = m.tube_radius * m.tube_radius
    axial = mass * m.axial_per_mass_r2 * r2
    transverse = mass * (m.transverse_per_mass_e2 * extension * extension + m.transverse_per_mass_r2 * r2)
    u = m.tube_axis[input]
    inertia = transverse * np.eye(3) + (axial - transverse) * np.outer(u, u)
    return ElementSpec(kind="link", type=type, mass=mass, com=_frozen(com), inertia=_frozen(inertia),
                       outputs=(_frozen(out),))


def element_spec(kind: str, type: str, *, extension: float | None = None, twist: float | None = None,
                 input: str = "RightAngle", output: str = "RightAngle") -> ElementSpec:
    """Library data of a built-in element.

    ``kind`` is "actuator", "link", "bracket" or "end-effector" and ``type`` its canonical HRDF
    spelling (e.g. "X8-9", "R25-R8", "X5HeavyLeftInside", "X5Parallel"). Links need ``extension``
    [m] and ``twist`` [rad] and take ``input``/``output`` interface types ("RightAngle" or
    "Inline"); other kinds take none of them. Raises :class:`~hebictl.errors.ModelError` for an
    unknown kind or type, missing or superfluous link parameters, and interface combinations
    hebi rejects (an Inline output on an R25-R8 link).
    """
    _check_kind(kind)
    if kind != "link":
        if extension is not None or twist is not None:
            raise ModelError(f"{kind} {type!r} takes no extension/twist (only links do)")
        return _constant_spec(kind, type)
    _entry(kind, type)
    if extension is None or twist is None:
        raise ModelError(f"link {type!r} needs both extension [m] and twist [rad]")
    extension, twist = float(extension), float(twist)
    if not (math.isfinite(extension) and math.isfinite(twist)):
        raise ModelError(f"link {type!r}: extension and twist must be finite (got {extension}, {twist})")
    return _link_spec(type, extension, twist, input, output)
