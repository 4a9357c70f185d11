"""MCAP recording of a running arm, written off the control thread.

Why a thread and a bounded buffer: the control cycle must keep its rate whatever the disk does.
The cycle only copies the few arrays it already has (feedback, command, the trajectory's
reference, each plugin's efforts) into a tuple and appends it to a bounded deque (a few µs, see
benchmarks/recording.py); a writer thread encodes the messages, computes the link frames by
forward kinematics, compresses and writes. When the writer falls behind and the buffer is full
the sample is dropped, counted (``dropped``), logged once a second and written to ``/events``, so
a gap in the file is never silent.

Crash safety: every ``flush_interval`` seconds (default 0.5 s) of the wall clock, and whenever the
items written since the last commit span that much of the recording's own clock (a simulated clock
may run faster), the writer closes the chunk it is filling and commits it to the file
(:mod:`hebictl.recording.mcapfile`), which is a valid MCAP after every commit and at every moment
in between: a process killed with ``kill -9`` leaves a file that the ``mcap`` package's readers and
Foxglove open, missing at most that interval plus what was still in the buffer. ``hebictl log
recover`` gives it a summary. Files are created exclusively (never through a symlink, never over a
file) with ``mode`` (0600 by default).

State table of the writer thread (``state``):

=========  ===================================  ============
state      on                                   next state
=========  ===================================  ============
open       ``close()``                          draining
open       the file reaches ``rotate_bytes``    open (the next file of the session)
           or ``rotate_seconds``
open       an OSError writing, or the next      failed (samples are counted as dropped)
           file of a rotation cannot be made
draining   buffer empty                         closed (summary metadata, footer written)
=========  ===================================  ============
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from foxglove_schemas_protobuf.Log_pb2 import Log
from mcap.writer import CompressionType, Writer

from hebictl.control.safety import OPERATOR_EVENTS
from hebictl.errors import FormatError, RecordingError
from hebictl.recording import schemas
from hebictl.recording.frames import LinkFrames
from hebictl.recording.mcapfile import McapFile
from hebictl.version import __version__

log = logging.getLogger(__name__)

_CYCLE, _EVENT, _MODE, _STATS, _COMMAND, _ACK, _NOTE, _EXTRA, _GROUP = range(9)

#: the channel of a multi-arm recording's group events (:class:`hebictl.control.group.GroupEvent`)
GROUP_EVENTS = schemas.Topic("/group/events", "foxglove.Log", "protobuf",
                             "every event of the arm group (a fault of one arm holding all, a stop, a hold, a "
                             "refused goal), as a log line: '<kind> <arm>: <detail>'")
#: group event kinds that are an operator's act or routine, logged at INFO (the others at WARNING)
GROUP_INFO_KINDS = frozenset({"cleared", "stop"})


@dataclass(frozen=True)
class RecordingSummary:
    """What a closed recorder wrote."""

    files: tuple[Path, ...]
    cycles: int        # cycles handed to the recorder
    written: int       # cycles written
    dropped: int       # items (cycles, events, commands) lost because the buffer was full
    messages: int


def _ns(t: float) -> int:
    return max(0, round(t * 1e9))


def _finite(values: Any) -> list[float | None]:
    """JSON has no NaN: non-finite numbers become null."""
    return [x if math.isfinite(x) else None for x in np.asarray(values, dtype=float).tolist()]


def _mode_of(arm: Any) -> str:
    """The supervisor's mode where the arm has one (``arm.mode``), else the arm's state."""
    mode = getattr(arm, "mode", None)
    if mode is None:
        mode = arm.state
    return str(getattr(mode, "value", mode))


class ArmLane:
    """One arm's part of a recording: the prefix of its topics ("" for a single arm, ``/NAME`` in a
    multi-arm recording), its joint names and link frames, and what the recorder tracks of it."""

    def __init__(self, arm: Any, prefix: str = "") -> None:
        self.arm = arm
        self.prefix = prefix
        self.name = prefix.lstrip("/")
        self.names = tuple(arm.model.joint_names)
        # a model URDF cannot express (HRDF gear ratios, ball joints) is recorded without the 3D view
        self.frames: LinkFrames | None = None
        self.no_frames = ""
        try:
            self.frames = LinkFrames(arm.model)
        except FormatError as exc:
            self.no_frames = f"{self.name + ': ' if self.name else ''}no URDF, so no /tf and no 3D view: {exc}"
        # control-thread state
        self.events_seen = arm.events.dropped + len(arm.events.events)
        self.mode: tuple[str, str, str | None] | None = None
        #: the arm's teleop mode as its runner last gave it (a multi-arm teleop session: :class:`LaneRecorder`)
        self.teleop_mode: str | None = None
        self.n_plugins = -1
        self.effort_plugins: list[Any] = []
        self.effort_names: tuple[str, ...] = ()
        # writer-thread state
        self.last_tf = -math.inf
        self.last_mode_item: tuple[Any, ...] | None = None

    def topic(self, topic: schemas.Topic) -> str:
        return self.prefix + topic.name

    def cycle_arrays(self) -> tuple[np.ndarray, bool, tuple[str, ...]]:
        """This cycle's feedback, command, effort plugins' efforts and reference, in one copy."""
        arm = self.arm
        fb, cmd = arm.last_feedback, arm.pending_command
        ref = arm.trajectory_state
        if len(arm.plugins) != self.n_plugins:
            self.n_plugins = len(arm.plugins)
            self.effort_plugins = [p for p in arm.plugins if isinstance(getattr(p, "efforts", None), np.ndarray)
                                   and p.efforts.shape == (arm.dof,)]
            self.effort_names = tuple(p.name for p in self.effort_plugins)
        # one copy of everything (one C call, not one per array): the writer slices it back by dof
        arrays = [fb.position, fb.velocity, fb.effort, cmd.position, cmd.velocity, cmd.effort]
        arrays.extend(p.efforts for p in self.effort_plugins)
        if ref is not None:
            arrays.extend(ref)
        return np.concatenate(arrays), ref is not None, self.effort_names


class McapRecorder:
    """Records one arm to MCAP: call :meth:`sample` once per control cycle (after ``send``).

    ``path``: the file; with ``rotate_bytes``/``rotate_seconds`` the first of a series named
    ``<stem>-001.mcap``, ``-002`` ... (teleop sessions). ``config_path``: the robot config, attached
    with the URDF hebictl exports of ``arm.model``. ``transform_rate`` [Hz of the arm's clock]: how
    often ``/tf`` is written (the 3D view needs tens of Hz, not the control rate). ``capacity``:
    items the buffer holds before it drops (4 s at 1 kHz by default). ``extra_topics``: more JSON channels
    a caller writes with :meth:`publish` (their schema is the caller's: the input state of the apps).
    ``mode``: the files' mode (folders the recorder creates get the matching search bits: 0600 -> 0700).
    """

    def __init__(self, path: str | Path | None, arm: Any, *, config_path: str | Path | None = None,
                 metadata: Mapping[str, str] | None = None, capacity: int = 4096, flush_interval: float = 0.5,
                 transform_rate: float = 50.0, rotate_bytes: int | None = None,
                 rotate_seconds: float | None = None, teleop: bool = False,
                 compression: CompressionType = CompressionType.ZSTD, live: Any = None,
                 extra_topics: Sequence[schemas.Topic] = (), mode: int = 0o600,
                 arms: Mapping[str, Any] | None = None, group: Any = None, bases: Mapping[str, Any] | None = None,
                 attachments: Mapping[str, tuple[str, bytes]] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        #: a :class:`hebictl.recording.live.LiveView` that also gets every message, or None
        self.live = live
        #: several arms (``arms``, by name): each one's topics under ``/NAME`` (multi-arm recording)
        self.multi = arms is not None
        self.lanes = [ArmLane(a, f"/{n}") for n, a in arms.items()] if arms is not None else [ArmLane(arm)]
        if not self.lanes:
            raise RecordingError("a recording needs at least one arm")
        #: an :class:`hebictl.control.group.ArmGroup` whose events go to ``/group/events``, or None
        self.group = group
        self._group_seen = len(group.events) if group is not None else 0
        self.bases = {n: np.asarray(b, dtype=float) for n, b in (bases or {}).items()}
        self.arm = self.lanes[0].arm
        self.clock = self.arm.clock
        self.names = self.lanes[0].names
        self.capacity = int(capacity)
        self.flush_interval = float(flush_interval)
        self.transform_period = 1.0 / transform_rate if transform_rate > 0 else math.inf
        self.rotate_bytes = rotate_bytes
        self.rotate_seconds = rotate_seconds
        self.compression = compression
        self.mode = mode
        self.frames = self.lanes[0].frames
        self.topics = self._topics(teleop) + tuple(extra_topics)
        self.config_text = Path(config_path).read_bytes() if config_path is not None else None
        self.attachments = dict(attachments or {})
        self.metadata = {"hebictl_version": __version__, **self._arm_metadata(),
                         "backend": repr(getattr(self.arm, "backend", "")), "clock": type(self.clock).__name__,
                         "start_wall_time": f"{time.time():.6f}", "start_clock_time": f"{self.clock.now():.9f}",
                         "topics": json.dumps([t.name for t in self.topics]), **dict(metadata or {})}
        # control-thread state
        self._buffer: deque[tuple[Any, ...]] = deque()
        self.dropped = 0
        self.cycles = 0
        self._cycle_start = math.nan
        self._last_start = math.nan
        self._last_work = math.nan
        # writer-thread state
        self.state = "open"
        self.files: list[Path] = []
        self.written = 0
        self.messages = 0
        self._dropped_reported = 0
        self._file: McapFile | None = None
        self._span_start = math.nan  # recording-clock time of the first item written since the last commit
        self._fresh = False          # a file without a cycle committed yet
        self._writer: Writer | None = None
        self._channels: dict[str, int] = {}
        self._file_started = 0.0
        self._seq = 0
        self._stop = threading.Event()
        if self.path is not None:
            self._open_file(self._next_path())  # fail here, in the caller, on a bad path
        self._thread = threading.Thread(target=self._run, name="hebictl-recorder", daemon=True)
        self._thread.start()
        for lane in self.lanes:
            if lane.no_frames:
                self.note(lane.no_frames, Log.WARNING)
        what = (", ".join(f"{ln.name} ({ln.arm.dof} joints)" for ln in self.lanes) if self.multi
                else f"{self.arm.model.name or 'the arm'} ({self.arm.dof} joints)")
        self.note(f"recording {what} with {type(self.clock).__name__} time to {self.path or 'the live view only'}")

    def _topics(self, teleop: bool) -> tuple[schemas.Topic, ...]:
        """The channels: a single arm's as in :data:`schemas.TOPICS`; several arms' per-arm topics
        (joint states and commands, reference, plugin efforts, mode, events, /tf, robot description)
        under ``/NAME``, with a teleop session's commands and acks: each arm has its own MQTT topics),
        the loop's once, the group's events on ``/group/events``."""
        spatial = {schemas.TF.name, schemas.ROBOT_DESCRIPTION.name}
        wanted = [t for t in schemas.TOPICS if teleop or not t.teleop_only]
        if not self.multi:
            return tuple(t for t in wanted if self.frames is not None or t.name not in spatial)
        per_arm = {t.name for t in (schemas.JOINT_STATES, schemas.JOINT_COMMANDS, schemas.REFERENCE,
                                    schemas.PLUGIN_EFFORTS, schemas.MODE, schemas.EVENTS, schemas.TF,
                                    schemas.ROBOT_DESCRIPTION, schemas.COMMANDS, schemas.ACKS)}
        out = [replace(t, name=lane.topic(t)) for lane in self.lanes for t in wanted
               if t.name in per_arm and (lane.frames is not None or t.name not in spatial)]
        # the recorder's own notes stay on /events (no arm's)
        out += [t for t in wanted if t.name not in per_arm or t.name == schemas.EVENTS.name]
        return (*out, GROUP_EVENTS)

    def _arm_metadata(self) -> dict[str, str]:
        if not self.multi:
            lane = self.lanes[0]
            return {"model": lane.arm.model.name or "", "dof": str(lane.arm.dof),
                    "joint_names": json.dumps(list(lane.names)),
                    "links": json.dumps(list(lane.frames.frame_ids()) if lane.frames else [])}
        return {"model": ", ".join(f"{ln.name}: {ln.arm.model.name or '?'}" for ln in self.lanes),
                "dof": str(sum(ln.arm.dof for ln in self.lanes)),
                "arms": json.dumps([ln.name for ln in self.lanes]),
                "arm_joint_names": json.dumps({ln.name: list(ln.names) for ln in self.lanes}),
                "arm_links": json.dumps({ln.name: [f"{ln.name}/{f}" for f in ln.frames.frame_ids()]
                                         if ln.frames else [] for ln in self.lanes}),
                "arm_bases": json.dumps({n: b.tolist() for n, b in self.bases.items()})}

    # ------------------------------------------------------------------ control thread
    def cycle_start(self) -> None:
        """Mark the start of a cycle's work (optional: gives ``/loop/timing`` its work and wait)."""
        self._cycle_start = time.perf_counter()

    def sample(self, teleop_mode: str | None = None) -> None:
        """Hand this cycle's data to the writer; call after ``arm.send()`` (every arm's). Never blocks.
        ``teleop_mode``: the (one) arm's teleop mode; else each arm's as its :class:`LaneRecorder` got it."""
        now = self.clock.now()
        wall = time.perf_counter()
        start = self._cycle_start if not math.isnan(self._cycle_start) else wall
        period = start - self._last_start
        work = wall - start if not math.isnan(self._cycle_start) else math.nan
        wait = period - self._last_work
        self._last_start, self._last_work, self._cycle_start = start, work, math.nan
        self.cycles += 1
        self._put((_CYCLE, now, self.cycles, period, work, wait, tuple(lane.cycle_arrays() for lane in self.lanes)))
        self.phase_done()
        for i, lane in enumerate(self.lanes):
            arm = lane.arm
            mode = (_mode_of(arm), arm.state.value, teleop_mode if teleop_mode is not None else lane.teleop_mode)
            if mode != lane.mode:
                lane.mode = mode
                self._put((_MODE, now, i, *mode))

    def phase_done(self, *, group_first: bool = False) -> None:
        """Hand on the events every arm and then the group made since the last call (:meth:`sample`
        calls it too). A loop that runs its cycle in phases (:class:`hebictl.teleop.group.RunnerGroup`)
        calls it after each phase, so the file has the cycle's events in the order they happened (one
        arm's e-stop, then the acks of the commands after it, then the group's trip), at the cost of a
        length comparison per arm when nothing happened. ``group_first``: after a supervision phase, where
        the group decides first and then stops the other arms. Never blocks."""
        if group_first:
            self._group_events()
        for i, lane in enumerate(self.lanes):
            events = lane.arm.events
            total = events.dropped + len(events.events)
            if total != lane.events_seen:
                new = min(total - lane.events_seen, len(events.events))
                for ev in list(events.events)[-new:]:
                    self._put((_EVENT, ev.time, i, ev.kind.value, ev.state.value, ev.detail))
                lane.events_seen = total
        self._group_events()

    def _group_events(self) -> None:
        group = self.group
        if group is not None and len(group.events) != self._group_seen:
            for ev in group.events[self._group_seen:]:
                self._put((_GROUP, ev.time, ev.kind, ev.arm, ev.detail))
            self._group_seen = len(group.events)

    def lane(self, name: str) -> LaneRecorder:
        """Arm ``name``'s handle on a multi-arm recording, for that arm's teleop runner."""
        for i, lane in enumerate(self.lanes):
            if lane.name == name:
                return LaneRecorder(self, i)
        raise RecordingError(f"no arm {name!r} in this recording (arms: {', '.join(ln.name for ln in self.lanes)})")

    def loop_stats(self, stats: Any) -> None:
        """The loop's once-a-second statistics (its ``report`` callback): every numeric field."""
        fields_ = stats.as_dict() if hasattr(stats, "as_dict") else vars(stats)
        self._put((_STATS, self.clock.now(), {k: float(v) for k, v in fields_.items()
                                              if isinstance(v, int | float | np.number)}))

    # ------------------------------------------------------------------ any thread
    def command(self, topic: str, command: Any, lane: int = 0) -> None:
        """An MQTT command handed to the arm thread (``command.envelope`` carries client and seq);
        ``lane``: the arm's index in a multi-arm recording (its ``/NAME/teleop/commands``)."""
        env = getattr(command, "envelope", None)
        body = ({f.name: getattr(command, f.name) for f in fields(command) if f.name != "envelope"}
                if is_dataclass(command) else {})
        self._put((_COMMAND, self.clock.now(), lane, topic, getattr(env, "client", None), getattr(env, "seq", None),
                   body))

    def ack(self, ack: Any, lane: int = 0) -> None:
        """An ack the arm thread sent (:class:`hebictl.teleop.messages.Ack`); ``lane`` as for :meth:`command`."""
        self._put((_ACK, self.clock.now(), lane, ack.topic, ack.client, ack.seq, bool(ack.accepted),
                   ack.reason or "", ack.detail or ""))

    def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        """A JSON message on one of the ``extra_topics`` given at construction (e.g. the input state of
        :mod:`hebictl.inputs.recording`), stamped with the arm's clock now."""
        self._put((_EXTRA, self.clock.now(), topic, dict(payload)))

    def note(self, text: str, level: int = Log.INFO) -> None:
        """A line of the recorder's own on ``/events`` (start, stop, drops)."""
        self._put((_NOTE, self.clock.now(), level, text))

    def _put(self, item: tuple[Any, ...]) -> None:
        if len(self._buffer) >= self.capacity or self.state == "failed":
            self.dropped += 1
            return
        self._buffer.append(item)

    def close(self, timeout: float = 30.0) -> RecordingSummary:
        """Write what is buffered, the summary and the footer; idempotent."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RecordingError(f"{self.path or 'live view'}: the recorder did not finish writing within "
                                     f"{timeout:g} s")
        if self.live is not None:  # handed over at construction: the recorder closes it
            self.live.close()
            self.live = None
        return RecordingSummary(tuple(self.files), self.cycles, self.written, self.dropped, self.messages)

    def __enter__(self) -> McapRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writer thread
    def _next_path(self) -> Path:
        assert self.path is not None
        if self.rotate_bytes is None and self.rotate_seconds is None:
            return self.path
        return self.path.with_name(f"{self.path.stem}-{len(self.files) + 1:03d}{self.path.suffix or '.mcap'}")

    def _open_file(self, path: Path) -> None:
        file = McapFile(path, self.mode)  # RecordingError: exists, a symlink, cannot be made
        try:
            self._start_file(file)
        except BaseException:
            file.close()
            raise

    def _start_file(self, file: McapFile) -> None:
        """Header, metadata, attachments and channels, committed at once: the file appears under
        its name with all of them (a kill during an attachment leaves no name, or the whole file)."""
        writer = Writer(cast(IO[bytes], file.stream), chunk_size=1 << 20, compression=self.compression)
        writer.start(profile=schemas.PROFILE, library=f"hebictl {self.metadata['hebictl_version']}")
        self._channels = {t.name: schemas.register(writer, t) for t in self.topics}
        now_ns = _ns(self.clock.now())
        writer.add_metadata(schemas.RUN_METADATA, {**self.metadata, "file_index": str(len(self.files) + 1)})
        for lane in self.lanes:  # a multi-arm recording: NAME/robot.urdf
            if lane.frames is not None:
                writer.add_attachment(now_ns, now_ns, f"{lane.name}/" * self.multi + schemas.URDF_ATTACHMENT,
                                      "application/xml", lane.frames.urdf.encode())
        if self.config_text is not None:
            writer.add_attachment(now_ns, now_ns, schemas.CONFIG_ATTACHMENT, "application/yaml", self.config_text)
        for name, (media, data) in self.attachments.items():
            writer.add_attachment(now_ns, now_ns, name, media, data)
        writer.flush()
        try:
            file.commit()
        except OSError as exc:
            raise RecordingError(f"cannot record to {file.path}: {exc.strerror or exc}") from exc
        self._file, self._writer = file, writer
        self._fresh = True
        self._file_started = time.monotonic()
        self.files.append(file.path)
        for lane in self.lanes:
            lane.last_tf = -math.inf
            if lane.frames is not None:
                self._emit(lane.topic(schemas.ROBOT_DESCRIPTION), now_ns,
                           json.dumps({"data": lane.frames.urdf}).encode())
            if lane.last_mode_item is not None:  # each file of a session says which mode it starts in
                self._write(lane.last_mode_item)

    def _finish_file(self) -> None:
        """The file's final metadata, summary and footer: it is then complete."""
        writer, file = self._writer, self._file
        if writer is None or file is None:
            return
        writer.add_metadata(schemas.FINAL_METADATA, {"cycles": str(self.cycles), "written": str(self.written),
                                                     "dropped": str(self.dropped),
                                                     "end_clock_time": f"{self.clock.now():.9f}"})
        writer.flush()
        self._writer = self._file = None
        try:
            file.finish(writer)
        finally:
            file.close()

    def _commit(self) -> None:
        """The chunk being filled, closed and made part of the file (what a SIGKILL keeps)."""
        self._span_start = math.nan
        self._fresh = False
        if self._writer is not None and self._file is not None:
            self._writer.flush()
            self._file.commit()

    def _due(self, item: tuple[Any, ...]) -> bool:
        """Whether the items written since the last commit span ``flush_interval`` of the recording's
        own clock (a simulated clock may run faster than the wall clock the other commits follow),
        or this is a new file's first cycle (a file killed early still shows the arm)."""
        if self._writer is None:
            return False
        if self._fresh and item[0] == _CYCLE:
            return True
        t = item[1]
        if math.isnan(self._span_start):
            self._span_start = t
        return t - self._span_start >= self.flush_interval - 1e-9  # times 0.5 s apart may differ by 0.4999999

    def _run(self) -> None:
        last_flush = time.monotonic()
        try:
            while True:
                stopping = self._stop.is_set()
                while self._buffer:
                    item = self._buffer.popleft()
                    self._write(item)
                    if self._due(item):
                        self._commit()
                        self._maybe_rotate(time.monotonic())
                    time.sleep(0)  # release the GIL after each item: the control thread must not wait on us
                now = time.monotonic()
                if self.dropped != self._dropped_reported and now - last_flush >= self.flush_interval:
                    self._report_drops()
                if now - last_flush >= self.flush_interval:
                    if self._writer is not None:
                        self._commit()
                        self._maybe_rotate(now)
                    if self.live is not None and self.frames is not None:
                        self.live.describe(_ns(self.clock.now()), self.frames.urdf)
                    last_flush = now
                if stopping and not self._buffer:
                    break
                self._stop.wait(0.01)
            self.state = "draining"
            self._write((_NOTE, self.clock.now(), Log.INFO,
                         f"recording closed: {self.written} of {self.cycles} cycles written, {self.dropped} dropped"))
            if self.dropped != self._dropped_reported:
                self._report_drops()
            self._finish_file()
            self.state = "closed"
        except (OSError, RecordingError) as exc:
            self.state = "failed"
            if self._file is not None:
                self._file.close()  # the file stays as its last commit left it: readable, recoverable
            self._writer = self._file = None
            log.error("recording to %s failed: %s; the run goes on unrecorded", self.files[-1:], exc)

    def _report_drops(self) -> None:
        new = self.dropped - self._dropped_reported
        self._dropped_reported = self.dropped
        text = f"recorder buffer full: {new} items dropped ({self.dropped} in all)"
        log.warning("%s", text)
        self._write((_NOTE, self.clock.now(), Log.WARNING, text))

    def _maybe_rotate(self, now: float) -> None:
        assert self._file is not None
        too_big = self.rotate_bytes is not None and self._file.size() >= self.rotate_bytes
        too_old = self.rotate_seconds is not None and now - self._file_started >= self.rotate_seconds
        if too_big or too_old:
            self._finish_file()
            self._open_file(self._next_path())

    def _emit(self, topic: str, t_ns: int, data: bytes) -> None:
        self._seq += 1
        if self._writer is not None:
            self._writer.add_message(self._channels[topic], log_time=t_ns, data=data, publish_time=t_ns,
                                     sequence=self._seq)
        if self.live is not None:
            self.live.emit(topic, t_ns, data)
        self.messages += 1

    def _write(self, item: tuple[Any, ...]) -> None:
        kind, t = item[0], item[1]
        t_ns = _ns(t)
        if kind == _CYCLE:
            _, _, cycle, period, work, wait, lanes = item
            measured = [self._write_arm(lane, t, t_ns, *data) for lane, data in zip(self.lanes, lanes, strict=True)]
            self._emit(schemas.LOOP.name, t_ns, json.dumps(
                {"cycle": cycle, "period": _finite([period])[0], "work": _finite([work])[0],
                 "wait": _finite([wait])[0], "dropped": self.dropped}).encode())
            for lane, fp in zip(self.lanes, measured, strict=True):
                self._write_tf(lane, t, t_ns, fp)
            self.written += 1
        elif kind == _EVENT:
            _, _, i, ev_kind, state, detail = item
            level = Log.INFO if ev_kind in OPERATOR_EVENTS else Log.WARNING
            self._emit(self.lanes[i].topic(schemas.EVENTS), t_ns, self._log(t_ns, level, "hebictl.safety",
                                                                            f"{ev_kind} -> {state}: {detail}"))
        elif kind == _NOTE:
            self._emit(schemas.EVENTS.name, t_ns, self._log(t_ns, item[2], "hebictl.recording", item[3]))
        elif kind == _GROUP:
            _, _, g_kind, arm, detail = item
            level = Log.INFO if g_kind in GROUP_INFO_KINDS else Log.WARNING
            self._emit(GROUP_EVENTS.name, t_ns, self._log(t_ns, level, "hebictl.group",
                                                          f"{g_kind} {arm or '-'}: {detail}"))
        elif kind == _MODE:
            lane = self.lanes[item[2]]
            lane.last_mode_item = item
            self._emit(lane.topic(schemas.MODE), t_ns, json.dumps(
                {"mode": item[3], "state": item[4], "teleop_mode": item[5]}).encode())
        else:
            self._write_other(kind, t_ns, item)

    def _write_arm(self, lane: ArmLane, t: float, t_ns: int, flat: np.ndarray, has_ref: bool,
                   effort_names: tuple[str, ...]) -> np.ndarray:
        """One arm's joint states, commands, reference and plugin efforts of a cycle; returns its
        measured position."""
        names = lane.names
        rows = flat.reshape(-1, len(names))
        fp, fv, fe, cp, cv, ce = rows[:6]
        efforts = zip(effort_names, rows[6:6 + len(effort_names)], strict=True)
        ref = rows[6 + len(effort_names):] if has_ref else None
        self._emit(lane.topic(schemas.JOINT_STATES), t_ns, joint_states(names, t_ns, fp, fv, fe))
        self._emit(lane.topic(schemas.JOINT_COMMANDS), t_ns, joint_states(names, t_ns, cp, cv, ce))
        if ref is not None:
            self._emit(lane.topic(schemas.REFERENCE), t_ns,
                       joint_states(names, t_ns, *ref, effort_is_acceleration=True))
        self._emit(lane.topic(schemas.PLUGIN_EFFORTS), t_ns, json.dumps(
            {"timestamp": t, "plugins": {name: _finite(x) for name, x in efforts}}).encode())
        return fp

    def _write_tf(self, lane: ArmLane, t: float, t_ns: int, fp: np.ndarray) -> None:
        """``/tf`` at ``transform_rate``; a multi-arm recording's frames are ``NAME/<link>``, each arm's
        root placed at its base pose in ``world``."""
        if lane.frames is None or t - lane.last_tf < self.transform_period * 0.999 or not np.isfinite(fp).all():
            return
        lane.last_tf = t
        msg = (lane.frames.message(fp, t_ns, prefix=f"{lane.name}/", base=self.bases.get(lane.name))
               if self.multi else lane.frames.message(fp, t_ns))
        self._emit(lane.topic(schemas.TF), t_ns, msg.SerializeToString())

    def _write_other(self, kind: int, t_ns: int, item: tuple[Any, ...]) -> None:
        if kind == _STATS:
            self._emit(schemas.LOOP_STATS.name, t_ns, json.dumps(
                {k: (v if math.isfinite(v) else None) for k, v in item[2].items()}).encode())
        elif kind == _COMMAND:
            _, _, i, topic, client, seq, body = item
            self._emit(self.lanes[i].topic(schemas.COMMANDS), t_ns, json.dumps(
                {"topic": topic, "client": client, "seq": seq, "body": body}, default=_jsonable).encode())
        elif kind == _EXTRA:
            self._emit(item[2], t_ns, json.dumps(item[3], default=_jsonable).encode())
        elif kind == _ACK:
            _, _, i, topic, client, seq, accepted, reason, detail = item
            self._emit(self.lanes[i].topic(schemas.ACKS), t_ns, json.dumps(
                {"topic": topic, "client": client, "seq": seq, "accepted": accepted, "reason": reason,
                 "detail": detail}).encode())

    @staticmethod
    def _log(t_ns: int, level: int, name: str, text: str) -> bytes:
        msg = Log(level=level, message=text, name=name)  # type: ignore[arg-type]  # protobuf enums are ints
        msg.timestamp.FromNanoseconds(t_ns)
        return msg.SerializeToString()


class LaneRecorder:
    """One arm's handle on a multi-arm :class:`McapRecorder`, in the place of the recorder an
    :class:`~hebictl.teleop.runner.ArmRunner` records to (``hebictl teleop ARMS.multi.yaml --record``).

    Its commands and acks go to the arm's ``/NAME/teleop/commands`` and ``/NAME/teleop/acks``, as the
    arm has its own MQTT topics; its teleop mode is kept for the group's sample. The cycle itself
    (``cycle_start``, ``sample``) and the loop's statistics are the loop's, once a cycle for every arm
    (:class:`hebictl.teleop.group.RunnerGroup`): here they cost the runner nothing."""

    def __init__(self, recorder: McapRecorder, index: int) -> None:
        self.recorder = recorder
        self.index = index
        self._lane = recorder.lanes[index]

    def command(self, topic: str, command: Any) -> None:
        self.recorder.command(topic, command, self.index)

    def ack(self, ack: Any) -> None:
        self.recorder.ack(ack, self.index)

    def sample(self, teleop_mode: str | None = None) -> None:
        self._lane.teleop_mode = teleop_mode

    def cycle_start(self) -> None:
        """The group marks its cycle's start once, before every arm's."""

    def loop_stats(self, stats: Any) -> None:
        """The group's loop reports its statistics once, not once per arm."""


def joint_states(names: tuple[str, ...], t_ns: int, p: Any, v: Any, e: Any, *,
                 effort_is_acceleration: bool = False) -> bytes:
    """One encoded ``foxglove.JointStates`` (``e`` is the acceleration for a trajectory reference)."""
    msg = JointStates()
    msg.timestamp.FromNanoseconds(t_ns)
    for name, a, b, c in zip(names, np.asarray(p).tolist(), np.asarray(v).tolist(), np.asarray(e).tolist(),
                             strict=True):
        if effort_is_acceleration:
            msg.joints.add(name=name, position=a, velocity=b, acceleration=c)
        else:
            msg.joints.add(name=name, position=a, velocity=b, effort=c)
    return msg.SerializeToString()


def _jsonable(value: Any) -> Any:
    """Command bodies hold arrays, tuples, enums and small dataclasses: a JSON form of each."""
    if isinstance(value, np.ndarray):
        return _finite(value.ravel())
    if hasattr(value, "value"):
        return value.value
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


def session_path(directory: str | Path, prefix: str = "teleop", clock: Callable[[], float] = time.time,
                 arm_id: str | None = None) -> Path:
    """``DIR/<prefix>-<arm id>-YYYYmmdd-HHMMSS.mcap`` (the recorder numbers rotated files ``-001``,
    ``-002`` ...). The arm id keeps two arms recording into one folder apart; characters other than
    letters, digits, ``.``, ``_`` and ``-`` become ``_`` (an id is never a path)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(clock()))
    arm = f"-{re.sub(r'[^A-Za-z0-9._-]', '_', arm_id).lstrip('.')}" if arm_id else ""
    return Path(directory) / f"{prefix}{arm}-{stamp}.mcap"
