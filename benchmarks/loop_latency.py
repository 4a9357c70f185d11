"""Control-loop latency in the manner of ``cyclictest``: wake-up latency and cycle work, idle and loaded,
with and without real-time scheduling (issue 29, item 8).

For each backend (the mock, the MuJoCo sim, hebi-py's imitation group) at 200 Hz and 1 kHz, the
arm's loop (``update()`` + ``send()``, holding at the config's home position: monitors, gravity
compensation and the command law all run) runs for ``--seconds`` on the wall clock:

* idle, and beside a standard load this script starts and ends by PID: two busy processes and one
  that allocates and frees 64 MiB over and over;
* at normal priority, and at SCHED_FIFO with memory locked and the garbage collector out of the
  cycle (:mod:`hebictl.control.realtime`; the row says what was granted).

Wake-up latency is when a sleep to a deadline returned minus the deadline (the loop's own sleep, or
the backend's wait for its next feedback sample when the read paces the loop, as ``hebictl run``
runs), measured on every sleep that slept. Work is a cycle's time minus its wait for feedback.
Both as p50, p99, p99.9 and max, with deadline misses and the cycles whose gap since the previous
command exceeded the modules' command lifetime. Right after each row, under the same load and
scheduling, a bare Python loop that only sleeps to its deadlines runs as long: the ratio of the
controller's wake-up p99.9 to the bare loop's shows the controller's own cost.

Then, per bundled config, the sim arm moves between random admitted goals beside the same load
for ``--config-seconds`` (``--minutes 10`` for the issue's full figure), with and without real-time
scheduling, and every safety stop is counted: the scene has no contact to make, so every one is
spurious (each is cleared and the run goes on).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass

import numpy as np
from _common import REPO, StandardLoad

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.loop import FixedRateLoop, WaitMeter
from hebictl.control.realtime import RealtimeRequest
from hebictl.errors import CommandRejected
from hebictl.hardware.clock import MonotonicClock

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
CONFIGS = sorted((REPO / "configs").glob("*.cfg.yaml"))
class LatencyClock(MonotonicClock):
    """The monotonic clock, recording how late every sleep that slept woke up [s]."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.late = np.empty(capacity)
        self.n = 0

    def sleep_until(self, t: float) -> None:
        if t <= time.perf_counter():
            return
        super().sleep_until(t)
        if self.n < self.late.shape[0]:
            self.late[self.n] = time.perf_counter() - t
            self.n += 1

    def reset(self) -> None:
        self.n = 0


@dataclass
class Row:
    name: str
    granted: str
    wake: np.ndarray   # s
    work: np.ndarray   # s
    misses: int
    gaps: int
    stops: int
    bare: np.ndarray | None = None


def _granted(grant) -> str:
    if grant is None or not grant.priority:
        return "normal"
    return f"FIFO {grant.priority}" + (" +mlock" if grant.memory_locked else "")


def _print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    """A plain fixed-width table (rich wraps wide tables to 80 columns when piped)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(title)
    for r in (header, *rows):
        cells = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        print("  " + "  ".join(cells))


def _q(a: np.ndarray, p: float) -> float:
    return float(np.percentile(a, p)) * 1e6 if a.size else math.nan


def _run_cell(arm: Arm, clock: LatencyClock, rate: float, seconds: float, rt: bool) -> Row:
    """The arm's loop for ``seconds``: per-cycle work, wake-ups, misses, command gaps, stops."""
    meter = WaitMeter(clock)
    read = arm.backend.read
    arm.backend.read = meter.wrap(read)  # type: ignore[method-assign]
    n = int(rate * seconds) + 64
    work = np.empty(n)
    ends = np.empty(n)
    count = [0]
    lifetime = float(getattr(arm.backend, "command_lifetime", 0.0) or 0.0) or math.inf

    def step() -> bool:
        t = clock.now()
        arm.update()
        arm.send()
        done = clock.now()
        i = count[0]
        if i < n:
            work[i] = done - t - meter.take()
            ends[i] = done
            count[0] = i + 1
        return True

    waits = getattr(arm.backend, "read_waits_for_feedback", True)
    paced = waits and rate >= arm.backend.feedback_frequency * (1 - 1e-9)
    for _ in range(2):  # fresh feedback and commands before the clock starts; the gap since the last row cleared
        for _ in range(5):
            arm.update()
            arm.send()
        if arm.state.value != "running":
            arm.clear_fault()
    loop = FixedRateLoop(step, rate, clock, paced_by_step=paced,
                         realtime=RealtimeRequest() if rt else RealtimeRequest(priority=0))
    clock.reset()
    events0 = arm.events.dropped + len(arm.events.events)
    loop.run(duration=seconds)
    arm.backend.read = read  # type: ignore[method-assign]
    m = count[0]
    gaps = int(np.sum(np.diff(ends[:m]) > lifetime))
    new = arm.events.dropped + len(arm.events.events) - events0
    kinds = [e.kind for e in list(arm.events.events)[len(arm.events.events) - new:] if e.state.value == "stopped"]
    if kinds:
        print(f"    safety stops in the row: {', '.join(map(str, kinds))}")
    stops = len(kinds)
    return Row("", _granted(loop.grant), clock.late[: clock.n].copy(), work[:m].copy(), loop.total.late, gaps, stops)


