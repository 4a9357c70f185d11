"""Several teleop arms in one loop under one supervisor (``hebictl teleop ARMS.multi.yaml``).

Each arm keeps its own :class:`~hebictl.teleop.runner.ArmRunner` (its commands, e-stop, jog, fleet
lease, acks and status, on its own MQTT topics), but the runners do not run threads of their own:
:class:`RunnerGroup` steps them all in **one** :class:`~hebictl.control.loop.FixedRateLoop`, phase
by phase (every arm's e-stop, lost link and fleet hold, :meth:`ArmRunner.cycle_begin`; then every
arm's commands; then every arm's ``update()``; then the cycle's supervision across the arms; then
every arm's ``send()``), so the arms share one cycle, as ``hebictl run`` on a multi-arm config runs
them, and no arm's command in a cycle comes before another arm's e-stop in it.

The rule across the arms is :class:`~hebictl.control.group.ArmGroup`'s: the first arm found holding
for a cause of its own (a latched stop: its e-stop, a lost link or lease, a hardware error, an
M-stop, a monitor's stop; or a monitor's hold) trips the group: every other arm gets the group's
latched stop (it brakes and holds), its teleop mode drops to ``idle`` (last error ``group_hold``
naming the arm and the cause), the group records one event, and every arm's status carries a
``group`` object naming that arm (``by``) and its ``cause``. A plain hold the operator asked for
(``cmd/stop``, a released jog, mode ``idle``) holds only that arm: it is not a fault.

Nothing resumes by itself. Each arm leaves the group's hold with a command of its own (``cmd/mode``,
after releasing its e-stop where it has one, as for one arm), and a mode other than ``idle`` is
refused (``group_hold``) on any arm while another arm still holds for its own cause: no arm moves
while the cause of the hold is there. Once no arm holds for its own cause the group is ready to trip
again; arms the group stopped stay stopped until their own command.

The shutdown (Ctrl-C, SIGTERM) is one operator stop of every arm (one group event ``stop``); during a
SIGTERM's parks the parks are watched across the arms as ``hebictl run`` watches them
(:func:`~hebictl.control.park.watch_parks`: an arm's safety stop during its park ends the other parks
in the fall-back hold; a park closing in on another arm is held short, :class:`ClosingGuard`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from hebictl.control.group import ArmGroup, ClosingGuard, GroupEvent
from hebictl.control.loop import FixedRateLoop, LoopStats
from hebictl.control.park import watch_parks
from hebictl.control.realtime import RealtimeGrant, RealtimeRequest
from hebictl.control.safety import ArmState, EventKind
from hebictl.errors import CommandRejected
from hebictl.teleop.base import QUIET_STOPS, BaseRunner
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.events import ArmFault
from hebictl.teleop.runner import OWN_EVENT_KINDS, ArmRunner, join_closing
from hebictl.teleop.schema import ModeCommand, TeleopCommand

__all__ = ["GROUP_HOLD", "RunnerGroup", "TeleopArmGroup"]

#: the last error (and ack reason) of an arm held, or refused, because another arm holds them all
GROUP_HOLD = "group_hold"


class TeleopArmGroup(ArmGroup):
    """:class:`ArmGroup` with teleop's idea of a fault: an arm the group itself stopped is not one
    (until its e-stop is engaged), nor is a hold its runner made (``cmd/stop``, mode ``idle``, a
    released jog: their event kinds are :data:`~hebictl.teleop.runner.OWN_EVENT_KINDS`)."""

    def __init__(self, runners: Mapping[str, ArmRunner], base: tuple[str, BaseRunner] | None = None) -> None:
        super().__init__({name: r.arm for name, r in runners.items()}, None if base is None else base[1].base)
        self.runners = dict(runners)
        #: the mobile base's id (its topic level) and runner, or None
        self.base_id: str | None = None if base is None else base[0]
        self.base_runner: BaseRunner | None = None if base is None else base[1]
        #: arms the group stopped (their latched stop is the group's), until each is cleared
        self.held: set[str] = set()
        #: the group's trip found the base latched by a cause of its own in the same cycle (e.g. the
        #: fleet e-stop that also tripped an arm): it counts as stopped by the group, as a held arm does,
        #: until its latch is cleared (else the arm and the base each refuse the other's clearing mode)
        self.base_held = False

    def base_fault(self) -> str | None:
        """The base's cause of its own: its e-stop engaged, or a latched stop that is neither the
        group's nor the shutdown's (a stale command, lost or NaN feedback, a hardware error); None
        otherwise (running, holding, or stopped by the group)."""
        runner = self.base_runner
        if runner is None:
            return None
        if runner.estop_latched:
            return "e-stop engaged"
        if self.base_held:
            return None
        latch = runner.base.latch
        if latch is None or latch.kind in QUIET_STOPS:
            return None
        return f"{latch.kind}: {latch.detail}"

    def supervise(self) -> GroupEvent | None:
        """:meth:`ArmGroup.supervise` with teleop's faults, the base named by its id."""
        if self.tripped is not None:
            return None
        for name, arm in self.arms.items():
            cause = self.fault_of(name, arm)
            if cause is not None:
                return self._trip(name, cause)
        cause = self.base_fault()
        if cause is not None and self.base_id is not None:
            return self._trip(self.base_id, cause)
        return None

    def fault_of(self, name: str, arm: Any) -> str | None:
        runner = self.runners[name]
        if name in self.held:   # stopped by the group: a fault again only if its own e-stop is engaged on it
            return "e-stop engaged" if runner.estop_latched else None
        if arm.state is ArmState.HOLD:
            last = arm.events.last
            if last is None or str(last.kind) in OWN_EVENT_KINDS:
                return None   # cmd/stop, mode idle, a released jog: the operator's plain hold
        cause = super().fault_of(name, arm)
        return "e-stop engaged" if cause is None and runner.estop_latched else cause

    def stop_others(self, culprit: str) -> None:
        """After a trip: the arms the group stopped are the group's to clear (:attr:`held`)."""
        for name, arm in self.arms.items():
            if name != culprit and arm.state is ArmState.STOPPED:
                self.held.add(name)
        if self.base_runner is not None and culprit != self.base_id and self.base_runner.base.latch is not None:
            self.base_held = True


