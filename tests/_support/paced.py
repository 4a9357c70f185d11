"""Teleop servers whose arm runs on simulated time paced to real time, for the broker tests that
check plumbing and ordering beside every other test on a loaded machine.

The ``make_server`` fixture of tests/teleop/conftest.py runs the mock arm on the wall clock: a
test worker kept off a CPU for 300 ms makes that loop late by more than the modules' command
lifetime, and the arm rightly stops (``control_gap``, ``feedback_late``) in the middle of a test
about something else. On a :class:`~hebictl.hardware.clock.PacedClock` the arm's time stretches
instead (the mock's feedback grid, its command lifetime, the jog's ttl and the runner's loop all
run on it), so the arm is judged on its own timing while the broker, the bridge and the operator
meet it on the wall clock. Two wall-clock windows of the set-up are widened to the tests' hang guard
for the same reason: the bridge's MQTT keepalive (5 s: a test worker starved for 7.5 s lost the
broker mid-test at load 50) and the commands' freshness window (1 s: commands published under that
load were refused ``stale`` 1.5-2 s later). Link loss and freshness are tested elsewhere (the
resilience tests; tests/teleop/test_admission.py in simulated time); a test here that sends a stale
or future command stamps it an hour off. Nothing else differs: the real Arm on the mock backend, the
real TeleopServer, a real mosquitto.

:class:`ArmWrites` records what the arm writes to its modules with the arm's own clock reading, the
time base of the jog's expiry and of every figure the arm computes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hebictl.control.arm import Arm
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.server import TeleopServer
from tests._support.ordering import HANG
from tests._support.paths import KIT6_CONFIG
from tests._support.teleop import (
    ARM_ID,
    HOME,
    LOOP_HZ,
    PLUMBING_SILENCE_S,
    TEST_BRIDGE_OPTIONS,
    TEST_RUNNER_OPTIONS,
    WriteRecorder,
    bridge_for,
    paced_kit6_arm,
)

#: [s] the bridge's MQTT keepalive here: beyond the hang guard, so only a real link loss ends a session
KEEPALIVE = int(HANG)
#: [s] the oldest (and furthest in the future) command accepted here
MAX_AGE = HANG


def paced_server(arm: Arm, url: str, *, rate_hz: float | None = LOOP_HZ, username: str | None = None,
                 password: str | None = None, tls_ca: Path | None = None, **options: Any) -> TeleopServer:
    """A TeleopServer for ``arm`` (not started) with the test back-off and shutdown hold of
    tests/_support/teleop.py and this module's keepalive and freshness window."""
    settings = parse_broker(url, username=username, password=password, tls_ca=tls_ca, keepalive=KEEPALIVE)
    options.setdefault("bridge_options", dict(TEST_BRIDGE_OPTIONS))
    options.setdefault("runner_options", dict(TEST_RUNNER_OPTIONS))
    options.setdefault("max_age", MAX_AGE)
    options.setdefault("bridge", bridge_for(options))
    options.setdefault("silence_limit", PLUMBING_SILENCE_S)
    return TeleopServer(arm, settings, ARM_ID, rate_hz=rate_hz, **options)


@contextlib.contextmanager
def paced_servers() -> Iterator[Callable[..., TeleopServer]]:
    """Factory of started TeleopServers on :func:`tests._support.teleop.paced_kit6_arm` arms with
    this module's keepalive and freshness window (the signature of tests/teleop/conftest.py's
    ``make_server``, ``joint_limits`` included, and ``app``: the Mobile IO app of ``hebictl teleop
    --app NAME``, with its ``mobile_io`` in the description as the command gives it); all stopped and
    closed at the end."""
    started: list[tuple[TeleopServer, Arm]] = []

    def make(url: str, *, rate_hz: float = LOOP_HZ, joint_limits: tuple[Any, Any] | None = None,
             start: Any = HOME, config: Path = KIT6_CONFIG, app: str | None = None, **options: Any) -> TeleopServer:
        arm = paced_kit6_arm(config=config, start=start, rate_hz=rate_hz)
        if joint_limits is not None:  # the bundled kit's joints are unlimited
            arm.set_joint_limits(*joint_limits)
        if app is not None:
            from hebictl.inputs.teleop_app import TeleopApp, describe

            driver = TeleopApp(arm, app)
            options["runner_options"] = {**TEST_RUNNER_OPTIONS, **options.get("runner_options", {}), "app": driver}
            bridge_options = {**TEST_BRIDGE_OPTIONS, **options.get("bridge_options", {})}
            bridge_options["description"] = {"extra": {"mobile_io": describe(driver, None)}}
            options["bridge_options"] = bridge_options
        server = paced_server(arm, url, rate_hz=rate_hz, **options)
        started.append((server, arm))
        server.start_background()
        return server

    try:
        yield make
    finally:
        stuck = []
        for server, arm in started:
            with contextlib.suppress(Exception):
                server.stop_background()
            if server.runner.running:
                stuck.append(server)
            arm.close()
        assert not stuck, "a teleop server's arm thread outlived stop_background()"


class ArmWrites(WriteRecorder):
    """Every command the arm writes to its backend, stamped with the arm clock's reading at the
    write [s] (the cycle's time: the mock's feedback grid point it read), position and velocity
    copies, and the arm's own ``dt`` [s] of that cycle."""

    def __init__(self, arm: Arm) -> None:
        super().__init__(arm, arm.clock.now)
