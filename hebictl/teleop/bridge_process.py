"""The MQTT bridge in a process of its own (``hebictl teleop --bridge process``, the default).

Why: with the bridge in a thread of the arm's process, a flood of commands keeps that thread busy,
and the arm thread (even at SCHED_FIFO) waits for the GIL whenever the bridge thread was preempted
holding it: control gaps of 355 and 369 ms were measured that way (docs/security.md). In a process of
its own, the flood's Python work runs under another GIL; the arm process keeps only the arm thread
busy, which reads the bridge's messages itself, inside its cycle (:mod:`~hebictl.teleop.bridge_port`).

The parent side is :class:`BridgeProcess`: it starts ``python -m hebictl.teleop.bridge_process``
(fork and exec, like multiprocessing's "spawn" context, never a bare fork of a process with hebi and
MuJoCo threads; a plain subprocess rather than multiprocessing so that the parent's ``__main__``, a
benchmark script or pytest, is not imported again) with this process's ends of the two socket pairs
(:mod:`~hebictl.teleop.link`), and writes the start-up values to its stdin, pickled once: broker
settings, the bridge's, schema's and admission's options, the model with its limits and collision
world, the first snapshot and the ``state/description`` payload (built here, where the arm is). The
child runs the unchanged :class:`~hebictl.teleop.bridge.MqttBridge` against a
:class:`~hebictl.teleop.runner_proxy.RunnerProxy`.

Lifetimes: the child is in a session of its own (a Ctrl-C at the terminal goes to the parent only,
which brakes first, as before, then stops the child with SIGTERM: the child publishes ``offline`` and
disconnects). The child ending by itself (a crash, SIGKILL) is a lost link for the arm (it brakes and
holds) and :meth:`BridgeProcess.run` raises, as a failed bridge thread does. The parent ending
closes the sockets: the child sees it and stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hebictl.errors import TeleopError
from hebictl.hardware.clock import MonotonicClock
from hebictl.teleop.base import BasePort
from hebictl.teleop.bridge import arm_client_id
from hebictl.teleop.bridge_port import BridgePort
from hebictl.teleop.link import Channel, socket_pair
from hebictl.teleop.silence import REPORT_PERIOD_S, SILENCE_LIMIT_S
from hebictl.teleop.topics import Topics

if TYPE_CHECKING:
    from hebictl.teleop.admission import RateLimit
    from hebictl.teleop.base import BaseRunner
    from hebictl.teleop.connection import BrokerSettings
    from hebictl.teleop.runner import ArmRunner
    from hebictl.teleop.schema import BaseSchema

log = logging.getLogger(__name__)

#: [s] how long :meth:`BridgeProcess.run` gives a stopped child to publish ``offline`` and exit
STOP_TIMEOUT_S = 10.0
#: messages the child keeps while its socket to the arm is full (priority, commands), beyond: dropped
PRIORITY_BACKLOG = 4096
COMMAND_BACKLOG = 1024


class BridgeProcess:
    """The bridge as a child process, with the surface :class:`~hebictl.teleop.server.TeleopServer`
    uses of an :class:`~hebictl.teleop.bridge.MqttBridge`: :meth:`run`, :meth:`stop`, ``connected``
    (a :class:`threading.Event`), ``settings``, ``topics``, ``stats`` (as the child last reported
    them: every :data:`~hebictl.teleop.silence.REPORT_PERIOD_S`, at each connection change, and as it stops).

    Attaches a :class:`~hebictl.teleop.bridge_port.BridgePort` to ``runner`` (before it starts).
    ``description``: the ``state/description`` payload; the other arguments are those of
    :class:`~hebictl.teleop.server.TeleopServer` for the bridge, its schema and its admission."""

    #: the loop's end of the link (a mobile base's bridge process has its own: hebictl.teleop.base)
    port_type: type[BridgePort] = BridgePort

    def __init__(self, runner: ArmRunner, settings: BrokerSettings, arm_id: str, *, description: bytes,
                 state_rate_hz: float = 50.0, max_age: float = 1.0,
                 rate_limits: Mapping[str, RateLimit] | None = None,
                 schema_options: Mapping[str, Any] | None = None,
                 bridge_options: Mapping[str, Any] | None = None, silence_limit: float = SILENCE_LIMIT_S) -> None:
        self.runner = runner
        self.settings = settings
        self.topics = Topics(arm_id)
        options = {k: v for k, v in (bridge_options or {}).items() if k != "description"}
        # chosen here, so the parent knows them: the status's session, the arm's MQTT client ids
        self.session: str = options.setdefault("session", secrets.token_hex(8))
        self.identifier: str = options.setdefault("identifier", arm_client_id(arm_id, settings.username,
                                                                              secrets.token_hex(16)))
        self.estop_identifier = f"{self.identifier}-estop"
        self._options = {"settings": settings, "arm_id": arm_id, "description": description,
                         "state_rate_hz": state_rate_hz, "max_age": max_age,
                         "rate_limits": None if rate_limits is None else dict(rate_limits),
                         "schema_options": dict(schema_options or {}),
                         "bridge_options": options}
        self._priority, self._child_priority = socket_pair()
        self._commands, self._child_commands = socket_pair()
        self.port = self.port_type(runner, Channel(self._priority), Channel(self._commands),
                                   state_rate_hz=state_rate_hz, shared_clock=isinstance(runner.clock, MonotonicClock),
                                   silence_limit=silence_limit)
        runner.port = self.port
        self.connected = self.port.connected
        self.process: subprocess.Popen[bytes] | None = None
        self._stop_requested = False

    @property
    def stats(self) -> dict[str, int]:
        return self.port.bridge_stats

    @property
    def account_tags(self) -> bool | None:
        """Whether the broker runs the account plugin, as the bridge last reported (None: not known)."""
        return self.port.account_tags

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def start(self) -> None:
        """Start the child (once); it connects to the broker on its own."""
        if self.process is not None:
            raise RuntimeError("bridge process already started")
        init = self.init_values()
        fds = (self._child_priority.fileno(), self._child_commands.fileno())
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the child imports this same hebictl
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen([sys.executable, "-m", "hebictl.teleop.bridge_process", *map(str, fds)],
                                        stdin=subprocess.PIPE, pass_fds=fds, env=env, start_new_session=True)
        self.port.name = f"the MQTT bridge process (pid {self.process.pid})"
        self._child_priority.close()
        self._child_commands.close()
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(pickle.dumps(init, protocol=pickle.HIGHEST_PROTOCOL))
            self.process.stdin.close()
        except OSError as exc:  # it died at once: run() reports how
            log.error("could not start the bridge process: %s", exc)

    def init_values(self) -> dict[str, Any]:
        """What the child is started with (pickled once): the options, and what it needs of the arm."""
        from hebictl.collision.attach import world_of

        arm = self.runner.arm
        return {**self._options, "model": arm.model, "limits": arm.limits, "world": world_of(arm.model),
                "snapshot": self.runner.snapshot, "max_goal_duration": self.runner.max_goal_duration,
                "fleet": self.runner.fleet is not None, "recorder": self.runner.recorder is not None,
                "app_check": None if self.runner.app is None else self.runner.app.input_check(),
                "log_level": logging.getLogger().getEffectiveLevel()}

    def stop(self) -> None:
        """Ask the child to publish ``offline``, disconnect and exit (thread-safe, idempotent)."""
        process = self.process
        if process is not None and process.poll() is not None:
            return  # it ended before being asked: run() reports that (the arm holds for the lost link)
        self._stop_requested = True
        self.port.expect_end()
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)

    async def run(self) -> None:
        """Start the child, wait until it exits; raise :class:`TeleopError` if it ended without
        :meth:`stop` (the arm thread has then seen the lost link and holds)."""
        if self.process is None:
            self.start()
        process = self.process
        assert process is not None
        try:
            while process.poll() is None and not self.port.wedged:
                await asyncio.sleep(0.05)
        finally:
            if process.poll() is None:  # cancelled, or wedged: stop the child, then make sure it is gone
                wedged = self.port.wedged
                self.stop()
                if wedged:  # it would neither publish offline nor exit when asked
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                await asyncio.to_thread(self._reap, process)
                if wedged:  # the arm holds for the lost link already; the run ends as for a dead child
                    raise TeleopError(self.port.lost_detail)
        if not self._stop_requested:
            code = process.returncode
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            # the lost link ahead of the shutdown the raise leads to (the arm thread may not have read the
            # closed socket yet: the shutdown's brake would then have been recorded instead of the cause)
            self.port.lose(f"{self.port.name} ended")
            raise TeleopError(f"{self.port.name} ended ({how})")

    def close(self) -> None:
        """Close this process's ends of the link, once the arm loop has ended (it reads them)."""
        self.port.priority.close()
        self.port.commands.close()
        self._child_priority.close()
        self._child_commands.close()

    @staticmethod
    def _reap(process: subprocess.Popen[bytes]) -> None:
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("the bridge process (pid %d) did not stop within %g s: killed", process.pid, STOP_TIMEOUT_S)
            process.kill()
            process.wait()


