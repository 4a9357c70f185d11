"""Safety-matrix rows for the supervisor (issue 18): every bundled config on the physics sim, with
end-effector payloads the controller's model does not know.

Each row moves the arm at ~0.9x its rated speed, does something to it (an M-stop press and release
with a module strategy, a module gone and back, ``clear_fault()`` while braking, ``stop()`` then
``damp``, ``stop()`` at full speed with a payload, a control stall of 0.1, 0.5 and 1 s, the last also
with the modules' firmware limits set) and measures the PHYSICAL state (the simulated
joints, ``SimBackend.true_state``): time to standstill (every |v| < 0.05 rad/s from then on), the
end effector's largest displacement after standstill or release, the largest commanded position
step over rated speed x period, and the events. Targets (issue 18): standstill within 0.5 s, no
uncommanded motion over 5 mm after standstill, the event names the cause.

``python benchmarks/safety_supervisor.py`` prints the rows; ``benchmarks/safety.py`` includes them;
``tests/control/test_supervisor_sim.py`` runs them as tests.
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
from hebictl.errors import CommandRejected  # noqa: E402
from hebictl.hardware.clock import SimClock  # noqa: E402
from hebictl.hardware.firmware import ModuleSafety  # noqa: E402

CONFIGS = {"x6": "x-series-6dof", "x5": "x-series-5dof", "x7": "x-series-7dof-double-shoulder",
           "r6": "r-series-6dof"}
STILL_V, STILL_T, EE_TOL = 0.05, 0.5, 5.0  # rad/s, s, mm
STEP_TOL = 1.05  # commanded step / (rated speed x period)
TARGET = f"still<{STILL_T}s, EE after<{EE_TOL:g}mm, step<={STEP_TOL}x, event names the cause"


class SupRig:
    """One bundled config on the sim at its home pose, an unknown ``payload`` [kg] on the end
    effector (its centre of mass at ``com`` [m, end-effector frame]), its physical state and written
    commands traced every cycle."""

    def __init__(self, key: str, payload: float = 0.0, com: tuple[float, float, float] = (0.0, 0.0, 0.05)) -> None:
        cfg = load_config(REPO / "configs" / f"{CONFIGS[key]}.cfg.yaml")
        self.key = key
        self.home = np.array(cfg.user_data["home_position"], dtype=float)
        self.clock = SimClock()
        opts: dict[str, Any] = {"initial_position": self.home}
        if payload > 0.0:
            opts["payload"] = {"mass": payload, "com": list(com)}
        self.arm = Arm.from_config(cfg, backend="sim", clock=self.clock, **opts)
        self.be: Any = self.arm.backend
        self.vmax = np.asarray(self.arm.limits.velocity_max, dtype=float)
        self.t: list[float] = []
        self.q: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.cmd: list[np.ndarray] = []
        self.settle(1.5)  # gravity compensation ramps in over 1 s
        self.clear()

    def clear(self) -> None:
        self.t, self.q, self.v, self.cmd = [], [], [], []

    def cycle(self) -> None:
        self.arm.update()
        self.arm.send()
        q, v = self.be.true_state()
        self.t.append(self.clock.now())
        self.q.append(q[:self.arm.dof])
        self.v.append(v[:self.arm.dof])
        self.cmd.append(self.arm.pending_command.position.copy())

    def settle(self, seconds: float) -> None:
        end = self.clock.now() + seconds
        while self.clock.now() < end - 1e-9:
            self.cycle()

    def move(self, fraction: float = 0.9) -> None:
        """A goal whose base joint peaks near ``fraction`` x its rated speed (minimum-jerk peak
        1.875 D / T), the shoulder a little too; runs until the base is at its peak speed."""
        delta = np.zeros(self.arm.dof)
        delta[0] = 2.0
        t = 1.875 * 2.0 / (fraction * self.vmax[0])
        for _ in range(30):
            try:
                self.arm.set_goal(Goal(self.arm.dof).add_waypoint(t=t, position=self.home + delta))
                break
            except CommandRejected:
                t *= 1.05
        self.settle(t / 2.0)

    def ee(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(self.arm.model.end_effector(q)[:3, 3], dtype=float)

    def figures(self, t0: float, *, after: float | None = None,
                steps_from: float = -math.inf) -> tuple[float, float, float]:
        """(standstill [s after t0], EE displacement [mm] after ``after`` (default: standstill) to
        the end, largest commanded step / (rated speed x period) from ``steps_from`` on) of the trace."""
        t, q, v = np.array(self.t), np.array(self.q), np.array(self.v)
        moving = (t >= t0) & np.any(np.abs(v) >= STILL_V, axis=1)
        t_still = float(t[moving].max()) if moving.any() else t0
        still = t_still - t0
        start = t_still if after is None else after
        win = t >= start
        ee_mm = math.nan
        if win.sum() >= 2:
            pts = np.array([self.ee(qi) for qi in q[win]])
            ee_mm = float(np.max(np.linalg.norm(pts - pts[0], axis=1)) * 1e3)
        return still, ee_mm, self.step_ratio(steps_from)

    def step_ratio(self, since: float = -math.inf) -> float:
        """Largest commanded step / (rated speed x period) that pulls the arm, from ``since`` on: a step
        that brings the command closer to the measured position (a re-anchoring: the command lands on
        the arm) is not a motion request and is left out."""
        k = max(int(np.searchsorted(np.array(self.t), since)) - 1, 0)
        return step_ratio(np.array(self.cmd[k:]), np.array(self.q[k:]), self.vmax * self.arm.nominal_period)

    def events_since(self, t0: float) -> str:
        return ",".join(dict.fromkeys(e.kind.value for e in self.arm.events.events if e.time >= t0 - 1e-9)) or "-"

    def close(self) -> None:
        self.arm.close()


def step_ratio(cmd: np.ndarray, q: np.ndarray, bound: np.ndarray) -> float:
    """Largest |cmd[k] - cmd[k-1]| / ``bound`` over the cycles and joints where the step does not
    bring the command closer to the measured position ``q[k]`` (rows: cycles, columns: joints)."""
    if len(cmd) < 2:
        return 0.0
    step = np.abs(np.diff(cmd, axis=0))
    toward = np.abs(cmd[1:] - q[1:]) <= np.abs(cmd[:-1] - q[1:]) + 1e-12
    judged = np.isfinite(step) & ~toward
    ratio = np.where(judged, step / bound, 0.0)
    return float(ratio.max())


def _row(rig: SupRig, name: str, t0: float, *, after: float | None = None, cause: str, note: str = "",
         still: bool = True) -> Row:
    s, ee_mm, step = rig.figures(t0, after=after)
    events = rig.events_since(t0)
    latch = rig.arm.latch
    state = rig.arm.state.value + (f"/{latch.behaviour.value}" if latch is not None else "")
    state += f" ({rig.arm.mode.value})"
    row = Row(f"{name} [{rig.key}]", "sim", step, s, ee_mm, state, events, TARGET, note=note)
    ok = math.isfinite(ee_mm) and ee_mm < EE_TOL and step <= STEP_TOL and cause in events
    if still:
        ok = ok and s <= STILL_T
    row.ok = bool(ok)
    return row


def sc_mstop_release(key: str, strategy: str) -> Row:
    """M-stop pressed mid-move with ``strategy`` in the modules, released 1.5 s later while the arm is
    latched: nothing may move after the release (EE over the 1.5 s after it)."""
    rig = SupRig(key)
    try:
        n = rig.be.size
        rig.be.set_safety(ModuleSafety.create(np.full(n, -np.inf), np.full(n, np.inf), mstop_strategy=strategy))
        rig.move()
        t0 = rig.clock.now()
        rig.be.press_mstop()
        rig.settle(1.5)
        t_rel = rig.clock.now()
        rig.be.release_mstop()
        rig.settle(2.0)
        if strategy != "MotorOff":
            row = _row(rig, f"M-stop {strategy} press, release", t0, after=t_rel, cause="mstop", still=False)
            s_rel, _, _ = rig.figures(t_rel)
            row.still = s_rel
            row.note = f"standstill {s_rel:.3f} s after the release"
            row.target = f"EE<{EE_TOL:g}mm in the 1.5 s after the release, step<={STEP_TOL}x, event mstop"
            return row
        # MotorOff: the arm falls while pressed (the modules' strategy) and may still swing at the release;
        # while pressed the modules ignore commands (the command trails the falling arm by a sample)
        s_rel, ee_after, step = rig.figures(t_rel, steps_from=t_rel)
        _, ee_release, _ = rig.figures(t_rel, after=t_rel)
        row = Row(f"M-stop MotorOff press, release [{key}]", "sim", step, s_rel, ee_after, rig.arm.state.value,
                  rig.events_since(t0))
        row.note = f"falls while pressed (MotorOff); EE {ee_release:.0f} mm from the release to standstill"
        row.target = f"brake from the release: standstill<{STILL_T}s, then EE<{EE_TOL:g}mm; step<={STEP_TOL}x"
        row.ok = bool(s_rel <= STILL_T and ee_after < EE_TOL and step <= STEP_TOL and "mstop" in row.event)
        return row
    finally:
        rig.close()


def sc_module_return(key: str) -> Row:
    """The shoulder module gone for 0.5 s mid-move, then back: the latched hold starts where the arm
    is (EE over the 1.5 s after its return; its fall while gone is reported)."""
    rig = SupRig(key)
    try:
        rig.move()
        t0 = rig.clock.now()
        rig.be.faults.disconnect(1, duration=0.5)
        rig.settle(0.5)
        t_back = rig.clock.now()
        q_back = rig.q[-1].copy()
        rig.settle(1.5)
        s_back, ee_after, step = rig.figures(t_back)
        _, ee_return, _ = rig.figures(t_back, after=t_back)
        row = Row(f"module gone 0.5 s and back [{key}]", "sim", step, s_back, ee_after, rig.arm.state.value,
                  rig.events_since(t0))
        fall = float(abs(q_back[1] - rig.q[0][1]))
        row.note = (f"shoulder fell {fall:.3f} rad while gone (commands cannot reach it); EE {ee_return:.0f} mm "
                    "from the return to standstill, braking from the measured velocity")
        row.target = f"standstill<{STILL_T}s after the return, then EE<{EE_TOL:g}mm; step<={STEP_TOL}x; hardware_error"
        row.ok = bool(s_back <= STILL_T and ee_after < EE_TOL and step <= STEP_TOL and "hardware_error" in row.event)
        return row
    finally:
        rig.close()


def sc_clear_while_moving(key: str) -> Row:
    """``stop()`` mid-move, ``clear_fault()`` 50 ms later while the arm still moves: it brakes from its
    measured velocity, then holds where it stops."""
    rig = SupRig(key)
    try:
        rig.move()
        t0 = rig.clock.now()
        rig.arm.stop()
        rig.settle(0.05)
        rig.arm.clear_fault()
        rig.settle(2.0)
        return _row(rig, "clear_fault() while braking", t0, cause="cleared")
    finally:
        rig.close()


def sc_stop_then_damp(key: str, payload: float = 0.0) -> Row:
    """``stop()`` mid-move, then ``stop(behaviour="damp")`` 50 ms later: the brake runs to standstill
    (damping starts once the arm is still). EE motion afterwards is the damp's (reported, not judged)."""
    rig = SupRig(key, payload)
    try:
        rig.move()
        t0 = rig.clock.now()
        rig.arm.stop()
        rig.settle(0.05)
        rig.arm.stop(behaviour="damp")
        rig.settle(2.0)
        row = _row(rig, f"stop() then damp while braking, payload {payload:g} kg", t0, cause="estop")
        row.note = f"damp sank {row.ee_mm:.1f} mm after standstill (not judged: damp holds no position)"
        row.ok = bool(row.still <= STILL_T and row.peak <= STEP_TOL and rig.arm.mode.value == "damp")
        row.target = f"still<{STILL_T}s (brake kept), then damp; step<={STEP_TOL}x"
        return row
    finally:
        rig.close()


