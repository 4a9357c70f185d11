"""Model benchmark: hebictl vs hebi-py on the A-2085-06 kit, measured in the same run.

Prints median µs per call for FK, end-effector Jacobian, gravity and dynamics compensation and
the ratio hebictl/hebi-py (< 1: hebictl faster), then the per-configuration cost of one batched
call over B = 10,000 configurations against hebi-py's per-call loop.
Targets (issue 2): gravity single call <= 1.5x hebi-py; batched throughput >= 20x hebi-py.
"""

from __future__ import annotations

import time

import numpy as np
from _common import import_hebi, kit_path, median_us, table

import hebictl


def main() -> None:
    hebi = import_hebi()
    path = kit_path()
    ours = hebictl.load_model(path)
    ref = hebi.robot_model.import_from_hrdf(str(path))
    rng = np.random.default_rng(0)
    q = rng.uniform(-np.pi, np.pi, ours.dof)
    g = np.array([0.0, 0.0, -9.81])
    out_fk = np.zeros((ref.get_frame_count("output"), 4, 4))
    out_j = np.zeros((6, ours.dof))
    zeros = np.zeros(ours.dof)
    cases = [
        ("FK (all output frames)", lambda: ours.forward_kinematics(q, "output"),
         lambda: ref.get_forward_kinematics_mat("output", q, output=out_fk)),
        ("end-effector Jacobian", lambda: ours.jacobian_end_effector(q),
         lambda: ref.get_jacobian_end_effector(q, output=out_j)),
        ("gravity compensation", lambda: ours.gravity_compensation(q, g),
         lambda: ref.get_grav_comp_efforts(q, g)),
        ("dynamics compensation / RNEA", lambda: ours.inverse_dynamics(q, q, q, g),
         lambda: ref.get_dynamic_comp_efforts(q, q, zeros, q)),
    ]
    rows = []
    for name, a, b in cases:
        ta, tb = median_us(a), median_us(b)
        rows.append([name, f"{ta:.2f}", f"{tb:.2f}", f"{ta / tb:.2f}x"])
    table(f"single call on {path.name} ({ours.dof} DoF, {len(ours.bodies)} bodies): median µs",
          ["query", "hebictl", "hebi-py", "ratio"], rows)

    B = 10_000
    Q = rng.uniform(-np.pi, np.pi, (B, ours.dof))
    # both sides reuse their output buffers (hebi-py's ``output=``, hebictl's ``out=``)
    fk_out = np.empty((B, ref.get_frame_count("output"), 4, 4))
    jac_out = np.empty((B, 1, 6, ours.dof))
    batched = []
    for name, ours_fn, ref_fn in [
        ("FK", lambda: ours.forward_kinematics(Q, "output", out=fk_out),
         lambda: [ref.get_forward_kinematics_mat("output", x, output=out_fk) for x in Q]),
        ("gravity compensation", lambda: ours.gravity_compensation(Q, g),
         lambda: [ref.get_grav_comp_efforts(x, g) for x in Q]),
        ("end-effector Jacobian", lambda: ours.jacobians(Q, "end_effector", out=jac_out),
         lambda: [ref.get_jacobian_end_effector(x, output=out_j) for x in Q]),
    ]:
        ours_fn()
        t_ours = min(_time(ours_fn) for _ in range(5)) / B * 1e6
        t_ref = min(_time(ref_fn) for _ in range(2)) / B * 1e6
        batched.append([name, f"{t_ours:.3f}", f"{t_ref:.3f}", f"{t_ref / t_ours:.1f}x"])
    table(f"batched, B = {B}: µs per configuration", ["query", "hebictl batch", "hebi-py loop", "throughput gain"],
          batched)


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
