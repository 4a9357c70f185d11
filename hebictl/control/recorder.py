"""Records commanded vs. measured joint state each cycle, for plots and post-mortems.

Preallocated in chunks so recording costs a few array copies per cycle, not list appends of
fresh arrays; ``save``/``load`` use ``.npz`` so a run can be plotted later with ``hebictl plot``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hebictl.errors import RecordingError

FIELDS = ("position_command", "position", "velocity_command", "velocity", "effort_command", "effort")


class Recorder:
    """Time series of one arm's commands and feedback."""

    def __init__(self, dof: int, joint_names: tuple[str, ...] = (), chunk: int = 4096) -> None:
        self.dof = dof
        self.joint_names = tuple(joint_names) or tuple(f"J{i + 1}" for i in range(dof))
        self._chunk = chunk
        self._n = 0
        self.time = np.empty(chunk)
        self.data = {f: np.empty((chunk, dof)) for f in FIELDS}

    def __len__(self) -> int:
        return self._n

    def _grow(self) -> None:
        size = self.time.shape[0] + self._chunk
        self.time = np.resize(self.time, size)
        for f in FIELDS:
            self.data[f] = np.resize(self.data[f], (size, self.dof))

    def record(self, t: float, position_command: NDArray[np.float64], position: NDArray[np.float64],
               velocity_command: NDArray[np.float64], velocity: NDArray[np.float64],
               effort_command: NDArray[np.float64], effort: NDArray[np.float64]) -> None:
        if self._n == self.time.shape[0]:
            self._grow()
        i = self._n
        self.time[i] = t
        for f, v in zip(FIELDS, (position_command, position, velocity_command, velocity, effort_command, effort),
                        strict=True):
            self.data[f][i] = v
        self._n += 1

    def series(self, field: str) -> NDArray[np.float64]:
        return self.data[field][: self._n]

    @property
    def times(self) -> NDArray[np.float64]:
        return self.time[: self._n]

    def tracking_error(self) -> NDArray[np.float64]:
        """Commanded minus measured position per sample and joint [rad or m]."""
        return self.series("position_command") - self.series("position")

    def save(self, path: str | Path) -> None:
        np.savez_compressed(path, time=self.times, joint_names=np.array(self.joint_names),
                            **{f: self.series(f) for f in FIELDS})

    @classmethod
    def load(cls, path: str | Path) -> Recorder:
        try:
            z = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise RecordingError(f"{path}: not a hebictl recording ({exc})") from exc
        missing = [k for k in ("time", *FIELDS) if k not in z]
        if missing:
            raise RecordingError(f"{path}: not a hebictl recording (missing {', '.join(missing)})")
        names = tuple(str(x) for x in z["joint_names"]) if "joint_names" in z else ()
        rec = cls(z["position"].shape[1], names, chunk=max(1, z["time"].shape[0]))
        for i in range(z["time"].shape[0]):
            rec.record(float(z["time"][i]), *(z[f][i] for f in FIELDS))
        return rec
