"""Safety matrix: every way an arm is stopped or fails, run on the physics sim (and the mock), measured.

One row per scenario with what was measured on the *physical* state (the simulated joints, not
the feedback the controller sees, which some scenarios corrupt on purpose): peak joint speed over
rated (commanded and measured), time to standstill after the stop (every |v| < 0.05 rad/s from
then on), end-effector movement between 0.5 s and 2 s after the stop, the arm's final state and
the event it recorded, and PASS/FAIL against the row's target (issue 11: speed <= 1.05x rated,
still within 0.5 s, EE < 5 mm). Run ``python benchmarks/safety.py`` (``--backend sim|mock|both``,
``--skip-processes`` to leave out the CLI signal rows, ``--skip-supervisor`` the supervisor rows); the
tests in ``tests/sim_backend/test_safety_matrix.py`` run the same scenarios. The supervisor rows
(issue 18: M-stop press and release per module strategy, a module gone and back, ``clear_fault()``
while braking, ``stop()`` then ``damp``, ``stop()`` with unknown payloads of 0, 0.5 and 1 kg, control
stalls of 0.1, 0.5 and 1 s) run on
the sim for every bundled config (``benchmarks/safety_supervisor.py``; tests in
``tests/control/test_supervisor_sim.py``).

In-process rows run the Arm on a SimClock (deterministic, faster than real time); teleop rows run
the real teleop server against a real mosquitto on a free port in real time; the signal rows
start ``hebictl run`` / ``hebictl teleop`` as processes and send them SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.safety_live import (  # noqa: E402
    run_signal_row,
    sc_signals,
    sc_teleop,
    teleop_row,
    teleop_signal_row,
)
from benchmarks.safety_monitors import MONITOR_ROWS  # noqa: E402  (issue 18: execution monitor rows)
from benchmarks.safety_rig import (  # noqa: E402
    Row,
    Trace,
    judge,
    metrics,
    sc_faults,
    sc_firmware_limit,
    sc_infeasible,
    sc_jog_into_limit,
    sc_mstop,
    sc_outside_limits,
    sc_stop_full_speed,
    sc_stop_half_way,
)
from benchmarks.safety_supervisor import rows as supervisor_rows  # noqa: E402

__all__ = ["IN_PROCESS", "Row", "Trace", "judge", "metrics", "print_rows", "run_matrix", "run_signal_row",
           "sc_faults", "teleop_row", "teleop_signal_row"]

# ---------------------------------------------------------------------- matrix
IN_PROCESS: list[Callable[[str], Row | list[Row]]] = [
    sc_infeasible, sc_outside_limits, sc_jog_into_limit, sc_stop_half_way, sc_stop_full_speed, sc_mstop,
    sc_firmware_limit, sc_faults]


def run_matrix(backends: list[str], *, teleop: bool = True, processes: bool = True,
               supervisor: bool = True) -> list[Row]:
    rows: list[Row] = []
    for backend in backends:
        for sc in IN_PROCESS:
            try:
                out = sc(backend)
            except Exception as exc:  # one broken scenario must not hide the others
                out = Row(sc.__name__[3:], backend, note=f"{type(exc).__name__}: {exc}"[:100], target="runs")
            rows.extend(out if isinstance(out, list) else [out])
        for monitor_rows in MONITOR_ROWS:  # issue 18: the execution monitors' rows (sim only)
            rows.extend(monitor_rows(backend))
        if teleop:
            rows.extend(sc_teleop(backend))
    if supervisor and "sim" in backends:  # every bundled config, on the physics sim only
        rows.extend(supervisor_rows())
    if processes:  # real processes in real time: on the physics sim only (the mock adds nothing here)
        rows.extend(sc_signals([b for b in backends if b == "sim"] or backends[:1]))
    return rows


def _fmt(x: float, spec: str) -> str:
    return "-" if not math.isfinite(x) else format(x, spec)


def print_rows(rows: list[Row], file: Any = None) -> None:
    header = ("scenario", "backend", "peak v/rated", "to standstill [s]", "EE 0.5-2 s [mm]", "final state",
              "event", "target", "result")
    table = [header] + [(r.scenario + (f" ({r.note})" if r.note else ""), r.backend, _fmt(r.peak, ".3f"),
                         _fmt(r.still, ".3f"), _fmt(r.ee_mm, ".2f"), r.state, r.event, r.target,
                         "PASS" if r.ok else "FAIL") for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for k, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=file)
        if k == 0:
            print("  ".join("-" * w for w in widths), file=file)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("sim", "mock", "both"), default="both")
    ap.add_argument("--skip-processes", action="store_true", help="leave out the CLI signal rows")
    ap.add_argument("--skip-teleop", action="store_true", help="leave out the broker rows")
    ap.add_argument("--skip-supervisor", action="store_true", help="leave out the supervisor rows (issue 18)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    backends = ["sim", "mock"] if args.backend == "both" else [args.backend]
    # the broker-loss row kills the broker under a client: asyncio then logs the client's unretrieved
    # disconnect future at exit, after the table (the row itself records what happened)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        rows = run_matrix(backends, teleop=not args.skip_teleop, processes=not args.skip_processes,
                          supervisor=not args.skip_supervisor)
    print_rows(rows)
    failed = sum(not r.ok for r in rows)
    print(f"\n{len(rows)} rows, {len(rows) - failed} PASS, {failed} FAIL, in {time.perf_counter() - start:.1f} s")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
