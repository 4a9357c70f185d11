"""HRDF assembly: a parsed :class:`~hebictl.formats.hrdf.spec.HrdfDocument` into a :class:`RobotModel`.

Second of the reader's two stages (the first is :mod:`hebictl.formats.hrdf.parse`): elements
become bodies, joints and frames through :class:`~hebictl.model.builder.ModelBuilder`, with the
physical data of built-in elements from :mod:`hebictl.formats.hrdf.library`. The model layout (frame
counts and order, joint names) matches hebi-py's; see the package docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import FormatError, ModelError
from hebictl.formats.hrdf.grammar import (
    HEBI_PI,
)
from hebictl.formats.hrdf.parse import parse_hrdf, parse_hrdf_string
from hebictl.formats.hrdf.spec import INERTIA_INDEX, HrdfDocument, HrdfElement

if TYPE_CHECKING:
    from hebictl.model.robot import RobotModel


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
    for key, (i, j) in INERTIA_INDEX.items():
        if key in v:
            inertia[i, j] = inertia[j, i] = v[key]
    if not mass >= 0.0:
        raise FormatError(f"{el.describe(False)} has mass {mass:g} kg; masses must not be negative", el.file, el.line)
    return _Dynamics(mass, com, inertia)


class _Assembler:
    """Walks a document depth-first, adding bodies and frames in hebi-py's element order."""

    def __init__(self, doc: HrdfDocument, name: str | None) -> None:
        from hebictl.model.builder import ModelBuilder

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
        from hebictl.formats.hrdf.library import element_spec
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
            ax, ay, az = _AXES[el.type[-1]]
            axis_kind, axis = el.type[-2], (sign * ax, sign * ay, sign * az)
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