def sc_stop_payload(key: str, payload: float) -> Row:
    """``stop()`` at ~full speed with an end-effector payload the model does not know."""
    rig = SupRig(key, payload)
    try:
        rig.move(0.95)
        t0 = rig.clock.now()
        rig.arm.stop()
        rig.settle(2.0)
        return _row(rig, f"stop() at 0.95x rated, unknown payload {payload:g} kg", t0, cause="estop")
    finally:
        rig.close()


def _beyond_limits(rig: SupRig, since: float) -> float:
    """[rad] how far the furthest joint was measured beyond its limits from ``since`` on (0: inside)."""
    t, q = np.array(rig.t), np.array(rig.q)
    q = q[t >= since]
    lim = rig.arm.limits
    return float(max(np.max(q - lim.position_max), np.max(lim.position_min - q), 0.0)) if len(q) else 0.0


def sc_control_stall(key: str, stall: float, *, firmware_limits: bool = False) -> Row:
    """The controller stalls ``stall`` [s] mid-move (a GC pause, swapping, ``kill -STOP``): the clock and
    the physics run on, nothing is commanded. Longer than the command lifetime the modules go limp and
    the arm falls (physics: nothing the stalled process can do; measured). After it: a latched
    ``control_gap``, the first command lands on the measured position, no later step above rated speed x
    period, standstill within 0.5 s of the return and then EE < 5 mm. ``firmware_limits``: the modules'
    own position limits (HoldPosition, 0.05 rad outside the arm's: ``user_data.module_safety``) set, which
    catch a limp joint at its limit while the controller is away (the only thing that can act then)."""
    rig = SupRig(key)
    try:
        lim = rig.arm.limits
        if firmware_limits:
            rig.be.set_safety(ModuleSafety.create(lim.position_min - 0.05, lim.position_max + 0.05,
                                                  mstop_strategy="HoldPosition"))
        rig.move()
        t0 = rig.clock.now()
        rig.clock.advance(stall)
        t_back = rig.clock.now()
        rig.settle(2.0)
        s_back, ee_after, _ = rig.figures(t_back)
        step = rig.step_ratio(t_back)
        beyond = _beyond_limits(rig, t_back)
        life = float(getattr(rig.be, "command_lifetime", 0.0) or 0.0)
        events = rig.events_since(t0)
        name = f"control stall {stall:g} s{' (module firmware limits)' if firmware_limits else ''} [{key}]"
        row = Row(name, "sim", step, s_back, ee_after, rig.arm.state.value, events)
        row.note = f"{beyond * 1e3:.0f} mrad beyond a joint limit after the stall"
        if stall < life:  # the modules still execute the last command: the goal goes on, no event
            row.target = f"no control_gap (shorter than the {life:g} s command lifetime); step<={STEP_TOL}x"
            row.ok = bool("control_gap" not in events and step <= STEP_TOL)
            return row
        if firmware_limits:  # the modules' HoldPosition catches the limp joint at its limit with its position
            # loop alone (no gravity effort): the fall past the limit is measured, and the controller's hold
            # afterwards shares the joint with the firmware's (standstill reported, not judged)
            row.target = f"control_gap; step<={STEP_TOL}x; fall past the limits and standstill measured"
            row.ok = bool("control_gap" in events and step <= STEP_TOL)
            return row
        row.target = (f"control_gap; standstill<{STILL_T}s after the return, then EE<{EE_TOL:g}mm; "
                      f"step<={STEP_TOL}x; the limp fall is measured")
        row.ok = bool("control_gap" in events and s_back <= STILL_T and ee_after < EE_TOL and step <= STEP_TOL)
        return row
    finally:
        rig.close()


