"""VelocityBase, a mobile base as a plain velocity group, in simulated time (SimClock) on the mock and
the sim: a stop from max speed takes max_velocity / max_acceleration and the wheels roll about
v^2 / 2a; a command not renewed within its ttl stops the base; lost and NaN feedback stop it; the ramp
starts from the measured velocity, never catches up after a late cycle, and ignores a lone transient
reading; nothing resumes by itself. The measured figures are printed (pytest -s)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.control.base import FEEDBACK_TIMEOUT_CYCLES, MAX_DT_CYCLES, BaseLimits, BaseState, VelocityBase
from hebictl.errors import CommandRejected
from hebictl.hardware import SimClock
from hebictl.hardware.base import Command, Feedback
from hebictl.multi_config import load_multi_arm_config
from hebictl.wiring.multi import open_base
from tests._support.paths import CONFIGS_DIR

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
RATE = 200.0
PERIOD = 1.0 / RATE
BACKENDS = ("mock", pytest.param("sim", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("mujoco") is None, reason="needs MuJoCo")))


def make(backend: str) -> tuple[VelocityBase, SimClock]:
    clock = SimClock()
    entry = load_multi_arm_config(CONFIG).base
    assert entry is not None
    return open_base(entry, backend, clock, RATE), clock


def cycle(base: VelocityBase, velocity: np.ndarray | None = None) -> None:
    base.update()
    if velocity is not None and base.state is BaseState.RUNNING:
        base.command(velocity)
    base.send()


def at_speed(base: VelocityBase, seconds: float = 2.5) -> np.ndarray:
    """Drive every wheel at max_velocity (the same on each: on the sim the chassis turns in place)."""
    vmax = base.limits.max_velocity.copy()
    for _ in range(round(seconds * RATE)):
        cycle(base, vmax)
    assert np.allclose(base.feedback.velocity, vmax, rtol=0.02), base.feedback.velocity
    return vmax


def until_still(base: VelocityBase, clock: SimClock, bound_s: float = 3.0) -> float:
    t0 = clock.now()
    while base.state is not BaseState.STOPPED or not base.still:
        assert clock.now() - t0 < bound_s, f"not at rest within {bound_s} s: {base.feedback.velocity}"
        cycle(base)
    return clock.now() - t0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stop_from_max_speed_ends_within_v_over_a_and_rolls_about_v2_over_2a(backend):
    base, clock = make(backend)
    vmax = at_speed(base)
    amax = base.limits.max_acceleration
    p0, v0 = base.feedback.position.copy(), base.feedback.velocity.copy()
    base.stop("stop", "test: an operator's stop")
    t_stop = until_still(base, clock)
    travel = base.feedback.position - p0
    ideal_t, ideal_travel = float(np.max(v0 / amax)), v0 ** 2 / (2 * amax)
    print(f"\n[{backend}] stop from {v0.round(3)} rad/s at {amax[0]:g} rad/s^2: commanding zero and measured at rest "
          f"after {t_stop * 1e3:.0f} ms (v/a {ideal_t * 1e3:.0f} ms); wheel travel {travel.round(3)} rad "
          f"(v^2/2a {ideal_travel.round(3)} rad)")
    assert [e.kind for e in base.events][-2:] == ["stop", "stopped"]
    assert t_stop <= ideal_t + 4 * PERIOD   # the last cycles: the wheels' loop settles within 1 % of rated speed
    # rolled at most the ideal plus two cycles at full speed (the ramp starts from the measured velocity)
    assert np.all(travel <= ideal_travel + vmax * 2 * PERIOD) and np.all(travel >= 0.5 * ideal_travel)
    for _ in range(40):   # latched: zero velocity commanded, whatever the owner asks
        cycle(base)
    assert not base.velocity_command.any() and base.state is BaseState.STOPPED
    with pytest.raises(CommandRejected, match="base_stopped"):
        base.command(vmax)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_not_renewed_within_its_ttl_is_a_fault_that_stops_the_base(backend):
    base, clock = make(backend)
    at_speed(base, 1.0)
    base.command(base.limits.max_velocity, ttl=0.1)
    t_last = clock.now()
    while base.latch is None:
        assert clock.now() - t_last < 0.5
        cycle(base)   # the owner goes silent
    noticed = base.latch.time - t_last
    t_stop = until_still(base, clock)
    print(f"\n[{backend}] a 0.1 s ttl expired: stale after {noticed * 1e3:.1f} ms, at rest {t_stop * 1e3:.0f} ms later")
    assert base.latch.kind == "command_stale" and 0.1 < noticed <= 0.1 + PERIOD + 1e-9
    assert t_stop <= float(np.max(base.limits.max_velocity / base.limits.max_acceleration)) + 4 * PERIOD


@pytest.mark.parametrize("backend", BACKENDS)
def test_holding_zero_never_goes_stale_and_a_zero_command_that_expires_is_a_quiet_hold(backend):
    base, clock = make(backend)
    base.command(np.zeros(3), ttl=0.05)
    for _ in range(round(2.0 * RATE)):
        cycle(base)
    assert base.state is BaseState.RUNNING and base.latch is None and not base.velocity_command.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_lost_feedback_is_a_fault_noticed_within_its_timeout(backend):
    base, clock = make(backend)
    at_speed(base, 1.0)
    fault = base.backend.faults.drop_feedback(start=clock.now())   # type: ignore[attr-defined]
    while base.latch is None:
        assert clock.now() - fault.start < 0.2
        cycle(base, base.limits.max_velocity)
    noticed = base.latch.time - fault.start
    print(f"\n[{backend}] feedback dropped: feedback_lost after {noticed * 1e3:.1f} ms "
          f"({FEEDBACK_TIMEOUT_CYCLES} periods: {FEEDBACK_TIMEOUT_CYCLES * PERIOD * 1e3:.0f} ms)")
    assert base.latch.kind == "feedback_lost"
    assert noticed <= (FEEDBACK_TIMEOUT_CYCLES + 2) * PERIOD + 1e-9
    # without feedback the ramp goes on from the previous command, down at max_acceleration
    before = base.velocity_command.copy()
    cycle(base)
    assert np.all(before - base.velocity_command <= base.limits.max_acceleration * MAX_DT_CYCLES * PERIOD + 1e-9)
    assert np.all(base.velocity_command < before)
    assert not base.clear()   # refused while the feedback is lost


def test_nan_feedback_is_a_fault():
    base, clock = make("mock")
    at_speed(base, 0.5)
    base.backend.faults.nan_feedback(1, ("velocity",), start=clock.now())   # type: ignore[attr-defined]
    cycle(base, base.limits.max_velocity)
    assert base.latch is not None and base.latch.kind == "feedback_nan"


def test_the_ramp_is_limited_by_the_time_that_passed_and_never_catches_up_after_a_late_cycle():
    base, clock = make("mock")
    amax = base.limits.max_acceleration
    target = base.limits.max_velocity
    cycle(base, target)
    previous = base.velocity_command.copy()
    steps = []
    for _ in range(20):
        cycle(base, target)
        steps.append(base.velocity_command - previous)
        previous = base.velocity_command.copy()
    assert np.allclose(steps, amax * PERIOD)   # one period's worth each cycle
    clock.advance(0.2)   # a late cycle: 40 periods
    cycle(base, target)
    jump = base.velocity_command - previous
    print(f"\n[mock] after a 200 ms late cycle the command rose {jump[0]:.3f} rad/s "
          f"(max_acceleration x {MAX_DT_CYCLES:g} periods: {amax[0] * MAX_DT_CYCLES * PERIOD:.3f})")
    assert np.all(jump <= amax * MAX_DT_CYCLES * PERIOD + 1e-9)


def test_commands_are_checked_and_nothing_resumes_by_itself():
    base, clock = make("mock")
    vmax = base.limits.max_velocity
    for bad, reason in ((vmax * 1.01, "over_max_velocity"), (np.array([1.0, math.nan, 0.0]), "bad_velocity"),
                        (np.ones(2), "bad_velocity")):
        with pytest.raises(CommandRejected, match=reason):
            base.command(bad)
    with pytest.raises(CommandRejected, match="ttl_too_long"):
        base.command(np.ones(3), ttl=1.0)
    at_speed(base, 1.0)
    base.stop("estop", "test")
    until_still(base, clock)
    assert base.clear()
    for _ in range(100):
        cycle(base)
    assert base.state is BaseState.RUNNING and not base.velocity_command.any()   # holds zero until commanded
    assert [e.kind for e in base.events][-1] == "cleared"


class Scripted:
    """A backend whose velocity readings are given, sample by sample (a transient the mock cannot make)."""

    def __init__(self, clock: SimClock, readings: list[float]) -> None:
        self.clock, self.readings, self.size, self.sent = clock, readings, 3, []
        self.seq = 0

    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        self.clock.advance(PERIOD)
        into.velocity[:] = self.readings[min(self.seq, len(self.readings) - 1)]
        into.position[:] = 0.0
        self.seq += 1
        into.sequence = self.seq
        return True

    def write(self, command: Command) -> bool:
        self.sent.append(command.velocity.copy())
        return True

    def close(self) -> None:
        pass


@pytest.mark.parametrize("stop", [True, False], ids=["stopping", "holding"])
def test_a_lone_transient_reading_of_full_speed_is_not_commanded(stop):
    clock = SimClock()
    readings = [0.0] * 10 + [9.0] + [0.0] * 10   # a still base reads full speed once
    backend = Scripted(clock, readings)
    limits = BaseLimits(np.full(3, 9.6), np.full(3, 19.2), 0.25, 11.52)
    base = VelocityBase("base", backend, clock, limits, PERIOD)   # type: ignore[arg-type]
    for _ in range(10):
        cycle(base)
    base.update()   # the transient
    if stop:
        base.stop("stop", "a stop just as the transient arrives")
    base.send()
    print(f"\n[scripted] a lone 9 rad/s reading on a still base ({'stopping' if stop else 'holding zero'}): "
          f"commanded {backend.sent[-1]} rad/s")
    assert np.all(backend.sent[-1] == 0.0) and base.implausible == 1
    assert base.events[0].kind == "feedback_implausible"
