"""``hebictl follow``: flag checks before any arm opens, a recorded run and a run ended by keys on the
mock backend.

In process (``hebictl.cli.main``) and in simulated time: the command's clock is a SimClock (the test
puts it where the command takes its MonotonicClock from), so the run's 2.5 s are exact, the dataset's
frames follow from them, and a loaded machine cannot make the loop late (a ``control_gap`` fault)."""

from __future__ import annotations

import io
import json
import re

import pytest

from hebictl.cli import main
from hebictl.hardware import clock as clocks
from tests._support.extras import extra_missing
from tests._support.paths import REPO_ROOT

CONFIG = str(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")


@pytest.fixture
def simulated_time(monkeypatch):
    """``hebictl follow`` on a SimClock: its arms, loop and recorder read simulated time."""
    monkeypatch.setattr(clocks, "MonotonicClock", clocks.SimClock)


@pytest.mark.parametrize(("flags", "message"), [
    (["--record-dataset", "x"], "--record-dataset needs --task"),
    (["--max-step", "0"], "--max-step must be"),
    (["--align-threshold", "-1"], "--align-threshold must be"),
    (["--joint-map", "a,b"], "--joint-map"),
    (["--fps", "0"], "--fps must be"),
])
def test_bad_flags_are_one_line_and_exit_2(flags, message, capsys):
    assert main(["follow", CONFIG, *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_dataset_folder_that_is_not_empty_is_refused(tmp_path, capsys, simulated_time):
    pytest.importorskip("pyarrow", reason=extra_missing("pyarrow"))
    (tmp_path / "old.txt").write_text("x")
    assert main(["follow", CONFIG, "--seconds", "1", "--record-dataset", str(tmp_path), "--task", "t"]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "Traceback" not in err


def test_follow_on_the_mock_records_a_dataset(tmp_path, capsys, simulated_time):
    """2.5 simulated seconds: align, follow, and one healthy episode of the follow period at 50 fps
    (its frames: the follow period times the fps, to a frame)."""
    pq = pytest.importorskip("pyarrow.parquet", reason=extra_missing("pyarrow"))
    root = tmp_path / "demo"
    code = main(["follow", CONFIG, "--seconds", "2.5", "--record-dataset", str(root), "--task", "wave"])
    out = capsys.readouterr().out
    print(out)
    assert code == 0
    assert "aligning -> follow" in out and "episode 0:" in out and "0 missed, 0 safety events: healthy" in out
    aligned = float(re.search(r"^\s*([\d.]+) s\s+aligned", out, re.M).group(1))
    info = json.loads((root / "meta/info.json").read_text())
    table = pq.read_table(root / "data/chunk-000/file-000.parquet")
    assert info["total_episodes"] == 1 and info["total_frames"] == table.num_rows
    assert abs(table.num_rows - (2.5 - aligned) * 50) <= 1, (table.num_rows, aligned)
    assert table.column("action").type.list_size == 6


def test_keys_quit_the_run(capsys, monkeypatch, simulated_time):
    """With ``--keys`` and no ``--seconds`` only a signal or the ``q`` key ends the run: the keys are
    read from stdin (``f`` toggles following, ``q`` quits) and the run exits 0 with its exit event last.
    Where in the run the keys land depends on when the reader thread gets them, so not what ``f`` did."""
    monkeypatch.setattr("sys.stdin", io.StringIO("f\nq\n"))
    assert main(["follow", CONFIG, "--keys"]) == 0
    out = capsys.readouterr().out
    print(out)
    assert out.strip().splitlines()[-1].endswith("-> exit: exit"), out
