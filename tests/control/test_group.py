"""ArmGroup: three different bundled arms on the sim in one loop (one SimClock, 200 Hz): a fault or
e-stop of any holds all, with one group event naming the arm and its cause; nothing resumes by itself."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.group import ArmGroup
from hebictl.control.safety import ArmState
from hebictl.hardware import SimClock
from tests._support.paths import REPO_ROOT

pytest.importorskip("mujoco")

CONFIGS = ("x-series-6dof", "x-series-5dof", "r-series-6dof")


def three_arms() -> tuple[ArmGroup, SimClock, dict[str, np.ndarray]]:
    clock = SimClock()
    arms, homes = {}, {}
    for name in CONFIGS:
        cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
        homes[name] = np.array(cfg.user_data["home_position"], dtype=float)
        arms[name] = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=homes[name])
        for p in arms[name].plugins:
            p.enabled_ratio = 1.0 if p.enabled else 0.0
    group = ArmGroup(arms)
    for _ in range(80):
        group.update()
        group.send()
    return group, clock, homes


def cycle(group: ArmGroup, n: int) -> list:
    events = []
    for _ in range(n):
        group.update()
        ev = group.supervise()
        if ev is not None:
            events.append(ev)
        group.send()
    return events


def move_all(group: ArmGroup, homes: dict[str, np.ndarray]) -> None:
    for name, arm in group.arms.items():
        target = homes[name].copy()
        target[0] += 0.6
        arm.set_goal(Goal(arm.dof).add_waypoint(t=1.5, position=target))


@pytest.mark.parametrize("culprit", CONFIGS)
def test_a_closed_backend_stops_every_arm_with_one_event(culprit):
    group, clock, homes = three_arms()
    move_all(group, homes)
    assert cycle(group, 100) == []
    t0 = clock.now()
    group.arms[culprit].backend.close()
    events = cycle(group, 200)
    assert len(events) == 1 and len([e for e in group.events if e.kind == "fault"]) == 1
    ev = events[0]
    print(f"{culprit} closed: group event after {ev.time - t0:.3f} s: {ev.arm}: {ev.detail}; "
          f"states {[a.state.value for a in group.arms.values()]}")
    assert ev.arm == culprit and "closed" in ev.detail and ev.time - t0 <= 0.005 + 1e-9
    for name, arm in group.arms.items():
        assert arm.state is ArmState.STOPPED
        if name != culprit:
            assert arm.latch is not None and culprit in arm.latch.detail
            assert float(np.max(np.abs(arm.backend.true_state()[1]))) < 0.01   # braked to a standstill


def test_a_monitor_hold_on_one_arm_stops_all_and_clear_resumes_nothing():
    group, clock, homes = three_arms()
    move_all(group, homes)
    cycle(group, 60)
    group.arms["x-series-5dof"].hold(detail="tracking error (a stand-in for a monitor's hold)")
    events = cycle(group, 100)
    assert [e.arm for e in events] == ["x-series-5dof"] and "tracking error" in events[0].detail
    assert [a.state for n, a in group.arms.items() if n != "x-series-5dof"] == [ArmState.STOPPED] * 2
    assert group.clear()
    held = {n: a.backend.true_state()[0].copy() for n, a in group.arms.items()}
    cycle(group, 200)
    drift = max(float(np.max(np.abs(a.backend.true_state()[0] - held[n]))) for n, a in group.arms.items())
    print(f"after clear: every arm running={[a.state.value for a in group.arms.values()]}, moved at most "
          f"{drift * 1e3:.2f} mrad in 1 s (no goal resumed)")
    assert all(a.state is ArmState.RUNNING for a in group.arms.values()) and drift < 0.005


def test_an_operator_group_estop_and_a_held_arm_of_the_owner_is_no_fault():
    group, clock, homes = three_arms()
    group.hold("r-series-6dof", "parked by the application")
    assert cycle(group, 20) == []                       # a hold the owner asked for is not a fault
    ev = group.stop_all("operator pressed the group e-stop")
    assert ev.kind == "estop" and all(a.state is ArmState.STOPPED for a in group.arms.values())
    assert cycle(group, 20) == []                       # tripped once: no second event
