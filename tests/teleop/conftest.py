"""Fixtures for the teleop tests: a real mosquitto per test, and a teleop server on the mock arm.

Nothing is mocked: the broker is the ``mosquitto`` binary on a free loopback port, the bridge
and the operator client talk to it through aiomqtt, and the arm is the real :class:`Arm` on the
mock backend with a wall clock, looping in its own thread. Tests that need the broker skip with a
reason when the binary is missing (``tools/dev test`` installs it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.gripper import attach_gripper
from hebictl.hardware.clock import MonotonicClock
from hebictl.teleop.broker import LocalBroker, find_mosquitto, find_mosquitto_passwd
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.server import TeleopServer

REPO = Path(__file__).resolve().parents[2]
KIT6 = REPO / "configs" / "x-series-6dof.cfg.yaml"
#: the same kit with HEBI's kit gripper (user_data.has_gripper, gains "gripper")
KIT6_GRIPPER = REPO / "tests" / "teleop" / "data" / "x-series-6dof-gripper.cfg.yaml"
HOME = [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]
ARM_ID = "t1"
LOOP_HZ = 250.0
OPERATOR = ("operator", "op-secret")
ARM_USER = ("arm-t1", "arm-secret")


def need_mosquitto() -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto binary not found (apt-get install mosquitto; tools/dev test installs it)")


@pytest.fixture(autouse=True)
def _quiet_safety_log() -> Iterator[None]:
    """Holds and releases are the point of these tests; keep their WARNING lines out of the output."""
    logger = logging.getLogger("hebictl.safety")
    old = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(old)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """An anonymous mosquitto on a free loopback port, killed at the end."""
    need_mosquitto()
    b = LocalBroker(tmp_path / "broker")
    b.start()
    yield b
    b.stop()


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """mosquitto with a password file and the teleop ACL (docs/teleop.md)."""
    need_mosquitto()
    if find_mosquitto_passwd() is None:
        pytest.skip("mosquitto_passwd not found (apt-get install mosquitto)")
    b = LocalBroker(tmp_path / "secure", users=dict([OPERATOR, ARM_USER]), arms={ARM_USER[0]: ARM_ID},
                    operators=[OPERATOR[0]])
    b.start()
    yield b
    b.stop()


@pytest.fixture
def make_server() -> Iterator[Callable[..., TeleopServer]]:
    """Factory: a started TeleopServer for the 6-DoF kit on the mock backend (stopped at the end).

    The mock starts at ``start`` (default HOME), so tests reach their first goal in a fraction of a
    second without exceeding the joints' rated speed (goals faster than that are refused)."""
    started: list[tuple[TeleopServer, Arm]] = []

    def make(url: str, *, rate_hz: float = LOOP_HZ, username: str | None = None, password: str | None = None,
             tls_ca: Path | None = None, joint_limits: tuple[Any, Any] | None = None,
             start: Any = HOME, config: Path = KIT6, **options: Any) -> TeleopServer:
        arm = Arm.from_config(config, backend="mock", clock=MonotonicClock(), initial_position=start)
        attach_gripper(arm, load_config(config), "mock")  # only where the config has one
        arm.backend.feedback_frequency = rate_hz
        if joint_limits is not None:  # the bundled kit's joints are unlimited
            arm.set_joint_limits(*joint_limits)
        settings = parse_broker(url, username=username, password=password, tls_ca=tls_ca)
        options.setdefault("bridge_options", {"backoff_initial": 0.05, "backoff_max": 0.5})
        options.setdefault("runner_options", {"shutdown_hold": 0.05})
        server = TeleopServer(arm, settings, ARM_ID, rate_hz=rate_hz, **options)
        started.append((server, arm))
        server.start_background()
        return server

    yield make
    stuck = []
    for server, arm in started:
        with contextlib.suppress(Exception):
            server.stop_background()
        if server.runner.running:
            stuck.append(server)
        arm.close()
    assert not stuck, "a teleop server's arm thread outlived stop_background()"


class WriteRecorder:
    """Records every command the arm writes to its backend: perf_counter time [s], position and
    velocity copies.

    What reaches the modules is the ground truth for reaction times, independent of the runner's
    own bookkeeping (the arm's clock is MonotonicClock, i.e. perf_counter too)."""

    def __init__(self, arm: Arm) -> None:
        self.times: list[float] = []
        self.positions: list[Any] = []
        self.velocities: list[Any] = []
        inner = arm.backend.write

        def write(cmd: Any) -> bool:
            self.times.append(time.perf_counter())
            self.positions.append(cmd.position.copy())
            self.velocities.append(cmd.velocity.copy())
            return inner(cmd)

        arm.backend.write = write  # type: ignore[method-assign]

    def first(self, after: float, predicate: Callable[[Any], bool]) -> float | None:
        """Time of the first write after ``after`` whose velocity satisfies ``predicate``."""
        for t, v in zip(list(self.times), list(self.velocities), strict=False):
            if t > after and predicate(v):
                return t
        return None


def run(coro: Coroutine[Any, Any, Any], timeout: float = 20.0) -> Any:
    """Run an operator-side coroutine to completion (the server lives in its own thread)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))
