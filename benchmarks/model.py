"""Model benchmark: hebictl vs hebi-py and pinocchio on the A-2085-06 kit, measured in the same run.

Prints median µs per call for FK, end-effector Jacobian, gravity and dynamics compensation and
the ratio hebictl/hebi-py (< 1: hebictl faster); then, when pinocchio is installed, the same four
single calls against pinocchio reading hebictl's own URDF export of the kit; then the
per-configuration cost of one batched call over B = 10,000 configurations against hebi-py's
per-call loop. Last, where a single call's time goes (``--breakdown`` only: a public call against
its kernel's compiled entry point, numba's dispatcher, an empty kernel with as many arguments, and
the output's allocation).
Targets: gravity single call <= 1.5x hebi-py (issue 2); batched throughput >= 20x hebi-py;
gravity, RNEA, FK of all frames and the end-effector Jacobian within 2x pinocchio (issue 22).

The pinocchio rows interleave the two sides in short blocks (``ROUNDS`` rounds of ``BLOCK``
calls each) and report the median of each side and the median of the per-round ratios: on a
shared machine the load changes within seconds, and adjacent blocks see the same load.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from _common import import_hebi, kit_path, median_us, table

import hebictl
from hebictl.model.robot import RobotModel

#: interleaved rounds and calls per block of the pinocchio comparison
ROUNDS = 41
BLOCK = 500


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
    vs_pinocchio(ours, q, g)

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
    if "--breakdown" in sys.argv:
        breakdown(ours, q, g)


def breakdown(ours: RobotModel, q: np.ndarray, g: np.ndarray) -> None:
    """Where a single gravity call's time goes: the public call (input checks, output allocation,
    the kernel's compiled entry point), the unchecked ``_into`` call (numba's dispatcher, no checks,
    no allocation), an empty kernel with as many array arguments (dispatch and unboxing only, and
    unboxing only through its entry point), and numpy's allocation and input check."""
    import numba

    tau = np.empty(ours.nv)

    @numba.njit
    def nothing4(a, b, c, d):  # four arrays like gravity(q, g, packed model, out), no arithmetic
        return None

    args = (q, g, np.zeros((8, 3, 3)), tau)
    nothing4(*args)
    entry = nothing4.get_overload(nothing4.signatures[0])
    rows = [[name, f"{median_us(fn):.3f}"] for name, fn in (
        ("gravity_compensation(q, g): public, checked, allocates", lambda: ours.gravity_compensation(q, g)),
        ("gravity_compensation_into(q, g, out): numba's dispatcher", lambda: ours.gravity_compensation_into(q, g, tau)),
        ("empty kernel, 4 arrays, numba's dispatcher", lambda: nothing4(*args)),
        ("empty kernel, 4 arrays, compiled entry point", lambda: entry(*args)),
        ("np.empty(nv): the output", lambda: np.empty(ours.nv)),
        ("np.ascontiguousarray(q, float64): the check a list or strided q still gets",
         lambda: np.ascontiguousarray(q, np.float64)),
    )]
    table("where a single gravity call's time goes: median µs", ["step", "µs"], rows)


def vs_pinocchio(ours: RobotModel, q: np.ndarray, g: np.ndarray) -> None:
    """The four single calls against pinocchio on hebictl's URDF export of the same kit (skipped without it)."""
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio not installed: no comparison against it (pip install pin)")
        return
    from hebictl.formats import convert

    pm = pin.buildModelFromXML(convert(ours, "urdf"))
    pm.gravity = pin.Motion(g, np.zeros(3))  # (linear, angular)
    pd = pm.createData()
    qp = np.zeros(pm.nq)  # continuous joints are (cos, sin) in pinocchio
    for joint, x in zip(pm.joints[1:], q, strict=True):
        qp[joint.idx_q:joint.idx_q + joint.nq] = [np.cos(x), np.sin(x)] if joint.nq == 2 else [x]
    ee = ours.frame_names("end_effector")[0]
    fid = pm.getFrameId(ee) if ee and pm.existFrame(ee) else pm.nframes - 1
    # the same numbers first: the two libraries agree on the kit's dynamics
    d_grav = np.abs(ours.gravity_compensation(q, g) - pin.computeGeneralizedGravity(pm, pd, qp)).max()
    d_rnea = np.abs(ours.inverse_dynamics(q, q, q, g) - pin.rnea(pm, pd, qp, q, q)).max()
    fk_into = np.empty((ours.frame_count("output"), 4, 4))
    cases = [
        ("gravity", lambda: ours.gravity_compensation(q, g), lambda: pin.computeGeneralizedGravity(pm, pd, qp)),
        ("RNEA", lambda: ours.inverse_dynamics(q, q, q, g), lambda: pin.rnea(pm, pd, qp, q, q)),
        (f"FK of all frames ({ours.frame_count('output')} / {pm.nframes})",
         lambda: ours.forward_kinematics(q, "output"), lambda: pin.framesForwardKinematics(pm, pd, qp)),
        # the same work as pinocchio's: frames written into storage that exists (pinocchio's Data, our out=)
        ("FK of all frames, into an array (out=)",
         lambda: ours.forward_kinematics(q, "output", out=fk_into), lambda: pin.framesForwardKinematics(pm, pd, qp)),
        ("end-effector Jacobian", lambda: ours.jacobian_end_effector(q),
         lambda: pin.computeFrameJacobian(pm, pd, qp, fid, pin.LOCAL_WORLD_ALIGNED)),
    ]
    rows = []
    for name, a, b in cases:
        ta, tb, ratio = interleaved_us(a, b)
        rows.append([name, f"{ta:.2f}", f"{tb:.2f}", f"{ratio:.2f}x", "yes" if ratio <= 2.0 else "NO"])
    table(f"single call vs pinocchio {pin.__version__} (hebictl's URDF export): median µs, {ROUNDS} interleaved "
          f"rounds of {BLOCK} calls; |Δ| gravity {d_grav:.1e}, RNEA {d_rnea:.1e} N·m",
          ["query", "hebictl", "pinocchio", "ratio (median of rounds)", "<= 2x"], rows)


def interleaved_us(a: Callable[[], object], b: Callable[[], object]) -> tuple[float, float, float]:
    """(median µs per call of a, of b, median of the per-round ratios a/b), a and b timed alternately."""
    a()
    b()
    ta, tb = [], []
    for _ in range(ROUNDS):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            for _ in range(BLOCK):
                fn()
            out.append((time.perf_counter() - t) / BLOCK * 1e6)
    return statistics.median(ta), statistics.median(tb), statistics.median(x / y for x, y in zip(ta, tb, strict=True))


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
