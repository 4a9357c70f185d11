"""The teleop service: the arm thread and the MQTT bridge side by side, started and stopped together.

``hebictl teleop`` runs :meth:`TeleopServer.run` in the main thread's event loop; on a multi-arm
config, :meth:`GroupServer.run`: every arm's bridge, and one loop for all the arms
(:class:`~hebictl.teleop.group.RunnerGroup`). Tests and the
benchmark use :meth:`TeleopServer.start_background`, which runs the same coroutine in a thread of
its own, so an operator client can live in the caller's event loop as it would in another process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from hebictl.control.arm import Arm
from hebictl.errors import TeleopError
from hebictl.teleop.admission import Admission, RateLimit
from hebictl.teleop.base_bridge import BaseBridge
from hebictl.teleop.bridge import MqttBridge
from hebictl.teleop.bridge_process import BaseBridgeProcess, BridgeProcess
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.connection import BrokerSettings
from hebictl.teleop.description import description_payload
from hebictl.teleop.group import RunnerGroup
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import CommandSchema
from hebictl.teleop.silence import SILENCE_LIMIT_S, ThreadWatch

log = logging.getLogger(__name__)


class TeleopServer:
    """One arm served over one broker.

    ``rate_hz`` [Hz] of the arm loop (default: the backend's feedback frequency),
    ``state_rate_hz`` [Hz] of ``state/joints`` and ``state/ee_pose``, ``max_age`` [s] of accepted
    commands, ``rate_limits`` per command topic (default
    :data:`~hebictl.teleop.admission.DEFAULT_RATE_LIMITS`); ``runner_options``,
    ``schema_options`` and ``bridge_options`` go to :class:`ArmRunner`, :class:`CommandSchema`
    and :class:`MqttBridge`; ``clock`` (wall and monotonic time) to all of them; ``gripper`` is
    what ``cmd/gripper`` drives (:func:`hebictl.control.gripper.open_gripper`), None to only
    record gripper commands; ``silence_limit`` [s]: how long, on the arm's clock, the bridge may
    stay silent once heard before the arm holds for a lost link (:mod:`hebictl.teleop.silence`)."""

    def __init__(self, arm: Arm, settings: BrokerSettings, arm_id: str = "arm", *, rate_hz: float | None = None,
                 state_rate_hz: float = 50.0, max_age: float = 1.0,
                 rate_limits: Mapping[str, RateLimit] | None = None,
                 runner_options: Mapping[str, Any] | None = None, schema_options: Mapping[str, Any] | None = None,
                 bridge_options: Mapping[str, Any] | None = None, clock: TeleopClock = SYSTEM_CLOCK,
                 gripper: Any = None, bridge: str = "thread", silence_limit: float = SILENCE_LIMIT_S) -> None:
        self.arm = arm
        self.runner = ArmRunner(arm, rate_hz=rate_hz, clock=clock, gripper=gripper, **dict(runner_options or {}))
        self.schema = CommandSchema(arm.dof, arm.limits, **dict(schema_options or {}))
        self.admission = Admission(max_age=max_age, rate_limits=rate_limits, wall_clock=clock.wall,
                                   monotonic=clock.monotonic)
        self.bridge: MqttBridge | BridgeProcess
        if bridge == "thread":
            self.bridge = MqttBridge(self.runner, settings, arm_id, schema=self.schema, admission=self.admission,
                                     state_rate_hz=state_rate_hz, clock=clock, **dict(bridge_options or {}))
            # the silence rule of the bridge process, for the thread's event loop (hebictl.teleop.silence)
            self.bridge.watch = self.runner.port = ThreadWatch(self.runner, limit=silence_limit)
        elif bridge == "process":
            if clock is not SYSTEM_CLOCK:
                raise TeleopError("the bridge process runs on the system clocks: use bridge='thread' for an "
                                  "injected clock")
            options = dict(bridge_options or {})
            description = description_payload(self.runner, arm_id, default_ttl=self.schema.default_ttl,
                                              **options.get("description", {}))
            self.bridge = BridgeProcess(self.runner, settings, arm_id, description=description,
                                        state_rate_hz=state_rate_hz, max_age=max_age, rate_limits=rate_limits,
                                        schema_options=schema_options, bridge_options=options,
                                        silence_limit=silence_limit)
        else:
            raise ValueError(f"bridge must be 'thread' or 'process', got {bridge!r}")
        self.stop_reason = "teleop_shutdown"
        self.stopping = False   # stop() was called (a second signal then ends the hold)
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    async def run(self) -> None:
        """Start the arm thread, serve until :meth:`stop`, then brake and hold (never release)."""
        self.runner.start()
        try:
            self._started.set()
            await self.bridge.run()
        except BaseException as exc:
            if not self.stopping and not isinstance(exc, asyncio.CancelledError):
                log.error("the MQTT bridge failed (%s: %s); the arm stops and holds%s", type(exc).__name__, exc,
                          "; Ctrl-C to exit" if self.runner.shutdown_hold == float("inf") else "")
            raise
        finally:
            await asyncio.to_thread(self.runner.close, reason=self.stop_reason)
            if isinstance(self.bridge, BridgeProcess) and not self.runner.running:
                self.bridge.close()  # the link's sockets, once the arm thread no longer reads them

    def stop(self, reason: str = "teleop_shutdown") -> None:
        """Ask :meth:`run` to finish (thread-safe); ``reason`` is the stop's event kind
        (``interrupt`` for Ctrl-C, ``terminate`` for SIGTERM)."""
        self.stop_reason = reason
        self.stopping = True
        self.runner.begin_shutdown(reason)  # brake now, not after the MQTT teardown
        self.bridge.stop()

    @property
    def runners(self) -> dict[str, ArmRunner]:
        """The served arms' runners by arm id (one here; :class:`GroupServer`: every arm)."""
        return {self.bridge.topics.arm_id: self.runner}

    @property
    def loop_runner(self) -> ArmRunner:
        """What runs the arms' loop: its ``begin_shutdown`` and ``end_hold`` act on every arm."""
        return self.runner

    def parkable(self) -> set[str]:
        """The arm ids a SIGTERM may park (that have a rest pose): the one arm, unless an e-stop holds
        it (:meth:`ArmRunner.park_veto`; the arm thread judges that again every cycle of a park)."""
        return set() if self.runner.park_veto() is not None else set(self.runners)

    # ------------------------------------------------------------------ background mode
    def start_background(self, timeout: float = 10.0, *, wait_connected: bool = True) -> None:
        """Run :meth:`run` in a thread; return once the bridge is connected (or ``timeout`` [s])."""
        if self._thread is not None:
            raise RuntimeError("server already started")
        connected = threading.Event()

        def main() -> None:
            async def go() -> None:
                async def watch() -> None:
                    if isinstance(self.bridge, MqttBridge):
                        await self.bridge.connected.wait()
                    else:  # a threading.Event the arm thread sets
                        while not self.bridge.connected.is_set():
                            await asyncio.sleep(0.02)
                    connected.set()

                watcher = asyncio.create_task(watch())
                try:
                    await self.run()
                finally:
                    watcher.cancel()

            try:
                asyncio.run(go())
            except BaseException as exc:  # surfaced by stop_background
                self._error = exc
                self._started.set()
                connected.set()

        self._thread = threading.Thread(target=main, name="hebictl-teleop", daemon=True)
        self._thread.start()
        self._started.wait(timeout)
        if wait_connected and not connected.wait(timeout):
            raise TimeoutError(f"teleop bridge did not connect to {self.bridge.settings.url} within {timeout} s")
        if self._error is not None:
            raise self._error

    def stop_background(self, timeout: float = 10.0) -> None:
        if self._thread is None:
            return
        self.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():  # the bridge is stuck: at least end the arm loop before returning
            log.error("teleop server thread did not stop within %.1f s; stopping the arm loop directly", timeout)
            self.runner.close()
        self._thread = None
        if self._error is not None:
            raise self._error

    def __enter__(self) -> TeleopServer:
        self.start_background()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_background()


class GroupServer:
    """Several arms served over one broker, each on its own topics, in one loop under one supervisor.

    ``servers``: one :class:`TeleopServer` per arm id, built as for one arm (each its runner, command
    checks, admission and bridge: a thread or a process of its own); their runners are stepped by one
    :class:`~hebictl.teleop.group.RunnerGroup` at ``rate_hz`` (``observe``, ``realtime``, ``on_grant``:
    its own) instead of threads of their own. A bridge that fails stops every arm's bridge and the
    group, as one arm's failing bridge stops that arm's server."""

    def __init__(self, servers: Mapping[str, TeleopServer], *, rate_hz: float,
                 observe: Callable[[], None] | None = None, realtime: Any = None, on_grant: Any = None,
                 base: BaseBridge | BaseBridgeProcess | None = None) -> None:
        self.servers = dict(servers)
        #: the mobile base's bridge (its runner stepped by the group), or None
        self.base = base
        self.group = RunnerGroup({arm_id: s.runner for arm_id, s in self.servers.items()}, rate_hz=rate_hz,
                                 observe=observe, realtime=realtime, on_grant=on_grant,
                                 base=None if base is None else (base.topics.arm_id, base.base_runner))
        self.stop_reason = "teleop_shutdown"
        self.stopping = False

    @property
    def runners(self) -> dict[str, ArmRunner]:
        return dict(self.group.runners)

    @property
    def loop_runner(self) -> RunnerGroup:
        return self.group

    def parkable(self) -> set[str]:
        """The arm ids a SIGTERM may park: none while an arm holds every arm for a cause of its own (its
        e-stop, a fault: as ``hebictl run`` parks no arm after a fault), else those the group holds not."""
        return self.group.parkable()

    async def run(self) -> None:
        """Start the loop and every bridge; serve until :meth:`stop` or a bridge fails; then brake and
        hold every arm (never release)."""
        self.group.start()
        tasks = [asyncio.create_task(s.bridge.run(), name=f"bridge {arm_id}") for arm_id, s in self.servers.items()]
        if self.base is not None:
            tasks.append(asyncio.create_task(self.base.run(), name=f"bridge {self.base.topics.arm_id}"))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if not self.stopping:   # a bridge ended by itself: every arm stops (the group holds them already)
                self._stop_bridges()
            await asyncio.wait(tasks)
            exc = next((e for t in tasks if not t.cancelled() and (e := t.exception()) is not None), None)
            if exc is not None:
                if not self.stopping:
                    log.error("an MQTT bridge failed (%s: %s); every arm stops and holds", type(exc).__name__, exc)
                raise exc
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.to_thread(self.group.close, reason=self.stop_reason)
            for s in self.servers.values():
                if isinstance(s.bridge, BridgeProcess) and not self.group.running:
                    s.bridge.close()
            if isinstance(self.base, BridgeProcess) and not self.group.running:
                self.base.close()

    def stop(self, reason: str = "teleop_shutdown") -> None:
        """Ask :meth:`run` to finish (thread-safe): every arm brakes now, every bridge goes offline."""
        self.stop_reason = reason
        self.stopping = True
        self.group.begin_shutdown(reason)
        self._stop_bridges()

    def _stop_bridges(self) -> None:
        for s in self.servers.values():
            s.bridge.stop()
        if self.base is not None:
            self.base.stop()
