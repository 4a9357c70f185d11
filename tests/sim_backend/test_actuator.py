"""The simulated HEBI module firmware: each control strategy against its closed-form torque, PID semantics.

The references are the model's equations solved by hand (the effort loop is linear between its
clamps, so its fixed point has a closed form), independent of the kernel's iterative solver.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from tests._support.extras import extra_missing

pytest.importorskip("mujoco", reason=extra_missing("mujoco"))  # sim_backend is the sim extra

from hebictl.errors import ConfigError, HardwareError
from hebictl.gains import PID_BLOCKS, PID_FIELDS, load_gains
from sim_backend.actuator import NEUTRAL, ActuatorGroup, actuator_step
from tests._support.paths import REPO_ROOT

TAU_S, W0 = 20.0, 4.0  # [N·m] stall torque = torque limit, [rad/s] free speed of the test module
DT = 1e-3
NAN = math.nan


class Module:
    """One simulated module driven directly through the kernel (no MuJoCo)."""

    def __init__(self, strategy: int, **gains: float) -> None:
        self.act = ActuatorGroup.create([TAU_S], [W0])
        self.act.strategy[0] = strategy
        for li in range(3):
            for fi, name in enumerate(PID_FIELDS):
                self.act.gains[li, fi, 0] = NEUTRAL[name]
        for key, value in gains.items():  # e.g. position_kp=3.0
            block, _, name = key.partition("_")
            self.act.gains[PID_BLOCKS.index(block), PID_FIELDS.index(name), 0] = value
        self.ctrl = np.zeros(1)
        self.bias = np.zeros((1, 10))

    def step(self, q: float, w: float, p: float = NAN, v: float = NAN, e: float = NAN) -> float:
        """Command (p, v, e), run one 1 ms step at joint state (q, w); the torque [N·m]."""
        self.act.command[:, 0] = (p, v, e)
        actuator_step(self.act.gains, self.act.strategy, self.act.motor, self.act.command, self.act.state,
                      np.array([q]), np.array([w]), np.zeros(1, np.int64), np.zeros(1, np.int64), DT, self.ctrl,
                      self.bias, self.act.effort, self.act.slope, np.zeros(1, np.int64), np.ones(1))
        return float(self.act.effort[0])

    @property
    def damping(self) -> float:
        return -float(self.bias[0, 2])


def clip(x: float, lo: float = -1.0, hi: float = 1.0) -> float:
    return min(max(x, lo), hi)


# ------------------------------------------------------------------ strategies vs closed forms
STATES = [(0.0, 0.0), (0.3, 0.5), (-0.2, -1.0), (1.0, 2.0)]


def fixed_point(pwm_of_tau) -> float:
    """The effort τ = clip(τs (PWM(τ) - ω/ω0)) by brentq (the residual is continuous without a dead zone)."""
    return brentq(lambda t: t - pwm_of_tau(t), -TAU_S - 1.0, TAU_S + 1.0, xtol=1e-14, rtol=1e-15)


@pytest.mark.parametrize(("q", "w"), STATES)
@pytest.mark.parametrize(("p", "v", "e"), [(0.1, 0.2, 1.5), (0.1, NAN, 2.0), (NAN, NAN, -3.0), (0.5, 0.0, NAN),
                                           (2.0, 1.0, 5.0)])
def test_strategy4_matches_reference(q, w, p, v, e):
    """Strategy 4: effort target = effort + kp_p (p - q); PWM = effort loop + velocity loop; τ its fixed point."""
    kp_p, kp_v, kp_e = 30.0, 0.05, 0.1
    m = Module(4, position_kp=kp_p, velocity_kp=kp_v, velocity_feed_forward=1.0, effort_kp=kp_e,
               effort_feed_forward=1.0, effort_min_output=-1.0, effort_max_output=1.0)
    tau = m.step(q, w, p, v, e)
    r = (0.0 if math.isnan(e) else e) + (0.0 if math.isnan(p) else kp_p * (p - q))
    u_v = 0.0 if math.isnan(v) else clip(v / W0 + kp_v * (v - w))
    expected = fixed_point(lambda t: clip(TAU_S * (clip(clip(r / TAU_S + kp_e * (r - t)) + u_v) - w / W0),
                                          -TAU_S, TAU_S))
    assert tau == pytest.approx(expected, rel=1e-11, abs=1e-11)
    if abs(expected) < TAU_S and abs(r / TAU_S + kp_e * (r - expected) + u_v) < 1:  # linear: closed form too
        assert tau == pytest.approx(r + TAU_S * (u_v - w / W0) / (1.0 + TAU_S * kp_e), rel=1e-11, abs=1e-11)


@pytest.mark.parametrize(("q", "w"), STATES)
def test_strategy3_sums_three_pwm_loops(q, w):
    """Strategy 3: PWM = position PID + velocity PID + effort PID, each in PWM."""
    kp_p, kp_v, kp_e = 0.4, 0.05, 0.2
    m = Module(3, position_kp=kp_p, velocity_kp=kp_v, velocity_feed_forward=1.0, effort_kp=kp_e,
               effort_feed_forward=1.0)
    p, v, e = 0.2, 0.3, 1.0
    tau = m.step(q, w, p, v, e)
    others = clip(kp_p * (p - q)) + clip(v / W0 + kp_v * (v - w))
    expected = fixed_point(lambda t: clip(TAU_S * (clip(clip(e / TAU_S + kp_e * (e - t)) + others) - w / W0),
                                          -TAU_S, TAU_S))
    assert tau == pytest.approx(expected, rel=1e-11, abs=1e-11)


@pytest.mark.parametrize(("q", "w"), STATES)
def test_strategy2_feeds_position_and_velocity_into_the_effort_loop(q, w):
    """Strategy 2: effort target = effort + position PID + velocity PID (both in N·m)."""
    kp_p, kp_v, kp_e = 10.0, 2.0, 0.1
    m = Module(2, position_kp=kp_p, velocity_kp=kp_v, effort_kp=kp_e, effort_feed_forward=1.0)
    p, v, e = 0.2, 0.3, 1.0
    tau = m.step(q, w, p, v, e)
    r = e + kp_p * (p - q) + kp_v * (v - w)
    expected = fixed_point(lambda t: clip(TAU_S * (clip(r / TAU_S + kp_e * (r - t)) - w / W0), -TAU_S, TAU_S))
    assert tau == pytest.approx(expected, rel=1e-11, abs=1e-11)


@pytest.mark.parametrize("w", [0.0, 1.0, -2.0])
def test_direct_pwm_and_off(w):
    """DirectPWM reads the effort command as PWM; Off and all-NaN commands let the joint coast (zero torque)."""
    assert Module(1).step(0.0, w, e=0.5) == pytest.approx(TAU_S * (0.5 - w / W0), rel=1e-14)
    assert Module(1).step(0.0, w, e=7.0) == pytest.approx(clip(TAU_S * (1.0 - w / W0), -TAU_S, TAU_S))
    off = Module(0, position_kp=10.0)
    assert off.step(0.0, w, p=1.0, v=1.0, e=1.0) == 0.0
    idle = Module(4, position_kp=10.0, effort_kp=0.1, effort_feed_forward=1.0)
    assert idle.step(0.0, w) == 0.0
    assert idle.ctrl[0] == 0.0 and idle.damping == 0.0


def test_velocity_only_command_is_open_loop_pwm():
    """Strategy 4 with only a velocity command: the velocity PID's PWM drives the motor, no effort loop."""
    m = Module(4, velocity_kp=0.05, velocity_feed_forward=1.0, effort_kp=0.1, effort_feed_forward=1.0)
    w, v = 0.5, 1.0
    assert m.step(0.0, w, v=v) == pytest.approx(TAU_S * (v / W0 + 0.05 * (v - w) - w / W0), rel=1e-13)


