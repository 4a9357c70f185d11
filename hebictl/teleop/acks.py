"""Acks waiting to be published: bounded, and under a flood coalesced instead of dropped.

Every command gets an ack, but an ack costs a QoS 1 round trip to the broker, and a client
flooding the arm with bad commands (2,000 messages/s in the fuzz runs) produces rejections far
faster than they can be published. Dropping them silently (as a plain bounded queue does) leaves
a well-behaved operator without the answer it waits for and hides the flood. Instead:

* a **rejection** for a ``(client, reason)`` that already has a rejection waiting in the queue is
  folded into that one: its ack goes out once, with ``coalesced`` = how many more it stands for
  and ``last_seq`` = the ``seq`` of the newest;
* streamed topics (jog) are throttled on top: a rejection for a ``(client, reason)`` acked less
  than ``throttle`` seconds ago is counted and carried by the next ack of that pair, or, when no
  further rejection comes (the end of a stream), acked on its own once ``throttle`` has passed;
* when ``maxsize`` distinct entries wait (a flood under many client names), further rejections
  coalesce per reason alone, into an ack with ``client`` None;
* **accepted** acks are never coalesced; they are bounded by the admission rate limits. Only if
  even they overflow ``2 * maxsize`` is the oldest dropped, and counted.

The counters :attr:`coalesced` and :attr:`dropped` go into ``state/status`` (``bridge``).
Single-threaded: use from the bridge's event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from hebictl.teleop.messages import Ack

_Key = tuple[str | None, str]


@dataclass
class _Entry:
    ack: Ack
    key: _Key | None        # None: an accepted ack (never coalesced)
    count: int = 0          # further rejections folded in
    last_seq: int | None = None


@dataclass
class _Held:
    first: Ack              # the first throttled rejection (answered by its own ack if nothing follows)
    count: int              # throttled rejections held, the first included
    last_seq: int | None
    due: float              # monotonic time its throttle ends


class AckQueue:
    """FIFO of acks with per-``(client, reason)`` coalescing of rejections (see module doc)."""

    def __init__(self, monotonic: Callable[[], float], maxsize: int = 1000) -> None:
        if maxsize < 1:
            raise ValueError(f"ack queue size must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self.monotonic = monotonic
        self.coalesced = 0
        self.dropped = 0
        self._fifo: deque[_Entry] = deque()
        self._waiting: dict[_Key, _Entry] = {}
        self._last_sent: dict[_Key, float] = {}
        self._held: dict[_Key, _Held] = {}   # throttled rejections, per pair
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._fifo)

    def clear(self) -> None:
        """Forget everything waiting (acks of a previous connection are stale)."""
        self._fifo.clear()
        self._waiting.clear()
        self._held.clear()
        self._ready.clear()

    def put(self, ack: Ack, *, throttle: float = 0.0) -> None:
        """Queue ``ack``; a rejection may be folded into a waiting one or held by ``throttle`` [s]."""
        if ack.accepted:
            if len(self._fifo) >= 2 * self.maxsize:
                self._fifo.popleft()
                self.dropped += 1
            self._append(_Entry(ack, None))
            return
        key: _Key = (ack.client, ack.reason)
        entry = self._waiting.get(key)
        if entry is not None:
            self._fold(entry, ack.seq)
            return
        if throttle > 0.0:
            now = self.monotonic()
            last = self._last_sent.get(key, -1e18)
            if now - last < throttle:
                held = self._held.get(key)
                if held is None:
                    self._held[key] = _Held(ack, 1, ack.seq, last + throttle)
                    self._ready.set()  # a waiting get() learns when this one falls due
                else:
                    held.count += 1
                    held.last_seq = ack.seq
                self.coalesced += 1
                return
            if len(self._last_sent) > 4 * self.maxsize:
                self._last_sent.clear()
            self._last_sent[key] = now
        if len(self._waiting) >= self.maxsize:  # too many distinct senders: one ack per reason
            key = (None, ack.reason)
            entry = self._waiting.get(key)
            if entry is not None:
                self._fold(entry, None)
                return
            ack = Ack(None, None, ack.topic, False, ack.reason,
                      "rejections from many clients coalesced (the ack queue was full)")
        entry = _Entry(ack, key)
        held = self._held.pop(key, None)
        if held is not None:
            entry.count, entry.last_seq = held.count, ack.seq
        self._waiting[key] = entry
        self._append(entry)

    def _fold(self, entry: _Entry, seq: int | None) -> None:
        entry.count += 1
        entry.last_seq = seq
        self.coalesced += 1

    def _append(self, entry: _Entry) -> None:
        self._fifo.append(entry)
        self._ready.set()

    def _release_held(self) -> None:
        """Ack throttled rejections whose throttle time has passed with no later rejection to carry
        them: every command is answered, the last samples of a stream included."""
        if not self._held:
            return
        now = self.monotonic()
        for key in [k for k, h in self._held.items() if h.due <= now]:
            held = self._held.pop(key)
            self._last_sent[key] = now
            self.coalesced -= 1  # the first held rejection is answered by its own ack
            entry = _Entry(held.first, key, held.count - 1, held.last_seq if held.count > 1 else None)
            self._waiting[key] = entry
            self._append(entry)

    def get_nowait(self) -> Ack | None:
        """The next ack to publish (with its coalescing count), or None when empty."""
        self._release_held()
        if not self._fifo:
            self._ready.clear()
            return None
        entry = self._fifo.popleft()
        if entry.key is not None and self._waiting.get(entry.key) is entry:
            del self._waiting[entry.key]
        if not self._fifo:
            self._ready.clear()
        if entry.count == 0:
            return entry.ack
        return replace(entry.ack, coalesced=entry.count, last_seq=entry.last_seq)

    async def get(self) -> Ack:
        """Wait for the next ack to publish (or for a held rejection's throttle to pass)."""
        while True:
            ack = self.get_nowait()
            if ack is not None:
                return ack
            due = min((h.due for h in self._held.values()), default=None)
            if due is None:
                await self._ready.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), max(due - self.monotonic(), 0.0) + 1e-3)
