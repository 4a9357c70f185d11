"""Shared by the panel's browser tests (test_panel_e2e, test_panel_mobile_io_e2e): where Chromium is,
what they need to run, the tap (an independent MQTT client in a process of its own that records the
arms' topics with their arrival times), and starting ``hebictl`` processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._support.broker import need_mosquitto
from tests._support.paths import REPO_ROOT as REPO

#: Debian's chromium (HEBICTL_CHROMIUM overrides the path)
CHROMIUM = next((p for p in (os.environ.get("HEBICTL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium",)
                 if os.access(p, os.X_OK)), None)


def need_browser() -> None:
    if CHROMIUM is None:
        pytest.skip("chromium not found (apt-get install chromium chromium-driver; tools/dev test installs it)")
    need_mosquitto(passwd=True)  # and aiomqtt, the teleop extra the panel extra includes
    pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e '.[test]')")


TAP_SCRIPT = """
import json, sys, time
import paho.mqtt.client as mqtt
def on_message(client, userdata, msg):
    t = time.time()  # stamped here, in a process of its own: the test's GIL and Playwright do not delay it
    sys.stdout.write(json.dumps([t, msg.topic, msg.payload.decode(errors="replace")]) + "\\n")
    sys.stdout.flush()
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="tap")
c.username_pw_set("tap", sys.argv[2])
c.on_message = on_message
c.on_connect = lambda *a: c.subscribe([(t, q) for t, q in json.loads(sys.argv[3])])
c.connect("127.0.0.1", int(sys.argv[1]))
c.loop_forever()
"""


class Tap:
    """An independent MQTT client (a process of its own) recording every state message and jog
    command with its arrival time."""

    def __init__(self, port: int, password: str, topics: Sequence[tuple[str, int]]) -> None:
        self.lock = threading.Lock()
        self.msgs: dict[tuple[str, str], list[tuple[float, dict[str, Any]]]] = defaultdict(list)
        self.proc = subprocess.Popen([sys.executable, "-c", TAP_SCRIPT, str(port), password, json.dumps(list(topics))],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                t, topic, payload = json.loads(line)
                body = json.loads(payload)
            except ValueError:
                continue
            parts = topic.split("/")
            with self.lock:
                self.msgs[(parts[2], "/".join(parts[3:]))].append((t, body))

    def get(self, arm: str, kind: str, since: float = 0.0) -> list[tuple[float, dict[str, Any]]]:
        with self.lock:
            return [m for m in self.msgs[(arm, kind)] if m[0] >= since]

    def status(self, arm: str) -> dict[str, Any]:
        s = self.get(arm, "state/status")
        return s[-1][1] if s else {}

    def wait(self, pred: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.01)
        raise AssertionError(f"timed out waiting for {what}")

    def wait_status(self, arm: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 10.0,
                    since: float = 0.0) -> tuple[float, dict[str, Any]]:
        try:
            return self.wait(lambda: next((m for m in self.get(arm, "state/status", since) if pred(m[1])), None),
                             timeout, f"status of {arm}")
        except AssertionError as exc:  # say where the arm was instead (a stop's reason, its mode, at_goal)
            last = self.status(arm)
            shown = {k: last.get(k) for k in ("state", "mode", "arm_mode", "app", "at_goal", "braking", "last_error",
                                              "last_event", "stop_behaviour")}
            raise AssertionError(f"{exc}; its last status: {shown}") from None

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def spawn_hebictl(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as f:
        return subprocess.Popen([sys.executable, "-m", "hebictl", *args], stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=REPO)


def token_url(log: Path) -> str | None:
    """The launch link ``hebictl panel`` printed (with its secret), from its log."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("hebictl panel: open "):
            return line.split()[3]
    return None


def http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False
