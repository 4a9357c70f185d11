"""``hebictl follow``: flag checks before any arm opens, and a recorded run on the mock backend."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests._support.extras import extra_missing
from tests._support.paths import REPO_ROOT

CONFIG = str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")


def hebictl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hebictl", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT, check=False)


@pytest.mark.parametrize(("flags", "message"), [
    (["--record-dataset", "x"], "--record-dataset needs --task"),
    (["--max-step", "0"], "--max-step must be"),
    (["--align-threshold", "-1"], "--align-threshold must be"),
    (["--joint-map", "a,b"], "--joint-map"),
    (["--fps", "0"], "--fps must be"),
])
def test_bad_flags_are_one_line_and_exit_2(flags, message):
    out = hebictl("follow", CONFIG, *flags)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_dataset_folder_that_is_not_empty_is_refused(tmp_path):
    pytest.importorskip("pyarrow", reason=extra_missing("pyarrow"))
    (tmp_path / "old.txt").write_text("x")
    out = hebictl("follow", CONFIG, "--seconds", "1", "--record-dataset", str(tmp_path), "--task", "t")
    assert out.returncode == 2 and "not empty" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.realtime
def test_follow_on_the_mock_records_a_dataset(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason=extra_missing("pyarrow"))
    root = tmp_path / "demo"
    out = hebictl("follow", CONFIG, "--seconds", "2.5", "--record-dataset", str(root), "--task", "wave")
    print(out.stdout)
    assert out.returncode == 0, out.stderr
    assert "aligning -> follow" in out.stdout and "episode 0:" in out.stdout
    info = json.loads((root / "meta/info.json").read_text())
    table = pq.read_table(root / "data/chunk-000/file-000.parquet")
    assert info["total_episodes"] == 1 and info["total_frames"] == table.num_rows > 10
    assert table.column("action").type.list_size == 6


@pytest.mark.realtime
def test_keys_quit_the_run_early():
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "hebictl", "follow", CONFIG, "--seconds", "60", "--keys"],
                         input="f\nq\n", capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, check=False)
    took = time.monotonic() - start
    print(f"quit by key after {took:.1f} s (of --seconds 60)")
    assert out.returncode == 0, out.stderr
    assert took < 40 and "exit" in out.stdout
