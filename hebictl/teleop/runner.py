"""The arm thread: runs an :class:`~hebictl.control.arm.Arm` at a fixed rate and applies
teleop commands between cycles.

The arm loop is synchronous and must keep its rate whatever the network does, so it runs in its
own thread (:class:`~hebictl.control.loop.FixedRateLoop`) and talks to the MQTT bridge only
through lock-free hand-overs:

* **commands** (goals, mode, stop, gripper, e-stop release) go through a FIFO queue that the
  arm thread drains at the start of each cycle;
* **e-stop engage and link loss** go through a separate priority deque, handled before anything
  queued, so a backlog of goals can never delay a stop;
* **jog** samples go through a :class:`~hebictl.teleop.jog.JogMailbox` (latest wins) that the
  arm's ``jog`` mode reads inside the cycle, right after the feedback read;
* **state** comes back as an immutable :class:`ArmSnapshot` rebuilt every cycle and published
  by plain attribute assignment; **acks** through the ``on_result`` callback.

What to do with each input is not decided here: every command, e-stop, link loss, shutdown, arm
fault and jog transition becomes a typed event for :func:`hebictl.teleop.events.decide`, a pure
function of the runner's one state value (:class:`~hebictl.teleop.events.RunnerState`) with an
explicit transition table; this class drains the queues (priority first), calls it and applies
the returned actions to the Arm (:meth:`ArmRunner.dispatch`).

The runner does not work out the arm's mode from other fields of the arm: it reads ``arm.mode`` (follow,
jog, brake, hold, damp, gravcomp, release) and ``arm.state`` (the supervisor's latch level), and the
status publishes the arm's mode as ``arm_mode`` beside the operator's mode.

Modes: ``idle`` (hold, no motion accepted: the start-up mode and where every fault lands),
``position`` (joint/Cartesian goals), ``jog`` (velocity streaming) and ``gravcomp``
(hand-guiding: gravity compensation only) and ``app`` (the Mobile IO app of ``hebictl teleop --app
NAME`` drives the arm from the ``cmd/input`` stream: :class:`AppDriver`, polled inside the cycle
between the feedback read and the send, as ``hebictl.inputs.runner.run_app`` does). Anything that
stops the arm for safety — e-stop, loss of the broker, a safety event of the arm (limits, NaN or
lost feedback, watchdog) — drops the mode to ``idle``, so nothing moves again until an operator
sends a new ``cmd/mode``. The e-stop
additionally latches: it must be released *and* a mode set.

Stops never drop the arm: the e-stop, a lost broker, an internal error and the shutdown of
``hebictl teleop`` all brake within the rated deceleration and then hold position under gravity
compensation (the ``hold`` stop behaviour). Releasing the arm (commanding nothing) is not a teleop
action. Every goal is checked against the joints' rated speed and limits on the trajectory the
arm would actually follow (:mod:`~hebictl.teleop.feasibility`), and a cycle that would send a
non-finite position command holds instead, so no later goal can start from a NaN state.
"""

from __future__ import annotations

import itertools
import logging
import math
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.loop import FixedRateLoop, LoopStats
from hebictl.control.modes import Mode as ArmMode
from hebictl.control.realtime import RealtimeGrant, RealtimeRequest
from hebictl.control.safety import ArmState, EventKind, StopBehaviour
from hebictl.errors import CommandRejected, HebictlError
from hebictl.hardware.base import Command
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.events import (
    Action,
    Answer,
    ArmFacts,
    ArmFault,
    Brake,
    CommandArrived,
    EnterIdle,
    EstopEngaged,
    Event,
    FleetHold,
    InternalError,
    JogLetGo,
    JogSampleReady,
    LinkLost,
    OperatorMode,
    Phase,
    RecordError,
    Recover,
    RunnerState,
    SafetyStop,
    SetArmMode,
    SetGripper,
    ShutdownBegun,
    StartGoal,
    StartJog,
    decide,
)
from hebictl.teleop.feasibility import check_reach, check_trajectory
from hebictl.teleop.jog import ArmJog, JogMailbox, attach
from hebictl.teleop.lease import LeaseGate, LeaseState
from hebictl.teleop.messages import Ack
from hebictl.teleop.schema import (
    EstopCommand,
    GripperCommand,
    JogCommand,
    JointGoalCommand,
    ModeCommand,
    TeleopCommand,
)
from hebictl.teleop.snapshot import ArmSnapshot, ErrorRecord, GripperLike, GripperState, finite_or_none

log = logging.getLogger(__name__)


__all__ = ["OWN_EVENT_KINDS", "ArmRunner", "Mode", "OperatorMode", "join_closing"]

#: the old name of :class:`~hebictl.teleop.events.OperatorMode`, kept for existing callers
Mode = OperatorMode

#: safety-event kinds the runner (or the app of mode ``app``: ``hold``) causes; any other kind is a fault of the arm
OWN_EVENT_KINDS = frozenset({"goal", "cleared", "estop", "release", "teleop_stop", "teleop_jog_released",
                             "teleop_jog_expired", "teleop_mode", "teleop_link_lost", "teleop_shutdown",
                             "interrupt", "terminate", "internal_error", "hold"})


