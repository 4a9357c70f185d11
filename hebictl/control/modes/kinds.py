"""The names of the arm's modes (what ``arm.mode`` reports; the values appear in logs and on MQTT)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Mode"]


class Mode(StrEnum):
    """What the arm commands this cycle."""

    FOLLOW = "follow"      # the goal's trajectory
    JOG = "jog"            # a streamed joint velocity or Cartesian twist, integrated (teleop, Mobile IO)
    BRAKE = "brake"        # the brake ramp from the measured velocity to standstill
    HOLD = "hold"          # a position at standstill, zero velocity, gravity compensation
    DAMP = "damp"          # gravity compensation + joint damping, no position target
    GRAVCOMP = "gravcomp"  # idle hand-guiding: no position or velocity, plugin efforts only
    RELEASE = "release"    # nothing commanded
