"""Teleop latency and throughput on loopback: publish-to-backend latency of jog commands, and
whether a 500 Hz jog stream is sustained for 10 s without backlog.

Set-up: a private mosquitto on 127.0.0.1; ``hebictl teleop``'s server (arm thread + MQTT bridge,
the bundled 6-DoF kit on the mock backend) in this process; the operator's :class:`TeleopClient`
in a child process, as an operator console would be (``time.perf_counter`` is the system-wide
monotonic clock on Linux, so both processes' timestamps compare directly).

Each jog sample carries a unique velocity for joint 1 (``0.01 + k·1e-6`` rad/s). The operator
notes ``time.perf_counter()`` just before publishing sample ``k``; a probe on the mock backend's
``write`` notes when the command sent to the modules first carries that velocity. The difference
is the latency from publish to the backend: broker hop, bridge validation, hand-over to the arm
thread, and the wait for the next control cycle. A sample superseded by a newer one before the
next cycle (two samples in one cycle: latest wins) never reaches the backend and is counted, not
timed. "No backlog" means: every published sample was received by the bridge, and the latency of
the last second is no worse than that of the first (a growing queue shows up as growing latency).

Run: ``.venv/bin/python benchmarks/teleop.py [--rate-hz 500] [--loop-hz 500] [--seconds 10]``.
Targets: p99 < 5 ms, no backlog (``--strict``: exit 1 when missed). Needs the mosquitto binary.

``--flood RATE`` instead floods the arm with stale joint goals (issue 12.5: 2,000 msg/s) from a
child process (paho-mqtt, QoS 0, as fast as the rate allows) for ``--seconds`` and reports what
the bridge received, how many rejections the acks answered (an ack answers ``1 + coalesced``),
how many were coalesced and dropped, and whether the arm moved. Target: every received command
answered, no ack dropped, the arm still.

``--estop-load jog|cartesian|none`` (issue 33) measures the e-stop under load on the documented
secured set-up (password file, ACL and, where gcc and mosquitto's headers are installed, the
broker plugin compiled from docs/teleop.md): a second operator account floods stale jog samples
as fast as a child process can (``jog``), or sends reachable Cartesian goals at the allowed 20/s
(``cartesian``: IK 60-100 ms each); the operator presses the e-stop ``--presses`` times (mode
``position`` and 1 s of load before each press, release after). Latency = from just before the
press is published to the first command the arm writes to its modules with the e-stop latched
(a probe on the backend's ``write``, read in the arm thread). Prints median / p95 / max and how
many presses did not engage within 10 s. Target (issue 33): p95 <= 200 ms, none lost. It also
prints the arm's cycles under that load as its modules see them (median / p99 / max between writes)
and its control gaps (cycles later than the 250 ms command lifetime): the figure
tests/teleop/test_teleop_security.py used to bound against this machine's scheduling statistics,
and now only prints. ``--bridge process|thread|both`` (default both: one run of each, the child
process first) puts the MQTT bridge in a child process, as ``hebictl teleop`` does by default
(hebictl/teleop/bridge_process.py), or in a thread of the arm's process, as before. ``--app NAME``
runs that Mobile IO app as ``hebictl teleop --app NAME`` does (each press then comes in mode ``app``),
and ``--estop-load input`` floods it: fresh, valid ``cmd/input`` samples (every button up, the axes
centred) as fast as a child process publishes them, so that what passes the account's and the
topic's rate limits is checked (in the bridge process, with ``--bridge process``) and handed to the
app (over the link); the run then prints what the app took in and counted dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import multiprocessing
import os
import sys
import tempfile
import time
from multiprocessing.connection import Connection

import numpy as np
from _common import REPO, StandardLoad

from hebictl.control.arm import Arm
from hebictl.control.realtime import RealtimeRequest
from hebictl.hardware.base import Command
from hebictl.hardware.clock import MonotonicClock
from hebictl.teleop.broker import LocalBroker, find_mosquitto
from hebictl.teleop.client import TeleopClient
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.server import TeleopServer

BASE_V = 0.01      # rad/s, joint 1 velocity of sample 0
STEP_V = 1e-6      # rad/s between successive samples (unique per sample, well above float noise)


class WriteProbe:
    """Wraps a backend's ``write`` and records (time, joint-1 velocity) of every command."""

    def __init__(self, backend: object, capacity: int) -> None:
        self.times = np.full(capacity, np.nan)
        self.values = np.full(capacity, np.nan)
        self.n = 0
        self._write = backend.write  # type: ignore[attr-defined]
        backend.write = self.write  # type: ignore[attr-defined]

    def write(self, cmd: Command) -> bool:
        if self.n < self.times.shape[0]:
            self.times[self.n] = time.perf_counter()
            self.values[self.n] = cmd.velocity[0]
            self.n += 1
        return self._write(cmd)


