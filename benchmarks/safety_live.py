"""Safety-matrix rows that run in real time: teleop through a real mosquitto, and SIGINT/SIGTERM sent
to ``hebictl run`` / ``hebictl teleop`` processes (see ``benchmarks/safety.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.safety_rig import CONFIG, HOME, REPO, RUN_SIGNAL_DELAY, STD, Rig, Row, Trace, judge, metrics
from hebictl.hardware.clock import PacedClock
from sim_backend.backend import TRACE_ENV


# ---------------------------------------------------------------------- teleop through a broker
def teleop_row(backend: str, name: str, action: str) -> Row:
    """One teleop row: jog the arm through a real mosquitto, then ``action`` (``estop``, ``deadman``
    or ``broker`` loss) and measure the stop; public so tests/sim_backend/test_safety_matrix.py runs
    each action as its own test."""
    from hebictl.teleop.broker import LocalBroker, find_mosquitto
    from hebictl.teleop.client import TeleopClient
    from hebictl.teleop.connection import parse_broker
    from hebictl.teleop.server import TeleopServer

    if find_mosquitto() is None:
        return Row(name, backend, note="mosquitto not installed", target="needs mosquitto")
    tmp = tempfile.mkdtemp(prefix="hebictl-safety-")
    broker = LocalBroker(Path(tmp) / "broker")
    broker.start()
    # simulated time paced to real time (the broker and the operator are real), stretched when the
    # loaded machine makes the loop late: the stop is judged on the arm's own timing
    rig = Rig(backend, clock=PacedClock())
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
            await _until_sim(rig, rig.trace.t_stop + 2.2)

    try:
        asyncio.run(asyncio.wait_for(operate(), 40.0))
        if action == "broker":
            asyncio.run(_until_sim(rig, rig.trace.t_stop + 2.2))
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


async def _until_sim(rig: Rig, t: float, timeout: float = 30.0) -> None:
    """Wait (wall time, at most ``timeout``) until the rig's simulated clock has reached ``t``."""
    end = time.perf_counter() + timeout
    while rig.clock.now() < t and time.perf_counter() < end:
        await asyncio.sleep(0.02)


def _safe(fn: Any, backend: str, name: str, *args: Any) -> Row:
    """A row, or a FAIL row naming the exception (one broken scenario must not hide the others)."""
    try:
        return fn(backend, *args)
    except Exception as exc:  # reported in the table
        return Row(name, backend, note=f"{type(exc).__name__}: {exc}"[:100], target="runs")


def sc_teleop(backend: str) -> list[Row]:
    return [_safe(teleop_row, backend, name, name, action) for name, action in (
        ("teleop e-stop while jogging", "estop"), ("dead-man release while jogging", "deadman"),
        ("broker loss during a jog", "broker"))]


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


def run_signal_row(backend: str, sig: signal.Signals) -> Row:
    """``sig`` to a ``hebictl run`` process mid-goal: the arm must stop and the process exit 0.

    The run is on ``--paced-clock`` (a loaded machine stretches its simulated time instead of
    stopping the arm with a control gap) and recorded as MCAP, so the stop is judged on the run's
    own clock, from the time of its stop event to the samples after it."""
    from hebictl.recording.reader import load_recorder

    name = f"{sig.name} of `hebictl run` mid-goal"
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "run.mcap"
        # from the backends' start (zeros) straight to home, slowly: the signal lands mid-move
        # however long the process takes to start (several seconds on a loaded machine)
        cmd = [sys.executable, "-m", "hebictl", "run", str(CONFIG), "--backend", backend, "--no-home", "--goal",
               *map(str, HOME), "--goal-time", "4", "--stop-hold", "2.2", "--record", str(rec), "--quiet",
               "--paced-clock"]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        _wait_for_handler(proc.pid, signal.SIGTERM, RUN_SIGNAL_DELAY)
        time.sleep(2.0)  # the loop is running: let the arm get moving (simulated time runs no faster)
        proc.send_signal(sig)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        want = "interrupt" if sig is signal.SIGINT else "terminate"
        row = Row(name, backend, target=f"exit 0, event {want}, no release; {STD}")
        if not rec.exists():
            row.note = f"no recording (exit {proc.returncode}): {out[-200:]!r}"
            return row
        recording, events = load_recorder(rec)
        stops = [e.time for e in events if e.text.startswith(f"{want} -> stopped")]
        if not stops:
            row.note = f"no {want} stop recorded (exit {proc.returncode}): {out[-200:]!r}"
            return row
        tr = Trace()
        for t, q, v, pc, vc in zip(recording.times, recording.series("position"), recording.series("velocity"),
                                   recording.series("position_command"), recording.series("velocity_command"),
                                   strict=True):
            tr.sample(float(t), q, v)
            tr.command(float(t), pc, vc)
        tr.t_stop = stops[0]
    from hebictl.config import load_config
    from hebictl.formats import load_model

    model = load_model(load_config(CONFIG).hrdf)
    vmax = np.where(np.isfinite(model.max_speeds), model.max_speeds, np.inf)
    row.peak, row.still, row.ee_mm = metrics(tr, model, vmax)
    kinds = [w for w in ("interrupt", "terminate", "release") if f" {w} ->" in out]
    row.event = ",".join(kinds) or "-"
    row.state = f"exit {proc.returncode}"
    if proc.returncode != 0:
        row.note = out.strip().splitlines()[-1][:100] if out.strip() else ""
    return judge(row, extra=proc.returncode == 0 and want in kinds and "release" not in kinds)


