"""The Backend contract, checked on the mock and on hebi-py's imitation group side by side."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import CommandRejected, ConfigError, HardwareError, HebictlError
from hebictl.hardware import (
    Backend,
    Command,
    Feedback,
    MonotonicClock,
    SimClock,
    available_backends,
    open_backend,
    register_backend,
    unregister_backend,
)
from hebictl.hardware.mock import MockBackend
from hebictl.hardware.registry import resolve_modules

N = 4
FLOAT32_RTOL = 2e-7  # hebi carries velocity and effort as float32
ANGLE_ATOL = 1e-7    # and positions as whole revolutions + a float32 remainder

# Joint 0: position only; 1: velocity only; 2: position and effort; 3: nothing.
ROUND_TRIP = Command(
    position=np.array([0.3, np.nan, -0.2, np.nan]),
    velocity=np.array([np.nan, 0.5, np.nan, np.nan]),
    effort=np.array([np.nan, np.nan, 1.5, np.nan]),
)


@pytest.fixture(params=["mock", "hebi-imitation"])
def backend(request):
    """A 4-module backend of each kind: the mock (perfect tracking, SimClock) and hebi-imitation."""
    if request.param == "mock":
        b = open_backend("mock", dof=N, clock=SimClock(), feedback_frequency=1000.0)
    else:
        b = open_backend("hebi-imitation", dof=N, feedback_frequency=1000.0)
    yield b
    b.close()


# ---------------------------------------------------------------------- conformance
def test_backend_satisfies_protocol(backend):
    """Both backends are runtime instances of the Backend protocol with consistent module lists."""
    assert isinstance(backend, Backend)
    assert backend.size == N
    assert backend.names == ("J1", "J2", "J3", "J4")
    assert len(backend.families) == N


def test_read_waits_for_the_next_sample_as_the_backend_says(backend):
    """``read_waits_for_feedback``: the mock's reads are a feedback period apart on its clock (so a
    loop may be paced by them); hebi's imitation group answers 100 reads at once (so a loop paced by
    it would spin, and `hebictl run` runs on its own deadlines there)."""
    fbk = Feedback.empty(N)
    assert backend.read(fbk)
    if backend.read_waits_for_feedback:
        clock = backend.clock  # the mock's SimClock: its reads advance it to each sample
        t0 = clock.now()
        for _ in range(100):
            assert backend.read(fbk)
        assert clock.now() - t0 >= 100 / backend.feedback_frequency * (1 - 1e-9)
    else:
        # the claim is that no read waits for a sample: a thread that waits (sleeps, blocks on a lock or
        # a socket) gives up its CPU, which the kernel counts as a voluntary context switch (being
        # preempted by a loaded machine is counted apart, as involuntary): waiting reads make one each
        # (the mock on MonotonicClock, whose reads sleep to each sample, makes 100 in 100 reads)
        before = _voluntary_switches()
        for _ in range(100):
            assert backend.read(fbk)
        waits = _voluntary_switches() - before
        print(f"100 reads: the reading thread gave up its CPU {waits} times")
        assert waits < 25


def _voluntary_switches() -> int:
    """This thread's voluntary context switches so far (Linux: /proc/thread-self/status; skips elsewhere)."""
    status = Path("/proc/thread-self/status")
    found = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status.read_text(), re.M) if status.exists() else None
    if found is None:
        pytest.skip("needs Linux's per-thread context switch counts (/proc/thread-self/status)")
    return int(found.group(1))


def test_round_trip_write_then_read(backend):
    """What was written comes back: command echoes (NaN kept) and positions/velocities/efforts."""
    fbk = Feedback.empty(N)
    assert backend.read(fbk, timeout_s=0.1)
    assert backend.write(ROUND_TRIP)
    assert backend.read(fbk, timeout_s=0.1)
    np.testing.assert_allclose(fbk.position_command, ROUND_TRIP.position, rtol=0, atol=ANGLE_ATOL)
    np.testing.assert_allclose(fbk.velocity_command, ROUND_TRIP.velocity, rtol=FLOAT32_RTOL)
    np.testing.assert_allclose(fbk.effort_command, ROUND_TRIP.effort, rtol=FLOAT32_RTOL)
    np.testing.assert_allclose(fbk.position[[0, 2]], [0.3, -0.2], rtol=0, atol=ANGLE_ATOL)
    np.testing.assert_allclose(fbk.velocity[1], 0.5, rtol=FLOAT32_RTOL)
    np.testing.assert_allclose(fbk.effort[2], 1.5, rtol=FLOAT32_RTOL)


