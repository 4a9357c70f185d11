"""Safety matrix rows of the execution monitors (issue 18, item 4), on the sim, every bundled config.

Rows: an obstacle in the path and a table (MuJoCo contacts: a tool sphere against a fixed box;
the force is MuJoCo's), commands not arriving (writes that succeed but never reach the modules),
a wrong base IMU (90° off), late feedback (50 ms), an unknown payload at hold (0.5 and 1 kg), a
'damp' stop sinking with 1 kg unknown. Each row names what was measured in ``note`` and is judged
against issue 18's target for it (detection within 50 ms and a push <= 20 N after it, and after a
stop; ``command_lost`` within the command lifetime and a state that is not ``hold``; EE still
< 5 mm; the event naming the cause). ``benchmarks/safety.py`` runs them with the other rows;
``python benchmarks/safety_monitors.py`` alone.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.safety_rig import Row  # noqa: E402
from hebictl.config import load_config  # noqa: E402
from hebictl.control.arm import Arm  # noqa: E402
from hebictl.control.goal import Goal  # noqa: E402
from hebictl.control.safety import ArmState, EventKind  # noqa: E402
from hebictl.hardware import SimClock  # noqa: E402

__all__ = ["MONITOR_ROWS", "main"]

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
SHORT = {"x-series-6dof": "x6", "x-series-5dof": "x5", "x-series-7dof-double-shoulder": "x7", "r-series-6dof": "r6"}


def _arm(config: str, settle: int = 80, before: Callable[[Arm], None] | None = None,
         **options: Any) -> tuple[Arm, SimClock, np.ndarray]:
    cfg = load_config(REPO / "configs" / f"{config}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home, **options)
    if before is not None:
        before(arm)
    for p in arm.plugins:
        p.enabled_ratio = 1.0 if p.enabled else 0.0
    _run(arm, clock, settle * 0.005)
    return arm, clock, home


def _run(arm: Arm, clock: SimClock, seconds: float, probe: Callable[[], float] | None = None) -> tuple[list, list]:
    end = clock.now() + seconds
    t, x = [], []
    while clock.now() < end:
        arm.update()
        arm.send()
        t.append(clock.now())
        x.append(probe() if probe is not None else arm.model.end_effector(arm.backend.true_state()[0])[:3, 3])
    return t, x


def _first(arm: Arm, kind: EventKind) -> float | None:
    return next((e.time for e in arm.events.events if e.kind is kind), None)


def _contact(config: str, where: str) -> Row:
    from hebictl.collision.attach import attach
    from sim_backend.obstacles import Box, add_contact_boxes, contact_force

    def scene(arm: Arm) -> None:
        ee = arm.model.end_effector(arm.backend.true_state()[0])[:3, 3]
        if where == "obstacle":
            c, s = math.cos(0.6), math.sin(0.6)
            box = Box((c * ee[0] - s * ee[1], s * ee[0] + c * ee[1], ee[2]), (0.04, 0.04, 0.15))
        else:  # a table nobody declared: the contact monitor is for what the collision model does not know
            attach(arm.model, None)
            box = Box((ee[0], ee[1], ee[2] - 0.06 - 0.02), (0.6, 0.6, 0.02), "table")
        add_contact_boxes(arm.backend, [box])

    arm, clock, home = _arm(config, before=scene)
    with arm:
        if where == "obstacle":
            goal = home + np.eye(arm.dof)[0] * 1.5
        else:  # the move that lowers the end effector most
            z0 = arm.model.end_effector(home)[2, 3]
            cands = [home + d * np.eye(arm.dof)[j] for j in (1, 2, 3) for d in (-0.5, -0.3, 0.3, 0.5)]
            cands = [q for q in cands if np.all((arm.limits.position_min <= q) & (q <= arm.limits.position_max))]
            goal = max(cands, key=lambda q: z0 - arm.model.end_effector(q)[2, 3])
        arm.set_goal(Goal(arm.dof).add_waypoint(position=goal))
        t, F = _run(arm, clock, 2.0, lambda: contact_force(arm.backend))
        t, F = np.array(t), np.array(F)
        touch = t[np.argmax(F > 1.0)] if (F > 1.0).any() else math.nan
        det = _first(arm, EventKind.CONTACT)
        delay = (det - touch) if det is not None else math.inf
        steady = float(F[t > t[-1] - 0.5].max())
        arm.stop()
        _, F2 = _run(arm, clock, 1.0, lambda: contact_force(arm.backend))
        after = float(max(F2[-40:]))
        ok = delay <= 0.05 and steady <= 20.0 and after <= 20.0
        return Row(f"{where} in the path ({SHORT[config]})", "sim", state=arm.state.value,
                   event="contact" if det is not None else "-", target="detect <= 50 ms, push <= 20 N", ok=ok,
                   note=f"detected {delay * 1e3:.0f} ms after touch, peak {F.max():.0f} N, steady {steady:.1f} N, "
                        f"after stop {after:.1f} N")


def sc_obstacle(backend: str) -> list[Row]:
    return [_contact(c, "obstacle") for c in CONFIGS] if backend == "sim" else []


def sc_table(backend: str) -> list[Row]:
    return [_contact(c, "table") for c in CONFIGS] if backend == "sim" else []


def sc_commands_lost(backend: str) -> list[Row]:
    if backend != "sim":
        return []
    rows = []
    for config in CONFIGS:
        arm, clock, home = _arm(config)
        with arm:
            t0 = clock.now()
            arm.backend.faults.ignore_commands()
            _run(arm, clock, 0.3)
            det = _first(arm, EventKind.COMMAND_LOST)
            life = arm.backend.command_lifetime
            delay = det - t0 if det is not None else math.inf
            ok = delay < life and arm.state is not ArmState.HOLD and not arm.commands_delivered
            rows.append(Row(f"commands not arriving ({SHORT[config]})", "sim", state=arm.state.value,
                            event="command_lost" if det is not None else "-", ok=ok,
                            target="event < lifetime, state not hold",
                            note=f"detected {delay * 1e3:.0f} ms (lifetime {life * 1e3:.0f} ms)"))
    return rows


def sc_wrong_imu(backend: str) -> list[Row]:
    if backend != "sim":
        return []
    rows = []
    half = math.radians(90.0) / 2.0
    for config in CONFIGS:
        def turn(arm: Arm) -> None:
            w, x, y, z = arm.backend.scene.imu_offset[0]
            c, s = math.cos(half), math.sin(half)
            arm.backend.scene.imu_offset[0] = (w * c - x * s, w * s + x * c, y * c + z * s, z * c - y * s)
        arm, clock, home = _arm(config, settle=0, before=turn)
        with arm:
            _, ee = _run(arm, clock, 1.0)
            ee = np.array(ee)
            moved = float(np.linalg.norm(ee - ee[0], axis=1).max()) * 1e3
            ev = _first(arm, EventKind.IMU_IMPLAUSIBLE)
            rows.append(Row(f"wrong IMU, 90° ({SHORT[config]})", "sim", ee_mm=moved, state=arm.state.value,
                            event="imu_implausible" if ev is not None else "-", ok=ev is not None and moved < 5.0,
                            target="event, EE < 5 mm", note=f"EE moved {moved:.1f} mm in 1 s"))
    return rows


def sc_late_feedback(backend: str) -> list[Row]:
    if backend != "sim":
        return []
    rows = []
    for config in CONFIGS:
        arm, clock, home = _arm(config)
        with arm:
            arm.set_goal(Goal(arm.dof).add_waypoint(position=home + np.eye(arm.dof)[0] * 1.0))
            arm.monitors.latency.limit = 0.015  # three periods at 200 Hz (default 100 ms: a slow loop's own lag)
            arm.backend.faults.delay_feedback(0.05)
            _run(arm, clock, 0.6)
            age = arm.monitors.feedback_age
            ev = _first(arm, EventKind.FEEDBACK_LATE)
            ok = ev is not None and abs(age - 0.05) < 0.006 and EventKind.COMMAND_LOST not in arm.events.kinds()
            rows.append(Row(f"late feedback 50 ms ({SHORT[config]})", "sim", state=arm.state.value,
                            event="feedback_late" if ev is not None else "-", ok=ok,
                            target="age measured, event", note=f"measured age {age * 1e3:.1f} ms"))
    return rows


def sc_payload_hold(backend: str) -> list[Row]:
    if backend != "sim":
        return []
    rows = []
    for config in CONFIGS:
        for mass in (0.0, 0.5, 1.0):
            arm, clock, home = _arm(config, payload={"mass": mass} if mass else None)
            with arm:
                _run(arm, clock, 1.0)
                est = arm.payload_estimate or {"mass_kg": math.nan}
                ev = _first(arm, EventKind.MODEL_MISMATCH)
                ok = abs(est["mass_kg"] - mass) <= 0.05 + 0.05 * mass and (ev is not None) == (mass > 0.0)
                rows.append(Row(f"payload {mass:.1f} kg unknown, at hold ({SHORT[config]})", "sim",
                                state=arm.state.value, event="model_mismatch" if ev is not None else "-", ok=ok,
                                target="estimate within 5 %, event", note=f"estimate {est['mass_kg']:.2f} kg"))
    return rows


def sc_damp_sinking(backend: str) -> list[Row]:
    if backend != "sim":
        return []
    rows = []
    for config in CONFIGS:
        arm, clock, home = _arm(config, settle=0, payload={"mass": 1.0})
        with arm:
            arm.stop(behaviour="damp")
            _, ee = _run(arm, clock, 3.0)
            ee = np.array(ee)
            sink = float(ee[0, 2] - ee[:, 2].min()) * 1e3
            ev = _first(arm, EventKind.DAMP_SINKING)
            rows.append(Row(f"damp with 1 kg unknown ({SHORT[config]})", "sim", ee_mm=sink, state=arm.state.value,
                            event="damp_sinking" if ev is not None else "-", ok=ev is not None and sink < 100.0,
                            target="switch to hold, sink < 100 mm", note=f"sank {sink:.0f} mm in 3 s"))
    return rows


MONITOR_ROWS: list[Callable[[str], list[Row]]] = [
    sc_obstacle, sc_table, sc_commands_lost, sc_wrong_imu, sc_late_feedback, sc_payload_hold, sc_damp_sinking]


def main() -> int:
    import contextlib
    import io
    import logging

    from benchmarks.safety import print_rows

    logging.disable(logging.WARNING)
    rows: list[Row] = []
    with contextlib.redirect_stderr(io.StringIO()):
        for sc in MONITOR_ROWS:
            rows.extend(sc("sim"))
    print_rows(rows)
    for r in rows:
        print(f"{r.scenario}: {r.note}")
    failed = sum(not r.ok for r in rows)
    print(f"\n{len(rows)} rows, {len(rows) - failed} PASS, {failed} FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
