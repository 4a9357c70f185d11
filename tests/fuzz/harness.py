"""Fuzz harness: mutated inputs run in worker processes with a per-input time limit and memory cap.

A worker (spawned, so no inherited threads or locks) loads one mutated input at a time under
``RLIMIT_AS`` and reports how it ended. The parent kills and respawns a worker that overruns the
time limit (a hang) or dies (a crash). An input passes if it ends in a
:class:`~hebictl.errors.HebictlError` or in a model whose gravity compensation is finite; every
other outcome is a finding, reported with what is needed to rebuild the input (seed file, run
seed, index). Run the long campaign with ``python -m tests.fuzz.harness --inputs 100000``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from tests.fuzz.mutate import REPO, Seed, collect_seeds, make_case

GIB = 1024**3


@dataclass
class Outcome:
    """How one input ended: ``status`` is ok/hebictl (passes) or exception/nonfinite/hang/memory/crash."""

    status: str
    exc_type: str = ""
    message: str = ""
    where: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    inputs: int = 0
    seconds: float = 0.0
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    findings: list[tuple[str, int, list[str], Outcome]] = field(default_factory=list)
    slowest: float = 0.0
    slowest_case: str = ""
    retried: list[str] = field(default_factory=list)
    last_message: str = ""

    def distinct(self) -> dict[tuple[str, str, str], tuple[str, int, list[str], Outcome]]:
        """One finding per (status, exception type, raising location)."""
        out: dict[tuple[str, str, str], tuple[str, int, list[str], Outcome]] = {}
        for f in self.findings:
            out.setdefault((f[3].status, f[3].exc_type, f[3].where), f)
        return out

    def summary(self) -> str:
        lines = [f"{self.inputs} inputs in {self.seconds:.1f} s; outcomes {dict(self.statuses)}; "
                 f"slowest passing input {self.slowest:.2f} s ({self.slowest_case}); {len(self.findings)} findings, "
                 f"{len(self.distinct())} distinct"]
        for line in self.retried:
            lines.append(f"  over the time limit under load, retried alone: {line}")
        for (status, exc, where), (seed, index, muts, o) in self.distinct().items():
            lines.append(f"  {status} {exc} at {where}: {o.message[:160]!r} <- {seed} #{index} {muts}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- worker side


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _mirror(workdir: Path, seed: Seed) -> Path:
    """A folder holding symlinks to the seed's siblings, so relative references still resolve."""
    folder = workdir / f"m{abs(hash(str(seed.fuzzed.parent))) % 10**12}"
    if not folder.exists():
        folder.mkdir()
        for entry in seed.fuzzed.parent.iterdir():
            (folder / entry.name).symlink_to(entry)
    return folder


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/hebictl/" in f.filename]
    f = frames[-1] if frames else (traceback.extract_tb(exc.__traceback__) or [None])[-1]
    return "?" if f is None else f"{Path(f.filename).name}:{f.lineno}"


def run_one(seed: Seed, data: bytes, workdir: Path) -> Outcome:
    """Load one mutated input in this process and classify how it ended."""
    import numpy as np

    import hebictl
    from hebictl.errors import HebictlError

    folder = _mirror(workdir, seed)
    target = folder / seed.fuzzed.name
    target.unlink(missing_ok=True)
    target.write_bytes(data)
    load = folder / seed.load.name
    start = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if seed.kind == "config":
                hebictl.load_config(load)
            elif seed.kind == "gains":
                hebictl.load_gains(load)
            else:
                roots = {"allowed_roots": [seed.fuzzed.parent]} if "allowed_roots" in inspect.signature(
                    hebictl.load_model).parameters else {}
                model = hebictl.load_model(load, **roots)
                g = model.gravity_compensation(model.neutral_configuration())
                if not np.all(np.isfinite(g)):
                    return Outcome("nonfinite", "", f"gravity compensation {g[:6]}", "", time.monotonic() - start)
    except HebictlError as exc:
        if "bug in hebictl's reader" in str(exc):  # load_model's last line of defence caught something
            cause = exc.__cause__ or exc
            return Outcome("wrapped", type(cause).__name__, str(cause)[:300], _where(cause), time.monotonic() - start)
        return Outcome("hebictl", type(exc).__name__, str(exc)[:500], "", time.monotonic() - start)
    except MemoryError as exc:
        return Outcome("memory", "MemoryError", str(exc)[:300], _where(exc), time.monotonic() - start)
    except BaseException as exc:  # the point of the harness: anything else is a finding
        return Outcome("exception", type(exc).__name__, str(exc)[:300], _where(exc), time.monotonic() - start)
    finally:
        target.unlink(missing_ok=True)
        (folder / seed.fuzzed.name).symlink_to(seed.fuzzed)
    return Outcome("ok", seconds=time.monotonic() - start)