def _read_trace(trace_file: Path) -> np.ndarray:
    """The sim's trace rows so far (simulated time, wall time, 6 positions, 6 velocities); a row the
    sim is still writing is left out."""
    if not trace_file.exists():
        return np.empty((0, 14))
    data = np.fromfile(trace_file, dtype=np.float64)
    return data[: data.size // 14 * 14].reshape(-1, 14)


async def _sim_time_after(trace_file: Path, wall: float, seconds: float, proc: subprocess.Popen[str], *,
                          hang: float) -> None:
    """Until the trace holds ``seconds`` of simulated time after the first sample taken at or after
    wall time ``wall``, the process has exited, or ``hang`` seconds of wall time have passed."""
    end = time.perf_counter() + hang
    while time.perf_counter() < end and proc.poll() is None:
        data = _read_trace(trace_file)
        after = np.flatnonzero(data[:, 1] >= wall)
        if after.size and data[-1, 0] >= data[after[0], 0] + seconds:
            return
        await asyncio.sleep(0.05)


def teleop_signal_row(backend: str, sig: signal.Signals) -> Row:
    """``sig`` to a ``hebictl teleop`` process while an operator jogs: the arm must stop and the
    process exit 0."""
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
    # the sim appends its physical state at every sample with its simulated time and the wall time
    # (perf_counter: CLOCK_MONOTONIC, the same clock as ours), so the arm is observed after the bridge
    # has gone offline; --paced-clock: the loaded machine stretches simulated time instead of making the
    # loop late, and the stop is judged in simulated time from the sample the signal arrived at
    trace_file = Path(tmp) / "sim-trace.bin"
    proc = subprocess.Popen([sys.executable, "-m", "hebictl", "teleop", str(CONFIG), "--backend", backend,
                             "--broker", url, "--arm-id", "sig", "--state-rate", "100", "--paced-clock"], cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), TRACE_ENV: str(trace_file)})
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

            await c.wait_status(lambda s: True, timeout=60.0)
            await c.mode("jog")
            watcher = asyncio.create_task(c.wait_for(on_joints, timeout=30.0))
            t_end = time.perf_counter() + 1.0
            while time.perf_counter() < t_end:
                await c.jog(v.tolist(), ttl=0.25)
                await asyncio.sleep(0.02)
            tr.t_stop = time.perf_counter()
            proc.send_signal(sig)
            # the stop is judged over 2 s of the sim's own time after the signal (metrics): wait for that
            # much of it in the trace, not for wall time (--paced-clock stretches it on a loaded machine;
            # a fixed 2.5 s of wall time once held only part of the window). 60 s: a hang guard
            await _sim_time_after(trace_file, tr.t_stop, 2.1, proc, hang=60.0)
            watcher.cancel()

    row = Row(name, backend, target=f"holds, no release; {STD}")
    try:
        asyncio.run(asyncio.wait_for(operate(), 180.0))  # a hang guard over the waits inside
    except Exception as exc:
        row.note = f"{type(exc).__name__}: {exc}"[:120]
    finally:
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        broker.stop()
    data = _read_trace(trace_file)
    if data.size:
        after = np.flatnonzero(data[:, 1] >= tr.t_stop)  # samples taken once the signal was sent
        sim = Trace(t_stop=float(data[after[0], 0]) if after.size else math.nan)
        for row_ in data:
            sim.sample(float(row_[0]), row_[2:8], row_[8:14])
        tr = sim
    row.peak, row.still, row.ee_mm = metrics(tr, model, vmax)
    if not row.note and not np.isfinite(row.ee_mm):
        row.note = "no 2 s of the arm's state after the signal (60 s hang guard): the process stopped or stalled"
    kinds = [w for w in ("interrupt", "terminate", "teleop_shutdown", "release") if w in out]
    name_ = "Ctrl-C" if sig is signal.SIGINT else "SIGTERM"
    want = "interrupt" if sig is signal.SIGINT else "terminate"
    # "the arm brakes and holds", or "the arm brakes, then parks at user_data.rest_position" (docs/stopping.md)
    if f"{name_}: stopping teleop; the arm brakes" in out and want not in kinds:
        kinds.insert(0, want)  # the operator message names the stop (the event log is not printed)
    row.event = ",".join(kinds) or "-"
    row.state = f"exit {proc.returncode}"
    if proc.returncode != 0:
        row.note = (row.note + " " if row.note else "") + "output tail: " + " | ".join(out.strip().splitlines()[-6:])
    row.target = f"{want} -> brake and hold, exit 0 on a 2nd signal, no release; {STD}"
    return judge(row, extra=not row.note and "release" not in kinds and want in kinds and proc.returncode == 0)


def sc_signals(backends: list[str]) -> list[Row]:
    """The process rows, run side by side (each is mostly waiting for a process)."""
    jobs = [(f, b, sig) for b in backends for f in (run_signal_row, teleop_signal_row)
            for sig in (signal.SIGINT, signal.SIGTERM)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda j: j[0](j[1], j[2]), jobs))


