"""The mock backend: first-order lag dynamics against closed forms and scipy, feedback timing, faults."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import StateSpace, lsim

from hebictl.errors import ConfigError, HardwareError
from hebictl.hardware import Command, FaultKind, Feedback, SimClock, open_backend
from hebictl.hardware.mock import MockBackend

DT = 1e-3  # [s] feedback period of the 1 kHz runs


def make_mock(n: int = 3, **options) -> MockBackend:
    """Mock on a fresh SimClock at t=0 with 1 kHz feedback (options override)."""
    options = {"feedback_frequency": 1000.0, **options}
    return open_backend("mock", dof=n, clock=SimClock(), **options)


def position_command(n: int, value: float) -> Command:
    cmd = Command.empty(n)
    cmd.position[:] = value
    return cmd


# ---------------------------------------------------------------------- dynamics
def test_step_response_matches_closed_form():
    """A position step follows x = p + (x0 - p) exp(-t/tau), velocity its derivative."""
    tau, x0, p = 0.05, 0.2, 1.0
    mock = make_mock(1, time_constant_s=tau, initial_position=x0, command_lifetime=0.0)
    fbk = Feedback.empty(1)
    assert mock.read(fbk)  # sample at t = 0
    mock.write(position_command(1, p))
    for _ in range(300):
        assert mock.read(fbk)
        t = fbk.time[0]
        decay = math.exp(-t / tau)
        assert fbk.position[0] == pytest.approx(p + (x0 - p) * decay, rel=0, abs=1e-13)
        assert fbk.velocity[0] == pytest.approx((p - x0) / tau * decay, rel=1e-12, abs=1e-12)
    assert fbk.time[0] == pytest.approx(0.3, abs=1e-12)


def test_velocity_command_from_rest_matches_closed_form():
    """A constant velocity command gives x = v (t - tau (1 - exp(-t/tau))), resent each cycle or not."""
    tau, v = 0.02, 1.5
    once = make_mock(1, time_constant_s=tau, command_lifetime=0.0)
    every_cycle = make_mock(1, time_constant_s=tau, command_lifetime=0.0)
    cmd = Command.empty(1)
    cmd.velocity[0] = v
    f1, f2 = Feedback.empty(1), Feedback.empty(1)
    once.write(cmd)
    for _ in range(200):
        every_cycle.write(cmd)  # a loop re-sending the same velocity must not reset the reference
        once.read(f1)
        every_cycle.read(f2)
        t = f1.time[0]
        expected = v * (t - tau * (1.0 - math.exp(-t / tau)))
        assert f1.position[0] == pytest.approx(expected, rel=0, abs=1e-12)
        assert f2.position[0] == pytest.approx(expected, rel=0, abs=1e-12)
        assert f1.velocity[0] == pytest.approx(v * (1.0 - math.exp(-t / tau)), rel=0, abs=1e-12)


# (write time [s], position or None, velocity or None); None = not commanded
SCHEDULE = [
    (0.000, 0.5, None),     # step
    (0.040, -0.3, 1.0),     # position with velocity feed-forward: reference ramps
    (0.090, None, -2.0),    # velocity only: the reference keeps integrating from where it is
    (0.130, 0.1, 0.0),
    (0.180, None, None),    # nothing: hold where the joint is
]
T_END = 0.250


def reference_response(tau: float, x0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times, positions, velocities on a 1 ms grid from scipy.signal.lsim, segment by segment."""
    # A sample at a write instant still shows the previous command: segments are (t_w, t_next].
    ts, xs, vs = [np.array([0.0])], [np.array([x0])], [np.array([0.0])]
    x, r_end = x0, x0
    for i, (t_w, p, v) in enumerate(SCHEDULE):
        t_next = SCHEDULE[i + 1][0] if i + 1 < len(SCHEDULE) else T_END
        m = round((t_next - t_w) / DT) + 1
        t = np.linspace(t_w, t_next, m)
        v_ref = 0.0 if v is None else v
        if p is not None:
            r0 = p
        elif v is not None:
            r0 = r_end
        else:
            r0 = x
        r = r0 + v_ref * (t - t_w)
        if tau == 0.0:
            xt = r
            vt = np.full_like(t, v_ref)
        else:
            system = StateSpace([[-1.0 / tau]], [[1.0 / tau]], [[1.0]], [[0.0]])
            _, xt, _ = lsim(system, r, t - t_w, X0=[x])
            vt = (r - xt) / tau
        ts.append(t[1:])
        xs.append(xt[1:])
        vs.append(vt[1:])
        x, r_end = xt[-1], r[-1]
    return np.concatenate(ts), np.concatenate(xs), np.concatenate(vs)


