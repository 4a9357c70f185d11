"""Operator-side helpers shared by the teleop, recording and CLI tests.

A teleop server here is the real :class:`TeleopServer` (bridge through aiomqtt to a real
mosquitto, the arm looping in its own thread); these helpers only fix the short back-off and
shutdown hold the tests use, and the identities of ``docs/teleop.md``'s secured set-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.gripper import attach_gripper
from hebictl.hardware.clock import PacedClock
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.server import TeleopServer
from tests._support.arms import kit6_arm
from tests._support.paths import KIT6_CONFIG, KIT6_HOME, REPO_ROOT, TESTS_DIR

#: the same kit as KIT6_CONFIG with HEBI's kit gripper (user_data.has_gripper, gains "gripper")
KIT6_GRIPPER = TESTS_DIR / "teleop" / "data" / "x-series-6dof-gripper.cfg.yaml"
HOME = list(KIT6_HOME)
ARM_ID = "t1"
LOOP_HZ = 250.0
#: (user, password) of the operator and of the arm in the secured broker set-up
OPERATOR = ("operator", "op-secret")
ARM_USER = ("arm-t1", "arm-secret")
#: a bridge that reconnects quickly and a runner that holds briefly on shutdown: tests stay short
TEST_BRIDGE_OPTIONS = {"backoff_initial": 0.05, "backoff_max": 0.5}
TEST_RUNNER_OPTIONS = {"shutdown_hold": 0.05}
#: where the test servers run their MQTT bridge (TeleopServer's ``bridge``): ``thread`` (the class's
#: default), or ``process`` with HEBICTL_TEST_BRIDGE=process, to run the in-process teleop tests
#: against the bridge process of ``hebictl teleop`` (servers with an injected clock stay on the
#: thread: the process runs on the system clocks)
TEST_BRIDGE = os.environ.get("HEBICTL_TEST_BRIDGE", "thread")


def bridge_for(options: dict[str, Any]) -> str:
    """The ``bridge`` for a test server built with ``options`` (see :data:`TEST_BRIDGE`)."""
    return "thread" if "clock" in options else TEST_BRIDGE


#: [s] a guard against a hang, never a timing claim: how long a plumbing test waits for an event
HANG_S = 120.0
#: [s] the oldest command a plumbing test's arm accepts: on a loaded machine a command can spend more
#: than the product's 1 s between the client and the arm, and freshness is not what these tests check
#: (tests/teleop/test_admission.py checks it exactly, on injected clocks)
PLUMBING_MAX_AGE = 60.0
#: [s] how long a plumbing test's bridge may stay silent before its arm holds for a lost link: a loaded
#: machine starved a test's bridge thread 2.2 s (the product's 2 s) and the arm held mid-test; the rule
#: itself is tested exactly in simulated time (tests/teleop/test_silence.py, test_bridge_port.py) and on
#: a real wedge with the product's limit (test_silence.py, test_bridge_process.py pass SILENCE_LIMIT_S)
PLUMBING_SILENCE_S = 30.0
#: the same for a `hebictl teleop` process a plumbing test starts
PLUMBING_SILENCE_FLAGS = ("--bridge-silence", str(PLUMBING_SILENCE_S))


def teleop_server(arm: Arm, url: str, arm_id: str = ARM_ID, *, rate_hz: float = LOOP_HZ,
                  username: str | None = None, password: str | None = None, tls_ca: Path | None = None,
                  **options: Any) -> TeleopServer:
    """A TeleopServer for ``arm`` on the broker at ``url``, not started yet (the caller may hook a
    recorder first); ``options`` go to TeleopServer."""
    settings = parse_broker(url, username=username, password=password, tls_ca=tls_ca)
    options.setdefault("bridge_options", dict(TEST_BRIDGE_OPTIONS))
    options.setdefault("runner_options", dict(TEST_RUNNER_OPTIONS))
    options.setdefault("bridge", bridge_for(options))
    options.setdefault("silence_limit", PLUMBING_SILENCE_S)
    return TeleopServer(arm, settings, arm_id, rate_hz=rate_hz, **options)


@contextlib.contextmanager
def serving(server: TeleopServer) -> Iterator[TeleopServer]:
    """Run ``server`` in the background; stop it and close its arm at the end."""
    server.start_background()
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop_background()
        server.arm.close()


def paced_kit6_arm(*, config: Path = KIT6_CONFIG, start: Any = HOME, rate_hz: float = LOOP_HZ) -> Arm:
    """The 6-DoF kit (or ``config``) on the mock backend with a :class:`PacedClock`, its gripper
    attached where the config has one, feedback at ``rate_hz``.

    The paced clock keeps simulated time no faster than the wall clock and stretches it when the
    process is late, so a loaded machine never makes this arm's loop late on its own clock: no
    ``control_gap`` stop, no jog expiring because a cycle came late. What a plumbing test drives
    through the broker then happens to the arm the same way on an idle and on a busy machine;
    the arm's timing itself is tested on a SimClock (tests/teleop/test_runner.py, tests/control)."""
    arm = kit6_arm("mock", config=config, start=start, clock=PacedClock())
    attach_gripper(arm, load_config(config), "mock")  # only where the config has one
    arm.backend.feedback_frequency = rate_hz
    return arm


