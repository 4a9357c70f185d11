"""Fleet lease and fleet e-stop: an arm moves only while an authorised station keeps it leased.

Every operator station publishes a heartbeat on :data:`LEASE_TOPIC` (20 Hz: station id, an epoch
that changes when the station restarts, and a sequence number that rises within an epoch), and
any station may publish a fleet e-stop on :data:`ESTOP_TOPIC`. Each arm runs one
:class:`FleetLease` on its own clock:

* no lease fresher than ``lease_timeout`` (250 ms) from an authorised station: motion is refused
  and a moving arm is held (:meth:`FleetLease.poll` says so once, at the first cycle after expiry:
  the hold starts within ``lease_timeout`` plus one cycle, whatever MQTT's keepalive notices: a
  frozen broker node is seen by its silence, not by the TCP session);
* a fleet e-stop holds every arm and latches until an authorised station clears it;
* nothing resumes by itself: when the lease, the station, the broker node or the e-stop comes back
  the arm stays held until a **new lease AND an explicit command** (:meth:`FleetLease.command`).

The states and what moves them are one table, :data:`TRANSITIONS`. The class is pure: times come
from the caller (the arm's clock), so its timing is tested exactly in simulated time. Messages are
hostile input: :func:`parse_lease` and :func:`parse_estop` check one schema each, and what fails
is dropped and counted in :attr:`FleetLease.dropped` (by reason), never raised into the loop.
:class:`LeaseGate` is the hook a teleop bridge wires (docs/fleet.md): messages in from the MQTT
thread, ``poll``/``command`` from the arm's thread, under one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import math
import re
import secrets
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hebictl.errors import CommandRejected, ConfigError
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock

LEASE_TOPIC = "hebictl/v1/fleet/lease"
ESTOP_TOPIC = "hebictl/v1/fleet/estop"
#: [s] a lease older than this does not let an arm move
LEASE_TIMEOUT = 0.25
#: [Hz] how often a station publishes its lease (5 heartbeats per timeout: a lost packet or two is no stop)
HEARTBEAT_HZ = 20.0
MAX_MESSAGE_BYTES = 1024
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_SEQ = 2**53
#: the station's and the arm's clocks may run at rates this far apart (200 ppm; quartz: tens of ppm)
DRIFT = 200e-6


@dataclass(frozen=True)
class Lease:
    """One heartbeat: ``station`` id, its ``epoch`` (new per station start), ``seq`` (rises), and the
    ``arms`` it leases (None: every arm that authorises the station)."""

    station: str
    epoch: str
    seq: int
    arms: tuple[str, ...] | None
    #: [s] the station's own monotonic clock when it sent the lease (None: not given)
    sent: float | None = None


@dataclass(frozen=True)
class FleetEstop:
    """A fleet e-stop (``clear`` False) or its clearing (``clear`` True) by ``station``."""

    station: str
    clear: bool
    reason: str


def _object(payload: bytes | str) -> dict[str, object]:
    raw = payload.encode() if isinstance(payload, str) else bytes(payload)
    if len(raw) > MAX_MESSAGE_BYTES:
        raise CommandRejected("too_large", f"{len(raw)} bytes > {MAX_MESSAGE_BYTES}")
    try:
        obj = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CommandRejected("malformed", f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise CommandRejected("malformed", "not a JSON object")
    return obj


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def valid_id(text: str) -> bool:
    """A station or arm id: 1-64 characters of A-Z a-z 0-9 _ . -."""
    return isinstance(text, str) and _ID.fullmatch(text) is not None


def _ident(obj: dict[str, object], key: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not _ID.match(v):
        raise CommandRejected("malformed", f"{key}: 1-64 characters of A-Z a-z 0-9 _ . -")
    return v


def _only(obj: dict[str, object], allowed: set[str]) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise CommandRejected("malformed", f"unknown field(s) {', '.join(extra)}")


def parse_lease(payload: bytes | str) -> Lease:
    """The one schema of a lease: ``{"station", "epoch", "seq"[, "arms"]}``; CommandRejected otherwise."""
    obj = _object(payload)
    _only(obj, {"station", "epoch", "seq", "arms", "t"})
    sent = obj.get("t")
    if sent is not None and (isinstance(sent, bool) or not isinstance(sent, int | float)
                             or not math.isfinite(sent) or not 0 <= sent < 1e12):
        raise CommandRejected("malformed", "t: the station's clock [s], a finite number >= 0")
    seq = obj.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < MAX_SEQ:
        raise CommandRejected("malformed", "seq: an integer 0 <= seq < 2^53")
    arms = obj.get("arms")
    if arms is not None:
        if not isinstance(arms, list) or not 1 <= len(arms) <= 256:
            raise CommandRejected("malformed", "arms: a list of 1-256 arm ids")
        arms = tuple(_ident({"arm": a}, "arm") for a in arms)
    return Lease(_ident(obj, "station"), _ident(obj, "epoch"), int(seq), arms,
                 None if sent is None else float(sent))


def parse_estop(payload: bytes | str) -> FleetEstop:
    """The one schema of a fleet e-stop: ``{"station"[, "clear"][, "reason"]}``."""
    obj = _object(payload)
    _only(obj, {"station", "clear", "reason"})
    clear = obj.get("clear", False)
    reason = obj.get("reason", "")
    if not isinstance(clear, bool) or not isinstance(reason, str) or len(reason) > 200:
        raise CommandRejected("malformed", "clear: true/false; reason: a string of at most 200 characters")
    return FleetEstop(_ident(obj, "station"), clear, reason)


class LeaseState(enum.Enum):
    NO_LEASE = "no_lease"    # no fresh lease: motion refused, the arm held
    READY = "ready"          # a fresh lease, but no command since the last hold: still held
    ACTIVE = "active"        # a fresh lease and a command since: the arm may move
    ESTOPPED = "estopped"    # fleet e-stop: held, latched until an authorised clear


class LeaseEvent(enum.Enum):
    LEASE = "lease"          # a valid lease from an authorised station
    EXPIRED = "expired"      # no lease fresher than lease_timeout
    COMMAND = "command"      # an explicit operator command (goal, jog, resume)
    ESTOP = "estop"
    CLEAR = "clear"          # an authorised clear of the fleet e-stop


L, V = LeaseState, LeaseEvent
#: (state, event) -> next state; a pair not listed leaves the state as it is (e.g. COMMAND in NO_LEASE)
TRANSITIONS: dict[tuple[LeaseState, LeaseEvent], LeaseState] = {
    (L.NO_LEASE, V.LEASE): L.READY,
    (L.READY, V.COMMAND): L.ACTIVE,
    (L.READY, V.EXPIRED): L.NO_LEASE,
    (L.ACTIVE, V.EXPIRED): L.NO_LEASE,
    **{(s, V.ESTOP): L.ESTOPPED for s in LeaseState},
    (L.ESTOPPED, V.CLEAR): L.NO_LEASE,    # then a fresh lease (READY) and a command (ACTIVE)
}


class FleetLease:
    """One arm's view of the fleet lease and e-stop (module doc); every time is the caller's clock [s]."""

    def __init__(self, arm_id: str, stations: Iterable[str], *, lease_timeout: float = LEASE_TIMEOUT) -> None:
        self.arm_id = arm_id
        self.stations = frozenset(stations)
        if not self.stations:
            raise ConfigError("fleet lease: at least one authorised station id is needed", key="stations")
        if not (math.isfinite(lease_timeout) and lease_timeout > 0.0):
            raise ConfigError(f"lease_timeout must be > 0 s, got {lease_timeout}", key="lease_timeout")
        self.lease_timeout = float(lease_timeout)
        self.state = LeaseState.NO_LEASE
        #: [s, arm clock] when the last accepted lease was sent (estimated from its ``t``), else received
        self.last_lease: float | None = None
        #: per (station, epoch): (smallest receipt - sent seen, arm time of that) - the delivery baseline
        self._baseline: dict[tuple[str, str], tuple[float, float]] = {}
        self.holder: str | None = None
        self._last_seq: dict[str, tuple[str, int]] = {}
        self.dropped: Counter[str] = Counter()
        self.estop_reason = ""
        self._hold_now: str | None = None   # an e-stop's hold, said once by the next poll

    # ---------------------------------------------------------------- inputs
    def on_lease(self, lease: Lease, now: float) -> bool:
        """Take a parsed lease received at ``now``; False (and counted) if it is not for us or stale."""
        reason = self._refuse(lease)
        if reason is not None:
            self.dropped[reason] += 1
            return False
        origin = self._origin(lease, now)
        if now - origin > self.lease_timeout:
            self.dropped["late"] += 1       # delivered, but sent longer ago than the timeout
            return False
        self._last_seq[lease.station] = (lease.epoch, lease.seq)
        self.last_lease, self.holder = max(origin, self.last_lease or origin), lease.station
        self._fire(LeaseEvent.LEASE)
        return True

    def _refuse(self, lease: Lease) -> str | None:
        if lease.station not in self.stations:
            return "unauthorised_station"
        if lease.arms is not None and self.arm_id not in lease.arms:
            return "not_for_this_arm"
        prev = self._last_seq.get(lease.station)
        if prev is not None and prev[0] == lease.epoch and lease.seq <= prev[1]:
            return "old_seq"
        return None

    def _origin(self, lease: Lease, now: float) -> float:
        """When the lease was sent, on the arm's clock: its ``t`` plus the fastest delivery seen from
        this station (allowed to rise by :data:`DRIFT` per second: the two clocks' rates differ), so a
        broker that starts delaying messages does not make old heartbeats look fresh."""
        if lease.sent is None:
            return now
        key = (lease.station, lease.epoch)
        offset = now - lease.sent
        best = self._baseline.get(key)
        if best is not None:
            offset_then, at = best
            offset = min(offset, offset_then + DRIFT * max(now - at, 0.0))
        self._baseline[key] = (offset, now)
        return min(lease.sent + offset, now)   # (sent + (now - sent) can round past now)

    def on_estop(self, estop: FleetEstop, now: float) -> bool:
        """A fleet e-stop from anyone latches; its clear counts only from an authorised station."""
        if not estop.clear:
            self.estop_reason = f"fleet e-stop by {estop.station}" + (f": {estop.reason}" if estop.reason else "")
            if self.state is not L.ESTOPPED:
                self._hold_now = self.estop_reason
            self._fire(LeaseEvent.ESTOP)
            return True
        if estop.station not in self.stations:
            self.dropped["unauthorised_clear"] += 1
            return False
        self._fire(LeaseEvent.CLEAR)
        return True

    def fresh(self, now: float) -> bool:
        """A lease no older than ``lease_timeout`` at ``now``."""
        return self.last_lease is not None and 0.0 <= now - self.last_lease <= self.lease_timeout

    def poll(self, now: float) -> str | None:
        """Once per control cycle: a hold reason at the cycle the arm must start holding, else None."""
        self._expire(now)
        reason, self._hold_now = self._hold_now, None
        return reason

    def _expire(self, now: float) -> None:
        """READY/ACTIVE -> NO_LEASE once the lease is older than the timeout; an ACTIVE arm's hold
        reason is kept for :meth:`poll` (a :meth:`command` in between must not swallow it)."""
        if self.state in (L.READY, L.ACTIVE) and not self.fresh(now):
            was = self.state
            self._fire(LeaseEvent.EXPIRED)
            age = "never" if self.last_lease is None else f"{now - self.last_lease:.3f} s ago"
            if was is L.ACTIVE and self._hold_now is None:
                self._hold_now = (f"fleet lease expired (last from {self.holder}, {age}; "
                                  f"timeout {self.lease_timeout:g} s)")

    def command(self, now: float) -> None:
        """An explicit command: allowed (and the arm may move) only with a fresh lease and no fleet
        e-stop; raises CommandRejected ``no_lease`` / ``fleet_estop`` otherwise. A hold it finds due
        (the lease just expired, an e-stop just arrived) stays for the next :meth:`poll`."""
        self._expire(now)
        if self.state is L.ESTOPPED:
            raise CommandRejected("fleet_estop", f"{self.estop_reason}; an authorised station must clear it")
        if self.state is L.NO_LEASE:
            raise CommandRejected("no_lease", f"no fleet lease fresher than {self.lease_timeout:g} s "
                                              f"from an authorised station ({', '.join(sorted(self.stations))})")
        self._fire(LeaseEvent.COMMAND)

    def may_move(self, now: float) -> bool:
        return self.state is L.ACTIVE and self.fresh(now)

    def _fire(self, event: LeaseEvent) -> None:
        self.state = TRANSITIONS.get((self.state, event), self.state)


class LeaseGate:
    """The bridge's hook: MQTT messages in (any thread), ``poll``/``command`` from the arm thread.

    ``on_message(topic, payload, now)`` parses and dispatches both fleet topics, dropping and
    counting what fails its schema; the rest forwards to :class:`FleetLease` under one lock."""

    topics = (LEASE_TOPIC, ESTOP_TOPIC)

    def __init__(self, lease: FleetLease) -> None:
        self.lease = lease
        self._lock = threading.Lock()

    def on_message(self, topic: str, payload: bytes | str, now: float, *, retained: bool = False) -> bool:
        """One message of either fleet topic received at ``now`` [s, arm clock]. ``retained``: the
        broker kept it from before (stations never retain): a retained lease or clear is old news and
        dropped (``retained``); a retained e-stop still latches (refusing a stop is never the safe choice)."""
        try:
            if topic == LEASE_TOPIC:
                if retained:
                    raise CommandRejected("retained", "a retained lease is not fresh")
                lease = parse_lease(payload)
                with self._lock:
                    return self.lease.on_lease(lease, now)
            if topic == ESTOP_TOPIC:
                estop = parse_estop(payload)
                if retained and estop.clear:
                    raise CommandRejected("retained", "a retained clear is not a live operator's")
                with self._lock:
                    return self.lease.on_estop(estop, now)
        except CommandRejected as exc:
            with self._lock:
                self.lease.dropped[exc.reason] += 1
            return False
        return False

    def poll(self, now: float) -> str | None:
        with self._lock:
            return self.lease.poll(now)

    def command(self, now: float) -> None:
        with self._lock:
            self.lease.command(now)

    def may_move(self, now: float) -> bool:
        with self._lock:
            return self.lease.may_move(now)

    @property
    def state(self) -> LeaseState:
        return self.lease.state

    def status(self, now: float) -> dict[str, Any]:
        """The status's ``fleet`` object at ``now`` [s, arm clock]: ``state``, ``holder`` (the station
        of the last accepted lease), ``lease_age`` [s] (None before any), ``lease_timeout`` [s],
        ``stations`` (authorised), ``estop`` (the latched fleet e-stop's reason, else None) and
        ``dropped`` (messages refused, by reason)."""
        with self._lock:
            fl = self.lease
            return {"state": fl.state.value, "holder": fl.holder,
                    "lease_age": None if fl.last_lease is None else max(0.0, now - fl.last_lease),
                    "lease_timeout": fl.lease_timeout, "stations": sorted(fl.stations),
                    "estop": fl.estop_reason if fl.state is LeaseState.ESTOPPED else None,
                    "dropped": dict(fl.dropped)}


def lease_message(station: str, epoch: str, seq: int, arms: Iterable[str] | None = None,
                  sent: float | None = None) -> bytes:
    """A station's heartbeat payload (the panel and ``teleop-send`` publish this at HEARTBEAT_HZ);
    ``sent`` [s] is the station's monotonic clock."""
    obj: dict[str, object] = {"station": station, "epoch": epoch, "seq": int(seq)}
    if sent is not None:
        obj["t"] = float(sent)
    if arms is not None:
        obj["arms"] = list(arms)
    return json.dumps(obj).encode()


def estop_message(station: str, *, clear: bool = False, reason: str = "") -> bytes:
    return json.dumps({"station": station, "clear": clear, "reason": reason}).encode()


class Heartbeat:
    """A station's side: one lease message per call, a new ``epoch`` per instance (per station start).

    ``paused`` while the station shows an e-stop: it must not lease anything then (docs/fleet.md), so
    an arm that missed the e-stop message still holds when its lease runs out."""

    def __init__(self, station: str, arms: Iterable[str] | None = None, *,
                 clock: TeleopClock = SYSTEM_CLOCK) -> None:
        self.clock = clock  # the station's monotonic clock stamps each message's send time
        self.station = _ident({"station": station}, "station")
        self.arms = tuple(arms) if arms is not None else None
        self.epoch = secrets.token_hex(6)
        self.seq = 0
        self.paused = False

    def message(self) -> bytes:
        self.seq += 1
        return lease_message(self.station, self.epoch, self.seq, self.arms, sent=self.clock.monotonic())


async def publish_heartbeats(client: Any, heartbeat: Heartbeat, stop: asyncio.Event,
                             rate_hz: float = HEARTBEAT_HZ) -> int:
    """Publish ``heartbeat`` on :data:`LEASE_TOPIC` at ``rate_hz`` through an aiomqtt-style ``client``
    (QoS 0, not retained) until ``stop`` is set; skipped while paused. Returns the count published.

    On absolute deadlines, so a slow publish does not stretch the period; a station that falls more
    than one period behind publishes at once instead of bursting."""
    loop = asyncio.get_running_loop()
    period = 1.0 / rate_hz
    due = loop.time()
    sent = 0
    while not stop.is_set():
        if not heartbeat.paused:
            await client.publish(LEASE_TOPIC, heartbeat.message(), qos=0, retain=False)
            sent += 1
        due = max(due + period, loop.time())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=max(0.0, due - loop.time()))
    return sent
