"""Arm tick benchmark: one update()+send() of hebictl's Arm vs hebi.arm.Arm, same kit, config and goal.

Both run on hebi-py's imitation group (hebictl through its ``hebi-imitation`` backend), in
interleaved blocks of 100 ticks (so load from other processes falls on both), with
gravity and dynamics compensation plugins and a goal in progress, so each tick samples the
trajectory, runs FK/Jacobians/gravity/dynamics and goes through hebi-py's Group. Then the
fixed-rate loop runs the hebictl arm at 1 kHz on the mock backend for 10 s (wall clock) and
reports period p99 and overruns.
Targets (issue 3): hebictl tick <= 0.5x hebi.arm's; 1 kHz loop p99 within 0.5 ms of the period, no missed cycle.
Issue 18: with the execution monitors <= 0.45x; the same arm without them (a null suite) is a row, so the
monitors' cost is measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import REPO, import_hebi, kit_path, table

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.control.loop import FixedRateLoop, WaitMeter
from hebictl.hardware.clock import MonotonicClock

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"


class _NoMonitors:
    """Stands in for an Arm's MonitorSuite: the same arm without execution monitoring, so the
    monitors' cost is measured in the same run (issue 18: the target is the total)."""

    payload_estimate = None  # no model-mismatch estimate: no payload feed-forward either

    def after_read(self, arm, fb, now):
        return ()

    def after_send(self, arm, ok, cmd):
        return ()

    def before_send(self, cmd):
        pass


def _ticks(update, send, n: int) -> np.ndarray:
    out = np.empty(n)
    for i in range(n):
        t = time.perf_counter()
        update()
        send()
        out[i] = time.perf_counter() - t
    return out * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--loop-seconds", type=float, default=10.0)
    ap.add_argument("--ticks", type=int, default=5000)
    args = ap.parse_args()
    hebi = import_hebi()
    cfg = load_config(CONFIG)
    kit = kit_path() if cfg.hrdf is None else cfg.hrdf
    target = np.array([0.4, 1.0, 1.5, 0.5, 0.2, 0.1])
    start = np.array(cfg.user_data["home_position"])

    clock = MonotonicClock(spin_s=0.0002)  # poll the last 0.2 ms: OS sleeps wake ~0.1 ms late
    ours = Arm.from_config(cfg, backend="hebi-imitation", clock=clock)
    bare = Arm.from_config(cfg, backend="hebi-imitation", clock=clock)
    bare.monitors = _NoMonitors()
    # the interleaved blocks leave each arm alone for a few hundred ms on a loaded machine: that is a
    # control gap by design (a latched stop); the check itself is one comparison, the rest is measured
    ours.monitors.gap.limit = float("inf")
    h_model = hebi.robot_model.import_from_hrdf(str(kit))
    h_group = hebi.util.create_imitation_group(6)
    t0 = time.perf_counter()
    ref = hebi.arm.Arm(lambda: time.perf_counter() - t0, h_group, h_model,
                       plugins=[hebi.arm.GravCompEffortPlugin(name="gravComp", enabled=True, ramp_time=0.0),
                                hebi.arm.DynamicCompEffortPlugin(name="dynamicsComp", enabled=True, ramp_time=0.0)])
    for grp in (h_group, ours.backend.hebi_group, bare.backend.hebi_group):
        c = hebi.GroupCommand(6)
        c.position, c.velocity, c.effort = start, np.zeros(6), np.zeros(6)
        grp.send_command(c)
    for arm, goal in ((ours, Goal(6)), (bare, Goal(6)), (ref, hebi.arm.Goal(6))):
        arm.update()
        goal.add_waypoint(t=60.0, position=target)
        arm.set_goal(goal)
    arms = {"hebictl.Arm": ours, "hebictl.Arm without monitors": bare, "hebi.arm.Arm": ref}
    for arm in arms.values():
        _ticks(arm.update, arm.send, 500)
    if ours.state.value == "stopped":  # a set-up pause longer than the command lifetime is a control gap
        ours.clear_fault()
        ours.set_goal(Goal(6).add_waypoint(t=60.0, position=target))
    # interleaved blocks: a noisy neighbour on a shared machine slows both arms alike
    block = 100
    chunks: dict[str, list[np.ndarray]] = {name: [] for name in arms}
    for _ in range(max(args.ticks // block, 1)):
        for name, arm in arms.items():
            chunks[name].append(_ticks(arm.update, arm.send, block))
    results = {name: np.concatenate(c) for name, c in chunks.items()}
    a, b = results["hebictl.Arm"], results["hebi.arm.Arm"]
    rows = [[n, f"{statistics.median(x):.1f}", f"{np.percentile(x, 99):.1f}"] for n, x in results.items()]
    c = results["hebictl.Arm without monitors"]
    rows.append(["ratio hebictl / hebi.arm", f"{statistics.median(a) / statistics.median(b):.2f}x",
                 f"{np.percentile(a, 99) / np.percentile(b, 99):.2f}x"])
    rows.append(["ratio hebictl without monitors / hebi.arm", f"{statistics.median(c) / statistics.median(b):.2f}x",
                 f"{np.percentile(c, 99) / np.percentile(b, 99):.2f}x"])
    table("update()+send() on an imitation group, 6-DoF kit, goal in progress: µs",
          ["arm", "median", "p99"], rows)
    assert ours.state.value == "running", ours.events.last  # measured while following the goal
    ours.close()
    bare.close()

    mock = Arm.from_config(cfg, backend="mock", clock=clock, feedback_frequency=1000.0)
    mock.backend.feedback_frequency = 1000.0
    mock.update()
    mock.set_goal(Goal(6).add_waypoint(t=args.loop_seconds, position=target))

    def step() -> None:
        mock.update()
        mock.send()

    # paced like hebi.arm: the mock's blocking read releases each cycle on its 1 kHz sample grid; the
    # read's time is waiting for feedback, not the controller's work (overruns: work over a period)
    meter = WaitMeter(clock)
    mock.backend.read = meter.wrap(mock.backend.read)
    loop = FixedRateLoop(step, 1000.0, clock, paced_by_step=True, wait=meter)
    periods = []
    loop.report = lambda s: periods.append(s)
    loop.run(duration=args.loop_seconds)
    p99 = max(s.period_p99 for s in periods) * 1e3
    table(f"1 kHz loop on the mock backend for {args.loop_seconds:.0f} s (worst 1 s window)",
          ["metric", "value"],
          [["period p50 [ms]", f"{statistics.median(s.period_p50 for s in periods) * 1e3:.4f}"],
           ["period p99 [ms]", f"{p99:.4f}"],
           ["period max [ms]", f"{max(s.period_max for s in periods) * 1e3:.4f}"],
           ["work p99 [ms]", f"{max(s.work_p99 for s in periods) * 1e3:.4f}"],
           ["waiting for feedback p50 [ms]", f"{statistics.median(s.wait_p50 for s in periods) * 1e3:.4f}"],
           ["deadline misses", str(loop.total.late)],
           ["overruns", str(loop.total.overruns)], ["missed cycles", str(loop.total.missed)],
           ["cycles", str(loop.cycles)]])
    mock.close()


if __name__ == "__main__":
    main()
