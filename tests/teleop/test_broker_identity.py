"""Issue 20 item 4 through a real mosquitto 2.0 with the teleop ACL and the broker plugin of
docs/teleop.md (compiled from the doc): identities are bound to broker accounts.

* A read-only viewer that connects with the arm's client id is refused at CONNECT; the arm stays
  connected (without the plugin the same attack disconnects it, which the control run shows).
* A command's ``client`` name must belong to the account the plugin tagged it with, so another
  account cannot send under the panel's name; ``seq`` far ahead of the clock is refused, so
  2^63-1 under the panel's name cannot lock the panel out.
* No client can forge the account tag.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator

import pytest

from hebictl.errors import CommandRejected
from hebictl.teleop.bridge import arm_client_id, check_client_account
from hebictl.teleop.broker import find_mosquitto_passwd
from hebictl.teleop.server import TeleopServer
from hebictl.teleop.topics import Topics
from tests._support.accounts import OPERATOR2, VIEWER, accounts_broker, arm_server, compile_doc_plugin
from tests._support.broker import need_mosquitto
from tests._support.ordering import HANG, PatientClient, until
from tests._support.paced import paced_servers
from tests._support.teleop import ARM_ID, ARM_USER, HOME, OPERATOR, run

pytestmark = pytest.mark.broker
ATTEMPTS = 20


@pytest.fixture
def make_server() -> Iterator[Callable[..., TeleopServer]]:
    """The arm on simulated time paced to real time (tests/_support/paced.py): a starved test worker
    stretches the arm's time instead of stopping it with a control gap mid-test."""
    with paced_servers() as make:
        yield make


@pytest.mark.parametrize(("client", "account", "ok"), [
    ("operator", "operator", True), ("operator:panel-3", "operator", True), ("anything", None, True),
    ("operator:x", None, True), ("op", "operator", False), ("operator2:x", "operator", False),
    ("operatorx", "operator", False), ("operator:panel", "operator2", False), ("console", "", True),
    ("operator:panel", "", False),
])
def test_client_names_bound_to_the_account_the_broker_names(client, account, ok):
    """``<account>`` or ``<account>:...``; anonymous ("") may not claim one; unknown (None): any."""
    if ok:
        check_client_account(client, account)
    else:
        with pytest.raises(CommandRejected, match="wrong_client"):
            check_client_account(client, account)


def test_topics_carry_the_account_tag_and_the_arm_id_is_unguessable():
    t = Topics(ARM_ID)
    assert t.command_and_account(t.cmd("mode")) == ("mode", None)
    assert t.command_and_account(t.cmd("mode") + "/@operator") == ("mode", "operator")
    assert t.command_and_account(t.cmd("mode") + "/@") == ("mode", "")
    assert t.command_name(t.cmd("jog") + "/@arm-t1") == "jog" and t.command_and_account("x/y") is None
    assert arm_client_id("arm1", "acct", "ab12") == "acct:hebictl-arm-arm1-ab12"
    assert arm_client_id("arm1", None, "ab12") == "hebictl-arm-arm1-ab12"


async def _round_trip(url: str) -> None:
    """An operator's command answered by the arm: any disconnect the attempts before it caused was
    noticed by the bridge first (a command cannot reach an arm whose connection the broker closed
    until the bridge has reconnected, and it counts the disconnect before that)."""
    async with PatientClient(url, ARM_ID, name=f"{OPERATOR[0]}:probe", username=OPERATOR[0],
                             password=OPERATOR[1]) as op:
        assert (await op.mode("idle")) is not None


async def take_over(port: int, identifier: str, attempts: int) -> int:
    """Connect ``attempts`` times as the viewer with ``identifier``; how many were let in."""
    import aiomqtt  # the teleop extra (need_mosquitto skipped the test without it)

    admitted = 0
    for _ in range(attempts):
        try:
            async with aiomqtt.Client("127.0.0.1", port, identifier=identifier, username=VIEWER[0],
                                      password=VIEWER[1], timeout=HANG):
                admitted += 1
                await asyncio.sleep(0.05)
        except aiomqtt.MqttError:
            pass
    return admitted


def test_a_viewer_reusing_the_arms_client_id_cannot_disconnect_it(tmp_path, make_server):
    plugin = compile_doc_plugin(tmp_path)
    with accounts_broker(tmp_path / "b", [plugin]) as b:
        server = arm_server(make_server, b)
        ident = server.bridge.identifier
        # issue 33: the id's random part is not the session every status publishes
        assert ident.startswith(f"{ARM_USER[0]}:hebictl-arm-{ARM_ID}-") and server.bridge.session not in ident
        admitted = run(take_over(b.port, ident, ATTEMPTS), timeout=4 * HANG)
        admitted += run(take_over(b.port, f"hebictl-arm-{ARM_ID}", 1), timeout=HANG)  # the old fixed id
        own = run(take_over(b.port, f"{VIEWER[0]}:panel", 1), timeout=HANG)           # its own prefix works
        run(_round_trip(b.url), timeout=HANG)   # the arm answers after them: still (or again) connected
        stats = dict(server.bridge.stats)
        log = b.log_tail(20000)
    print(f"\nwith the plugin: {ATTEMPTS + 1} takeover attempts, {admitted} admitted; arm connects "
          f"{stats['connects']}, disconnects {stats['disconnects']}")
    assert admitted == 0 and own == 1
    assert stats["connects"] == 1 and stats["disconnects"] == 0
    assert f"refused client id {ident} for account {VIEWER[0]}" in log


