"""Shared helpers for the benchmark scripts: medians of repeated timings, tables, paths."""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

# benchmarks time the compiled kernels: compile on first call (numba's way) rather than running
# them interpreted while a cold cache is filled in the background (hebictl.jit.cache)
os.environ.setdefault("HEBICTL_JIT", "eager")

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


def kit_path(name: str = "A-2085-06.hrdf") -> Path:
    """A HEBI kit from ../shared/corpus, or the bundled 6-DoF kit when the corpus is absent."""
    p = CORPUS / "hebi" / "hebi-hrdf" / name
    return p if p.exists() else REPO / "hrdf_kits" / "x-series-6dof.hrdf"


def import_hebi():
    with contextlib.redirect_stdout(io.StringIO()):
        import hebi
    return hebi


def median_us(fn: Callable[[], object], *, number: int = 2000, repeat: int = 7) -> float:
    """Median over ``repeat`` runs of the mean time per call [µs] of ``number`` calls."""
    fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t) / number * 1e6)
    return statistics.median(samples)


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for i, h in enumerate(header):
        t.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*r)
    Console().print(t)
