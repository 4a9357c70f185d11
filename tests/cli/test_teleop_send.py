"""``hebictl teleop-send`` against a real teleop server (mock arm) through a real mosquitto: one JSON line
per ack, options anywhere on the line, a jog summary that counts exactly what the arm answered.

Plumbing only: the arm runs on a paced clock, and how many samples a jog of ``--for S`` at ``--rate``
holds depends on the wall clock, so only the accounting is exact (refused == samples, or none)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hebictl.cli import main, teleop_cmd
from hebictl.teleop.broker import LocalBroker
from tests._support.teleop import HANG_S, paced_servers

pytestmark = pytest.mark.broker


@pytest.fixture
def arm_url(broker: LocalBroker) -> Iterator[str]:
    """mosquitto on a free loopback port and `hebictl teleop`'s server for the 6-DoF kit on the mock
    (a paced clock: a loaded machine stretches the arm's time instead of stopping it)."""
    with paced_servers() as make:
        make(broker.url, arm_id="c1", rate_hz=200.0)
        yield broker.url


def _lines(capsys) -> list[dict]:
    out = capsys.readouterr().out
    assert out.endswith("\n")
    return [json.loads(line) for line in out.splitlines()]


def test_options_after_the_action_and_one_json_line_per_answer(arm_url, capsys):
    """`mode position --timeout 3 --arm-id c1 --broker URL`: the options after the action are taken
    (not the top-level usage); the ack and the status are one JSON line each."""
    assert main(["teleop-send", "mode", "position", "--timeout", str(HANG_S), "--arm-id", "c1", "--broker", arm_url,
                 "--client", "after"]) == 0
    (ack,) = _lines(capsys)
    assert ack["accepted"] and ack["topic"] == "mode" and ack["client"] == "after"
    # before the action still works, and a repeat after it wins
    assert main(["teleop-send", "--broker", arm_url, "--arm-id", "nobody", "--timeout", "9", "status",
                 "--arm-id", "c1", "--timeout", str(HANG_S)]) == 0
    (status,) = _lines(capsys)
    assert status["status"] == "online" and status["mode"] == "position", status


def test_jog_in_the_wrong_mode_counts_every_sample_rejected(arm_url, capsys, monkeypatch):
    """Every sample (those streamed for 0.5 s at 50/s, and the dead-man release) of a jog in mode
    'position' is rejected wrong_mode; the rejections come coalesced. The summary waits for every
    answer: rejected == samples, and the printed acks add up to it. The quiet period after which the
    CLI takes silence for acceptance (0.5 s) is made a hang guard: a loaded machine may answer later."""
    monkeypatch.setattr(teleop_cmd, "JOG_ACK_QUIET_S", HANG_S)
    assert main(["teleop-send", "mode", "position", "--broker", arm_url, "--arm-id", "c1", "--timeout",
                 str(HANG_S)]) == 0
    capsys.readouterr()
    code = main(["teleop-send", "jog", "--velocity", "0.2", "0", "0", "0", "0", "0", "--for", "0.5", "--rate",
                 "50", "--broker", arm_url, "--arm-id", "c1", "--client", "jogger", "--timeout", str(HANG_S)])
    lines = _lines(capsys)
    summary, acks = lines[-1], lines[:-1]
    print(summary["detail"])
    assert code == 1
    assert summary["topic"] == "jog" and not summary["accepted"] and summary["reason"] == "wrong_mode"
    assert summary["samples"] == summary["rejected"] >= 1
    assert sum(1 + a.get("coalesced", 0) for a in acks) == summary["rejected"]
    assert all(a["reason"] == "wrong_mode" and a["client"] == "jogger" for a in acks)
    assert max(a.get("last_seq") or a["seq"] for a in acks) == summary["seq"], "the release was answered"


def test_jog_in_jog_mode_is_accepted_with_nothing_rejected(arm_url, capsys):
    """In mode 'jog' no sample is rejected: exit 0, the summary alone, 0 rejected."""
    assert main(["teleop-send", "mode", "jog", "--broker", arm_url, "--arm-id", "c1", "--timeout", str(HANG_S)]) == 0
    capsys.readouterr()
    assert main(["teleop-send", "jog", "--velocity", "0.1", "0", "0", "0", "0", "0", "--for", "0.2",
                 "--broker", arm_url, "--arm-id", "c1", "--timeout", str(HANG_S)]) == 0
    (summary,) = _lines(capsys)
    assert summary["accepted"] and summary["rejected"] == 0 and summary["samples"] >= 1
