"""``hebictl follow``: flag checks before any arm opens, a recorded run and a run ended by keys on the
mock backend.

In process (``hebictl.cli.main``) and in simulated time: the command's clock is a SimClock (the test
puts it where the command takes its MonotonicClock from), so the run's 2.5 s are exact, the dataset's
frames follow from them, and a loaded machine cannot make the loop late (a ``control_gap`` fault)."""

from __future__ import annotations

import io
import json
import queue
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

    from hebictl.cli.follow_cmd import ButtonCommands, DemoRecorder, follow_loop
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
        follow_loop(lf, clock, rec, 30.0, queue.Queue(), ButtonCommands(device))
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


# ---------------------------------------------------------------- a multi-arm config: two named arms


def test_a_multi_arm_config_names_its_leader_and_follower(tmp_path, capsys):
    """Wrong or missing names, a second config after a multi-arm config, --leader with a robot config:
    one line each naming what to give, exit 2, before any arm opens."""
    from tests._support.multi import pair_config

    pair = str(pair_config(tmp_path, REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"))   # arms left, right
    for argv, words in (([pair], "(its arms: left, right); name the leader and the follower with --leader"),
                        ([pair, "--leader", "left"], "--follower follower: no such arm"),
                        ([pair, "--leader", "left", "--follower", "left"], "both left"),
                        ([pair, CONFIG, "--leader", "left", "--follower", "right"], "not a second config"),
                        ([CONFIG, "--leader", "left"], "is a robot config")):
        assert main(["follow", *argv, "--seconds", "1"]) == 2, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_a_multi_arm_config_with_a_base_is_refused_before_any_arm_opens(capsys):
    assert main(["follow", str(REPO_ROOT / "configs" / "x-series-6dof-omni-base.multi.yaml"), "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert "names a mobile base (base): follow does not run a base" in err and "Traceback" not in err, err


def test_follow_on_a_multi_arm_config_in_one_sim_scene(tmp_path, capsys, simulated_time):
    """``hebictl follow PAIR.multi.yaml --backend sim``: the arms named leader and follower by default,
    built in one scene; the follower aligns and follows, exit 0 (2.5 simulated seconds)."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    from tests._support.multi import pair_config

    pair = pair_config(tmp_path, REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml", names=("leader", "follower"))
    code = main(["follow", str(pair), "--backend", "sim", "--seconds", "2.5"])
    out = capsys.readouterr().out
    print(out)
    assert code == 0 and "aligning -> follow" in out, out
    lr = pair_config(tmp_path, REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")
    code = main(["follow", str(lr), "--leader", "right", "--follower", "left", "--backend", "sim", "--seconds", "2.5"])
    out = capsys.readouterr().out
    assert code == 0 and "aligning -> follow" in out, out
