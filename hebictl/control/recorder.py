"""Records commanded vs. measured joint state each cycle, for plots and post-mortems.

Preallocated in chunks so recording costs a few array copies per cycle, not list appends of
fresh arrays; ``save``/``load`` use ``.npz`` so a run can be plotted later with ``hebictl plot``.

A control loop does not record into a :class:`Recorder` itself: growing it copies every sample
recorded so far (at 1 kHz, megabytes after a few minutes), work that does not belong in a cycle.
It hands each sample to a :class:`RecorderFeed`, a bounded single-producer ring of preallocated
slots that a writer thread drains into the recorder (as ``realtime_tools``' RealtimePublisher
hands messages to a non-real-time thread). A full ring drops the sample and counts it; the loop
never waits for the writer.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

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

    def save(self, path: str | Path | BinaryIO) -> None:
        """The run as ``.npz`` into ``path`` (a file object: `hebictl run` writes it exclusively, see
        :func:`hebictl.recording.mcapfile.write_new`)."""
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


class RecorderFeed:
    """Samples handed from the loop thread to a writer thread that records them into ``recorder``.

    :meth:`put` (loop thread) copies one sample into the next free slot of a preallocated ring and
    never blocks or allocates a slot; the writer thread moves the filled slots into the recorder
    every ``poll`` seconds; :meth:`close` drains what is left and ends the thread. With one
    producer and one consumer, the two indices are each written by one side only."""

    def __init__(self, recorder: Recorder, capacity: int = 4096, poll: float = 0.02) -> None:
        self.recorder = recorder
        self.capacity = capacity
        self.poll = poll
        self.times = np.empty(capacity)
        self.slots = np.empty((capacity, len(FIELDS), recorder.dof))
        self.head = 0      # samples put (written by the loop thread only)
        self.tail = 0      # samples recorded (written by the writer thread only)
        self.dropped = 0   # samples put while the ring was full
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain_until_closed, name="hebictl-recorder", daemon=True)
        self._thread.start()

    def put(self, t: float, *values: NDArray[np.float64]) -> bool:
        """One sample (time, then the FIELDS in order); False if the ring is full (dropped)."""
        head = self.head
        if head - self.tail >= self.capacity:
            self.dropped += 1
            return False
        i = head % self.capacity
        self.times[i] = t
        slot = self.slots[i]
        for k, v in enumerate(values):
            slot[k] = v
        self.head = head + 1
        return True

    def _drain(self) -> None:
        head, rec = self.head, self.recorder
        for n in range(self.tail, head):
            i = n % self.capacity
            rec.record(float(self.times[i]), *self.slots[i])
        self.tail = head

    def _drain_until_closed(self) -> None:
        while not self._done.wait(self.poll):
            self._drain()
        self._drain()

    def close(self, timeout: float = 10.0) -> Recorder:
        """Record what is left, end the writer thread; returns the recorder."""
        self._done.set()
        self._thread.join(timeout)
        return self.recorder
