"""Teleop link loss: how soon the arm stops after the broker dies mid-jog, against the jog's ttl.

Set-up: a private mosquitto on 127.0.0.1; ``hebictl teleop``'s server (arm thread + MQTT bridge, the
bundled 6-DoF kit on the mock backend, wall clock) in this process; an operator client in the same
process. Each trial: mode ``jog``, jog samples of the longest ttl (``MAX_TTL``, 0.5 s) until the arm
jogs, then mosquitto is killed (SIGKILL). Latency = from just before the kill to the arm thread's
``teleop_link_lost`` event (its time is on the arm's clock, ``time.perf_counter`` here: the cycle
that brakes). The broker is then restarted on the same port and the bridge reconnects before the next
trial. Prints median / p95 / max and their ratio to the ttl: the link loss, not the ttl, should be
what stops the arm (a ratio well under 1). The tests check the order of events only
(tests/teleop/test_teleop_resilience.py) and the next-cycle stop in simulated time
(tests/teleop/test_runner.py).

Run: ``.venv/bin/python benchmarks/teleop_link.py [--trials 20] [--loop-hz 250]``. Needs the
mosquitto binary.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time

import numpy as np
from _common import REPO

from hebictl.control.arm import Arm
from hebictl.hardware.clock import MonotonicClock
from hebictl.teleop.broker import LocalBroker, find_mosquitto
from hebictl.teleop.client import TeleopClient
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.jog import MAX_TTL
from hebictl.teleop.server import TeleopServer

HANG_S = 60.0  # a guard against a hang, not a measurement


async def _until(predicate, what: str) -> None:
    end = time.perf_counter() + HANG_S
    while not predicate():
        if time.perf_counter() > end:
            raise TimeoutError(what)
        await asyncio.sleep(0.001)


async def trial(broker: LocalBroker, server: TeleopServer) -> float:
    """One kill mid-jog; returns the latency [s] from the kill to the arm's link-lost event."""
    import aiomqtt

    def quiet(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """The operator's own connection dies with the broker: expected, not worth a traceback."""
        if not isinstance(context.get("exception"), aiomqtt.MqttError):
            loop.default_exception_handler(context)

    asyncio.get_running_loop().set_exception_handler(quiet)
    runner, arm = server.runner, server.arm
    before = sum(1 for e in arm.events.events if e.kind == "teleop_link_lost")
    async with TeleopClient(broker.url, "bench", name="op") as c:
        assert (await c.mode("jog", timeout=HANG_S)).accepted
        end = time.perf_counter() + HANG_S
        while not runner.snapshot.jogging:
            if time.perf_counter() > end:
                raise TimeoutError(f"the arm never jogged: {[(e.kind, e.detail) for e in arm.events.events[-3:]]}")
            await c.jog([0.2, 0, 0, 0, 0, 0], ttl=MAX_TTL)
            await asyncio.sleep(0.01)
        t_kill = time.perf_counter()
        broker.stop(kill=True)
    await _until(lambda: len([e for e in arm.events.events if e.kind == "teleop_link_lost"]) > before,
                 "no link-lost event")
    lost = [e for e in arm.events.events if e.kind == "teleop_link_lost"]
    return lost[-1].time - t_kill


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--loop-hz", type=float, default=250.0, help="arm control loop rate")
    args = ap.parse_args()
    logging.getLogger("hebictl.safety").setLevel(logging.ERROR)   # the stops are the point
    logging.getLogger("hebictl.teleop").setLevel(logging.ERROR)   # and so are the reconnects
    logging.getLogger("mqtt").setLevel(logging.CRITICAL)          # and the clients' lost sockets
    if find_mosquitto() is None:
        print("mosquitto not found: apt-get install mosquitto", file=sys.stderr)
        return 2
    latencies = []
    with tempfile.TemporaryDirectory() as tmp, LocalBroker(tmp) as broker:
        arm = Arm.from_config(REPO / "configs" / "x-series-6dof.cfg.yaml", backend="mock", clock=MonotonicClock())
        arm.backend.feedback_frequency = args.loop_hz
        server = TeleopServer(arm, parse_broker(broker.url), "bench", rate_hz=args.loop_hz,
                              bridge_options={"backoff_initial": 0.05, "backoff_max": 0.5})
        server.start_background()
        try:
            for _ in range(args.trials):
                latencies.append(asyncio.run(trial(broker, server)))
                broker.start()
                asyncio.run(_until(server.bridge.connected.is_set, "the bridge did not reconnect"))
        finally:
            server.stop_background()
            arm.close()
    ms = np.asarray(latencies) * 1e3
    p50, p95, pmax = (float(np.percentile(ms, q)) for q in (50, 95, 100))
    print(f"teleop link loss: {len(ms)} broker kills mid-jog; arm loop {args.loop_hz:g} Hz (mock backend), "
          f"jog ttl {MAX_TTL * 1e3:.0f} ms")
    print(f"  kill -> arm stopped (teleop_link_lost): median {p50:.1f} ms, p95 {p95:.1f} ms, max {pmax:.1f} ms")
    print(f"  ratio to the jog ttl: median {p50 / (MAX_TTL * 1e3):.3f}, max {pmax / (MAX_TTL * 1e3):.3f} "
          f"({'the link loss stopped the arm first every time' if pmax < MAX_TTL * 1e3 else 'the ttl came first'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