class AppDriver(Protocol):
    """What mode ``app`` needs of a Mobile IO app (``hebictl.inputs.teleop_app.TeleopApp``; the
    inputs layer builds it, teleop only drives it). ``offer`` is called by the bridge thread
    (validates, drops and counts); with the bridge in a process of its own, ``input_check`` makes that
    process's checks and the arm thread hands their results to ``take`` and ``refuse``
    (:class:`~hebictl.teleop.bridge_port.BridgePort`); the rest is the arm thread's only."""

    name: str

    def offer(self, payload: bytes | bytearray | str) -> tuple[bool, str, str]:
        """Take one ``cmd/input`` payload: (accepted, reason, detail)."""

    def input_check(self) -> Callable[[bytes | bytearray | str, float], tuple[Any, str, str]]:
        """``offer``'s checks for the bridge process, picklable: ``check(payload, received)`` gives
        (the sample, "", "") or (None, reason, detail)."""

    def take(self, sample: Any, received: float) -> None:
        """A sample the bridge process's check accepted, taken in at ``received`` [s, arm clock]."""

    def refuse(self, reason: str, detail: str) -> None:
        """A sample the bridge process's check dropped, counted by ``reason``."""

    def begin(self) -> None:
        """Mode ``app`` entered: a fresh app and input guard (nothing from before carries over)."""

    def cycle(self, now: float) -> None:
        """One control cycle, after ``arm.update()`` and before ``arm.send()``."""

    def end(self) -> None:
        """Mode ``app`` left (any reason): undo what the app changed outside the arm's command."""

    def status(self) -> dict[str, Any]:
        """The status's ``app`` object: name, state, LED, input counts."""


