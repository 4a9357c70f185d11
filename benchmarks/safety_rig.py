"""Safety-matrix measurement and in-process scenarios: the arm on a SimClock, its physical joints traced
(see ``benchmarks/safety.py``)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hebictl.config import load_config  # noqa: E402
from hebictl.control.arm import Arm  # noqa: E402
from hebictl.control.goal import Goal  # noqa: E402
from hebictl.errors import CommandRejected  # noqa: E402
from hebictl.hardware.clock import SimClock  # noqa: E402
from hebictl.hardware.firmware import ModuleSafety  # noqa: E402

CONFIG = REPO / "configs" / "x-series-6dof.cfg.yaml"
HOME = np.array([0.0, 1.2, 1.8, 2.2, -1.57, 0.0])
SPEED_TOL, STILL_V, STILL_T, EE_TOL = 1.05, 0.05, 0.5, 5.0  # x rated, rad/s, s, mm
STD = f"speed<={SPEED_TOL}x, still<{STILL_T}s, EE<{EE_TOL:g}mm"
#: M-stop with the modules' HoldPosition strategy: their own position loop alone (no gravity
#: effort, commands ignored) stops the arm; measured on the sim 1.43 s / 51 mm: bounds with margin
MSTOP_STILL_T, MSTOP_EE = 2.0, 80.0
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
    if t.max() < trace.t_stop + 1.9:  # not observed to the end of the window (e.g. the process exited)
        return peak, math.nan, math.nan
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

    def __init__(self, backend: str, *, clock: Any = None, config: Path = CONFIG, home: np.ndarray = HOME,
                 **options: Any) -> None:
        self.clock = clock or SimClock()
        self.home = np.asarray(home, dtype=float)
        self.arm = Arm.from_config(config, backend=backend, clock=self.clock, initial_position=self.home, **options)
        self.lo = np.asarray(self.arm.limits.position_min, dtype=float)  # the config's joint limits
        self.hi = np.asarray(self.arm.limits.position_max, dtype=float)
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


MOVE = np.array([2.0, -0.3, -0.3, 0.0, 0.0, 0.0])  # -0.5, -0.5 ran the tool into the table: refused


def _moving_goal(rig: Rig, fraction: float = 0.95) -> None:
    """A goal whose fastest joint peaks near ``fraction`` x its rated speed (the shortest duration
    the arm accepts, from 1.875 D / v: the peak speed of a minimum-jerk move); ``MOVE`` from the
    rig's home, cut to its joints."""
    move = np.zeros(rig.arm.dof)
    move[:min(move.size, MOVE.size)] = MOVE[:move.size]
    t = float(np.max(1.875 * np.abs(move) / (fraction * rig.vmax)))
    for _ in range(30):
        try:
            rig.arm.set_goal(Goal(rig.arm.dof).add_waypoint(t=t, position=rig.home + move))
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
        rig.arm.set_goal(Goal(6).add_waypoint(t=3.0, position=np.where(np.arange(6) == 1, rig.hi + 0.3, HOME)))
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
    over = float(np.max(np.array(rig.trace.q)[:, 1]) - rig.hi[1])
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
    q, v = rig.be.true_state()
    t_min = rig.arm.brake_planner.minimal_stop_time(q, v)  # all spare effort, rectangular deceleration
    rig.arm.stop()
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("stop() at full speed", backend)
    row.note = f"stopped at {best:.2f}x rated; physical minimum {t_min:.3f} s"
    rig.close()
    return judge(row)


def sc_stop_half_way(backend: str) -> Row:
    """Issue 11's own check: ``Arm.stop()`` half-way through a 1 s goal."""
    rig = Rig(backend)
    rig.arm.set_goal(Goal(6).add_waypoint(t=1.0, position=HOME + np.array([0.5, -0.3, -0.3, 0.3, 0.3, 0.3])))
    rig.settle(0.5)
    rig.arm.stop()
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row("stop() half-way through a 1 s goal", backend)
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
    # While M-stopped a HEBI module runs its M-stop strategy and ignores commands: HoldPosition is
    # its own position loop without gravity feed-forward, so the stop and the sag are firmware
    # physics. The controller's part: it sees the M-stop, records it and latches a hold stop.
    row.target = (f"event mstop, stopped; speed<={SPEED_TOL}x; firmware holds alone (commands ignored): "
                  f"still<{MSTOP_STILL_T:g}s, EE<{MSTOP_EE:g}mm")
    ok = rig.arm.m_stopped and "mstop" in row.event and rig.arm.state.value == "stopped"
    ok = ok and math.isfinite(row.still) and row.still < MSTOP_STILL_T and row.ee_mm < MSTOP_EE
    rig.close()
    return judge(row, still=False, ee=False, extra=ok)


