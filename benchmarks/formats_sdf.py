"""SDF benchmark: time to load the largest SDF models of the corpus, hebictl vs Drake, same run.

The five largest corpus SDF files (by size) that both hebictl and Drake accept are loaded
repeatedly; the table gives median milliseconds per load and the ratio hebictl/Drake (< 1:
hebictl faster). Drake (``Parser.AddModels`` + ``MultibodyPlant.Finalize``, which runs
libsdformat's full validation and builds the multibody tree) is timed by tools/ref_drake.py in a
subprocess; neither side registers geometry (no SceneGraph), so meshes are not read by either.
hebictl's first load of a process also compiles its kinematics kernels: one warm-up load per
file is excluded.

Run: ``.venv/bin/python benchmarks/formats_sdf.py`` (needs ../shared/corpus and the ``drake`` package).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from _common import CORPUS, REPO, table

from hebictl.formats.sdf import load_sdf

BUDGET_S = 1.5


def median_ms(fn: Callable[[], object], *, budget_s: float = BUDGET_S, at_least: int = 5) -> float:
    """Median wall time [ms] of repeated calls, within about ``budget_s`` seconds."""
    fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < at_least or (time.perf_counter() - start < budget_s and len(samples) < 200):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def largest_sdf_files(count: int = 5) -> list[Path]:
    """The largest corpus SDF robot files hebictl loads (specification files excluded)."""
    files = [f for f in (CORPUS / "sdf").rglob("*.sdf") if "/sdf/1." not in str(f)]
    out = []
    for f in sorted(files, key=lambda p: p.stat().st_size, reverse=True):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_sdf(f)
        except Exception:
            continue
        out.append(f)
        if len(out) == count * 2:
            break
    return out


def main() -> None:
    files = largest_sdf_files()
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "ref_drake.py"), "--time", str(BUDGET_S), "-"],
                          input="\n".join(map(str, files)), capture_output=True, text=True, check=True)
    drake = json.loads(proc.stdout)
    rows = []
    for f in files:
        ref = drake[str(f)]
        if not ref["ok"]:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = median_ms(lambda f=f: load_sdf(f))
            model = load_sdf(f)
        rows.append([str(f.relative_to(CORPUS / "sdf")), f"{f.stat().st_size / 1024:.0f}", str(len(model.bodies)),
                     f"{ours:.2f}", f"{ref['median_ms']:.2f}", f"{ours / ref['median_ms']:.2f}"])
        if len(rows) == 5:
            break
    table("SDF load time, median ms (hebictl/Drake < 1: hebictl faster)",
          ["file", "KiB", "bodies", "hebictl", "Drake", "ratio"], rows)


if __name__ == "__main__":
    main()
