"""Shared helpers for the benchmark scripts: medians of repeated timings, tables, paths."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import statistics
import subprocess
import sys
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


BUSY = "while True: pass"
ALLOC = "import time\nwhile True:\n    b = bytearray(64 << 20)\n    b[::4096] = b'x' * len(b[::4096])\n    del b\n"


class StandardLoad:
    """The standard load of issue 29's latency benchmark: two busy processes and one that allocates and
    frees memory, started and ended by PID (loop_latency.py, teleop.py --standard-load)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> StandardLoad:
        for code in (BUSY, BUSY, ALLOC):
            self.procs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait(10)
        self.procs.clear()
