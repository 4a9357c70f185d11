"""Safety matrix: every way an arm is stopped or fails, run on the physics sim (and the mock), measured.

One row per scenario with what was measured on the *physical* state (the simulated joints, not
the feedback the controller sees, which some scenarios corrupt on purpose): peak joint speed over
rated (commanded and measured), time to standstill after the stop (every |v| < 0.05 rad/s from
then on), end-effector movement between 0.5 s and 2 s after the stop, the arm's final state and
the event it recorded, and PASS/FAIL against the row's target (issue 11: speed <= 1.05x rated,
still within 0.5 s, EE < 5 mm). Run ``python benchmarks/safety.py`` (``--backend sim|mock|both``,
``--skip-processes`` to leave out the CLI signal rows); the tests in
``tests/sim_backend/test_safety_matrix.py`` run the same scenarios.

In-process rows run the Arm on a SimClock (deterministic, faster than real time); teleop rows run
the real teleop server against a real mosquitto on a free port in real time; the signal rows
start ``hebictl run`` / ``hebictl teleop`` as processes and send them SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hebictl.control.arm import Arm  # noqa: E402
from hebictl.control.goal import Goal  # noqa: E402
from hebictl.errors import CommandRejected  # noqa: E402
from hebictl.hardware.clock import MonotonicClock, SimClock  # noqa: E402
from hebictl.hardware.firmware import ModuleSafety  # noqa: E402

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
SPEED_TOL, STILL_V, STILL_T, EE_TOL = 1.05, 0.05, 0.5, 5.0  # x rated, rad/s, s, mm
LIMITS = (HOME - np.array([2.5, 1.0, 1.0, 1.5, 1.5, 3.0]), HOME + np.array([2.5, 0.6, 0.6, 1.5, 1.5, 3.0]))
STD = f"speed<={SPEED_TOL}x, still<{STILL_T}s, EE<{EE_TOL:g}mm"
RUN_SIGNAL_DELAY = 9.0  # [s] after starting `hebictl run` where its handlers cannot be watched


# ---------------------------------------------------------------------- measurement
@dataclass
class Trace:
    """Physical joint state and written commands over time (one clock)."""

    t: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    v: list[np.ndarray] = field(default_factory=list)
    cmd_t: list[float] = field(default_factory=list)
    cmd_q: list[np.ndarray] = field(default_factory=list)
    cmd_v: list[np.ndarray] = field(default_factory=list)
    t_stop: float = math.nan

    def sample(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        self.t.append(t)
        self.q.append(np.asarray(q, dtype=float).copy())
        self.v.append(np.asarray(v, dtype=float).copy())

    def command(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        self.cmd_t.append(t)
        self.cmd_q.append(np.asarray(q, dtype=float).copy())
        self.cmd_v.append(np.asarray(v, dtype=float).copy())


@dataclass
class Row:
    scenario: str
    backend: str
    peak: float = math.nan          # max joint speed / rated (commanded or measured)
    still: float = math.nan         # s from the stop to standstill
    ee_mm: float = math.nan         # EE movement 0.5-2 s after the stop
    state: str = ""
    event: str = ""
    target: str = STD
    ok: bool = False
    note: str = ""


def metrics(trace: Trace, model: Any, vmax: np.ndarray) -> tuple[float, float, float]:
    """(peak speed ratio, time to standstill [s], EE movement [mm]) of ``trace``."""
    peak = 0.0
    if trace.v:
        peak = float(np.nanmax(np.abs(np.array(trace.v)) / vmax))
    if trace.cmd_v:
        cv = np.abs(np.array(trace.cmd_v)) / vmax
        if np.isfinite(cv).any():
            peak = max(peak, float(np.nanmax(cv)))
        cq, ct = np.array(trace.cmd_q), np.array(trace.cmd_t)
        ok = np.all(np.isfinite(cq), axis=1)
        cq, ct = cq[ok], ct[ok]
        if len(ct) > 2:
            # successive writes at least 0.8 of the typical period apart: a late cycle followed by a
            # prompt one (wall-clock rows) must not turn timing jitter into a speed
            period = float(np.median(np.diff(ct)))
            keep = [0]
            for i in range(1, len(ct)):
                if ct[i] - ct[keep[-1]] >= 0.8 * period:
                    keep.append(i)
            cq, ct = cq[keep], ct[keep]
            if len(ct) > 1:
                rate = np.abs(np.diff(cq, axis=0)) / np.diff(ct)[:, None] / vmax
                peak = max(peak, float(rate.max()))
    if not math.isfinite(trace.t_stop) or not trace.t:
        return peak, math.nan, math.nan
    t, q, v = np.array(trace.t), np.array(trace.q), np.array(trace.v)
    after = t >= trace.t_stop
    moving = np.any(np.abs(v) >= STILL_V, axis=1) & after & (t <= trace.t_stop + 2.0)
    last_moving = t[moving].max() if moving.any() else trace.t_stop
    still = last_moving - trace.t_stop
    win = (t >= trace.t_stop + 0.5) & (t <= trace.t_stop + 2.0)
    ee = math.nan
    if win.sum() >= 2:
        pts = np.array([model.forward_kinematics(qi, "end_effector")[..., :3, 3].reshape(-1)[:3] for qi in q[win]])
        ee = float(np.max(np.linalg.norm(pts - pts[0], axis=1)) * 1e3)
    return peak, float(still), ee


def judge(row: Row, *, speed: bool = True, still: bool = True, ee: bool = True, extra: bool = True) -> Row:
    ok = extra
    if speed:
        ok &= row.peak <= SPEED_TOL
    if still:
        ok &= math.isfinite(row.still) and row.still <= STILL_T
    if ee:
        ok &= math.isfinite(row.ee_mm) and row.ee_mm < EE_TOL
    row.ok = bool(ok)
    return row


# ---------------------------------------------------------------------- in-process rig
class Rig:
    """The bundled 6-DoF arm on ``backend`` at home on a SimClock, its physical state traced."""

    def __init__(self, backend: str, *, clock: Any = None, **options: Any) -> None:
        self.clock = clock or SimClock()
        self.arm = Arm.from_config(CONFIG, backend=backend, clock=self.clock, initial_position=HOME, **options)
        self.arm.set_joint_limits(*LIMITS)
        self.be = self.arm.backend
        self.trace = Trace()
        self.all_events = False
        self.vmax = np.asarray(self.arm.limits.velocity_max, dtype=float)
        inner = self.be.write

        def write(cmd: Any) -> bool:
            self.trace.command(self.clock.now(), cmd.position, cmd.velocity)
            return inner(cmd)

        self.be.write = write  # type: ignore[method-assign]
        inner_read = self.be.read

        def read(into: Any, timeout_s: float = 0.1) -> bool:
            try:
                return inner_read(into, timeout_s)
            finally:  # the physical state at the sample (before the cycle's command), whatever the feedback
                q, v = self.be.true_state()
                self.trace.sample(self.clock.now(), q, v)

        self.be.read = read  # type: ignore[method-assign]
        self.settle(1.5)  # gravity compensation ramps in over 1 s
        self.trace = Trace()

    def cycle(self) -> None:
        self.arm.update()
        self.arm.send()

    def settle(self, seconds: float) -> None:
        end = self.clock.now() + seconds
        while self.clock.now() < end - 1e-9:
            self.cycle()

    def run_until(self, predicate: Callable[[], bool], timeout: float) -> None:
        end = self.clock.now() + timeout
        while not predicate() and self.clock.now() < end:
            self.cycle()

    def mark_stop(self) -> None:
        self.trace.t_stop = self.clock.now()

    def row(self, scenario: str, backend: str) -> Row:
        peak, still, ee = metrics(self.trace, self.arm.model, self.vmax)
        after = [e for e in self.arm.events.events if self.trace.t_stop - 1e-9 <= e.time <= self.trace.t_stop + 2.0] \
            if math.isfinite(self.trace.t_stop) and not self.all_events else list(self.arm.events.events)
        event = ",".join(dict.fromkeys(e.kind.value for e in after)) or "-"
        beh = getattr(self.arm, "stop_behaviour", None)
        state = self.arm.state.value + (f"/{beh.value}" if beh is not None else "")
        return Row(scenario, backend, peak, still, ee, state, event)

    def close(self) -> None:
        self.arm.close()


MOVE = np.array([2.0, -0.5, 0.5, 0.0, 0.0, 0.0])


def _moving_goal(rig: Rig, fraction: float = 0.95) -> None:
    """A goal whose fastest joint peaks near ``fraction`` x its rated speed (the shortest duration
    the arm accepts, from 1.875 D / v: the peak speed of a minimum-jerk move)."""
    t = float(np.max(1.875 * np.abs(MOVE) / (fraction * rig.vmax)))
    for _ in range(30):
        try:
            rig.arm.set_goal(Goal(6).add_waypoint(t=t, position=HOME + MOVE))
            return
        except CommandRejected:
            t *= 1.05
    raise RuntimeError("no goal duration accepted")


def _speed_fraction(rig: Rig) -> float:
    v = rig.trace.v[-1] if rig.trace.v else np.zeros(6)
    return float(np.max(np.abs(v) / rig.vmax))


def sc_infeasible(backend: str) -> Row:
    rig = Rig(backend)
    reason = "accepted"
    try:
        rig.arm.set_goal(Goal(6).add_waypoint(t=0.05, position=HOME + np.array([2.0, 0, 0, 0, 0, 0])))
    except CommandRejected as exc:
        reason = f"refused:{exc.reason}"
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("infeasible goal (base +2 rad in 0.05 s)", backend)
    row.event = reason
    row.target = f"refused or retimed; {STD}"
    rig.close()
    return judge(row, extra=reason.startswith("refused") or row.peak <= SPEED_TOL)


def sc_outside_limits(backend: str) -> Row:
    rig = Rig(backend)
    reason = "accepted"
    try:
        rig.arm.set_goal(Goal(6).add_waypoint(t=3.0, position=np.where(np.arange(6) == 1, LIMITS[1] + 0.3, HOME)))
    except CommandRejected as exc:
        reason = f"refused:{exc.reason}"
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("goal outside the joint limits", backend)
    row.event = reason
    row.target = "refused (out_of_limits); arm still"
    rig.close()
    return judge(row, extra=reason == "refused:out_of_limits")


def sc_jog_into_limit(backend: str) -> Row:
    from hebictl.teleop.runner import ArmRunner
    from hebictl.teleop.schema import Envelope, JogCommand, ModeCommand

    rig = Rig(backend)
    rig.all_events = True
    runner = ArmRunner(rig.arm, rate_hz=rig.be.feedback_frequency)
    runner.submit("mode", ModeCommand(Envelope(1, 0.0, "op"), "jog"))
    v = np.zeros(6)
    v[1] = 0.8 * rig.vmax[1]
    seq = 2
    end = rig.clock.now() + 3.0
    while rig.clock.now() < end:
        runner.offer_jog(JogCommand(Envelope(seq, 0.0, "op"), "joint", v, True, 0.25), rig.clock.now())
        seq += 1
        runner.step()
    rig.mark_stop()
    for _ in range(int(2.0 * rig.be.feedback_frequency)):
        runner.step()
    row = rig.row("jog into a limit (shoulder, 0.8x rated)", backend)
    over = float(np.max(np.array(rig.trace.q)[:, 1]) - LIMITS[1][1])
    row.note = f"overshoot {max(over, 0.0) * 1e3:.1f} mrad"
    row.target = f"stays <= limit+10 mrad; {STD}"
    rig.close()
    return judge(row, extra=over <= 0.01)


def sc_stop_full_speed(backend: str) -> Row:
    rig = Rig(backend)
    _moving_goal(rig)
    best = 0.0
    while rig.arm.trajectory is not None and not rig.arm.at_goal:
        rig.cycle()
        s = _speed_fraction(rig)
        if s < best * 0.999 and best > 0.5:
            break
        best = max(best, s)
    rig.arm.stop()
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("stop() at full speed", backend)
    row.note = f"stopped at {best:.2f}x rated"
    rig.close()
    return judge(row)


def sc_mstop(backend: str) -> Row:
    rig = Rig(backend)
    rig.be.set_safety(ModuleSafety.create(np.full(6, -np.inf), np.full(6, np.inf), mstop_strategy="HoldPosition"))
    _moving_goal(rig)
    rig.settle(0.4)
    rig.be.press_mstop()
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("M-stop press mid-move (modules: HoldPosition)", backend)
    row.target = f"event mstop, stopped; {STD}"
    ok = rig.arm.m_stopped and "mstop" in row.event
    rig.close()
    return judge(row, extra=ok)


def sc_firmware_limit(backend: str) -> Row:
    rig = Rig(backend)
    fw_hi = np.full(6, np.inf)
    fw_hi[2] = HOME[2] + 0.2  # elbow: firmware limit inside the arm's own limit
    rig.be.set_safety(ModuleSafety.create(np.full(6, -np.inf), fw_hi, max_strategy="HoldPosition"))
    rig.settle(0.05)
    rig.arm.set_goal(Goal(6).add_waypoint(position=np.where(np.arange(6) == 2, HOME[2] + 0.5, HOME)))
    # the stop is the firmware's first action: feedback leaves INSIDE (AtUpper: target limited; Above)
    rig.run_until(lambda: rig.arm.last_feedback.position_limit_state[2] != 2.0, 3.0)
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("module firmware limit reached (elbow, HoldPosition)", backend)
    over = float(np.max(np.array(rig.trace.q)[:, 2]) - fw_hi[2])
    fb = rig.arm.last_feedback
    row.note = f"overshoot {max(over, 0.0) * 1e3:.1f} mrad, limit state {fb.position_limit_state[2]:.0f}"
    row.target = f"joint stops at the firmware limit (+50 mrad); {STD}"
    rig.close()
    return judge(row, extra=over <= 0.05)


def _fault_row(backend: str, name: str, inject: Callable[[Any], None], *, ee: bool = True,
               target: str = STD) -> Row:
    rig = Rig(backend)
    _moving_goal(rig)
    rig.settle(0.4)
    inject(rig.be.faults)
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row(name, backend)
    row.target = target
    rig.close()
    return judge(row, ee=ee)


def sc_faults(backend: str) -> list[Row]:
    return [
        _fault_row(backend, "feedback dropped mid-move", lambda f: f.drop_feedback()),
        _fault_row(backend, "feedback frozen mid-move", lambda f: f.freeze_feedback()),
        _fault_row(backend, "feedback NaN (elbow) mid-move", lambda f: f.nan_feedback(2, ("position",))),
        _fault_row(backend, "module J1_base disappears mid-move", lambda f: f.disconnect(0)),
        _fault_row(backend, "module J3_elbow disappears mid-move", lambda f: f.disconnect(2), ee=False,
                   target=f"others hold; elbow unpowered (falls); speed<={SPEED_TOL}x"),
    ]


# ---------------------------------------------------------------------- teleop through a broker
def _teleop_row(backend: str, name: str, action: str) -> Row:
    from hebictl.teleop.broker import LocalBroker, find_mosquitto
    from hebictl.teleop.client import TeleopClient
    from hebictl.teleop.connection import parse_broker
    from hebictl.teleop.server import TeleopServer

    if find_mosquitto() is None:
        return Row(name, backend, note="mosquitto not installed", target="needs mosquitto")
    tmp = tempfile.mkdtemp(prefix="hebictl-safety-")
    broker = LocalBroker(Path(tmp) / "broker")
    broker.start()
    rig = Rig(backend, clock=MonotonicClock())
    url = broker.url if hasattr(broker, "url") else f"mqtt://127.0.0.1:{broker.port}"
    server = TeleopServer(rig.arm, parse_broker(url), "safety",
                          bridge_options={"backoff_initial": 0.05, "backoff_max": 0.5},
                          runner_options={"shutdown_hold": 0.05})
    server.start_background()
    v = np.zeros(6)
    v[0] = 0.4 * rig.vmax[0]

    async def operate() -> None:
        async with TeleopClient(url, "safety") as c:
            await c.mode("jog")
            t_end = time.perf_counter() + 1.0
            while time.perf_counter() < t_end:
                await c.jog(v.tolist(), ttl=0.25)
                await asyncio.sleep(0.02)
            if action == "estop":
                rig.mark_stop()
                await c.estop(True, wait=False)
            elif action == "deadman":
                rig.mark_stop()
                await c.jog(v.tolist(), deadman=False, ttl=0.25)
            elif action == "broker":
                rig.mark_stop()
                broker.stop()
                return
            await asyncio.sleep(2.2)

    try:
        asyncio.run(asyncio.wait_for(operate(), 20.0))
        if action == "broker":
            time.sleep(2.2)
    finally:
        with contextlib.suppress(Exception):
            server.stop_background()
        with contextlib.suppress(Exception):
            broker.stop()
    rig.trace.t = [t for t in rig.trace.t if t <= rig.trace.t_stop + 2.0]  # before the server's own shutdown
    n = len(rig.trace.t)
    rig.trace.q, rig.trace.v = rig.trace.q[:n], rig.trace.v[:n]
    keep = [i for i, t in enumerate(rig.trace.cmd_t) if t <= rig.trace.t_stop + 2.0]
    rig.trace.cmd_t = [rig.trace.cmd_t[i] for i in keep]
    rig.trace.cmd_q = [rig.trace.cmd_q[i] for i in keep]
    rig.trace.cmd_v = [rig.trace.cmd_v[i] for i in keep]
    row = rig.row(name, backend)
    rig.close()
    return judge(row)


def sc_teleop(backend: str) -> list[Row]:
    return [_teleop_row(backend, "teleop e-stop while jogging", "estop"),
            _teleop_row(backend, "dead-man release while jogging", "deadman"),
            _teleop_row(backend, "broker loss during a jog", "broker")]


# ---------------------------------------------------------------------- CLI processes and signals
def _wait_for_handler(pid: int, sig: signal.Signals, timeout: float) -> None:
    """Wait until process ``pid`` catches ``sig`` (Linux: /proc SigCgt), i.e. ``hebictl run`` has
    installed its handlers and entered its loop; elsewhere (or on timeout) just wait ``timeout``."""
    status = Path(f"/proc/{pid}/status")
    end = time.perf_counter() + 60.0
    while status.exists() and time.perf_counter() < end:
        with contextlib.suppress(OSError, ValueError):
            for line in status.read_text().splitlines():
                if line.startswith("SigCgt:") and int(line.split()[1], 16) & (1 << (int(sig) - 1)):
                    return
        time.sleep(0.05)
    if not status.exists():
        time.sleep(timeout)


def _run_signal_row(backend: str, sig: signal.Signals) -> Row:
    name = f"{sig.name} of `hebictl run` mid-goal"
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "run.npz"
        # from the backends' start (zeros) straight to home, slowly: the signal lands mid-move
        # however long the process takes to start (several seconds on a loaded machine)
        cmd = [sys.executable, "-m", "hebictl", "run", str(CONFIG), "--backend", backend, "--no-home", "--goal",
               *map(str, HOME), "--goal-time", "4", "--stop-hold", "2.2", "--record", str(rec), "--quiet"]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        _wait_for_handler(proc.pid, signal.SIGTERM, RUN_SIGNAL_DELAY)
        time.sleep(2.0)  # the loop is running: let the arm get moving
        t_sig = time.perf_counter()
        proc.send_signal(sig)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        want = "interrupt" if sig is signal.SIGINT else "terminate"
        row = Row(name, backend, target=f"exit 0, event {want}, no release; {STD}")
        if not rec.exists():
            row.note = f"no recording (exit {proc.returncode}): {out[-200:]!r}"
            return row
        d = np.load(rec)
        tr = Trace()
        for t, q, v, pc, vc in zip(d["time"], d["position"], d["velocity"], d["position_command"],
                                   d["velocity_command"], strict=True):
            tr.sample(float(t), q, v)
            tr.command(float(t), pc, vc)
        tr.t_stop = t_sig
    from hebictl.config import load_config
    from hebictl.formats import load_model

    model = load_model(load_config(CONFIG).hrdf)
    vmax = np.where(np.isfinite(model.max_speeds), model.max_speeds, np.inf)
    row.peak, row.still, row.ee_mm = metrics(tr, model, vmax)
    kinds = [w for w in ("interrupt", "terminate", "release") if f" {w} ->" in out]
    row.event = ",".join(kinds) or "-"
    row.state = f"exit {proc.returncode}"
    return judge(row, extra=proc.returncode == 0 and want in kinds and "release" not in kinds)


def _teleop_signal_row(backend: str, sig: signal.Signals) -> Row:
    from hebictl.teleop.broker import LocalBroker, find_mosquitto
    from hebictl.teleop.client import TeleopClient

    name = f"{sig.name} of `hebictl teleop` while jogging"
    if find_mosquitto() is None:
        return Row(name, backend, note="mosquitto not installed", target="needs mosquitto")
    from hebictl.config import load_config
    from hebictl.formats import load_model

    model = load_model(load_config(CONFIG).hrdf)
    vmax = np.where(np.isfinite(model.max_speeds), model.max_speeds, np.inf)
    tmp = tempfile.mkdtemp(prefix="hebictl-safety-")
    broker = LocalBroker(Path(tmp) / "broker")
    broker.start()
    url = broker.url if hasattr(broker, "url") else f"mqtt://127.0.0.1:{broker.port}"
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", str(CONFIG), "--backend", backend,
                             "--broker", url, "--arm-id", "sig", "--state-rate", "100"], cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    tr = Trace()
    v = np.zeros(6)
    v[0] = 0.4 * vmax[0]

    async def operate() -> None:
        async with TeleopClient(url, "sig") as c:
            def on_joints(topic: str, body: dict[str, Any]) -> bool:
                if topic == "joints" and body.get("position") is not None:
                    tr.sample(time.perf_counter(), np.array(body["position"], dtype=float),
                              np.array(body["velocity"], dtype=float))
                return False

            await c.wait_status(lambda s: True, timeout=30.0)
            await c.mode("jog")
            watcher = asyncio.create_task(c.wait_for(on_joints, timeout=30.0))
            t_end = time.perf_counter() + 1.0
            while time.perf_counter() < t_end:
                await c.jog(v.tolist(), ttl=0.25)
                await asyncio.sleep(0.02)
            tr.t_stop = time.perf_counter()
            proc.send_signal(sig)
            await asyncio.sleep(2.2)
            watcher.cancel()

    row = Row(name, backend, target=f"holds, no release; {STD}")
    try:
        asyncio.run(asyncio.wait_for(operate(), 60.0))
    except Exception as exc:
        row.note = f"{type(exc).__name__}: {exc}"[:120]
    finally:
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        broker.stop()
    row.peak, row.still, row.ee_mm = metrics(tr, model, vmax)
    kinds = [w for w in ("interrupt", "terminate", "teleop_shutdown", "release") if w in out]
    row.event = ",".join(kinds) or "-"
    row.state = f"exit {proc.returncode}"
    return judge(row, extra=not row.note and "release" not in kinds)


def sc_signals(backends: list[str]) -> list[Row]:
    """The process rows, run side by side (each is mostly waiting for a process)."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(f, b, sig) for b in backends for f in (_run_signal_row, _teleop_signal_row)
            for sig in (signal.SIGINT, signal.SIGTERM)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda j: j[0](j[1], j[2]), jobs))


# ---------------------------------------------------------------------- matrix
IN_PROCESS: list[Callable[[str], Row | list[Row]]] = [sc_infeasible, sc_outside_limits, sc_jog_into_limit,
                                                       sc_stop_full_speed, sc_mstop, sc_firmware_limit, sc_faults]


def run_matrix(backends: list[str], *, teleop: bool = True, processes: bool = True) -> list[Row]:
    rows: list[Row] = []
    for backend in backends:
        for sc in IN_PROCESS:
            out = sc(backend)
            rows.extend(out if isinstance(out, list) else [out])
        if teleop:
            rows.extend(sc_teleop(backend))
    if processes:
        rows.extend(sc_signals(backends))
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
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    backends = ["sim", "mock"] if args.backend == "both" else [args.backend]
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        rows = run_matrix(backends, teleop=not args.skip_teleop, processes=not args.skip_processes)
    print_rows(rows)
    failed = sum(not r.ok for r in rows)
    print(f"\n{len(rows)} rows, {len(rows) - failed} PASS, {failed} FAIL, in {time.perf_counter() - start:.1f} s")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
