"""Shared by the panel's browser tests (test_panel_e2e, test_panel_mobile_io_e2e): where Chromium is,
what they need to run, the tap (an independent MQTT client in a process of its own that records the
arms' topics with their arrival times), and starting ``hebictl`` processes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
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


#: A load of ``n`` authenticated sessions on the panel at ``url`` (argv: url with the token, n), each
#: watching armA, then unauthenticated handshakes as fast as they are answered. Prints
#: ``ready <open> <messages in 1 s> <per kind>`` once every session is open, replaced or gave up
#: (hang guard: 600 s); on stdin's end, ``refused <n> accepted <n> open <n>``.
SESSIONS_SCRIPT = """
import asyncio, json, sys, time
from websockets.asyncio.client import connect
url, n = sys.argv[1], int(sys.argv[2])
frames = 0
kinds = {}
open_now = 0
async def watcher(i):
    global frames, open_now
    while True:   # a handshake that timed out on the loaded machine is tried again (the caller's hang guard)
        try:
            ws = await connect(url, open_timeout=30)
        except Exception:
            await asyncio.sleep(1.0)
            continue
        open_now += 1
        try:
            async with ws:   # once open, it watches until the panel closes it (e.g. replaced at the cap)
                await ws.send(json.dumps({"t": "select", "arm": "armA"}))
                async for m in ws:
                    frames += 1
                    k = m[:40].split('"')[3]
                    kinds[k] = kinds.get(k, 0) + 1
        except Exception:
            pass
        finally:
            open_now -= 1
        return
async def intruders(stop):
    refused = accepted = 0
    while not stop.is_set():   # unauthenticated sockets, as fast as they are refused
        try:
            async with connect(url.split("?")[0], open_timeout=30):
                accepted += 1
        except Exception:
            refused += 1
        await asyncio.sleep(0.01)
    return refused, accepted
async def main():
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(watcher(i)))
        await asyncio.sleep(0.005)
    for _ in range(2400):   # until every session is open, replaced or has given up (connecting: none)
        await asyncio.sleep(0.25)
        if sum(not t.done() for t in tasks) == open_now:
            break
    await asyncio.sleep(0.5)
    alive = open_now
    f0, k0 = frames, dict(kinds); await asyncio.sleep(1.0)
    stop = asyncio.Event()
    intr = asyncio.create_task(intruders(stop))
    per = ",".join(f"{k}:{n - k0.get(k, 0)}" for k, n in sorted(kinds.items()))
    print(f"ready {alive} {frames - f0} {per}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    stop.set()
    refused, accepted = await intr
    print(f"refused {refused} accepted {accepted} open {open_now}", flush=True)
asyncio.run(main())
"""


def page_state(page: Any) -> dict[str, Any]:
    """What a hang guard reports of a panel page: its selected arm, the status in its last frame (mode,
    state, group), its allowed controls, the commands it sent (the panel's times), its toasts (acks,
    refusals, failures to send) and the last message it dropped as invalid."""
    try:
        return dict(page.evaluate(
            "(() => { const S = window.panelState || {}; const st = (S.frame || {}).status || {};"
            " return {arm: S.arm, mode: st.mode, state: st.state, group: st.group || null, allowed: S.allowed,"
            " sent: S.sent, toasts: [...document.querySelectorAll('#toasts .toast')].map(t => t.innerText),"
            " invalid: S.lastInvalid || null}; })()"))
    except Exception as exc:  # a page that cannot answer says so instead
        return {"page": f"not readable: {exc}"}


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


#: [s] the arms' command lifetime in the browser rigs (the kits' own: HEBI's 0.25 s), see :func:`shared_machine`
RIG_COMMAND_LIFETIME = 3.0


def shared_machine(doc: dict[str, Any]) -> dict[str, Any]:
    """A config for an arm process of a browser rig that runs beside Chromium and every other test on
    a loaded 2-core machine, where a process can be off the CPU for a good fraction of a second.

    ``hebictl teleop`` disarms (mode ``idle``, which also ends mode ``app``) on every arm event it did
    not cause itself, whatever the monitor's reaction (hebictl/teleop/runner.py ``OWN_EVENT_KINDS``).
    Such a stall made three of them: a ``control_gap`` (a cycle later than the command lifetime), a
    ``feedback_late`` and a ``model_mismatch`` (the sim's effort residual after a stall, read as a
    payload of 0.3 kg and then of -0.00 kg: each change of 0.2 kg is an event); a ``contact`` stop
    from the same residual latched before the emulator was used. Each ended the mode under test
    mid-way (the Mobile IO rig's "homing stall"). Worse, on the sim the modules' last command runs out
    during a stall longer than the command lifetime while MuJoCo keeps time: a 1.25 s stall of a
    starting arm process let the kit fall 3.8 rad, past a joint limit, where no goal is admitted and
    the jog app stays ``homing``. The rigs test the panel, so those monitors keep recording here but
    at thresholds a stall does not reach, and the command lifetime is :data:`RIG_COMMAND_LIFETIME`;
    each monitor and the lifetime's laws are tested exactly, in simulated time, in
    tests/control/monitors, tests/inputs/test_guard.py (the Mobile IO app's stale input, whose
    threshold is this lifetime) and the safety matrix."""
    doc["command_lifetime"] = RIG_COMMAND_LIFETIME
    monitors = doc.setdefault("user_data", {}).setdefault("safety", {}).setdefault("monitors", {})
    monitors.setdefault("control_gap", {})["reaction"] = "event"
    monitors.setdefault("feedback_late", {})["max_age"] = 30.0
    monitors.setdefault("model_mismatch", {})["min_mass"] = 1000.0
    monitors.setdefault("contact", {}).update(threshold_min=5.0, threshold_fraction=0.3)
    return doc


def stop_processes(procs: Sequence[subprocess.Popen[bytes]], tap: Tap, arms: Sequence[str],
                   hang: float = 30.0) -> None:
    """End the rig's ``hebictl`` processes: SIGTERM to all (a panel exits on it); an arm process
    publishes ``offline`` on it and then holds its arm until a second signal (docs/teleop.md), which
    it gets once the tap has seen that ``offline`` (or the process is gone). ``hang`` only guards
    against a process that never answers: it is then killed."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + hang
    for arm in arms:
        while time.monotonic() < deadline and tap.status(arm).get("status") != "offline":
            time.sleep(0.02)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


def end_rig(procs: Sequence[subprocess.Popen[bytes]], tap: Tap, arms: Sequence[str], broker: Any, tmp: Path) -> None:
    """A browser rig's teardown: its processes ended (:func:`stop_processes`), the tap and the broker
    closed, and the tail of every log in ``tmp`` that holds a traceback printed."""
    stop_processes(procs, tap, arms)
    tap.close()
    broker.stop()
    for log in sorted(tmp.glob("*.log")):
        text = log.read_text(errors="replace")
        if "Traceback" in text:
            print(f"--- {log.name}\n{text[-3000:]}")


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright (closed at the end)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


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