class BaseBridgeProcess(BridgeProcess):
    """The base's bridge in a process of its own (``--bridge process``, the default), as an arm's
    (:class:`BridgeProcess`): the child runs :class:`~hebictl.teleop.base_bridge.BaseBridge` against a
    :class:`~hebictl.teleop.base.BaseRunnerProxy`, the loop reads the link inside its cycle
    (:class:`~hebictl.teleop.base.BasePort`: priority first; the silence rule; a dead or wedged child
    is a lost link, and the base holds). ``runner``, ``base_id``, ``schema``: as
    :class:`~hebictl.teleop.base_bridge.BaseBridge`'s."""

    port_type = BasePort

    def __init__(self, runner: BaseRunner, settings: BrokerSettings, base_id: str, *, schema: BaseSchema,
                 state_rate_hz: float = 20.0, max_age: float = 1.0,
                 bridge_options: dict[str, Any] | None = None, silence_limit: float = SILENCE_LIMIT_S) -> None:
        super().__init__(cast(Any, runner), settings, base_id, description=b"", state_rate_hz=state_rate_hz,
                         max_age=max_age, bridge_options=bridge_options, silence_limit=silence_limit)
        self.base_runner = runner
        self.base_schema = schema

    def init_values(self) -> dict[str, Any]:
        return {**self._options, "kind": "base", "snapshot": self.base_runner.snapshot,
                "max_velocity": self.base_schema.max_velocity, "command_ttl": self.base_runner.base.limits.command_ttl,
                "fleet": self.base_runner.fleet is not None, "log_level": logging.getLogger().getEffectiveLevel()}


