"""`hebictl run`, `check-config` and `plot` as a user runs them: real processes, bundled configs.

Runs on the mock that check what the run does (not its wall-clock timing) use ``--paced-clock``: a
loaded machine then stretches the mock's simulated time instead of stopping the arm with a control
gap, and the run's times and loop statistics are exact. Signals wait for events (the handlers in
place, the stop notice), with hang guards only. The loop's timing accounting (work, waiting,
overruns, misses) is tested exactly in simulated time in tests/control/test_loop.py; its wall-clock
figures are benchmarks/loop_latency.py's.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.errors import ConfigWarning

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"


def hebictl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m hebictl ARGS`` in a temporary working directory (nothing lands in the repository)."""
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())


def test_run_homes_follows_a_goal_and_records(tmp_path):
    """run: home, then --goal, then hold; --record and --plot write their files; exit 0."""
    rec, png = tmp_path / "run.npz", tmp_path / "run.png"
    goal = ["0.2", "1.1", "1.6", "2.0", "-1.4", "0.3"]
    r = hebictl("run", str(CONFIG), "--backend", "mock", "--goal", *goal, "--goal-time", "0.5",
                "--hold", "0.2", "--record", str(rec), "--plot", str(png), "--quiet", "--paced-clock")
    assert r.returncode == 0, r.stderr
    assert "phases=home, goal, hold" in r.stdout
    from hebictl.control.recorder import Recorder

    recording = Recorder.load(rec)
    np.testing.assert_allclose(recording.series("position")[-1], [float(x) for x in goal], atol=1e-6)
    assert png.stat().st_size > 10_000
    p = hebictl("plot", str(rec), "-o", str(tmp_path / "again.png"))
    assert p.returncode == 0 and (tmp_path / "again.png").exists()


