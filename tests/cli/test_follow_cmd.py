"""``hebictl follow``: flag checks before any arm opens, and a recorded run on the mock backend."""

from __future__ import annotations

import json
import queue
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


def test_keys_quit_the_run_early():
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "hebictl", "follow", CONFIG, "--seconds", "60", "--keys"],
                         input="f\nq\n", capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, check=False)
    took = time.monotonic() - start
    print(f"quit by key after {took:.1f} s (of --seconds 60)")
    assert out.returncode == 0, out.stderr
    assert took < 40 and "exit" in out.stdout


def _presses(*times_buttons: tuple[float, list[int]]) -> list:
    from hebictl.inputs.state import InputState

    return [InputState(t, tuple(b), (0.0,) * 8) for t, b in times_buttons]


def test_input_buttons_follow_discard_rerecord_and_quit_in_simulated_time(tmp_path):
    """``hebictl follow --input``: an input device's presses are the keys' commands (B1 follow/stop,
    B2 discard, B3 re-record, B8 quit), each once per press, a button held from the first sample is
    no press, and the device's LED follows the state. Two arms on the mock on one SimClock, a scripted
    device (the same TimedSource ``--input script:`` opens): what is saved is exact."""
    pq = pytest.importorskip("pyarrow.parquet", reason=extra_missing("pyarrow"))
    import numpy as np

    from hebictl.cli.follow_cmd import ButtonCommands, DemoRecorder, _loop
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.follow import LeaderFollower
    from hebictl.datasets import LeRobotWriter
    from hebictl.hardware.clock import SimClock
    from hebictl.inputs.sources import TimedSource

    class Device(TimedSource):
        def indicate(self, led, text):
            self.shown.append(led)

    cfg = load_config(CONFIG)
    clock = SimClock()
    home = np.array(cfg.user_data["home_position"], dtype=float)
    leader = Arm.from_config(cfg, backend="mock", clock=clock, initial_position=home)
    follower = Arm.from_config(cfg, backend="mock", clock=clock, initial_position=home)
    up, b = [0] * 8, lambda i: [int(k == i - 1) for k in range(8)]
    device = Device(_presses((0.0, b(4)), (0.2, up), (1.5, b(2)), (1.6, up), (2.5, b(1)), (2.6, up), (2.8, b(1)),
                             (2.9, b(1)), (3.0, up), (4.5, b(3)), (4.6, up), (5.5, b(8))), name="script")
    device.shown = []
    writer = LeRobotWriter(tmp_path / "demo", fps=50, joint_names=follower.model.joint_names, task="t")
    try:
        lf = LeaderFollower(leader, follower)
        rec = DemoRecorder(writer, lf)
        _loop(lf, clock, rec, 30.0, queue.Queue(), ButtonCommands(device))
        writer.close()
    finally:
        leader.close()
        follower.close()
    kinds = [e.kind for e in lf.events]
    eps = pq.read_table(tmp_path / "demo/meta/episodes/chunk-000/file-000.parquet").to_pydict()
    print(f"\nevents {kinds}; LEDs {device.shown}; episodes {eps['length']} frames; "
          f"quit at {clock.now():.2f} s")
    # B4 held from the start is no clear; B2 at 1.5 s dropped the first episode, B1 at 2.5 s saved the
    # second (1.5-2.5 s: 50 frames); B1 at 2.8 s (held to 3.0 s: one press) followed again, B3 at 4.5 s
    # dropped that episode and recorded again until B8 quit at 5.5 s (50 frames)
    assert kinds.count("follow") == 2 and kinds.count("stop") == 1 and "clear" not in kinds
    assert eps["episode_index"] == [0, 1] and all(abs(n - 50) <= 1 for n in eps["length"])
    assert clock.now() < 6.0 and device.shown[:1] == ["yellow"] and "green" in device.shown
