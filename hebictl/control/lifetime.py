"""How old the arm's command is against the modules' command lifetime: :class:`CommandLifetime`.

Why: a HEBI module drops a command older than its lifetime (0.25 s by default) and goes limp. So
the Arm must neither let the modules' command run out while the command is still valid (a goal's
path check inside a cycle re-sends it: the keep-alive) nor send one computed before a stall (it was
computed where the arm was before the modules went limp, and drove the fallen arm back: r6 237 mm
at 4.8x rated). Both rules need the same three times, kept here: when the pending command was
computed, when the command the modules hold was computed, and when it was last re-sent.
"""

from __future__ import annotations

import math

__all__ = ["KEEPALIVE_PERIOD", "CommandLifetime"]

#: [s] a goal check longer than this re-sends the pending command (:meth:`CommandLifetime.keepalive_due`);
#: well inside the modules' command lifetime (HEBI's default 0.25 s)
KEEPALIVE_PERIOD = 0.05


class CommandLifetime:
    """The ages of the pending and the delivered command against ``lifetime`` [s] (<= 0: none)."""

    __slots__ = ("computed_at", "keepalive_at", "last_command_time", "lifetime")

    def __init__(self, lifetime: float) -> None:
        #: [s] the modules' command lifetime: no command older than this is sent (inf: none)
        self.lifetime = lifetime if lifetime > 0.0 else math.inf
        #: [s, arm clock] when the last command the modules got was computed (the read of the cycle whose
        #: send delivered it: a stall between update() and send() counts, a keep-alive of a long goal check
        #: does not); None until the first: modules never commanded have no command lifetime to run out, so
        #: the checks before a run's first cycle (feedback, goal admission) are not a control gap
        self.last_command_time: float | None = None
        self.computed_at: float | None = None  # when update() computed the pending command
        self.keepalive_at = -math.inf  # when the keep-alive last re-sent it

    def computed(self, now: float) -> None:
        """The cycle at ``now`` computes the pending command: it is as old as this."""
        self.computed_at = now

    def sendable(self, now: float) -> float | None:
        """When the pending command was computed (``now`` if it never was), None if that is longer
        than the lifetime ago at ``now`` (a stall between computing and sending: not sent)."""
        computed = self.computed_at if self.computed_at is not None else now
        return None if now - computed > self.lifetime else computed

    def keepalive_due(self, now: float) -> bool:
        """Re-send the pending command at ``now``: something was commanded (a lifetime to keep), the
        command is younger than the lifetime, and nothing was sent for :data:`KEEPALIVE_PERIOD`."""
        computed = self.computed_at
        return not (self.last_command_time is None or computed is None or now - computed > self.lifetime
                    or now - max(self.last_command_time, self.keepalive_at) < KEEPALIVE_PERIOD)