# ---------------------------------------------------------------------- the child
def main(argv: list[str] | None = None) -> int:
    """The child: ``python -m hebictl.teleop.bridge_process PRIORITY_FD COMMANDS_FD``, start-up
    values pickled on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops us when the arm brakes
    args = sys.argv[1:] if argv is None else argv
    init = pickle.load(sys.stdin.buffer)
    logging.basicConfig(level=init["log_level"], format="%(levelname)s %(name)s: %(message)s")
    priority = Channel(socket.socket(fileno=int(args[0])))
    commands = Channel(socket.socket(fileno=int(args[1])))
    asyncio.run(_serve(init, priority, commands))
    return 0


async def _serve(init: dict[str, Any], priority_channel: Channel, command_channel: Channel) -> None:
    from hebictl.teleop.admission import Admission
    from hebictl.teleop.bridge import MqttBridge
    from hebictl.teleop.runner_proxy import Outbox, RunnerProxy

    loop = asyncio.get_running_loop()
    priority, commands = Outbox(priority_channel, PRIORITY_BACKLOG), Outbox(command_channel, COMMAND_BACKLOG)
    priority.attach(loop)
    commands.attach(loop)
    admission = Admission(max_age=init["max_age"], rate_limits=init["rate_limits"])
    proxy: RunnerProxy
    bridge: MqttBridge
    if init.get("kind") == "base":   # a mobile base (hebictl.teleop.base_bridge)
        from hebictl.teleop.base import BaseRunnerProxy
        from hebictl.teleop.base_bridge import BaseBridge
        from hebictl.teleop.schema import BaseSchema

        base_proxy = BaseRunnerProxy(priority, commands, init["snapshot"], fleet=init.get("fleet", False))
        proxy = base_proxy
        bridge = BaseBridge(cast(Any, base_proxy), init["settings"], init["arm_id"],
                            schema=BaseSchema(init["max_velocity"], init["command_ttl"]), admission=admission,
                            state_rate_hz=init["state_rate_hz"], **init["bridge_options"])
    else:
        from hebictl.collision.attach import attach
        from hebictl.teleop.runner_proxy import ArmModel
        from hebictl.teleop.schema import CommandSchema

        model, limits = init["model"], init["limits"]
        attach(model, init["world"])  # IK solutions are checked against the arm and its workspace here too
        proxy = RunnerProxy(priority, commands, ArmModel(model, limits), init["snapshot"],
                            max_goal_duration=init["max_goal_duration"], fleet=init["fleet"],
                            recorder=init["recorder"], app_check=init["app_check"])
        bridge = MqttBridge(proxy, init["settings"], init["arm_id"], schema=CommandSchema(proxy.arm.dof, limits,
                                                                                          **init["schema_options"]),
                            admission=admission, state_rate_hz=init["state_rate_hz"], **init["bridge_options"])
        bridge.use_description(init["description"])
    loop.add_signal_handler(signal.SIGTERM, bridge.stop)

    def from_arm() -> None:
        for message in command_channel.receive(256):
            proxy.receive(message)
        if command_channel.closed:  # the arm process is gone: nothing to serve
            log.error("the arm process closed the link: the bridge stops")
            loop.remove_reader(command_channel.fileno())
            bridge.stop()

    loop.add_reader(command_channel.fileno(), from_arm)

    async def report() -> None:
        """The broker connection as it changes, the bridge's counters with it and every REPORT_PERIOD_S:
        the reports the arm's silence rule waits for (hebictl.teleop.silence)."""
        up = False
        next_stats = loop.time()
        while True:
            if bridge.connected.is_set() != up:
                up = not up
                proxy.connected(up, bridge.account_tags)
                next_stats = loop.time()
            if loop.time() >= next_stats:
                next_stats = loop.time() + REPORT_PERIOD_S
                proxy.bridge_stats(bridge.stats_now())
            await asyncio.sleep(0.02)

    reporter = asyncio.create_task(report())
    try:
        await bridge.run()
    finally:
        reporter.cancel()
        proxy.bridge_stats(bridge.stats_now())  # the final counts, before the sockets close


if __name__ == "__main__":
    sys.exit(main())