def sc_firmware_limit(backend: str) -> Row:
    rig = Rig(backend)
    fw_hi = np.full(6, np.inf)
    fw_hi[2] = min(HOME[2] + 0.2, rig.hi[2] - 0.1)  # elbow: firmware limit inside the arm's own limit
    rig.be.set_safety(ModuleSafety.create(np.full(6, -np.inf), fw_hi, max_strategy="HoldPosition"))
    rig.settle(0.05)
    # the elbow to its own limit, the wrist raised 0.5 rad: the elbow alone folded the tool 0.3 mm into the
    # table (refused as a collision since goals are collision-checked along their path)
    target = HOME + np.array([0.0, 0.0, 0.0, 0.5, 0.0, 0.0])
    target[2] = rig.hi[2] - 0.01
    rig.arm.set_goal(Goal(6).add_waypoint(position=target))
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
               target: str = STD, **kit: Any) -> Row:
    rig = Rig(backend, **kit)
    _moving_goal(rig)
    rig.settle(0.4)
    inject(rig.be.faults)
    rig.mark_stop()
    rig.settle(2.0)
    row = rig.row(name, backend)
    row.target = target
    rig.close()
    return judge(row, ee=ee)


def sc_faults(backend: str, **kit: Any) -> list[Row]:
    """The fault rows on the x6 kit, or (``config=``, ``home=``) another one."""
    return [
        _fault_row(backend, "feedback dropped mid-move", lambda f: f.drop_feedback(), **kit),
        _fault_row(backend, "feedback frozen mid-move", lambda f: f.freeze_feedback(), **kit),
        _fault_row(backend, "feedback NaN (elbow) mid-move", lambda f: f.nan_feedback(2, ("position",)), **kit),
        _disconnect_row(backend, 0, "J1_base", **kit),
        _disconnect_row(backend, 2, "J3_elbow", **kit),
    ]


def sc_faults_per_kit(backend: str = "sim") -> list[Row]:
    """The fault rows on every bundled config (``python benchmarks/safety_rig.py``; tested in
    tests/sim_backend/test_safety_matrix.py), each from its own home with ``MOVE``; the row's name
    carries the config."""
    rows: list[Row] = []
    for path in sorted((REPO / "configs").glob("*.cfg.yaml")):
        home = np.array(load_config(path).user_data["home_position"], dtype=float)
        for row in sc_faults(backend, config=path, home=home):
            row.scenario = f"{row.scenario} [{path.name.removesuffix('.cfg.yaml')}]"
            rows.append(row)
    return rows


def _disconnect_row(backend: str, joint: int, name: str, **kit: Any) -> Row:
    """A module disappears mid-move. The controller's part is checked: the stop is latched
    (hardware_error) and every OTHER joint brakes to rest within 0.5 s and holds; commanded speeds
    stay <= 1.05x. The lost module is on its own: after its command lifetime it goes limp (HEBI:
    no command = no torque) and its fall is reported as measured (set ``command_lifetime`` and the
    modules' own limits/strategies, see docs/sim.md)."""
    rig = Rig(backend, **kit)
    _moving_goal(rig)
    rig.settle(0.4)
    rig.be.faults.disconnect(joint)
    rig.mark_stop()
    rig.settle(2.0)
    full = rig.trace
    q_lost = np.array(full.q)[:, joint]
    after = np.array(full.t) >= full.t_stop
    fall = float(np.ptp(q_lost[after])) if after.any() else math.nan
    mask = np.arange(len(full.q[0])) != joint  # the lost joint's physical motion is reported, not judged
    rig.trace = Trace([*full.t], [np.where(mask, q, q_lost[0]) for q in full.q], [v * mask for v in full.v],
                      full.cmd_t, full.cmd_q, full.cmd_v, full.t_stop)
    row = rig.row(f"module {name} disappears mid-move", backend)
    rig.trace = full
    # what the controller controls: the other joints' COMMAND comes to rest (their physical motion,
    # which a falling link drags along, is the 'to standstill' figure, reported)
    ct, cq = np.array(full.cmd_t), np.array(full.cmd_q)[:, mask]
    rate = np.abs(np.diff(cq, axis=0)) / np.maximum(np.diff(ct), 1e-9)[:, None]
    moving = (ct[1:] >= full.t_stop) & np.any(rate >= STILL_V, axis=1)
    cmd_still = float(ct[1:][moving].max() - full.t_stop) if moving.any() else 0.0
    row.ee_mm = math.nan
    row.note = (f"others commanded still after {cmd_still:.3f} s; lost joint moved {fall:.3f} rad in 2 s: "
                "limp after its lifetime")
    row.target = (f"stop latched (hardware_error); other joints' command still<{STILL_T}s; "
                  f"speed<={SPEED_TOL}x; physical motion measured")
    ok = "hardware_error" in row.event and rig.arm.state.value == "stopped" and cmd_still < STILL_T
    rig.close()
    return judge(row, still=False, ee=False, extra=ok)


if __name__ == "__main__":
    for r in sc_faults_per_kit("sim"):
        print(f"{r.scenario:58s} peak {r.peak:.3f}x rated  still {r.still:.3f} s  EE {r.ee_mm:6.2f} mm  "
              f"{r.state:13s} {r.event:28s} {'PASS' if r.ok else 'FAIL'}")
