"""The secured broker of docs/teleop.md with several accounts, and its plugin compiled from the doc.

Shared by the teleop tests that attack account bindings (tests/teleop/test_broker_identity.py,
tests/teleop/test_teleop_security.py): two operator accounts, a read-only viewer and the arm's
account, on a real mosquitto with the password file, the teleop ACL and (optionally) the plugin.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hebictl.teleop.broker import LocalBroker, find_mosquitto_passwd
from tests._support.broker import need_mosquitto
from tests._support.paths import REPO_ROOT as REPO
from tests._support.teleop import ARM_ID, ARM_USER, OPERATOR

VIEWER = ("viewer", "viewer-secret")
OPERATOR2 = ("operator2", "op2-secret")


def compile_doc_plugin(tmp_path: Path) -> Path:
    """The plugin block of docs/teleop.md, compiled with -Wall -Werror."""
    need_mosquitto()
    gcc = shutil.which("gcc")
    if gcc is None or not Path("/usr/include/mosquitto_broker.h").is_file() \
            or not Path("/usr/include/mosquitto.h").is_file():
        pytest.skip("needs gcc and mosquitto's plugin headers (Debian: apt-get install gcc libmosquitto-dev)")
    if find_mosquitto_passwd() is None:
        pytest.skip("mosquitto_passwd not found (apt-get install mosquitto)")
    text = (REPO / "docs" / "teleop.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- no_retained_cmd\.c -->\n```c\n(.*?)```", text, re.S)
    assert m, "docs/teleop.md lost its plugin block"
    src = tmp_path / "no_retained_cmd.c"
    src.write_text(m.group(1))
    lib = tmp_path / "no_retained_cmd.so"
    subprocess.run([gcc, "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True,
                   capture_output=True, timeout=60)
    return lib


def accounts_broker(directory: Path, plugins: list[Path]) -> LocalBroker:
    """Not started: operators ``operator`` and ``operator2``, the viewer, the arm's account."""
    return LocalBroker(directory, users=dict([OPERATOR, OPERATOR2, ARM_USER, VIEWER]), arms={ARM_USER[0]: ARM_ID},
                       operators=[OPERATOR[0], OPERATOR2[0]], viewers=[VIEWER[0]], plugins=plugins)


def arm_server(make_server: Any, broker: LocalBroker, **options: Any) -> Any:
    """A teleop server (``make_server`` fixture) on ``broker`` as the arm's account, once connected
    (``options`` to ``make_server``)."""
    server = make_server(broker.url, username=ARM_USER[0], password=ARM_USER[1], **options)
    deadline = time.monotonic() + 10.0
    while not server.bridge.connected.is_set():
        assert time.monotonic() < deadline, "the arm did not connect"
        time.sleep(0.02)
    return server
