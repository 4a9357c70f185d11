"""A private 3-node RabbitMQ MQTT cluster on loopback for the fleet tests (Debian's rabbitmq-server).

Nothing is shared with anything else on the machine: the cluster runs its own epmd (a child of the
test, on a free port), its own Erlang cookie and node names, free ports for AMQP, MQTT and Erlang
distribution, and its directories under the test's ``tmp_path``; so it runs beside other tests and
beside a copy of itself. The nodes boot at once, then nodes 1 and 2 join node 0 by hand
(``stop_app``, ``join_cluster``, ``start_app``): a node that joined by peer discovery while booting
was seen refusing every MQTT connection ("client ID registration timed out": its member of the
MQTT plugin's client-id Raft cluster never found the leader). The cluster is ready once every node
has accepted an MQTT connection. :meth:`Cluster.freeze` is ``SIGSTOP`` of
a node's Erlang VM (a node that hangs without closing its sockets), :meth:`Cluster.thaw` undoes it.
Nodes are throw-away: :meth:`Cluster.stop` kills their process groups and the epmd.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hebictl.teleop.broker import free_port

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
#: the one reason a RabbitMQ test skips with
RABBITMQ_MISSING = "rabbitmq-server not installed (apt-get install rabbitmq-server; tools/dev test installs it)"
requires_rabbitmq = pytest.mark.skipif(
    not (RABBIT_BIN / "rabbitmq-server").exists() or shutil.which("epmd") is None, reason=RABBITMQ_MISSING)
#: [s] hang guard of every step of starting and stopping the cluster (never a measured bound)
GUARD = 300.0


class Cluster:
    """Three RabbitMQ nodes with the MQTT plugin (anonymous, loopback), clustered. ``mqtt[i]`` is
    node i's MQTT port; ``timings`` what the start took [s] (printed by the tests, not asserted)."""

    def __init__(self, base: Path, nodes: int = 3) -> None:
        self.base = base
        self.epmd = free_port()
        tag = f"f{os.getpid()}x{time.time_ns() % 1_000_000}"
        self.names = [f"{tag}n{i}@localhost" for i in range(nodes)]
        self.mqtt = [free_port() for _ in range(nodes)]
        self.env = {**os.environ, "HOME": str(base), "ERL_EPMD_PORT": str(self.epmd)}
        cookie = base / ".erlang.cookie"
        cookie.write_text(f"hebictl{os.getpid()}{time.time_ns()}")
        cookie.chmod(0o400)
        self.servers: list[subprocess.Popen[bytes]] = []
        self.epmd_process: subprocess.Popen[bytes] | None = None
        self.os_pids: list[int] = []
        self.timings: dict[str, float] = {}

    def url(self, node: int) -> str:
        return f"mqtt://127.0.0.1:{self.mqtt[node]}"

    def ctl(self, node: int, *args: str) -> str:
        out = self.try_ctl(node, *args)
        assert out.returncode == 0, f"rabbitmqctl {' '.join(args)}: {out.stdout}{out.stderr}"
        return out.stdout

    def try_ctl(self, node: int, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(RABBIT_BIN / "rabbitmqctl"), "-n", self.names[node], *args], env=self.env,
                              capture_output=True, text=True, timeout=GUARD, check=False)

    def _await(self, node: int) -> None:
        """Until the node answers (await_startup fails at once while it has not reached epmd yet)."""
        end = time.monotonic() + GUARD
        while self.try_ctl(node, "await_startup", "--timeout", "120").returncode != 0:
            assert self.servers[node].poll() is None, f"node {node} exited: see {self.base}/n{node}/out.log"
            assert time.monotonic() < end, f"hang guard: node {node} did not start"
            time.sleep(0.5)

    def _launch(self, i: int) -> None:
        d = self.base / f"n{i}"
        d.mkdir()
        (d / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = {free_port()}\nmqtt.listeners.tcp.default = {self.mqtt[i]}\n"
            "mqtt.allow_anonymous = true\nloopback_users = none\n")
        (d / "enabled_plugins").write_text("[rabbitmq_mqtt].\n")
        env = {**self.env, "RABBITMQ_NODENAME": self.names[i], "RABBITMQ_DIST_PORT": str(free_port()),
               "RABBITMQ_MNESIA_BASE": str(d / "mnesia"), "RABBITMQ_LOG_BASE": str(d / "log"),
               "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
               "RABBITMQ_PLUGINS_EXPAND_DIR": str(d / "expand"), "RABBITMQ_PID_FILE": str(d / "pid")}
        with open(d / "out.log", "wb") as log:
            self.servers.append(subprocess.Popen([str(RABBIT_BIN / "rabbitmq-server")], env=env, stdout=log,
                                                 stderr=subprocess.STDOUT, start_new_session=True))

    def start(self) -> None:
        t0 = time.monotonic()
        epmd = shutil.which("epmd") or "epmd"
        self.epmd_process = subprocess.Popen([epmd, "-port", str(self.epmd)], env=self.env,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
        end = time.monotonic() + GUARD
        while subprocess.run([epmd, "-port", str(self.epmd), "-names"], env=self.env, capture_output=True,
                             timeout=GUARD, check=False).returncode != 0:
            assert time.monotonic() < end, "hang guard: epmd not listening"
            time.sleep(0.1)
        for i in range(len(self.names)):
            self._launch(i)
        with ThreadPoolExecutor(len(self.names)) as pool:  # each rabbitmqctl is an Erlang VM of its own
            list(pool.map(self._await, range(len(self.names))))
        for i in range(1, len(self.names)):
            self.ctl(i, "stop_app")
            self.ctl(i, "join_cluster", self.names[0])
            self.ctl(i, "start_app")
        status = self.ctl(0, "cluster_status")
        assert all(n in status for n in self.names), status
        for i in range(len(self.names)):
            self._await_mqtt(i)
        self.timings["start"] = time.monotonic() - t0
        self.os_pids = [int((self.base / f"n{i}" / "pid").read_text().strip()) for i in range(len(self.names))]

    def _await_mqtt(self, node: int) -> None:
        """Until the node accepts an MQTT connection (its CONNACK: the plugin and its client-id
        registry are up), retried until the hang guard."""
        import paho.mqtt.client as paho

        end = time.monotonic() + GUARD
        while True:
            client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"probe-{os.getpid()}-{node}")
            connected = False
            with contextlib.suppress(OSError):
                if client.connect("127.0.0.1", self.mqtt[node], keepalive=30) == 0:
                    deadline = time.monotonic() + 10.0
                    while not client.is_connected() and time.monotonic() < deadline:
                        client.loop(timeout=0.2)
                    connected = client.is_connected()
            with contextlib.suppress(Exception):
                client.disconnect()
            if connected:
                return
            assert time.monotonic() < end, f"hang guard: node {node} accepts no MQTT connection"
            time.sleep(1.0)

    def freeze(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGCONT)

    def stop(self) -> None:
        for pid in self.os_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        for p in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # the node's own session: wrapper, Erlang VM, children
        for p in self.servers:
            p.wait(timeout=GUARD)
        if self.epmd_process is not None:
            self.epmd_process.kill()
            self.epmd_process.wait(timeout=GUARD)


@contextlib.contextmanager
def rabbitmq_cluster(base: Path) -> Iterator[Cluster]:
    """A started :class:`Cluster` with its files under ``base``, killed at the end."""
    c = Cluster(base)
    try:
        c.start()
        yield c
    finally:
        c.stop()