# ------------------------------------------------------------------ motor saturation
def test_effort_saturates_at_the_rated_torque():
    """A large position error gives exactly ±max_effort (the current limit), whatever the gains."""
    m = Module(4, position_kp=1000.0, effort_kp=0.1, effort_feed_forward=1.0)
    assert m.step(0.0, 0.0, p=1.0) == pytest.approx(TAU_S, rel=1e-12, abs=3e-11)
    assert m.step(0.0, 0.0, p=-1.0) == pytest.approx(-TAU_S, rel=1e-12, abs=3e-11)


def test_speed_saturates_at_the_free_speed():
    """At full PWM the motor's torque falls to zero at the free speed and brakes beyond it."""
    m = Module(1)
    assert m.step(0.0, W0, e=1.0) == pytest.approx(0.0, abs=1e-12)
    assert m.step(0.0, 1.5 * W0, e=1.0) < 0.0
    assert m.step(0.0, 0.5 * W0, e=1.0) == pytest.approx(0.5 * TAU_S)


# ------------------------------------------------------------------ PID semantics (HEBI Gains docs)
def test_effort_dead_zone_drops_the_feedback_term():
    """Effort errors inside the dead zone are treated as zero: only the feed-forward acts."""
    dz, kp_e = 0.5, 0.1
    m = Module(4, effort_kp=kp_e, effort_feed_forward=1.0, effort_dead_zone=dz)
    r = 2.0
    w_in = 0.05  # back-EMF error τs w/ω0 = 0.25 N·m < dz: open loop
    assert m.step(0.0, w_in, e=r) == pytest.approx(r - TAU_S * w_in / W0, rel=1e-12, abs=3e-11)
    w_out = 0.4  # 2 N·m of back-EMF: the loop closes with error outside the dead zone
    expected = r - TAU_S * w_out / W0 / (1.0 + TAU_S * kp_e)
    assert abs(r - expected) > dz
    assert Module(4, effort_kp=kp_e, effort_feed_forward=1.0, effort_dead_zone=dz).step(0.0, w_out, e=r) == \
        pytest.approx(expected, rel=1e-11, abs=3e-11)