@pytest.mark.parametrize("feedback_hz", [1000.0, 125.0])
def test_piecewise_commands_match_scipy_lsim(feedback_hz):
    """Steps, ramps, velocity-only and hold segments match scipy's LTI simulation at any read rate."""
    taus = np.array([0.0, 0.02, 0.1])
    x0 = np.array([0.1, -0.2, 0.3])
    mock = make_mock(3, time_constant_s=taus, initial_position=x0, command_lifetime=0.0,
                     feedback_frequency=feedback_hz)
    clock = mock.clock
    samples: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    fbk = Feedback.empty(3)
    for i, (t_w, p, v) in enumerate(SCHEDULE):
        clock.sleep_until(t_w)
        cmd = Command.empty(3)
        if p is not None:
            cmd.position[:] = p
        if v is not None:
            cmd.velocity[:] = v
        mock.write(cmd)
        t_next = SCHEDULE[i + 1][0] if i + 1 < len(SCHEDULE) else T_END
        # Read every sample before the next write (the one at t_next comes after it).
        while mock.read(fbk, timeout_s=max(t_next - clock.now() - 1e-9, 0.0)):
            samples[round(fbk.time[0] * 1e3)] = (fbk.position.copy(), fbk.velocity.copy())
    assert len(samples) == math.ceil(T_END * feedback_hz - 1e-9)
    for j in range(3):
        t_ref, x_ref, v_ref = reference_response(taus[j], x0[j])
        index = {round(t * 1e3): k for k, t in enumerate(t_ref)}
        for ms, (x, v) in samples.items():
            if ms in index:
                assert x[j] == pytest.approx(x_ref[index[ms]], rel=0, abs=1e-10), (j, ms)
                assert v[j] == pytest.approx(v_ref[index[ms]], rel=0, abs=1e-8), (j, ms)


def test_command_expires_after_lifetime():
    """After command_lifetime without a new command the joint holds, velocity 0, echoes NaN."""
    tau, lifetime = 0.05, 0.1
    mock = make_mock(1, time_constant_s=tau, command_lifetime=lifetime)
    fbk = Feedback.empty(1)
    mock.read(fbk)  # the sample at t = 0, before the command
    mock.write(position_command(1, 1.0))
    x_at_expiry = 1.0 - math.exp(-lifetime / tau)
    for _ in range(200):
        mock.read(fbk)
        t = fbk.time[0]
        if t <= lifetime:
            assert fbk.position[0] == pytest.approx(1.0 - math.exp(-t / tau), abs=1e-13)
            assert fbk.position_command[0] == 1.0
        else:
            assert fbk.position[0] == pytest.approx(x_at_expiry, abs=1e-13)
            assert fbk.velocity[0] == 0.0
            assert np.isnan(fbk.position_command[0]) and fbk.effort[0] == 0.0


def test_uncommanded_joint_holds_and_effort_adds_model():
    """Joints without a command stay put; effort = commanded effort + effort_model(position)."""
    def gravity(q):
        return 9.81 * np.cos(q)

    mock = make_mock(2, initial_position=[0.4, -0.7], effort_model=gravity)
    cmd = Command.empty(2)
    cmd.position[0] = 1.2
    cmd.effort[0] = 0.5
    mock.write(cmd)
    fbk = Feedback.empty(2)
    for _ in range(5):
        mock.read(fbk)
    assert fbk.position.tolist() == [1.2, -0.7]
    np.testing.assert_allclose(fbk.effort, [0.5 + 9.81 * math.cos(1.2), 9.81 * math.cos(-0.7)], rtol=1e-15)