@contextlib.contextmanager
def paced_servers() -> Iterator[Callable[..., TeleopServer]]:
    """A factory of started teleop servers on :func:`paced_kit6_arm` arms, accepting commands up to
    :data:`PLUMBING_MAX_AGE` old; every server is stopped and its arm closed at the end (and it is an
    error if an arm thread outlived its server). ``make(url, *, rate_hz, start, config, **options)``,
    ``options`` to :func:`teleop_server`."""
    started: list[TeleopServer] = []

    def make(url: str, *, rate_hz: float = LOOP_HZ, start: Any = HOME, config: Path = KIT6_CONFIG,
             **options: Any) -> TeleopServer:
        options.setdefault("max_age", PLUMBING_MAX_AGE)
        server = teleop_server(paced_kit6_arm(config=config, start=start, rate_hz=rate_hz), url, rate_hz=rate_hz,
                               **options)
        started.append(server)
        server.start_background(HANG_S)
        return server

    try:
        yield make
    finally:
        stuck = []
        for server in started:
            with contextlib.suppress(Exception):
                server.stop_background(HANG_S)
            if server.runner.running:
                stuck.append(server)
            server.arm.close()
        assert not stuck, "a teleop server's arm thread outlived stop_background()"


def step_until(runner: Any, clock: Any, seconds: float, stop: Callable[[], bool] = lambda: False) -> float:
    """Step a runner on a SimClock arm for ``seconds`` of the arm's clock or until ``stop()``; returns
    the clock at the start of the last step (when its poll ran)."""
    end = clock.now() + seconds
    started = clock.now()
    while clock.now() < end and not stop():
        started = clock.now()
        runner.step()
    return started


def run(coro: Coroutine[Any, Any, Any], timeout: float = 20.0) -> Any:
    """Run an operator-side coroutine to completion (the server lives in its own thread)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


class WriteRecorder:
    """Records every command the arm writes to its backend: ``clock()``'s time [s] (default
    perf_counter; :class:`tests._support.paced.ArmWrites` takes the arm's clock), position and
    velocity copies, and the arm's own ``dt`` [s] of the cycle that wrote it.

    What reaches the modules is the ground truth for reaction times, independent of the runner's
    own bookkeeping (the arm's clock is MonotonicClock, i.e. perf_counter too). ``dts`` is the
    arm's clock between its last two feedback reads (``Arm.dt``): what the cycle integrated, rate
    limited and sampled its trajectory over, where the write stamps also carry the thread's
    compute and wake-up jitter. A write outside a cycle (the keep-alive of a long goal check)
    repeats the dt of the cycle before it."""

    def __init__(self, arm: Arm, clock: Callable[[], float] = time.perf_counter) -> None:
        self.times: list[float] = []
        self.positions: list[Any] = []
        self.velocities: list[Any] = []
        self.dts: list[float] = []
        inner = arm.backend.write

        def write(cmd: Any) -> bool:
            self.times.append(clock())
            self.positions.append(cmd.position.copy())
            self.velocities.append(cmd.velocity.copy())
            self.dts.append(arm.dt)  # appended last: arrays() cuts the others to its length
            return inner(cmd)

        arm.backend.write = write  # type: ignore[method-assign]

    def __len__(self) -> int:
        return len(self.dts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(times, positions, velocities, dts)`` of the writes so far, all of the same length (the
        arm thread may be writing meanwhile)."""
        n = len(self.dts)
        return (np.array(self.times[:n]), np.array(self.positions[:n]), np.array(self.velocities[:n]),
                np.array(self.dts[:n]))

    def count(self, after: float, until: float) -> int:
        """How many writes (arm cycles) came after ``after`` up to and including ``until``."""
        return sum(1 for t in list(self.times) if after < t <= until)

    def first(self, after: float, predicate: Callable[[Any], bool]) -> float | None:
        """Time of the first write after ``after`` whose velocity satisfies ``predicate``."""
        for t, v in zip(list(self.times), list(self.velocities), strict=False):
            if t > after and predicate(v):
                return t
        return None


class StderrLines:
    """A process's stderr read line by line on a thread, so a test can wait for a line while the
    process runs (and read everything once it has exited)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._new: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            self._new.put(line)

    def wait_for(self, text: str, timeout: float = HANG_S) -> str:
        """The first line (read so far or next) that contains ``text``."""
        for line in list(self.lines):
            if text in line:
                return line
        while True:
            line = self._new.get(timeout=timeout)
            if text in line:
                return line

    def text(self) -> str:
        self._thread.join(HANG_S)  # the process has exited: its stderr is closed
        return "".join(self.lines)


def spawn_teleop(url: str, *extra: str) -> subprocess.Popen:
    """`hebictl teleop` on the mock with a paced clock (a loaded machine stretches its simulated time
    instead of stopping the arm) and a freshness bound that only guards against a hang."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", "--broker", url, *PLUMBING_SILENCE_FLAGS,
                             "--rate", "200", "--state-rate", "20", "--paced-clock", "--max-age",
                             str(PLUMBING_MAX_AGE), *extra], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