def operator(url: str, arm_id: str, rate_hz: float, seconds: float, conn: Connection) -> None:
    """Child process: stream the jog samples, send back their publish times."""
    try:
        conn.send(asyncio.run(stream(url, arm_id, rate_hz, seconds)))
    except BaseException as exc:
        conn.send(exc)
        raise


async def stream(url: str, arm_id: str, rate_hz: float, seconds: float) -> np.ndarray:
    n = int(rate_hz * seconds)
    sent = np.full(n, np.nan)
    async with TeleopClient(url, arm_id, name="bench") as client:
        ack = await client.mode("jog")
        if ack is None or not ack.accepted:
            raise SystemExit(f"mode jog refused: {ack}")
        velocity = np.zeros(6)
        period = 1.0 / rate_hz
        t_next = time.perf_counter()
        for k in range(n):
            velocity[0] = BASE_V + k * STEP_V
            sent[k] = time.perf_counter()
            await client.jog(velocity, ttl=0.25)
            t_next += period
            delay = t_next - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.05:  # fell far behind: keep the rate, do not burst to catch up
                t_next = time.perf_counter()
        await client.jog(np.zeros(6), deadman=False)
        await asyncio.sleep(0.3)
    return sent


def flooder(url_port: int, arm_id: str, rate_hz: float, seconds: float, conn: Connection) -> None:
    """Child process: publish stale goals at ``rate_hz`` with paho (QoS 0); send back the count."""
    import json

    import paho.mqtt.client as mqtt

    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="flooder")
    c.connect("127.0.0.1", url_port)
    c.loop_start()
    body = {"positions": [0.0] * 6, "duration": 1.0, "ts": time.time() - 10.0, "client": "flood"}
    n = int(rate_hz * seconds)
    t0 = time.perf_counter()
    for k in range(n):
        body["seq"] = k + 1
        c.publish(f"hebictl/v1/{arm_id}/cmd/joint_goal", json.dumps(body), qos=0)
        delay = t0 + (k + 1) / rate_hz - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    elapsed = time.perf_counter() - t0
    time.sleep(0.5)
    c.loop_stop()
    c.disconnect()
    conn.send((n, elapsed))


def flood(args: argparse.Namespace) -> int:
    """The ack-flood run (``--flood``)."""
    with tempfile.TemporaryDirectory() as tmp, LocalBroker(tmp) as broker:
        arm = Arm.from_config(REPO / "configs" / "x-series-6dof.cfg.yaml", backend="mock", clock=MonotonicClock())
        server = TeleopServer(arm, parse_broker(broker.url), "bench")
        server.start_background()
        answered = {"n": 0, "acks": 0}

        async def watch(done: asyncio.Event) -> None:
            async with TeleopClient(broker.url, "bench", name="watch") as c:
                await done.wait()
                await asyncio.sleep(1.0)
                stale = [a for a in c.acks if a.client == "flood"]
                answered["n"] = sum(1 + a.coalesced for a in stale)
                answered["acks"] = len(stale)

        async def go() -> tuple[int, float, float]:
            done = asyncio.Event()
            task = asyncio.create_task(watch(done))
            await asyncio.sleep(0.5)
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=flooder, args=(broker.port, "bench", args.flood, args.seconds, child))
            q0 = server.runner.snapshot.position.copy()
            proc.start()
            sent, elapsed = await asyncio.to_thread(parent.recv)
            proc.join(30)
            done.set()
            await task
            moved = float(np.max(np.abs(server.runner.snapshot.position - q0)))
            return sent, elapsed, moved

        try:
            sent, elapsed, moved = asyncio.run(go())
        finally:
            server.stop_background()
            arm.close()
        st = server.bridge.stats
    received = st["received"]
    ok = answered["n"] == received and st["acks_dropped"] == 0 and moved < 1e-9
    print(f"teleop ack flood: {sent} stale goals sent at {sent / elapsed:.0f} msg/s for {elapsed:.1f} s (QoS 0)")
    print(f"  bridge received {received}, rejected {st['rejected']}; {answered['acks']} acks answered "
          f"{answered['n']} rejections ({st['acks_coalesced']} coalesced), {st['acks_dropped']} acks dropped; "
          f"arm moved {moved:.2e} rad -> {'PASS' if ok else 'FAIL'}")
    return 1 if args.strict and not ok else 0