def _handles_sigterm(pid: int) -> bool:
    """True once the process catches SIGTERM (Linux: the SigCgt mask of /proc/PID/status).

    ``hebictl run`` installs its SIGINT and SIGTERM handlers together just before its loop starts,
    so this says the run is ready for a signal however long imports and kernel loading took."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


class _Run:
    """``hebictl run ... --hold inf`` as a child process whose stderr lines are collected as they come."""

    def __init__(self, *extra: str) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "hebictl", "run", str(CONFIG), "--backend", "mock",
                                      "--no-home", "--hold", "inf", "--paced-clock", *extra],
                                     cwd=tempfile.gettempdir(),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err_lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.err_lines.extend(iter(self.proc.stderr.readline, "")),
                                         daemon=True)
        self._reader.start()

    def wait_for(self, what: Callable[[], bool], why: str, timeout: float = 120.0) -> None:
        """Poll ``what`` (no fixed sleeps: a loaded machine only makes this slower, never wrong)."""
        deadline = time.monotonic() + timeout
        while not what():
            assert self.proc.poll() is None, f"exited early ({self.proc.returncode}) while waiting for {why}: " \
                                             f"{''.join(self.err_lines)}"
            assert time.monotonic() < deadline, f"no {why} within {timeout} s"
            time.sleep(0.05)

    def finish(self, timeout: float = 60.0) -> tuple[str, str, float]:
        """(stdout, stderr, seconds since start) once the process has exited."""
        out, _ = self.proc.communicate(timeout=timeout)
        self._reader.join(timeout)
        return out, "".join(self.err_lines), time.monotonic() - self.started

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _event_times(out: str) -> list[float]:
    return [float(t) for t in re.findall(r"event t=(-?[\d.]+) s", out)]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
@pytest.mark.parametrize("sig, kind", [(signal.SIGINT, "interrupt"), (signal.SIGTERM, "terminate")])
def test_signal_stops_with_hold_until_a_second_signal(sig, kind):
    """Ctrl-C (SIGINT) during an endless hold: a latched 'hold' stop (never a release) that keeps the
    process holding until a second signal, which then ends it with exit 0; with ``--stop-hold inf``
    given, SIGTERM does the same (without it SIGTERM's hold is bounded: the tests below). Event times
    count from the run's start. Readiness and the stop are observed, not assumed from sleeps."""
    run = _Run(*(("--stop-hold", "inf") if sig == signal.SIGTERM else ()))
    try:
        run.wait_for(lambda: _handles_sigterm(run.proc.pid), "signal handlers (run loop started)")
        run.proc.send_signal(sig)
        run.wait_for(lambda: any("stopping: holding the arm" in ln for ln in run.err_lines), "stop message")
        assert run.proc.poll() is None, "the first signal must not end the hold"  # (wait_for checks it too)
        run.proc.send_signal(sig)
        out, err, elapsed = run.finish()
    finally:
        run.kill()
    assert run.proc.returncode == 0, err
    assert f"{kind} -> stopped" in out and "[hold]" in out and "release" not in out
    times = _event_times(out)
    assert times and all(0.0 <= t <= elapsed for t in times), out  # since the run started, not since boot


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
def test_signal_with_stop_hold_exits_after_holding():
    """With --stop-hold S one signal is enough: the arm holds S seconds, then the command exits 0."""
    run = _Run("--stop-hold", "0.3", "--quiet")
    try:
        run.wait_for(lambda: _handles_sigterm(run.proc.pid), "signal handlers (run loop started)")
        run.proc.send_signal(signal.SIGTERM)
        out, err, _ = run.finish()
    finally:
        run.kill()
    assert run.proc.returncode == 0, err
    assert "terminate -> stopped" in out and "[hold]" in out and "release" not in out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to see the signal handlers")
def test_one_sigterm_brakes_holds_and_exits_with_the_summary():
    """What systemd, ``docker stop`` and ``timeout`` send: one SIGTERM to an endless ``run`` (with
    ``--stop-hold 5``, the hold a config without a rest pose gets by default): the stop notice
    (with its bounded hold) comes first, then the process exits by
    itself with exit 0, its summary showing the 'terminate' hold stop and the real-time line. (It
    held until a second signal before; under ``timeout`` that was 25 minutes until SIGKILL.) The
    hold's length is checked in simulated time above; here only the order and the exit."""
    run = _Run("--stop-hold", "5")  # without it the bundled config's rest pose is parked at: tests/control/test_park.py
    try:
        run.wait_for(lambda: _handles_sigterm(run.proc.pid), "signal handlers (run loop started)")
        run.proc.send_signal(signal.SIGTERM)
        run.wait_for(lambda: any("stopping: holding the arm; for 5 s, then exiting" in ln for ln in run.err_lines),
                     "the stop notice")
        out, err, _ = run.finish(timeout=120)  # a hang guard: the hold is 5 s
    finally:
        run.kill()
    assert run.proc.returncode == 0, err
    assert "terminate -> stopped" in out and "[hold]" in out and "release" not in out
    assert out.index("done after") < out.index("terminate -> stopped")
    assert re.search(r"real-time: (SCHED_FIFO priority \d+|normal priority|off \(--rt-priority 0\))", out), out
    print(out)


def test_bad_goal_length_is_a_clear_error():
    """A --goal of the wrong length ends with one error line naming the flag and the joints, exit 2."""
    r = hebictl("run", str(CONFIG), "--goal", "0", "1", "--quiet")
    assert r.returncode == 2
    assert r.stderr.startswith("hebictl: error: --goal needs 6 positions (J1_base") and r.stderr.count("\n") == 1
    assert "<config>" not in r.stderr and "Traceback" not in r.stderr


@pytest.fixture
def writes(monkeypatch) -> list[int]:
    """Commands the mock and sim backends were sent (the real backends, counted on the way through)."""
    from hebictl.hardware.mock import MockBackend

    sent: list[int] = []
    classes = [MockBackend]
    with contextlib.suppress(ImportError):
        from sim_backend.backend import SimBackend

        classes.append(SimBackend)
    for cls in classes:
        original = cls.write

        def write(self, command, original=original):
            sent.append(1)
            return original(self, command)

        monkeypatch.setattr(cls, "write", write)
    return sent


@pytest.mark.parametrize("backend", ["mock", "sim"])
@pytest.mark.parametrize(("argv", "expect"), [
    (["--goal", "0", "5", "1.8", "2.2", "-1.57", "0"],
     "--goal refused before moving: out_of_limits: waypoint 0: joint 1 (J2_shoulder) to 5.0000 is beyond its "
     "limit 3.1300"),
    (["--goal", "0", "1.2", "1.8", "2.2", "-1.0", "0", "--goal-time", "0.1"],
     "--goal refused before moving: too_fast: joint 4 (J5_wrist2) needs"),
    (["--goal", "0", "1.2", "1.8", "2.2", "-1.57", "0", "--goal-time", "0"], "--goal-time 0 is out of range"),
    (["--plot", "/nonexistent/x.png"], "--plot /nonexistent/x.png: folder /nonexistent does not exist"),
    (["--record", "/nonexistent/run.npz"], "--record /nonexistent/run.npz: folder /nonexistent does not exist"),
    (["--hold", "-1"], "--hold -1 is out of range"),
])
def test_run_refuses_before_anything_moves(argv, expect, backend, writes, capsys, tmp_path, monkeypatch):
    """The goal (limits, and a --goal-time faster than the arm's own admission allows, checked from the
    home position it will start from), the timing flags and the output folders are checked before the
    first command: exit 2, one line naming the flag, and not one command sent to the modules."""
    if backend == "sim":
        pytest.importorskip("mujoco")
    monkeypatch.chdir(tmp_path)
    from hebictl.cli import main

    assert main(["run", str(CONFIG), "--backend", backend, "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hebictl: error: ") and err.count("\n") == 1, err
    assert expect in err
    assert writes == [], f"{len(writes)} commands were sent before the refusal"


def test_run_goal_at_the_rated_limit_is_accepted_and_followed(tmp_path):
    """The pre-check is the arm's own admission, not a stricter guess: the fastest --goal-time it accepts
    (found by bisection on the same admission) runs to the goal with exit 0."""
    from hebictl.config import load_config as load
    from hebictl.control.admission import plan
    from hebictl.control.arm import Arm
    from hebictl.control.goal import Goal
    from hebictl.errors import CommandRejected

    home = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
    goal = np.array([0.3, 1.0, 1.5, 2.0, -1.2, 0.3])
    arm = Arm.from_config(load(CONFIG), backend="mock")
    rest = np.zeros(6)
    lo, hi = 0.01, 5.0
    for _ in range(30):
        mid = (lo + hi) / 2
        try:
            plan(Goal(6).add_waypoint(t=mid, position=goal), 0.0, (home, rest, rest), arm.limits, arm.model)
            hi = mid
        except CommandRejected:
            lo = mid
    arm.close()
    fastest = hi * 1.001
    r = hebictl("run", str(CONFIG), "--goal", *map(str, goal), "--goal-time", f"{fastest:.6f}", "--hold", "0.1",
                "--quiet", "--paced-clock")
    assert r.returncode == 0, r.stderr
    slower = hebictl("run", str(CONFIG), "--goal", *map(str, goal), "--goal-time", f"{lo * 0.99:.6f}", "--quiet")
    assert slower.returncode == 2 and "too_fast" in slower.stderr
    print(f"fastest accepted --goal-time {fastest:.3f} s; {lo * 0.99:.3f} s refused before moving")


def test_an_error_during_the_run_brakes_holds_and_writes_everything(tmp_path, monkeypatch, capsys):
    """An error half-way through the goal (a HardwareError out of the real arm on the mock, injected once):
    the arm brakes from its speed and holds for --stop-hold, then the recording and the summary are written
    and the exit code is 2."""
    from hebictl.cli import main
    from hebictl.control.arm import Arm
    from hebictl.control.recorder import Recorder
    from hebictl.errors import HardwareError

    original = Arm.update
    raised = []

    def update(self):
        if not raised and self.trajectory is not None and self.goal_progress > 0.5 and self.state.value == "running" \
                and np.abs(self.last_feedback.position[5]) > 0.05:  # the goal move, not homing
            raised.append(self.last_feedback.velocity.copy())
            raise HardwareError("module 3 (J4_wrist1) stopped answering")
        return original(self)

    monkeypatch.setattr(Arm, "update", update)
    rec = tmp_path / "run.npz"
    goal = [0.5, 1.2, 1.8, 2.2, -1.57, 0.6]
    code = main(["run", str(CONFIG), "--goal", *map(str, goal), "--goal-time", "2", "--stop-hold", "0.4",
                 "--record", str(rec), "--quiet", "--paced-clock"])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "hebictl: error: module 3 (J4_wrist1) stopped answering; braking and holding the arm; for 0.4 s" in err
    assert "internal_error -> stopped: HardwareError: module 3 (J4_wrist1) stopped answering [hold]" in out
    assert "done after" in out and f"recording: {rec}" in out
    recording = Recorder.load(rec)
    pos, t = recording.series("position"), recording.times
    i = int(np.searchsorted(t, t[-1] - 0.1))  # the brake (within the 0.4 s) is over by then
    print(f"moving at {np.abs(raised[0]).max():.3f} rad/s at the error; stopped {np.abs(pos[-1] - goal).max():.3f} "
          f"rad short of the goal")
    assert np.abs(raised[0]).max() > 0.1, "the arm was moving when the error came"
    drift = np.abs(pos[i:] - pos[-1]).max()
    print(f"position drift over the last 0.1 s of the hold: {drift:.2e} rad")
    assert drift < 1e-3, "the arm holds still after the error"
    assert np.abs(pos[-1] - goal).max() > 0.01, "it stopped, it did not go on to the goal"


@pytest.mark.parametrize("config", sorted((REPO / "configs").glob("*.cfg.yaml")), ids=lambda p: p.stem)
def test_check_config_accepts_the_bundled_configs(config):
    """check-config loads config, HRDF and gains and reports them, with finite limits per joint."""
    r = hebictl("check-config", str(config))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"ok: {config}")
    assert "stop behaviour hold" in r.stdout and " inf" not in r.stdout
    assert r.stdout.count(" rad/s² ") == len(load_config(config).names)
    # what run's and teleop's loop thread would be granted (asked of the OS): off under this suite's
    # HEBICTL_RT_PRIORITY=0 (tests/conftest.py), the built-in default 80 without it (root here: all of it)
    rt = r.stdout.strip().splitlines()[-1]
    assert rt == "real-time (run/teleop's loop thread would get): off (--rt-priority 0): the control loop runs " \
                 "at normal priority", rt
    env = {k: v for k, v in os.environ.items() if k != "HEBICTL_RT_PRIORITY"}
    r = subprocess.run([sys.executable, "-m", "hebictl", "check-config", str(config)], capture_output=True,
                       text=True, timeout=120, cwd=tempfile.gettempdir(), env=env)
    rt = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0 and rt.startswith("real-time (run/teleop's loop thread would get): "), rt
    if os.geteuid() == 0:
        assert rt.endswith("SCHED_FIFO priority 80, memory locked"), rt


def test_check_config_names_file_and_key(tmp_path):
    """A config with an unknown key fails with file and key, exit 2."""
    bad = tmp_path / "bad.cfg.yaml"
    bad.write_text(CONFIG.read_text().replace("version: 1.1", "version: 1.1\nspeed: 3"))
    r = hebictl("check-config", str(bad))
    assert r.returncode == 2 and str(bad) in r.stderr and "speed" in r.stderr


def test_check_config_refuses_a_missing_gains_file_the_library_keeps(tmp_path):
    """hebi-py's load_config keeps gains paths without looking (HEBI's Daisy config names an unpublished
    one), so load_config does too; check-config checks what a run needs, so it fails naming the file,
    in one line (issue 23: not a warning that the config loads, then an error)."""
    for name in ("hrdf_kits", "configs"):
        (tmp_path / name).symlink_to(REPO / name)
    cfg = tmp_path / "configs" / "x-series-6dof.cfg.yaml"
    bad = tmp_path / "missing-gains.cfg.yaml"
    text = cfg.read_text().replace("gains/x-series-6dof.xml", "gains/not-published.xml")
    bad.write_text(text.replace('"../hrdf_kits/', '"hrdf_kits/').replace("../hrdf_kits/", "hrdf_kits/"))
    import hebi

    assert hebi.config.load_config(str(bad)).gains["default"].endswith("not-published.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        assert load_config(bad).gains["default"].name == "not-published.xml"
    r = hebictl("check-config", str(bad))
    assert r.returncode == 2 and "not-published.xml" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def _line_of(path: Path, text: str) -> int:
    """1-based line where ``text`` starts in the file (the config's layout may change)."""
    content = path.read_text()
    return content.count("\n", 0, content.index(text)) + 1


def _config_with(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "robot.cfg.yaml"
    text = CONFIG.read_text()
    assert old in text
    path.write_text(text.replace(old, new).replace('"../hrdf_kits/', f'"{REPO}/hrdf_kits/')
                    .replace('"gains/', f'"{REPO}/configs/gains/'))
    return path


@pytest.mark.parametrize(("old", "new", "expect"), [
    ("type: GravityCompensationEffort", "type: GravityCompensationEfort",
     ":{line} [plugins[0].type]: unknown plugin type 'GravityCompensationEfort' (did you mean "
     "'GravityCompensationEffort'?)"),
    ("home_position: [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]", "home_position: [0.0, 1.2, 1.8, 2.2, -1.57]",
     ":{line} [user_data.home_position]: has 5 values, the arm has 6 joints"),
    ("rest_position: [0.0, 0.6, 1.0, 2.1, -1.57, 0.0]", "rest_position: [0.0, 0.6, 1.0, 2.1, -1.57]",
     ":{line} [user_data.rest_position]: has 5 values, the arm has 6 joints"),
    ("rest_position: [0.0, 0.6, 1.0, 2.1, -1.57, 0.0]", "rest_position: [0.0, 0.6, folded, 2.1, -1.57, 0.0]",
     ":{line} [user_data.rest_position[2]]: "),
    ("    ramp_time: 1\n\n  - type: DynamicsCompensationEffort",
     "    ramp_tme: 1\n\n  - type: DynamicsCompensationEffort",
     "(did you mean 'ramp_time'?); allowed: enabled, imu_feedback_index, imu_frame_index, imu_rotation_offset, "
     "name, ramp_time, type"),
])
def test_check_config_rejects_what_run_would_trip_on(tmp_path, old, new, expect):
    """Misspelt plugin type, a home_position of the wrong length, a misspelt plugin key: exit 2, one line
    naming file, line and key."""
    path = _config_with(tmp_path, old, new)
    r = hebictl("check-config", str(path))
    assert r.returncode == 2, r.stdout
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"hebictl: error: {path}")
    assert expect.format(line=_line_of(path, new)) in r.stderr


def test_check_config_names_a_suspicious_user_data_key_readably(tmp_path):
    """home_positon (homing would be skipped): a one-line warning naming it, exit 0 (user_data is free-form)."""
    path = _config_with(tmp_path, "home_position:", "home_positon:")
    r = hebictl("check-config", str(path))
    assert r.returncode == 0, r.stderr
    line = _line_of(path, "home_positon")
    assert r.stderr == (f"hebictl: warning: {path}:{line} [user_data.home_positon]: user_data key 'home_positon' "
                        "is not one hebictl reads (did you mean 'home_position'?); as written it is ignored\n")


def test_run_summary_covers_the_whole_run(tmp_path):
    """The closing statistics count every cycle of the run, not the last 1-s window: as many cycles as
    the recording (one sample per cycle) holds, and with the missed cycles as many feedback periods as
    the recording spans (which is at least the goal's and the hold's time); event times, if any, count
    from the run's start."""
    rec = tmp_path / "run.npz"
    goal_time, hold = 1.5, 1.2
    r = hebictl("run", str(CONFIG), "--no-home", "--goal", "0", "1.2", "1.8", "2.2", "-1.57", "0",
                "--goal-time", str(goal_time), "--hold", str(hold), "--quiet", "--record", str(rec), "--paced-clock")
    assert r.returncode == 0, r.stderr
    from hebictl.control.recorder import Recorder

    head = re.search(r"loop at ([\d.]+) Hz .*whole run: (\d+) cycles; deadline misses (\d+), .*missed cycles (\d+)",
                     r.stdout)
    assert head, r.stdout
    rate = float(head.group(1))
    cycles, late, missed = map(int, head.groups()[1:])
    stamps = Recorder.load(rec).times
    span = stamps[-1] - stamps[0]
    periods = round(span * rate)  # feedback periods between the first and the last cycle
    print(f"{cycles} cycles + {missed} missed over {span:.3f} s = {periods} periods at {rate:g} Hz "
          f"({late} deadline misses); recording {len(stamps)} samples")
    assert cycles == len(stamps), r.stdout
    assert span >= goal_time + hold - 1 / rate, r.stdout
    # each period is a cycle or a missed one; a cycle that reads its sample over half a period late also
    # counts its lateness as one missed (the next cycle still reads the next sample, early), so the count
    # may exceed the periods by up to the deadline misses
    assert periods - 2 <= cycles - 1 + missed <= periods + late + 2, r.stdout
    elapsed = float(re.search(r"done after ([\d.]+) s", r.stdout).group(1))
    times = [float(t) for t in re.findall(r"event t=(-?[\d.]+) s", r.stdout)]
    assert all(0.0 <= t <= elapsed for t in times), r.stdout


def test_check_config_checks_the_simulator_options(tmp_path):
    """user_data.sim is checked by the simulator itself (a misspelt option is an error, named with its line)."""
    path = _config_with(tmp_path, "user_data:\n", "user_data:\n  sim:\n    frictoin: 0.2\n")
    r = hebictl("check-config", str(path))
    assert r.returncode == 2, r.stdout
    assert f"{path}:{_line_of(path, 'frictoin')} [user_data.sim.frictoin]: unknown simulator option" in r.stderr


def test_run_loop_statistics_separate_waiting_work_and_misses():
    """`hebictl run --backend mock --hold 1 --paced-clock`: the loop is paced by the mock's blocking
    feedback read, and the summary says so and splits each period into waiting for feedback and the
    controller's work (before, the same run reported up to 849 overruns in 849 cycles, by the phase of
    two clocks). On the paced clock the figures are exact: every period is one feedback period, all
    of it waiting (simulated time does not pass during the work), and nothing is late or overrun. The
    accounting itself (work, waiting, late samples, overruns) is tested in simulated time in
    tests/control/test_loop.py; the wall-clock figures are benchmarks/loop_latency.py's."""
    r = hebictl("run", str(CONFIG), "--backend", "mock", "--hold", "1", "--quiet", "--paced-clock")
    assert r.returncode == 0, r.stderr
    head = re.search(r"whole run: (\d+) cycles; deadline misses (\d+), overruns (\d+) .*missed cycles (\d+)", r.stdout)
    figures = re.search(r"period p50 ([\d.]+) ms.*work p50 ([\d.]+) ms, worst p99 ([\d.]+) ms; waiting for feedback "
                        r"p50 ([\d.]+) ms", r.stdout)
    assert head and figures, r.stdout
    cycles, misses, overruns, missed = map(int, head.groups())
    period, work, work_p99, wait = map(float, figures.groups())
    print(r.stdout.split("\n", 2)[2].strip())
    assert "loop at 200 Hz (paced by the feedback read)" in r.stdout
    assert (period, work, work_p99, wait) == (5.0, 0.0, 0.0, 5.0)
    assert (misses, overruns, missed) == (0, 0, 0) and cycles >= 200


def test_live_panel_title_is_one_readable_line():
    """The live panel's title names the model and the backend by name (it showed the backend object's
    repr over two lines); positions and efforts are plain numbers on one row each."""
    import argparse

    from rich.console import Console

    from hebictl.cli.run_cmd import Phase, RunSteps, live_panel
    from hebictl.control.arm import Arm

    arm = Arm.from_config(load_config(CONFIG), backend="mock")
    try:
        arm.update()
        run = RunSteps(arm, [Phase("hold", None, 1.0)], arm.clock, None, argparse.Namespace(backend="mock"))
        console = Console(record=True, width=100)
        console.print(live_panel(run, [], 200.0))
        text = console.export_text()
    finally:
        arm.close()
    title = text.splitlines()[0].strip()
    assert title == f"hebictl run: {arm.model.name} on mock", text
    assert "object at" not in text and "<" not in text
    assert re.search(r"position \[rad\]\s+│ (\+0\.000 ){5}\+0\.000", text), text


def test_a_safety_stop_on_a_quiet_run_is_said_and_the_hold_ends_with_stop_hold(monkeypatch, capsys):
    """A stalled loop (0.3 s without a cycle, beyond the 0.25 s command lifetime) is a control gap: the
    arm stops and holds. --quiet silences only the notice of a stop the user asked for; this one is
    said on stderr, with how the hold ends, and the run exits 1 after --stop-hold. (In CI a starved
    `run --quiet` held without end and said nothing but the monitor's log line.) The stall is made in
    the run's simulated time (--paced-clock), so it is the only gap, however loaded the machine."""
    from hebictl.cli import main
    from hebictl.control.arm import Arm

    original = Arm.update
    stalled = []

    def update(self):
        if not stalled and self.trajectory is not None and np.abs(self.last_feedback.position[5]) > 0.05:  # the goal
            stalled.append(True)
            self.clock.advance(0.3)
        return original(self)

    monkeypatch.setattr(Arm, "update", update)
    code = main(["run", str(CONFIG), "--backend", "mock", "--goal", "0.5", "1.2", "1.8", "2.2", "-1.57", "0.6",
                 "--goal-time", "2", "--stop-hold", "0.2", "--quiet", "--paced-clock"])
    out, err = capsys.readouterr()
    assert stalled and code == 1, err   # 1: the arm stopped itself (2 is an error)
    assert out.count(" -> stopped") == 1 and "control_gap -> stopped: control gap of 30" in out, out
    assert "hebictl: the arm stopped (control_gap: control gap of" in err and "; for 0.2 s" in err, err


def _sim_run(goal_time: float = 1.0, **flags):
    """``hebictl run``'s own pieces (plan_phases, RunSteps, FixedRateLoop) on a mock arm driven by a
    SimClock: every cycle's time is exact, and a spy counts the path checks and where they ran."""
    import argparse
    import math

    import hebictl.control.admission as admission
    from hebictl.cli.run_cmd import RunSteps, home_position, plan_phases
    from hebictl.control.arm import Arm
    from hebictl.control.loop import FixedRateLoop
    from hebictl.hardware.clock import SimClock

    cfg = load_config(REPO / "configs" / "x-series-6dof.cfg.yaml")
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="mock", clock=clock)
    args = argparse.Namespace(goal=[0.2, 1.1, 1.6, 2.0, -1.4, 0.3], goal_time=goal_time, hold=math.inf,
                              backend="mock", stop_hold=None, quiet=True, rt_priority=0, cpu=None)
    vars(args).update(flags)
    checks: list[str] = []
    original = admission.check_trajectory
    where = {"in": "before the loop"}

    def spy(*a, **k):
        checks.append(where["in"])
        return original(*a, **k)

    admission.check_trajectory = spy
    try:
        phases = plan_phases(arm, home_position(cfg, arm.dof), args)
    except BaseException:
        admission.check_trajectory = original
        raise
    run = RunSteps(arm, phases, clock, None, args)
    loop = FixedRateLoop(run.step, 200.0, clock)
    return arm, clock, run, loop, checks, where, lambda: setattr(admission, "check_trajectory", original)


def _drive(loop, arm, restore, cycle, duration: float) -> None:
    """Run ``loop`` (from :func:`_sim_run`) with ``cycle`` as its step for ``duration`` simulated
    seconds, then put the path check back and close the arm."""
    loop.step = cycle
    try:
        loop.run(duration=duration)
    finally:
        restore()
        arm.close()


def test_run_admits_every_move_before_the_loop_and_no_cycle_checks_a_path():
    """Issue 29: the 654-sample path check ran in the first cycle (54-88 ms, an overrun and 10-18
    missed cycles). Each move is now admitted (path check included) before the loop, and the cycle
    that starts it only hands the admitted trajectory over, shifted to start then: on a SimClock,
    no path check runs inside any cycle, and each move follows the admitted trajectory exactly."""
    import math
    import signal as sig

    arm, clock, run, loop, checks, where, restore = _sim_run()
    followed = {}
    step = run.step

    def cycle():
        where["in"] = f"cycle {loop.cycles}"
        try:
            return step()
        finally:
            where["in"] = "between cycles"
            traj = arm.trajectory
            if traj is not None and run.phases[run.phase].name not in followed and run.phase_start is not None:
                followed[run.phases[run.phase].name] = (traj, run.phase_start)
            if run.phases[run.phase].name == "hold" and run.signal is None:
                run.on_signal(sig.SIGTERM, None)  # ends the endless --hold inf after TERM_HOLD_S

    _drive(loop, arm, restore, cycle, 60.0)
    assert checks == ["before the loop"] * 2, checks  # home and goal, each checked once, none in a cycle
    for phase in run.phases[:2]:
        traj, started = followed[phase.name]
        admitted = phase.admitted
        # the same trajectory, shifted to the cycle that started the phase (an independent re-evaluation)
        assert traj.start_time == started and traj.duration == pytest.approx(admitted.duration, abs=1e-12)
        for s in np.linspace(0.0, admitted.duration, 7):
            np.testing.assert_allclose(traj.get_state(started + s)[0], admitted.get_state(s)[0], atol=1e-12)
    assert loop.total.overruns == 0 and loop.total.late == 0
    print(f"path checks: {checks}; overruns {loop.total.overruns} in {loop.cycles} cycles")
    assert math.isfinite(run.exit_at)


def test_a_move_whose_start_moved_is_admitted_again_in_its_cycle():
    """The hand-over is used only while the arm is at rest at the admitted start: an arm that is
    elsewhere (here: the goal's start moved by 10 mrad after admission) gets its goal admitted
    again from where it is, never an admitted trajectory that starts elsewhere."""
    arm, clock, run, loop, checks, where, restore = _sim_run()
    goal = run.phases[1]
    moved = goal.admitted.positions.copy()
    moved[1, 0] += 0.01
    from hebictl.trajectory import create_trajectory

    goal.admitted = create_trajectory(goal.admitted.waypoint_times, moved)
    step = run.step

    def cycle():
        where["in"] = "a cycle"
        try:
            return step()
        finally:
            where["in"] = "between cycles"

    _drive(loop, arm, restore, cycle, 8.0)
    assert checks == ["before the loop", "before the loop", "a cycle"], checks
    start = arm.trajectory.positions[:, 0]  # planned from where the arm is (home), not the moved start
    np.testing.assert_allclose(start, run.phases[0].target, atol=0.01)
    assert abs(start[1] - moved[1, 0]) > 0.005


@pytest.mark.parametrize("stop_hold, expect", [(None, "TERM_HOLD_S"), (1.5, 1.5), (0.0, 0.0)])
def test_sigterm_holds_for_the_bounded_time_in_simulated_time(stop_hold, expect):
    """SIGTERM during an endless ``--hold inf``: brake, hold ``--stop-hold`` s, by default
    TERM_HOLD_S (well inside systemd's 90 s), then the loop ends by itself. Measured on the arm's
    SimClock: the last cycle is the first at or after the signal's cycle + the hold."""
    import signal as sig

    from hebictl.cli.run_cmd import TERM_HOLD_S

    hold = TERM_HOLD_S if expect == "TERM_HOLD_S" else expect
    arm, clock, run, loop, checks, where, restore = _sim_run(stop_hold=stop_hold)
    step = run.step
    sent = []

    def cycle():
        go_on = step()
        if run.phases[run.phase].name == "hold" and not sent:
            sent.append(clock.now())
            run.on_signal(sig.SIGTERM, None)
        return go_on

    _drive(loop, arm, restore, cycle, 60.0)
    ended = clock.now()
    kinds = [e.kind for e in arm.events.events]
    print(f"--stop-hold {stop_hold}: SIGTERM at {sent[0]:.3f} s, loop ended {ended - sent[0]:.3f} s later; {kinds}")
    assert kinds == ["terminate"] and arm.state.value == "stopped"
    assert TERM_HOLD_S < 90.0
    # the signal is taken in the next cycle (+5 ms); the hold ends on the first cycle at or after it
    assert sent[0] + 0.005 + hold <= ended + 1e-9 <= sent[0] + 0.005 + hold + 0.005 + 1e-9


@pytest.mark.parametrize("attended, expect", [(False, "TERM_HOLD_S"), (True, math.inf)])
def test_a_safety_stop_unattended_holds_for_the_bounded_time_attended_until_ctrl_c(attended, expect):
    """A latched safety stop with no --stop-hold: an operator at a terminal is asked for Ctrl-C (the
    hold lasts until then), an unattended run (stdin not a terminal: a service) exits after
    TERM_HOLD_S; a SIGTERM during an endless hold bounds it to TERM_HOLD_S from then."""
    import signal as sig

    from hebictl.cli.run_cmd import TERM_HOLD_S
    from hebictl.control.safety import EventKind

    arm, clock, run, loop, checks, where, restore = _sim_run()
    run.attended = attended
    step = run.step
    marks: dict[str, float] = {}

    def cycle():
        go_on = step()
        now = clock.now()
        if run.phases[run.phase].name == "goal" and "stop" not in marks:
            marks["stop"] = now
            arm.stop(EventKind.CONTROL_GAP, "a stop the arm made itself (test)")
        elif "stop" in marks and attended and now - marks["stop"] >= 20.0 and "term" not in marks:
            marks["term"] = now
            run.on_signal(sig.SIGTERM, None)
        return go_on

    _drive(loop, arm, restore, cycle, 60.0)
    ended = clock.now()
    assert run.failed
    if expect == "TERM_HOLD_S":
        assert marks["stop"] + TERM_HOLD_S <= ended + 1e-9 <= marks["stop"] + TERM_HOLD_S + 0.011
    else:  # held without end for 20 s, then SIGTERM bounded it
        assert marks["term"] + TERM_HOLD_S <= ended + 1e-9 <= marks["term"] + TERM_HOLD_S + 0.011
    print(f"attended={attended}: stop at {marks['stop']:.3f} s, ended at {ended:.3f} s")