class RunnerGroup:
    """The runners of ``hebictl teleop ARMS.multi.yaml`` by arm id, in one loop (module doc).

    ``rate_hz`` [Hz] of the loop; ``observe`` is called every cycle after the arms' updates (the
    multi-arm wiring's :meth:`~hebictl.wiring.multi.MultiArms.observe`: each arm's collision world
    sees the others where they are); ``realtime``/``on_grant`` as for one runner. The thread-safe
    lifecycle is a runner's: :meth:`start`, :meth:`close`, :meth:`end_hold`, :attr:`running`."""

    def __init__(self, runners: Mapping[str, ArmRunner], *, rate_hz: float,
                 observe: Callable[[], None] | None = None, realtime: RealtimeRequest | None = None,
                 on_grant: Callable[[RealtimeGrant], None] | None = None, clock: TeleopClock = SYSTEM_CLOCK,
                 base: tuple[str, BaseRunner] | None = None) -> None:
        if not runners:
            raise ValueError("a runner group needs at least one runner")
        self.runners = dict(runners)
        if base is not None and base[0] in self.runners:
            raise ValueError(f"the base's id {base[0]!r} is an arm's too")
        self.group = TeleopArmGroup(self.runners, base)
        #: the mobile base's id and runner (``base``), or None
        self.base_id: str | None = None if base is None else base[0]
        self.base_runner: BaseRunner | None = None if base is None else base[1]
        #: during a SIGTERM's parks: a park closing in on another arm is held short (as ``hebictl run``'s)
        self.closing = ClosingGuard(self.group.arms)
        self.observe = observe
        self.teleop_clock = clock
        self.clock = next(iter(self.runners.values())).clock
        self.stopping = False
        #: the arms a SIGTERM may park (:meth:`parkable`), worked out every cycle
        self.may_park: frozenset[str] = frozenset(self.runners)
        self._shown: dict[str, Any] | None = None
        self.loop = FixedRateLoop(self.step, rate_hz, self.clock, report=self._report, realtime=realtime,
                                  on_grant=on_grant)
        for arm_id, runner in self.runners.items():
            runner.loop = self.loop   # the status's realtime object is this loop's grant
            runner.admit = self._admission(arm_id)
        if self.base_runner is not None:
            self.base_runner.admit = self._admission(self.base_id or "")
        self._publish_status()
        self._thread: threading.Thread | None = None
        #: the session's multi-arm recorder (:meth:`record_to`), or None
        self.recorder: Any = None
        self._base_wheels: tuple[str, Callable[[Any], Mapping[str, Any]]] | None = None

    def record_to(self, recorder: Any, *,
                  base_wheels: tuple[str, Callable[[Any], Mapping[str, Any]]] | None = None) -> None:
        """Record the session to ``recorder`` (a multi-arm :class:`~hebictl.recording.writer.McapRecorder`
        whose arms are named by arm id, with this group's :attr:`group` for ``/group/events``): each
        runner records its commands and acks through its arm's
        :class:`~hebictl.recording.writer.LaneRecorder`; the loop records each cycle once, with the
        events of every phase in order (:meth:`step`). ``base_wheels``: the mobile base's channel (one of
        the recorder's extra topics) and what to publish on it from the base every cycle, after the
        cycle's sample (``hebictl teleop`` gives ``hebictl run --record``'s ``/NAME/wheels``). Before
        :meth:`start`."""
        if self._thread is not None:
            raise RuntimeError("record_to before start")
        self._base_wheels = base_wheels if self.base_runner is not None else None
        for arm_id, runner in self.runners.items():
            runner.recorder = recorder.lane(arm_id)
        self.recorder = recorder

    # ------------------------------------------------------------------ the cycle
    def step(self) -> bool:
        """One cycle of every arm: inputs, updates, supervision, sends (module doc). With a recorder
        (:meth:`record_to`) the events of each phase are handed to it after the phase, and the cycle
        (every arm's feedback and sent command) once after the sends."""
        runners = self.runners.values()
        rec = self.recorder
        if rec is not None:
            rec.cycle_start()
        base = self.base_runner
        for runner in runners:
            runner.cycle_begin()   # every arm's e-stop, lost link, fleet hold, shutdown ...
        if base is not None:
            base.cycle_begin()     # ... and the base's ...
        if rec is not None:
            rec.phase_done()
        for runner in runners:
            runner.cycle_commands()   # ... before any arm's command
        if base is not None:
            base.cycle_commands()
        if rec is not None:
            rec.phase_done()
        for runner in runners:
            runner.cycle_update()
        if base is not None:
            base.base.update()
        if self.observe is not None:
            self.observe()
        if rec is not None:
            rec.phase_done()
        self.supervise()
        if rec is not None:
            rec.phase_done(group_first=True)   # the group trips, then stops the other arms
        going = [runner.cycle_end() for runner in runners]
        if base is not None:
            base.base.send()
            going.append(base.cycle_end())
        if rec is not None:
            rec.sample()
            if self._base_wheels is not None and base is not None:
                topic, message = self._base_wheels
                rec.publish(topic, message(base.base))
        return any(going)

    def supervise(self) -> None:
        """Trip the group on an arm's own hold (every other arm then stopped, idle, told why); clear
        the trip once no arm holds for its own cause; and publish each arm's ``group`` object."""
        g = self.group
        for name in list(g.held):
            if g.arms[name].state is not ArmState.STOPPED:
                g.held.discard(name)   # its operator cleared it
        if g.base_held and (self.base_runner is None or self.base_runner.base.latch is None):
            g.base_held = False
        if self.stopping:   # (may_park as the signal found it)
            parks = {name: r.park for name, r in self.runners.items() if r.park is not None}
            watch_parks(parks, g.note, lambda name: self.closing.closing(name, "park"))
            self._publish_status()
            return
        if g.tripped is not None and not self.culprits():
            g.tripped = None
            g.note("cleared", "", "no arm holds for a cause of its own: the group may trip again")
        event = g.supervise()
        if event is not None:
            g.stop_others(event.arm)
            what = "the base" if event.arm == self.base_id else f"arm {event.arm}"
            for name, runner in self.runners.items():
                if name != event.arm:
                    runner.dispatch(ArmFault(GROUP_HOLD, f"{what} holds every arm: {event.detail}"))
            if self.base_runner is not None and event.arm != self.base_id:
                self.base_runner.group_hold(f"{what} holds every arm: {event.detail}")
        self._publish_status()
        self.may_park = self._may_park()

    def culprits(self) -> dict[str, str]:
        """Arms holding for a cause of their own (not the group's stop, not an operator's plain hold),
        with that cause."""
        g = self.group
        found = {name: cause for name, arm in g.arms.items() if (cause := g.fault_of(name, arm)) is not None}
        base_cause = g.base_fault()
        if base_cause is not None and self.base_id is not None:
            found[self.base_id] = base_cause
        return found

    def parkable(self) -> set[str]:
        """Arms a SIGTERM may park: none while an arm holds for a cause of its own (as ``hebictl run``
        parks no arm after a fault); else every arm the group does not hold. Any thread (a signal
        handler): the loop thread works it out every cycle."""
        return set(self.may_park)

    def _may_park(self) -> frozenset[str]:
        if self.culprits():
            return frozenset()
        return frozenset(self.runners) - frozenset(self.group.held)

    def _admission(self, arm_id: str) -> Callable[[TeleopCommand], None]:
        def admit(cmd: TeleopCommand) -> None:
            """A mode that may move the arm waits until no other arm holds for a cause of its own."""
            if not isinstance(cmd, ModeCommand) or cmd.mode == "idle":
                return
            others = {n: c for n, c in self.culprits().items() if n != arm_id}
            if others:
                name, cause = next(iter(others.items()))
                what = f"the base ({name})" if name == self.base_id else f"arm {name}"
                raise CommandRejected(GROUP_HOLD, f"{what} holds every arm ({cause}): clear it first "
                                                  "(release its e-stop, set its mode)")
        return admit

    def _publish_status(self) -> None:
        """Each arm's status ``group`` object (a new dict only when it changes: snapshots share it)."""
        trip = self.group.tripped
        members = list(self.runners) + ([] if self.base_id is None else [self.base_id])
        shown = {"arms": members, "held": trip is not None,
                 "by": None if trip is None else (trip.arm or None), "cause": None if trip is None else trip.detail,
                 "time": None if trip is None else self.teleop_clock.wall()}
        if self.base_id is not None:
            shown["base"] = self.base_id
        if self._shown is not None and {k: v for k, v in self._shown.items() if k != "time"} == \
                {k: v for k, v in shown.items() if k != "time"}:
            return
        self._shown = shown
        for runner in self.runners.values():
            runner.group_status = shown
        if self.base_runner is not None:
            self.base_runner.group_status = shown

    def _report(self, stats: LoopStats) -> None:
        for runner in self.runners.values():
            runner.report_stats(stats)
        if self.recorder is not None:
            self.recorder.loop_stats(stats)

    # ------------------------------------------------------------------ lifecycle (a runner's)
    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("runner group already started")
        self._thread = threading.Thread(target=self.loop.run, name="hebictl-arms", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def begin_shutdown(self, reason: EventKind | str = EventKind.TELEOP_SHUTDOWN) -> None:
        """Every arm brakes and holds at the next cycle start (thread-safe): an operator's stop of
        every arm, one group event (not a fault of the first arm to stop)."""
        self._stop_note(reason)
        for runner in self.runners.values():
            runner.begin_shutdown(reason)
        if self.base_runner is not None:
            self.base_runner.begin_shutdown(EventKind(reason).value)

    def close(self, timeout: float = 5.0, *, reason: EventKind | str = EventKind.TELEOP_SHUTDOWN,
              hold: float | None = None) -> None:
        """Every arm's :meth:`ArmRunner.close` in one: each brakes and holds (or parks) for its hold,
        then the loop ends once the last arm's hold has."""
        self._stop_note(reason)
        for runner in self.runners.values():
            runner.request_close(reason, hold)
        if self.base_runner is not None:
            self.base_runner.begin_shutdown(EventKind(reason).value)
        if self._thread is None:
            return

        def closing() -> float:
            return max((r.closing_at or 0.0) for r in self.runners.values())

        join_closing(self._thread, self.loop, closing, self.clock, timeout)

    def end_hold(self) -> None:
        for runner in self.runners.values():
            runner.end_hold()

    def _stop_note(self, reason: EventKind | str) -> None:
        if not self.stopping:
            self.stopping = True
            self.group.tripped = self.group.note("stop", "", f"{EventKind(reason).value}: every arm brakes and holds",
                                                 trip=True)
