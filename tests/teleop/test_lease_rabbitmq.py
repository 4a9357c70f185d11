"""The fleet lease on a real 3-node RabbitMQ MQTT cluster on loopback (Debian's rabbitmq-server),
started and ended by the test: a frozen node (SIGSTOP) holds the arms it serves by the lease, not by
MQTT's keepalive; arms on healthy nodes keep their lease; nothing resumes by itself.

Ordering, not timing: every wait is for an event (a state of an arm's lease gate, leases counted as
they arrive) with a hang guard (120 s) far below the clients' MQTT keepalive (600 s), so a hold seen
at all was the lease's doing. How fast the hold comes is exact in simulated time (tests/teleop/test_lease.py);
the figures measured here are printed. The cluster is private to the test (its own epmd port, cookie,
node names, ports and directories), so it runs beside anything, including a copy of itself.
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
from concurrent.futures import ThreadPoolExecutor
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
from tests._support.ordering import HANG, until, wait_until

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
#: [s] the MQTT keepalive of every client here: far beyond any wait, so keepalive never decides a hold
KEEPALIVE = 600
pytestmark = [
    pytest.mark.skipif(not (RABBIT_BIN / "rabbitmq-server").exists() or shutil.which("epmd") is None,
                       reason="rabbitmq-server not installed (apt-get install rabbitmq-server)"),
]


class Cluster:
    """Three RabbitMQ nodes with the MQTT plugin, clustered, on their own epmd port and cookie."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.epmd = free_port()
        tag = f"h{os.getpid()}x{time.time_ns() % 1_000_000}"
        self.names = [f"{tag}n{i}@localhost" for i in range(3)]
        self.mqtt = [free_port() for _ in range(3)]
        self.env = {**os.environ, "HOME": str(base), "ERL_EPMD_PORT": str(self.epmd)}
        cookie = base / ".erlang.cookie"
        cookie.write_text(f"hebictl{os.getpid()}{time.time_ns()}")
        cookie.chmod(0o400)
        self.servers: list[subprocess.Popen[bytes]] = []
        self.epmd_process: subprocess.Popen[bytes] | None = None
        self.os_pids: list[int] = []
        self.timings: dict[str, float] = {}

    def ctl(self, node: int, *args: str, timeout: float = 4 * HANG) -> str:
        out = self.try_ctl(node, *args, timeout=timeout)
        assert out.returncode == 0, f"rabbitmqctl {' '.join(args)}: {out.stdout}{out.stderr}"
        return out.stdout

    def try_ctl(self, node: int, *args: str, timeout: float = 4 * HANG) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(RABBIT_BIN / "rabbitmqctl"), "-n", self.names[node], *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def await_node(self, node: int, within: float = 8 * HANG) -> None:
        """Until the node answers (await_startup fails at once while it has not reached epmd yet)."""
        end = time.monotonic() + within
        while self.try_ctl(node, "await_startup", "--timeout", str(int(2 * HANG))).returncode != 0:
            assert self.servers[node].poll() is None, f"node {node} exited: see {self.base}/n{node}/out.log"
            assert time.monotonic() < end, f"hang guard: node {node} did not start within {within} s"
            time.sleep(0.5)

    def join(self, node: int) -> None:
        """Join ``node`` to node 0 by hand (when peer discovery let it boot on its own)."""
        self.ctl(node, "stop_app")
        self.ctl(node, "join_cluster", self.names[0])
        self.ctl(node, "start_app")

    def launch(self, i: int) -> None:
        """Start node ``i``; nodes 1 and 2 find node 0 by peer discovery (``classic_config``) and join
        it as they boot, with no stop_app / join_cluster / start_app round of rabbitmqctl VMs
        afterwards (which took 15 s to 2 min of a loaded machine)."""
        name = self.names[i]
        d = self.base / f"n{i}"
        d.mkdir()
        join = "" if i == 0 else (
            "cluster_formation.peer_discovery_backend = classic_config\n"
            f"cluster_formation.classic_config.nodes.1 = {self.names[0]}\n"
            "cluster_formation.discovery_retry_limit = 240\ncluster_formation.discovery_retry_interval = 1000\n")
        (d / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = {free_port()}\nmqtt.listeners.tcp.default = {self.mqtt[i]}\n"
            "mqtt.allow_anonymous = true\nloopback_users = none\n" + join)
        (d / "enabled_plugins").write_text("[rabbitmq_mqtt].\n")
        env = {**self.env, "RABBITMQ_NODENAME": name, "RABBITMQ_DIST_PORT": str(free_port()),
               "RABBITMQ_MNESIA_BASE": str(d / "mnesia"), "RABBITMQ_LOG_BASE": str(d / "log"),
               "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
               "RABBITMQ_PLUGINS_EXPAND_DIR": str(d / "expand"), "RABBITMQ_PID_FILE": str(d / "pid")}
        with open(d / "out.log", "wb") as log:
            self.servers.append(subprocess.Popen([str(RABBIT_BIN / "rabbitmq-server")], env=env, stdout=log,
                                                 stderr=subprocess.STDOUT, start_new_session=True))

    def start(self) -> None:
        t0 = time.monotonic()
        # the cluster's own epmd, a child of the test (not a daemon the nodes would leave behind)
        self.epmd_process = subprocess.Popen([shutil.which("epmd") or "epmd", "-port", str(self.epmd)], env=self.env,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
        wait_until(lambda: subprocess.run(["epmd", "-port", str(self.epmd), "-names"], env=self.env,
                                          capture_output=True, timeout=HANG).returncode == 0, "epmd listening")
        # node 0 first; then 1 and 2 boot beside each other and find it up (booting all three at once was
        # 30 % faster at load 20, but at load 60 a node booting beside the others once exited on its own)
        self.launch(0)
        self.await_node(0)
        self.timings["boot"] = time.monotonic() - t0
        self.launch(1)
        self.launch(2)
        with ThreadPoolExecutor(2) as pool:    # each rabbitmqctl is an Erlang VM of its own
            list(pool.map(self.await_node, (1, 2)))
        status = self.ctl(0, "cluster_status")
        for i in (1, 2):
            if self.names[i] not in status:   # discovery gave up before node 0 was up: join by hand
                self.join(i)
                status = self.ctl(0, "cluster_status")
        assert all(n in status for n in self.names), status
        self.timings["cluster"] = time.monotonic() - t0
        self.os_pids = [int((self.base / f"n{i}" / "pid").read_text().strip()) for i in range(3)]

    def freeze(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGSTOP)

    def thaw(self, node: int) -> None:
        os.kill(self.os_pids[node], signal.SIGCONT)

    def stop(self) -> None:
        """Throw-away nodes: killed with their process groups (wrapper, Erlang VM, children), no shutdown."""
        for pid in self.os_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        for p in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in self.servers:
            p.wait(timeout=HANG)
        if self.epmd_process is not None:
            self.epmd_process.kill()
            self.epmd_process.wait(timeout=HANG)


@contextlib.contextmanager
def cluster(base: Path) -> Iterator[Cluster]:
    c = Cluster(base)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_a_frozen_node_holds_its_arms_by_the_lease_and_the_others_keep_theirs(tmp_path):
    """armI subscribes through node I, the station heartbeats through node 0. Node 2 frozen: arm2 is
    held and takes no lease until the thaw, while arm0 and arm1 keep taking leases; after the thaw
    arm2 is leased again but moves only after a command. The station's node frozen: every arm held."""
    aiomqtt = pytest.importorskip("aiomqtt", reason=extra_missing("aiomqtt"))
    with cluster(tmp_path) as c:
        arms = {f"arm{i}": LeaseGate(FleetLease(f"arm{i}", {"station"})) for i in range(3)}
        held: dict[str, float] = {}
        taken: dict[str, list[float]] = {name: [] for name in arms}   # when each arm took a lease

        async def scenario() -> dict[str, object]:
            out: dict[str, object] = {}
            async with contextlib.AsyncExitStack() as stack:
                station = await stack.enter_async_context(
                    aiomqtt.Client("127.0.0.1", c.mqtt[0], identifier="station", keepalive=KEEPALIVE))
                clients = {}
                for i, name in enumerate(arms):      # armI on node I
                    cl = await stack.enter_async_context(
                        aiomqtt.Client("127.0.0.1", c.mqtt[i], identifier=name, keepalive=KEEPALIVE))
                    await cl.subscribe(LEASE_TOPIC, qos=0)
                    clients[name] = cl

                async def receive(name: str) -> None:
                    async for m in clients[name].messages:
                        now = time.monotonic()
                        if arms[name].on_message(str(m.topic), bytes(m.payload), now):
                            taken[name].append(now)

                async def poll() -> None:
                    while True:
                        now = time.monotonic()
                        for name, gate in arms.items():
                            if gate.poll(now) is not None:
                                held[name] = now
                        await asyncio.sleep(0.005)

                def more(names: tuple[str, ...], n: int = 5):   # each of them took n more leases from now on
                    base = {name: len(taken[name]) for name in names}
                    return lambda: all(len(taken[name]) >= base[name] + n for name in names)

                tasks = [asyncio.create_task(receive(n)) for n in arms] + [asyncio.create_task(poll())]
                stop = asyncio.Event()
                beat = asyncio.create_task(publish_heartbeats(station, Heartbeat("station"), stop))
                await until(lambda: all(g.state is LeaseState.READY for g in arms.values()), "every arm leased")
                for gate in arms.values():
                    gate.command(time.monotonic())
                await until(more(tuple(arms)), "leases reaching every arm through its node")
                # node 2 freezes: the arm it serves is held and takes no lease; the others keep taking them
                held.clear()
                t_freeze = time.monotonic()
                c.freeze(2)
                await until(lambda: "arm2" in held, "arm2 held after its node froze")
                last = arms["arm2"].lease.last_lease
                assert last is not None
                out["freeze_to_hold"] = held["arm2"] - t_freeze
                out["last_lease_to_hold"] = held["arm2"] - last
                frozen = len(taken["arm2"])
                await until(more(("arm0", "arm1")), "leases still reaching arm0 and arm1")
                out["arm2_leases_while_frozen"] = len(taken["arm2"]) - frozen
                out["others_held"] = sorted(n for n in held if n != "arm2")
                # the node comes back: its arm is leased again but does not move without a command
                c.thaw(2)
                await until(lambda: arms["arm2"].state is LeaseState.READY, "arm2 leased again after the thaw")
                out["arm2_moves_by_itself"] = arms["arm2"].lease.may_move(time.monotonic())
                arms["arm2"].command(time.monotonic())
                out["arm2_after_command"] = arms["arm2"].lease.may_move(time.monotonic())
                # the station's node freezes: every arm holds
                held.clear()
                t_freeze = time.monotonic()
                c.freeze(0)
                # every arm stops being allowed to move (an arm a starved test process already let lapse
                # before the freeze is not held again: one hold per lapse)
                await until(lambda: all(g.state is not LeaseState.ACTIVE for g in arms.values()),
                            "every arm held after the station's node froze")
                out["station_node_freeze_to_hold"] = {n: round(t - t_freeze, 3) for n, t in sorted(held.items())}
                c.thaw(0)
                stop.set()
                await beat
                for t in tasks:
                    t.cancel()
            return out

        out = asyncio.run(asyncio.wait_for(scenario(), 4 * HANG))
        timings = dict(c.timings)
    print(f"3-node RabbitMQ cluster (booted in {timings['boot']:.1f} s, clustered at {timings['cluster']:.1f} s): "
          f"node 2 frozen -> arm2 held after {out['freeze_to_hold']:.3f} s ({out['last_lease_to_hold']:.3f} s after "
          f"its last lease; timeout {LEASE_TIMEOUT} s, keepalive {KEEPALIVE} s), {out['arm2_leases_while_frozen']} "
          f"leases taken while frozen; arms on nodes 0, 1 kept taking leases (held meanwhile: "
          f"{out['others_held'] or 'none'}); after the thaw arm2 moves by itself: {out['arm2_moves_by_itself']}, "
          f"after a command: {out['arm2_after_command']}; station's node frozen -> held after "
          f"{out['station_node_freeze_to_hold']}")
    assert out["arm2_leases_while_frozen"] == 0
    assert out["arm2_moves_by_itself"] is False and out["arm2_after_command"] is True
