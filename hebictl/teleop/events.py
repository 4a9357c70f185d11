"""What the teleop runner decides, as a pure function: typed events in, a new state and actions out.

The arm thread (:class:`~hebictl.teleop.runner.ArmRunner`) used to keep its mode in eight flags
that the e-stop, link-loss, shutdown and jog code all read and wrote; the last fixes in this
area were about how they interact. Here the runner's whole teleop state is one frozen
:class:`RunnerState`, and every input is one frozen event handled by :func:`decide`, which only
looks the handler up in :data:`TABLE` (keyed by the state's :class:`Phase` and the event's type)
and returns ``(new_state, actions)``. Nothing here touches an arm, a clock, a queue or a thread,
so the rules are tested by calling :func:`decide` alone (tests/teleop/test_events.py); the runner
only drains its queues (e-stop, link loss and shutdown first), calls :func:`decide` and applies
the actions to the :class:`~hebictl.control.arm.Arm` in order.

Ordering rules kept from the runner's history: an e-stop engage or a link loss jumps the command
queue, so each carries its arrival number, and a command that *arrived* before it but is
handled after it must not undo it (a release queued before an engage is refused
``estop_engaged``; a command queued before a link loss is refused `stopped`).

Arm facts a decision needs (is the arm moving or braking, the newest jog sample's index) travel
inside the event as :class:`ArmFacts`, sampled by the runner when it builds the event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from hebictl.control.safety import EventKind
from hebictl.teleop.schema import (
    EstopCommand,
    GripperCommand,
    JointGoalCommand,
    ModeCommand,
    StopCommand,
    TeleopCommand,
)


class OperatorMode(StrEnum):
    """What motion the operator has asked for (``cmd/mode``; the values are the wire's). Not the
    arm's mode (:class:`hebictl.control.supervisor.Mode`: what the arm commands this cycle)."""

    IDLE = "idle"
    GRAVCOMP = "gravcomp"
    POSITION = "position"
    JOG = "jog"
    APP = "app"        # the Mobile IO app of ``hebictl teleop --app NAME`` drives the arm from cmd/input


#: the old name of :class:`OperatorMode`, kept for existing callers
Mode = OperatorMode


class Phase(StrEnum):
    """The runner's latch: whether commands can move the arm at all."""

    SERVING = "serving"              # commands are handled according to the mode
    ESTOPPED = "estopped"            # e-stop latched: only e-stop messages are handled
    SHUTTING_DOWN = "shutting_down"  # teleop is ending: braking, then holding; every command refused


@dataclass(frozen=True)
class RunnerState:
    """Everything the runner decides with. ``estop_arrival``/``link_lost_arrival``: arrival
    number of the latest e-stop engage / link loss (-1: none); ``jog_floor``: jog samples with a
    mailbox index up to this cannot (re)start a jog; ``close_kind``: the event kind of the
    shutdown stop; ``estop``: the operator's e-stop is engaged (phase ``estopped``, or a shutdown that
    began or went on with it engaged: a release is refused then, and the shutdown must not park)."""

    phase: Phase = Phase.SERVING
    mode: OperatorMode = OperatorMode.IDLE
    estop_arrival: int = -1
    link_lost_arrival: int = -1
    jog_floor: int = 0
    close_kind: str = EventKind.TELEOP_SHUTDOWN.value
    estop: bool = False


# ---------------------------------------------------------------------- events
@dataclass(frozen=True)
class ArmFacts:
    """What the arm was doing when the event was built: ``moving`` (a goal or jog under way),
    ``braking`` (a brake ramp running), ``jog_index`` (the newest jog sample's mailbox index)."""

    moving: bool = False
    braking: bool = False
    jog_index: int = 0


@dataclass(frozen=True)
class CommandArrived:
    """A queued command (everything but the jog stream), in arrival order."""

    topic: str
    command: TeleopCommand
    arrival: int
    arm: ArmFacts = ArmFacts()


@dataclass(frozen=True)
class EstopEngaged:
    """E-stop engage from an operator (``command``) or from the bridge (None); jumps the queue."""

    command: EstopCommand | None
    detail: str
    arrival: int
    jog_index: int = 0


@dataclass(frozen=True)
class LinkLost:
    """The broker connection is gone; jumps the queue."""

    detail: str
    arrival: int
    jog_index: int = 0


@dataclass(frozen=True)
class ShutdownBegun:
    """``hebictl teleop`` is ending (``kind``: teleop_shutdown, interrupt, terminate)."""

    kind: str
    jog_index: int = 0


@dataclass(frozen=True)
class ArmFault:
    """A safety event of the arm the runner did not cause (limits, feedback, watchdog, M-stop)."""

    kind: str
    detail: str


@dataclass(frozen=True)
class JogLetGo:
    """The running jog lost its dead-man (``teleop_jog_released``) or its stream expired
    (``teleop_jog_expired``)."""

    kind: str
    detail: str
    jog_index: int


@dataclass(frozen=True)
class JogSampleReady:
    """A fresh dead-man jog sample while no jog runs: may it start one?"""

    index: int
    detail: str


@dataclass(frozen=True)
class InternalError:
    """The arm thread's cycle raised (or was about to send a non-finite command)."""

    detail: str


@dataclass(frozen=True)
class FleetHold:
    """The fleet lease (:mod:`hebictl.teleop.lease`) holds the arm: ``reason`` ``lease_expired``
    (no fresh lease from an authorised station) or ``fleet_estop``; ``kind`` the arm's event kind."""

    reason: str
    kind: str
    detail: str
    jog_index: int = 0


Event = (CommandArrived | EstopEngaged | LinkLost | ShutdownBegun | ArmFault | JogLetGo | JogSampleReady
         | InternalError | FleetHold)


# ---------------------------------------------------------------------- actions
@dataclass(frozen=True)
class Answer:
    """Answer ``command`` on ``topic`` (``command`` None: nothing to answer)."""

    topic: str
    command: TeleopCommand | None
    accepted: bool
    reason: str = ""
    detail: str = ""


@dataclass(frozen=True)
class SafetyStop:
    """The arm's latched ``hold`` stop (brake, then hold); kept if one is already in force."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Brake:
    """Brake whatever moves and hold there, not latched (a new goal or jog resumes)."""

    kind: str
    detail: str


@dataclass(frozen=True)
class EnterIdle:
    """Arm side of mode ``idle``: halt a jog, hold (not gravcomp)."""


@dataclass(frozen=True)
class SetArmMode:
    """Arm side of a mode change from ``previous`` to ``target``; ``who`` words the events."""

    target: OperatorMode
    previous: OperatorMode
    who: str


@dataclass(frozen=True)
class StartGoal:
    """Plan and run a goal (the arm may still refuse it: the runner acks either way)."""

    topic: str
    command: JointGoalCommand


@dataclass(frozen=True)
class SetGripper:
    topic: str
    command: GripperCommand


@dataclass(frozen=True)
class StartJog:
    """Start the jog plugin from the commanded state; ``detail`` words leaving a hold."""

    detail: str


@dataclass(frozen=True)
class RecordError:
    """Set the status's ``last_error``."""

    reason: str
    detail: str


@dataclass(frozen=True)
class Recover:
    """After an internal error: hold a finite position, whatever it takes."""

    detail: str


Action = (Answer | SafetyStop | Brake | EnterIdle | SetArmMode | StartGoal | SetGripper | StartJog | RecordError
          | Recover)
Decision = tuple[RunnerState, tuple[Action, ...]]


# ---------------------------------------------------------------------- handlers
def _who(command: TeleopCommand | None) -> str:
    return "the bridge" if command is None else f"{command.envelope.client} (seq {command.envelope.seq})"


def _engage(state: RunnerState, ev: EstopEngaged) -> Decision:
    """Latch the e-stop: latched hold stop, mode idle, ack."""
    detail = ev.detail or f"e-stop engaged by {_who(ev.command)}"
    new = replace(state, phase=Phase.ESTOPPED, mode=OperatorMode.IDLE, estop=True,
                  estop_arrival=max(state.estop_arrival, ev.arrival), jog_floor=max(state.jog_floor, ev.jog_index))
    actions: list[Action] = [SafetyStop(EventKind.ESTOP.value, detail), EnterIdle(), RecordError("estop", detail)]
    if ev.command is not None:
        actions.append(Answer("estop", ev.command, True, "", "e-stop engaged (latched): braking, then holding"))
    return new, tuple(actions)


def _engage_while_closing(state: RunnerState, ev: EstopEngaged) -> Decision:
    """Shutting down: the shutdown stop is already the latched hold; answer the engage."""
    detail = ev.detail or f"e-stop engaged by {_who(ev.command)}"
    actions: list[Action] = [SafetyStop(EventKind.ESTOP.value, detail), RecordError("estop", detail)]
    if ev.command is not None:
        actions.append(Answer("estop", ev.command, True, "", "e-stop engaged (latched): braking, then holding"))
    return replace(state, mode=OperatorMode.IDLE, estop=True,
                   estop_arrival=max(state.estop_arrival, ev.arrival)), tuple(actions)


def _link_lost(state: RunnerState, ev: LinkLost) -> Decision:
    """Latched hold stop, mode idle; commands queued before the loss are refused `stopped`."""
    new = replace(state, mode=OperatorMode.IDLE, link_lost_arrival=ev.arrival,
                  jog_floor=max(state.jog_floor, ev.jog_index))
    return new, (SafetyStop(EventKind.TELEOP_LINK_LOST.value, ev.detail), EnterIdle(),
                 RecordError("link_lost", ev.detail))


def _link_lost_closing(state: RunnerState, ev: LinkLost) -> Decision:
    """Shutting down: already stopped; only reported."""
    return replace(state, mode=OperatorMode.IDLE, link_lost_arrival=ev.arrival), (RecordError("link_lost", ev.detail),)


def _shutdown(state: RunnerState, ev: ShutdownBegun) -> Decision:
    """Latched hold stop once; from now on every command is refused `shutting_down`."""
    new = replace(state, phase=Phase.SHUTTING_DOWN, close_kind=ev.kind, jog_floor=max(state.jog_floor, ev.jog_index))
    return new, (SafetyStop(ev.kind, "teleop shutting down: braking, then holding"),)


def _fleet_hold(state: RunnerState, ev: FleetHold) -> Decision:
    """Latched hold stop, mode idle, reported: a new lease and cmd/mode resume."""
    new = replace(state, mode=OperatorMode.IDLE, jog_floor=max(state.jog_floor, ev.jog_index))
    return new, (SafetyStop(ev.kind, ev.detail), EnterIdle(), RecordError(ev.reason, ev.detail))


def _fleet_hold_closing(state: RunnerState, ev: FleetHold) -> Decision:
    """Shutting down: already stopped; only reported."""
    return replace(state, mode=OperatorMode.IDLE), (RecordError(ev.reason, ev.detail),)


def _nothing(state: RunnerState, ev: Event) -> Decision:
    """Nothing to do."""
    return state, ()


def _command(state: RunnerState, ev: CommandArrived) -> Decision:
    """By the mode: goals only in `position`, mode, stop, gripper; sent before a link loss: refused `stopped`."""
    cmd = ev.command
    if isinstance(cmd, EstopCommand):
        if cmd.engaged:
            return _engage(state, EstopEngaged(cmd, "", ev.arrival, ev.arm.jog_index))
        if ev.arrival < state.estop_arrival:
            return state, (Answer(ev.topic, cmd, False, "estop_engaged",
                               "an e-stop engaged after this release was sent stays engaged; release again"),)
        return state, (Answer(ev.topic, cmd, True, "", "e-stop released; send cmd/mode to resume"),)
    if ev.arrival < state.link_lost_arrival:
        return state, (Answer(ev.topic, cmd, False, "stopped", "sent before the broker link was lost; send cmd/mode"),)
    return _serve(state, ev)


def _serve(state: RunnerState, ev: CommandArrived) -> Decision:
    cmd, topic = ev.command, ev.topic
    if isinstance(cmd, ModeCommand):
        target = OperatorMode(cmd.mode)
        if target in (OperatorMode.GRAVCOMP, OperatorMode.APP) and (ev.arm.moving or ev.arm.braking):
            return state, (Answer(topic, cmd, False, "moving",
                               f"the arm is moving: send cmd/stop and wait for the hold before {target.value}"),)
        new = replace(state, mode=target, jog_floor=max(state.jog_floor, ev.arm.jog_index))
        return new, (SetArmMode(target, state.mode, f"mode {target.value} from {cmd.envelope.client}"),
                     Answer(topic, cmd, True))
    if isinstance(cmd, JointGoalCommand):
        if state.mode is not OperatorMode.POSITION:
            return state, (Answer(topic, cmd, False, "wrong_mode",
                               f"goals need mode 'position' (mode is {state.mode.value!r})"),)
        return state, (StartGoal(topic, cmd),)
    if isinstance(cmd, StopCommand):
        # a jog sample that arrived before the stop must not restart the jog after it
        new = replace(state, jog_floor=max(state.jog_floor, ev.arm.jog_index))
        return new, (Brake(EventKind.TELEOP_STOP.value, f"stop from {_who(cmd)}"), Answer(topic, cmd, True))
    if isinstance(cmd, GripperCommand):
        return state, (SetGripper(topic, cmd),)
    return state, (Answer(topic, cmd, False, "unknown_topic", f"the arm thread does not handle {type(cmd).__name__}"),)


def _command_estopped(state: RunnerState, ev: CommandArrived) -> Decision:
    """Only e-stop messages; a release that arrived before the latest engage is refused."""
    cmd = ev.command
    if not isinstance(cmd, EstopCommand):
        return state, (Answer(ev.topic, cmd, False, "estop_engaged",
                              "the e-stop is engaged; release it, then set a mode"),)
    if cmd.engaged:
        return _engage(state, EstopEngaged(cmd, "", ev.arrival, ev.arm.jog_index))
    if ev.arrival < state.estop_arrival:  # an e-stop pressed after this release was sent
        return state, (Answer(ev.topic, cmd, False, "estop_engaged",
                           "an e-stop engaged after this release was sent stays engaged; release again"),)
    return replace(state, phase=Phase.SERVING, mode=OperatorMode.IDLE, estop=False), (
        Answer(ev.topic, cmd, True, "", "e-stop released; send cmd/mode to resume"),)


def _command_closing(state: RunnerState, ev: CommandArrived) -> Decision:
    """Refused `shutting_down`."""
    return state, (Answer(ev.topic, ev.command, False, "shutting_down", "teleop is shutting down"),)


def _fault(state: RunnerState, ev: ArmFault) -> Decision:
    """The arm holds by itself; mode idle, reported."""
    return replace(state, mode=OperatorMode.IDLE), (EnterIdle(), RecordError(ev.kind, ev.detail))


def _let_go(state: RunnerState, ev: JogLetGo) -> Decision:
    """Brake and hold; the same sample cannot restart the jog."""
    return replace(state, jog_floor=max(state.jog_floor, ev.jog_index)), (Brake(ev.kind, ev.detail),)


def _jog_ready(state: RunnerState, ev: JogSampleReady) -> Decision:
    """Start a jog in mode `jog` from a sample newer than the last stop."""
    if state.mode is not OperatorMode.JOG or ev.index <= state.jog_floor:
        return state, ()
    return state, (StartJog(ev.detail),)


def _internal_error(state: RunnerState, ev: InternalError) -> Decision:
    """Hold a finite position, mode idle, reported."""
    return replace(state, mode=OperatorMode.IDLE), (RecordError("internal_error", ev.detail), Recover(ev.detail))


#: a handler takes the one event type its table rows name (Any: Callable is contravariant in it)
Handler = Callable[[RunnerState, Any], Decision]
_S, _E, _D = Phase.SERVING, Phase.ESTOPPED, Phase.SHUTTING_DOWN

#: the transition table: (phase, event type) -> handler. Every pair is present (a test checks it);
#: docs/teleop.md carries it as text (:func:`table_markdown`, checked by the same test).
TABLE: dict[tuple[Phase, type], Handler] = {
    (_S, EstopEngaged): _engage, (_E, EstopEngaged): _engage, (_D, EstopEngaged): _engage_while_closing,
    (_S, LinkLost): _link_lost, (_E, LinkLost): _link_lost, (_D, LinkLost): _link_lost_closing,
    (_S, ShutdownBegun): _shutdown, (_E, ShutdownBegun): _shutdown, (_D, ShutdownBegun): _nothing,
    (_S, CommandArrived): _command, (_E, CommandArrived): _command_estopped, (_D, CommandArrived): _command_closing,
    (_S, ArmFault): _fault, (_E, ArmFault): _fault, (_D, ArmFault): _fault,
    (_S, JogLetGo): _let_go, (_E, JogLetGo): _let_go, (_D, JogLetGo): _let_go,
    (_S, JogSampleReady): _jog_ready, (_E, JogSampleReady): _nothing, (_D, JogSampleReady): _nothing,
    (_S, InternalError): _internal_error, (_E, InternalError): _internal_error, (_D, InternalError): _internal_error,
    (_S, FleetHold): _fleet_hold, (_E, FleetHold): _fleet_hold, (_D, FleetHold): _fleet_hold_closing,
}

EVENT_TYPES: tuple[type, ...] = (EstopEngaged, LinkLost, ShutdownBegun, CommandArrived, ArmFault, JogLetGo,
                                 JogSampleReady, InternalError, FleetHold)


def decide(state: RunnerState, event: Event) -> Decision:
    """The new state and the actions to apply, in order, for ``event`` in ``state``."""
    return TABLE[(state.phase, type(event))](state, event)


def table_markdown() -> str:
    """:data:`TABLE` as a Markdown table (docs/teleop.md carries this text; a test compares)."""
    phases = list(Phase)
    lines = ["| event | " + " | ".join(f"`{p.value}`" for p in phases) + " |",
             "| --- | " + " | ".join("---" for _ in phases) + " |"]
    for et in EVENT_TYPES:
        cells = []
        for p in phases:
            doc = (TABLE[(p, et)].__doc__ or "").strip().splitlines()
            cells.append(doc[0] if doc else "")
        lines.append(f"| `{et.__name__}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)
