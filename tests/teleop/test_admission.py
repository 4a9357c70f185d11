"""Freshness, per-client ordering and token-bucket rate limits of incoming commands."""

from __future__ import annotations

import math

import pytest

from hebictl.errors import CommandRejected
from hebictl.teleop.admission import Admission, RateLimit, TokenBucket
from hebictl.teleop.schema import Envelope


class Clock:
    """Hand-set clock for the admission's wall and monotonic time."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize(("age", "reason"), [
    (0.0, None), (0.999, None), (-0.999, None), (1.001, "stale"), (30.0, "stale"), (-1.001, "from_future"),
])
def test_freshness_window(age, reason):
    """Commands older than max_age or further ahead than max_skew (default max_age) are refused."""
    wall = Clock(1.7e9)
    adm = Admission(max_age=1.0, wall_clock=wall)
    env = Envelope(1, wall.t - age, "op")
    if reason is None:
        adm.check_fresh(env)
    else:
        with pytest.raises(CommandRejected, match=reason):
            adm.check_fresh(env)


def test_order_is_per_client_and_strict():
    """seq must increase per client; another client's counter is independent; equal seq is a replay."""
    adm = Admission()
    adm.check_order(Envelope(10, 0.0, "a"))
    adm.check_order(Envelope(3, 0.0, "b"))
    for seq in (10, 9, 0):
        with pytest.raises(CommandRejected, match="out_of_order"):
            adm.check_order(Envelope(seq, 0.0, "a"))
    adm.check_order(Envelope(11, 0.0, "a"))
    adm.check_order(Envelope(4, 0.0, "b"))


def test_seq_ahead_of_the_clock_is_refused_and_not_recorded():
    """Issue 20: one command with seq 2^63-1 under a client's name locked that client out. A seq
    beyond the wall clock in µs (+ max_skew) is refused and leaves the client's counter alone."""
    wall = Clock(1_800_000_000.0)
    adm = Admission(max_age=1.0, wall_clock=wall)
    now_us = 1_800_000_000 * 1_000_000
    adm.check_order(Envelope(now_us, 0.0, "panel"))              # what TeleopClient and the panel start at
    for seq in (2**63 - 1, now_us + 1_000_001):
        with pytest.raises(CommandRejected, match="seq_ahead"):
            adm.check_order(Envelope(seq, 0.0, "panel"))
    adm.check_order(Envelope(now_us + 1, 0.0, "panel"))          # the panel's next command still passes
    adm.check_order(Envelope(now_us + 1_000_000, 0.0, "other"))  # within the skew: accepted
    adm.check_order(Envelope(1, 0.0, "counter"))                 # counters from 1 are far behind the clock


def test_client_memory_is_bounded_lru():
    """Beyond max_clients the least recently heard client is forgotten, the others are kept."""
    adm = Admission(max_clients=3)
    for name in "abc":
        adm.check_order(Envelope(5, 0.0, name))
    adm.check_order(Envelope(6, 0.0, "a"))      # a is now the most recent
    adm.check_order(Envelope(1, 0.0, "d"))      # evicts b
    adm.check_order(Envelope(1, 0.0, "b"))      # b forgotten: accepted again
    with pytest.raises(CommandRejected):
        adm.check_order(Envelope(6, 0.0, "a"))


@pytest.mark.parametrize(("rate", "burst", "arrival_hz", "seconds"), [
    (20.0, 5.0, 200.0, 2.0), (1000.0, 100.0, 5000.0, 0.5), (20.0, 5.0, 10.0, 2.0),
])
def test_token_bucket_admits_burst_plus_rate(rate, burst, arrival_hz, seconds):
    """Over T seconds a bucket admits min(arrivals, burst + rate*T) messages (to within one)."""
    bucket = TokenBucket(rate, burst, now=0.0)
    n = int(arrival_hz * seconds)
    admitted = sum(bucket.take(k / arrival_hz) for k in range(n))
    expected = min(n, burst + rate * (n - 1) / arrival_hz)
    assert abs(admitted - expected) <= 1.0, (admitted, expected)


def test_rate_limit_per_topic():
    """Flooding one topic does not eat another topic's budget; a refill restores it."""
    mono = Clock(0.0)
    adm = Admission(rate_limits={"joint_goal": RateLimit(20.0, 5.0), "stop": RateLimit(50.0, 2.0)}, monotonic=mono)
    assert [_ok(adm, "joint_goal") for _ in range(7)] == [True] * 5 + [False] * 2
    assert _ok(adm, "stop")
    mono.t = 0.05  # one token back at 20/s
    assert _ok(adm, "joint_goal") and not _ok(adm, "joint_goal")
    assert _ok(adm, "unlimited_topic")


def _ok(adm: Admission, name: str) -> bool:
    try:
        adm.check_rate(name)
    except CommandRejected as exc:
        assert exc.reason == "rate_limited"
        return False
    return True


def test_bad_settings_refused():
    """Non-positive ages and buckets are configuration errors, not silent defaults."""
    with pytest.raises(ValueError):
        Admission(max_age=0.0)
    with pytest.raises(ValueError):
        Admission(max_age=math.inf)
    with pytest.raises(ValueError):
        TokenBucket(0.0, 5.0, 0.0)
