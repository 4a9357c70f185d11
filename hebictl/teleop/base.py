"""A mobile base served over teleop (``hebictl teleop ARMS.multi.yaml`` with a ``base:``).

The base is a plain velocity group (:class:`~hebictl.control.base.VelocityBase`). It gets its own topic
level, ``hebictl/v1/<base id>/`` (the base's name, or ``PREFIX-NAME`` with ``--arm-id PREFIX``, as the
arms), its own bridge (:class:`~hebictl.teleop.base_bridge.BaseBridge`) and this runner, which the
arms' :class:`~hebictl.teleop.group.RunnerGroup` steps in the same cycle as the arms:

* **commands** (``cmd/mode``, ``cmd/stop``, an e-stop release) through a FIFO queue drained at the
  start of the cycle's command phase, after every arm's and the base's e-stop;
* **e-stop engage, link loss and shutdown** through a priority deque drained in the cycle's first
  phase, before any arm's or the base's command: the e-stop goes first;
* **velocity samples** (``cmd/velocity``) through a one-slot mailbox (latest wins), as a jog.

The velocity command is a dead-man, as ``cmd/jog``: a sample drives the wheels for its ``ttl`` [s]
from its receipt on the loop's clock and only while ``deadman`` is true. A release (``deadman``
false) or a zero velocity holds at once, and a stream that goes silent holds once its last sample's
ttl has passed (counted ``expired``): holding is :meth:`VelocityBase.hold`, the wheels ramp to zero
at ``max_acceleration`` from their measured velocity. While a sample is valid the runner renews the
base's own command every cycle with the config's ``command_ttl``, so the base's stale-command fault
stays a backstop for a loop that stops renewing, not a second dead-man.

Modes: ``idle`` (holding zero, velocity refused ``wrong_mode``) and ``velocity``. Anything that stops
the base (its e-stop, a fault of its own, the group's stop when an arm holds them all, a lost link,
the shutdown) drops the mode to ``idle``; nothing resumes by itself: ``cmd/mode velocity`` (after
releasing the base's e-stop, and refused ``group_hold`` while an arm holds for a cause of its own)
clears the base's latched stop and only the next sample moves it.

Fleet (``user_data.fleet`` or ``--fleet-station``, docs/fleet.md): the base takes the fleet lease exactly as
an arm does, with a :class:`~hebictl.teleop.lease.LeaseGate` of its own (its id the base's). The gate is
polled at the start of every cycle, before the priority deque: at the first cycle after the lease expired or a
fleet e-stop arrived the base takes a latched stop (``lease_expired`` / ``fleet_estop``: it decelerates to
zero at ``max_acceleration``, then commands zero), its mode drops to ``idle`` and its last error says why.
``cmd/mode velocity`` is refused ``no_lease`` / ``fleet_estop`` unless the lease lets it
(:meth:`LeaseGate.command`: a fresh lease from an authorised station and no fleet e-stop; accepted, it is the
explicit command that makes the lease active), and a velocity sample is refused so while the lease does not
let the base move (leased but not yet commanded, ``ready``, the mode is ``idle``: the sample is refused
``wrong_mode``, which names what to send). After a hold only a new lease and ``cmd/mode velocity`` resume;
stop, e-stop and mode ``idle`` are never refused for want of a lease. The status carries the gate's ``fleet``
object, as an arm's.
"""

from __future__ import annotations

import logging
import math
import queue
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, cast

import numpy as np

from hebictl.control.base import BaseState, VelocityBase
from hebictl.errors import CommandRejected
from hebictl.teleop.bridge_port import BridgePort
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.lease import LeaseGate, LeaseState
from hebictl.teleop.messages import Ack, dumps
from hebictl.teleop.runner_proxy import RunnerProxy
from hebictl.teleop.schema import BaseVelocityCommand, EstopCommand, ModeCommand, StopCommand
from hebictl.teleop.snapshot import ErrorRecord

log = logging.getLogger(__name__)

__all__ = ["BasePort", "BaseRunner", "BaseRunnerProxy", "base_status_payload"]

