"""The fleet lease on a real 3-node RabbitMQ MQTT cluster on loopback (Debian's rabbitmq-server),
started and ended by the test: a frozen node (SIGSTOP) holds the arms it serves within the lease
timeout, independent of MQTT keepalive; arms on healthy nodes go on; nothing resumes by itself.

Wall clock: the bounds are generous hang guards; the figures measured are printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hebictl.teleop.broker import free_port
from hebictl.teleop.lease import (
    LEASE_TIMEOUT,
    LEASE_TOPIC,
    FleetLease,
    Heartbeat,
    LeaseGate,
    LeaseState,
    publish_heartbeats,
)
from tests._support.extras import extra_missing

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
pytestmark = [
    pytest.mark.skipif(not (RABBIT_BIN / "rabbitmq-server").exists() or shutil.which("epmd") is None,
                       reason="rabbitmq-server not installed (apt-get install rabbitmq-server)"),
]


class Cluster:
    """Three RabbitMQ nodes with the MQTT plugin, clustered, on their own epmd port and cookie."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.epmd = free_port()
        tag = f"h{os.getpid()}"
        self.names = [f"{tag}n{i}@localhost" for i in range(3)]
        self.mqtt = [free_port() for _ in range(3)]
        self.env = {**os.environ, "HOME": str(base), "ERL_EPMD_PORT": str(self.epmd)}
        cookie = base / ".erlang.cookie"
        cookie.write_text(f"hebictl{os.getpid()}{time.time_ns()}")
        cookie.chmod(0o400)
        self.servers: list[subprocess.Popen[bytes]] = []
        self.os_pids: list[int] = []

    def ctl(self, node: int, *args: str, timeout: float = 120) -> str:
        out = self.try_ctl(node, *args, timeout=timeout)
        assert out.returncode == 0, f"rabbitmqctl {' '.join(args)}: {out.stdout}{out.stderr}"
        return out.stdout

    def try_ctl(self, node: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(RABBIT_BIN / "rabbitmqctl"), "-n", self.names[node], *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def await_node(self, node: int, within: float = 240.0) -> None:
        """Until the node answers (await_startup fails at once while it has not reached epmd yet)."""
        end = time.monotonic() + within
        while self.try_ctl(node, "await_startup", "--timeout", "60", timeout=90).returncode != 0:
            assert self.servers[node].poll() is None, f"node {node} exited: see {self.base}/n{node}/out.log"
            assert time.monotonic() < end, f"node {node} did not start within {within} s"
            time.sleep(1.0)

    def start(self) -> None:
        for i, name in enumerate(self.names):
            d = self.base / f"n{i}"
            d.mkdir()
            (d / "rabbitmq.conf").write_text(
                f"listeners.tcp.default = {free_port()}\nmqtt.listeners.tcp.default = {self.mqtt[i]}\n"
                "mqtt.allow_anonymous = true\nloopback_users = none\n")
            (d / "enabled_plugins").write_text("[rabbitmq_mqtt].\n")
            env = {**self.env, "RABBITMQ_NODENAME": name, "RABBITMQ_DIST_PORT": str(free_port()),
                   "RABBITMQ_MNESIA_BASE": str(d / "mnesia"), "RABBITMQ_LOG_BASE": str(d / "log"),
                   "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
                   "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
                   "RABBITMQ_PLUGINS_EXPAND_DIR": str(d / "expand"), "RABBITMQ_PID_FILE": str(d / "pid")}
            with open(d / "out.log", "wb") as log:
                self.servers.append(subprocess.Popen([str(RABBIT_BIN / "rabbitmq-server")], env=env, stdout=log,
                                                     stderr=subprocess.STDOUT, start_new_session=True))
        for i in range(3):
            self.await_node(i)
        for i in (1, 2):
            self.ctl(i, "stop_app")
            self.ctl(i, "join_cluster", self.names[0])
            self.ctl(i, "start_app")
        status = self.ctl(0, "cluster_status")
        assert all(n in status for n in self.names), status
        self.os_pids = [int(self.ctl(i, "eval", "os:getpid().").strip().strip('"')) for i in range(3)]

    def freeze(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGCONT)

    def stop(self) -> None:
        for pid in self.os_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        for i in range(len(self.servers)):
            with contextlib.suppress(Exception):
                self.ctl(i, "stop", timeout=60)
        for p in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)   # the node's own session: its wrapper, erl and children
            p.wait(timeout=30)
        subprocess.run(["epmd", "-port", str(self.epmd), "-kill"], env=self.env, capture_output=True,
                       timeout=30, check=False)