def test_position_loop_terms_over_time():
    """kp, ki (integrated error·s, bounded by i_clamp), punch and output limits of the position loop.

    At rest with no velocity command the effort loop reaches its target exactly, so the torque
    *is* the position loop's output.
    """
    kp, ki, i_clamp, punch = 5.0, 40.0, 0.3, 0.2
    m = Module(4, position_kp=kp, position_ki=ki, position_i_clamp=i_clamp, position_punch=punch,
               position_max_output=3.0, position_min_output=-3.0, effort_kp=0.1, effort_feed_forward=1.0)
    e = 0.1
    for k in range(1, 200):
        tau = m.step(0.0, 0.0, p=e)
        integral = min(ki * k * e * DT, i_clamp)
        assert tau == pytest.approx(kp * e + integral + punch, rel=1e-12, abs=3e-11)
    assert m.step(0.0, 0.0, p=10.0) == pytest.approx(3.0)  # max_output
    assert m.step(0.0, 0.0, p=-0.1) < 0.0  # punch follows the sign of the error


def test_position_target_lowpass_and_limits():
    """target_lowpass filters x_t = a x + (1 - a) x_{t-1} from the first target on; targets are clamped."""
    a, kp = 0.2, 10.0
    m = Module(4, position_kp=kp, position_target_lowpass=a, position_max_target=0.5, effort_kp=0.1,
               effort_feed_forward=1.0)
    assert m.step(0.0, 0.0, p=0.1) == pytest.approx(kp * 0.1, rel=1e-12, abs=3e-11)  # first sample: unfiltered
    x = 0.1
    for _ in range(5):
        x = a * 0.4 + (1 - a) * x
        assert m.step(0.0, 0.0, p=0.4) == pytest.approx(kp * x, rel=1e-12, abs=3e-11)
    for _ in range(200):
        tau = m.step(0.0, 0.0, p=9.0)
    assert tau == pytest.approx(kp * 0.5, rel=1e-9)  # max_target


def test_output_lowpass_and_restart_after_nan():
    """output_lowpass filters the output; a NaN target switches the loop off and it restarts unfiltered."""
    a, kp = 0.3, 10.0
    m = Module(4, position_kp=kp, position_output_lowpass=a, effort_kp=0.1, effort_feed_forward=1.0)
    assert m.step(0.0, 0.0, p=0.1) == pytest.approx(1.0, rel=1e-12, abs=3e-11)
    assert m.step(0.0, 0.0, p=0.2) == pytest.approx(a * 2.0 + (1 - a) * 1.0, rel=1e-12, abs=3e-11)
    assert m.step(0.0, 0.0) == 0.0  # nothing commanded: coast
    assert m.step(0.0, 0.0, p=0.2) == pytest.approx(2.0, rel=1e-12, abs=3e-11)


