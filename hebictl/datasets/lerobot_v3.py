"""LeRobot v3.0 datasets written with pyarrow: episodes with start, stop, discard and re-record.

The layout and keys are LeRobot's own (``lerobot/datasets/utils.py`` and ``lerobot_dataset.py``,
codebase ``v3.0``): ``meta/info.json`` (``create_empty_dataset_info``'s keys), frames in
``data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet`` with one fixed-size list column per
vector feature, one row per episode in ``meta/episodes/chunk-000/file-000.parquet`` (``episode_index``,
``tasks``, ``length``, ``data/chunk_index``, ``data/file_index``, ``dataset_from_index``,
``dataset_to_index``, ``meta/episodes/*``, ``stats/<feature>/<stat>``), ``meta/stats.json`` and
``meta/tasks.parquet`` (task strings as the pandas index, ``task_index`` column). hebictl adds
``safety.*`` columns per frame and ``health/*`` columns per episode (docs/datasets.md).

Every saved episode rewrites the files it changed through a temporary file and a rename, so the
folder on disk is a consistent dataset after each save, also when the process dies mid-episode.
pyarrow is imported on first use (the ``dataset`` extra); lerobot and torch are never needed.
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.datasets.health import ALOHA_MIN_RATE_FRACTION, EpisodeHealth, FrameSampler, judge_episode
from hebictl.errors import InstallationError, UsageError

CODEBASE_VERSION = "v3.0"
DEFAULT_CHUNK_SIZE = 1000
DEFAULT_DATA_FILE_SIZE_IN_MB = 100
DEFAULT_VIDEO_FILE_SIZE_IN_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
TASKS_PATH = "meta/tasks.parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
#: LeRobot's DEFAULT_FEATURES: present in every dataset, scalar per frame
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}


@dataclass(frozen=True)
class Frame:
    """One row's measured and commanded values (joint order of the dataset's ``joint_names``).

    ``position``/``velocity``/``effort`` are the follower's feedback (``observation.state``),
    ``action`` the target it was given (the leader's or the operator's), ``tracking_error`` the
    largest |command - position| over the joints [rad], ``contact``/``hold`` the safety flags.
    """

    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    action: np.ndarray
    contact: bool = False
    hold: bool = False
    tracking_error: float = 0.0


@dataclass(frozen=True)
class SavedEpisode:
    """What ``stop_episode`` saved: its index in the dataset, frame count and health verdict."""

    episode_index: int
    length: int
    task: str
    health: EpisodeHealth


class RecorderState(enum.Enum):
    """IDLE between episodes, RECORDING while one is open; CLOSED after ``close()``."""

    IDLE = "idle"
    RECORDING = "recording"
    CLOSED = "closed"


@dataclass
class _Episode:
    task: str
    sampler: FrameSampler
    rows: list[Frame] = field(default_factory=list)


@dataclass
class _Stored:
    saved: SavedEpisode
    columns: dict[str, np.ndarray]   # feature -> (length, *shape) values, index columns excluded
    file_index: int


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise InstallationError("--record-dataset needs pyarrow: pip install 'hebictl[dataset]'") from exc
    return pyarrow


def build_features(joint_names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ``features`` of info.json: LeRobot's dtype/shape/names per column, index columns last."""
    names = [str(n) for n in joint_names]
    state = [f"{n}.pos" for n in names] + [f"{n}.vel" for n in names] + [f"{n}.eff" for n in names]
    feats: dict[str, dict[str, Any]] = {
        "observation.state": {"dtype": "float32", "shape": [len(state)], "names": state},
        "action": {"dtype": "float32", "shape": [len(names)], "names": [f"{n}.pos" for n in names]},
        "safety.contact": {"dtype": "bool", "shape": [1], "names": None},
        "safety.hold": {"dtype": "bool", "shape": [1], "names": None},
        "safety.tracking_error": {"dtype": "float32", "shape": [1], "names": None},
    }
    for key in INDEX_FEATURES:
        feats[key] = {"dtype": "float32" if key == "timestamp" else "int64", "shape": [1], "names": None}
    return feats