@contextlib.contextmanager
def cluster(base: Path) -> Iterator[Cluster]:
    c = Cluster(base)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_a_frozen_node_holds_its_arms_within_the_lease_timeout(tmp_path):
    aiomqtt = pytest.importorskip("aiomqtt", reason=extra_missing("aiomqtt"))
    with cluster(tmp_path) as c:
        arms = {f"arm{i}": LeaseGate(FleetLease(f"arm{i}", {"station"})) for i in range(3)}
        held: dict[str, float] = {}

        async def scenario() -> dict[str, object]:
            out: dict[str, object] = {}
            async with contextlib.AsyncExitStack() as stack:
                station = await stack.enter_async_context(
                    aiomqtt.Client("127.0.0.1", c.mqtt[0], identifier="station", keepalive=10))
                clients = {}
                for i, name in enumerate(arms):      # armI on node I
                    cl = await stack.enter_async_context(
                        aiomqtt.Client("127.0.0.1", c.mqtt[i], identifier=name, keepalive=10))
                    await cl.subscribe(LEASE_TOPIC, qos=0)
                    clients[name] = cl

                async def receive(name: str) -> None:
                    async for m in clients[name].messages:
                        arms[name].on_message(str(m.topic), bytes(m.payload), time.monotonic())

                async def poll() -> None:
                    while True:
                        now = time.monotonic()
                        for name, gate in arms.items():
                            if gate.poll(now) is not None:
                                held[name] = now
                        await asyncio.sleep(0.005)

                async def wait_for(pred, what: str, timeout: float = 20.0) -> None:
                    end = time.monotonic() + timeout
                    while not pred():
                        assert time.monotonic() < end, f"timed out: {what}; {[g.state for g in arms.values()]}"
                        await asyncio.sleep(0.01)

                tasks = [asyncio.create_task(receive(n)) for n in arms] + [asyncio.create_task(poll())]
                stop = asyncio.Event()
                beat = asyncio.create_task(publish_heartbeats(station, Heartbeat("station"), stop))
                await wait_for(lambda: all(g.state is LeaseState.READY for g in arms.values()), "every arm leased")
                for gate in arms.values():
                    gate.command(time.monotonic())
                await asyncio.sleep(1.0)
                assert not held, f"held while leased: {held}"
                # node 2 freezes: the arm it serves holds; the others go on
                t_freeze = time.monotonic()
                c.freeze(2)
                await wait_for(lambda: "arm2" in held, "arm2 held after its node froze")
                last = arms["arm2"].lease.last_lease
                assert last is not None
                out["freeze_to_hold"] = held["arm2"] - t_freeze
                out["last_lease_to_hold"] = held["arm2"] - last
                await asyncio.sleep(1.0)
                out["others_active"] = all(arms[n].lease.may_move(time.monotonic()) for n in ("arm0", "arm1"))
                out["others_held"] = sorted(n for n in held if n != "arm2")
                # the node comes back: its arm is leased again but does not move without a command
                c.thaw(2)
                await wait_for(lambda: arms["arm2"].state is LeaseState.READY, "arm2 leased again after the thaw")
                await asyncio.sleep(0.5)
                out["arm2_moves_by_itself"] = arms["arm2"].lease.may_move(time.monotonic())
                arms["arm2"].command(time.monotonic())
                out["arm2_after_command"] = arms["arm2"].lease.may_move(time.monotonic())
                # the station's node freezes: every arm holds
                held.clear()
                t_freeze = time.monotonic()
                c.freeze(0)
                await wait_for(lambda: set(held) == set(arms), "every arm held after the station's node froze")
                out["station_node_freeze_to_hold"] = {n: round(t - t_freeze, 3) for n, t in sorted(held.items())}
                c.thaw(0)
                stop.set()
                await beat
                for t in tasks:
                    t.cancel()
            return out

        out = asyncio.run(scenario())
    print(f"3-node RabbitMQ cluster: node 2 frozen -> arm2 held after {out['freeze_to_hold']:.3f} s "
          f"({out['last_lease_to_hold']:.3f} s after its last lease; timeout {LEASE_TIMEOUT} s, keepalive 10 s); "
          f"arms on nodes 0, 1 active: {out['others_active']}; after the thaw arm2 moves by itself: "
          f"{out['arm2_moves_by_itself']}, after a command: {out['arm2_after_command']}; "
          f"station's node frozen -> held after {out['station_node_freeze_to_hold']}")
    assert out["freeze_to_hold"] < 2.0 and out["last_lease_to_hold"] < 2.0   # hang guards; the figure is printed
    assert out["others_active"] is True and out["others_held"] == []
    assert out["arm2_moves_by_itself"] is False and out["arm2_after_command"] is True