def jog_flooder(port: int, arm_id: str, user: str, password: str, seconds: float, conn: Connection,
                kind: str = "jog") -> None:
    """Child process: as fast as paho publishes them (QoS 0), stale jog samples (``kind`` jog), or
    fresh, valid Mobile IO samples (``kind`` input: every button up, the axes centred, so what passes
    the account's and the topic's rate limits reaches the app, over the link with the bridge process,
    and moves nothing); sends back the count."""
    import json

    import paho.mqtt.client as mqtt

    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{user}:flood")
    c.username_pw_set(user, password)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port)
    c.loop_start()
    seq, n, end = int(time.time() * 1e6) - 10_000_000, 0, time.monotonic() + seconds
    client = f"{user}:flood"
    while time.monotonic() < end:
        for _ in range(200):
            seq += 1
            if kind == "input":
                body = {"seq": seq, "ts": time.time(), "client": client, "buttons": [0] * 8, "axes": [0.0] * 8}
            else:
                body = {"seq": seq, "ts": time.time() - 30.0, "client": client, "velocity": [0.3, 0, 0, 0, 0, 0],
                        "space": "joint"}
            c.publish(f"hebictl/v1/{arm_id}/cmd/{kind}", json.dumps(body), qos=0)
            n += 1
        time.sleep(0.001)
    c.loop_stop()
    conn.send(n)


def goal_sender(port: int, arm_id: str, user: str, password: str, seconds: float, targets: list[list[float]],
                conn: Connection) -> None:
    """Child process: reachable Cartesian goals at 20/s (the per-topic limit) for ``seconds``."""
    async def go() -> int:
        n = 0
        async with TeleopClient(f"mqtt://127.0.0.1:{port}", arm_id, name=f"{user}:goals", username=user,
                                password=password, subscribe_state=False) as c:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await c.send("cartesian_goal", {"position": targets[n % len(targets)], "duration": 2.0}, wait=False)
                n += 1
                await asyncio.sleep(0.05)
        return n
    conn.send(asyncio.run(go()))


def estop_presser(port: int, arm_id: str, password: str, presses: int, conn: Connection,
                  mode: str = "position") -> None:
    """Child process: the operator presses the e-stop ``presses`` times (``mode``, ``position`` or
    ``app``, and 1 s before each, release once it engaged) and sends back the time just before each press was
    published. A process of its own, as an operator's console is: in the arm's process its event
    loop would take the GIL from the arm thread as no real operator does."""
    unanswered: list[float] = []

    async def go() -> list[float]:
        times: list[float] = []
        async with TeleopClient(f"mqtt://127.0.0.1:{port}", arm_id, name="operator:console", username="operator",
                                password=password) as op:
            await op.wait_status(lambda s: s["status"] == "online", timeout=10.0)
            for _ in range(presses):
                try:
                    await op.mode(mode, timeout=10.0)
                except TimeoutError:  # the acks topic carries every client's answers: a flood's too
                    unanswered.append(time.perf_counter())
                await asyncio.sleep(1.0)
                t = time.perf_counter()
                await op.estop(True, wait=False)
                times.append(t)
                with contextlib.suppress(TimeoutError):  # a lost press: counted by the parent
                    await op.wait_status(lambda s: s.get("estop") is True, timeout=10.0)
                for _ in range(3):  # a release not answered within 10 s is counted and sent again
                    with contextlib.suppress(TimeoutError):
                        await op.estop(False, timeout=10.0)
                        break
                    unanswered.append(t)
                await asyncio.sleep(0.2)
        return times
    try:
        conn.send((asyncio.run(go()), len(unanswered)))
    except BaseException as exc:
        conn.send(exc)
        raise


