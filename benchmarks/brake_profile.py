"""The brake ramp measured on the physics sim: ``stop()`` at 0.95x rated on every bundled config with an
end-effector payload the model does not know (0, 0.5 and 1.5 kg), the simulated joints' own state traced.

Per row, with ``v`` the velocity the arm actually had when the stop began (the sim's joints, not the
feedback) and ``a`` the deceleration the brake planned per joint
(:meth:`hebictl.control.braking.BrakePlanner.deceleration`):

- ``travel``: the distance the joint that sets the stop (largest ``|v_i| / a_i``) went on along its
  motion from the stop, over ``v^2 / (2 a)``; ``worst``: the largest over the moving joints of each
  one's travel over ``|v_i| T* / 2``, its share of the shortest synchronised stop within every joint's
  deceleration (``T* = max |v_j| / a_j``), so the joint that sets it is ``travel`` itself;
- ``peak``: the largest commanded deceleration (the ramp's, and the velocity command's change per
  cycle) over ``a``, per joint;
- ``ramp``: the ramp's length; ``still``: standstill (every |v| < 0.05 rad/s from then on);
- ``settle``: after the ramp's end, when the end effector stays within 0.5 mm of where it rests 2 s
  after the stop; ``over``: the largest joint overshoot past the ramp's stopping point along its motion
  [mrad]; ``ring``: the end effector's largest distance from its rest after the ramp's end [mm];
  ``ee``: its displacement after standstill (the safety matrix's figure).

``python benchmarks/brake_profile.py [TAPER] [PAYLOADS] [COMS]`` prints the table (``COMS``: centres of
mass [m, end-effector frame] separated by ``;``, default ``0,0,0.05``); ``tests/control/test_motion_sim.py`` asserts
the travel bound on it.
"""

from __future__ import annotations

import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.safety_supervisor import CONFIGS, STILL_V, SupRig  # noqa: E402
from hebictl.control.modes.brake import Braking  # noqa: E402
from hebictl.control.motion import Brake  # noqa: E402

PAYLOADS = (0.0, 0.5, 1.5)
COM = (0.0, 0.0, 0.05)  # [m, end-effector frame] the payload's centre of mass (argv[3]: others)
MOVING = 0.2  # [rad/s] a joint slower than this at the stop is not judged on its travel
SETTLE_MM = 0.5


@dataclass
class BrakeRow:
    key: str
    payload: float
    v: np.ndarray        # [rad/s] the joints' true velocity when the stop began
    a: np.ndarray        # [rad/s²] the planned deceleration per joint
    travel: float        # the setting joint's travel / (v² / 2a)
    worst: float         # max over moving joints of travel_i / (|v_i| T* / 2)
    peak: float          # max commanded deceleration / a (the ramp's)
    peak_cmd: float      # max |Δ velocity command| / dt / a (what was sent)
    ramp: float          # [s] the ramp's length
    still: float         # [s] standstill after the stop
    settle: float        # [s] after the ramp's end, EE within SETTLE_MM of its rest
    over: float          # [mrad] overshoot past the stopping point
    ring: float          # [mm] EE's largest distance from its rest after the ramp's end
    ee: float            # [mm] EE displacement after standstill
    joint: str
    taper: float         # the first ramp's end taper over v0 / a (Brake.taper_fraction)

    def line(self) -> str:
        return (f"{self.key:3s} {self.payload:4.1f} kg  v {np.abs(self.v).max():5.2f} rad/s ({self.joint})  "
                f"taper {self.taper:.1f}  travel {self.travel:5.3f}  worst {self.worst:5.3f}  "
                f"peak {self.peak:5.3f} (sent {self.peak_cmd:5.3f})  "
                f"ramp {self.ramp:5.3f} s  still {self.still:5.3f} s  settle {self.settle:5.3f} s  "
                f"over {self.over:5.2f} mrad  ring {self.ring:5.2f} mm  EE {self.ee:4.2f} mm")


def _travel(q: np.ndarray, q0: np.ndarray, v: np.ndarray) -> np.ndarray:
    """How far each joint went on along its motion ``v`` from ``q0`` (its furthest point) [rad]."""
    return np.max((q - q0) * np.sign(v), axis=0)