def test_orientation_identity_or_configured():
    """Every module reports the configured unit quaternion (identity by default)."""
    fbk = Feedback.empty(2)
    make_mock(2).read(fbk)
    np.testing.assert_array_equal(fbk.orientation, [[1, 0, 0, 0], [1, 0, 0, 0]])
    q = np.array([math.cos(0.3), 0.0, 0.0, math.sin(0.3)])
    make_mock(2, orientation=q).read(fbk)
    np.testing.assert_array_equal(fbk.orientation, [q, q])


@pytest.mark.parametrize(("option", "value"), [
    ("time_constant_s", -0.1),
    ("time_constant_s", [0.1, 0.2]),
    ("initial_position", [0.0, np.nan, 0.0]),
    ("orientation", [1.0, 1.0, 0.0, 0.0]),
    ("orientation", [1.0, 0.0, 0.0]),
    ("effort_model", lambda q: np.zeros(2)),
    ("history_size", 1),
])
def test_bad_options_name_the_key(option, value):
    """Invalid mock options are a ConfigError naming the option."""
    with pytest.raises(ConfigError) as err:
        make_mock(3, **{option: value})
    assert err.value.key == option


def test_set_gains_is_kept():
    """The mock keeps the last gains object so tests can check what a controller sent."""
    mock = make_mock(2)
    gains = object()
    mock.set_gains(gains)
    assert mock.gains is gains


def test_last_command_and_write_count():
    """last_command is a copy of what the modules hold; write_count counts accepted writes."""
    mock = make_mock(2)
    mock.write(position_command(2, 0.25))
    last = mock.last_command
    assert last.position.tolist() == [0.25, 0.25] and np.isnan(last.velocity).all()
    assert mock.write_count == 1


# ---------------------------------------------------------------------- feedback timing
def test_read_waits_for_the_next_sample_on_the_grid():
    """At 100 Hz reads return the samples at 0, 10, 20 ms and advance the SimClock to them."""
    mock = make_mock(1, feedback_frequency=100.0)
    fbk = Feedback.empty(1)
    for expected in (0.0, 0.01, 0.02):
        assert mock.read(fbk)
        assert fbk.time[0] == pytest.approx(expected, abs=1e-15)
        assert mock.clock.now() == fbk.rx_time == pytest.approx(expected, abs=1e-15)


def test_read_times_out_without_touching_the_buffer():
    """A timeout shorter than the next sample returns False after exactly the timeout."""
    mock = make_mock(1, feedback_frequency=10.0)
    fbk = Feedback.empty(1)
    mock.read(fbk)
    before = fbk.copy()
    assert not mock.read(fbk, timeout_s=0.04)
    assert mock.clock.now() == pytest.approx(0.04)
    assert fbk.sequence == before.sequence and fbk.rx_time == before.rx_time
    assert mock.read(fbk, timeout_s=0.1) and fbk.time[0] == pytest.approx(0.1)


def test_zero_feedback_frequency_stops_feedback():
    """feedback_frequency = 0 means no feedback: reads time out."""
    mock = make_mock(1, feedback_frequency=0.0)
    assert not mock.read(Feedback.empty(1), timeout_s=0.02)
    assert mock.clock.now() == pytest.approx(0.02)


def test_changing_frequency_continues_from_last_sample():
    """A new feedback frequency starts its grid at the last sample: no sample repeats."""
    mock = make_mock(1, feedback_frequency=100.0)
    fbk = Feedback.empty(1)
    mock.read(fbk)
    mock.read(fbk)  # t = 0.01
    mock.feedback_frequency = 1000.0
    times = []
    for _ in range(3):
        mock.read(fbk)
        times.append(fbk.time[0])
    np.testing.assert_allclose(times, [0.011, 0.012, 0.013], atol=1e-15)


