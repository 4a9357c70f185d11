"""The MQTT side of teleop: an asyncio task that connects to the broker, validates commands and
hands them to the arm thread, and publishes the arm's state.

One session = one connection: subscribe to ``cmd/#``, publish ``state/status`` (retained,
``online``) with a last will that turns it ``offline`` if the connection dies, then run three
tasks side by side (receive commands, publish acks, publish state at ``state_rate_hz``). When
the session ends for any reason other than a requested stop, the arm is told the link is lost
(it brakes, holds and drops to mode ``idle``) and the bridge reconnects with exponential
back-off, capped at ``backoff_max`` seconds. Nothing resumes by itself after a reconnect.

Every message is handled inside ``try``: a payload can get a command rejected, never the bridge
killed. Order of checks: decode → envelope → body (:mod:`~hebictl.teleop.schema`) → freshness,
order, rate (:mod:`~hebictl.teleop.admission`) → mode → reach at rated speed
(:mod:`~hebictl.teleop.feasibility`), all before anything is queued for the arm. Engaging the
e-stop skips the admission checks (stale, reordered, rate-limited, even retained): refusing a
stop is never the safe choice.

A retained command is never executed. The broker delivers a retained message with the retain
flag only to a subscriber that arrives after it was published (MQTT 3.1.1 clears the flag on live
delivery), so the bridge sees it on (re)connect: it rejects it with reason ``retained`` and
clears it from the broker (an empty retained payload on the same topic), so that it cannot come
back on the next connection. A retained e-stop engage still engages (and is cleared).

Acks go through an :class:`~hebictl.teleop.acks.AckQueue`: under a flood, rejections coalesce
per client and reason instead of being dropped; the counts are in ``state/status``.

The e-stop goes first under any load (issue 33). ``cmd/estop`` has a connection of its own: a
second MQTT client that subscribes to ``cmd/estop/#`` only, with a persistent session
(``clean_session=False``, QoS 1), so an e-stop published while the bridge reconnects is queued by
the broker and delivered when it is back; it is decoded and handled on its own task, never behind
other commands. The command connection's messages pass :mod:`~hebictl.teleop.inbound` before
anything is decoded (per-account rate limits, a bounded queue that drops jog samples first), and
Cartesian goals are solved (IK) by a worker task with a short bounded queue of its own (full:
``busy``), so the receive loop only validates and hands over.

Accounts (with the broker plugin of docs/teleop.md, detected at the first connection or set with
``account_tags``): a command without the plugin's ``/@<account>`` tag is refused ``untagged``
(only an e-stop engage is taken from anyone), and the e-stop belongs to the accounts that engaged
it: another account's release is refused ``estop_owner``, except a release with ``"override":
true`` from a ``supervisors`` account, which is logged as an override. The arm's MQTT client id
carries a random part of its own, not the ``session`` published in the status.

``cmd/input`` (a Mobile IO sample stream, docs/mobile_io.md) passes the same topic check, account
rate limit, envelope, account binding and admission (fresh, in order, within rate) as every
command; its body is then validated by the app's own input source (``hebictl.inputs.schema``,
through :meth:`~hebictl.teleop.runner.AppDriver.offer`: dropped and counted by reason) and only in
mode ``app``; it is acked only when refused (throttled, as jog samples are).

Fleet (the runner has a :class:`~hebictl.teleop.lease.LeaseGate`, docs/fleet.md): the e-stop
connection also subscribes to the fleet lease (QoS 0) and the fleet e-stop (QoS 1), so a fleet
e-stop goes first as every e-stop does, and heartbeats never wait behind a command flood; each
message goes to the gate with its receipt time on the arm's clock (the gate validates, drops and
counts; the arm thread polls it every cycle). The status carries the gate's state (``fleet``).

To extend the bridge (another retained topic on connect, another inbound topic), add a step to
:meth:`MqttBridge._session` or a branch to :meth:`MqttBridge.handle`; the clocks it reads are
injected (:class:`~hebictl.teleop.clock.TeleopClock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import secrets
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from hebictl.errors import CommandRejected, TeleopError
from hebictl.tasks import cancel_and_wait
from hebictl.teleop.acks import AckQueue
from hebictl.teleop.admission import Admission
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.connection import BrokerSettings
from hebictl.teleop.description import description_payload
from hebictl.teleop.feasibility import check_reach, solve_cartesian
from hebictl.teleop.inbound import InboundGate, estop_queue_type, filter_paho, inbound_queue_type
from hebictl.teleop.lease import ESTOP_TOPIC, LEASE_TOPIC, LeaseGate
from hebictl.teleop.messages import Ack, ee_pose_payload, joints_payload, status_payload
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import (
    CartesianGoalCommand,
    CommandSchema,
    EstopCommand,
    EstopOverride,
    JogCommand,
    JointGoalCommand,
    ModeCommand,
    decode,
    envelope,
    loose_ids,
    salvage_ids,
)
from hebictl.teleop.silence import REPORT_PERIOD_S
from hebictl.teleop.topics import Topics

if TYPE_CHECKING:
    import aiomqtt

    from hebictl.teleop.runner_proxy import RunnerProxy
    from hebictl.teleop.silence import ThreadWatch
    from hebictl.teleop.snapshot import ArmSnapshot

log = logging.getLogger(__name__)

#: streamed command topics: their rejections are acked at most every ``reject_ack_period`` per client and
#: reason (a mobile base's ``velocity`` is streamed as a jog: :mod:`hebictl.teleop.base_bridge`)
STREAMED = ("jog", "input", "velocity")


def arm_client_id(arm_id: str, username: str | None, session: str) -> str:
    """The arm's MQTT client id: ``<account>:hebictl-arm-<arm_id>-<session>``, or without the
    account prefix on a broker without accounts. The broker plugin of docs/teleop.md lets only
    the account itself use ids starting with ``<account>:``, and the random session part keeps
    the id unguessable even without the plugin: another client reusing it would disconnect the
    arm (MQTT's takeover of a client id)."""
    base = f"hebictl-arm-{arm_id}-{session}"
    return base if username is None else f"{username}:{base}"


def check_client_account(client: str, account: str | None) -> None:
    """Refuse a command whose ``client`` name is not bound to the broker ``account`` it came
    from (``<account>`` or ``<account>:<anything>``), so that acks, ordering and who-did-what
    name the account; ``""`` (an anonymous publisher) may not claim any account (no ``:``);
    None (the broker did not say) accepts any name."""
    if account is None or (account and (client == account or client.startswith(f"{account}:"))):
        return
    if not account:
        if ":" not in client:
            return
        raise CommandRejected("wrong_client", f"an anonymous client may not use the name {client[:60]!r}: "
                                              "a name with ':' belongs to a broker account")
    raise CommandRejected("wrong_client", f"client name {client[:60]!r} is not bound to the broker account "
                                          f"{account[:60]!r}: use '{account[:60]}' or '{account[:60]}:<name>'")


class MqttBridge:
    """Connects one :class:`~hebictl.teleop.runner.ArmRunner` to a broker (in the arm's process), or
    its :class:`~hebictl.teleop.runner_proxy.RunnerProxy` (in the bridge process of
    :mod:`~hebictl.teleop.bridge_process`).

    ``state_rate_hz`` [Hz] of ``state/joints`` and ``state/ee_pose``; ``status_period`` [s]
    between retained status refreshes (a change is published at once); ``backoff_initial`` /
    ``backoff_max`` [s] of reconnection; ``reject_ack_period`` [s]: repeated rejections of
    streamed jog messages with the same client and reason are acked at most this often (a
    1 kHz stream must not produce a 1 kHz ack stream; the ack that goes out counts the others);
    ``ack_queue_size``: distinct acks waiting before rejections coalesce per reason alone;
    ``description_period`` [s] between republishing the retained ``state/description`` (also
    published on every connect), so a spoofed copy does not stay for the whole connection;
    ``session``: the id published in every status (default: random per bridge, i.e. per teleop
    process); ``clock``: wall and monotonic time (injected for tests); ``inbound_size``:
    command messages waiting to be decoded (:mod:`~hebictl.teleop.inbound`; jog samples dropped
    first); ``ik_queue_size``: Cartesian goals waiting for IK (more are refused ``busy``);
    ``estop_size``: e-stop messages waiting on the e-stop connection (:class:`~hebictl.teleop.inbound.EstopQueue`:
    what a full queue drops never leaves the arm less stopped);
    ``account_tags``: True when the broker runs the plugin of docs/teleop.md (untagged commands
    refused), False when it does not, None to find out at the first connection (a client id of
    another account is refused only by the plugin); ``supervisors``: accounts whose release with
    ``"override": true`` releases an e-stop another account engaged (logged)."""

    def __init__(self, runner: ArmRunner | RunnerProxy, settings: BrokerSettings, arm_id: str, *,
                 schema: CommandSchema | None = None, admission: Admission | None = None,
                 state_rate_hz: float = 50.0, status_period: float = 0.5, backoff_initial: float = 0.1,
                 backoff_max: float = 5.0, reject_ack_period: float = 0.2, identifier: str | None = None,
                 description: dict[str, Any] | None = None, ack_queue_size: int = 1000,
                 description_period: float = 5.0, session: str | None = None,
                 clock: TeleopClock = SYSTEM_CLOCK, inbound_size: int = 256, ik_queue_size: int = 4,
                 estop_size: int = 64, account_tags: bool | None = None,
                 supervisors: frozenset[str] | set[str] = frozenset()) -> None:
        if not state_rate_hz > 0:
            raise ValueError(f"state rate must be > 0 Hz, got {state_rate_hz}")
        self.runner = runner
        self.clock = clock
        self.settings = settings
        self.topics = Topics(arm_id)
        self.schema = schema or CommandSchema(runner.arm.dof, runner.arm.limits)
        self.admission = admission or Admission()
        self.state_period = 1.0 / state_rate_hz
        self.status_period = status_period
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.reject_ack_period = reject_ack_period
        #: extra fields of the retained state/description (config name, backend): see teleop/description.py
        self.description = dict(description or {})
        if not description_period > 0:
            raise ValueError(f"description period must be > 0 s, got {description_period}")
        self.description_period = description_period
        #: random per teleop process: viewers clear the events of an earlier process when it changes
        self.session = session or secrets.token_hex(8)
        # the client id has a random part of its own: the session is published, the id must not be
        self.identifier = identifier or arm_client_id(arm_id, settings.username, secrets.token_hex(16))
        self.estop_identifier = f"{self.identifier}-estop"
        self.account_tags = account_tags
        self.supervisors = frozenset(supervisors)
        self.gate = InboundGate(self.topics, clock.monotonic)
        self.inbound_size = inbound_size
        self.estop_size = estop_size
        self.ik_queue_size = ik_queue_size
        self._ik_jobs: asyncio.Queue[CartesianGoalCommand] | None = None
        #: accounts that engaged the latched e-stop -> engage generation; releases waiting for their ack
        self.estop_owners: dict[str, int] = {}
        self._estop_generation = 0
        self._releases: dict[tuple[str | None, int | None], int] = {}
        self._description: tuple[bytes, str] | None = None  # payload and its hex sha256, built once
        self.stats: dict[str, int] = {"received": 0, "accepted": 0, "rejected": 0, "connects": 0,
                                      "disconnects": 0, "acks_coalesced": 0, "acks_dropped": 0,
                                      "retained_cleared": 0, "malformed": 0, "estop_overrides": 0}
        self.acks = AckQueue(clock.monotonic, ack_queue_size)
        self.connected = asyncio.Event()
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cleared: set[str] = set()   # command topics whose retained message we just cleared
        #: the arm thread's silence rule over this bridge's event loop (``--bridge thread``: set by
        #: :class:`~hebictl.teleop.server.TeleopServer`), which :meth:`run` then beats; None: no heartbeat
        #: (the bridge process's child, whose link reports for it; a test's bare bridge)
        self.watch: ThreadWatch | None = None
        self._failure: TeleopError | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop :meth:`run` serves in (None before it starts): :meth:`handle` belongs there."""
        return self._loop

    def stop(self) -> None:
        """End :meth:`run` (thread-safe): publish ``offline``, disconnect, return."""
        self._stop_requested = True
        if self.watch is not None:
            self.watch.expect_end()  # the teardown may keep the loop busy: no silence judged from here on
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # its loop closed: run() has ended already (it failed)
                loop.call_soon_threadsafe(stopping.set)

    async def run(self) -> None:
        """Connect, serve and reconnect until :meth:`stop` is called (or the task is cancelled). With a
        :attr:`watch`, beat it every REPORT_PERIOD_S, and end with a :class:`TeleopError` once the arm
        thread judged this loop wedged (it holds for the lost link already)."""
        import aiomqtt

        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        self.acks = AckQueue(self.clock.monotonic, self.acks.maxsize)  # its event belongs to this loop
        self.runner.on_result = self._post_ack_threadsafe
        backoff = self.backoff_initial
        failures = 0
        heartbeat = None if self.watch is None else asyncio.create_task(self._heartbeat(self.watch),
                                                                          name="teleop-heartbeat")
        try:
            while not self._stopping.is_set():
                was_connected = False
                reason = "connection failed"
                try:
                    will = aiomqtt.Will(self.topics.state("status"), self._status(None, online=False),
                                        qos=1, retain=True)
                    async with contextlib.AsyncExitStack() as stack:
                        # the e-stop connection first: its persistent session then holds any e-stop
                        # published while the command connection comes up
                        estop_client = await stack.enter_async_context(aiomqtt.Client(
                            **self.settings.client_options(), identifier=self.estop_identifier,
                            clean_session=False, timeout=5.0,
                            queue_type=estop_queue_type(self.gate, self.estop_size)))
                        client = aiomqtt.Client(**self.settings.client_options(), identifier=self.identifier,
                                                will=will, clean_session=True, timeout=5.0,
                                                queue_type=inbound_queue_type(self.gate, self.inbound_size))
                        filter_paho(client, self.gate)
                        await stack.enter_async_context(client)
                        was_connected = True
                        if self.account_tags is None:
                            self.account_tags = await self._probe_plugin()
                        backoff = self.backoff_initial
                        if failures:
                            log.warning("connected to the broker at %s after %d failed attempt(s)",
                                        self.settings.url, failures)
                        failures = 0
                        self.stats["connects"] += 1
                        await self._session(client, estop_client)
                except aiomqtt.MqttError as exc:
                    reason = str(exc) or type(exc).__name__
                finally:
                    self.connected.clear()
                if self._stopping.is_set():
                    break
                if was_connected:
                    self.stats["disconnects"] += 1
                    log.warning("lost the broker at %s: %s; arm holds, reconnecting", self.settings.url, reason)
                    self.runner.link_lost(f"lost the broker at {self.settings.url}: {reason}")
                else:
                    failures += 1
                    if failures == 1:  # at once, loudly, with the schedule; then quietly until it works
                        log.warning("cannot reach the broker at %s: %s; the arm holds; retrying in %.2g s, "
                                    "doubling to every %.2g s (±20 %%)", self.settings.url, reason, backoff,
                                    self.backoff_max)
                    else:
                        log.info("cannot reach the broker at %s (attempt %d): %s; retry in %.2g s",
                                 self.settings.url, failures, reason, backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), timeout=backoff * random.uniform(0.8, 1.2))
                backoff = min(backoff * 2.0, self.backoff_max)
        finally:
            self.runner.on_result = None
            if heartbeat is not None:
                assert self.watch is not None
                self.watch.expect_end()  # the loop serves no more: its silence is no lost link
                await cancel_and_wait([heartbeat])
        if self._failure is not None:
            raise self._failure

    async def _heartbeat(self, watch: ThreadWatch) -> None:
        """The silence rule's reports (hebictl.teleop.silence): a beat every REPORT_PERIOD_S while this
        loop runs. A loop that finds itself judged wedged (blocked past the limit: the arm brakes and
        holds for the lost link) ends the bridge, as a wedged bridge process is killed: it does not
        resume serving an arm that no longer follows it."""
        thread = threading.current_thread().name
        while True:
            if watch.wedged:
                self._failure = TeleopError(watch.lost_detail)
                log.error("the MQTT bridge's event loop ran again after it was judged wedged (%s): the bridge "
                          "stops", watch.lost_detail)
                assert self._stopping is not None
                self._stopping.set()
                return
            watch.beat(thread)
            await asyncio.sleep(REPORT_PERIOD_S)

    async def _probe_plugin(self) -> bool | None:
        """Does the broker run the plugin of docs/teleop.md? Only the plugin refuses a client id
        outside the account's own (``<account>:...``; for an anonymous client, any id with ``:``),
        and the same credentials just connected, so a refusal of such an id says the plugin is there."""
        import aiomqtt

        probe = f"hebictl-plugin-probe-{secrets.token_hex(8)}"
        if self.settings.username is None:
            probe = f"x:{probe}"
        try:
            async with aiomqtt.Client(**self.settings.client_options(), identifier=probe, timeout=5.0):
                found = False
        except aiomqtt.MqttCodeError as exc:
            # "not authorized" (MQTT 3.1.1 code 5, paho's v5 reason 135) is the plugin's answer; any
            # other refusal says nothing about it: decide at the next connection, meanwhile without
            code = getattr(exc.rc, "value", exc.rc)
            if code not in (5, 135):
                log.warning("could not tell whether the broker runs the hebictl plugin (%s); asking again at the "
                            "next connection", exc)
                return None
            found = True
        log.info("the broker at %s %s", self.settings.url,
                 "runs the hebictl plugin: commands without an account tag are refused" if found else
                 "does not run the hebictl plugin: commands are not bound to accounts (docs/teleop.md)")
        return found

    async def _session(self, client: aiomqtt.Client, estop_client: aiomqtt.Client) -> None:
        assert self._stopping is not None
        self._ik_jobs = asyncio.Queue(self.ik_queue_size)
        await self._open_session(client, estop_client)
        await self._publish_description(client)
        self.connected.set()
        tasks = [asyncio.create_task(self._receive(estop_client), name="teleop-estop"),
                 asyncio.create_task(self._receive(client), name="teleop-receive"),
                 asyncio.create_task(self._solve_goals(), name="teleop-ik"),
                 asyncio.create_task(self._publish_acks(client), name="teleop-acks"),
                 asyncio.create_task(self._publish_states(client), name="teleop-states"),
                 asyncio.create_task(self._republish_description(client), name="teleop-description"),
                 asyncio.create_task(self._stopping.wait(), name="teleop-stop")]
        try:
            await self._run_session_tasks(client, estop_client, tasks)
        finally:
            self._ik_jobs = None

    async def _open_session(self, client: aiomqtt.Client, estop_client: aiomqtt.Client) -> None:
        """A new connection: forget its predecessor's acks, subscribe the e-stop (and the fleet's topics)
        on the e-stop's own connection, the commands on the other, and publish the status."""
        self.acks.clear()  # acks for commands of a previous connection are stale
        self._cleared.clear()
        await estop_client.subscribe(f"{self.topics.cmd('estop')}/#", qos=1)
        if self.runner.fleet is not None:  # the fleet e-stop beside the arm's own; heartbeats are never queued
            await estop_client.subscribe(ESTOP_TOPIC, qos=1)
            await estop_client.subscribe(LEASE_TOPIC, qos=0)
        await client.subscribe(self.topics.all_commands, qos=1)
        await self._publish_status(client)

    async def _run_session_tasks(self, client: aiomqtt.Client, estop_client: aiomqtt.Client,
                             tasks: list[asyncio.Task[Any]]) -> None:
        """Run the session's ``tasks`` until one ends; on a stop, unsubscribe the e-stop (the persistent
        session then collects nothing once we are gone) and publish the offline status; otherwise raise
        why the session ended."""
        assert self._stopping is not None
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(tasks)
        if self._stopping.is_set():
            with contextlib.suppress(Exception):
                await estop_client.unsubscribe(f"{self.topics.cmd('estop')}/#", timeout=2.0)
                if self.runner.fleet is not None:
                    await estop_client.unsubscribe([ESTOP_TOPIC, LEASE_TOPIC], timeout=2.0)
            with contextlib.suppress(Exception):
                await client.publish(self.topics.state("status"),
                                     self._status(self.runner.snapshot, online=False, bridge=self.stats_now()),
                                     qos=1, retain=True, timeout=2.0)
            return
        for t in done:
            exc = t.exception()
            if exc is not None:
                raise exc
        import aiomqtt

        raise aiomqtt.MqttError("session ended")

    # ------------------------------------------------------------------ inbound
    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            topic = message.topic.value
            retained = bool(message.retain)
            if not message.payload and topic in self._cleared:
                self._cleared.discard(topic)  # the echo of our own clearing publish
                continue
            try:
                await self.handle(topic, message.payload, retain=retained)
            except Exception:  # the bridge never dies of a message
                log.exception("failed to handle a message on %s", topic)
            if retained and self.topics.command_name(topic) is not None:
                await self._clear_retained(client, topic)

    async def _clear_retained(self, client: aiomqtt.Client, topic: str) -> None:
        """Delete a retained command from the broker: an empty retained payload on its topic."""
        try:
            self._cleared.add(topic)
            await client.publish(topic, b"", qos=1, retain=True, timeout=5.0)
            self.stats["retained_cleared"] += 1
            log.warning("cleared a retained command on %s (commands must not be retained)", topic)
        except Exception as exc:  # e.g. an ACL that does not let the arm write cmd/: say how to fix it
            log.warning("could not clear the retained command on %s: %s; clear it by hand: "
                        "mosquitto_pub -t '%s' -r -n", topic, exc, topic)

    async def handle(self, topic: str, payload: Any, *, retain: bool = False) -> None:
        """Validate one message and hand it to the arm (or ack its rejection)."""
        parsed = self.topics.command_and_account(topic)
        if parsed is None:
            fleet = self.runner.fleet
            if fleet is not None and topic in LeaseGate.topics:  # validated, dropped and counted there
                fleet.on_message(topic, payload if isinstance(payload, bytes | str) else bytes(payload or b""),
                                 self.runner.clock.now(), retained=retain)
            return
        name, account = parsed
        self.stats["received"] += 1
        received = self.runner.clock.now()  # the arm's clock: jog ttl runs on it
        if not isinstance(payload, bytes | bytearray | str):
            payload = b"" if payload is None else str(payload)
        seq = client = None
        try:
            try:
                obj = decode(payload)
            except CommandRejected:
                self.stats["malformed"] += 1  # not JSON, too big or deep, NaN, repeated fields
                raise
            seq, client = loose_ids(obj)
            if retain and not (name == "estop" and obj.get("engaged") is True):
                raise CommandRejected("retained", "commands must not be published with the retain flag; "
                                                  "the bridge cleared it from the broker")
            env = envelope(obj)
            if name == "input":
                self._offer_input(payload, env, account)
                return
            cmd = self.schema.validate(name, obj, env)
            if isinstance(cmd, EstopCommand) and cmd.engaged:  # never refused, whoever sends it
                with contextlib.suppress(CommandRejected):
                    check_client_account(env.client, account)
                    self.admission.check_order(env)
                self.stats["accepted"] += 1
                self._own_estop(account)
                self.runner.engage_estop(cmd)
                return
            if account is None and self.account_tags:
                raise CommandRejected("untagged", "the broker runs the account plugin, and this command carries "
                                                  "no account tag (a last will, or a broker bridge): refused")
            check_client_account(env.client, account)
            self.admission.admit(name, env)
            if isinstance(cmd, ModeCommand) and cmd.mode == "app" and self.runner.app is None:
                raise CommandRejected("no_app", "mode 'app' needs a Mobile IO app: start hebictl teleop with "
                                                "--app NAME")
            if isinstance(cmd, JogCommand):
                if self.runner.mode != "jog":
                    raise CommandRejected("wrong_mode", f"jog needs mode 'jog' (mode is {self.runner.mode!r})")
                self.runner.offer_jog(cmd, received)
            elif isinstance(cmd, CartesianGoalCommand):
                if self._ik_jobs is None:  # called outside a session (tests): solve here
                    await self._goal_from_cartesian(cmd)
                    return
                try:
                    self._ik_jobs.put_nowait(cmd)
                except asyncio.QueueFull:
                    raise CommandRejected("busy", f"{self._ik_jobs.maxsize} Cartesian goals are already waiting "
                                                  "for IK") from None
                return  # counted and acked by the IK worker
            elif isinstance(cmd, JointGoalCommand):
                self._check_reach(cmd)
                self.runner.submit(name, cmd)
            elif isinstance(cmd, EstopCommand):
                self._check_release(cmd, account)
                self.runner.submit(name, cmd)
            else:
                self.runner.submit(name, cmd)
            self.stats["accepted"] += 1
        except CommandRejected as exc:
            if seq is None and exc.reason == "not_finite":
                seq, client = salvage_ids(payload)
            self._reject(name, seq, client, exc)

    def _offer_input(self, payload: bytes | bytearray | str, env: Any, account: str | None) -> None:
        """A ``cmd/input`` sample: the command checks, then the app's input source (which validates
        the body and keeps the newest sample for the arm thread). Raises CommandRejected."""
        if account is None and self.account_tags:
            raise CommandRejected("untagged", "the broker runs the account plugin, and this input carries no "
                                              "account tag")
        check_client_account(env.client, account)
        self.admission.admit("input", env)
        app = self.runner.app
        if app is None:
            raise CommandRejected("no_app", "cmd/input needs a Mobile IO app: start hebictl teleop with --app NAME")
        if self.runner.mode != "app":
            raise CommandRejected("wrong_mode", f"input needs mode 'app' (mode is {self.runner.mode!r})")
        ok, reason, detail = app.offer(payload)
        if not ok:
            raise CommandRejected(reason, detail)
        self.stats["accepted"] += 1

    # ------------------------------------------------------------------ e-stop ownership
    def _own_estop(self, account: str | None) -> None:
        """Record who engaged the e-stop (an untagged engage names no account: it binds nobody)."""
        self._estop_generation += 1
        if account is not None:
            self.estop_owners.setdefault(account, self._estop_generation)

    def _check_release(self, cmd: EstopCommand, account: str | None) -> None:
        """Only the accounts that engaged the e-stop release it; a supervisor may override, logged."""
        others = sorted(a for a in self.estop_owners if a != account)
        if others and account is not None and account in self.supervisors and isinstance(cmd, EstopOverride):
            log.warning("e-stop release OVERRIDE by supervisor account %r (client %r): the e-stop was engaged by %s",
                        account, cmd.envelope.client, ", ".join(repr(a) for a in others))
            self.stats["estop_overrides"] += 1
            self.runner.note_error("estop_override", f"supervisor {account!r} released the e-stop of "
                                                     f"{', '.join(others)}")
        elif others:
            hint = " (a supervisor account may release it with \"override\": true)" if self.supervisors else ""
            raise CommandRejected("estop_owner", f"the e-stop was engaged by account(s) {', '.join(others)[:120]}: "
                                                 f"only they release it{hint}")
        if len(self._releases) > 64:
            self._releases.clear()
        self._releases[(cmd.envelope.client, cmd.envelope.seq)] = self._estop_generation

    def _release_answered(self, ack: Ack) -> None:
        """A release the arm accepted frees the owners recorded up to its submission (an engage
        recorded after it keeps its owner: the arm refuses a release sent before a newer e-stop)."""
        generation = self._releases.pop((ack.client, ack.seq), None)
        if generation is not None and ack.accepted:
            self.estop_owners = {a: g for a, g in self.estop_owners.items() if g > generation}

    # ------------------------------------------------------------------ goals
    async def _solve_goals(self) -> None:
        """The IK worker: Cartesian goals are solved here, one at a time, off the receive loop."""
        jobs = self._ik_jobs
        assert jobs is not None
        while True:
            cmd = await jobs.get()
            try:
                await self._goal_from_cartesian(cmd)
            except Exception:  # the worker never dies of a goal
                log.exception("failed to handle a Cartesian goal")

    async def _goal_from_cartesian(self, cmd: CartesianGoalCommand) -> None:
        try:
            goal = await self._solve(cmd)
            self._check_reach(goal)
            self.runner.submit("cartesian_goal", goal)
            self.stats["accepted"] += 1
        except CommandRejected as exc:
            self._reject("cartesian_goal", cmd.envelope.seq, cmd.envelope.client, exc)

    def _check_reach(self, cmd: JointGoalCommand) -> None:
        """Rated-speed reach check from the arm's last commanded position, before queueing."""
        snap = self.runner.snapshot
        start = snap.command_position if np.all(np.isfinite(snap.command_position)) else snap.position
        arm = self.runner.arm
        check_reach(start, cmd.times, cmd.positions, arm.limits, max_duration=self.runner.max_goal_duration,
                    joint_names=arm.model.joint_names)

    async def _solve(self, cmd: CartesianGoalCommand) -> JointGoalCommand:
        """IK from the arm's current commanded position; a target it cannot reach is rejected."""
        if self.runner.estop_latched:
            raise CommandRejected("estop_engaged", "the e-stop is engaged; release it, then set a mode")
        if self.runner.mode != "position":
            raise CommandRejected("wrong_mode", f"goals need mode 'position' (mode is {self.runner.mode!r})")
        snap = self.runner.snapshot
        seed = snap.command_position if np.all(np.isfinite(snap.command_position)) else snap.position
        if not np.all(np.isfinite(seed)):
            raise CommandRejected("no_feedback", "no arm position yet to start IK from")
        arm = self.runner.arm  # IK inside the config's limits, the solution clear of the arm and workspace
        q = await asyncio.to_thread(solve_cartesian, arm.model, arm.limits, cmd.position, seed, cmd.orientation)
        return JointGoalCommand(cmd.envelope, (cmd.duration,), (q,), (None,))

    def _reject(self, name: str, seq: int | None, client: str | None, exc: CommandRejected) -> None:
        self.stats["rejected"] += 1
        self.runner.note_error(exc.reason, f"cmd/{name}: {exc.detail}")
        ack = Ack(seq, client, name, False, exc.reason, exc.detail)
        if self.runner.recorder is not None:  # a recorded session keeps the refusals made here too
            self.runner.recorder.ack(ack)
        self.acks.put(ack, throttle=self.reject_ack_period if name in STREAMED else 0.0)

    # ------------------------------------------------------------------ outbound
    def stats_now(self) -> dict[str, int]:
        """The counters published in ``state/status`` (``bridge``), as they are now."""
        self.stats["acks_coalesced"] = self.acks.coalesced
        self.stats["acks_dropped"] = self.acks.dropped
        self.stats.update(self.gate.stats)
        return dict(self.stats)

    def _post_ack(self, ack: Ack) -> None:
        if ack.topic == "estop":
            self._release_answered(ack)
        self.acks.put(ack)

    def _post_ack_threadsafe(self, ack: Ack) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._post_ack, ack)

    async def _publish_acks(self, client: aiomqtt.Client) -> None:
        topic = self.topics.state("ack")
        while True:
            ack = await self.acks.get()
            if ack.accepted and ack.topic != "jog":
                # the retained status first (the runner hands an ack on after the snapshot that includes
                # its effect): a client that reads the status once it has the ack sees the new mode
                await self._publish_status(client)
            await client.publish(topic, ack.to_payload(self.clock.wall()), qos=1, timeout=5.0)

    async def _publish_status(self, client: aiomqtt.Client) -> None:
        try:
            payload = self._status(self.runner.snapshot, online=True, bridge=self.stats_now())
        except Exception:  # never let a payload bug take the bridge down; the next tick retries
            log.exception("could not build the status payload")
            return
        await client.publish(self.topics.state("status"), payload, qos=1, retain=True, timeout=5.0)

    def use_description(self, payload: bytes) -> None:
        """Publish ``payload`` as ``state/description`` (built where the arm is: the bridge process
        of :mod:`~hebictl.teleop.bridge_process` has only the model)."""
        self._description = payload, hashlib.sha256(payload).hexdigest()

    def description_bytes(self) -> tuple[bytes, str]:
        """The exact ``state/description`` payload and its hex SHA-256 (built once: it does not
        change while the process runs)."""
        if self._description is None:
            if not isinstance(self.runner, ArmRunner):  # the bridge process is given it (use_description)
                raise TeleopError("the bridge process has no description: use_description() first")
            payload = description_payload(self.runner, self.topics.arm_id, default_ttl=self.schema.default_ttl,
                                          **self.description)
            self._description = payload, hashlib.sha256(payload).hexdigest()
        return self._description

    def _status(self, snap: ArmSnapshot | None, *, online: bool, bridge: dict[str, int] | None = None) -> bytes:
        fleet = self.runner.fleet
        return status_payload(snap, self.topics.arm_id, online=online, ts=self.clock.wall(), bridge=bridge,
                              session=self.session, description_sha256=self.description_bytes()[1],
                              fleet=None if fleet is None else fleet.status(self.runner.clock.now()))

    async def _publish_description(self, client: aiomqtt.Client) -> None:
        await client.publish(self.topics.state("description"), self.description_bytes()[0], qos=1, retain=True,
                             timeout=5.0)

    async def _republish_description(self, client: aiomqtt.Client) -> None:
        """Every ``description_period``: a description overwritten by someone else (a broker
        without accounts) is corrected within one period, and the status hash exposes it at once."""
        while True:
            await asyncio.sleep(self.description_period)
            await self._publish_description(client)

    async def _publish_states(self, client: aiomqtt.Client) -> None:
        names = self.runner.arm.model.joint_names
        model = self.runner.arm.model
        t_joints, t_pose = self.topics.state("joints"), self.topics.state("ee_pose")
        last_key: tuple | None = None
        monotonic = self.clock.monotonic
        last_status = monotonic()
        next_tick = monotonic()
        while True:
            next_tick += self.state_period
            delay = next_tick - monotonic()
            if delay < -self.state_period:  # fell behind (e.g. a slow status publish): don't burst
                next_tick = monotonic()
                delay = 0.0
            await asyncio.sleep(max(delay, 0.0))
            snap = self.runner.snapshot
            try:
                joints = joints_payload(snap, names)
                pose = model.end_effector(snap.position) if np.all(np.isfinite(snap.position)) \
                    else np.full((4, 4), np.nan)
                ee_pose = ee_pose_payload(snap, pose)
            except Exception:  # a payload bug must not end the session: skip this tick, say so
                log.exception("could not build the state payloads")
                continue
            await client.publish(t_joints, joints, qos=0)
            await client.publish(t_pose, ee_pose, qos=0)
            g = snap.gripper
            gripper_key = None if g is None else (g.position, g.action, g.seq, g.hardware,
                                                  None if g.measured_opening is None else round(g.measured_opening, 2))
            key = (snap.state, snap.mode, snap.arm_mode, snap.estop, snap.m_stopped, snap.jogging, snap.braking,
                   snap.at_goal, snap.last_error, snap.last_event, gripper_key, snap.fleet)
            now = monotonic()
            if key != last_key or now - last_status >= self.status_period:
                last_key, last_status = key, now
                await self._publish_status(client)
