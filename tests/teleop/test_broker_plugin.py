"""The mosquitto plugin of docs/teleop.md ("Forbidding retained commands at the broker"), compiled
from the doc itself and loaded into a real mosquitto with the teleop ACL: a retained goal is
refused, a live goal and the arm's retained status pass."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

import aiomqtt
import pytest

from hebictl.teleop.broker import LocalBroker

from .conftest import ARM_ID, ARM_USER, OPERATOR, REPO, need_mosquitto, run

pytestmark = pytest.mark.broker
HEADERS = ("/usr/include/mosquitto_broker.h", "/usr/include/mosquitto_plugin.h")


def _plugin_source() -> str:
    text = (REPO / "docs" / "teleop.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- no_retained_cmd\.c -->\n```c\n(.*?)```", text, re.S)
    assert m, "docs/teleop.md lost its plugin block"
    return m.group(1)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    need_mosquitto()
    gcc = shutil.which("gcc")
    if gcc is None or not all(Path(h).is_file() for h in HEADERS):
        pytest.skip("needs gcc and mosquitto's plugin headers (Debian: apt-get install gcc mosquitto-dev)")
    src = tmp_path / "no_retained_cmd.c"
    src.write_text(_plugin_source())
    lib = tmp_path / "no_retained_cmd.so"
    subprocess.run([gcc, "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True,
                   capture_output=True, timeout=60)
    return lib


def test_plugin_refuses_retained_commands_only(plugin, tmp_path):
    b = LocalBroker(tmp_path / "b", users=dict([OPERATOR, ARM_USER]), arms={ARM_USER[0]: ARM_ID},
                    operators=[OPERATOR[0]], plugins=[plugin])
    op = {"username": OPERATOR[0], "password": OPERATOR[1]}
    arm = {"username": ARM_USER[0], "password": ARM_USER[1]}
    root = f"hebictl/v1/{ARM_ID}"

    async def retained(topic_filter: str) -> list[str]:
        async with aiomqtt.Client("127.0.0.1", b.port, identifier=f"{OPERATOR[0]}:peek", **op) as c:
            await c.subscribe(topic_filter, qos=1)
            found = []
            try:
                async with asyncio.timeout(0.5):
                    async for m in c.messages:
                        if m.retain:
                            found.append(m.topic.value)
            except TimeoutError:
                pass
            return found

    async def go():
        async with aiomqtt.Client("127.0.0.1", b.port, identifier=f"{OPERATOR[0]}:op", **op) as c:
            await c.publish(f"{root}/cmd/joint_goal", b"{}", qos=1, retain=True)
        async with aiomqtt.Client("127.0.0.1", b.port, identifier=f"{ARM_USER[0]}:arm", **arm) as a:
            await a.publish(f"{root}/state/status", b"{}", qos=1, retain=True)
            await a.subscribe(f"{root}/cmd/#", qos=1)
            async with aiomqtt.Client("127.0.0.1", b.port, identifier=f"{OPERATOR[0]}:op2", **op) as c:
                await c.publish(f"{root}/cmd/stop", b"live", qos=1)
            got = []
            try:
                async with asyncio.timeout(0.5):
                    async for m in a.messages:
                        got.append((m.topic.value, m.payload, m.retain))
            except TimeoutError:
                pass
        return await retained(f"{root}/cmd/#"), await retained(f"{root}/state/#"), got

    with b:
        cmd_retained, state_retained, got = run(go())
        log = b.log_tail(4000)
    assert cmd_retained == []
    assert state_retained == [f"{root}/state/status"]
    assert got == [(f"{root}/cmd/stop/@{OPERATOR[0]}", b"live", False)]  # tagged with its account
    assert f"refused a retained publish to {root}/cmd/joint_goal" in log