#: the base's own stops whose latch is no fault of the base (the group's stop, the shutdown's)
QUIET_STOPS = frozenset({"group", "interrupt", "terminate", "teleop_shutdown"})


def _finite(values: Any) -> list[float | None]:
    return [round(float(v), 6) if math.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]


class BaseRunner:
    """The base's side of the loop (module doc). Thread-safe entry points (the bridge's): :meth:`submit`,
    :meth:`offer_velocity`, :meth:`engage_estop`, :meth:`link_lost`, :meth:`note_error`,
    :meth:`begin_shutdown`, :attr:`snapshot`, :attr:`mode`; the rest is the loop thread's, in the order
    :meth:`cycle_begin`, :meth:`cycle_commands`, (``base.update()``, the group's supervision),
    :meth:`cycle_end`. ``admit`` (set by the group) refuses a mode that could move the base while an
    arm holds every arm. ``fleet``: the base's fleet lease (module doc), None without a fleet."""

    def __init__(self, base: VelocityBase, *, clock: TeleopClock = SYSTEM_CLOCK,
                 fleet: LeaseGate | None = None) -> None:
        self.base = base
        self.clock = base.clock
        self.teleop_clock = clock
        self.mode = "idle"
        self.estop_latched = False
        self.stopping = False
        self.on_result: Callable[[Ack], None] | None = None
        self.admit: Callable[[ModeCommand], None] | None = None
        self.fleet = fleet
        self.recorder = None
        self.app = None
        #: the link to the bridge (``--bridge process``: a :class:`BasePort`; ``thread``: the bridge
        #: thread's :class:`~hebictl.teleop.silence.ThreadWatch`), polled at cycle start, flushed at its end
        self.port: Any = None
        self.group_status: dict[str, Any] | None = None
        self.last_error: ErrorRecord | None = None
        self._priority: deque[tuple[str, Any]] = deque()
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._sample: tuple[BaseVelocityCommand, float] | None = None
        self._acks: deque[Ack] = deque()
        self.target = np.zeros(base.size)
        self.deadline = -math.inf      # [s, loop clock] when the current sample's ttl ends
        self.counts = {"velocity": 0, "released": 0, "expired": 0, "refused": 0, "estops": 0, "fleet_holds": 0}
        self.cycle = 0
        self.stop_at: float | None = None   # [s] when the shutdown began
        self.snapshot: dict[str, Any] = self._make_snapshot()

    # ------------------------------------------------------------------ thread-safe inputs
    def submit(self, name: str, cmd: Any, arrival: int | None = None) -> None:
        self._queue.put((name, cmd))

    def offer_velocity(self, cmd: BaseVelocityCommand, received: float) -> None:
        """The newest sample (``received`` [s] on the loop's clock) replaces any not yet taken."""
        self._sample = (cmd, received)

    #: the bridge process's port hands samples on as it does an arm's jog
    offer_jog = offer_velocity

    def engage_estop(self, cmd: EstopCommand, detail: str = "", arrival: int | None = None) -> None:
        self._priority.append(("estop", cmd))

    def link_lost(self, detail: str, arrival: int | None = None) -> None:
        self._priority.append(("link", detail))

    def begin_shutdown(self, reason: str = "teleop_shutdown") -> None:
        self._priority.append(("shutdown", str(reason)))

    def note_error(self, reason: str, detail: str) -> None:
        self.last_error = ErrorRecord(self.teleop_clock.wall(), reason, detail)

    # ------------------------------------------------------------------ the loop thread
    def cycle_begin(self) -> None:
        """What the bridge process sent (priority first), then e-stop, lost link and shutdown, before any
        command of this cycle."""
        if self.port is not None:
            self.port.poll()
        if self.fleet is not None:   # a fleet e-stop or an expired lease: before anything queued
            self._poll_fleet()
        while self._priority:
            kind, item = self._priority.popleft()
            if kind == "estop":
                self.counts["estops"] += 1
                self.estop_latched = True
                self._idle("estop_engaged", "the base's e-stop was engaged in the same cycle")
                self.base.stop("estop", f"e-stop engaged by {item.envelope.client}" if item is not None else
                               "e-stop engaged")
                self._answer(item, "estop")
            elif kind == "link":
                if self.mode != "idle" or self.deadline > -math.inf:
                    self.note_error("teleop_link_lost", item)
                self._idle("link_lost", f"the link to the bridge was lost in the same cycle ({item})")
                self._hold()
            else:
                if not self.stopping:
                    self.stopping, self.stop_at = True, self.clock.now()
                self._idle("shutting_down", "teleop is shutting down: the base stops")
                self.base.stop(item, f"{item}: stopping the base")

    def _poll_fleet(self) -> None:
        """The cycle's look at the fleet lease (on the loop's clock): the latched stop starts in the
        first cycle after the lease expired or a fleet e-stop arrived."""
        assert self.fleet is not None
        reason = self.fleet.poll(self.clock.now())
        if reason is None:
            return
        kind = "fleet_estop" if self.fleet.state is LeaseState.ESTOPPED else "lease_expired"
        self.counts["fleet_holds"] += 1
        self._idle(kind, reason)
        self.base.stop(kind, reason)
        self.note_error(kind, reason)

    def fleet_refusal(self) -> CommandRejected | None:
        """Why the fleet lease does not let the base move now (``fleet_estop`` / ``no_lease``), or None
        (no fleet, or an active, fresh lease)."""
        fleet = self.fleet
        if fleet is None or fleet.may_move(self.clock.now()):
            return None
        if fleet.state is LeaseState.ESTOPPED:
            return CommandRejected("fleet_estop", f"{fleet.lease.estop_reason}; an authorised station must clear it")
        return CommandRejected("no_lease", f"no active fleet lease fresher than {fleet.lease.lease_timeout:g} s "
                                           f"(state {fleet.state.value}): a new lease and cmd/mode velocity first")

    def cycle_commands(self) -> None:
        """Queued commands, then the newest velocity sample, then its ttl."""
        while True:
            try:
                name, cmd = self._queue.get_nowait()
            except queue.Empty:
                break
            try:
                self._apply(name, cmd)
            except CommandRejected as exc:
                self._refuse(name, cmd, exc)
            else:
                self._answer(cmd, name)
        sample, self._sample = self._sample, None
        if sample is not None:
            cmd, received = sample
            try:
                self._take(cmd, received)
            except CommandRejected as exc:
                self.counts["refused"] += 1
                self._refuse("velocity", cmd, exc)
        self._drive()

    def _apply(self, name: str, cmd: Any) -> None:
        if isinstance(cmd, EstopCommand):   # a release (an engage comes through the priority deque)
            if cmd.engaged:
                self.engage_estop(cmd)
                return
            self.estop_latched = False
            return
        if self.stopping:
            raise CommandRejected("shutting_down", "teleop is shutting down: the base stops")
        if isinstance(cmd, StopCommand):
            self._idle("wrong_mode", "cmd/stop in the same cycle: the base holds, mode idle")
            self._hold()
            return
        if isinstance(cmd, ModeCommand):
            if cmd.mode == "idle":
                self._idle("wrong_mode", "cmd/mode idle in the same cycle: the base holds")
                self._hold()
                return
            if self.estop_latched:
                raise CommandRejected("estop_engaged", "the base's e-stop is engaged: release it, then set a mode")
            if self.fleet is not None:   # the explicit command that makes a fresh lease active (as an
                self.fleet.command(self.clock.now())   # arm's: before the group's admission)
            if self.admit is not None:
                self.admit(cmd)
            if not self.base.clear(f"cleared by cmd/mode from {cmd.envelope.client}; holding zero velocity"):
                raise CommandRejected("no_feedback", "the base has no fresh feedback: its stop stays")
            self.mode = "velocity"
            return
        raise CommandRejected("unknown_topic", f"the base takes no cmd/{name}")

    def _take(self, cmd: BaseVelocityCommand, received: float) -> None:
        if self.stopping:
            raise CommandRejected("shutting_down", "teleop is shutting down: the base stops")
        if cmd.deadman and cmd.velocity.any():
            refusal = self.fleet_refusal()
            ready = self.fleet is not None and self.fleet.state is LeaseState.READY and self.mode != "velocity"
            if refusal is not None and not ready:   # (leased but not commanded: wrong_mode says what to send)
                raise refusal
        if self.mode != "velocity" or self.base.state is not BaseState.RUNNING:
            if not cmd.deadman:
                return   # a release of a base that is not driving: nothing to do
            raise CommandRejected("wrong_mode", f"velocity needs mode 'velocity' (mode is {self.mode!r}, "
                                                f"base {self.base.state.value})")
        if not cmd.deadman or not cmd.velocity.any():
            self.counts["released"] += 1
            self._halt()
            return
        self.counts["velocity"] += 1
        self.target[:] = cmd.velocity
        self.deadline = received + cmd.ttl

    def _drive(self) -> None:
        """Renew the base's command while the sample is valid; hold once its ttl has passed."""
        if self.deadline == -math.inf:
            return
        if self.base.state is not BaseState.RUNNING or self.mode != "velocity" or self.fleet_refusal() is not None:
            self._halt()   # (a lost lease stops the base at the next cycle's poll: belt and braces)
            return
        if self.clock.now() > self.deadline:
            self.counts["expired"] += 1
            self._halt()
            return
        self.base.command(self.target, self.base.limits.command_ttl)

    def _hold(self) -> None:
        if self.base.state is BaseState.RUNNING:
            self.base.hold()

    def _halt(self) -> None:
        self.deadline = -math.inf
        self.target[:] = 0.0
        if self.base.state is BaseState.RUNNING:
            self.base.hold()

    def _idle(self, reason: str, detail: str) -> None:
        """Mode ``idle``, no target. A velocity sample still waiting in the mailbox (it came in the same
        cycle as what idles the base) is refused with ``reason``: the bridge counted it accepted, so its
        sender is told it did not drive (a release or a zero sample did what it asked: no answer)."""
        self.mode = "idle"
        sample, self._sample = self._sample, None
        if sample is not None and sample[0].deadman and sample[0].velocity.any():
            self.counts["refused"] += 1
            env = sample[0].envelope
            self._acks.append(Ack(env.seq, env.client, "velocity", False, reason, detail))
        self.deadline = -math.inf
        self.target[:] = 0.0

    def group_hold(self, detail: str) -> None:
        """An arm holds every arm: the base (stopped by the group already) drops to ``idle``, told why."""
        self._idle("group_hold", detail)
        self.note_error("group_hold", detail)

    def cycle_end(self) -> bool:
        """After ``base.send()``: a latch of the base's own drops the mode, the snapshot, the acks;
        False once the shutdown has brought the base to rest (or 2 s after it began)."""
        latch = self.base.latch
        if latch is not None and self.mode != "idle":
            self._idle(latch.kind, f"the base stopped in the same cycle ({latch.detail})")
            if latch.kind not in QUIET_STOPS:
                self.note_error(latch.kind, latch.detail)
        self.cycle += 1
        self.snapshot = self._make_snapshot()
        cb = self.on_result
        while self._acks:
            ack = self._acks.popleft()
            if cb is not None:
                try:
                    cb(ack)
                except Exception:   # an ack must never stop the loop
                    log.exception("could not hand on a base ack")
        if self.port is not None:
            self.port.flush()
        if not self.stopping:
            return True
        return self.base.state is not BaseState.STOPPED and self.clock.now() < (self.stop_at or 0.0) + 2.0

    def _answer(self, cmd: Any, name: str) -> None:
        if cmd is None:
            return
        env = cmd.envelope
        self._acks.append(Ack(env.seq, env.client, name, True))

    def _refuse(self, name: str, cmd: Any, exc: CommandRejected) -> None:
        self.note_error(exc.reason, f"cmd/{name}: {exc.detail}")
        env = cmd.envelope
        self._acks.append(Ack(env.seq, env.client, name, False, exc.reason, exc.detail))

    def _make_snapshot(self) -> dict[str, Any]:
        base = self.base
        last = base.events[-1] if base.events else None
        latch = base.latch
        return {
            "state": base.state.value, "mode": self.mode, "estop": self.estop_latched,
            "wheels": {"velocity": _finite(base.feedback.velocity), "command": _finite(base.velocity_command),
                       "target": _finite(self.target), "max_velocity": _finite(base.limits.max_velocity),
                       "max_acceleration": _finite(base.limits.max_acceleration),
                       "command_ttl": base.limits.command_ttl},
            "latch": None if latch is None else {"kind": latch.kind, "detail": latch.detail},
            "last_error": None if self.last_error is None else asdict(self.last_error),
            "last_event": None if last is None else {"kind": last.kind, "state": last.state.value,
                                                     "detail": last.detail},
            "counts": dict(self.counts), "implausible": base.implausible, "cycles": self.cycle,
            "group": self.group_status, "fleet": None if self.fleet is None else self.fleet.state.value,
        }


