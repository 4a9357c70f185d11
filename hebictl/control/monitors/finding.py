"""What a monitor reports: one :class:`Finding` per detected problem, and the reaction it asks for.

Why a value and not an action: monitors only measure; the Arm decides what to do with a finding
(:meth:`hebictl.control.arm.Arm.react`), so the arm's modes stay in one place and a monitor can be
tested on recorded feedback without an arm that moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hebictl.control.safety import EventKind
from hebictl.control.settings import REACTIONS

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """A monitor's report: ``kind`` (the event recorded), ``detail`` (a line for the log, naming
    the measured figure and its bound), ``reaction`` (``event`` = record only, ``hold`` = brake
    then hold, ``stop`` = latched stop holding, ``damp`` = latched stop damping) and ``values``:
    the measured figures (for tests, recordings and the teleop status)."""

    kind: EventKind
    detail: str
    reaction: str = "event"
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.reaction not in REACTIONS:
            raise ValueError(f"reaction must be one of {REACTIONS}, got {self.reaction!r}")