# ---------------------------------------------------------------------- faults
def sine(t: float) -> float:
    return 0.5 * math.sin(2.0 * math.pi * 3.0 * t)


def lockstep(faulty: MockBackend, twin: MockBackend, cycles: int, timeout_s: float = 0.1,
             skip_twin_writes=lambda t: False):
    """Run both mocks on the same sine command; yield (ok, faulty feedback, twin history)."""
    f_fault, f_twin = Feedback.empty(faulty.size), Feedback.empty(twin.size)
    history: dict[int, Feedback] = {}
    for _ in range(cycles):
        ok = faulty.read(f_fault, timeout_s)
        twin.clock.sleep_until(faulty.clock.now())
        while twin.read(f_twin, timeout_s=0.0):
            history[round(f_twin.time[0] * 1e6)] = f_twin.copy()
        t = faulty.clock.now()
        cmd = position_command(faulty.size, sine(t))
        faulty.write(cmd)
        if not skip_twin_writes(t):
            twin.write(cmd)
        yield ok, f_fault, history


def pair(**options) -> tuple[MockBackend, MockBackend]:
    options = {"time_constant_s": 0.03, "command_lifetime": 0.0, **options}
    return make_mock(3, **options), make_mock(3, **options)


def test_frozen_feedback_repeats_last_sample():
    """While frozen, reads succeed but repeat values, time and sequence; afterwards they resume."""
    faulty, twin = pair()
    fault = faulty.faults.freeze_feedback(start=0.05, duration=0.02)
    assert faulty.faults.active(0.06) == (fault,) and faulty.faults.active(0.07) == ()
    frozen_seen = 0
    last_good = None
    for ok, fbk, history in lockstep(faulty, twin, 100):
        assert ok
        now = faulty.clock.now()
        if fault.active_at(now):
            frozen_seen += 1
            assert fbk.sequence == last_good.sequence and fbk.time[0] == last_good.time[0]
            np.testing.assert_array_equal(fbk.position, last_good.position)
            assert fbk.rx_time == now
        else:
            expected = history[round(now * 1e6)]
            np.testing.assert_array_equal(fbk.position, expected.position)
            last_good = fbk.copy()
    assert frozen_seen == 20


def test_dropped_feedback_times_out_then_recovers():
    """Samples in a drop window are lost: reads return False after the timeout, then resume."""
    faulty, twin = pair()
    faulty.faults.drop_feedback(start=0.05, duration=0.02)
    results = []
    for ok, fbk, history in lockstep(faulty, twin, 80, timeout_s=0.005):
        results.append((ok, faulty.clock.now()))
        if ok:
            expected = history[round(fbk.time[0] * 1e6)]
            np.testing.assert_array_equal(fbk.position, expected.position)
    failures = [t for ok, t in results if not ok]
    assert failures and all(0.05 <= t <= 0.07 for t in failures)
    first_after = next(t for ok, t in results if ok and t > 0.049 + 1e-9)
    assert first_after == pytest.approx(0.07, abs=1e-12)


