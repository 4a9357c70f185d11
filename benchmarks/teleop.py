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
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import sys
import tempfile
import time
from multiprocessing.connection import Connection

import numpy as np
from _common import REPO

from hebictl.control.arm import Arm
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate-hz", type=float, default=500.0, help="jog stream rate")
    ap.add_argument("--loop-hz", type=float, default=500.0, help="arm control loop rate")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--flood", type=float, default=None, metavar="RATE",
                    help="instead: flood the arm with stale goals at RATE msg/s and check every one is answered")
    args = ap.parse_args()
    logging.getLogger("hebictl.safety").setLevel(logging.ERROR)  # jog release/hold events are expected
    if find_mosquitto() is None:
        print("mosquitto not found: apt-get install mosquitto", file=sys.stderr)
        return 2
    if args.flood is not None:
        return flood(args)
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
