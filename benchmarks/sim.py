"""Sim backend benchmark: real-time factor of the bundled 6-DoF kit at 1 kHz with the controller in the loop.

The arm runs from ``configs/x-series-6dof.cfg.yaml`` on the ``sim`` backend with a SimClock,
feedback and control at 1 kHz and 1 ms physics steps: every cycle is ``Arm.update()`` (read =
one physics step with the simulated module firmware, feedback, trajectory, gravity and dynamics
compensation plugins) and ``Arm.send()``, while the arm moves between home and a second pose
with minimum-jerk goals. Beside it: raw ``mj_step`` on the same MuJoCo model, the actuator
kernel alone, and the Arm's own cost on the mock backend, to show where the time goes.
Target (issue 4): at least 20x real time with the controller in the loop.
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np
from _common import REPO, median_us, table

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.goal import Goal
from hebictl.hardware.clock import SimClock
from sim_backend.actuator import actuator_step

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
AWAY = np.array([0.6, 0.9, 1.4, 1.8, -1.2, 0.5])
RATE = 1000.0  # [Hz]


def _arm(backend: str) -> tuple[Arm, SimClock]:
    clock = SimClock()
    options = {"initial_position": HOME, "timestep": 1.0 / RATE} if backend == "sim" else {"initial_position": HOME}
    arm = Arm.from_config(load_config(CONFIG), backend=backend, clock=clock, **options)
    arm.backend.feedback_frequency = RATE
    arm.feedback_timeout = 2.0 / RATE
    arm.update()
    arm.send()
    return arm, clock


def _run(arm: Arm, clock: SimClock, seconds: float) -> tuple[float, float, float]:
    """Cycle the arm for ``seconds`` of clock time between two poses.

    Returns (wall time [s], CPU time of this process [s], max tracking error [rad]); CPU time
    is what the run costs on a core of its own (on a shared machine wall time also counts waits).
    """
    targets = [AWAY, HOME]
    err = 0.0
    t_end = clock.now() + seconds
    cpu = time.process_time()
    wall = time.perf_counter()
    k = 0
    while clock.now() < t_end:
        if arm.trajectory is None or arm.at_goal:
            goal = Goal(arm.dof)
            goal.add_waypoint(t=2.0, position=targets[k % 2])
            arm.set_goal(goal)
            k += 1
        arm.update()
        arm.send()
        if arm.trajectory_state is not None:
            err = max(err, float(np.abs(arm.trajectory_state[0] - arm.last_feedback.position).max()))
    return time.perf_counter() - wall, time.process_time() - cpu, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per run (default 10)")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the fastest is reported (default 3)")
    args = ap.parse_args()

    arm, clock = _arm("sim")
    _run(arm, clock, 0.5)  # warm up kernels and caches
    walls, cpus, errs = [], [], []
    for _ in range(args.repeat):
        wall, cpu, err = _run(arm, clock, args.seconds)
        walls.append(wall)
        cpus.append(cpu)
        errs.append(err)
    wall, cpu = min(walls), min(cpus)
    events = [e.kind for e in arm.events.events]
    be = arm.backend
    m, d = be.mj_model, be.mj_data
    step_us = median_us(lambda: mujoco.mj_step(m, d), number=2000)
    args_k = be._step_args
    kernel_us = median_us(lambda: actuator_step(*args_k), number=2000)
    arm.close()

    mock, mclock = _arm("mock")
    mock_wall, mock_cpu, _ = _run(mock, mclock, 2.0)
    mock.close()
    per_cycle = 1e6 / (args.seconds * RATE)  # [µs per cycle] per second of run time
    wall_us, cpu_us = wall * per_cycle, cpu * per_cycle
    mock_us = min(mock_wall, mock_cpu) * 1e6 / (2.0 * RATE)

    def rtf(us: float) -> str:
        return f"{1e6 / RATE / us:.1f}x"

    rows = [
        ["controller in the loop: Arm.update+send on sim (wall)", f"{wall_us:.1f}", rtf(wall_us)],
        ["controller in the loop: Arm.update+send on sim (CPU)", f"{cpu_us:.1f}", rtf(cpu_us)],
        ["  for comparison: Arm.update+send on the mock backend", f"{mock_us:.1f}", rtf(mock_us)],
        ["  of which: actuator kernel (6 modules, 1 step)", f"{kernel_us:.1f}", ""],
        ["raw mj_step (same model, 1 ms step)", f"{step_us:.1f}", rtf(step_us)],
    ]
    table(f"sim backend, {CONFIG.name}: {args.seconds:g} s simulated x {args.repeat} (fastest)",
          ["", "µs per 1 ms cycle", "real-time factor"], rows)
    print(f"max tracking error over the moves: {max(errs) * 1e3:.2f} mrad; safety events: {events or 'none'}")
    target = 20.0
    best = 1e6 / RATE / min(wall_us, cpu_us)
    print(f"target >= {target:g}x real time with the controller in the loop: {'met' if best >= target else 'NOT met'} "
          f"({best:.1f}x on CPU time; wall time counts waiting for a core on a shared machine)")


if __name__ == "__main__":
    main()
