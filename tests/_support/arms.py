"""The 6-DoF kit's :class:`Arm` as the teleop, recording and CLI tests start it.

Real parts: the bundled config through ``Arm.from_config`` on the mock backend (or any backend
the caller names), with a wall clock by default because these arms loop in their own thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hebictl.control.arm import Arm
from hebictl.hardware.clock import MonotonicClock
from tests._support.paths import KIT6_CONFIG, KIT6_HOME


def kit6_arm(backend: str = "mock", *, config: Path = KIT6_CONFIG, clock: Any = None,
             start: Sequence[float] | None = KIT6_HOME, **options: Any) -> Arm:
    """An Arm of ``config`` (default the 6-DoF kit) on ``backend``, starting at ``start`` (its home).

    ``clock`` defaults to a :class:`MonotonicClock`; ``start=None`` leaves the backend's own
    start pose; other ``options`` go to ``Arm.from_config``."""
    if start is not None:
        options["initial_position"] = list(start)
    return Arm.from_config(config, backend=backend, clock=clock or MonotonicClock(), **options)
