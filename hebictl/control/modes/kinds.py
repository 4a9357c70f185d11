"""The names of the arm's modes (what ``arm.mode`` reports; the values appear in logs and on MQTT),
what changes them (:class:`Trigger`), how a hold or brake re-anchors (:class:`Resync`) and the idle
behaviour (:class:`IdleBehaviour`). Plain enums, kept here so that the modes' laws can name them
without importing the supervisor (which imports the modes); :mod:`hebictl.control.supervisor`
re-exports them."""

from __future__ import annotations

from enum import IntEnum, StrEnum

from hebictl.errors import ConfigError

__all__ = ["IdleBehaviour", "Mode", "Resync", "Trigger"]


class Mode(StrEnum):
    """What the arm commands this cycle."""

    FOLLOW = "follow"      # the goal's trajectory
    JOG = "jog"            # a streamed joint velocity or Cartesian twist, integrated (teleop, Mobile IO)
    BRAKE = "brake"        # the brake ramp from the measured velocity to standstill
    HOLD = "hold"          # a position at standstill, zero velocity, gravity compensation
    DAMP = "damp"          # gravity compensation + joint damping, no position target
    GRAVCOMP = "gravcomp"  # idle hand-guiding: no position or velocity, plugin efforts only
    RELEASE = "release"    # nothing commanded


class IdleBehaviour(StrEnum):
    """What the arm commands with no goal (the Arm's ``idle``; the strings are what configs and the
    public API always took)."""

    HOLD = "hold"          # hold the last position
    GRAVCOMP = "gravcomp"  # hand-guiding: no position or velocity, plugin efforts only

    @classmethod
    def parse(cls, value: IdleBehaviour | str) -> IdleBehaviour:
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(f"idle must be 'hold' or 'gravcomp', got {value!r}", key="idle") from None


class Resync(IntEnum):
    """How the next fresh sample re-anchors a hold or a brake (the modules were not following the
    command): ordered, the stronger one wins."""

    NONE = 0    # the modules follow the command
    JOINTS = 1  # a sample or a write was lost: joints off their command by more than STALE_RAD start there
    ALL = 2     # an M-stop: the modules ran their own strategy; every joint starts where it is


class Trigger(StrEnum):
    """Why the mode changes."""

    GOAL = "goal"          # set_goal() accepted a goal
    JOG = "jog"            # a jog started (Arm.start_jog: a dead-man sample from the operator)
    BRAKE = "brake"        # cancel_goal(), hold(), stop(hold), clear_fault() or a fault while moving
    HOLD_AT = "hold_at"    # hold a given or the measured position now (the arm is still, or it is not
    #                        the controller that moves it: M-stop pressed, a module's return)
    STILL = "still"        # the brake ramp ended: hold where the arm stopped
    DAMP = "damp"          # stop(damp), the arm still
    GRAVCOMP = "gravcomp"  # set_idle("gravcomp") while idle
    RELEASE = "release"    # stop(release), the arm still