def measure(key: str, payload: float, *, fraction: float = 0.95, seconds: float = 2.0,
            com: tuple[float, float, float] = (0.0, 0.0, 0.05)) -> BrakeRow:
    rig = SupRig(key, payload, com)
    try:
        rig.move(fraction)
        arm = rig.arm
        q0, v = rig.q[-1].copy(), rig.v[-1].copy()
        t0 = rig.clock.now()
        arm.stop()
        braking: Any = arm.supervisor.motion
        ramps: list[Braking] = [braking] if isinstance(braking, Braking) else []
        acc: list[np.ndarray] = []
        vcmd: list[np.ndarray] = []
        end = t0 + seconds
        while rig.clock.now() < end - 1e-9:
            rig.cycle()
            m = arm.supervisor.motion
            if isinstance(m, Braking) and (not ramps or m is not ramps[-1]):
                ramps.append(m)
            if isinstance(m, Braking) and arm.trajectory_state is not None:
                acc.append(np.asarray(arm.trajectory_state[2], dtype=float).copy())
            vcmd.append(arm.pending_command.velocity.copy())
        ramp = ramps[0].ramp
        a = np.asarray(ramp.deceleration, dtype=float)
        t, q = np.array(rig.t), np.array(rig.q)
        after = t >= t0
        moving = np.abs(v) > MOVING
        setting = int(np.argmax(np.abs(v) / a))
        t_star = float(np.max(np.abs(v) / a))
        travel = _travel(q[after], q0, v)
        ratio = float(travel[setting] / (v[setting] ** 2 / (2.0 * a[setting])))
        worst = float(np.max(travel[moving] / (np.abs(v[moving]) * t_star / 2.0))) if moving.any() else 0.0
        peak = float(np.max(np.abs(np.array(acc)) / a)) if acc else 0.0
        # the velocity command's change per cycle from the ramp's first command to the first one after it
        dv = np.diff(np.nan_to_num(np.array(vcmd)), axis=0) / arm.nominal_period
        peak_cmd = float(np.max(np.abs(dv[: int(np.searchsorted(t, ramps[-1].ramp.end_time)) + 1]) / a))
        still, ee_mm, _ = rig.figures(t0)
        pts = np.array([rig.ee(qi) for qi in q])
        rest = pts[-1]
        dist = np.linalg.norm(pts - rest, axis=1) * 1e3
        post = t >= ramps[0].ramp.end_time
        out = np.flatnonzero(post & (dist > SETTLE_MM))
        settle = float(t[out[-1]] - ramp.end_time) if out.size else 0.0
        ring = float(dist[post].max()) if post.any() else math.nan
        over = float(np.max(np.where(moving, (q[post] - ramp.target) * np.sign(v), -np.inf))) * 1e3
        return BrakeRow(key, payload, v, a, ratio, worst, peak, peak_cmd, ramp.duration, still,
                        settle, max(over, 0.0), ring, ee_mm, arm.model.joint_names[setting], ramp.taper_fraction)
    finally:
        rig.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1]:  # another end taper, to compare (benchmarks only)
        Brake.TAPER = float(sys.argv[1])
    logging.getLogger("hebictl").setLevel(logging.ERROR)
    print(f"stop() at 0.95x rated; travel from the true speed at the stop; standstill |v| < {STILL_V} rad/s")
    payloads = tuple(float(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 else PAYLOADS
    coms = [COM]
    if len(sys.argv) > 3:  # e.g. "0,0,0.05;0.05,0,0.05": each centre of mass [m, end-effector frame]
        coms = [tuple(float(x) for x in c.split(",")) for c in sys.argv[3].split(";")]
    for key in CONFIGS:
        for mass in payloads:
            for com in coms if mass > 0.0 else coms[:1]:
                row = measure(key, mass, com=com)  # type: ignore[arg-type]
                print(row.line() + (f"  com {com}" if len(coms) > 1 else ""), flush=True)


if __name__ == "__main__":
    main()
