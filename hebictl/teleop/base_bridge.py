"""The MQTT side of a mobile base in teleop: ``hebictl/v1/<base id>/cmd/{velocity,stop,estop,mode}`` in,
``state/status`` and ``state/ack`` out (:mod:`hebictl.teleop.base`).

It is the arms' :class:`~hebictl.teleop.bridge.MqttBridge` with the base's commands: the same
connection, reconnection and last will; the same e-stop connection of its own (a persistent session
subscribed to ``cmd/estop/#`` only, its messages handled on their own task: an engage is never queued
behind a velocity stream and is taken from anyone, unadmitted); the same per-account flood guard and
bounded queue before decoding (:mod:`~hebictl.teleop.inbound`), the same envelope, account binding
and admission (fresh, in order, within the per-topic rate of
:data:`~hebictl.teleop.admission.DEFAULT_RATE_LIMITS`, ``velocity`` streamed as ``jog``), the same
e-stop ownership and retained-command clearing. What differs: the body is validated by
:class:`~hebictl.teleop.schema.BaseSchema`, a velocity sample goes to the runner's mailbox, and the
status is the base's (:func:`~hebictl.teleop.base.base_status_payload`), published when it changes
(at most ``state_rate_hz``) and every ``status_period``; no joints, pose or description.

Fleet (the runner has a :class:`~hebictl.teleop.lease.LeaseGate`, docs/fleet.md): as an arm's bridge,
the e-stop connection also subscribes to the fleet lease (QoS 0) and the fleet e-stop (QoS 1), each
message goes to the gate with its receipt time on the loop's clock, and the status carries the
gate's ``fleet`` object. A driving sample is refused here already (``fleet_estop`` / ``no_lease``)
when the status the bridge last saw says the lease is not there; the loop judges again.

Every bad message (not JSON, too big, a wrong type or length, NaN, a velocity over ``max_velocity``, a
ttl over the bound, a stale or reordered envelope, over the rate) is one rejection: acked (streamed
rejections throttled per client and reason), counted in the status (``bridge.rejected`` and by reason
in ``dropped``), never a crash nor a stall of the loop.

With ``--bridge process`` (the default) the base's bridge runs in a process of its own
(:class:`~hebictl.teleop.bridge_process.BaseBridgeProcess`, an arm's
:class:`~hebictl.teleop.bridge_process.BridgeProcess` whose child runs :class:`BaseBridge`; the loop
reads the link in its cycle: :class:`~hebictl.teleop.base.BasePort`),
with ``--bridge thread`` in the teleop process's event loop under the bridge thread's silence rule
(:class:`~hebictl.teleop.silence.ThreadWatch`). Either way a dead or wedged bridge is a lost link: the
base holds, and the dead-man holds it within the last sample's ttl whatever happens to the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import TYPE_CHECKING, Any, cast

from hebictl.errors import CommandRejected
from hebictl.teleop.admission import Admission
from hebictl.teleop.base import BaseRunner, base_status_payload
from hebictl.teleop.bridge import MqttBridge, check_client_account
from hebictl.teleop.clock import SYSTEM_CLOCK, TeleopClock
from hebictl.teleop.connection import BrokerSettings
from hebictl.teleop.lease import LeaseGate
from hebictl.teleop.messages import Ack
from hebictl.teleop.schema import (
    BaseSchema,
    BaseVelocityCommand,
    EstopCommand,
    decode,
    envelope,
    loose_ids,
    salvage_ids,
)

if TYPE_CHECKING:
    import aiomqtt

__all__ = ["BaseBridge"]


class BaseBridge(MqttBridge):
    """Connects a :class:`~hebictl.teleop.base.BaseRunner` to a broker (module doc). ``state_rate_hz``
    [Hz]: how often the status is looked at for a change; the other options are
    :class:`~hebictl.teleop.bridge.MqttBridge`'s."""

    def __init__(self, runner: BaseRunner, settings: BrokerSettings, base_id: str, *, schema: BaseSchema,
                 admission: Admission | None = None, state_rate_hz: float = 20.0, clock: TeleopClock = SYSTEM_CLOCK,
                 **options: Any) -> None:
        super().__init__(cast(Any, runner), settings, base_id, schema=cast(Any, schema), admission=admission,
                         state_rate_hz=state_rate_hz, clock=clock, **options)
        self.base_runner = runner
        self.base_schema = schema
        #: rejections by reason (the status's ``dropped``)
        self.dropped: Counter[str] = Counter()

    async def _session(self, client: aiomqtt.Client, estop_client: aiomqtt.Client) -> None:
        assert self._stopping is not None
        await self._open_session(client, estop_client)   # the arm bridge's own opening and close
        self.connected.set()
        tasks = [asyncio.create_task(self._receive(estop_client), name="base-estop"),
                 asyncio.create_task(self._receive(client), name="base-receive"),
                 asyncio.create_task(self._publish_acks(client), name="base-acks"),
                 asyncio.create_task(self._publish_states(client), name="base-status"),
                 asyncio.create_task(self._stopping.wait(), name="base-stop")]
        await self._run_session_tasks(client, estop_client, tasks)

    async def handle(self, topic: str, payload: Any, *, retain: bool = False) -> None:
        """Validate one message and hand it to the base's runner (or ack its rejection)."""
        parsed = self.topics.command_and_account(topic)
        runner = self.base_runner
        if parsed is None:
            fleet = runner.fleet
            if fleet is not None and topic in LeaseGate.topics:   # validated, dropped and counted there
                fleet.on_message(topic, payload if isinstance(payload, bytes | str) else bytes(payload or b""),
                                 runner.clock.now(), retained=retain)
            return
        name, account = parsed
        self.stats["received"] += 1
        received = runner.clock.now()   # the loop's clock: the ttl runs on it
        if not isinstance(payload, bytes | bytearray | str):
            payload = b"" if payload is None else str(payload)
        seq = client = None
        try:
            try:
                obj = decode(payload)
            except CommandRejected:
                self.stats["malformed"] += 1
                raise
            seq, client = loose_ids(obj)
            if retain and not (name == "estop" and obj.get("engaged") is True):
                raise CommandRejected("retained", "commands must not be published with the retain flag; "
                                                  "the bridge cleared it from the broker")
            env = envelope(obj)
            cmd = self.base_schema.validate(name, obj, env)
            if isinstance(cmd, EstopCommand) and cmd.engaged:   # never refused, whoever sends it
                with contextlib.suppress(CommandRejected):
                    check_client_account(env.client, account)
                    self.admission.check_order(env)
                self.stats["accepted"] += 1
                self._own_estop(account)
                runner.engage_estop(cmd)
                return
            if account is None and self.account_tags:
                raise CommandRejected("untagged", "the broker runs the account plugin, and this command carries "
                                                  "no account tag (a last will, or a broker bridge): refused")
            check_client_account(env.client, account)
            self.admission.admit(name, env)
            if isinstance(cmd, BaseVelocityCommand):
                fleet_state = runner.snapshot.get("fleet")
                if cmd.deadman and cmd.velocity.any() and fleet_state in ("estopped", "no_lease"):
                    raise CommandRejected("fleet_estop" if fleet_state == "estopped" else "no_lease",
                                          f"the base's fleet lease is {fleet_state}: a new lease (and the fleet "
                                          "e-stop cleared) and cmd/mode velocity first")
                if runner.mode != "velocity" and cmd.deadman:
                    raise CommandRejected("wrong_mode", f"velocity needs mode 'velocity' (mode is {runner.mode!r})")
                runner.offer_velocity(cmd, received)
            elif isinstance(cmd, EstopCommand):
                self._check_release(cmd, account)
                runner.submit(name, cmd)
            else:
                runner.submit(name, cmd)
            self.stats["accepted"] += 1
        except CommandRejected as exc:
            if seq is None and exc.reason == "not_finite":
                seq, client = salvage_ids(payload)
            self._reject(name, seq, client, exc)

    def _reject(self, name: str, seq: int | None, client: str | None, exc: CommandRejected) -> None:
        self.dropped[exc.reason] += 1
        super()._reject(name, seq, client, exc)

    def _post_ack(self, ack: Ack) -> None:
        if not ack.accepted:   # refused in the loop (wrong mode, e-stop engaged, group hold): counted too
            self.dropped[ack.reason] += 1
        super()._post_ack(ack)

    def _status(self, snap: Any, *, online: bool, bridge: dict[str, int] | None = None) -> bytes:
        if bridge is not None:
            bridge = {**bridge, **{f"dropped_{k}": v for k, v in sorted(self.dropped.items())[:32]}}
        fleet = self.base_runner.fleet
        return base_status_payload(snap, self.topics.arm_id, online=online, ts=self.clock.wall(), bridge=bridge,
                                   session=self.session,
                                   fleet=None if fleet is None else fleet.status(self.base_runner.clock.now()))

    async def _publish_status(self, client: aiomqtt.Client) -> None:
        try:
            payload = self._status(self.base_runner.snapshot, online=True, bridge=self.stats_now())
        except Exception:   # a payload bug must not take the bridge down; the next tick retries
            logging.getLogger(__name__).exception("could not build the base's status payload")
            return
        await client.publish(self.topics.state("status"), payload, qos=1, retain=True, timeout=5.0)

    async def _publish_states(self, client: aiomqtt.Client) -> None:
        """The status when the base's state, mode, e-stop, latch, last error or event changed (looked at
        ``state_rate_hz``), and every ``status_period`` (the wheel velocities)."""
        monotonic = self.clock.monotonic
        last_key: tuple[Any, ...] | None = None
        last = monotonic()
        while True:
            await asyncio.sleep(self.state_period)
            snap = self.base_runner.snapshot
            key = (snap["state"], snap["mode"], snap["estop"], str(snap["latch"]), str(snap["last_error"]),
                   str(snap["last_event"]), str(snap.get("group")), snap.get("fleet"))
            now = monotonic()
            if key != last_key or now - last >= self.status_period:
                last_key, last = key, now
                await self._publish_status(client)