def test_latency_delivers_old_samples():
    """Under latency L, a sample delivered at t shows the robot at t - L, and time says so."""
    latency = 0.01
    faulty, twin = pair()
    fault = faulty.faults.delay_feedback(latency, start=0.125, duration=0.0625)  # exact in binary
    delayed = 0
    for ok, fbk, history in lockstep(faulty, twin, 200):
        assert ok
        now = faulty.clock.now()
        sample_t = now - latency if fault.active_at(now) else now
        delayed += fault.active_at(now)
        assert fbk.time[0] == pytest.approx(sample_t, abs=1e-12)
        assert fbk.rx_time - fbk.time[0] == pytest.approx(now - sample_t, abs=1e-12)
        expected = history[round(sample_t * 1e6)]
        np.testing.assert_allclose(fbk.position, expected.position, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fbk.velocity, expected.velocity, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(fbk.position_command, expected.position_command)
    assert delayed == 63  # samples at 125..187 ms


def test_latency_from_the_start_has_nothing_to_deliver_at_first():
    """Delayed from t=0, the first sample (taken at 0) arrives at t = L."""
    mock = make_mock(1)
    mock.faults.delay_feedback(0.005, start=0.0)
    fbk = Feedback.empty(1)
    assert not mock.read(fbk, timeout_s=0.003)
    assert mock.read(fbk, timeout_s=0.1)
    assert (fbk.time[0], fbk.rx_time) == pytest.approx((0.0, 0.005), abs=1e-12)


def test_latency_beyond_history_warns():
    """Looking further back than history_size commands warns instead of inventing data."""
    mock = make_mock(1, history_size=4)
    mock.faults.delay_feedback(0.01, start=0.02)
    fbk = Feedback.empty(1)
    with pytest.warns(RuntimeWarning, match="history_size"):
        for _ in range(40):
            mock.read(fbk)
            mock.write(position_command(1, 0.1))


def test_nan_fault_blanks_only_chosen_module_fields():
    """A NaN fault blanks the chosen fields of the chosen module, only inside its window."""
    faulty, twin = pair()
    fault = faulty.faults.nan_feedback("J2", ("position", "effort", "orientation"), start=0.02, duration=0.01)
    inside = 0
    for _ok, fbk, history in lockstep(faulty, twin, 50):
        now = faulty.clock.now()
        expected = history[round(now * 1e6)]
        if fault.active_at(now):
            inside += 1
            assert np.isnan(fbk.position[1]) and np.isnan(fbk.effort[1]) and np.isnan(fbk.orientation[1]).all()
            assert np.isfinite(fbk.velocity[1])
            np.testing.assert_array_equal(fbk.position[[0, 2]], expected.position[[0, 2]])
        else:
            np.testing.assert_array_equal(fbk.position, expected.position)
    assert inside == 10


def test_disconnected_module_raises_naming_it():
    """While a module is gone, read raises HardwareError naming it and write returns False."""
    mock = make_mock(3)
    mock.faults.disconnect("J3", start=0.01, duration=0.005)
    fbk = Feedback.empty(3)
    errors = 0
    for _ in range(30):
        try:
            mock.read(fbk)
        except HardwareError as exc:
            errors += 1
            assert "'J3'" in str(exc)
            assert mock.write(position_command(3, 0.0)) is False
        else:
            assert mock.write(position_command(3, 0.0)) is True
    assert errors == 5


def test_ignored_commands_change_nothing():
    """Ignored writes report success but neither move the joints nor refresh the lifetime."""
    faulty, twin = pair()
    faulty.faults.ignore_commands(start=0.02, duration=0.02)
    for _ok, fbk, history in lockstep(faulty, twin, 60, skip_twin_writes=lambda t: 0.02 <= t < 0.04):
        expected = history[round(faulty.clock.now() * 1e6)]
        np.testing.assert_array_equal(fbk.position, expected.position)
        np.testing.assert_array_equal(fbk.position_command, expected.position_command)
    assert faulty.write_count == twin.write_count


def test_ignored_commands_let_the_command_expire():
    """With commands ignored the last accepted one times out after command_lifetime."""
    mock = make_mock(1, command_lifetime=0.01)
    mock.write(position_command(1, 0.3))
    mock.faults.ignore_commands()
    fbk = Feedback.empty(1)
    for _ in range(20):
        mock.read(fbk)
        assert mock.write(position_command(1, 0.9))
    assert np.isnan(fbk.position_command[0]) and fbk.position[0] == 0.3


def test_clearing_faults():
    """clear(fault), clear(kind) and clear() remove exactly what they name."""
    mock = make_mock(2)
    faults = mock.faults
    freeze = faults.freeze_feedback()
    faults.drop_feedback(start=1.0)
    faults.drop_feedback(start=2.0)
    nan = faults.nan_feedback(0)
    faults.clear(freeze)
    assert [f.kind for f in faults.scheduled] == [FaultKind.DROPPED, FaultKind.DROPPED, FaultKind.NAN]
    faults.clear(FaultKind.DROPPED)
    assert faults.scheduled == (nan,)
    faults.clear()
    assert not faults and len(faults) == 0
    fbk = Feedback.empty(2)
    assert mock.read(fbk) and np.isfinite(fbk.position).all()


@pytest.mark.parametrize(("schedule", "key"), [
    (lambda f: f.nan_feedback("J9"), "module"),
    (lambda f: f.disconnect(5), "module"),
    (lambda f: f.nan_feedback(0, ("position", "sequence")), "fields"),
    (lambda f: f.drop_feedback(duration=0.0), "duration"),
    (lambda f: f.freeze_feedback(start=float("nan")), "start"),
    (lambda f: f.delay_feedback(-0.1), "latency_s"),
])
def test_bad_fault_schedules_name_the_key(schedule, key):
    """Impossible fault schedules are a ConfigError naming the argument."""
    with pytest.raises(ConfigError) as err:
        schedule(make_mock(2).faults)
    assert err.value.key == key


# ---------------------------------------------------------------------- ratings and firmware safety
def _saturated_lag_reference(x0, r0, v, tau, vmax, times):
    """x(t) of dx/dt = clip((r - x)/tau, ±vmax), r = r0 + v t, by scipy's adaptive integrator."""
    from scipy.integrate import solve_ivp

    def rhs(t, x):
        return np.clip((r0 + v * t - x) / tau, -vmax, vmax)

    sol = solve_ivp(rhs, (0.0, times[-1]), [x0], t_eval=times, rtol=1e-10, atol=1e-12, max_step=1e-3)
    return sol.y[0]


@pytest.mark.parametrize(("x0", "r0", "v", "tau"), [
    (0.0, 3.0, 0.0, 0.05),     # big step: saturated, then the lag
    (0.0, -2.0, 0.5, 0.02),    # moving reference, step the other way
    (1.0, 1.01, 0.0, 0.05),    # small step: never saturated
    (0.0, 0.0, 9.0, 0.05),     # reference faster than rated: follows at rated speed
])
def test_rated_speed_against_integrated_reference(x0, r0, v, tau):
    """With max_speed the lag saturates at ±max_speed; the closed form equals scipy's integration."""
    vmax = 2.0
    mock = make_mock(1, time_constant_s=tau, initial_position=x0, command_lifetime=0.0, max_speed=vmax)
    fbk = Feedback.empty(1)
    mock.read(fbk)
    cmd = Command.empty(1)
    cmd.position[0], cmd.velocity[0] = r0, v
    mock.write(cmd)
    times, pos, vel = [], [], []
    for _ in range(1500):
        mock.read(fbk)
        times.append(fbk.time[0])
        pos.append(fbk.position[0])
        vel.append(fbk.velocity[0])
    ref = _saturated_lag_reference(x0, r0, min(max(v, -vmax), vmax), tau, vmax, np.array(times))
    np.testing.assert_allclose(pos, ref, atol=2e-6)
    assert np.max(np.abs(vel)) <= vmax * (1 + 1e-12)


def test_rated_speed_bounds_a_perfect_tracking_mock():
    """tau = 0 (perfect tracking) still moves a 3 rad step at 4 rad/s, not in one sample."""
    mock = make_mock(1, command_lifetime=0.0, max_speed=4.0)
    fbk = Feedback.empty(1)
    mock.read(fbk)
    mock.write(position_command(1, 3.0))
    mock.read(fbk)
    assert fbk.position[0] == pytest.approx(4.0 * DT, abs=1e-12) and fbk.velocity[0] == 4.0
    while fbk.position[0] < 3.0 and fbk.time[0] < 2.0:
        mock.read(fbk)
    assert fbk.time[0] == pytest.approx(0.75, abs=1.5 * DT)  # 3 rad / 4 rad/s
    mock.read(fbk)
    assert fbk.position[0] == 3.0 and fbk.velocity[0] == 0.0


def test_ratings_come_from_the_model():
    """open_mock(model=...) takes the model's max_speeds/max_efforts; efforts are clipped to them."""
    class Rated:
        max_speeds = np.array([1.0, np.nan])
        max_efforts = np.array([5.0, 2.0])

    mock = make_mock(2, command_lifetime=0.0, model=Rated())
    fbk = Feedback.empty(2)
    mock.read(fbk)
    cmd = Command.empty(2)
    cmd.position[:] = [1.0, 1.0]
    cmd.effort[:] = [9.0, -9.0]
    mock.write(cmd)
    mock.read(fbk)
    assert fbk.velocity[0] == 1.0 and fbk.position[1] == 1.0  # joint 2 has no rated speed: unlimited
    np.testing.assert_array_equal(fbk.effort, [5.0, -2.0])
    np.testing.assert_array_equal(fbk.effort_command, [9.0, -9.0])  # the echo shows what was sent


def test_firmware_limit_stops_the_joint_and_reports_the_state():
    """A non-Disabled limit strategy stops the joint at the firmware limit (BELOW/ABOVE while pushed)."""
    from hebictl.hardware.firmware import LimitState, ModuleSafety

    mock = make_mock(2, command_lifetime=0.0, max_speed=2.0)
    mock.set_safety(ModuleSafety.create([-1.0, -1.0], [0.5, 0.5], max_strategy=["HoldPosition", "Disabled"]))
    fbk = Feedback.empty(2)
    mock.read(fbk)
    assert list(fbk.position_limit_state) == [LimitState.INSIDE] * 2
    mock.write(position_command(2, 2.0))
    for _ in range(1200):
        mock.read(fbk)
    assert fbk.position[0] == 0.5 and fbk.velocity[0] == 0.0
    assert fbk.position[1] == 2.0  # Disabled: the limit is not enforced
    assert list(fbk.position_limit_state) == [LimitState.ABOVE, LimitState.INSIDE]
    mock.write(position_command(2, 0.0))  # back inside: moves from the limit at rated speed
    mock.read(fbk)
    assert fbk.position[0] == pytest.approx(0.5 - 2.0 * DT) and fbk.position_limit_state[0] == LimitState.INSIDE


def test_mstop_holds_and_reports_until_released():
    """press_mstop: held modules stop where they are, commands move only Disabled ones; mstop reads 1."""
    from hebictl.hardware.firmware import ModuleSafety

    mock = make_mock(2, command_lifetime=0.0, max_speed=1.0)
    mock.set_safety(ModuleSafety.create([-9, -9], [9, 9], mstop_strategy=["HoldPosition", "Disabled"]))
    fbk = Feedback.empty(2)
    mock.read(fbk)
    assert not fbk.m_stopped and list(fbk.mstop) == [0.0, 0.0]
    mock.write(position_command(2, 1.0))
    for _ in range(100):
        mock.read(fbk)
    mock.press_mstop()
    at_press = fbk.position.copy()
    for _ in range(100):
        mock.read(fbk)
        mock.write(position_command(2, 1.0))
    assert fbk.m_stopped and list(fbk.mstop) == [1.0, 1.0]
    assert fbk.position[0] == pytest.approx(at_press[0], abs=1e-12)  # held
    assert fbk.position[1] == pytest.approx(at_press[1] + 0.1, abs=1e-9)  # Disabled: kept moving
    mock.release_mstop()
    mock.write(position_command(2, 1.0))
    mock.read(fbk)
    assert not fbk.m_stopped and fbk.velocity[0] == 1.0


def test_each_joint_of_one_group_takes_its_own_regime():
    """Joints of one mock each at a regime's edge (band vmax*tau, rated speed, NaN, tau=0) match their references."""
    vmax, emax, tau = 2.0, 3.0, [0.05, 0.05, 0.05, 0.02, 0.05, 0.0]
    mock = make_mock(6, time_constant_s=tau, initial_position=[0, 0, 0.4, 0, 0, 0], command_lifetime=0.0,
                     max_speed=vmax, max_effort=emax)
    fbk, cmd = Feedback.empty(6), Command.empty(6)
    assert mock.read(fbk)
    cmd.position[:] = [0.0999, 0.1001, np.nan, np.nan, 0.3, 0.01]  # band = 0.1 rad for joints 0, 1
    cmd.velocity[:] = [np.nan, np.nan, np.nan, vmax * 1.0001, 1.0, np.nan]
    cmd.effort[:] = [emax * 1.0001, -emax * 0.9999, np.nan, 0.0, np.nan, -9.0]
    mock.write(cmd)
    rows = np.array([(fbk.time[0], *fbk.position, *fbk.velocity) for _ in range(400) if mock.read(fbk)])
    t, pos, vel = rows[:, 0], rows[:, 1:7], rows[:, 7:]
    for j, (r0, v) in {0: (0.0999, 0.0), 1: (0.1001, 0.0), 3: (0.0, vmax), 4: (0.3, 1.0)}.items():
        np.testing.assert_allclose(pos[:, j], _saturated_lag_reference(0.0, r0, v, tau[j], vmax, t), atol=2e-6)
        np.testing.assert_allclose(vel[:, j], np.clip((r0 + v * t - pos[:, j]) / tau[j], -vmax, vmax), atol=1e-9)
    np.testing.assert_allclose(pos[:, 5], np.minimum(vmax * t, 0.01), atol=1e-15)  # tau = 0 at rated speed
    assert np.all(pos[:, 2] == 0.4) and np.all(vel[:, 2] == 0.0) and np.all(np.abs(vel) <= vmax)  # 2 holds
    np.testing.assert_array_equal(fbk.effort, [emax, -emax * 0.9999, 0.0, 0.0, 0.0, -emax])


@pytest.mark.parametrize("backend", ["mock", "sim"])
def test_double_shoulder_arm_starts_at_its_initial_position_on_mock_as_on_sim(backend):
    """Issue 23: Arm.from_config(double shoulder, backend="mock", initial_position=<7 values>) raised
    "[initial_position]: expected a number or 1 numbers": the mirror module's group of one got the arm's
    7 values. The mock now opens extra modules on the arm's joints as the sim does: the arm reads its
    home on both backends, and the mirror module starts at -home[1] (mounted mirrored)."""
    from pathlib import Path

    from hebictl.config import load_config
    from hebictl.control.arm import Arm

    if backend == "sim":
        pytest.importorskip("mujoco")
    repo = Path(__file__).resolve().parents[2]
    cfg = load_config(repo / "configs" / "x-series-7dof-double-shoulder.cfg.yaml")
    home = np.asarray(cfg.user_data["home_position"], dtype=float)
    assert home.size == 7
    # a simulated clock: on the wall clock the sim's arm sags between the two reads by however long
    # the process waited (5 µrad once, under load), which is not what this test is about
    arm = Arm.from_config(cfg, backend=backend, initial_position=home, clock=SimClock())
    try:
        assert arm.update()
        np.testing.assert_allclose(arm.last_feedback.position, home, atol=1e-6)
        mirror = arm.plugin("DoubledJointMirror")
        fb = Feedback.empty(1)
        assert mirror.backend.read(fb, timeout_s=1.0)
        np.testing.assert_allclose(fb.position, [-home[1]], atol=1e-6)
    finally:
        arm.close()


def test_extra_modules_refuse_a_joint_outside_the_arm():
    mock = open_backend("mock", names=["a", "b"], clock=SimClock(), initial_position=[0.5, -0.25])
    extra = mock.open_extra_modules(["m"], ["F"], joints=[1], signs=[-1.0])
    assert extra.true_state()[0].tolist() == [0.25]
    with pytest.raises(ConfigError, match=r"one joint in 0\.\.1"):
        mock.open_extra_modules(["m"], ["F"], joints=[2], signs=[1.0])