def test_nan_means_not_commanded(backend):
    """A module left NaN in a later command is reported as not commanded any more."""
    fbk = Feedback.empty(N)
    backend.read(fbk)
    backend.write(ROUND_TRIP)
    backend.read(fbk)
    assert np.isfinite(fbk.position_command[0])
    second = Command.empty(N)
    second.position[2] = 0.1
    backend.write(second)
    backend.read(fbk)
    assert np.isnan(fbk.position_command[[0, 1, 3]]).all()
    assert np.isnan(fbk.velocity_command).all()
    assert fbk.position_command[2] == pytest.approx(0.1, rel=0, abs=ANGLE_ATOL)


def test_read_refills_the_same_buffers(backend):
    """read() writes into the caller's arrays (no new arrays) and bumps sequence per sample."""
    fbk = Feedback.empty(N)
    arrays = [fbk.time, fbk.position, fbk.velocity, fbk.effort, fbk.orientation]
    sequences = []
    for _ in range(3):
        assert backend.read(fbk)
        sequences.append(fbk.sequence)
    assert all(a is b for a, b in zip(arrays, [fbk.time, fbk.position, fbk.velocity, fbk.effort,
                                               fbk.orientation], strict=True))
    assert sequences == [sequences[0], sequences[0] + 1, sequences[0] + 2]
    assert np.isfinite(fbk.rx_time) and np.isfinite(fbk.time).all()


@pytest.mark.parametrize("hz", [1.0, 250.0, 1000.0])
def test_feedback_frequency_settable(backend, hz):
    """feedback_frequency reads back what was set [Hz]."""
    backend.feedback_frequency = hz
    assert backend.feedback_frequency == pytest.approx(hz)


@pytest.mark.parametrize("seconds", [0.0, 0.1, 0.25, 1.0])
def test_command_lifetime_settable(backend, seconds):
    """command_lifetime reads back what was set, in seconds."""
    backend.command_lifetime = seconds
    assert backend.command_lifetime == pytest.approx(seconds)


@pytest.mark.parametrize(("attr", "value"), [("feedback_frequency", -1.0),
                                             ("feedback_frequency", float("nan")),
                                             ("command_lifetime", -0.5),
                                             ("command_lifetime", float("inf"))])
def test_invalid_rates_rejected(backend, attr, value):
    """Negative or non-finite rates are a ConfigError naming the setting."""
    with pytest.raises(ConfigError) as err:
        setattr(backend, attr, value)
    assert err.value.key == attr


def test_wrong_size_command_rejected(backend):
    """A command for a different number of modules is refused, not truncated."""
    with pytest.raises(CommandRejected) as err:
        backend.write(Command.empty(N + 1))
    assert err.value.reason == "size_mismatch"


@pytest.mark.parametrize("timeout_s", [-0.1, float("nan"), float("inf")])
def test_bad_read_timeout_rejected(backend, timeout_s):
    """A negative or non-finite read timeout is a HardwareError, not a hang."""
    with pytest.raises(HardwareError, match="timeout"):
        backend.read(Feedback.empty(N), timeout_s=timeout_s)


def test_wrong_size_feedback_buffer_rejected(backend):
    """A feedback buffer for another number of modules is a HardwareError."""
    with pytest.raises(HardwareError, match="modules"):
        backend.read(Feedback.empty(N - 1))


def test_close_is_idempotent_and_final(backend):
    """close() twice is fine; read/write after close raise HardwareError."""
    backend.close()
    backend.close()
    with pytest.raises(HardwareError):
        backend.read(Feedback.empty(N))
    with pytest.raises(HardwareError):
        backend.write(Command.empty(N))


@pytest.mark.parametrize("name", ["mock", "hebi-imitation"])
def test_context_manager_closes(name):
    """Leaving a with-block closes the backend."""
    with open_backend(name, dof=2) as b:
        assert b.read(Feedback.empty(2), timeout_s=0.05)
    with pytest.raises(HardwareError):
        b.read(Feedback.empty(2))


@pytest.mark.parametrize("name", ["mock", "hebi-imitation"])
def test_read_write_fit_a_1khz_loop(name):
    """2,000 cycles of read+write as a 1 kHz loop makes them: every read answers and echoes the last
    command, and the mock's reads advance its clock by one feedback period each. How long a cycle
    takes (far below the 1 ms budget) is benchmarks/backend_io.py's figure, printed here too."""
    clock = SimClock()
    kwargs = {"clock": clock} if name == "mock" else {}
    with open_backend(name, dof=6, feedback_frequency=1000.0, **kwargs) as b:
        fbk, cmd = Feedback.empty(6), Command.empty(6)
        cmd.position[:] = 0.5
        assert b.read(fbk, timeout_s=0.01)
        b.write(cmd)
        t0, cycles, answered, echoed = clock.now(), 2000, 0, 0
        start = time.perf_counter()
        for _ in range(cycles):
            answered += b.read(fbk, timeout_s=0.01)
            echoed += bool(np.all(fbk.position_command == 0.5))
            b.write(cmd)
        mean_us = (time.perf_counter() - start) / cycles * 1e6
    print(f"{name}: {mean_us:.1f} µs per read+write (the wall clock: a figure, see benchmarks/backend_io.py)")
    assert answered == echoed == cycles
    if name == "mock":
        assert clock.now() - t0 == pytest.approx(cycles / 1000.0)