def feature_stats(values: np.ndarray) -> dict[str, list[Any]]:
    """LeRobot's per-feature stats over frames: min, max, mean, std, count and the q01..q99 quantiles.

    Quantiles are exact (``np.quantile``); LeRobot's own recorder estimates them from histograms, so
    its values can differ in the last digits. A scalar feature keeps shape (1,), as LeRobot's do.
    """
    x = values.astype(np.float64).reshape(values.shape[0], -1)
    out: dict[str, list[Any]] = {
        "min": x.min(axis=0).tolist(), "max": x.max(axis=0).tolist(), "mean": x.mean(axis=0).tolist(),
        "std": x.std(axis=0).tolist(), "count": [int(x.shape[0])],
    }
    for key, q in QUANTILES.items():
        out[key] = np.quantile(x, q, axis=0).tolist()
    return out


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class LeRobotWriter:
    """Episodes of a demonstration, saved as a LeRobot v3.0 dataset in ``root``.

    ``start_episode(t)``, then ``offer(t, frame)`` every control cycle (the sampler keeps one frame
    per 1/fps slot), ``stop_episode()`` saves it with its health verdict, ``discard_episode()``
    drops the open one, ``rerecord()`` drops the open one or else the last saved one and starts
    again. Times are the caller's clock (seconds); the rows' ``timestamp`` is ``frame_index / fps``
    as LeRobot writes it, and the real capture times go into the verdict.
    """

    def __init__(self, root: str | Path, *, fps: int, joint_names: Sequence[str], task: str,
                 robot_type: str = "hebi", min_rate_fraction: float = ALOHA_MIN_RATE_FRACTION,
                 data_files_size_in_mb: int = DEFAULT_DATA_FILE_SIZE_IN_MB) -> None:
        if int(fps) != fps or fps <= 0:
            raise UsageError(f"--record-fps: a positive whole number of frames per second, got {fps}")
        if not task.strip():
            raise UsageError("--task: a non-empty description of the demonstrated task")
        self.root = Path(root)
        if self.root.exists() and any(self.root.iterdir()):
            raise UsageError(f"--record-dataset {self.root}: the folder is not empty (a new dataset, a new folder)")
        self.pa = _pyarrow()
        self.fps = int(fps)
        self.dof = len(joint_names)
        self.task = task
        self.robot_type = robot_type
        self.min_rate_fraction = float(min_rate_fraction)
        self.data_files_size_in_mb = int(data_files_size_in_mb)
        self.features = build_features(joint_names)
        self.tasks: list[str] = []
        self.stored: list[_Stored] = []
        self.state = RecorderState.IDLE
        self.episode: _Episode | None = None
        self.file_index = 0
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_meta()

    # ---------------------------------------------------------------- episodes
    def start_episode(self, t: float, task: str | None = None) -> None:
        """Open an episode at time ``t`` (its first frame is taken at ``t``)."""
        if self.state is not RecorderState.IDLE:
            raise UsageError(f"cannot start an episode while {self.state.value}")
        self.episode = _Episode(task=task or self.task, sampler=FrameSampler(self.fps, t))
        self.state = RecorderState.RECORDING

    def offer(self, t: float, frame: Frame) -> bool:
        """Record ``frame`` if a slot is due at ``t``; True if it was recorded."""
        ep = self.episode
        if ep is None or not ep.sampler.offer(t):
            return False
        # copies: a caller's arrays are often buffers it refills every cycle (an Arm's feedback)
        ep.rows.append(Frame(np.array(frame.position, dtype=np.float64), np.array(frame.velocity, dtype=np.float64),
                             np.array(frame.effort, dtype=np.float64), np.array(frame.action, dtype=np.float64),
                             bool(frame.contact), bool(frame.hold), float(frame.tracking_error)))
        return True

    def discard_episode(self) -> int:
        """Drop the open episode; returns the number of frames dropped."""
        ep = self._require_open()
        self.episode, self.state = None, RecorderState.IDLE
        return len(ep.rows)

    def stop_episode(self, extra_safety_events: int = 0) -> SavedEpisode | None:
        """Save the open episode (None if it has no frame) and write the dataset's files."""
        ep = self._require_open()
        self.episode, self.state = None, RecorderState.IDLE
        if not ep.rows:
            return None
        health = judge_episode(ep.sampler.capture_times, self.fps, deadline_misses=ep.sampler.misses,
                               safety_events=count_safety_events(ep.rows) + int(extra_safety_events),
                               min_rate_fraction=self.min_rate_fraction)
        if ep.task not in self.tasks:
            self.tasks.append(ep.task)
        saved = SavedEpisode(episode_index=len(self.stored), length=len(ep.rows), task=ep.task, health=health)
        self._roll_file_if_full()
        self.stored.append(_Stored(saved=saved, columns=self._columns(ep.rows), file_index=self.file_index))
        self._write_data(self.file_index)
        self._write_meta()
        return saved

    def rerecord(self, t: float) -> int | None:
        """Record the episode again: drop the open one, or else the last saved one; start at ``t``.

        Returns the index of the dropped saved episode (None if an open one was dropped).
        """
        dropped: int | None = None
        if self.state is RecorderState.RECORDING:
            self.discard_episode()
        elif self.stored:
            last = self.stored.pop()
            dropped = last.saved.episode_index
            self._write_data(last.file_index)
            self._write_meta()
        self.start_episode(t, task=None if dropped is None else last.saved.task)
        return dropped

    def close(self) -> SavedEpisode | None:
        """Save an open episode and close the dataset."""
        saved = self.stop_episode() if self.state is RecorderState.RECORDING else None
        self.state = RecorderState.CLOSED
        return saved

    @property
    def total_frames(self) -> int:
        return sum(s.saved.length for s in self.stored)

    def _require_open(self) -> _Episode:
        if self.episode is None:
            raise UsageError("no episode is being recorded")
        return self.episode

    # ---------------------------------------------------------------- columns
    def _columns(self, rows: list[Frame]) -> dict[str, np.ndarray]:
        n = self.dof
        state = np.empty((len(rows), 3 * n), dtype=np.float32)
        action = np.empty((len(rows), n), dtype=np.float32)
        for i, r in enumerate(rows):
            state[i, :n], state[i, n:2 * n], state[i, 2 * n:] = r.position, r.velocity, r.effort
            action[i] = r.action
        return {
            "observation.state": state,
            "action": action,
            "safety.contact": np.array([[r.contact] for r in rows], dtype=bool),
            "safety.hold": np.array([[r.hold] for r in rows], dtype=bool),
            "safety.tracking_error": np.array([[r.tracking_error] for r in rows], dtype=np.float32),
        }

    def _index_columns(self, stored: _Stored, start: int) -> dict[str, np.ndarray]:
        length = stored.saved.length
        frame_index = np.arange(length, dtype=np.int64)
        return {
            "timestamp": (frame_index / self.fps).astype(np.float32),
            "frame_index": frame_index,
            "episode_index": np.full(length, stored.saved.episode_index, dtype=np.int64),
            "index": np.arange(start, start + length, dtype=np.int64),
            "task_index": np.full(length, self.tasks.index(stored.saved.task), dtype=np.int64),
        }

    def _arrow_column(self, key: str, values: np.ndarray) -> Any:
        pa = self.pa
        shape = self.features[key]["shape"]
        flat = values.reshape(values.shape[0], -1) if values.ndim > 1 else values.reshape(-1, 1)
        if shape == [1]:
            return pa.array(flat[:, 0])
        return pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), shape[0])

    def _starts(self) -> list[int]:
        lengths = [s.saved.length for s in self.stored]
        return [int(v) for v in np.concatenate([[0], np.cumsum(lengths)[:-1]])] if lengths else []

    # ---------------------------------------------------------------- files
    def _roll_file_if_full(self) -> None:
        path = self.root / DATA_PATH.format(chunk_index=0, file_index=self.file_index)
        if path.exists() and path.stat().st_size >= self.data_files_size_in_mb * 1024 * 1024:
            self.file_index += 1

    def _write_data(self, file_index: int) -> None:
        pa, pq = self.pa, self.pa.parquet
        path = self.root / DATA_PATH.format(chunk_index=0, file_index=file_index)
        parts = [(s, start) for s, start in zip(self.stored, self._starts(), strict=True)
                 if s.file_index == file_index]
        if not parts:
            path.unlink(missing_ok=True)
            return
        arrays = {}
        for key in self.features:
            per_ep = [s.columns[key] if key in s.columns else self._index_columns(s, start)[key] for s, start in parts]
            arrays[key] = self._arrow_column(key, np.concatenate(per_ep))
        table = pa.table(arrays)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="snappy")
        _atomic_write_bytes(path, sink.getvalue().to_pybytes())

    def _write_parquet(self, rel: str, table: Any) -> None:
        sink = self.pa.BufferOutputStream()
        self.pa.parquet.write_table(table, sink, compression="snappy")
        _atomic_write_bytes(self.root / rel, sink.getvalue().to_pybytes())

    def _write_meta(self) -> None:
        self._write_tasks()
        self._write_episodes()
        all_stats = self._stats_over(list(zip(self.stored, self._starts(), strict=True)))
        _atomic_write_bytes(self.root / STATS_PATH, json.dumps(all_stats, indent=4).encode())
        _atomic_write_bytes(self.root / INFO_PATH, json.dumps(self.info(), indent=4).encode())

    def info(self) -> dict[str, Any]:
        """meta/info.json: LeRobot's ``create_empty_dataset_info`` keys, counters filled in."""
        return {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.robot_type,
            "total_episodes": len(self.stored),
            "total_frames": self.total_frames,
            "total_tasks": len(self.tasks),
            "chunks_size": DEFAULT_CHUNK_SIZE,
            "data_files_size_in_mb": self.data_files_size_in_mb,
            "video_files_size_in_mb": DEFAULT_VIDEO_FILE_SIZE_IN_MB,
            "fps": self.fps,
            "splits": {"train": f"0:{len(self.stored)}"} if self.stored else {},
            "data_path": DATA_PATH,
            "video_path": None,
            "features": self.features,
        }

    def _stats_over(self, parts: list[tuple[_Stored, int]]) -> dict[str, dict[str, list[Any]]]:
        """Stats of every feature over the given (episode, first global index) pairs."""
        if not parts:
            return {}
        out = {}
        for key in self.features:
            per_ep = [s.columns[key] if key in s.columns else self._index_columns(s, start)[key]
                      for s, start in parts]
            out[key] = feature_stats(np.concatenate(per_ep))
        return out

    def _write_tasks(self) -> None:
        """meta/tasks.parquet as pandas writes ``DataFrame({"task_index": ...}, index=tasks)``."""
        pa = self.pa
        table = pa.table({"task_index": pa.array(range(len(self.tasks)), pa.int64()),
                          "__index_level_0__": pa.array(self.tasks, pa.string())})
        pandas_meta = {
            "index_columns": ["__index_level_0__"],
            "column_indexes": [{"name": None, "field_name": None, "pandas_type": "unicode",
                                "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
            "columns": [
                {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
                 "numpy_type": "int64", "metadata": None},
                {"name": None, "field_name": "__index_level_0__", "pandas_type": "unicode",
                 "numpy_type": "object", "metadata": None},
            ],
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": "2.2.3",
        }
        table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
        self._write_parquet(TASKS_PATH, table)

    def _write_episodes(self) -> None:
        pa = self.pa
        rows: dict[str, list[Any]] = {}
        starts = self._starts()
        for s, start in zip(self.stored, starts, strict=True):
            row = self._episode_row(s, start)
            for k, v in row.items():
                rows.setdefault(k, []).append(v)
        if not rows:
            self.root.joinpath(EPISODES_PATH.format(chunk_index=0, file_index=0)).unlink(missing_ok=True)
            return
        self._write_parquet(EPISODES_PATH.format(chunk_index=0, file_index=0), pa.Table.from_pydict(rows))

    def _episode_row(self, s: _Stored, start: int) -> dict[str, Any]:
        h = s.saved.health
        row: dict[str, Any] = {
            "episode_index": s.saved.episode_index,
            "tasks": [s.saved.task],
            "length": s.saved.length,
            "data/chunk_index": 0,
            "data/file_index": s.file_index,
            "dataset_from_index": start,
            "dataset_to_index": start + s.saved.length,
            "meta/episodes/chunk_index": 0,
            "meta/episodes/file_index": 0,
            "health/healthy": h.healthy,
            "health/mean_rate_hz": h.mean_rate_hz,
            "health/min_rate_hz": h.min_rate_hz,
            "health/deadline_misses": h.deadline_misses,
            "health/safety_events": h.safety_events,
            "health/reasons": "; ".join(h.reasons),
        }
        for key, stats in self._stats_over([(s, start)]).items():
            for stat, value in stats.items():
                row[f"stats/{key}/{stat}"] = value
        return row


def count_safety_events(rows: Sequence[Frame]) -> int:
    """Contacts and holds that began during the episode (rising edges of each flag)."""
    events = 0
    prev_contact = prev_hold = False
    for r in rows:
        events += (r.contact and not prev_contact) + (r.hold and not prev_hold)
        prev_contact, prev_hold = r.contact, r.hold
    return int(events)
