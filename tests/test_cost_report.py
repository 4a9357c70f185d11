"""``pytest --cost-report FILE`` (tests/_support/cost.py) on a real pytest run: a test that sleeps
shows its sleep as wait, not CPU, and the figures reach the file from xdist workers too."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.paths import REPO_ROOT

SLEEPY = "tests/hardware/test_clock.py::test_paced_clock_waits_for_real_time"  # sleeps 0.05 s on the wall clock


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_sleeping_test_costs_wait_not_cpu(tmp_path: Path, workers: list[str]) -> None:
    report = tmp_path / "cost.tsv"
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/hardware/test_clock.py", "-q", "-p", "no:cacheprovider",
                        *(workers or ["-p", "no:xdist"]), "--cost-report", str(report)],
                       capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "top by cpu:" in r.stdout and "top by wait:" in r.stdout, r.stdout
    rows = {row["test"]: row for row in csv.DictReader(report.read_text().splitlines(), delimiter="\t")}
    assert len(rows) == 4 and not report.with_name("cost.tsv.partial").exists()
    sleepy = rows[SLEEPY]
    wall, cpu, wait = float(sleepy["wall_s"]), float(sleepy["cpu_s"]), float(sleepy["wait_s"])
    print(f"\n{SLEEPY} ({sleepy['worker']}): wall {wall:.3f} s, cpu {cpu:.3f} s, wait {wait:.3f} s")
    assert wall >= 0.049 and wait >= 0.045 and cpu < 0.02
    assert "top by peak memory rise" in r.stdout
    assert all(float(row["rss_mb"]) > 10 and float(row["peak_rise_mb"]) >= 0 for row in rows.values())
    assert {row["worker"] for row in rows.values()} <= ({"gw0", "gw1"} if workers else {"main"})
