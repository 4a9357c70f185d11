"""ArmGroup with a mobile base (a VelocityBase), on the mock and the sim in simulated time: an arm's
e-stop stops the base (it decelerates from max speed to rest and commands zero) with one group event
naming the arm; a fault of the base (lost feedback, a stale command) holds every arm with one event
naming the base; nothing resumes by itself, a clear leaves the base holding zero velocity. The
measured figures are printed (pytest -s)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.base import BaseState
from hebictl.control.group import ArmGroup
from hebictl.control.safety import ArmState, EventKind
from hebictl.hardware import SimClock
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.paths import CONFIGS_DIR

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
BACKENDS = ("mock", pytest.param("sim", marks=pytest.mark.skipif(importlib.util.find_spec("mujoco") is None,
                                                                  reason="needs MuJoCo")))


def started(backend: str):
    clock = SimClock()
    home = [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]
    multi = arms_from_multi_config(Arm, CONFIG, backend, clock=clock, initial_position=home)
    for arm in multi.arms.values():
        for p in arm.plugins:
            p.enabled_ratio = 1.0 if p.enabled else 0.0
    group = ArmGroup(multi.arms, multi.base)
    return multi, group, clock


def cycle(group: ArmGroup, velocity=None) -> list:
    group.update()
    ev = group.supervise()
    base = group.base
    assert base is not None
    if velocity is not None and base.state is BaseState.RUNNING and group.tripped is None:
        base.command(velocity)
    group.send()
    return [ev] if ev is not None else []


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_arms_estop_stops_the_base_from_max_speed_with_one_event_naming_the_arm(backend):
    multi, group, clock = started(backend)
    try:
        base = group.base
        assert base is not None
        vmax = base.limits.max_velocity
        events = []
        for _ in range(500):   # 2.5 s at 200 Hz: the base at full speed, the arm holding home
            events += cycle(group, vmax)
        assert events == [] and np.allclose(base.feedback.velocity, vmax, rtol=0.02)
        p0, t0 = base.feedback.position.copy(), clock.now()
        group.arms["arm"].stop(EventKind.ESTOP, "test: the arm's e-stop")
        while base.state is not BaseState.STOPPED or not base.still:
            assert clock.now() - t0 < 2.0
            events += cycle(group, vmax)   # the owner keeps asking: refused while tripped
        t_stop, travel = clock.now() - t0, base.feedback.position - p0
        print(f"\n[{backend}] the arm's e-stop: base from {vmax[0]:g} rad/s at rest after {t_stop * 1e3:.0f} ms, "
              f"wheel travel {travel.round(3)} rad (v^2/2a {vmax[0] ** 2 / (2 * base.limits.max_acceleration[0]):.3f});"
              f" group event: {events[0].kind} {events[0].arm}: {events[0].detail}")
        assert len(events) == 1 and events[0].kind == "fault" and events[0].arm == "arm"
        assert "estop" in events[0].detail and base.latch is not None and base.latch.kind == "group"
        assert t_stop <= vmax[0] / base.limits.max_acceleration[0] + 0.02   # 4 cycles
        for _ in range(100):   # nothing resumes by itself
            events += cycle(group, vmax)
        assert len(events) == 1 and not base.velocity_command.any() and base.state is BaseState.STOPPED
        assert group.clear()
        for _ in range(20):
            cycle(group)
        assert base.state is BaseState.RUNNING and not base.velocity_command.any()
        assert group.arms["arm"].state is not ArmState.STOPPED
    finally:
        multi.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fault_of_the_base_holds_every_arm_with_one_event_naming_the_base(backend):
    multi, group, clock = started(backend)
    try:
        base = group.base
        assert base is not None
        for _ in range(100):
            cycle(group, base.limits.max_velocity * 0.5)
        fault = base.backend.faults.drop_feedback(start=clock.now())   # type: ignore[attr-defined]
        events: list = []
        while not events:
            assert clock.now() - fault.start < 0.2
            events += cycle(group, base.limits.max_velocity * 0.5)
        print(f"\n[{backend}] the base's feedback dropped: group tripped after "
              f"{(events[0].time - fault.start) * 1e3:.1f} ms: {events[0].kind} {events[0].arm}: {events[0].detail}")
        assert events[0].arm == "base" and "feedback_lost" in events[0].detail
        arm = group.arms["arm"]
        assert arm.state is ArmState.STOPPED and arm.latch is not None and "base stopped" in arm.latch.detail
        for _ in range(50):
            events += cycle(group)
        assert len(events) == 1
        assert not group.clear()   # refused while the base has no feedback
    finally:
        multi.close()


def test_a_stale_base_command_trips_the_group():
    multi, group, clock = started("mock")
    try:
        base = group.base
        assert base is not None
        for _ in range(100):
            cycle(group, base.limits.max_velocity * 0.5)
        events: list = []
        for _ in range(100):   # the owner goes silent
            events += cycle(group)
        assert len(events) == 1 and events[0].arm == "base" and "command_stale" in events[0].detail
        assert group.arms["arm"].state is ArmState.STOPPED
    finally:
        multi.close()
