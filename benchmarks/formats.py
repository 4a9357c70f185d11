"""Format benchmark: time to load the largest URDF and MJCF models of the corpus, hebictl vs references.

For each format, the three largest files (by size) that both hebictl and the reference accept
are loaded repeatedly in the same run; the table gives median milliseconds per load and the
ratio hebictl/reference (< 1: hebictl faster). References: pinocchio's ``buildModelFromUrdf``
and MuJoCo's ``MjModel.from_xml_path`` (which also compiles collision and rendering data that
hebictl does not build, so the comparison favours hebictl on MJCF; pinocchio builds a
kinematic/inertial model like hebictl). The first hebictl load of a process also compiles its
kinematics kernels; it is excluded (one warm-up load per file).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from _common import CORPUS, table

from hebictl.formats.mjcf import load_mjcf
from hebictl.formats.urdf import load_urdf


def median_ms(fn: Callable[[], object], *, budget_s: float = 1.5, at_least: int = 5) -> float:
    """Median wall time [ms] of repeated calls, within about ``budget_s`` seconds."""
    fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < at_least or time.perf_counter() - start < budget_s:
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
        if len(samples) >= 200:
            break
    return statistics.median(samples)


def quiet(fn: Callable[[], object]) -> Callable[[], object]:
    """Silence warnings (missing meshes) and C++ chatter on stderr (urdfdom) while timing."""
    def run() -> object:
        fd = os.dup(2)
        with tempfile.TemporaryFile() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(tmp.fileno(), 2)
            try:
                return fn()
            finally:
                os.dup2(fd, 2)
                os.close(fd)
    return run


def largest(files: list[Path], ours: Callable[[Path], object], ref: Callable[[Path], object],
            count: int = 3) -> list[Path]:
    out = []
    for p in sorted(files, key=lambda f: f.stat().st_size, reverse=True):
        try:
            quiet(lambda p=p: ours(p))()
            quiet(lambda p=p: ref(p))()
        except Exception:  # a file either side refuses is not a benchmark case
            continue
        out.append(p)
        if len(out) == count:
            break
    return out


def main() -> None:
    import mujoco
    import pinocchio as pin

    rows = []
    cases = [
        ("URDF", sorted((CORPUS / "urdf").rglob("*.urdf")), load_urdf, "pinocchio",
         lambda p: pin.buildModelFromUrdf(str(p))),
        ("MJCF", sorted((CORPUS / "mjcf").rglob("*.xml")), load_mjcf, "MuJoCo",
         lambda p: mujoco.MjModel.from_xml_path(str(p))),
    ]
    for fmt, files, ours, ref_name, ref in cases:
        for p in largest(files, ours, ref):
            model = quiet(lambda p=p, ours=ours: ours(p))()
            t_ours = median_ms(quiet(lambda p=p, ours=ours: ours(p)))
            t_ref = median_ms(quiet(lambda p=p, ref=ref: ref(p)))
            rows.append([f"{fmt} {p.name}", f"{p.stat().st_size / 1024:.0f} KiB", str(len(model.bodies)),
                         str(model.dof), f"{t_ours:.2f}", f"{ref_name} {t_ref:.2f}", f"{t_ours / t_ref:.2f}"])
    table("Load time, median ms per file (same run)",
          ["file", "size", "bodies", "dof", "hebictl", "reference", "ratio"], rows)


if __name__ == "__main__":
    main()