def base_status_payload(snap: dict[str, Any] | None, base_id: str, *, online: bool, ts: float,
                        bridge: dict[str, Any] | None = None, session: str | None = None,
                        fleet: dict[str, Any] | None = None) -> bytes:
    """The base's retained ``state/status``: ``kind`` "base", online/offline, and online the runner's
    snapshot (state, mode, e-stop, ``base`` (wheel velocities measured, commanded and asked [rad/s],
    its limits), latch, last error and event, counts, ``group``, ``fleet``: the lease gate's object
    (:meth:`~hebictl.teleop.lease.LeaseGate.status`) as an arm's, absent without a fleet); offline
    only the last event and error, as an arm's."""
    body: dict[str, Any] = {"ts": ts, "arm_id": base_id, "kind": "base", "status": "online" if online else "offline"}
    if session is not None:
        body["session"] = session
    if snap is not None:
        if online:
            body.update({k: v for k, v in snap.items() if k != "wheels"})
            body["base"] = snap["wheels"]
            if snap.get("group") is None:
                body.pop("group", None)
            body.pop("fleet", None)
            if fleet is not None:
                body["fleet"] = fleet
        else:
            body.update({"state": "offline", "last_error": snap["last_error"], "last_event": snap["last_event"],
                         "cycles": snap["cycles"]})
    elif not online:
        body["state"] = "offline"
    if bridge is not None:
        body["bridge"] = bridge
    return dumps(body)


