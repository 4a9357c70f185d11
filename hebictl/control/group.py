"""Several arms in one loop under one supervisor: a fault, stop or e-stop of any arm holds them all.

Each arm keeps its own model, limits, monitors and safety (the Arm's own supervisor decides what a
fault does to that arm). :class:`ArmGroup` adds the rule across arms: once per cycle, after every
arm's ``update()``, the first arm found STOPPED (a latched stop: e-stop, hardware error, M-stop, a
monitor's stop) or in a HOLD the group did not ask for (a monitor's hold, lost feedback) trips the
group: every other arm gets a latched stop whose detail names that arm and its cause, and the group
records **one** :class:`GroupEvent`. Nothing resumes by itself: :meth:`ArmGroup.clear` (an
operator's act) clears every arm, which then holds where it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hebictl.collision.attach import world_of
from hebictl.control.safety import ArmState, EventKind

if TYPE_CHECKING:
    from hebictl.control.arm import Arm
    from hebictl.control.base import VelocityBase


@dataclass(frozen=True)
class GroupEvent:
    """One thing the group (or a controller built on it) did: ``time`` [s, clock], ``kind``, ``arm``."""

    time: float
    kind: str
    arm: str
    detail: str


class ArmGroup:
    """Arms by name, updated, supervised and sent together (module doc)."""

    def __init__(self, arms: Mapping[str, Arm], base: VelocityBase | None = None) -> None:
        if not arms:
            raise ValueError("an arm group needs at least one arm")
        if base is not None and base.name in arms:
            raise ValueError(f"the base's name {base.name!r} is an arm's too")
        self.arms = dict(arms)
        #: the mobile base (module doc), or None
        self.base = base
        self.events: list[GroupEvent] = []
        #: the event that tripped the group (None: running)
        self.tripped: GroupEvent | None = None
        #: arms the group's owner put in HOLD on purpose (a hold not listed is a fault)
        self.own_holds: set[str] = set()
        self.fresh = dict.fromkeys(self.arms, False)

    @property
    def clock_now(self) -> float:
        return next(iter(self.arms.values())).clock.now()

    def update(self) -> None:
        """Every arm's ``update()``; :attr:`fresh` says which has had feedback at least once."""
        for name in self.arms:
            self.update_one(name)
        if self.base is not None:
            self.base.update()

    def update_one(self, name: str) -> None:
        """One arm's ``update()`` (an owner that feeds one arm from another's feedback of the same cycle)."""
        self.fresh[name] = self.arms[name].update() or self.fresh[name]

    def send(self) -> None:
        for arm in self.arms.values():
            arm.send()
        if self.base is not None:
            self.base.send()

    def hold(self, name: str, detail: str) -> None:
        """Hold one arm on purpose (not a fault)."""
        arm = self.arms[name]
        if arm.state is ArmState.RUNNING:
            self.own_holds.add(name)
            arm.hold(detail=detail)

    def running(self, name: str) -> None:
        """The owner gave ``name`` a goal: a later hold of it is a fault again."""
        self.own_holds.discard(name)

    def supervise(self) -> GroupEvent | None:
        """The event that trips the group this cycle (every other arm then stopped), else None."""
        if self.tripped is not None:
            return None
        for name, arm in self.arms.items():
            cause = self.fault_of(name, arm)
            if cause is not None:
                return self._trip(name, cause)
        base = self.base
        if base is not None and base.latch is not None:
            return self._trip(base.name, f"{base.latch.kind}: {base.latch.detail}")
        return None

    def fault_of(self, name: str, arm: Arm) -> str | None:
        if arm.state is ArmState.STOPPED:
            latch = arm.latch
            return f"{latch.cause}: {latch.detail}" if latch is not None else "stopped"
        if arm.state is ArmState.HOLD and name not in self.own_holds:
            last = arm.events.events[-1] if arm.events.events else None
            return f"{last.kind.value}: {last.detail}" if last is not None else "hold"
        return None

    def stop_all(self, detail: str = "group e-stop") -> GroupEvent:
        """An operator's e-stop of the whole group."""
        for arm in self.arms.values():
            if arm.state is not ArmState.STOPPED:
                arm.stop(EventKind.ESTOP, detail)
        if self.base is not None:
            self.base.stop("estop", detail)
        return self.note("estop", "", detail, trip=True)

    def _trip(self, culprit: str, cause: str) -> GroupEvent:
        for name, arm in self.arms.items():
            if name != culprit and arm.state is not ArmState.STOPPED:
                arm.stop(EventKind.ESTOP, f"arm group: {culprit} stopped ({cause}); holding every arm")
        if self.base is not None:
            self.base.stop("group", f"arm group: {culprit} stopped ({cause}); stopping the base")
        return self.note("fault", culprit, cause, trip=True)

    def clear(self, detail: str = "arm group: cleared by the operator; holding where the arm is") -> bool:
        """Clear every arm (refused while an M-stop is pressed); they hold where they are."""
        pressed = [n for n, a in self.arms.items() if a.m_stopped]
        if pressed:
            self.note("clear_refused", pressed[0], "an M-stop is still pressed")
            return False
        if self.base is not None and not self.base.clear():
            self.note("clear_refused", self.base.name, "the base has no fresh feedback")
            return False
        for arm in self.arms.values():
            arm.clear_fault(detail)
        self.own_holds.clear()
        self.tripped = None
        self.note("cleared", "", "every arm cleared: holding")
        return True

    def note(self, kind: str, arm: str, detail: str, *, trip: bool = False) -> GroupEvent:
        """Record a group event (``trip``: it is the one that stopped the group)."""
        ev = GroupEvent(self.clock_now, kind, arm, detail)
        self.events.append(ev)
        if trip:
            self.tripped = ev
        return ev


class ClosingGuard:
    """Which moving arm closes in on another: each arm's collision world holds the other arms at their
    measured poses (:mod:`hebictl.wiring.multi`); an arm within its slow-down threshold beyond the arm
    clearance of another, and closer than the cycle before, is to be held. ``hebictl run`` holds goals
    and parks this way, ``hebictl teleop`` parks; ``enabled`` False: never (tests of what it prevents)."""

    def __init__(self, arms: Mapping[str, Arm], enabled: bool = True) -> None:
        self.arms = arms
        self.enabled = enabled
        self.gaps: dict[str, float] = {}   # [m] each watched arm's last distance beyond clearance to another arm

    def forget(self, name: str) -> None:
        """``name`` no longer moves: its next approach starts afresh."""
        self.gaps.pop(name, None)

    def closing(self, name: str, what: str) -> str | None:
        """Why moving arm ``name`` (in its ``what``: home, goal, park) is to be held: it is within the
        slow-down threshold beyond the arm clearance of another arm (at that arm's measured pose) and
        closer than the cycle before; None otherwise (or without the guard or other arms)."""
        world = world_of(self.arms[name].model)
        if not self.enabled or world is None or not world.others:
            self.gaps.pop(name, None)
            return None
        near = world.other_arms_distance(self.arms[name].last_feedback.position)
        gap = near.distance if near is not None else math.inf
        before = self.gaps.get(name, math.inf)
        self.gaps[name] = gap
        if near is None or gap >= world.workspace.slowdown_workspace or gap >= before:
            return None
        return (f"{what} held: {near.a} and {near.b} {near.gap * 1e3:.1f} mm apart and closing "
                f"(arm clearance plus {world.workspace.slowdown_workspace * 1e3:.0f} mm)")