def rows(keys: list[str] | None = None) -> list[Row]:
    """Every supervisor row for ``keys`` (default: all bundled configs)."""
    out: list[Row] = []
    scenarios: list[Callable[[str], Row]] = [
        lambda k: sc_mstop_release(k, "HoldPosition"), lambda k: sc_mstop_release(k, "MotorOff"),
        sc_module_return, sc_clear_while_moving, sc_stop_then_damp,
        lambda k: sc_stop_payload(k, 0.0), lambda k: sc_stop_payload(k, 0.5), lambda k: sc_stop_payload(k, 1.0),
        lambda k: sc_control_stall(k, 0.1), lambda k: sc_control_stall(k, 0.5), lambda k: sc_control_stall(k, 1.0),
        lambda k: sc_control_stall(k, 1.0, firmware_limits=True)]
    for key in keys or list(CONFIGS):
        for sc in scenarios:
            try:
                out.append(sc(key))
            except Exception as exc:  # one broken scenario must not hide the others
                out.append(Row(f"supervisor [{key}]", "sim", note=f"{type(exc).__name__}: {exc}"[:120], target="runs"))
    return out


if __name__ == "__main__":
    from benchmarks.safety import print_rows

    result = rows(sys.argv[1:] or None)
    print_rows(result)
    failed = sum(not r.ok for r in result)
    print(f"\n{len(result)} rows, {len(result) - failed} PASS, {failed} FAIL")
    sys.exit(1 if failed else 0)