# ---------------------------------------------------------------------- value types
@pytest.mark.parametrize(("field", "bad"), [
    ("position", np.zeros(3, dtype=np.float32)),
    ("position", np.zeros((3, 1))),
    ("orientation", np.zeros((3, 3))),
    ("velocity", np.zeros(6)[::2]),
    ("effort", [0.0, 0.0, 0.0]),
])
def test_feedback_rejects_unusable_buffers(field, bad):
    """Feedback arrays must be contiguous float64 of the right shape, or backends can't fill them."""
    arrays = {f: getattr(Feedback.empty(3), f) for f in
              ("time", "position", "velocity", "effort", "orientation",
               "position_command", "velocity_command", "effort_command")}
    arrays[field] = bad
    with pytest.raises(HardwareError, match=field):
        Feedback(**arrays)


def test_feedback_copy_is_deep_and_copy_into_matches():
    """copy() owns its arrays; copy_into() reproduces every field."""
    a = Feedback.empty(2)
    a.position[:] = [1.0, 2.0]
    a.sequence, a.rx_time = 7, 3.5
    b = a.copy()
    a.position[0] = 9.0
    assert b.position[0] == 1.0 and b.sequence == 7 and b.rx_time == 3.5
    c = Feedback.empty(2)
    b.copy_into(c)
    np.testing.assert_array_equal(c.position, b.position)
    assert c.sequence == 7 and c.rx_time == 3.5


def test_command_defaults_and_clear():
    """Command(position=q) commands nothing else; clear() un-commands everything."""
    cmd = Command(position=np.array([1.0, 2.0]))
    assert np.isnan(cmd.velocity).all() and np.isnan(cmd.effort).all() and cmd.size == 2
    cmd.clear()
    assert np.isnan(cmd.position).all()
    with pytest.raises(HardwareError):
        Command(position=np.zeros(2), velocity=np.zeros(3))


# ---------------------------------------------------------------------- registry
def test_unknown_backend_lists_valid_names():
    """An unknown backend name is a HardwareError that lists the valid ones."""
    with pytest.raises(HardwareError) as err:
        open_backend("no-such-backend", dof=1)
    assert set(available_backends()) >= {"mock", "hebi", "hebi-imitation", "sim"}
    assert f"valid backends: {', '.join(available_backends())}" in str(err.value)


def test_sim_backend_missing_is_clear(monkeypatch):
    """Where sim_backend cannot be imported (no MuJoCo), 'sim' is a HardwareError naming the backend."""
    monkeypatch.setitem(sys.modules, "sim_backend", None)  # makes ``import sim_backend`` fail
    with pytest.raises(HardwareError, match="backend 'sim' is not available: importing 'sim_backend' failed"):
        open_backend("sim", dof=6)


