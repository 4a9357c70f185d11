"""What the bridge does with a command message before it decodes it: per-account rate limits and a
bounded inbound queue that drops jog samples first.

Under a flood, the cost that matters is the work done per message in the teleop process, which
shares the GIL with the arm's control thread. Decoding, validating and acking every message of a
4k msg/s jog flood before a rate limit refused it cost the arm control gaps of a second (issue 33).
So this layer sits inside aiomqtt's receive callback (as its ``queue_type``) and looks at the topic
string only:

* **per-account limits**: one token bucket per (broker account, command) with the rates of
  :data:`FLOOD_LIMITS`; the account is the ``/@<account>`` tag the
  broker plugin of docs/teleop.md appends (untagged messages share one bucket per command). A
  message over its account's rate is dropped undecoded and counted; one account's flood cannot use
  up another's budget.
* **bounded queue, jog first to go**: at most ``maxlen`` messages wait; when it is full, the oldest
  waiting jog sample of the account with the most jog samples waiting is dropped (a jog stream only
  needs its latest sample, and a flood's samples go before an operator's), and only when no jog
  sample waits is the newcomer dropped. Messages otherwise stay in arrival order (a ``stop`` never
  overtakes the jog samples sent before it).
* **e-stop not here**: ``cmd/estop`` arrives on the bridge's own e-stop connection (see
  :mod:`hebictl.teleop.bridge`); copies delivered on the main connection are dropped here unread.

The e-stop connection has a bounded queue of its own (:class:`EstopQueue`, ``estop_size``
messages), because an engage is taken from anyone and a flood of them must not grow the process
without bound. It cannot drop the newcomer blindly (the operator's engage may be it) nor the
oldest (that may be the only engage). It reads each payload (a bounded JSON decode: e-stop
payloads are small) and, when full, drops what leaves the arm at least as stopped as it would be:
first a payload that is no e-stop at all (the schema would reject it), then the oldest release (a
dropped release leaves the arm stopped; its sender resends), then an engage of an account that
has a later engage waiting (the later one still engages and still makes the account an owner),
and only when the queue holds nothing but one engage per account, the newcomer. Each drop is
counted (``estop_queue_dropped``). An arm in a fleet (docs/fleet.md) also takes the fleet topics
on that connection: a fleet e-stop counts as an engage (its ``clear`` as a release), and a lease
heartbeat as "no e-stop", the first to go (a lost heartbeat can only hold the arm).
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any

from hebictl.errors import CommandRejected
from hebictl.teleop.admission import RateLimit, TokenBucket
from hebictl.teleop.lease import ESTOP_TOPIC, LEASE_TOPIC
from hebictl.teleop.schema import decode
from hebictl.teleop.topics import Topics

#: per account and command, before decoding: a flood guard above the per-topic limits of
#: :data:`~hebictl.teleop.admission.DEFAULT_RATE_LIMITS` (which answer an over-rate command with a
#: ``rate_limited`` ack after decoding), so that ordinary use never meets it; what it drops is
#: counted in the status (``bridge.flood_dropped``), not acked one by one
FLOOD_LIMITS: dict[str, RateLimit] = {
    "jog": RateLimit(1000.0, 200.0),
    "joint_goal": RateLimit(50.0, 50.0),
    "cartesian_goal": RateLimit(50.0, 50.0),
    "gripper": RateLimit(50.0, 50.0),
    "stop": RateLimit(100.0, 50.0),
    "mode": RateLimit(50.0, 50.0),
    "input": RateLimit(500.0, 200.0),
    "velocity": RateLimit(1000.0, 200.0),   # a mobile base's stream (hebictl.teleop.base): as jog
}


class InboundGate:
    """The per-message checks on the topic alone: whose command is it, and is that account within
    its rate. ``max_accounts`` bounds the buckets kept (least recently heard forgotten)."""

    def __init__(self, topics: Topics, monotonic: Callable[[], float], *,
                 limits: Mapping[str, RateLimit] | None = None, max_accounts: int = 256) -> None:
        self.topics = topics
        self.monotonic = monotonic
        self.limits = dict(FLOOD_LIMITS if limits is None else limits)
        self.max_accounts = max_accounts
        self._buckets: OrderedDict[tuple[str | None, str], TokenBucket] = OrderedDict()
        #: messages dropped undecoded: over an account's rate, queue full (jog / other), e-stop copies
        self.stats: dict[str, int] = {"flood_dropped": 0, "queue_dropped_jog": 0, "queue_dropped": 0,
                                      "estop_queue_dropped": 0}
        #: True once :func:`filter_paho` checks messages ahead of the queue
        self.upstream = False

    def admit(self, topic: str) -> str | None:
        """The command name of a message to queue, or None to drop it (not this arm's command, an
        e-stop copy, or over its account's rate)."""
        parsed = self.topics.command_and_account(topic)
        if parsed is None or parsed[0] == "estop":
            return None
        name, account = parsed
        limit = self.limits.get(name)
        if limit is None:
            return name  # unknown command: the schema rejects it (and counts it) after decoding
        key = (account, name)
        bucket = self._buckets.get(key)
        now = self.monotonic()
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(limit.rate, limit.burst, now)
            while len(self._buckets) > self.max_accounts * len(self.limits):
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        if bucket.take(now):
            return name
        self.stats["flood_dropped"] += 1
        return None


class InboundLanes:
    """The storage of :class:`InboundQueue`: arrival order, the jog samples waiting per account, a bound.

    A full queue drops the oldest jog sample of the account with the most jog samples waiting (on a
    tie, the sending account's): a flood's samples go before an operator's stream, which keeps every
    sample while it sends fewer than the flooder (untagged senders share one account and still
    compete with each other)."""

    def __init__(self, gate: InboundGate, maxlen: int) -> None:
        self.gate = gate
        self.maxlen = maxlen
        self.items: deque[tuple[str, str | None, Any]] = deque()
        #: jog samples waiting, per account (None: untagged)
        self.jogs: Counter[str | None] = Counter()

    def __len__(self) -> int:
        return len(self.items)

    def push(self, item: Any) -> None:
        topic = item.topic.value
        name = self.gate.topics.command_name(topic) if self.gate.upstream else self.gate.admit(topic)
        if name is None or name == "estop":
            return
        account = self._account(topic) if name == "jog" else None
        if len(self.items) >= self.maxlen and not self._drop_a_flooders_jog(account if name == "jog" else ...):
            self.gate.stats["queue_dropped"] += 1
            return
        self.items.append((name, account, item))
        if name == "jog":
            self.jogs[account] += 1

    def pop(self) -> Any:
        name, account, item = self.items.popleft()
        if name == "jog":
            self._forget_jog(account)
        return item

    def _account(self, topic: str) -> str | None:
        parsed = self.gate.topics.command_and_account(topic)
        return None if parsed is None else parsed[1]

    def _forget_jog(self, account: str | None) -> None:
        self.jogs[account] -= 1
        if not self.jogs[account]:
            del self.jogs[account]

    def _drop_a_flooders_jog(self, newcomer: object) -> bool:
        """Drop the oldest jog sample of the account with the most waiting; on a tie, the newcomer's
        account (a jog sample's sender; ``...`` for any other command) if it is one of them."""
        if not self.jogs:
            return False
        most = max(self.jogs.values())
        tied = [a for a, n in self.jogs.items() if n == most]
        flooder = newcomer if newcomer in tied else tied[0]
        for i, (name, account, _) in enumerate(self.items):
            if name == "jog" and account == flooder:
                del self.items[i]
                self._forget_jog(account)
                self.gate.stats["queue_dropped_jog"] += 1
                return True
        return False  # pragma: no cover - a count > 0 means one is there


class InboundQueue(asyncio.Queue):
    """aiomqtt's ``queue_type`` for the bridge's command connection (see the module docstring).
    aiomqtt constructs it with ``maxsize`` only; the bridge makes a subclass bound to its gate
    with :func:`inbound_queue_type`. asyncio's own ``maxsize`` stays 0: the bound is the lanes'."""

    gate: InboundGate
    lane_size: int

    def _init(self, maxsize: int) -> None:  # asyncio.Queue's storage hook
        self._queue = InboundLanes(self.gate, self.lane_size)

    def _put(self, item: Any) -> None:
        self._queue.push(item)

    def _get(self) -> Any:
        return self._queue.pop()


def inbound_queue_type(gate: InboundGate, lane_size: int) -> type[InboundQueue]:
    """An :class:`InboundQueue` class whose instances use ``gate`` and hold ``lane_size`` messages."""
    return type("BoundInboundQueue", (InboundQueue,), {"gate": gate, "lane_size": lane_size})


def filter_paho(client: Any, gate: InboundGate) -> bool:
    """Check each message in paho's own callback, before aiomqtt builds its message object: under
    a flood most messages then cost paho's packet parsing and one topic check. aiomqtt keeps its
    paho client in ``_client`` (aiomqtt 2.x); where it does not, the queue checks instead (False)."""
    paho = getattr(client, "_client", None)
    deliver = getattr(paho, "on_message", None)
    if paho is None or deliver is None:
        return False

    def on_message(mqttc: Any, userdata: Any, message: Any) -> None:
        if gate.admit(message.topic) is not None:
            deliver(mqttc, userdata, message)

    paho.on_message = on_message
    gate.upstream = True
    return True


#: what an e-stop connection's message asks, read from its payload: the order in which a full queue drops
ESTOP_OTHER, ESTOP_RELEASE, ESTOP_ENGAGE = "other", "release", "engage"


def estop_kind(payload: Any) -> str:
    """Whether an e-stop payload engages, releases, or is no e-stop (the schema will reject it)."""
    try:
        obj = decode(payload if isinstance(payload, bytes | bytearray | str) else b"")
    except CommandRejected:
        return ESTOP_OTHER
    engaged = obj.get("engaged")
    if engaged is True:
        return ESTOP_ENGAGE
    return ESTOP_RELEASE if engaged is False else ESTOP_OTHER


#: the account key fleet messages carry in the e-stop queue (no broker account can be named so)
FLEET_LANE = "\x00fleet"


def fleet_kind(topic: str, payload: Any) -> str | None:
    """The drop class of a fleet message on the e-stop connection (None: not a fleet topic)."""
    if topic == LEASE_TOPIC:
        return ESTOP_OTHER
    if topic != ESTOP_TOPIC:
        return None
    try:
        obj = decode(payload if isinstance(payload, bytes | bytearray | str) else b"")
    except CommandRejected:
        return ESTOP_OTHER
    return ESTOP_RELEASE if obj.get("clear") is True else ESTOP_ENGAGE


class EstopLanes:
    """The storage of :class:`EstopQueue`: arrival order, a bound, the drop order of the module
    docstring. Items are (kind, account, message)."""

    def __init__(self, gate: InboundGate, maxlen: int) -> None:
        self.gate = gate
        self.maxlen = max(1, maxlen)
        self.items: list[tuple[str, str | None, Any]] = []

    def __len__(self) -> int:
        return len(self.items)

    def push(self, item: Any) -> None:
        topic = item.topic.value
        parsed = self.gate.topics.command_and_account(topic)
        if parsed is not None and parsed[0] == "estop":
            self.items.append((estop_kind(item.payload), parsed[1], item))
        else:  # the connection subscribes to cmd/estop/# and the fleet topics only: anything else is not ours
            kind = fleet_kind(topic, item.payload)
            if kind is None:
                return
            self.items.append((kind, FLEET_LANE, item))  # its own "account": never redundant to an arm's engage
        while len(self.items) > self.maxlen:
            del self.items[self._victim()]
            self.gate.stats["estop_queue_dropped"] += 1

    def pop(self) -> Any:
        return self.items.pop(0)[2]

    def _victim(self) -> int:
        """The index of the message to drop from a queue one over its bound."""
        for kind in (ESTOP_OTHER, ESTOP_RELEASE):
            for i, (k, _, _) in enumerate(self.items):
                if k == kind:
                    return i
        later: set[str | None] = set()
        redundant = None
        for i in range(len(self.items) - 1, -1, -1):  # the oldest engage with a later one of its account
            account = self.items[i][1]
            if account in later:
                redundant = i
            later.add(account)
        return len(self.items) - 1 if redundant is None else redundant


class EstopQueue(asyncio.Queue):
    """aiomqtt's ``queue_type`` for the bridge's e-stop connection (bounded; see the module
    docstring). Bound to a gate (its topics and counters) by :func:`estop_queue_type`."""

    gate: InboundGate
    lane_size: int

    def _init(self, maxsize: int) -> None:  # asyncio.Queue's storage hook
        self._queue = EstopLanes(self.gate, self.lane_size)

    def _put(self, item: Any) -> None:
        self._queue.push(item)

    def _get(self) -> Any:
        return self._queue.pop()


def estop_queue_type(gate: InboundGate, lane_size: int) -> type[EstopQueue]:
    """An :class:`EstopQueue` class whose instances use ``gate`` and hold ``lane_size`` messages."""
    return type("BoundEstopQueue", (EstopQueue,), {"gate": gate, "lane_size": lane_size})
