"""Where input samples come from: a script, a thread-safe mailbox (the MQTT topic), a replayed
recording (hebictl's MCAP input channel, or a hebi-py ``.hebilog`` of a Mobile IO group).

A source has one method the control loop calls every cycle, ``poll(now)``: the newest sample
that arrived since the last poll, or None. Where several samples arrive between two polls (a
burst from a busy broker or bridge, a replay faster than the loop) the axes and the pose are the
newest's, but no button state is skipped (:class:`Coalescer`): a press whose down and up reached the
controller inside one cycle is delivered as a press in one cycle and its release in the next,
instead of vanishing. Sources never decide anything: staleness, reconnects
and the enable edge are :mod:`hebictl.inputs.guard`'s, the same for all of them. The real phone is
:class:`hebictl.inputs.mobile_io.MobileIOSource`.

A source may also show feedback (HEBI's examples colour the phone's edge LED by mode and print
instructions): ``indicate(led, text)``; sources without a screen ignore it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from hebictl.errors import CommandRejected, FormatError, RecordingError
from hebictl.inputs.schema import parse_input
from hebictl.inputs.state import CHANNELS, InputState
from hebictl.limits import read_regular_file

#: the recording channel of the input state (:mod:`hebictl.inputs.recording`)
INPUT_TOPIC = "/input/mobile_io"
#: a script file is at most this large (an hour of 60 Hz samples is about 2 MB of JSON)
MAX_SCRIPT_BYTES = 8 << 20


class InputSource(Protocol):
    """What the control loop needs of an input device."""

    name: str

    def poll(self, now: float) -> InputState | None:
        """The newest sample since the last poll, taken in at ``now`` [s, arm clock], or None."""

    def indicate(self, led: str | None, text: str | None) -> None:
        """Show the app's mode: LED colour (HEBI's names: ``green``, ``blue``, ...) and a text line."""

    def close(self) -> None: ...


#: at most this many button states wait to be delivered, one per cycle (a Mobile IO at 50 Hz makes
#: at most a few between two cycles; beyond it the oldest waiting state is dropped and counted)
MAX_BUTTON_BACKLOG = 8


class Coalescer:
    """Many samples in, one per poll out, without losing a button state.

    Axes and pose are continuous: the newest wins. Buttons are events: every change of the button
    tuple is kept in order (a burst of down, up between two polls is a press, then a release), so each
    poll delivers the newest sample with the oldest button state not yet delivered. A backlog beyond
    :data:`MAX_BUTTON_BACKLOG` drops its oldest state (``dropped``): a flood of toggling buttons costs
    at most that many cycles of button delay, never memory or the newest axes. Not thread-safe: the
    owner locks."""

    def __init__(self) -> None:
        self._newest: InputState | None = None
        self._buttons: deque[tuple[int, ...]] = deque()
        self._delivered: tuple[int, ...] | None = None
        self._waiting = False
        #: button states dropped from a full backlog
        self.dropped = 0

    def add(self, state: InputState) -> None:
        """Take ``state`` in as the newest sample."""
        tail = self._buttons[-1] if self._buttons else self._delivered
        if state.buttons != tail:
            if len(self._buttons) >= MAX_BUTTON_BACKLOG:
                self._buttons.popleft()
                self.dropped += 1
            self._buttons.append(state.buttons)
        self._newest = state
        self._waiting = True

    @property
    def waiting(self) -> bool:
        """Something not yet delivered (a sample, or button states of the backlog)."""
        return self._waiting

    def take(self) -> InputState | None:
        """The sample of this poll (None: nothing since the last one)."""
        newest = self._newest
        if newest is None or not self._waiting:
            return None
        buttons = self._buttons.popleft() if self._buttons else newest.buttons
        self._delivered = buttons
        self._waiting = bool(self._buttons)
        return newest if buttons == newest.buttons else dataclasses.replace(newest, buttons=buttons)

    def clear(self) -> None:
        """Forget what waits (the last delivered button state stays the reference)."""
        if self._newest is not None:
            self._delivered = self._newest.buttons
        self._buttons.clear()
        self._waiting = False


class TimedSource:
    """Samples delivered at their times: each state's ``t`` is seconds after the source's start (the
    first poll); a poll returns the newest one due (with every button state due, one per poll:
    :class:`Coalescer`), restamped with the arm's time ``now``. Scripts and replays are this;
    ``exhausted`` once the last sample is out and delivered."""

    def __init__(self, samples: Sequence[InputState], name: str = "script") -> None:
        self.name = name
        self.samples = list(samples)
        self._next = 0
        #: [s, arm clock] the first poll (the script's time 0), None before it
        self.started_at: float | None = None
        self.indications: list[tuple[str | None, str | None]] = []
        self._due = Coalescer()

    @property
    def exhausted(self) -> bool:
        return self._next >= len(self.samples) and not self._due.waiting

    def poll(self, now: float) -> InputState | None:
        if self.started_at is None:
            self.started_at = now
        while self._next < len(self.samples) and self.samples[self._next].t <= now - self.started_at + 1e-9:
            self._due.add(self.samples[self._next])
            self._next += 1
        due = self._due.take()
        if due is None:
            return None
        return InputState(now, due.buttons, due.axes, due.position, due.orientation, due.quality,
                          due.source_time, due.seq)

    def indicate(self, led: str | None, text: str | None) -> None:
        self.indications.append((led, text))

    def close(self) -> None:
        return None


class MailboxSource:
    """The newest valid sample handed in from another thread (the MQTT subscriber's), with every
    button state since the last poll delivered one per poll (:class:`Coalescer`).

    ``offer`` validates the payload with :func:`hebictl.inputs.schema.parse_input`; a bad one is
    dropped and counted by reason in ``rejected`` (with the last reason and detail in
    ``last_rejection``); a ``seq`` not above the sender's last is dropped as ``stale_seq``, so a
    replayed or reordered message cannot undo a newer one."""

    def __init__(self, clock: Any, name: str = "mqtt") -> None:
        self.name = name
        self.clock = clock
        self.rejected: Counter[str] = Counter()
        self.last_rejection: tuple[str, str] | None = None
        self.accepted = 0
        self._lock = threading.Lock()
        self._pending = Coalescer()
        self._seq: dict[str, int] = {}
        self._client: dict[int, str] = {}

    def offer(self, payload: bytes | bytearray | str) -> bool:
        """Validate and keep ``payload``; False if it was dropped (and counted)."""
        return self.admit(payload)[0] is not None

    def admit(self, payload: bytes | bytearray | str,
              received: float | None = None) -> tuple[InputState | None, str, str]:
        """Validate and keep ``payload``, taken in at ``received`` [s] (default: this source's clock):
        (the sample, "", "") or, dropped and counted, (None, reason, detail)."""
        try:
            state = parse_input(payload, self.clock.now() if received is None else received)
        except CommandRejected as exc:
            self.drop(exc.reason, exc.detail)
            return None, exc.reason, exc.detail
        client = json.loads(payload).get("client", "")
        with self._lock:
            last = self._seq.get(client)
            if last is not None and state.seq <= last:
                reason, detail = "stale_seq", f"seq {state.seq} of {client!r} is not above {last}"
                self.rejected[reason] += 1
                self.last_rejection = (reason, detail)
                return None, reason, detail
            self._accept(client, state)
        return state, "", ""

    def keep(self, state: InputState) -> None:
        """Keep a sample validated elsewhere (by an :class:`InputCheck` in ``hebictl teleop``'s bridge
        process) as the newest, counted as accepted."""
        with self._lock:
            self._pending.add(state)
            self.accepted += 1

    def drop(self, reason: str, detail: str) -> None:
        """Count a dropped sample (here, or by an :class:`InputCheck` elsewhere) by its reason."""
        with self._lock:
            self.rejected[reason] += 1
            self.last_rejection = (reason, detail)

    def _accept(self, client: str, state: InputState) -> None:
        """Keep ``state`` as the newest sample (the lock held)."""
        self._seq.pop(client, None)
        self._seq[client] = state.seq
        if len(self._seq) > 64:  # bounded: the least recently heard senders are forgotten
            self._seq.pop(next(iter(self._seq)))
        self._pending.add(state)
        self.accepted += 1

    def poll(self, now: float) -> InputState | None:
        with self._lock:
            return self._pending.take()

    def clear(self) -> None:
        """Forget every sample that waits (a new run starts from what comes next)."""
        with self._lock:
            self._pending.clear()

    @property
    def buttons_dropped(self) -> int:
        """Button states dropped from a full backlog (a flood of toggling buttons)."""
        with self._lock:
            return self._pending.dropped

    def counts(self) -> tuple[int, dict[str, int]]:
        """(accepted, dropped by reason), read together (another thread may be offering); button
        states dropped from a full backlog count as ``button_backlog``."""
        with self._lock:
            dropped = dict(self.rejected)
            if self._pending.dropped:
                dropped["button_backlog"] = self._pending.dropped
            return self.accepted, dropped

    def indicate(self, led: str | None, text: str | None) -> None:
        return None

    def close(self) -> None:
        return None


class InputCheck:
    """A :class:`MailboxSource`'s checks without its mailbox, for another process: ``hebictl teleop
    --app`` with the MQTT bridge in a child process validates ``cmd/input`` there (the schema, each
    sender's order, exactly as :meth:`MailboxSource.admit`) and sends the sample, or the drop, over
    its link to the app's own source (:meth:`MailboxSource.keep`, :meth:`MailboxSource.drop`).
    Picklable: it is made in the arm's process and sent to the child, where its source is made."""

    def __init__(self) -> None:
        self._source: MailboxSource | None = None

    def __call__(self, payload: bytes | bytearray | str, received: float) -> tuple[InputState | None, str, str]:
        """One payload taken in at ``received`` [s, the arm's clock]: as :meth:`MailboxSource.admit`."""
        if self._source is None:
            self._source = MailboxSource(None, name="cmd/input")
        return self._source.admit(payload, received)


# ---------------------------------------------------------------------- files
def script_samples(path: str | Path) -> list[InputState]:
    """A script: a JSON object ``{"samples": [{"t": s, "buttons": [...], "axes": [...], "pose": ...}, ...]}``
    whose samples are the MQTT input topic's (:mod:`hebictl.inputs.schema`) without the envelope plus
    ``t`` [s after the start, increasing]; every sample is checked by that schema. Errors name the
    file and the sample."""
    try:
        data = read_regular_file(path, what="input script", max_bytes=MAX_SCRIPT_BYTES)
    except FormatError as exc:
        raise RecordingError(str(exc)) from None
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordingError(f"{path}: not a JSON input script: {exc}") from None
    if not isinstance(obj, dict) or set(obj) != {"samples"} or not isinstance(obj["samples"], list):
        raise RecordingError(f"{path}: an input script is an object with one key, 'samples' (a list)")
    out: list[InputState] = []
    last = -math.inf
    for i, sample in enumerate(obj["samples"]):
        if not isinstance(sample, dict):
            raise RecordingError(f"{path}: samples[{i}]: must be an object")
        body = {k: v for k, v in sample.items() if k != "t"}
        t = sample.get("t")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0 or t < last:
            raise RecordingError(f"{path}: samples[{i}].t: must be a finite number >= 0 and not below the one before")
        last = float(t)
        try:
            out.append(parse_input(json.dumps({"seq": i, "ts": float(t), "client": "script", **body}), float(t)))
        except CommandRejected as exc:
            raise RecordingError(f"{path}: samples[{i}]: {exc}") from None
    return out


def recorded_samples(path: str | Path) -> list[InputState]:
    """The input channel (:data:`INPUT_TOPIC`) of a hebictl MCAP recording, timed from the run's start."""
    from hebictl.recording.reader import iter_messages

    out: list[InputState] = []
    for i, (_, _, msg) in enumerate(iter_messages(path, {INPUT_TOPIC})):
        try:
            state = InputState.from_json(msg)
            t_run = float(msg["t_run"])
            if len(state.buttons) != CHANNELS or len(state.axes) != CHANNELS or not math.isfinite(t_run):
                raise ValueError("8 buttons, 8 axes and a finite t_run expected")
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RecordingError(f"{path}: input message {i}: {exc}") from None
        out.append(InputState(t_run, state.buttons, state.axes, state.position, state.orientation, state.quality,
                              state.source_time, state.seq))
    if not out:
        raise RecordingError(f"{path}: no {INPUT_TOPIC} messages (record with 'hebictl app ... --record' "
                             "or 'hebictl teleop --app NAME --record DIR')")
    return out


def hebilog_samples(path: str | Path) -> list[InputState]:
    """The samples of a hebi-py ``.hebilog`` of a one-module Mobile IO group: ``io.b`` buttons, ``io.a``
    axes, the AR pose (NaN where the device had none), timed by receive time from the first."""
    import hebi

    src = Path(path)
    if not src.is_file():
        raise RecordingError(f"{src}: no such file")
    try:
        log_file = hebi.util.load_log(str(src), load=False)
    except (OSError, RuntimeError) as exc:
        raise RecordingError(f"{src}: not a HEBI log ({exc})") from exc
    if log_file.number_of_modules != 1:
        raise RecordingError(f"{src}: a Mobile IO log has one module, this one {log_file.number_of_modules}")
    return list(_hebilog_states(log_file.feedback_iterate))


def _hebilog_states(feedback: Iterable[Any]) -> Iterable[InputState]:
    t0: float | None = None
    for seq, fbk in enumerate(feedback):
        t = float(fbk.receive_time[0])
        t0 = t if t0 is None else t0
        yield state_of_feedback(fbk[0], t - t0, seq)


def state_of_feedback(fbk: Any, t: float, seq: int = 0) -> InputState:
    """The :class:`InputState` of one hebi-py module feedback of a Mobile IO (``io.b``, ``io.a``, AR)."""
    buttons = tuple(int(fbk.io.b.get_int(i + 1)) if fbk.io.b.has_int(i + 1) else 0 for i in range(CHANNELS))
    axes = tuple(float(fbk.io.a.get_float(i + 1)) if fbk.io.a.has_float(i + 1) else math.nan
                 for i in range(CHANNELS))
    pos = [float(x) for x in fbk.ar_position]
    ori = [float(x) for x in fbk.ar_orientation]
    pose_ok = all(math.isfinite(x) for x in pos + ori) and abs(math.sqrt(sum(x * x for x in ori)) - 1.0) < 1e-2
    quality = getattr(fbk, "ar_quality", None)
    q = float(quality) if isinstance(quality, int | float) and math.isfinite(float(quality)) else -1.0
    return InputState(t, tuple(1 if b else 0 for b in buttons), axes,
                      (pos[0], pos[1], pos[2]) if pose_ok else None,
                      (ori[0], ori[1], ori[2], ori[3]) if pose_ok else None, q, t, seq)