def test_sim_backend_without_mujoco_names_the_extra():
    """Without MuJoCo, 'sim' is an InstallationError that says which extra installs it.

    In a fresh interpreter: importing sim_backend again in this one would run its kernel modules a
    second time and leave hebictl.jit's registry holding kernels of module objects that are gone
    (every later sim arm of this pytest worker then failed to load its kernels)."""
    code = ("import re, sys\n"
            "sys.modules['mujoco'] = None  # ``import mujoco`` fails as if not installed\n"
            "from hebictl.errors import InstallationError\n"
            "from hebictl.hardware import open_backend\n"
            "try:\n"
            "    open_backend('sim', dof=6)\n"
            "except InstallationError as exc:\n"
            "    print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"backend 'sim' needs 'mujoco'.*pip install 'hebictl\[sim\]'", r.stdout, re.S), r.stdout


def test_unimportable_backend_is_hardware_error(scratch_registry):
    """A registered dotted path whose module does not import gives a HardwareError, not ImportError."""
    register_backend("ghost", "hebictl_no_such_module.backend:open_ghost")
    with pytest.raises(HardwareError, match="'ghost' is not available"):
        open_backend("ghost", dof=1)


def test_registered_factory_receives_arguments(scratch_registry):
    """register_backend() makes open_backend() call the factory with names, clock and options."""
    seen = {}

    def factory(*, names, families, dof, clock, time_constant_s=0.0):
        seen.update(names=names, families=families, dof=dof, clock=clock)
        n, f = resolve_modules(names, families, dof, default_family="X")
        return MockBackend(n, f, clock=clock, time_constant_s=time_constant_s)

    register_backend("custom", factory)
    clock = SimClock()
    b = open_backend("custom", names=["a", "b"], clock=clock, time_constant_s=0.2)
    assert isinstance(b, MockBackend) and b.families == ("X", "X")
    assert seen == {"names": ["a", "b"], "families": None, "dof": None, "clock": clock}
    assert "custom" in available_backends()


def test_unregister_backend_takes_a_registration_back():
    """unregister_backend() removes a registered name and brings back the built-in it had overridden;
    a name that was never registered is left alone (built-ins stay)."""
    opened = []

    def factory(*, names, families, dof, clock):
        opened.append(dof)
        return MockBackend(*resolve_modules(names, families, dof, default_family="X"), clock=clock)

    register_backend("scratch", factory)
    register_backend("mock", factory)  # overrides the built-in
    try:
        open_backend("mock", dof=2, clock=SimClock())
        assert opened == [2]
    finally:
        unregister_backend("scratch")
        unregister_backend("mock")
    assert "scratch" not in available_backends() and "mock" in available_backends()
    with pytest.raises(HardwareError, match="unknown backend 'scratch'"):
        open_backend("scratch", dof=1)
    assert isinstance(open_backend("mock", dof=3, clock=SimClock()), MockBackend) and opened == [2]  # built-in
    unregister_backend("never-registered")
    unregister_backend("mock")  # a built-in: nothing to take back
    assert "mock" in available_backends()


def test_unknown_option_names_the_key():
    """An option the backend does not take is a ConfigError naming it (and listing valid ones)."""
    with pytest.raises(ConfigError) as err:
        open_backend("mock", dof=2, time_constant=0.1)
    assert err.value.key == "time_constant"
    assert "time_constant_s" in str(err.value)


@pytest.mark.parametrize(("names", "families", "dof", "expected"), [
    (None, None, 3, (("J1", "J2", "J3"), ("D", "D", "D"))),
    (["a", "b"], "Arm", None, (("a", "b"), ("Arm", "Arm"))),
    (["a", "b"], ["Arm"], 2, (("a", "b"), ("Arm", "Arm"))),
    (["a", "b"], ["F1", "F2"], None, (("a", "b"), ("F1", "F2"))),
])
def test_resolve_modules(names, families, dof, expected):
    """Names default to J1..Jn, a single family applies to every module."""
    assert resolve_modules(names, families, dof, default_family="D") == expected


@pytest.mark.parametrize(("names", "families", "dof", "key"), [
    (None, "A", None, "names"),
    (None, "A", 0, "dof"),
    ("J1", "A", None, "names"),
    (["a", "b"], "A", 3, "dof"),
    (["a", "b"], ["A", "B", "C"], None, "families"),
    ([], "A", None, "names"),
])
def test_resolve_modules_errors(names, families, dof, key):
    """Inconsistent module specs are a ConfigError naming the offending key."""
    with pytest.raises(ConfigError) as err:
        resolve_modules(names, families, dof, default_family="D")
    assert err.value.key == key


def test_hebi_requires_families():
    """The real-hardware backend has no default family: it must be given."""
    with pytest.raises(ConfigError) as err:
        open_backend("hebi", names=["J1"])
    assert err.value.key == "families"


# ---------------------------------------------------------------------- clocks
def test_sim_clock_only_moves_forward():
    """SimClock jumps to future deadlines, ignores past ones, and refuses non-finite times."""
    clock = SimClock(start=2.0)
    clock.sleep_until(1.0)
    assert clock.now() == 2.0
    clock.sleep_until(2.5)
    clock.advance(0.25)
    assert clock.now() == 2.75
    for bad in (float("nan"), float("inf")):
        with pytest.raises(HebictlError):
            clock.sleep_until(bad)
    with pytest.raises(HebictlError):
        clock.advance(-1.0)


def test_monotonic_clock_sleeps_until_deadline():
    """MonotonicClock.sleep_until returns at or after the deadline (never early: the order is the
    claim; how late a sleep wakes is the machine's, benchmarks/loop_latency.py's wake-up latency)."""
    clock = MonotonicClock()
    for step in (0.005, 0.0, -0.001):
        deadline = clock.now() + step
        clock.sleep_until(deadline)
        late = clock.now() - deadline
        print(f"woke {late * 1000:.3f} ms after a deadline {step * 1000:g} ms ahead")
        assert late >= 0.0