@pytest.mark.parametrize("d_on_error", [1.0, 0.0])
def test_position_derivative_on_error_or_measurement(d_on_error):
    """kd acts on d(error)/dt (target rate minus joint velocity) or on -d(measurement)/dt = -ω."""
    kp, kd = 10.0, 0.5
    m = Module(4, position_kp=kp, position_kd=kd, position_d_on_error=d_on_error, effort_kp=0.1,
               effort_feed_forward=1.0)
    m.step(0.0, 0.0, p=0.1)
    w = 0.3
    tau = m.step(0.0, w, p=0.12)  # the target moved 0.02 rad in 1 ms
    rate = (20.0 - w) if d_on_error else -w
    r = kp * 0.12 + kd * rate
    assert tau == pytest.approx(r - TAU_S * w / W0 / (1.0 + TAU_S * 0.1), rel=1e-11, abs=3e-11)


# ------------------------------------------------------------------ linearisation for MuJoCo
def test_linearisation_matches_closed_form_slopes():
    """ctrl and the bias slope make MuJoCo's force the first-order torque at the end of the step."""
    kp_p, kp_v, kp_e = 30.0, 0.05, 0.1
    m = Module(4, position_kp=kp_p, velocity_kp=kp_v, velocity_feed_forward=1.0, effort_kp=kp_e,
               effort_feed_forward=1.0)
    q, w = 0.1, 0.7
    tau = m.step(q, w, p=0.2, v=0.5, e=1.0)
    g = TAU_S * kp_e
    d_w = -TAU_S * (kp_v + 1.0 / W0) / (1.0 + g)  # ∂τ/∂ω
    d_q = -kp_p  # ∂τ/∂q
    assert m.damping == pytest.approx(-(d_w + DT * d_q), rel=1e-6)
    assert m.ctrl[0] == pytest.approx(tau - d_w * w, rel=1e-6)


# ------------------------------------------------------------------ gains
def test_set_gains_reads_the_file_and_keeps_strategy_without_one():
    """A gains file sets every field (absent ones neutral); a file without control_strategy keeps it."""
    gains = load_gains(REPO_ROOT / "configs" / "gains" / "x-series-6dof.xml")
    act = ActuatorGroup.create([23, 44, 23, 7, 2.5, 2.5], [4, 2, 4, 3, 9, 9])
    act.strategy[:] = 3
    act.set_gains(gains)
    assert act.strategy.tolist() == [4] * 6
    np.testing.assert_array_equal(act.gains[0, PID_FIELDS.index("kp")], gains.position.kp)
    np.testing.assert_array_equal(act.gains[2, PID_FIELDS.index("output_lowpass")], gains.effort.output_lowpass)
    from dataclasses import replace

    act.strategy[:] = 3
    act.set_gains(replace(gains, control_strategy=None))
    assert act.strategy.tolist() == [3] * 6


def test_bad_gains_are_refused():
    """Wrong width, negative gains, lowpass outside [0, 1] or a non-GroupGains object are errors."""
    from dataclasses import replace

    gains = load_gains(REPO_ROOT / "configs" / "gains" / "x-series-6dof.xml")
    with pytest.raises(ConfigError):
        ActuatorGroup.create([1.0] * 5, [1.0] * 5).set_gains(gains)
    act = ActuatorGroup.create([1.0] * 6, [1.0] * 6)
    with pytest.raises(ConfigError):
        act.set_gains(replace(gains, position=replace(gains.position, kp=-gains.position.kp)))
    with pytest.raises(ConfigError):
        act.set_gains(replace(gains, effort=replace(gains.effort, output_lowpass=gains.effort.output_lowpass * 2)))
    with pytest.raises(HardwareError):
        act.set_gains({"kp": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ActuatorGroup.create([1.0, math.inf], [1.0, 1.0])
