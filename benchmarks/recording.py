"""Recording benchmark: what MCAP recording costs the control thread at 1 kHz, and that it keeps up.

1. Cost: the 6-DoF kit on the mock backend at 1 kHz (gravity and dynamics compensation, a goal in
   progress), in interleaved blocks of 200 ticks with the recorder on and off (load from other
   processes falls on both). Per tick: update()+send() alone, and the recorder's own calls on the
   control thread (cycle_start() + sample()), while its writer thread encodes, computes the frames
   and writes in the background. Target (issue 21): recorder calls <= 20 µs per tick.
2. Endurance: a fully recorded 1 kHz run of ``--seconds`` (default 10; the issue's claim is
   ``--seconds 600``): every cycle must be in the file (joint states == loop cycles) and drops are
   counted; the loop's period p99 is reported. Also what crash safety costs the writer thread: each
   commit (every 0.5 s: the chunk, its indexes and the moved tail, three ``pwrite`` calls) timed, and
   the padding records that keep each tail inside a 512-byte block counted in the file.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import struct
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import REPO, table

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.loop import FixedRateLoop
from hebictl.hardware.clock import MonotonicClock, SimClock
from hebictl.recording.mcapfile import PADDING_OPCODE, McapFile
from hebictl.recording.reader import read_run
from hebictl.recording.writer import McapRecorder

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
TARGET = np.array([0.4, 1.0, 1.5, 0.5, 0.2, 0.1])


def _arm(clock: MonotonicClock, goal_seconds: float) -> Arm:
    cfg = load_config(CONFIG)
    arm = Arm.from_config(cfg, backend="mock", clock=clock, feedback_frequency=1000.0)
    arm.backend.feedback_frequency = 1000.0
    arm.update()
    arm.set_goal(Goal(arm.dof).add_waypoint(t=goal_seconds, position=TARGET))
    return arm


def cost(seconds: float, out: Path) -> None:
    clock = MonotonicClock(spin_s=0.0002)
    arm = _arm(clock, max(seconds, 5.0))
    rec = McapRecorder(out, arm, config_path=CONFIG)
    block = 200
    state = {"n": 0}
    periods: dict[str, list[float]] = {"off": [], "on": []}
    calls: list[float] = []
    last = [math.nan]

    def step() -> None:
        on = (state["n"] // block) % 2 == 1
        state["n"] += 1
        t0 = time.perf_counter()
        if state["n"] % block != 1:  # the first period of a block belongs to the previous one
            periods["on" if on else "off"].append(t0 - last[0])
        last[0] = t0
        if on:
            rec.cycle_start()
        t1 = time.perf_counter()
        arm.update()
        arm.send()
        t2 = time.perf_counter()
        if on:
            rec.sample()
            t3 = time.perf_counter()
            calls.append((t1 - t0) + (t3 - t2))

    loop = FixedRateLoop(step, 1000.0, clock, paced_by_step=True)
    windows = []
    loop.report = windows.append
    loop.run(duration=seconds)
    arm.close()
    summary = rec.close()
    c = np.array(calls) * 1e6
    off, on = np.array(periods["off"]) * 1e3, np.array(periods["on"]) * 1e3
    table(f"recorder cost on the control thread, 1 kHz mock loop for {seconds:g} s, blocks of {block} ticks on/off",
          ["what", "median", "p99", "max"],
          [["recorder calls (cycle_start + sample) [µs]", f"{np.median(c):.2f}", f"{np.percentile(c, 99):.2f}",
            f"{c.max():.1f}"],
           ["loop period, recorder off [ms]", f"{np.median(off):.4f}", f"{np.percentile(off, 99):.4f}",
            f"{off.max():.3f}"],
           ["loop period, recorder on (writer busy) [ms]", f"{np.median(on):.4f}", f"{np.percentile(on, 99):.4f}",
            f"{on.max():.3f}"],
           ["ratio on / off", f"{np.median(on) / np.median(off):.3f}x",
            f"{np.percentile(on, 99) / np.percentile(off, 99):.2f}x", ""]])
    print(f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"target: recorder calls <= 20 µs per tick (median {np.median(c):.2f}, p99 {np.percentile(c, 99):.2f}); "
          f"{summary.written} samples written, {summary.dropped} dropped; loop period p99 worst window "
          f"{max(w.period_p99 for w in windows) * 1e3:.3f} ms")


def relative(out: Path, blocks: int = 40, block: int = 200) -> None:
    """Load-independent figure: one arm tick (update+send on a SimClock mock: no waiting) with and
    without the recorder's calls, interleaved blocks in one process; the writer runs meanwhile."""
    clock = SimClock()
    cfg = load_config(CONFIG)
    arm = Arm.from_config(cfg, backend="mock", clock=clock)
    arm.update()
    arm.set_goal(Goal(arm.dof).add_waypoint(t=600.0, position=TARGET))
    rec = McapRecorder(out, arm, config_path=CONFIG, capacity=1 << 20)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for b in range(blocks):
        on = b % 2 == 1
        for _ in range(block):
            clock.sleep_until(clock.now() + 0.001)
            t0 = time.perf_counter()
            if on:
                rec.cycle_start()
            arm.update()
            arm.send()
            if on:
                rec.sample()
            times["on" if on else "off"].append(time.perf_counter() - t0)
        time.sleep(0.05)  # the writer catches up between blocks, as it would between 1 kHz ticks
    arm.close()
    rec.close()
    off, on = np.median(times["off"]) * 1e6, np.median(times["on"]) * 1e6
    print(f"arm tick without / with the recorder (SimClock mock, interleaved blocks): median {off:.1f} / {on:.1f} µs; "
          f"the recorder adds {on - off:.1f} µs = {(on - off) / off:.0%} of a tick")


