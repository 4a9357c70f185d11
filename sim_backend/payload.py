"""A payload rigidly held by the end effector, added to a RobotModel as one more body.

Why a body and not an effort offset: a payload's gravity torque depends on the configuration;
as a body of the model, gravity compensation, inverse dynamics, MJCF export and the simulated
physics all see the same mass at the same place. hebictl's RobotModel has no way to add mass to
a built model, so :func:`with_payload` rebuilds it through ModelBuilder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl.errors import ConfigError, ModelError
from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import Inertia, Joint

__all__ = ["PAYLOAD_KEY", "Payload", "strip_payload", "with_payload"]

#: body metadata key marking payload bodies (so the simulator can swap the payload it simulates)
PAYLOAD_KEY = "sim_payload"


@dataclass(frozen=True)
class Payload:
    """``mass`` [kg] at ``com`` [m, end-effector frame], with rotational ``inertia`` about the com
    [kg·m², end-effector axes] (default: a point mass), held by end effector ``index``."""

    mass: float
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    inertia: tuple[tuple[float, float, float], ...] = ((0.0,) * 3,) * 3
    index: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mass) and self.mass >= 0.0):
            raise ModelError(f"payload mass must be finite and >= 0 kg, got {self.mass!r}")
        Inertia(self.mass, self.com, self.inertia)  # validates com and inertia
        object.__setattr__(self, "com", tuple(float(c) for c in self.com))
        object.__setattr__(self, "inertia", tuple(tuple(float(v) for v in row) for row in np.asarray(self.inertia)))

    @classmethod
    def from_mapping(cls, value: Any, *, file: Path | None = None, key: str = "payload") -> Payload:
        """Read ``{mass: 0.5, com: [0, 0, 0.05], inertia: [[...]] | [ixx, iyy, izz], index: 0}``."""
        if isinstance(value, Payload):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(f"must be a mapping with mass [kg] and com [m], got {value!r}", file=file, key=key)
        unknown = sorted(set(value) - {"mass", "com", "inertia", "index"})
        if unknown:
            raise ConfigError(f"unknown payload key(s) {', '.join(map(str, unknown))}; expected mass, com, "
                              "inertia, index", file=file, key=f"{key}.{unknown[0]}")
        if "mass" not in value:
            raise ConfigError("payload needs a mass [kg]", file=file, key=f"{key}.mass")
        try:
            mass = float(value["mass"])
            com = np.asarray(value.get("com", (0.0, 0.0, 0.0)), dtype=np.float64).reshape(3)
            inertia = np.asarray(value.get("inertia", np.zeros((3, 3))), dtype=np.float64)
            if inertia.shape == (3,):
                inertia = np.diag(inertia)
            index = value.get("index", 0)
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise ValueError(f"index must be an integer >= 0, got {index!r}")
            return cls(mass=mass, com=tuple(com), inertia=tuple(map(tuple, inertia.reshape(3, 3))), index=index)
        except (TypeError, ValueError, ModelError) as exc:
            raise ConfigError(f"bad payload {dict(value)!r}: {exc}", file=file, key=key) from exc


def _rebuild(model: RobotModel, keep: list[int]) -> ModelBuilder:
    """A builder holding ``model``'s bodies ``keep`` (parents first) and the frames on them."""
    builder = ModelBuilder(model.name, source=model.source, format=model.format)
    new_index = {-1: -1}
    for i in keep:
        b = model.bodies[i]
        new_index[i] = builder.add_body(b.name, new_index[b.parent], b.placement, b.joint, b.inertia, b.metadata)
    for f in model.frames:
        if f.body in new_index:
            builder.add_frame(f.kind, new_index[f.body], f.offset, f.name)
    return builder


def with_payload(model: RobotModel, mass: float | Payload, com: ArrayLike = (0.0, 0.0, 0.0),
                 inertia: ArrayLike | None = None, *, index: int = 0) -> RobotModel:
    """A copy of ``model`` with ``mass`` [kg] held at ``com`` [m] in end-effector frame ``index``.

    ``inertia`` [kg·m²] is about the payload's com in end-effector axes (default: point mass).
    The payload is a fixed body named ``payload`` (made unique) on the end effector's body,
    marked with :data:`PAYLOAD_KEY` in its metadata. Joints, coordinates and frames are unchanged.
    """
    p = mass if isinstance(mass, Payload) else Payload(
        float(mass), tuple(np.asarray(com, dtype=np.float64).reshape(3)),
        tuple(map(tuple, np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=np.float64))),
        index)
    frames = [f for f in model.frames if f.kind == "end_effector"]
    if p.index >= len(frames):
        raise ModelError(f"model {model.name!r} has {len(frames)} end effector(s); no end effector {p.index} "
                         "to hold the payload")
    frame = frames[p.index]
    if frame.body < 0:
        raise ModelError("the end effector is on the fixed base; a payload there never loads a joint")
    builder = _rebuild(model, list(range(len(model.bodies))))
    names = {b.name for b in model.bodies}
    name, k = "payload", 2
    while name in names:
        name, k = f"payload_{k}", k + 1
    builder.add_body(name, frame.body, frame.offset, Joint.fixed(), Inertia(p.mass, p.com, p.inertia),
                     {PAYLOAD_KEY: {"mass": p.mass, "com": list(p.com), "index": p.index}})
    return builder.build(base=model.base, gravity=model.gravity, metadata=model.metadata)


def strip_payload(model: RobotModel) -> RobotModel:
    """``model`` without the bodies :func:`with_payload` added (the same object if it has none)."""
    if not any(PAYLOAD_KEY in b.metadata for b in model.bodies):
        return model
    keep = [i for i, b in enumerate(model.bodies) if PAYLOAD_KEY not in b.metadata]
    kept = set(keep)
    if any(model.bodies[i].parent not in kept and model.bodies[i].parent >= 0 for i in keep):
        raise ModelError("a payload body has bodies attached to it; cannot remove it")
    return _rebuild(model, keep).build(base=model.base, gravity=model.gravity, metadata=model.metadata)