class BasePort(BridgePort):
    """The loop's end of the link to the base's bridge process (``--bridge process``): an arm's
    :class:`~hebictl.teleop.bridge_port.BridgePort` (read inside the cycle, priority first; the silence
    rule; a dead or wedged bridge process is a lost link: the base holds), with the base's snapshot."""

    def flush(self) -> None:
        acks = self._acks
        if self.lost.is_set():
            acks.clear()
            return
        try:
            snap: Any = self.runner.snapshot
            key = (snap["state"], snap["mode"], snap["estop"], str(snap["latch"]), str(snap["last_error"]),
                   str(snap.get("group")), snap.get("fleet"))
            now = self.runner.clock.now()
            due = acks or key != self._key or now >= self._next_snapshot
            fleet = self.runner.fleet
            if due and self.commands.send(("snapshot", snap, None if fleet is None else fleet.status(now))):
                self._key = key
                self._next_snapshot = now + self.state_period
            for ack in acks:
                self.commands.send(("ack", ack))
        except Exception:   # never let the link take the loop down
            log.exception("could not send to the base's bridge process")
        finally:
            acks.clear()


class BaseRunnerProxy(RunnerProxy):
    """The base's runner as its bridge process sees it: the snapshot (a dict) the loop sent last, and
    what the bridge hands over (velocity samples as an arm's jog samples; with ``fleet``, the fleet's
    messages on the priority channel and its status with each snapshot, as an arm's)."""

    def __init__(self, priority: Any, commands: Any, snapshot: dict[str, Any], *, fleet: bool = False) -> None:
        super().__init__(priority, commands, cast(Any, None), cast(Any, snapshot), max_goal_duration=0.0, fleet=fleet)

    @property
    def mode(self) -> str:
        return str(cast(Any, self.snapshot)["mode"])

    @property
    def estop_latched(self) -> bool:
        return bool(cast(Any, self.snapshot)["estop"])

    def offer_velocity(self, command: BaseVelocityCommand, received: float) -> None:
        self.commands.put(("jog", command, received))