def _padding_bytes(path: Path) -> int:
    """Bytes of padding records in the data section (a walk of its records)."""
    blob, pos, pad = path.read_bytes(), 8, 0
    while pos < len(blob):
        op, n = blob[pos], struct.unpack_from("<Q", blob, pos + 1)[0]
        pad += 9 + n if op == PADDING_OPCODE else 0
        if op == 0x0F:  # Data End
            break
        pos += 9 + n
    return pad


def endurance(seconds: float, out: Path) -> None:
    commits: list[float] = []
    commit = McapFile.commit

    def timed(self: McapFile) -> None:
        t0 = time.perf_counter()
        commit(self)
        commits.append(time.perf_counter() - t0)

    McapFile.commit = timed  # type: ignore[method-assign]
    try:
        _endurance(seconds, out)
    finally:
        McapFile.commit = commit  # type: ignore[method-assign]
    pad = _padding_bytes(out)
    print(f"crash safety: {len(commits)} commits, each {np.median(commits) * 1e3:.3f} ms median, "
          f"{max(commits) * 1e3:.3f} ms max (writer thread); padding {pad} bytes = "
          f"{pad / out.stat().st_size:.4%} of the file")


def _endurance(seconds: float, out: Path) -> None:
    clock = MonotonicClock(spin_s=0.0002)
    arm = _arm(clock, max(seconds / 2, 5.0))
    rec = McapRecorder(out, arm, config_path=CONFIG)

    def step() -> None:
        rec.cycle_start()
        arm.update()
        arm.send()
        rec.sample()

    windows = []
    loop = FixedRateLoop(step, 1000.0, clock, paced_by_step=True, report=lambda s: (windows.append(s),
                                                                                     rec.loop_stats(s)))
    t0 = time.perf_counter()
    loop.run(duration=seconds)
    wall = time.perf_counter() - t0
    arm.close()
    summary = rec.close()
    run = read_run(out)
    n = run.counts["/joint_states"]
    table(f"fully recorded 1 kHz mock run, {seconds:g} s", ["metric", "value"],
          [["loop cycles", str(loop.cycles)], ["joint states in the file", str(n)],
           ["dropped (counted)", str(summary.dropped)], ["missed cycles", str(loop.total.missed)],
           ["period p50 [ms]", f"{statistics.median(w.period_p50 for w in windows) * 1e3:.4f}"],
           ["period p99, worst 1 s window [ms]", f"{max(w.period_p99 for w in windows) * 1e3:.4f}"],
           ["file size [MB]", f"{out.stat().st_size / 1e6:.1f}"],
           ["MB per minute", f"{out.stat().st_size / 1e6 / wall * 60:.1f}"],
           ["/tf messages", str(run.counts["/tf"])]])
    verdict = "every cycle recorded" if n == loop.cycles and summary.dropped == 0 else \
        f"{loop.cycles - n} cycles missing, {summary.dropped} dropped (counted and logged)"
    print(f"endurance: {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cost-seconds", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the fully recorded run (600: 10 min)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cost(args.cost_seconds, Path(tmp) / "cost.mcap")
        relative(Path(tmp) / "relative.mcap")
        endurance(args.seconds, Path(tmp) / "endurance.mcap")


if __name__ == "__main__":
    main()
