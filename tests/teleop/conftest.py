"""Fixtures for the teleop tests: a secured mosquitto per test, and a teleop server on the mock arm.

Nothing is mocked: the broker is the ``mosquitto`` binary on a free loopback port (the anonymous
``broker`` fixture is in tests/conftest.py), the bridge and the operator client talk to it through
aiomqtt, and the arm is the real :class:`Arm` on the mock backend with a wall clock, looping in its
own thread. Tests that need the broker skip with a reason when the binary is missing (``tools/dev
test`` installs it). The helpers these build on are in tests/_support/ (broker, arms, teleop).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.gripper import attach_gripper
from hebictl.teleop.broker import LocalBroker
from hebictl.teleop.server import TeleopServer
from tests._support.arms import kit6_arm
from tests._support.broker import local_broker
from tests._support.paths import KIT6_CONFIG
from tests._support.teleop import ARM_ID, ARM_USER, HANG_S, HOME, LOOP_HZ, OPERATOR, teleop_server


@pytest.fixture(autouse=True)
def _quiet_safety_log() -> Iterator[None]:
    """Holds and releases are the point of these tests; keep their WARNING lines out of the output."""
    logger = logging.getLogger("hebictl.safety")
    old = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(old)


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    """mosquitto with a password file and the teleop ACL (docs/teleop.md)."""
    with local_broker(tmp_path / "secure", users=dict([OPERATOR, ARM_USER]), arms={ARM_USER[0]: ARM_ID},
                      operators=[OPERATOR[0]]) as b:
        yield b


@pytest.fixture
def make_server() -> Iterator[Callable[..., TeleopServer]]:
    """Factory: a started TeleopServer for the 6-DoF kit on the mock backend (stopped at the end).

    The mock starts at ``start`` (default HOME), so tests reach their first goal in a fraction of a
    second without exceeding the joints' rated speed (goals faster than that are refused)."""
    started: list[tuple[TeleopServer, Arm]] = []

    def make(url: str, *, rate_hz: float = LOOP_HZ, joint_limits: tuple[Any, Any] | None = None,
             start: Any = HOME, config: Path = KIT6_CONFIG, **options: Any) -> TeleopServer:
        arm = kit6_arm("mock", config=config, start=start)
        attach_gripper(arm, load_config(config), "mock")  # only where the config has one
        arm.backend.feedback_frequency = rate_hz
        if joint_limits is not None:  # the bundled kit's joints are unlimited
            arm.set_joint_limits(*joint_limits)
        server = teleop_server(arm, url, ARM_ID, rate_hz=rate_hz, **options)
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


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen]]:
    """Processes a test starts; any still running at the end is killed."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(HANG_S)
