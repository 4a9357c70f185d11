"""Admission of commands before they reach the arm: freshness, ordering and rate.

* **Freshness**: ``ts`` (sender's wall clock) must be at most ``max_age`` seconds old by the
  bridge's wall clock, and not more than ``max_skew`` seconds in the future. Both machines'
  clocks must agree (NTP/chrony): a skew of ``s`` seconds eats ``s`` of the age budget, and a
  sender running ahead by more than ``max_skew`` is refused outright instead of having its
  commands live longer. Wall time is used only for this comparison; every timeout inside the arm
  (jog ``ttl``, rate limits) runs on the arm's monotonic clock from the moment of receipt.
* **Ordering**: ``seq`` must be larger than the last one seen from the same ``client`` (one
  counter per client across all topics), so a replayed or reordered message cannot undo a newer
  one. Memory is bounded: the least recently heard clients are forgotten beyond ``max_clients``
  (their replays are then still bounded by the freshness check). A ``seq`` ahead of the wall
  clock in microseconds (plus ``max_skew``) is refused ``seq_ahead`` and not recorded: clients
  start their counter at the current time in microseconds (or lower) and count up, so anyone
  allowed to publish under a client's name cannot lock it out with ``seq`` 2^63-1; the most a
  same-account sender can do is push that client's counter ``max_skew`` ahead. Client names
  themselves are bound to broker accounts by the bridge (see :mod:`hebictl.teleop.bridge`).
* **Rate**: one token bucket per command topic, shared by all clients, so a flood on one topic
  cannot starve the arm; jog may stream fast, goals are limited to a few per second.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hebictl.errors import CommandRejected
from hebictl.teleop.clock import SYSTEM_CLOCK
from hebictl.teleop.schema import Envelope


@dataclass(frozen=True)
class RateLimit:
    """Sustained ``rate`` [messages/s] with bursts of up to ``burst`` messages."""

    rate: float
    burst: float


#: ``seq`` units per second of wall clock: clients count from the current time in microseconds
SEQ_PER_SECOND = 1_000_000

DEFAULT_RATE_LIMITS: dict[str, RateLimit] = {
    "jog": RateLimit(1000.0, 100.0),
    "joint_goal": RateLimit(20.0, 5.0),
    "cartesian_goal": RateLimit(20.0, 5.0),
    "gripper": RateLimit(20.0, 5.0),
    "stop": RateLimit(50.0, 10.0),
    "mode": RateLimit(10.0, 5.0),
    "velocity": RateLimit(1000.0, 100.0),  # a mobile base's stream (hebictl.teleop.base): as jog
    "input": RateLimit(200.0, 100.0),  # a Mobile IO stream (a phone sends ~100 samples/s; the panel 20)
    "estop": RateLimit(50.0, 10.0),  # engaging is never refused; the limit applies to releases
}


class TokenBucket:
    """Classic token bucket on a monotonic clock [s]."""

    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if not (rate > 0 and burst >= 1):
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = now

    def take(self, now: float) -> bool:
        """Spend one token if there is one; False when the rate is exceeded."""
        elapsed = now - self.last
        if elapsed > 0.0:
            self.tokens = min(self.burst, self.tokens + elapsed * self.rate)
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class Admission:
    """Freshness, per-client ordering and per-topic rate checks (one instance per bridge)."""

    def __init__(self, *, max_age: float = 1.0, max_skew: float | None = None,
                 rate_limits: Mapping[str, RateLimit] | None = None, max_clients: int = 1024,
                 wall_clock: Callable[[], float] = SYSTEM_CLOCK.wall,
                 monotonic: Callable[[], float] = SYSTEM_CLOCK.monotonic) -> None:
        """``max_age`` [s]: oldest accepted command; ``max_skew`` [s]: furthest accepted in the
        future (default ``max_age``)."""
        if not (math.isfinite(max_age) and max_age > 0):
            raise ValueError(f"max_age must be finite and > 0 s, got {max_age}")
        self.max_age = float(max_age)
        self.max_skew = float(max_age if max_skew is None else max_skew)
        self.wall_clock = wall_clock
        self.monotonic = monotonic
        now = monotonic()
        limits = dict(DEFAULT_RATE_LIMITS if rate_limits is None else rate_limits)
        self.buckets = {name: TokenBucket(r.rate, r.burst, now) for name, r in limits.items()}
        self.max_clients = max_clients
        self._last_seq: OrderedDict[str, int] = OrderedDict()

    def check_fresh(self, env: Envelope) -> None:
        age = self.wall_clock() - env.ts
        if age > self.max_age:
            raise CommandRejected("stale", f"sent {age:.3f} s ago (> max age {self.max_age:.3f} s; check clock sync)")
        if age < -self.max_skew:
            raise CommandRejected("from_future", f"timestamp {-age:.3f} s ahead of the arm's clock "
                                                 f"(> {self.max_skew:.3f} s; check clock sync)")

    def check_order(self, env: Envelope) -> None:
        """Reject ``seq`` <= the last seen from this client, or ahead of the clock; otherwise record it."""
        horizon = int((self.wall_clock() + self.max_skew) * SEQ_PER_SECOND)
        if env.seq > horizon:
            raise CommandRejected("seq_ahead", f"seq {env.seq} is ahead of the arm's clock ({horizon} µs since "
                                               "the epoch); start seq at the current time in µs or lower")
        last = self._last_seq.get(env.client)
        if last is not None and env.seq <= last:
            raise CommandRejected("out_of_order", f"seq {env.seq} <= last seq {last} from client {env.client!r}")
        self._last_seq[env.client] = env.seq
        self._last_seq.move_to_end(env.client)
        while len(self._last_seq) > self.max_clients:
            self._last_seq.popitem(last=False)

    def check_rate(self, name: str) -> None:
        bucket = self.buckets.get(name)
        if bucket is not None and not bucket.take(self.monotonic()):
            raise CommandRejected("rate_limited", f"more than {bucket.rate:g} cmd/{name} messages per second")

    def admit(self, name: str, env: Envelope) -> None:
        """All three checks, in order: fresh, in order, within rate."""
        self.check_fresh(env)
        self.check_order(env)
        self.check_rate(name)
