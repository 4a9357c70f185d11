"""LeRobot v3.0 datasets from hebictl.datasets, read back with pyarrow and checked against the format.

The reference is LeRobot's own code (lerobot 0.4.4, ``lerobot/datasets/utils.py``:
``create_empty_dataset_info``'s keys, ``DEFAULT_FEATURES``, ``DEFAULT_DATA_PATH``; ``lerobot_dataset.py``:
the episodes' columns, ``save_episode_tasks``' tasks frame; ``compute_stats.py``: the stat names). The
last test loads the dataset with the real ``lerobot`` package from a separate venv
(``HEBICTL_LEROBOT_PYTHON``: lerobot needs numpy 2 and torch, which hebictl's venv cannot hold).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hebictl.datasets import Frame, LeRobotWriter
from hebictl.errors import UsageError
from hebictl.hardware import SimClock
from tests._support.extras import extra_missing

pa = pytest.importorskip("pyarrow", reason=extra_missing("pyarrow"))
pq = pytest.importorskip("pyarrow.parquet", reason=extra_missing("pyarrow"))

JOINTS = ["base", "shoulder", "elbow", "wrist1", "wrist2", "wrist3"]
#: LeRobot 0.4.4 create_empty_dataset_info(): every key of a fresh meta/info.json
LEROBOT_INFO_KEYS = {"codebase_version", "robot_type", "total_episodes", "total_frames", "total_tasks",
                     "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "fps", "splits",
                     "data_path", "video_path", "features"}
#: LeRobot's episodes parquet: what _save_episode_data and save_episode put in each row
LEROBOT_EPISODE_COLUMNS = {"episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
                           "dataset_from_index", "dataset_to_index", "meta/episodes/chunk_index",
                           "meta/episodes/file_index"}
LEROBOT_STATS = {"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}
ARROW_TYPE = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}
CONTROL_HZ, FPS = 200, 50


def frame_at(t: float) -> Frame:
    q = np.sin(t + np.arange(len(JOINTS)))
    return Frame(position=q, velocity=np.cos(t + np.arange(len(JOINTS))), effort=0.5 * q, action=q + 0.01,
                 contact=1.0 < t % 4.0 < 1.2, hold=False, tracking_error=0.01)


def run_episode(writer: LeRobotWriter, clock: SimClock, seconds: float, period: float = 1.0 / CONTROL_HZ) -> None:
    """One episode fed by a control loop of ``period`` on a simulated clock."""
    writer.start_episode(clock.now())
    end = clock.now() + seconds
    while clock.now() < end - 1e-12:
        writer.offer(clock.now(), frame_at(clock.now()))
        clock.advance(period)


def make_dataset(root: Path) -> LeRobotWriter:
    """Three saved episodes (2 s, 1 s, 1.5 s), one discarded and one re-recorded between them."""
    clock = SimClock()
    w = LeRobotWriter(root, fps=FPS, joint_names=JOINTS, task="pick the cube")
    run_episode(w, clock, 2.0)
    w.stop_episode()
    run_episode(w, clock, 0.7)
    assert w.discard_episode() == 35
    run_episode(w, clock, 3.0)
    w.stop_episode()
    assert w.rerecord(clock.now()) == 1                 # the 3 s episode is dropped and recorded again
    end = clock.now() + 1.0
    while clock.now() < end - 1e-12:
        w.offer(clock.now(), frame_at(clock.now()))
        clock.advance(1.0 / CONTROL_HZ)
    w.stop_episode()
    w.start_episode(clock.now(), task="place the cube")
    for _ in range(int(1.5 * CONTROL_HZ)):
        w.offer(clock.now(), frame_at(clock.now()))
        clock.advance(1.0 / CONTROL_HZ)
    w.close()
    return w


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ds") / "demo"
    make_dataset(root)
    return root


def test_layout_and_info_json_have_lerobots_keys(dataset):
    info = json.loads((dataset / "meta/info.json").read_text())
    assert set(info) == LEROBOT_INFO_KEYS
    assert info["codebase_version"] == "v3.0" and info["fps"] == FPS
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["total_episodes"] == 3 and info["total_frames"] == 100 + 50 + 75 and info["total_tasks"] == 2
    assert info["splits"] == {"train": "0:3"}
    for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):   # DEFAULT_FEATURES
        assert info["features"][key]["shape"] == [1] and info["features"][key]["names"] is None
    assert info["features"]["observation.state"]["shape"] == [3 * len(JOINTS)]
    assert info["features"]["observation.state"]["names"][len(JOINTS)] == "base.vel"
    assert info["features"]["action"]["shape"] == [len(JOINTS)]
    for rel in ("data/chunk-000/file-000.parquet", "meta/episodes/chunk-000/file-000.parquet",
                "meta/stats.json", "meta/tasks.parquet"):
        assert (dataset / rel).is_file(), rel
    print(f"dataset: {info['total_episodes']} episodes, {info['total_frames']} frames")


def test_pyarrow_reads_the_declared_schema(dataset):
    info = json.loads((dataset / "meta/info.json").read_text())
    table = pq.read_table(dataset / "data/chunk-000/file-000.parquet")
    assert table.column_names == list(info["features"])
    for key, ft in info["features"].items():
        typ = table.schema.field(key).type
        if ft["shape"] == [1]:
            assert typ == ARROW_TYPE[ft["dtype"]], key
        else:
            assert typ == pa.list_(ARROW_TYPE[ft["dtype"]], ft["shape"][0]), key


def test_timestamps_indices_and_episode_offsets_agree(dataset):
    data = pq.read_table(dataset / "data/chunk-000/file-000.parquet").to_pydict()
    eps = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert set(eps) >= LEROBOT_EPISODE_COLUMNS
    index, ep_index = np.array(data["index"]), np.array(data["episode_index"])
    assert (index == np.arange(len(index))).all()
    worst = 0.0
    for i, e in enumerate(eps["episode_index"]):
        lo, hi = eps["dataset_from_index"][i], eps["dataset_to_index"][i]
        assert e == i and hi - lo == eps["length"][i]
        assert (ep_index[lo:hi] == e).all() and (np.array(data["frame_index"][lo:hi]) == np.arange(hi - lo)).all()
        dt = np.diff(np.array(data["timestamp"][lo:hi], dtype=np.float64))
        worst = max(worst, float(np.abs(dt - 1.0 / FPS).max()))
    assert eps["dataset_to_index"][-1] == len(index)
    assert worst <= 1e-3
    print(f"timestamp steps: 1/fps within {worst * 1e6:.2f} us")
    tasks = pq.read_table(dataset / "meta/tasks.parquet")
    pandas_meta = json.loads(tasks.schema.metadata[b"pandas"])
    assert pandas_meta["index_columns"] == ["__index_level_0__"]
    names = tasks.column("__index_level_0__").to_pylist()
    assert names == ["pick the cube", "place the cube"]
    assert [names[t] for t in (data["task_index"][0], data["task_index"][-1])] == names
    assert eps["tasks"] == [["pick the cube"], ["pick the cube"], ["place the cube"]]


def test_stats_match_the_frames_read_back(dataset):
    data = pq.read_table(dataset / "data/chunk-000/file-000.parquet")
    stats = json.loads((dataset / "meta/stats.json").read_text())
    state = np.array(data.column("observation.state").to_pylist())
    assert set(stats["observation.state"]) == LEROBOT_STATS
    np.testing.assert_allclose(stats["observation.state"]["mean"], state.mean(axis=0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(stats["observation.state"]["q50"], np.median(state, axis=0), rtol=1e-6, atol=1e-7)
    assert stats["index"]["max"] == [len(state) - 1] and stats["index"]["count"] == [len(state)]
    eps = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["stats/frame_index/max"][0] == [99]


def test_health_verdict_per_episode_and_a_starved_run_is_unhealthy(tmp_path):
    clock = SimClock()
    w = LeRobotWriter(tmp_path / "ds", fps=FPS, joint_names=JOINTS, task="t")
    run_episode(w, clock, 2.0)
    good = w.stop_episode()
    run_episode(w, clock, 2.0, period=0.030)           # a starved loop: one cycle every 30 ms
    starved = w.stop_episode()
    assert good is not None and starved is not None
    print(f"healthy: {good.health.mean_rate_hz:.1f} Hz, {good.health.deadline_misses} misses; "
          f"starved: {starved.health.mean_rate_hz:.1f} Hz, {starved.health.deadline_misses} misses, "
          f"{starved.health.reasons}")
    assert good.health.healthy and good.health.deadline_misses == 0 and good.health.mean_rate_hz == pytest.approx(50)
    assert not starved.health.healthy and starved.health.mean_rate_hz == pytest.approx(1 / 0.030, rel=0.01)
    assert starved.health.deadline_misses > 0
    assert good.health.safety_events == 1              # the contact flag rose once (1.0 < t < 1.2)
    eps = pq.read_table(tmp_path / "ds/meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["health/healthy"] == [True, False]


def test_frames_are_copied_when_offered(tmp_path):
    """A caller refilling one buffer every cycle (an Arm's feedback) still gets every frame's values."""
    w = LeRobotWriter(tmp_path / "ds", fps=FPS, joint_names=JOINTS, task="t")
    buf = np.zeros(len(JOINTS))
    w.start_episode(0.0)
    for k in range(3):
        buf[:] = k
        w.offer(k / FPS, Frame(buf, buf, buf, buf))
    w.stop_episode()
    table = pq.read_table(tmp_path / "ds/data/chunk-000/file-000.parquet")
    assert [row[0] for row in table.column("action").to_pylist()] == [0.0, 1.0, 2.0]


def test_bad_use_is_a_clear_error(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        LeRobotWriter(tmp_path / "full", fps=FPS, joint_names=JOINTS, task="t")
    with pytest.raises(UsageError, match="--task"):
        LeRobotWriter(tmp_path / "a", fps=FPS, joint_names=JOINTS, task=" ")
    w = LeRobotWriter(tmp_path / "b", fps=FPS, joint_names=JOINTS, task="t")
    with pytest.raises(UsageError, match="no episode"):
        w.stop_episode()


def test_real_lerobot_loads_it(dataset):
    """LeRobotDataset(root=...) of the real lerobot package, in its own venv (numpy 2, torch)."""
    python = os.environ.get("HEBICTL_LEROBOT_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("HEBICTL_LEROBOT_PYTHON (a python with lerobot) not set: the real-lerobot load is skipped")
    script = (
        "import json, sys\n"
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
        "ds = LeRobotDataset('local/hebictl', root=sys.argv[1])\n"
        "it = ds[len(ds) - 1]\n"
        "print(json.dumps({'len': len(ds), 'episodes': ds.num_episodes, 'fps': ds.fps, 'task': it['task'],\n"
        "  'state': list(it['observation.state'].shape), 'index': int(it['index']),\n"
        "  'ts': float(it['timestamp']), 'ep': int(it['episode_index'])}))\n")
    out = subprocess.run([python, "-c", script, str(dataset)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    print("lerobot:", got)
    assert got == {"len": 225, "episodes": 3, "fps": FPS, "task": "place the cube", "state": [18], "index": 224,
                   "ts": pytest.approx(74 / FPS, abs=1e-6), "ep": 2}
