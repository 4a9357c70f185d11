"""Damped least squares, the step of IK and of the Cartesian jog: hebictl's compiled Cholesky kernel
against numpy's LAPACK solve of the same system, measured in the same run, on an idle machine and
beside busy processes.

Why the second case: numpy's OpenBLAS runs a small ``solve`` through its thread pool. On a 2-core
machine beside other load a 6x6 solve took 92 µs instead of 7 (2026-11-27), and inside a jog cycle
655 µs: control-loop jitter that the idle figure hides. The kernel takes no thread. Prints the
median µs per call of each side, and hebictl / numpy (< 1: hebictl faster), for the 6-DoF kit's
end-effector Jacobian at a pose of its workspace (6 x 6, λ = 0.02 m as the jog uses).

    python benchmarks/dls.py [--busy N]   # N busy processes for the second case (default: one per core)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from typing import Any

import numpy as np
from _common import REPO, median_us, table

import hebictl
from hebictl.model.ik import damped_least_squares

KIT = REPO / "configs" / "x-series-6dof.cfg.yaml"


def _spin(stop: Any) -> None:  # a multiprocessing.Event
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _measure(J: np.ndarray, w: np.ndarray, lam2: float, number: int) -> tuple[float, float]:
    def numpy_solve() -> np.ndarray:
        return J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(6), w)

    def kernel() -> np.ndarray:
        return damped_least_squares(J, w, lam2)

    np.testing.assert_allclose(kernel(), numpy_solve(), rtol=1e-9, atol=1e-12)  # the same step
    return median_us(kernel, number=number), median_us(numpy_solve, number=number)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="busy processes for the loaded case")
    args = ap.parse_args()
    cfg = hebictl.load_config(KIT)
    model = hebictl.load_model(cfg.hrdf)
    q = np.array(cfg.user_data["home_position"], dtype=float)
    J = np.ascontiguousarray(model.jacobian_end_effector(q))
    w = np.array([0.05, 0.0, -0.02, 0.0, 0.1, 0.0])
    lam2 = 0.02 ** 2
    damped_least_squares(J, w, lam2)  # load the kernel
    rows = []
    ours, ref = _measure(J, w, lam2, 2000)
    rows.append(["idle", f"{ours:.2f}", f"{ref:.2f}", f"{ours / ref:.2g}"])
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        time.sleep(0.5)
        ours, ref = _measure(J, w, lam2, 100)  # numpy's side can take milliseconds per call here
    finally:
        stop.set()
        for p in spinners:
            p.join(5)
            if p.is_alive():
                p.kill()
    rows.append([f"beside {args.busy} busy processes", f"{ours:.2f}", f"{ref:.2f}", f"{ours / ref:.2g}"])
    table("damped least squares J^T (J J^T + λ² I)^-1 w, 6x6 (x-series-6dof at home): µs per call (median)",
          ["machine", "hebictl kernel", "numpy solve (OpenBLAS)", "ratio"], rows)


if __name__ == "__main__":
    main()
