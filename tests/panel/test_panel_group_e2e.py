"""End to end: the panel's view of a group of arms (issue 32 item 1). Debian's chromium (headless,
Playwright) on ``hebictl panel``, a real mosquitto with accounts and an ACL, and one real
``hebictl teleop configs/two-x-series-6dof.multi.yaml`` process serving arms ``left`` and ``right`` in
one loop under one supervisor (hebictl/teleop/group.py): on the mock, then on the sim (one MuJoCo
scene). The file's two arms are used with each robot config given the browser rigs' thresholds for a
loaded machine (tests/_support/panel_e2e.py ``shared_machine``): with the bundled thresholds a stall of
the arm process trips the group itself (seen at load average 9 on the mock: right's ``control_gap``
of 253 ms over its 250 ms command lifetime held both arms before the test began; the panel showed it).

What the page does goes through the panel's authenticated session; whether an arm is held, e-stopped
or in a mode, and which commands it refused, is judged from the arms' own topics read by an
independent MQTT client (tests/_support/panel_e2e.py's tap); the page is then checked to show it.
Outcomes and their order are asserted, never durations: every wait is for an event, with a timeout
that only guards against a hang. The screenshot of the held group goes to the test's temporary
folder; with ``HEBICTL_UPDATE_DOCS=1`` it also replaces docs/panel-group.png. A second test publishes
a group claim from another arm's account, and a malformed group: neither is shown as a group.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hebictl.teleop.broker import LocalBroker, free_port
from tests._support.panel_e2e import (
    REPO,
    Tap,
    chromium,
    end_rig,
    http_ok,
    need_browser,
    page_state,
    shared_machine,
    spawn_hebictl,
    token_url,
)
from tests._support.teleop import PLUMBING_SILENCE_FLAGS

pytestmark = [pytest.mark.broker, pytest.mark.heavy, pytest.mark.timeout(900)]

MULTI = REPO / "configs" / "two-x-series-6dof.multi.yaml"
ARMS = ("left", "right")
#: "cell" is the account of the multi-arm process (both arms' state topics); "rogue" owns the state topics
#: of an arm "ghost" with no arm behind it and claims a group with left in them
USERS = {"op": "op-pw", "tap": "tap-pw", "cell": "cell-pw", "rogue": "rogue-pw"}
TAP_TOPICS = [("hebictl/v1/+/state/#", 1), ("hebictl/v1/+/cmd/mode", 1), ("hebictl/v1/+/cmd/estop", 1)]
DOC_SHOT = REPO / "docs" / "panel-group.png"   # replaced only with HEBICTL_UPDATE_DOCS=1
HANG = 120.0  # s: how long a wait for an event may take before the test calls it a hang (never a bound)


class Rig:
    def __init__(self, broker: LocalBroker, tap: Tap, panel: str, tmp: Path, procs: list[subprocess.Popen[bytes]],
                 backend: str):
        self.broker, self.tap, self.panel, self.tmp, self.procs = broker, tap, panel, tmp, procs
        self.backend = backend

    def publish(self, user: str, topic: str, body: Any) -> None:
        """Publish ``body`` (JSON) retained, QoS 1, as ``user`` from a client of its own."""
        import paho.mqtt.client as mqtt

        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{user}-e2e")
        c.username_pw_set(user, USERS[user])
        c.connect("127.0.0.1", self.broker.port)
        c.loop_start()
        try:
            c.publish(topic, json.dumps(body).encode(), qos=1, retain=True).wait_for_publish(HANG)
        finally:
            c.loop_stop()
            c.disconnect()


def _multi_config(tmp: Path) -> Path:
    """configs/two-x-series-6dof.multi.yaml with its arms' robot configs given the browser rigs'
    monitor thresholds and command lifetime (:func:`shared_machine`); names and bases as they are."""
    import yaml

    multi = yaml.safe_load(MULTI.read_text())
    for entry in multi["arms"]:
        src = MULTI.parent / entry["config"]
        doc = yaml.safe_load(src.read_text())
        doc["hrdf"] = str((src.parent / doc["hrdf"]).resolve())
        doc["gains"] = {k: str((src.parent / v).resolve()) for k, v in (
            doc["gains"] if isinstance(doc["gains"], dict) else {"default": doc["gains"]}).items()}
        out = tmp / f"{entry['name']}.cfg.yaml"
        out.write_text(yaml.safe_dump(shared_machine(doc)))
        entry["config"] = out.name
    path = tmp / "two-x-series-6dof.multi.yaml"
    path.write_text(yaml.safe_dump(multi))
    return path


@pytest.fixture(scope="module", params=["mock", "sim"])
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    need_browser()
    backend = request.param
    if backend == "sim":
        pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    tmp = tmp_path_factory.mktemp(f"panel_group_e2e_{backend}")
    broker = LocalBroker(tmp / "broker", users=USERS, arms={"cell": "left", "rogue": "ghost"}, operators=["op"])
    with (broker.directory / "acl").open("a") as f:   # the one process serves right too; the tap reads commands
        f.write("\nuser cell\ntopic read hebictl/v1/right/cmd/#\ntopic write hebictl/v1/right/state/#\n\n"
                "user tap\ntopic read hebictl/v1/+/state/#\ntopic read hebictl/v1/+/cmd/mode\n"
                "topic read hebictl/v1/+/cmd/estop\n")
    for user, pw in USERS.items():
        (tmp / f"{user}.pw").write_text(pw + "\n")
    broker.start()
    procs: list[subprocess.Popen[bytes]] = []
    tap = Tap(broker.port, USERS["tap"], TAP_TOPICS)
    try:
        procs.append(spawn_hebictl(["teleop", str(_multi_config(tmp)), "--broker", broker.url,
                                    *PLUMBING_SILENCE_FLAGS,
                                    "--backend", backend, "--rate", "100",   # as the panel rigs: a loaded machine
                                    # simulated time stretched when the process is late: a starved sim arm
                                    # fell (left's elbow 0.71 rad off its command, a tracking_error hold)
                                    "--paced-clock",
                                    "--username", "cell", "--password-file", str(tmp / "cell.pw")],
                                   tmp / "teleop.log"))
        port = free_port()
        procs.append(spawn_hebictl(["panel", "--broker", broker.url, "--username", "op", "--password-file",
                                    str(tmp / "op.pw"), "--port", str(port)], tmp / "panel.log"))

        def up(arm: str) -> bool:
            dead = [p.args for p in procs if p.poll() is not None]
            if dead:
                raise AssertionError(f"exited early: {dead}; logs in {tmp}")
            st = tap.status(arm)
            return st.get("status") == "online" and (st.get("cycles") or 0) > 0

        for arm in ARMS:
            tap.wait(lambda a=arm: up(a), 180, f"{arm} online")
        tap.wait(lambda: http_ok(f"http://127.0.0.1:{port}/panel.js"), HANG, "the panel")
        url = tap.wait(lambda: token_url(tmp / "panel.log"), HANG, "the panel's link")
        yield Rig(broker, tap, url, tmp, procs, backend)
    finally:
        end_rig(procs, tap, list(ARMS), broker, tmp)


@pytest.fixture(scope="module")
def page(rig: Rig) -> Iterator[Any]:
    with chromium() as browser:
        p = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
        p.set_default_timeout(HANG * 1000)   # Playwright's waits: hang guards too
        p.errors = []
        p.on("pageerror", lambda e: p.errors.append(str(e)))
        p.goto(rig.panel)
        yield p
        p.close()


def _diagnosis(page: Any, rig: Rig) -> str:
    """What a hang guard reports: what the arms published (the tap's last status of each), what the
    page was given (its overview) and shows (page_state), and the end of the arm process's and the
    panel's logs: a failure on a CI machine then says why."""
    published = {a: {k: rig.tap.status(a).get(k) for k in ("status", "state", "mode", "group", "last_error")}
                 for a in ARMS}
    try:
        overview = page.evaluate("window.panelState.armsMsg || null")
    except Exception as exc:  # a page that cannot answer says so instead
        overview = f"not readable: {exc}"
    logs = {name: (rig.tmp / name).read_text(errors="replace").splitlines()[-15:]
            for name in ("teleop.log", "panel.log") if (rig.tmp / name).exists()}
    return (f"the arms published {published}; the page was given {overview}; it shows {page_state(page)}; "
            f"logs: {logs}")


def _explain_hangs(test: Callable[[Rig, Any], None]) -> Callable[[Rig, Any], None]:
    """A Playwright wait that ran into its hang guard fails with :func:`_diagnosis` (playwright is
    imported when the test runs: the suite collects without the test extras)."""
    @functools.wraps(test)
    def run(rig: Rig, page: Any) -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            test(rig, page)
        except PlaywrightTimeout as exc:
            raise AssertionError(f"hang guard: {str(exc).splitlines()[0]}; {_diagnosis(page, rig)}") from None
    return run


def _wait_grouped(page: Any, rig: Rig, arm: str) -> None:
    """Wait until ``arm``'s card is drawn in left and right's group box."""
    page.wait_for_selector(f"#overview .group[data-group='left,right'] .card[data-arm='{arm}']")


def _card(page: Any, arm: str) -> str:
    return str(page.inner_text(f"#overview .card[data-arm='{arm}']"))


def _wait_card(page: Any, arm: str, *texts: str) -> str:
    """Wait until ``arm``'s overview card shows every one of ``texts``; returns its text."""
    cond = " && ".join(f"c.innerText.includes({json.dumps(t)})" for t in texts)
    page.wait_for_function(f"(() => {{ const c = document.querySelector(\"#overview .card[data-arm='{arm}']\"); "
                           f"return !!c && {cond}; }})()")
    return _card(page, arm)


def _select(page: Any, arm: str) -> None:
    """Show ``arm``: a click on its overview card; wait until its frames (and the controls they allow) arrive."""
    page.click(f"#overview .card[data-arm='{arm}']")
    page.wait_for_function(f"window.panelState.frame && window.panelState.frame.arm === '{arm}' "
                           "&& window.panelState.frame.writable === true && window.panelState.desc")
    n = int(page.evaluate("window.panelState.frames"))
    page.wait_for_function(f"window.panelState.frames >= {n + 3}")


def _mode(page: Any, rig: Rig, arm: str, mode: str) -> tuple[float, dict[str, Any]]:
    """Click ``mode`` on the selected ``arm``; the arm's ack of it as the tap received it (time, ack)."""
    page.wait_for_selector(f"#modes button[data-mode={mode}]:not([disabled])")
    t = time.time()
    page.click(f"#modes button[data-mode={mode}]")
    return rig.tap.wait(lambda: next(((r, b) for r, b in rig.tap.get(arm, "state/ack", t)
                                      if b.get("topic") == "mode"), None), HANG, f"{arm}'s ack of its mode")


@_explain_hangs
def test_the_overview_shows_the_group_and_its_hold_from_one_arms_estop_to_the_resume(rig: Rig, page: Any) -> None:
    tap = rig.tap
    # both arms listed, in one group box, with their state, without selecting either
    _wait_grouped(page, rig, "left")
    _wait_grouped(page, rig, "right")
    for arm in ARMS:
        text = _wait_card(page, arm, "online", "mode idle")
        assert "HELD" not in text and "E-STOP" not in text, text
    title = page.inner_text("#overview .group[data-group='left,right'] .gtitle")
    assert "one process, one supervisor" in title and "left + right" in title, title

    # both arms to mode position and home through the page; the overview shows both without switching
    for arm in ARMS:
        _select(page, arm)
        _, ack = _mode(page, rig, arm, "position")
        assert ack["accepted"], ack
        tap.wait_status(arm, lambda s: s.get("mode") == "position", HANG)
        page.wait_for_selector("#home:not([disabled])")
        t_home = time.time()
        page.click("#home")
        acked, ack = tap.wait(lambda a=arm, t=t_home: next(((r, b) for r, b in tap.get(a, "state/ack", t)
                                                            if b.get("topic") == "joint_goal"), None),
                              HANG, f"{arm}'s ack of its home goal")
        assert ack["accepted"], ack
        # the arm publishes the status with a command's effect before its ack: one after the ack is about this goal
        tap.wait_status(arm, lambda s: bool(s.get("at_goal")), HANG, since=acked)
    for arm in ARMS:
        _wait_card(page, arm, "mode position")

    # right's e-stop from the page holds both arms: judged on the arms' own statuses
    t_estop = time.time()
    page.click("#estop")   # right is selected
    for arm in ARMS:
        _, st = tap.wait_status(arm, lambda s: s.get("state") == "stopped" and (s.get("group") or {}).get("held")
                                and s["group"].get("by") == "right", HANG, since=t_estop)
        assert st["group"]["arms"] == list(ARMS), st
    assert tap.status("right")["estop"] and not tap.status("left")["estop"]
    # ... and on the page: both cards, the group box, then left's banner naming right
    _wait_card(page, "right", "E-STOP ENGAGED", "HOLDS ITS GROUP")
    _wait_card(page, "left", "HELD by the group: right e-stopped")
    page.wait_for_function("document.querySelector(\"#overview .group[data-group='left,right']\")"
                           ".classList.contains('held')")
    _select(page, "left")
    page.wait_for_selector("#groupbanner:not([hidden])")
    banner = page.inner_text("#groupbanner")
    assert "HELD BY THE GROUP: right e-stopped" in banner and "Resume: clear right first" in banner, banner

    # left's mode is refused while right's e-stop holds the group: the arm says so (tap), the page shows it
    received, ack = _mode(page, rig, "left", "position")
    assert not ack["accepted"] and ack["reason"] == "group_hold" and "right" in ack["detail"], ack
    assert tap.status("left").get("mode") == "idle"
    page.wait_for_function("document.querySelector('#groupbanner').innerText"
                           ".includes('REFUSED (group_hold): cmd/mode')")
    _wait_card(page, "left", "refused mode (group_hold)")
    # the scene draws right beside left, at right's base in left's frame (the config's bases: y +0.3 and -0.3)
    page.wait_for_function("(window.panelState.frame.others || []).some(o => o.arm === 'right' && o.estop)")
    right = page.evaluate("window.panelState.frame.others.find(o => o.arm === 'right')")
    assert right["base"] == pytest.approx([0.0, -0.6, 0.0], abs=1e-9) and right["segs"], right
    shot = rig.tmp / "panel-group.png"
    page.screenshot(path=str(shot))
    print(f"\n{rig.backend}: screenshot: {shot}")
    if os.environ.get("HEBICTL_UPDATE_DOCS") == "1" and rig.backend == "sim":
        shutil.copy(shot, DOC_SHOT)

    # right's release and mode clear the group's cause: no arm holds the group any more (both statuses) ...
    _select(page, "right")
    page.wait_for_selector("#estop_release:not([disabled])")
    t_release = time.time()
    page.click("#estop_release")
    tap.wait_status("right", lambda s: s.get("estop") is False, HANG, since=t_release)
    _, ack = _mode(page, rig, "right", "position")
    assert ack["accepted"], ack
    for arm in ARMS:
        tap.wait_status(arm, lambda s: (s.get("group") or {}).get("held") is False, HANG, since=t_release)
    # ... left, still stopped by the group, resumes with its own mode command; its banner is gone
    _select(page, "left")
    page.wait_for_selector("#groupbanner", state="hidden")
    _, ack = _mode(page, rig, "left", "position")
    assert ack["accepted"], ack
    tap.wait_status("left", lambda s: s.get("mode") == "position" and s.get("state") != "stopped", HANG)
    for arm in ARMS:
        text = _wait_card(page, arm, "mode position")
        assert "HELD" not in text and "E-STOP" not in text and "refused" not in text, text
    assert page.is_hidden("#groupbanner")
    assert not page.errors, page.errors


@_explain_hangs
def test_a_group_claimed_by_another_account_or_malformed_is_not_shown_as_a_group(rig: Rig, page: Any) -> None:
    """``rogue`` (the account of arm ``ghost``) publishes a status claiming ghost is in a group with
    left, held by left: the overview keeps left and right's group as it is and draws ghost alone,
    marked unconfirmed; left's card is unchanged. Then a malformed group (``by`` not a member): the
    group is dropped and counted, the status kept (ghost's card shows its mode), the page keeps running."""
    claim = {"status": "online", "state": "running", "mode": "position", "estop": False,
             "group": {"arms": ["ghost", "left"], "held": True, "by": "left", "cause": "estop: e-stop engaged"}}
    rig.publish("rogue", "hebictl/v1/ghost/state/status", claim)
    text = _wait_card(page, "ghost", "group not confirmed by its members")
    assert "HELD by the group: left e-stopped" in text, text   # its own claim, on its own card only
    _wait_grouped(page, rig, "left")
    assert page.locator("#overview .group.solo .card[data-arm='ghost']").count() == 1
    assert "HELD" not in _card(page, "left"), _card(page, "left")
    bad = {**claim, "mode": "jog", "group": {"arms": ["ghost"], "held": False, "by": "left"}}
    rig.publish("rogue", "hebictl/v1/ghost/state/status", bad)
    text = _wait_card(page, "ghost", "mode jog")
    assert "HELD" not in text and "not confirmed" not in text, text
    dropped = page.evaluate("window.panelState.armsMsg.arms.find(a => a.id === 'ghost').group_dropped")
    assert dropped >= 1, dropped
    _wait_grouped(page, rig, "right")
    assert not page.errors, page.errors
    rig.publish("rogue", "hebictl/v1/ghost/state/status", {"status": "offline", "state": "offline"})
