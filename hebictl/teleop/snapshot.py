"""What the arm thread hands the bridge: an immutable :class:`ArmSnapshot` per cycle, with the
records it carries (:class:`ErrorRecord`, :class:`GripperState`), and the small protocol a
gripper meets to be driven by ``cmd/gripper`` (:class:`GripperLike`).

These are plain values with no behaviour, in a module of their own so that the payload builders
(:mod:`~hebictl.teleop.messages`) and the arm thread (:mod:`~hebictl.teleop.runner`) both depend
on them instead of on each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from hebictl._typing import FloatArray
from hebictl.control.loop import LoopStats
from hebictl.control.realtime import RealtimeGrant
from hebictl.control.safety import SafetyEvent


@dataclass(frozen=True)
class ErrorRecord:
    """Last thing that went wrong: a rejected command or a safety event; ``time`` is wall time [s]."""

    time: float
    reason: str
    detail: str


@dataclass(frozen=True)
class GripperState:
    """The gripper as the status reports it.

    ``position`` is the last accepted opening command (0 closed .. 1 open), ``action`` the verb it
    came from (``open``/``close``/None), ``seq``/``client``/``time`` (wall time [s]) who sent it
    and when. ``effort`` [N·m] is what the spool is commanded (hebi.arm.Gripper's blend of the
    config's open and close efforts); ``measured_position`` [rad] and ``measured_effort`` [N·m]
    are the spool's feedback, ``measured_opening`` (0..1) where the backend knows the spool's
    travel (the mock and sim grippers), else None. ``hardware`` is False when the config has no
    gripper (the command is then only recorded)."""

    position: float
    action: str | None
    seq: int
    client: str
    time: float | None
    hardware: bool = False
    effort: float | None = None
    measured_position: float | None = None
    measured_effort: float | None = None
    measured_opening: float | None = None


@dataclass(frozen=True)
class ArmSnapshot:
    """Everything the bridge publishes, copied out of the arm thread once per cycle."""

    cycle: int
    time: float              # s, arm clock
    wall_time: float         # s since epoch
    state: str
    mode: str
    estop: bool
    jogging: bool
    braking: bool
    position: FloatArray     # rad, feedback
    velocity: FloatArray     # rad/s, feedback
    effort: FloatArray       # N·m, feedback
    command_position: FloatArray
    command_velocity: FloatArray
    goal_progress: float
    at_goal: bool
    loop: LoopStats | None
    last_error: ErrorRecord | None
    last_event: SafetyEvent | None
    gripper: GripperState | None
    m_stopped: bool = False          # a module's M-stop input is pressed (hebi.arm.Arm.m_stopped)
    stop_behaviour: str | None = None  # hold / damp / release while the arm is stopped, else None
    goal_status: str = ""            # why the arm is or is not at its goal (Arm.goal_status)
    payload_mass_kg: float | None = None  # the model-mismatch monitor's end-effector payload estimate at rest
    payload_extra_kg: float | None = None  # the part of it the model does not know
    commands_delivered: bool = True  # False while the modules are not taking the commands (command_lost)
    #: what the arm commands (``Arm.mode``: follow, jog, brake, hold, damp, gravcomp, release); ``mode`` is
    #: the operator's teleop mode (position, jog, gravcomp, idle), a different thing
    arm_mode: str = "hold"
    realtime: RealtimeGrant | None = None  # what the arm thread was granted (SCHED_FIFO, locked memory, CPU)
    app: dict[str, Any] | None = None  # the Mobile IO app of ``--app`` (mode ``app``): name, state, LED, input counts
    fleet: str | None = None  # the fleet lease's state (no_lease/ready/active/estopped), None without a fleet
    #: the arm group of ``hebictl teleop ARMS.multi.yaml`` (:mod:`hebictl.teleop.group`): its arms, and the
    #: arm whose fault, stop or e-stop holds them all; None for an arm served alone
    group: dict[str, Any] | None = None


class GripperStatus(Protocol):
    """What the arm thread reads from a gripper each cycle (:class:`hebictl.control.gripper.GripperStatus`)."""

    @property
    def opening(self) -> float: ...

    @property
    def effort(self) -> float: ...

    @property
    def measured_position(self) -> float: ...

    @property
    def measured_effort(self) -> float: ...

    @property
    def measured_opening(self) -> float: ...


class GripperLike(Protocol):
    """A gripper ``cmd/gripper`` can drive: 0 closed .. 1 open."""

    def set_opening(self, opening: float) -> None: ...

    def status(self) -> GripperStatus: ...


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, or None when missing or not finite (JSON has no NaN)."""
    return None if x is None or not math.isfinite(x) else float(x)
