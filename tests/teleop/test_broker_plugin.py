"""The mosquitto plugin of docs/teleop.md ("Forbidding retained commands at the broker"), compiled
from the doc itself and loaded into a real mosquitto with the teleop ACL: a retained goal is
refused, a live goal and the arm's retained status pass."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hebictl.teleop.broker import LocalBroker
from tests._support.broker import need_mosquitto
from tests._support.ordering import HANG
from tests._support.paths import REPO_ROOT as REPO
from tests._support.teleop import ARM_ID, ARM_USER, OPERATOR, run

pytestmark = pytest.mark.broker
#: Debian 12 packages of the headers the plugin includes (mosquitto-dev does not pull in libmosquitto-dev)
HEADER_PACKAGES = {"mosquitto.h": "libmosquitto-dev", "mosquitto_broker.h": "mosquitto-dev",
                   "mosquitto_plugin.h": "mosquitto-dev"}


def _plugin_source() -> str:
    text = (REPO / "docs" / "teleop.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- no_retained_cmd\.c -->\n```c\n(.*?)```", text, re.S)
    assert m, "docs/teleop.md lost its plugin block"
    return m.group(1)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    need_mosquitto()
    gcc = shutil.which("gcc")
    if gcc is None:  # the one thing that makes this test impossible rather than failing
        pytest.skip("needs a C compiler: gcc not found (Debian: apt-get install gcc)")
    return _compile(gcc, tmp_path)


def _compile(gcc: str, folder: Path, *flags: str) -> Path:
    """The plugin built from docs/teleop.md; a compile error fails the test with gcc's own message."""
    src = folder / "no_retained_cmd.c"
    src.write_text(_plugin_source())
    lib = folder / "no_retained_cmd.so"
    proc = subprocess.run([gcc, *flags, "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib), str(src)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:  # a missing header is a set-up error to fix, shown with gcc's own words
        missing = sorted({pkg for header, pkg in HEADER_PACKAGES.items() if f"{header}: No such file" in proc.stderr})
        hint = f" (Debian: apt-get install {' '.join(missing)}; tools/dev test installs them)" if missing else ""
        pytest.fail(f"gcc could not compile the plugin of docs/teleop.md{hint}:\n{proc.stderr.strip()}",
                    pytrace=False)
    return lib


def test_a_missing_header_fails_with_gccs_message_and_the_package(tmp_path):
    """Issue 23: on a fresh Debian 12 the plugin failed to compile ("mosquitto.h: No such file") and the
    test hid gcc's message. Reproduced with a sysroot whose /usr/include lacks mosquitto's headers: the
    failure shows gcc's words and names the package to install."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs a C compiler: gcc not found (Debian: apt-get install gcc)")
    include = tmp_path / "root" / "usr" / "include"
    include.mkdir(parents=True)
    for entry in Path("/usr/include").iterdir():  # the C library's headers, without mosquitto's
        if not entry.name.startswith("mosquitto"):
            (include / entry.name).symlink_to(entry)
    with pytest.raises(pytest.fail.Exception) as info:
        _compile(gcc, tmp_path, f"--sysroot={tmp_path / 'root'}")
    message = str(info.value)
    assert "fatal error: mosquitto.h: No such file or directory" in message
    assert "(Debian: apt-get install libmosquitto-dev; tools/dev test installs them)" in message


def test_plugin_refuses_retained_commands_only(plugin, tmp_path):
    import aiomqtt  # the teleop extra (the plugin fixture skipped the test without it)

    b = LocalBroker(tmp_path / "b", users=dict([OPERATOR, ARM_USER]), arms={ARM_USER[0]: ARM_ID},
                    operators=[OPERATOR[0]], plugins=[plugin])
    op = {"username": OPERATOR[0], "password": OPERATOR[1]}
    arm = {"username": ARM_USER[0], "password": ARM_USER[1]}
    root = f"hebictl/v1/{ARM_ID}"

    async def retained(topic_filter: str, account: dict[str, str], readable: str) -> list[str]:
        """What the broker holds retained under ``topic_filter``, read by an ``account`` the ACL lets
        read it. The broker sends retained messages with the subscription; a second subscription
        (to ``readable``, where nothing is) is acknowledged after them: ordering, not a quiet period."""
        async with aiomqtt.Client("127.0.0.1", b.port, identifier=f"{account['username']}:peek", **account) as c:
            await c.subscribe(topic_filter, qos=1)
            await c.subscribe(readable, qos=1)
            found = []
            for _ in range(len(c.messages)):
                m = await anext(aiter(c.messages))
                if m.retain:
                    found.append(m.topic.value)
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
            async with asyncio.timeout(HANG):   # a retained goal would have come with the subscription, first
                async for m in a.messages:
                    got.append((m.topic.value, m.payload, m.retain))
                    if m.topic.value.startswith(f"{root}/cmd/stop"):
                        break
        return (await retained(f"{root}/cmd/#", arm, f"{root}/cmd/none"),
                await retained(f"{root}/state/#", op, f"{root}/state/none"), got)

    with b:
        cmd_retained, state_retained, got = run(go(), timeout=4 * HANG)
        log = b.log_tail(4000)
    assert cmd_retained == []
    assert state_retained == [f"{root}/state/status"]
    assert got == [(f"{root}/cmd/stop/@{OPERATOR[0]}", b"live", False)]  # tagged with its account
    assert f"refused a retained publish to {root}/cmd/joint_goal" in log
