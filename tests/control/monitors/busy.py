"""A busy robot PC in simulated time: late cycles, stalls between update() and send(), late
feedback, and random fastest goals with stops, for the monitors' tests (issue 29).

Everything runs on a SimClock with a seeded generator, so a run is the same every time. The
patterns follow what the issue measured beside two busy processes on a 2-core machine (74-90 %
of cycles late, p99 period 39-158 ms): :func:`busy_delays` makes 60 % of cycles 0-12 ms late,
30 % 12-40 ms, 8 % 40-100 ms, 1 % 100-200 ms, and stalls 1 % between update() and send() for
20-100 ms; :func:`late_delays` an on-time loop with a 20-200 ms late cycle about every 0.3 s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.safety import ArmState, EventKind
from hebictl.errors import CommandRejected
from hebictl.hardware import SimClock

#: (before update, between update and send) [s] for one cycle
Delays = Callable[[np.random.Generator], tuple[float, float]]


def busy_delays(rng: np.random.Generator) -> tuple[float, float]:
    u = rng.random()
    if u < 0.6:
        return float(rng.uniform(0.0, 0.012)), 0.0
    if u < 0.9:
        return float(rng.uniform(0.012, 0.04)), 0.0
    if u < 0.98:
        return float(rng.uniform(0.04, 0.1)), 0.0
    if u < 0.99:
        return 0.0, float(rng.uniform(0.02, 0.1))
    return float(rng.uniform(0.1, 0.2)), 0.0


def late_delays(rng: np.random.Generator) -> tuple[float, float]:
    return (float(rng.uniform(0.02, 0.2)), 0.0) if rng.random() < 0.017 else (0.0, 0.0)


@dataclass
class BusyRun:
    """What a run saw: cycles, contact events, the largest residual / bound (per joint, while
    contact was armed), the events by kind."""

    cycles: int = 0
    contacts: list[str] = field(default_factory=list)
    max_ratio: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    late_cycles: int = 0


def random_goal(arm: Arm, home: np.ndarray, rng: np.random.Generator) -> bool:
    """Ask for a random fastest goal (untimed: retimed to the rated speed) within ±1.2 rad of home;
    up to 20 draws until one is admitted (the path check refuses some)."""
    lim = arm.limits
    for _ in range(20):
        q = home + rng.uniform(-1.0, 1.0, arm.dof) * np.minimum(1.2, (lim.position_max - lim.position_min) / 2)
        try:
            arm.set_goal(Goal(arm.dof).add_waypoint(position=np.clip(q, lim.position_min, lim.position_max)))
            return True
        except CommandRejected:
            continue
    return False


def run_busy(arm: Arm, clock: SimClock, home: np.ndarray, seconds: float, delays: Delays, seed: int, *,
             late_feedback: bool = True, stops: bool = True) -> BusyRun:
    """Random fastest goals for ``seconds`` of simulated time, each cycle delayed by ``delays``;
    with ``late_feedback``, episodes of 5-50 ms feedback delay (1 % of cycles start one, 0.05-1 s
    long); with ``stops``, a stop or a hold in 1 % of cycles mid-goal. A latched stop is cleared
    (and counted) so the run goes on."""
    rng = np.random.default_rng(seed)
    out = BusyRun()
    end = clock.now() + seconds
    nominal = 1.0 / arm.backend.feedback_frequency
    while clock.now() < end:
        if arm.state is ArmState.STOPPED:
            arm.clear_fault()
        if (arm.trajectory is None or arm.goal_progress >= 1.0) and arm.state is not ArmState.STOPPED \
                and rng.random() < 0.05:
            random_goal(arm, home, rng)
        if late_feedback and rng.random() < 0.01:
            arm.backend.faults.clear()
            arm.backend.faults.delay_feedback(float(rng.uniform(0.005, 0.05)), duration=float(rng.uniform(0.05, 1.0)))
        if stops and arm.trajectory is not None and arm.goal_progress < 0.8 and rng.random() < 0.01:
            arm.stop() if rng.random() < 0.5 else arm.hold()
        before, between = delays(rng)
        clock.advance(before)
        arm.update()
        clock.advance(between)
        arm.send()
        out.cycles += 1
        out.late_cycles += arm.monitors.clock.timing.late > 0.5 * nominal
        c = arm.monitors.contact
        if c.armed and arm.monitors.observer.valid:
            out.max_ratio = max(out.max_ratio, c.ratio)  # both checks: the residual and the re-baselined one
    for e in arm.events.events:
        out.kinds[e.kind.value] = out.kinds.get(e.kind.value, 0) + 1
    out.contacts = [e.detail for e in arm.events.events if e.kind is EventKind.CONTACT]
    return out