class ArmRunner:
    """Owns the arm thread. Thread-safe entry points: :meth:`submit`, :meth:`offer_jog`,
    :meth:`engage_estop`, :meth:`link_lost`, :meth:`note_error`, :attr:`snapshot`, :attr:`mode`.

    ``rate_hz`` [Hz] of the loop (default: the backend's feedback frequency); every stop brakes
    on the Arm's own ramp (:mod:`hebictl.control.braking`); ``jog_accel`` [rad/s²],
    ``jog_damping`` [m], ``jog_speed_fraction`` tune the jog plugin; ``shutdown_hold`` [s] is how
    long the arm holds, after braking, before :meth:`close` ends the loop (the modules then keep
    the hold for their command lifetime); ``max_goal_duration`` [s] bounds a goal's length;
    ``clock`` gives wall time for timestamps (the loop itself runs on ``arm.clock``); ``gripper``
    (a :class:`hebictl.control.gripper.Gripper`, or anything with ``set_opening(x)`` and
    ``status()``) is what ``cmd/gripper`` drives; by default the arm's own gripper plugin if it
    has one (:func:`hebictl.control.gripper.attach_gripper`), else commands are only recorded.
    The gripper keeps its last command through every stop (it must not drop what it holds).
    ``app`` (an :class:`AppDriver`) enables mode ``app``; without one that mode is refused.
    ``fleet`` (a :class:`~hebictl.teleop.lease.LeaseGate`, docs/fleet.md): polled at the start of
    every cycle on the arm's clock; when its lease expires or a fleet e-stop arrives the arm takes
    the latched hold stop and mode ``idle`` (last error ``lease_expired`` / ``fleet_estop``), and a
    command that could move the arm (a mode other than ``idle``, a goal, the gripper) is refused
    ``no_lease`` / ``fleet_estop`` unless the lease lets it (:meth:`LeaseGate.command`): after a hold
    only a new lease and such a command resume. Without one, nothing of this.
    """

    def __init__(self, arm: Arm, *, rate_hz: float | None = None,
                 jog_accel: float = 8.0, jog_damping: float = 0.02,
                 jog_speed_fraction: float = 1.0, shutdown_hold: float = 0.5, max_goal_duration: float = 600.0,
                 clock: TeleopClock = SYSTEM_CLOCK, gripper: GripperLike | None = None,
                 realtime: RealtimeRequest | None = None,
                 on_grant: Callable[[RealtimeGrant], None] | None = None,
                 app: AppDriver | None = None, fleet: LeaseGate | None = None) -> None:
        self.arm = arm
        self.app = app
        self.fleet = fleet
        self._app_running = False
        self.clock = arm.clock
        self.teleop_clock = clock
        self.rate_hz = float(rate_hz or arm.backend.feedback_frequency or 200.0)
        self.shutdown_hold = shutdown_hold
        #: [rad] where the shutdown parks (``hebictl teleop`` sets the config's user_data.rest_position
        #: on SIGTERM: :mod:`hebictl.control.park`); None: the shutdown brakes and holds
        self.park_rest: Any = None
        self.park: Any = None  # the park under way (hebictl.control.park.Park)
        self.park_fallback_hold = 5.0  # [s] the hold where the park falls back (the CLI's TERM_HOLD_S)
        self.max_goal_duration = float(max_goal_duration)
        if gripper is None:
            plugin = arm.plugin("Gripper")
            gripper = getattr(plugin, "gripper", None)
        self.gripper = gripper
        self.mailbox = JogMailbox()
        # max_dt: after a stalled cycle integrate at most 3 periods, never jump the jog target ahead
        self.jog = ArmJog(self.mailbox, accel=jog_accel, damping=jog_damping, speed_fraction=jog_speed_fraction,
                          max_dt=3.0 / self.rate_hz)
        attach(arm, self.jog)  # the jog is the arm's mode (arm.mode == "jog"); this is its teleop handle
        self.on_result: Callable[[Ack], None] | None = None
        self._queue: queue.SimpleQueue[tuple[str, TeleopCommand, int]] = queue.SimpleQueue()
        # e-stop engage, link loss and shutdown: handled before anything queued
        self._priority: deque[Callable[[], Event]] = deque()
        self._held_acks: deque[Ack] = deque()  # this cycle's answers, handed on after its snapshot
        # arrival order: an e-stop or link loss jumps the queue, and what arrived before it must not undo it
        self._arrivals = itertools.count()
        #: the teleop state, replaced (never mutated) by :func:`hebictl.teleop.events.decide`
        self.state = RunnerState()
        self._gripper_cmd: GripperCommand | None = None
        self._gripper_time: float | None = None
        self._last_error: ErrorRecord | None = None
        self._stats: LoopStats | None = None
        self._cycle = 0
        self._events_seen = arm.events.dropped + len(arm.events.events)
        # the loop's lifetime (not the teleop state): when close() ends it, and whether end_hold() came first
        self._closing: float | None = None
        self._end_now = False
        #: an MCAP recorder (hebictl.recording.writer.McapRecorder) or None: every cycle, command and ack
        self.recorder: Any = None
        #: the link to a bridge process (:class:`~hebictl.teleop.bridge_port.BridgePort`), the bridge
        #: thread's heartbeat (:class:`~hebictl.teleop.silence.ThreadWatch`: that bridge calls the
        #: thread-safe API itself), or None: read (``poll``) at the start of every cycle, written
        #: (``flush``) after its acks; either judges the bridge's silence (hebictl.teleop.silence)
        self.port: Any = None
        #: a group's check of each queued command before the runner decides on it (raises
        #: CommandRejected: :class:`hebictl.teleop.group.RunnerGroup`), or None
        self.admit: Callable[[TeleopCommand], None] | None = None
        #: the status's ``group`` object (which arms run together, which one holds them all), or None
        self.group_status: dict[str, Any] | None = None
        self._failed = False    # a phase of this cycle failed (the rest of it is skipped)
        self._shutting = False  # this cycle is a shutdown cycle
        # realtime: the loop thread's scheduling (hebictl.control.realtime), asked for on that thread
        self.loop = FixedRateLoop(self.step, self.rate_hz, self.clock, report=self.report_stats,
                                   realtime=realtime, on_grant=on_grant)
        self._thread: threading.Thread | None = None
        self.snapshot: ArmSnapshot = self._make_snapshot()

    # ------------------------------------------------------------------ thread-safe API
    @property
    def mode(self) -> str:
        return self.state.mode.value

    @property
    def estop_latched(self) -> bool:
        return self.state.estop

    def submit(self, topic: str, command: TeleopCommand, arrival: int | None = None) -> None:
        """Queue a command for the next cycle; its ack comes through :attr:`on_result`.

        ``arrival`` (here and in :meth:`engage_estop`, :meth:`link_lost`): the order the bridge
        received it in, when the bridge counts (the bridge process of :mod:`~hebictl.teleop.bridge_port`,
        whose e-stops and commands come over two channels); None: numbered here, on arrival."""
        if self.recorder is not None:
            self.recorder.command(topic, command)
        self._queue.put((topic, command, next(self._arrivals) if arrival is None else arrival))

    def offer_jog(self, command: JogCommand, received: float) -> None:
        """Hand a jog sample received at ``received`` [s, arm clock] to the loop (latest wins)."""
        if self.recorder is not None:
            self.recorder.command("jog", command)
        self.mailbox.offer(command, received)

    def engage_estop(self, command: EstopCommand | None, detail: str = "", arrival: int | None = None) -> None:
        """Stop the arm at the next cycle start, ahead of anything queued (latched)."""
        if self.recorder is not None and command is not None:
            self.recorder.command("estop", command)
        if arrival is None:
            arrival = next(self._arrivals)
        self._priority.append(lambda: EstopEngaged(command, detail, arrival, self._latest_jog_index()))

    def begin_shutdown(self, reason: EventKind | str = EventKind.TELEOP_SHUTDOWN) -> None:
        """Brake and hold at the next cycle start (thread-safe), ahead of :meth:`close`: the MQTT
        teardown before ``close`` (offline status, disconnect) can take a while, and the arm must
        not keep moving meanwhile."""
        kind = EventKind(reason).value
        self._priority.append(lambda: ShutdownBegun(kind, self._latest_jog_index()))

    def link_lost(self, detail: str, arrival: int | None = None) -> None:
        """The broker is gone: brake, hold, and require a new mode command afterwards."""
        if arrival is None:
            arrival = next(self._arrivals)
        self._priority.append(lambda: LinkLost(detail, arrival, self._latest_jog_index()))

    def note_error(self, reason: str, detail: str) -> None:
        """Record a rejection made outside the arm thread, for the status's ``last_error``."""
        self._last_error = ErrorRecord(self.teleop_clock.wall(), reason, detail)

    # ------------------------------------------------------------------ thread control
    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("runner already started")
        self._thread = threading.Thread(target=self._run, name="hebictl-arm", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.loop.run()
        except BaseException:  # pragma: no cover - the step catches everything itself
            log.exception("arm loop crashed")
            raise

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float = 5.0, *, reason: EventKind | str = EventKind.TELEOP_SHUTDOWN,
              hold: float | None = None) -> None:
        """Stop the arm (``hold`` behaviour), keep holding for ``hold`` seconds (default
        ``shutdown_hold``; ``inf``: until :meth:`end_hold`), then end the thread.

        ``reason`` is the event kind recorded (``teleop_shutdown``, ``interrupt`` for Ctrl-C,
        ``terminate`` for SIGTERM). The arm is never released here: once the loop ends, the
        modules keep the last (hold) command for their command lifetime, then stop driving (a
        brakeless arm then sinks or falls unless supported: see docs/teleop.md)."""
        if self._thread is None:
            return
        self.request_close(reason, hold)
        join_closing(self._thread, self.loop, lambda: self._closing, self.clock, timeout)

    def request_close(self, reason: EventKind | str = EventKind.TELEOP_SHUTDOWN, hold: float | None = None) -> None:
        """:meth:`close` without the wait: the shutdown begins and its hold's end is set (once)."""
        if self._closing is None:
            self.begin_shutdown(reason)  # a no-op if begin_shutdown() came first
            hold_s = self.shutdown_hold if hold is None else hold
            self._closing = self.clock.now() + (0.0 if self._end_now else hold_s)  # inf: until end_hold()

    @property
    def closing_at(self) -> float | None:
        """[s, arm clock] when the shutdown's hold ends (inf: at :meth:`end_hold`); None: not closing."""
        return self._closing

    def end_hold(self) -> None:
        """End the shutdown hold now (a second Ctrl-C/SIGTERM); thread-safe."""
        self._end_now = True
        if self._closing is not None:
            self._closing = self.clock.now()

    def report_stats(self, stats: LoopStats) -> None:
        self._stats = stats
        if self.recorder is not None:
            self.recorder.loop_stats(stats)

    # ------------------------------------------------------------------ the cycle
    def step(self) -> bool:
        """One cycle: priority items, queued commands, jog supervision, ``update``, ``send``,
        snapshot (and the recorder's sample, if one is attached). The arm thread calls it; tests
        may call it directly on a SimClock arm. It is :meth:`cycle_begin`, :meth:`cycle_commands`,
        :meth:`cycle_update` and :meth:`cycle_end` in a row: a group of runners in one loop
        (:mod:`hebictl.teleop.group`) runs each phase for every arm in turn, so that every arm's
        e-stop comes before any arm's command and the group supervises every arm between the
        updates and the sends of one cycle."""
        self.cycle_begin()
        self.cycle_commands()
        self.cycle_update()
        return self.cycle_end()

    def cycle_begin(self) -> None:
        """The cycle's stops: the bridge process's link, the fleet lease, the priority items (e-stop,
        lost link, shutdown). A group takes every arm's before any arm's commands."""
        if self.port is not None:
            self.port.poll()  # the bridge's e-stops, link losses and commands queued for this cycle; the silence rule
        if self.recorder is not None:
            self.recorder.cycle_start()
        self._failed = False
        self._shutting = self._closing is not None
        self._guarded(self._take_stops)

    def cycle_commands(self) -> None:
        """The cycle's queued commands (after the stops)."""
        if not self._failed:
            self._guarded(self._take_commands)

    def cycle_update(self) -> None:
        """The arm's ``update()`` (feedback, then the command of this cycle), not yet sent."""
        if not self._failed:
            self._guarded(self._update_phase)

    def cycle_end(self) -> bool:
        """``send()``, the arm's new events, the snapshot, the recorder's sample, the acks; False
        when the shutdown's hold (or park) is over."""
        go_on = True
        if not self._failed:
            go_on = bool(self._guarded(self._send_phase))
        if self._failed and self._shutting:  # shutting down: a failing step must not keep the loop alive
            self._cycle += 1
            go_on = self.clock.now() < (self._closing or 0.0) + 2.0
        else:
            self._cycle += 1
            self.snapshot = self._make_snapshot()
        if self.recorder is not None:
            self.recorder.sample(self.mode)
        self._flush_acks()
        if self.port is not None:
            self.port.flush()  # the snapshot (when due, and before any ack), then this cycle's acks
        return go_on

    def _guarded(self, phase: Callable[[], Any]) -> Any:
        """``phase()``; a bug there must not leave the modules with a stale or NaN command: the
        runner holds (:class:`~hebictl.teleop.events.InternalError`) and skips the cycle's rest."""
        try:
            return phase()
        except Exception as exc:
            log.exception("arm thread step failed")
            self._failed = True
            self.dispatch(InternalError(f"{type(exc).__name__}: {exc}"))
            return None

    def _flush_acks(self) -> None:
        """Hand this cycle's answers to ``on_result``, after the snapshot that includes what they
        answer: a client that reads the arm's status after an accepted ack sees its effect (the
        mode it set, the e-stop it engaged), not the status of the cycle before."""
        held = self._held_acks
        cb = self.on_result
        while held:
            ack = held.popleft()
            if cb is None:
                continue
            try:
                cb(ack)
            except Exception:
                log.exception("ack callback failed")

    def _take_stops(self) -> None:
        if self.fleet is not None:  # a fleet e-stop or an expired lease: before anything queued
            self._poll_fleet()
        while self._priority:
            self.dispatch(self._priority.popleft()())

    def _take_commands(self) -> None:
        while True:
            try:
                topic, cmd, arrival = self._queue.get_nowait()
            except queue.Empty:
                break
            if not self._refuses(topic, cmd):
                self.dispatch(CommandArrived(topic, cmd, arrival, self._facts()))
        self._shutting = self._closing is not None

    def _update_phase(self) -> None:
        arm = self.arm
        if not self._shutting and self.state.mode is OperatorMode.JOG and self.state.phase is Phase.SERVING:
            self._supervise_jog()
        arm.update()
        self._check_command()
        if not self._shutting and self._app_running and self.app is not None:  # after the check of the
            self.app.cycle(self.clock.now())  # command update() made: what the app sets is commanded next

    def _send_phase(self) -> bool:
        self.arm.send()
        if self._shutting:
            return self._shutdown_end()
        self._check_events()
        return True

    def _refuses(self, topic: str, cmd: TeleopCommand) -> bool:
        """Refuse (ack) a queued command the fleet lease or the runner's group (:attr:`admit`) does not
        let through."""
        if self.fleet is not None and self._fleet_refuses(topic, cmd):
            return True
        if self.admit is not None:
            try:
                self.admit(cmd)
            except CommandRejected as exc:
                self._ack(topic, cmd, False, exc.reason, exc.detail)
                return True
        return False

    def _poll_fleet(self) -> None:
        """The cycle's look at the fleet lease (:meth:`LeaseGate.poll`, on the arm's clock): the hold
        starts in the first cycle after the lease expired or a fleet e-stop arrived."""
        assert self.fleet is not None
        reason = self.fleet.poll(self.clock.now())
        if reason is None:
            return
        if self.fleet.state is LeaseState.ESTOPPED:
            event = FleetHold("fleet_estop", EventKind.ESTOP.value, reason, self._latest_jog_index())
        else:  # a lost lease is a lost link to the operator's station
            event = FleetHold("lease_expired", EventKind.TELEOP_LINK_LOST.value, reason, self._latest_jog_index())
        self.dispatch(event)

    def _fleet_refuses(self, topic: str, cmd: TeleopCommand) -> bool:
        """Refuse (ack) a command that could move the arm while the fleet lease does not let it;
        an accepted one is the explicit command that makes a fresh lease active."""
        assert self.fleet is not None
        if isinstance(cmd, ModeCommand):
            moves = cmd.mode != OperatorMode.IDLE.value
        else:
            moves = isinstance(cmd, JointGoalCommand | GripperCommand)
        if not moves:
            return False  # stop, e-stop, mode idle: never refused for want of a lease
        try:
            self.fleet.command(self.clock.now())
        except CommandRejected as exc:
            self._ack(topic, cmd, False, exc.reason, exc.detail)
            return True
        return False

    def _shutdown_end(self) -> bool:
        """After the shutdown cycle's send: go on until ``shutdown_hold`` has passed and the brake
        has ended (or the park has), then stop the loop with the hold still commanded."""
        if self.park_rest is not None:
            return self._park_step()
        now, closing = self.clock.now(), (self._closing or 0.0)
        if now < closing:
            return True
        # past the hold time: finish the brake first, but never wait on it for more than 2 s
        return self.arm.braking and now < closing + 2.0

    def _park_step(self) -> bool:
        """The shutdown as a park at ``park_rest`` (:class:`hebictl.control.park.Park`, bounded by its
        PARK_BOUND_S): :meth:`end_hold` (a second signal) brakes during the brake or the move and
        ends the loop once the brake has ended, or at once during the final hold."""
        from hebictl.control.park import Park

        if self.park is None:
            self.park = Park(self.arm, self.park_rest, self.clock, "SIGTERM", self.park_fallback_hold)
        veto = self.park_veto()
        if veto is not None:   # an e-stop says "do not move": a park still braking or moving holds instead
            self.park.stop_short(veto)
        if self._end_now:
            if self.park.phase in ("parked", "hold"):
                return False
            self.park.abort = True
        return bool(self.park.step())

    def park_veto(self) -> str | None:
        """Why the shutdown must not park (an engaged e-stop, the operator's or the fleet's: both say
        the arm must not move, and a park is a move), or None. Judged every cycle of the park, on the
        loop thread, so an e-stop engaged during its brake or move ends it in the hold too."""
        if self.state.estop:
            return "the e-stop is engaged"
        if self.fleet is not None and self.fleet.state is LeaseState.ESTOPPED:
            return f"the fleet e-stop is engaged ({self.fleet.lease.estop_reason})"
        return None

    def _make_snapshot(self) -> ArmSnapshot:
        arm = self.arm
        fb, cmd = arm.last_feedback, arm.pending_command
        behaviour = arm.stop_behaviour
        return ArmSnapshot(
            cycle=self._cycle, time=self.clock.now(), wall_time=self.teleop_clock.wall(), state=arm.state.value,
            mode=self.state.mode.value, estop=self.state.estop, jogging=arm.mode is ArmMode.JOG,
            braking=arm.mode is ArmMode.BRAKE, arm_mode=arm.mode.value,
            position=fb.position.copy(), velocity=fb.velocity.copy(), effort=fb.effort.copy(),
            command_position=cmd.position.copy(), command_velocity=cmd.velocity.copy(),
            goal_progress=arm.goal_progress, at_goal=arm.at_goal, loop=self._stats,
            last_error=self._last_error, last_event=arm.events.last, gripper=self._gripper_state(),
            m_stopped=arm.m_stopped, stop_behaviour=None if behaviour is None else behaviour.value,
            goal_status=arm.goal_status, commands_delivered=arm.commands_delivered, realtime=self.loop.grant,
            app=None if self.app is None else {**self.app.status(), "running": self._app_running},
            fleet=None if self.fleet is None else self.fleet.state.value, group=self.group_status,
            **_payload_fields(arm.payload_estimate))

    def _gripper_state(self) -> GripperState | None:
        cmd = self._gripper_cmd
        g = self.gripper
        if cmd is None and g is None:
            return None
        if g is None:
            assert cmd is not None
            return GripperState(cmd.position, cmd.action, cmd.envelope.seq, cmd.envelope.client, self._gripper_time)
        st = g.status()
        return GripperState(
            position=st.opening, action=None if cmd is None else cmd.action,
            seq=-1 if cmd is None else cmd.envelope.seq, client="" if cmd is None else cmd.envelope.client,
            time=self._gripper_time, hardware=True, effort=finite_or_none(st.effort),
            measured_position=finite_or_none(st.measured_position), measured_effort=finite_or_none(st.measured_effort),
            measured_opening=finite_or_none(st.measured_opening))

    def _to_idle(self) -> None:
        """Arm side of mode ``idle``: nothing moves until an operator sets a mode again."""
        self.jog.halt()
        if self.arm.idle != "hold":
            self.arm.set_idle("hold")

    def _check_events(self) -> None:
        """A safety event the runner did not cause (limits, feedback, watchdog) disarms teleop. A
        finding the arm only reports (a monitor's reaction ``event``: the arm stays RUNNING, e.g. a
        model-mismatch estimate) changes nothing here: it is in the status's ``last_event``, and it
        ended a Mobile IO app mid-homing when it disarmed (a "-0.00 kg" estimate)."""
        log_ = self.arm.events
        total = log_.dropped + len(log_.events)
        if total == self._events_seen:
            return
        new = list(log_.events)[-(total - self._events_seen):] if total - self._events_seen <= len(log_.events) \
            else list(log_.events)
        self._events_seen = total
        for ev in new:
            if str(ev.kind) not in OWN_EVENT_KINDS and ev.state is not ArmState.RUNNING:
                self.dispatch(ArmFault(str(ev.kind), ev.detail))

    # ------------------------------------------------------------------ never NaN, never a drop
    def _holdable_position(self) -> FloatArray | None:
        """A finite position to hold: the command of this cycle, else the measured position."""
        arm = self.arm
        for candidate in (arm.pending_command.position, arm.last_feedback.position):
            if np.all(np.isfinite(candidate)):
                return np.array(candidate, dtype=np.float64)
        return None

    def _check_command(self) -> None:
        """Refuse to send a non-finite position while the arm is meant to command one."""
        arm = self.arm
        if arm.mode in (ArmMode.DAMP, ArmMode.RELEASE, ArmMode.GRAVCOMP):
            return  # damp, an explicit release and hand-guiding command no position on purpose
        if not np.all(np.isfinite(arm.last_feedback.position)):
            return  # no feedback yet: nothing to hold
        if not np.all(np.isfinite(arm.pending_command.position)):
            raise FloatingPointError("the arm computed a non-finite position command")

    def _recover(self, detail: str) -> None:
        """After an internal error: hold a finite position (the mode is already idle)."""
        arm = self.arm
        hold = self._holdable_position()
        try:
            self._to_idle()
            if arm.trajectory is not None:
                arm.cancel_goal()
            if hold is not None:
                arm.hold(hold, reason="internal_error", detail=detail)
            arm.update()
            if hold is not None and not np.all(np.isfinite(arm.pending_command.position)):
                arm.pending_command.position[:] = hold
                arm.pending_command.velocity[:] = 0.0
            arm.send()
            return
        except Exception:
            log.exception("arm thread could not hold through the arm; writing the hold directly")
        if hold is not None:  # last resort: a plain position hold straight to the modules
            try:
                arm.backend.write(Command(position=hold, velocity=np.zeros(arm.dof), effort=np.full(arm.dof, np.nan)))
            except Exception:
                log.exception("arm thread could not command a hold")

    # ------------------------------------------------------------------ acks
    def _ack(self, topic: str, cmd: TeleopCommand | None, accepted: bool, reason: str = "", detail: str = "") -> None:
        if not accepted:
            self._last_error = ErrorRecord(self.teleop_clock.wall(), reason, detail)
        env = None if cmd is None else cmd.envelope
        ack = Ack(None if env is None else env.seq, None if env is None else env.client, topic, accepted, reason,
                  detail)
        if self.recorder is not None:
            self.recorder.ack(ack)
        self._held_acks.append(ack)  # handed on at the end of the cycle (:meth:`_flush_acks`)

    # ------------------------------------------------------------------ motion helpers
    def _brake(self, kind: str, detail: str) -> None:
        """Decelerate whatever moves (jog or goal) to rest and hold there; hold if nothing moves.

        A moving arm brakes on the Arm's own ramp (``arm.hold()`` without a position: from the
        commanded state, at the deceleration the actuators can deliver, with the ramp's effort fed
        forward; see :mod:`hebictl.control.braking`), the same ramp as the e-stop and every other
        stop, so the modules follow it and the hold starts at rest."""
        arm = self.arm
        if arm.state is ArmState.STOPPED:  # (never jogging then)
            return
        mode = arm.mode
        traj = arm.trajectory
        if mode is ArmMode.JOG:
            p, v = self.jog.halt()  # the arm brakes from the jog's command (or holds it, if still)
        elif traj is not None and not arm.at_goal:
            p, v, _ = traj.get_state(self.clock.now())
        else:
            if arm.state is ArmState.RUNNING or mode is not ArmMode.BRAKE:  # never cut a brake short
                hold = self._holdable_position() if mode is not ArmMode.FOLLOW else None
                arm.hold(hold, reason=kind, detail=detail)
            return
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
            arm.hold(self._holdable_position(), reason=kind, detail=detail)
            return
        arm.hold(reason=kind, detail=detail)  # the Arm's brake ramp from its commanded state

    def _safety_stop(self, kind: str, detail: str) -> None:
        """The ``hold`` stop of e-stop, broker loss and shutdown: the arm's latched stop, which
        brakes from the commanded state (jog, goal or hold) within the rated deceleration and then
        holds under gravity compensation, also without feedback. Never commands nothing."""
        self.jog.halt()
        if self.arm.state is ArmState.STOPPED and self.arm.stop_behaviour is StopBehaviour.HOLD:
            return  # already stopped and holding: keep the first stop's brake and event
        self.arm.stop(kind, detail, behaviour=StopBehaviour.HOLD)

    def _moving(self) -> bool:
        """The arm jogs, or follows a goal it has not reached (``arm.mode``; follow only while running)."""
        mode = self.arm.mode
        return mode is ArmMode.JOG or (mode is ArmMode.FOLLOW and not self.arm.at_goal)

    def _latest_jog_index(self) -> int:
        s = self.mailbox.latest
        return 0 if s is None else s.index

    def _facts(self) -> ArmFacts:
        return ArmFacts(moving=self._moving(), braking=self.arm.mode is ArmMode.BRAKE,
                        jog_index=self._latest_jog_index())

    def _supervise_jog(self) -> None:
        """Release a running jog when let go or expired; offer a fresh dead-man sample to start one."""
        s = self.mailbox.latest
        if s is None:
            return
        now = self.clock.now()
        if self.arm.mode is ArmMode.JOG:
            if not s.deadman:
                self.dispatch(JogLetGo(EventKind.TELEOP_JOG_RELEASED.value,
                                       f"dead-man released by {s.client} (seq {s.seq})", s.index))
            elif now > s.expiry:
                self.dispatch(JogLetGo(EventKind.TELEOP_JOG_EXPIRED.value,
                                       f"jog stream stopped: last sample (seq {s.seq} from {s.client}) "
                                       f"expired {now - s.expiry:.3f} s ago", s.index))
            return
        if self.fleet is not None and not self.fleet.may_move(now):
            return  # (mode jog needs an active lease: a hold of the lease leaves it; belt and braces)
        if s.deadman and now <= s.expiry and self.arm.state is not ArmState.STOPPED:
            self.dispatch(JogSampleReady(s.index, f"jog by {s.client} (seq {s.seq}): leaving the hold"))

    def _start_jog(self, detail: str) -> None:
        """The arm jogs from the commanded state (position and velocity), leaving a hold (a goal or a
        brake is taken over by the jog: the supervisor's table lets ``jog`` follow both)."""
        arm = self.arm
        s = self.mailbox.latest
        if s is None or arm.state is ArmState.STOPPED:
            return
        cmd = arm.pending_command
        start = cmd.position.copy() if np.all(np.isfinite(cmd.position)) else arm.last_feedback.position.copy()
        if not np.all(np.isfinite(start)):
            return
        velocity = cmd.velocity.copy() if np.all(np.isfinite(cmd.velocity)) else np.zeros(arm.dof)
        if arm.state is ArmState.HOLD:
            arm.clear_fault(detail)  # a plain hold (cmd/stop, a released jog) is not a fault
        self.jog.start(start, s, velocity)

    # ------------------------------------------------------------------ events and actions
    def dispatch(self, event: Event) -> None:
        """Decide on ``event`` (:func:`hebictl.teleop.events.decide`) and apply the actions in
        order. Called in the arm thread only (tests may call it on a stepped runner)."""
        self.state, actions = decide(self.state, event)
        if self._app_running and (self.state.mode is not OperatorMode.APP or self.state.phase is not Phase.SERVING):
            self._end_app()  # first: the stop actions below then act on the arm as the app leaves it
        for action in actions:
            self._do(action)

    def _do(self, action: Action) -> None:
        """Apply one action to the arm (the only place the runner's decisions touch it)."""
        if isinstance(action, Answer):
            self._ack(action.topic, action.command, action.accepted, action.reason, action.detail)
        elif isinstance(action, SafetyStop):
            self._safety_stop(action.kind, action.detail)
        elif isinstance(action, Brake):
            self._brake(action.kind, action.detail)
        elif isinstance(action, EnterIdle):
            self._to_idle()
        elif isinstance(action, RecordError):
            self._last_error = ErrorRecord(self.teleop_clock.wall(), action.reason, action.detail)
        elif isinstance(action, SetArmMode):
            self._set_arm_mode(action.target, action.previous, action.who)
        elif isinstance(action, StartGoal):
            try:
                self._apply_goal(action.topic, action.command)
            except CommandRejected as exc:
                self._ack(action.topic, action.command, False, exc.reason, exc.detail)
        elif isinstance(action, SetGripper):
            self._apply_gripper(action.topic, action.command)
        elif isinstance(action, StartJog):
            self._start_jog(action.detail)
        elif isinstance(action, Recover):
            self._recover(action.detail)
        else:  # pragma: no cover - every action type is handled above
            raise TypeError(f"unknown action {action!r}")

    # ------------------------------------------------------------------ command handlers
    def _apply_gripper(self, topic: str, cmd: GripperCommand) -> None:
        self._gripper_cmd = cmd
        self._gripper_time = self.teleop_clock.wall()
        if self.gripper is None:
            self._ack(topic, cmd, True, "", "recorded (the config has no gripper: user_data.has_gripper)")
            return
        self.gripper.set_opening(cmd.position)
        self._ack(topic, cmd, True, "", f"gripper to {cmd.position:g} (0 closed, 1 open)")

    def _end_app(self) -> None:
        self._app_running = False
        if self.app is not None:
            self.app.end()

    def _set_arm_mode(self, target: OperatorMode, previous: OperatorMode, who: str) -> None:
        """The arm side of a mode change (the runner's mode is already ``target``)."""
        arm = self.arm
        if self._app_running:  # app -> app again: a fresh app
            self._end_app()
        if arm.state is ArmState.STOPPED:
            arm.clear_fault(f"latched stop cleared by {who}; holding the current position")
        if target is OperatorMode.GRAVCOMP:
            self.jog.halt()
            arm.cancel_goal()
            if arm.state is ArmState.HOLD:
                arm.clear_fault(f"{who}: leaving the hold for hand-guiding")
            arm.set_idle("gravcomp")
        elif arm.idle != "hold":
            arm.set_idle("hold")  # leaving hand-guiding: hold where the operator left the arm
        elif target is not previous and self._moving():
            self._brake(EventKind.TELEOP_MODE.value, who)
        if target is OperatorMode.APP and self.app is not None:
            self.app.begin()
            self._app_running = True

    def _goal_start(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Where a new goal starts; a non-finite state is replaced by a hold at the measured
        position and the goal refused, so that no goal ever starts from NaN."""
        arm = self.arm
        p, v, a = arm.current_state()
        if np.all(np.isfinite(p)) and np.all(np.isfinite(v)) and np.all(np.isfinite(a)):
            return p, v, a
        hold = self._holdable_position()
        if arm.trajectory is not None:
            arm.cancel_goal()
        arm.hold(hold, reason="internal_error", detail="non-finite commanded state replaced by a hold")
        raise CommandRejected("not_finite", "the arm's commanded state was not finite; it now holds its "
                                            "measured position: send the goal again")

    def _apply_goal(self, topic: str, cmd: JointGoalCommand) -> None:
        arm = self.arm
        names = arm.model.joint_names
        goal = Goal(arm.dof)
        for t, p, v in zip(cmd.times, cmd.positions, cmd.velocities, strict=True):
            goal.add_waypoint(t=t, position=p, velocity=v)
        start = self._goal_start()
        check_reach(start[0], cmd.times, cmd.positions, arm.limits, max_duration=self.max_goal_duration,
                    joint_names=names)
        try:
            if cmd.times[0] is not None:  # the trajectory the arm would build: check it first
                check_trajectory(goal.build_trajectory(self.clock.now(), *start), arm.limits,
                                 max_duration=self.max_goal_duration, joint_names=names)
            arm.set_goal(goal)
        except (HebictlError, ValueError, ArithmeticError) as exc:
            if isinstance(exc, CommandRejected):
                raise
            raise CommandRejected("infeasible", f"no trajectory to this goal: {exc}") from None
        traj = arm.trajectory
        if traj is not None and cmd.times[0] is None:
            try:  # the arm timed it: still never accept a non-finite or too fast result
                check_trajectory(traj, arm.limits, max_duration=self.max_goal_duration, joint_names=names)
            except CommandRejected:
                arm.cancel_goal()
                arm.hold(start[0], reason="goal", detail="refused goal replaced by a hold")
                raise
        self._ack(topic, cmd, True)


def join_closing(thread: threading.Thread, loop: FixedRateLoop, closing: Callable[[], float | None], clock: Any,
                 timeout: float) -> None:
    """Wait for ``thread`` (running ``loop``) to end its shutdown hold, which ends at ``closing()``
    [s, ``clock``] (inf: until an ``end_hold``), plus ``timeout`` [s]; then end the loop."""
    while thread.is_alive():
        remaining = (closing() or 0.0) - clock.now()
        if math.isinf(remaining):
            thread.join(0.1)
            continue
        thread.join(timeout + max(0.0, remaining))
        break
    if thread.is_alive():
        loop.stop()
        thread.join(timeout)


def _payload_fields(estimate: dict[str, Any] | None) -> dict[str, float | None]:
    """The model-mismatch monitor's estimate as plain floats for the status (None before one)."""
    if not estimate:
        return {"payload_mass_kg": None, "payload_extra_kg": None}
    return {"payload_mass_kg": finite_or_none(float(estimate.get("mass_kg", math.nan))),
            "payload_extra_kg": finite_or_none(float(estimate.get("extra_mass_kg", math.nan)))}
