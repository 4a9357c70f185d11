"""The panel's MQTT link against a real mosquitto with accounts and an ACL: it sees every arm from
the retained topics, and finds out from the broker itself (MQTT v5 PUBACK reason codes) whether its
account may command an arm - mosquitto drops a denied publish silently under MQTT 3.1.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hebictl.panel.link import PanelLink
from hebictl.teleop.broker import LocalBroker
from hebictl.teleop.connection import parse_broker
from tests._support.broker import need_mosquitto

USERS = {"op": "op-pw", "viewer": "viewer-pw", "arm1": "arm-pw"}


@pytest.fixture
def acl_broker(tmp_path: Path) -> Any:
    need_mosquitto(passwd=True)  # and aiomqtt, the teleop extra the panel extra includes
    b = LocalBroker(tmp_path / "b", users=USERS, arms={"arm1": "arm1"}, operators=["op"])
    with (b.directory / "acl").open("a") as f:
        f.write("\nuser viewer\ntopic read hebictl/v1/+/state/#\n")
    b.start()
    yield b
    b.stop()


async def _scenario(port: int) -> dict[str, Any]:
    import aiomqtt

    out: dict[str, Any] = {}
    async with aiomqtt.Client(hostname="127.0.0.1", port=port, username="arm1", password=USERS["arm1"],
                              identifier="fake-arm") as arm:
        await arm.subscribe("hebictl/v1/arm1/cmd/#", qos=1)
        await arm.publish("hebictl/v1/arm1/state/status", json.dumps({"status": "online", "mode": "jog"}),
                          qos=1, retain=True)
        links = {u: PanelLink(parse_broker(f"mqtt://127.0.0.1:{port}", username=u, password=USERS[u]), name=u)
                 for u in ("op", "viewer")}
        tasks = [asyncio.create_task(link.run()) for link in links.values()]
        for user, link in links.items():
            for _ in range(300):
                view = link.arms.get("arm1")
                if view is not None and view.writable is not None:
                    break
                await asyncio.sleep(0.01)
            out[user] = link.arms["arm1"].writable
        await links["op"].send("arm1", "mode", {"mode": "position"})
        with pytest.raises(PermissionError):
            await links["viewer"].send("arm1", "mode", {"mode": "idle"})
        got = []
        try:
            async with asyncio.timeout(1.0):
                async for msg in arm.messages:
                    got.append((msg.topic.value, json.loads(msg.payload) if msg.payload else None))
        except TimeoutError:
            pass
        out["received"] = got
        for link in links.values():
            link.stop()
        await asyncio.gather(*tasks)
    return out


def test_write_access_comes_from_the_broker(acl_broker: LocalBroker) -> None:
    out = asyncio.run(asyncio.wait_for(_scenario(acl_broker.port), 30))
    assert out["op"] is True and out["viewer"] is False
    commands = [(t, b) for t, b in out["received"] if t != "hebictl/v1/arm1/cmd"]
    assert [t for t, _ in commands] == ["hebictl/v1/arm1/cmd/mode"], commands   # only the operator's
    assert commands[0][1]["mode"] == "position" and commands[0][1]["client"] == "op"
    probes = [b for t, b in out["received"] if t == "hebictl/v1/arm1/cmd"]
    assert probes == [None]  # the operator's probe: empty, on a topic the arm's bridge ignores