def test_control_without_the_plugin_the_same_attack_disconnects_the_arm(tmp_path, make_server):
    """What the plugin prevents: mosquitto alone hands the arm's id to whoever asks for it."""
    need_mosquitto()
    if find_mosquitto_passwd() is None:
        pytest.skip("mosquitto_passwd not found")
    with accounts_broker(tmp_path / "b", []) as b:
        server = arm_server(make_server, b)
        admitted = run(take_over(b.port, server.bridge.identifier, 3), timeout=4 * HANG)
        # the broker handed the arm's id to the viewer: the bridge lost its connection (and reconnects)
        run(until(lambda: server.bridge.stats["disconnects"] >= 1, "the arm losing its connection"), timeout=2 * HANG)
        stats = dict(server.bridge.stats)
    print(f"\nwithout the plugin: 3 takeover attempts, {admitted} admitted; arm disconnects {stats['disconnects']}")
    assert admitted == 3 and stats["disconnects"] >= 1


def test_names_are_bound_to_accounts_and_seq_far_ahead_cannot_lock_the_panel_out(tmp_path, make_server):
    plugin = compile_doc_plugin(tmp_path)
    topics = Topics(ARM_ID)
    panel = f"{OPERATOR[0]}:panel"
    top = 2**63 - 1

    def raw(client: str, seq: int, mode: str) -> bytes:
        return json.dumps({"seq": seq, "ts": time.time(), "client": client, "mode": mode}).encode()

    async def acks_of(c: PatientClient, client: str, seq: int) -> list[tuple[bool, str]]:
        await c.wait_ack(lambda a: a.client == client and a.seq == seq)
        return [(a.accepted, a.reason) for a in c.acks if a.client == client and a.seq == seq]

    async def go():
        async with PatientClient(b.url, ARM_ID, name=f"{OPERATOR2[0]}:mallory", username=OPERATOR2[0],
                                password=OPERATOR2[1]) as evil, \
                PatientClient(b.url, ARM_ID, name=panel, username=OPERATOR[0], password=OPERATOR[1]) as op:
            await op.wait_status(lambda s: s["status"] == "online")
            out = {}
            # another account, the panel's name, seq 2^63-1
            await evil.publish_raw(topics.cmd("mode"), raw(panel, top, "idle"), qos=1)
            out["foreign account as the panel"] = await acks_of(op, panel, top)
            # another account, its own name, seq 2^63-1
            mallory = f"{OPERATOR2[0]}:mallory"
            await evil.publish_raw(topics.cmd("mode"), raw(mallory, top, "idle"), qos=1)
            out["own name, seq 2^63-1"] = await acks_of(op, mallory, top)
            # the panel's own account (a second tab, or a stolen session) with seq 2^63-1
            await op.publish_raw(topics.cmd("mode"), raw(panel, top - 1, "idle"), qos=1)
            out["same account, seq 2^63-2"] = await acks_of(op, panel, top - 1)
            # the account tag cannot be forged: never delivered to the arm
            received = server.bridge.stats["received"]
            await evil.publish_raw(topics.cmd("mode") + f"/@{OPERATOR[0]}", raw(panel, 5, "jog"),
                                   qos=1)
            # ordering: the same connection's next command, answered, came through after it
            assert (await evil.mode("idle")) is not None
            out["forged tag delivered"] = server.bridge.stats["received"] - received - 1
            # the panel still works: mode, goal, e-stop and its release
            mode = await op.mode("position")
            goal = await op.joint_goal(HOME, duration=1.0)
            estop = await op.estop(True)
            release = await op.estop(False)
            out["panel afterwards"] = [(a.accepted, a.reason) for a in (mode, goal, estop, release)]
            return out

    with accounts_broker(tmp_path / "b", [plugin]) as b:
        server = arm_server(make_server, b, bridge="thread")  # the bridge's live stats
        out = run(go(), timeout=4 * HANG)
    print("\n" + json.dumps(out))
    assert out["foreign account as the panel"] == [(False, "wrong_client")]
    assert out["own name, seq 2^63-1"] == [(False, "seq_ahead")]
    assert out["same account, seq 2^63-2"] == [(False, "seq_ahead")]
    assert out["forged tag delivered"] == 0
    assert out["panel afterwards"] == [(True, "")] * 4