def _worker(conn: Connection, mem_cap: int) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import hebictl.formats  # noqa: F401 - import before the cap: imports are not what we measure

    workdir = Path(tempfile.mkdtemp(prefix="hebictl-fuzz-"))
    # warm-up: the numba kernels compile (or load their cache) before the memory cap applies
    kit = REPO / "hrdf_kits" / "x-series-6dof.hrdf"
    run_one(Seed(kit, kit, "model"), kit.read_bytes(), workdir)
    limit = _vm_bytes() + mem_cap
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send("ready")
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                break
            seed, data = msg
            conn.send(run_one(seed, data, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class Pool:
    """Worker processes fed one input at a time; a worker past its deadline is killed and replaced."""

    def __init__(self, workers: int, mem_cap: int) -> None:
        self.ctx = mp.get_context("spawn")
        self.mem_cap = mem_cap
        self.procs: list[tuple[Any, Connection]] = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> tuple[Any, Connection]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child, self.mem_cap), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(300) or parent.recv() != "ready":
            raise RuntimeError("fuzz worker did not start")
        return proc, parent

    def run(self, cases: list[tuple[str, int, list[str], Seed, bytes]], timeout: float, report: Report) -> None:
        """Run every case; one past ``timeout`` is retried once alone in a fresh worker with 3x the time
        (the machine may be busy), and only a second overrun is a hang; the retried ones are listed."""
        pending = collections.deque((case, timeout) for case in cases)
        busy: dict[int, tuple[tuple[str, int, list[str], Seed, bytes], float, float]] = {}
        while pending or busy:
            for i, (_, conn) in enumerate(self.procs):
                retrying = any(limit > timeout for _, _, limit in busy.values())
                if i not in busy and pending and not retrying and (pending[0][1] == timeout or not busy):
                    case, limit = pending.popleft()
                    conn.send((case[3], case[4]))
                    busy[i] = (case, time.monotonic(), limit)
            ready = wait([self.procs[i][1] for i in busy], timeout=0.2)
            now = time.monotonic()
            for i in list(busy):
                proc, conn = self.procs[i]
                case, started, limit = busy[i]
                outcome = None
                if conn in ready:
                    try:
                        outcome = conn.recv()
                    except (EOFError, OSError):
                        outcome = Outcome("crash", "", f"worker died (exit code {proc.exitcode})", "")
                elif now - started > limit:
                    outcome = Outcome("hang", "", f"no result within {limit:g} s", "")
                if outcome is None:
                    continue
                del busy[i]
                if outcome.status in ("hang", "crash"):
                    proc.kill()
                    proc.join()
                    self.procs[i] = self._spawn()
                if outcome.status == "hang" and limit == timeout:
                    pending.appendleft((case, 3 * timeout))
                    continue
                if limit > timeout:
                    report.retried.append(f"{case[0]} #{case[1]} {case[2]}: {outcome.status} in "
                                          f"{outcome.seconds:.2f} s alone")
                report.inputs += 1
                report.statuses[outcome.status] += 1
                report.last_message = outcome.message
                if outcome.status in ("ok", "hebictl"):
                    if outcome.seconds > report.slowest:
                        report.slowest, report.slowest_case = outcome.seconds, f"{case[0]} #{case[1]} {case[2]}"
                else:
                    report.findings.append((case[0], case[1], case[2], outcome))

    def close(self) -> None:
        for proc, conn in self.procs:
            with contextlib.suppress(OSError):
                conn.send(None)
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def campaign(inputs: int, run_seed: int = 0, workers: int = 2, timeout: float = 5.0, mem_cap: int = 2 * GIB,
             corpus: Path | None = None, max_seed_bytes: int | None = None) -> Report:
    """Run ``inputs`` mutated inputs, spread evenly over the seeds, and return what happened.

    ``max_seed_bytes`` leaves out larger seed files (the short run skips MuJoCo's 1-2 MB benchmarks,
    which take seconds each on a busy machine). ``corpus=None`` fuzzes the bundled kits and configs
    only (the corpus may be absent, or hidden by HEBICTL_CORPUS=none)."""
    scratch = Path(tempfile.mkdtemp(prefix="hebictl-fuzz-seeds-"))
    try:
        seeds = [s for s in collect_seeds(corpus, scratch / "meshes")
                 if max_seed_bytes is None or s.fuzzed.stat().st_size <= max_seed_bytes]
        cases = []
        for index in range(inputs):
            seed = seeds[index % len(seeds)]
            data, names = make_case(seed, index, run_seed)
            label = (str(seed.fuzzed.relative_to(corpus)) if corpus is not None and seed.fuzzed.is_relative_to(corpus)
                     else seed.fuzzed.name)
            cases.append((label, index, names, seed, data))
        report = Report()
        start = time.monotonic()
        pool = Pool(workers, mem_cap)
        try:
            pool.run(cases, timeout, report)
        finally:
            pool.close()
        report.seconds = time.monotonic() - start
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=int(os.environ.get("HEBICTL_FUZZ", "20000") or 20000))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    args = parser.parse_args(argv)
    report = campaign(args.inputs, args.seed, args.workers, args.timeout, corpus=args.corpus)
    print(report.summary())
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