def doc_plugin(folder: str) -> str | None:
    """The broker plugin of docs/teleop.md compiled into ``folder``, or None without gcc/headers."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    m = re.search(r"<!-- no_retained_cmd\.c -->\n```c\n(.*?)```", (REPO / "docs" / "teleop.md").read_text(), re.S)
    if m is None:
        return None
    src, lib = Path(folder) / "plugin.c", Path(folder) / "plugin.so"
    src.write_text(m.group(1))
    done = subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)], capture_output=True, timeout=60)
    return str(lib) if done.returncode == 0 else None


class EstopProbe:
    """Wraps the backend's ``write``: the first write with the runner's e-stop latched after a time,
    and every write's time (the arm's cycles as the modules see them: its control gaps under load)."""

    def __init__(self, arm: Arm, latched: object) -> None:
        self.latched = latched
        self.times: list[float] = []
        self.writes: list[float] = []
        self._write = arm.backend.write  # type: ignore[attr-defined]
        arm.backend.write = self.write  # type: ignore[method-assign]

    def write(self, cmd: Command) -> bool:
        now = time.perf_counter()
        self.writes.append(now)
        if self.latched():  # type: ignore[operator]
            self.times.append(now)
        return self._write(cmd)

    def first_after(self, t: float) -> float | None:
        return next((x for x in list(self.times) if x > t), None)


def estop_under_load(args: argparse.Namespace) -> int:
    """The e-stop latency run (``--estop-load``), once per ``--bridge`` mode."""
    modes = ("process", "thread") if args.bridge == "both" else (args.bridge,)
    codes = [estop_run(args, mode) for mode in modes]
    return max(codes)


def estop_run(args: argparse.Namespace, bridge: str) -> int:
    """One e-stop latency run with the bridge in a child process or in a thread of the arm's."""
    users = {"operator": "op-secret", "operator2": "op2-secret", "arm-bench": "arm-secret"}
    with tempfile.TemporaryDirectory() as tmp:
        plugin = doc_plugin(tmp)
        broker = LocalBroker(f"{tmp}/b", users=users, arms={"arm-bench": "bench"}, operators=["operator", "operator2"],
                             plugins=[plugin] if plugin else [])
        with broker:
            arm = Arm.from_config(REPO / "configs" / "x-series-6dof.cfg.yaml", backend="mock", clock=MonotonicClock(),
                                  initial_position=[0.0, 1.2, 1.8, 2.2, -1.57, 0.0])  # kit home, off the table
            settings = parse_broker(broker.url, username="arm-bench", password="arm-secret")
            realtime = RealtimeRequest(priority=args.rt_priority, lock_memory=args.rt_priority > 0)
            app = None
            if args.app is not None:  # hebictl teleop --app NAME: the presser sets mode app before each press
                from hebictl.inputs.teleop_app import TeleopApp

                app = TeleopApp(arm, args.app)
            server = TeleopServer(arm, settings, "bench", runner_options={"realtime": realtime, "app": app},
                                  bridge=bridge)
            probe = EstopProbe(arm, lambda: server.runner.estop_latched)
            server.start_background()
            home = server.runner.snapshot.position.copy()
            p0 = arm.model.end_effector(home)[:3, 3]
            targets = [list(p0 + d) for d in ([0.03, 0, 0], [0, 0.03, 0], [-0.03, 0, 0], [0, -0.03, 0])]
            seconds = args.presses * 2.5 + 5.0
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe(duplex=False)
            proc = None
            if args.estop_load in ("jog", "input"):
                proc = ctx.Process(target=jog_flooder, args=(broker.port, "bench", "operator2", users["operator2"],
                                                             seconds, child, args.estop_load))
            elif args.estop_load == "cartesian":
                proc = ctx.Process(target=goal_sender, args=(broker.port, "bench", "operator2", users["operator2"],
                                                             seconds, targets, child))
            load = StandardLoad() if args.standard_load else contextlib.nullcontext()
            load_start = os.getloadavg()[0]
            press_parent, press_child = ctx.Pipe(duplex=False)
            presser = ctx.Process(target=estop_presser, args=(broker.port, "bench", users["operator"], args.presses,
                                                              press_child, "position" if app is None else "app"))
            try:
                if proc is not None:
                    proc.start()
                    time.sleep(1.0)
                with load:
                    presser.start()
                    presses = press_parent.recv()
                    presser.join(30)
                if isinstance(presses, BaseException):
                    raise presses
                presses, unanswered = presses
                sent = parent.recv() if proc is not None else 0
                if proc is not None:
                    proc.join(30)
            finally:
                server.stop_background()
                arm.close()
            hits = [probe.first_after(t) for t in presses]
            latencies = [(h - t) * 1e3 for h, t in zip(hits, presses, strict=True) if h is not None and h - t < 10.0]
            lost = len(presses) - len(latencies)
            st = server.bridge.stats
            gaps = [e.detail.split(" (")[0] for e in arm.events.events if e.kind.value == "control_gap"]
            links_lost = [e.detail for e in arm.events.events if e.kind.value == "teleop_link_lost"]
    ms = np.array(latencies)
    med, p95, mx = (float(np.percentile(ms, q)) if ms.size else float("nan") for q in (50, 95, 100))
    ok = lost == 0 and p95 <= 200.0
    with_plugin = "yes" if plugin else "NO: gcc or mosquitto's headers missing"
    grant = server.runner.snapshot.realtime
    print(f"bridge: {bridge} ({'a child process' if bridge == 'process' else 'a thread of the arm process'})"
          + ("" if app is None else f"; --app {args.app}, each press in mode app"))
    print(f"  arm thread: {grant.line() if grant is not None else 'no grant recorded'}; "
          f"standard load (2 busy + 1 allocating process): {'yes' if args.standard_load else 'no'}; "
          f"load average {os.getloadavg()[0]:.1f} at the end, {load_start:.1f} at the start")
    print(f"teleop e-stop under load '{args.estop_load}' (broker plugin: {with_plugin}): {args.presses} presses, "
          f"{lost} not engaged within 10 s; {unanswered} mode commands or releases not answered within 10 s; load sent "
          f"{sent} messages")
    print(f"  press -> first command written with the e-stop latched: median {med:.1f} ms, p95 {p95:.1f} ms, "
          f"max {mx:.1f} ms; bridge decoded {st['received']}, dropped undecoded {st['flood_dropped']} (account "
          f"rate) + {st['queue_dropped_jog']} (queue, jog); accepted {st['accepted']}, rejected {st['rejected']}; "
          f"disconnects {st['disconnects']} -> {'PASS' if ok else 'FAIL'}")
    if bridge == "process":
        port = server.bridge.port  # type: ignore[union-attr]
        print(f"  link to the bridge process: {port.commands.sent} messages sent by the arm thread, {port.dropped} "
              f"dropped (socket full); lost: {'; '.join(links_lost) if links_lost else 'never'} (the bridge silent "
              "for 2 s under the flood would be a lost link and a hold)")
    else:
        print(f"  the bridge thread's heartbeat: lost: {'; '.join(links_lost) if links_lost else 'never'} (its event "
              "loop silent for 2 s under the flood would be a lost link and a hold)")
    if app is not None:
        accepted, dropped = app.source.counts()
        print(f"  the app ({args.app}) took in {accepted} cmd/input samples and counted {sum(dropped.values())} "
              f"dropped{f' {dropped}' if dropped else ''}; it ran {app.runs} times (one per press); the bridge "
              "refused the rest of the flood before the app (rate, mode); its accepted count also has the "
              "presser's modes, engages and releases")
    cycles = np.diff(np.array(probe.writes)) * 1e3
    if cycles.size:
        nominal = 1e3 / server.runner.rate_hz
        print(f"  the arm's cycles under the load (between writes to its modules, {nominal:.0f} ms nominal): median "
              f"{np.median(cycles):.1f} ms, p99 {np.percentile(cycles, 99):.1f} ms, max {cycles.max():.1f} ms; "
              f"{len(gaps)} control gap(s) beyond the 250 ms command lifetime{': ' + ', '.join(gaps) if gaps else ''} "
              "(the test suite only prints this: tests/teleop/test_teleop_security.py)")
    return 1 if args.strict and not ok else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate-hz", type=float, default=500.0, help="jog stream rate")
    ap.add_argument("--loop-hz", type=float, default=500.0, help="arm control loop rate")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--flood", type=float, default=None, metavar="RATE",
                    help="instead: flood the arm with stale goals at RATE msg/s and check every one is answered")
    ap.add_argument("--estop-load", choices=("none", "jog", "cartesian", "input"), default=None,
                    help="instead: e-stop latency under a jog flood, 20 Cartesian goals/s or (input, with --app) a "
                         "Mobile IO sample flood from another account")
    ap.add_argument("--app", choices=("ar", "teach", "gravcomp", "jog"), default=None,
                    help="--estop-load: the arm runs this Mobile IO app (hebictl teleop --app NAME) and every press "
                         "comes in mode app")
    ap.add_argument("--presses", type=int, default=20, help="e-stop presses of --estop-load")
    ap.add_argument("--rt-priority", type=int, default=0,
                    help="--estop-load: the arm thread's SCHED_FIFO priority as `hebictl teleop --rt-priority` "
                         "(0: normal scheduling)")
    ap.add_argument("--bridge", choices=("process", "thread", "both"), default="both",
                    help="--estop-load: the MQTT bridge in a child process (hebictl teleop's default), in a thread of "
                         "the arm's process (--bridge thread), or one run of each, process first")
    ap.add_argument("--standard-load", action="store_true",
                    help="--estop-load: beside loop_latency.py's standard load (2 busy + 1 allocating process)")
    args = ap.parse_args()
    if args.estop_load == "input" and args.app is None:
        ap.error("--estop-load input floods the app's cmd/input: give --app NAME")
    logging.getLogger("hebictl.safety").setLevel(logging.ERROR)  # jog release/hold events are expected
    if find_mosquitto() is None:
        print("mosquitto not found: apt-get install mosquitto", file=sys.stderr)
        return 2
    if args.flood is not None:
        return flood(args)
    if args.estop_load is not None:
        return estop_under_load(args)
    with tempfile.TemporaryDirectory() as tmp, LocalBroker(tmp) as broker:
        arm = Arm.from_config(REPO / "configs" / "x-series-6dof.cfg.yaml", backend="mock", clock=MonotonicClock())
        arm.backend.feedback_frequency = args.loop_hz
        probe = WriteProbe(arm.backend, int(args.loop_hz * (args.seconds + 5)) + 1000)
        server = TeleopServer(arm, parse_broker(broker.url), "bench", rate_hz=args.loop_hz)
        server.start_background()
        try:
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=operator, args=(broker.url, "bench", args.rate_hz, args.seconds, child))
            proc.start()
            sent = parent.recv()
            proc.join(30)
            if isinstance(sent, BaseException):
                raise sent
        finally:
            server.stop_background()
            arm.close()
        stats = server.bridge.stats
        loop_stats = server.runner.snapshot.loop

    # first write carrying each sample's velocity
    values, times = probe.values[: probe.n], probe.times[: probe.n]
    keys = np.round((values - BASE_V) / STEP_V)
    first: dict[int, float] = {}
    ok = np.isfinite(keys) & (np.abs((values - BASE_V) / STEP_V - keys) < 1e-3)
    for k, t in zip(keys[ok].astype(int).tolist(), times[ok].tolist(), strict=True):
        first.setdefault(k, t)
    n = sent.shape[0]
    lat = np.array([first[k] - sent[k] if k in first else np.nan for k in range(n)])
    got = np.isfinite(lat)
    ms = lat[got] * 1e3
    p50, p99, pmax = (float(np.percentile(ms, q)) for q in (50, 99, 100))
    sent_rate = (n - 1) / (sent[-1] - sent[0])
    per_s = int(args.rate_hz)
    first_s, last_s = lat[:per_s][got[:per_s]] * 1e3, lat[-per_s:][got[-per_s:]] * 1e3
    received = stats["received"] - 2  # minus the mode command and the final release
    backlog = received < n or float(np.percentile(last_s, 99)) > max(2.0 * float(np.percentile(first_s, 99)), 5.0)

    print(f"teleop benchmark: {n} jog samples at {args.rate_hz:g} Hz requested ({sent_rate:.1f} Hz sent) "
          f"for {args.seconds:g} s; arm loop {args.loop_hz:g} Hz (mock backend); broker mosquitto on loopback")
    print(f"  publish -> backend write latency: p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {pmax:.3f} ms "
          f"({got.sum()} samples timed; {n - got.sum()} superseded by a newer sample within one cycle)")
    print(f"  first second p99 {np.percentile(first_s, 99):.3f} ms, last second p99 {np.percentile(last_s, 99):.3f} ms")
    print(f"  bridge: received {received}/{n}, accepted {stats['accepted']}, rejected {stats['rejected']}")
    if loop_stats is not None:
        print(f"  arm loop (last window): period p50 {loop_stats.period_p50 * 1e3:.3f} ms, "
              f"p99 {loop_stats.period_p99 * 1e3:.3f} ms, overruns {loop_stats.overruns}")
    verdict = "PASS" if p99 < 5.0 and not backlog else "FAIL"
    print(f"  target p99 < 5 ms: {'met' if p99 < 5.0 else 'MISSED'}; backlog: {'YES' if backlog else 'none'} "
          f"-> {verdict}")
    return 1 if args.strict and verdict != "PASS" else 0


if __name__ == "__main__":
    sys.exit(main())
