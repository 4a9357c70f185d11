"""The shape every execution monitor has, and what the suite hands each of them per cycle.

A monitor owns one :class:`~hebictl.control.safety.EventKind`, its thresholds (from
``user_data.safety.monitors.<kind>``, :data:`hebictl.control.settings.MONITOR_DEFAULTS`) and its
reaction; it reports at most one :class:`~hebictl.control.monitors.finding.Finding` per cycle and
once per episode (a fault that persists is one event, not one per cycle).

What a monitor may read of the arm (the Arm's public surface, kept by any Arm): ``model``,
``limits``, ``state``, ``stop_behaviour``, ``pending_command`` (before ``update`` computes this
cycle's: what was sent last), ``last_feedback`` (the previous sample), ``plugins``, ``backend``,
``payload``.
"""

from __future__ import annotations

from typing import Any

from hebictl.control.monitors.finding import Finding
from hebictl.control.safety import EventKind
from hebictl.hardware.base import Command, Feedback

__all__ = ["Monitor"]


class Monitor:
    """Base of the monitors: ``after_read`` runs after the arm's feedback checks, ``after_send``
    after the command was written; both return a Finding or None."""

    kind: EventKind

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.reaction: str = settings["reaction"]

    def after_read(self, arm: Any, fb: Feedback, now: float, dt: float) -> Finding | None:
        """Check the fresh sample ``fb`` (``dt`` [s]: since the previous fresh sample)."""
        return None

    def after_send(self, arm: Any, ok: bool, cmd: Command) -> Finding | None:
        """Check the write of ``cmd`` (``ok``: the backend took it)."""
        return None

    def finding(self, detail: str, reaction: str | None = None, **values: Any) -> Finding:
        return Finding(self.kind, detail, self.reaction if reaction is None else reaction, values)