def _bare(rate: float, seconds: float, rt: bool) -> np.ndarray:
    """A Python loop that only sleeps to its deadlines, same rate and scheduling: its wake-ups [s]."""
    clock = LatencyClock(int(rate * seconds) + 64)
    loop = FixedRateLoop(lambda: True, rate, clock, realtime=RealtimeRequest() if rt else RealtimeRequest(priority=0))
    loop.run(duration=seconds)
    return clock.late[: clock.n].copy()


def _open(backend: str, rate: float, clock: LatencyClock) -> Arm:
    arm = Arm.from_config(load_config(CONFIG), backend=backend, clock=clock)
    if getattr(arm.backend, "read_waits_for_feedback", True):
        arm.backend.feedback_frequency = rate
    home = np.asarray(load_config(CONFIG).user_data["home_position"], dtype=float)
    for _ in range(5):
        arm.update()
    goal = Goal(arm.dof)
    goal.add_waypoint(t=None, position=home)
    arm.set_goal(goal)
    end = time.perf_counter() + 20.0
    while not arm.at_goal and time.perf_counter() < end:
        arm.update()
        arm.send()
    return arm


def _threaded(fn, *args):
    """Run ``fn`` on a new thread (the real-time grant is the loop thread's, released after)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn(*args)))
    t.start()
    t.join()
    return out[0]


def latency(seconds: float, backends: list[str], rates: list[float]) -> list[Row]:
    rows: list[Row] = []
    arms: dict[tuple[str, float], tuple[Arm, LatencyClock]] = {}
    try:
        for backend in backends:
            for rate in rates:
                clock = LatencyClock(int(rate * seconds) * 4 + 64)
                arms[backend, rate] = (_open(backend, rate, clock), clock)
        for load in (False, True):
            with StandardLoad() if load else contextlib.nullcontext():
                for (backend, rate), (arm, clock) in arms.items():
                    for rt in (False, True):
                        row = _threaded(_run_cell, arm, clock, rate, seconds, rt)
                        row.name = f"{backend} {rate:.0f} Hz {'load' if load else 'idle'} {'RT' if rt else 'normal'}"
                        row.bare = _threaded(_bare, rate, seconds, rt)
                        rows.append(row)
                        print(f"  {row.name}: wake p99.9 {_q(row.wake, 99.9):.0f} µs, work p99.9 "
                              f"{_q(row.work, 99.9):.0f} µs, stops {row.stops}; {row.granted}", flush=True)
    finally:
        for arm, _ in arms.values():
            arm.close()
    return rows


def _random_goal(arm: Arm, rng: np.random.Generator, home: np.ndarray) -> str | None:
    """A random goal within 0.6 rad of home per joint; None once admitted, else why it was refused."""
    lim = arm.limits
    lo = np.maximum(lim.position_min, home - 0.6)
    hi = np.minimum(lim.position_max, home + 0.6)
    goal = Goal(arm.dof)
    goal.add_waypoint(t=None, position=rng.uniform(lo, hi))
    try:
        arm.set_goal(goal)
    except CommandRejected as exc:
        return exc.reason
    return None


def spurious_stops(config, seconds: float, rt: bool, seed: int = 1) -> tuple[int, int, int, str]:
    """(safety stops, goals accepted, cycles, granted) of the sim arm moving between random goals."""
    cfg = load_config(config)
    clock = MonotonicClock()
    home = np.asarray(cfg.user_data["home_position"], dtype=float)
    # the arm starts at home, as in the other sim benchmarks, and the loop's first cycle is its first read
    # and command: started at the sim's zeros and read 5 times before the loop started, the outstretched
    # double-shoulder x7 sagged its J2_shoulder past its limit (0.26-0.52 rad against 0.24 in three runs
    # on a loaded machine) before anything commanded it
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home)
    rng = np.random.default_rng(seed)
    stops, goals, kinds = [0], [0], []
    refusals: dict[str, int] = {}

    def step() -> bool:
        arm.update()
        if arm.state.value == "stopped":
            stops[0] += 1
            kinds.append(arm.events.last.kind if arm.events.last else "?")
            arm.clear_fault()
        elif arm.trajectory is None or arm.at_goal or arm.state.value == "hold":
            before = arm.trajectory
            refused = _random_goal(arm, rng, home)
            goals[0] += arm.trajectory is not before
            if refused is not None:
                refusals[refused] = refusals.get(refused, 0) + 1
        arm.send()
        return True

    try:
        # no cycles before the loop's: its thread's real-time set-up (memory lock, heap freeze) took longer
        # than the command lifetime after them, a control_gap stop at the start of every run
        rate = cfg.feedback_frequency
        loop = FixedRateLoop(step, rate, clock, paced_by_step=True,
                             realtime=RealtimeRequest() if rt else RealtimeRequest(priority=0))
        _threaded(loop.run, seconds)
        granted = _granted(loop.grant)
    finally:
        arm.close()
    if kinds:
        names, counts = np.unique([str(k) for k in kinds], return_counts=True)
        print(f"    {config.stem} {'RT' if rt else 'normal'}: stops " + ", ".join(
            f"{n} x{c}" for n, c in zip(names, counts, strict=True)))
    if refusals:  # random goals the admission refused (a run that follows no goal says why)
        print(f"    {config.stem} {'RT' if rt else 'normal'}: goals refused " + ", ".join(
            f"{k} x{n}" for k, n in sorted(refusals.items())))
    return stops[0], goals[0], loop.cycles, granted


def main() -> None:
    import logging

    logging.getLogger("hebictl").setLevel(logging.CRITICAL)  # stops are counted and named in the rows, not logged
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per latency row (default 5)")
    ap.add_argument("--config-seconds", type=float, default=20.0,
                    help="spurious-stop run per config and scheduling (default 20)")
    ap.add_argument("--minutes", type=float, default=None,
                    help="spurious-stop run per config in minutes (the full figure: 10)")
    ap.add_argument("--backends", nargs="+", default=["mock", "sim", "hebi-imitation"])
    ap.add_argument("--rates", type=float, nargs="+", default=[200.0, 1000.0])
    ap.add_argument("--no-stops", action="store_true", help="skip the spurious-stop runs")
    ap.add_argument("--no-latency", action="store_true", help="skip the latency rows (only the spurious-stop runs)")
    ap.add_argument("--scheduling", choices=("both", "rt", "normal"), default="both",
                    help="the spurious-stop runs' scheduling (default both)")
    ap.add_argument("--configs", nargs="+", default=None, metavar="STEM",
                    help="the spurious-stop runs' bundled configs by name (default all four), e.g. "
                         "x-series-7dof-double-shoulder")
    args = ap.parse_args()
    configs = [c for c in CONFIGS if args.configs is None or c.name.removesuffix(".cfg.yaml") in args.configs]
    if args.configs is not None and len(configs) != len(set(args.configs)):
        ap.error(f"--configs: one of {args.configs} is not a bundled config "
                 f"({', '.join(c.name.removesuffix('.cfg.yaml') for c in CONFIGS)})")
    print(f"loop latency: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the load starts")
    rows = [] if args.no_latency else latency(args.seconds, args.backends, args.rates)
    if rows:
        _print_table("control loop wake-up latency and work [µs] "
                     "(bare: a Python loop that only sleeps, same conditions)",
              ["row", "wake p50", "p99", "p99.9", "max", "bare p99.9", "ratio", "work p50", "p99", "p99.9", "max",
               "misses", "> lifetime", "stops", "granted"],
              [[r.name, f"{_q(r.wake, 50):.0f}", f"{_q(r.wake, 99):.0f}", f"{_q(r.wake, 99.9):.0f}",
                f"{_q(r.wake, 100):.0f}", f"{_q(r.bare, 99.9):.0f}",
                f"{_q(r.wake, 99.9) / max(_q(r.bare, 99.9), 1e-9):.2f}",
                f"{_q(r.work, 50):.0f}", f"{_q(r.work, 99):.0f}", f"{_q(r.work, 99.9):.0f}", f"{_q(r.work, 100):.0f}",
                str(r.misses), str(r.gaps), str(r.stops), r.granted] for r in rows])
    if args.no_stops:
        return
    seconds = args.minutes * 60.0 if args.minutes is not None else args.config_seconds
    out = []
    with StandardLoad():
        for config in configs:
            for rt in {"both": (False, True), "rt": (True,), "normal": (False,)}[args.scheduling]:
                stops, goals, cycles, granted = spurious_stops(config, seconds, rt)
                out.append([config.stem, "RT" if rt else "normal", f"{seconds:g}", str(goals), str(cycles),
                            str(stops), f"{stops / seconds * 60:.1f}", granted])
                print(f"  {config.stem} {'RT' if rt else 'normal'}: {stops} stops in {seconds:g} s", flush=True)
    _print_table("spurious safety stops on the sim beside the standard load (no contact in the scene)",
          ["config", "scheduling", "s", "goals", "cycles", "stops", "per minute", "granted"], out)


if __name__ == "__main__":
    main()
