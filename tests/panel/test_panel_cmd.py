"""``hebictl panel`` binds to loopback unless told otherwise, needs an explicit host list for
anything else, and fails with one ``hebictl: error:`` line for a busy port or a bad host."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hebictl.cli import main
from hebictl.cli.panel_cmd import check_bind, is_loopback
from hebictl.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("panel.lab")


def test_remote_bind_needs_allow_remote_and_an_allow_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="allow-remote"):
        check_bind("0.0.0.0", 8080, allow_remote=False)
    err = capsys.readouterr().err
    assert "TLS" in err and "login" in err and "127.0.0.1:8080" in err
    with pytest.raises(ConfigError, match="--allowed-host"):
        check_bind("0.0.0.0", 8080, allow_remote=True)
    capsys.readouterr()
    assert check_bind("0.0.0.0", 8080, allow_remote=True, allowed_hosts=["Panel.Lab"]) == {"panel.lab"}
    assert "WITHOUT TLS" in capsys.readouterr().err       # the loud warning
    check_bind("0.0.0.0", 8080, allow_remote=True, allowed_hosts=["panel.lab"], tls=True)
    assert "WITHOUT TLS" not in capsys.readouterr().err
    assert check_bind("127.0.0.1", 8080, allow_remote=False) >= {"127.0.0.1", "localhost"}
    assert capsys.readouterr().err == ""


def test_cli_exits_with_an_error_for_a_remote_bind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["panel", "--broker", "mqtt://127.0.0.1:1", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve the panel on 0.0.0.0" in capsys.readouterr().err


def _panel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hebictl", "panel", "--broker", "mqtt://127.0.0.1:1", *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def test_a_busy_port_and_a_bad_host_give_one_error_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        busy = _panel("--port", str(port))
    bad = _panel("--host", "no-such-host.invalid")
    for r, words in ((busy, f"port {port} on 127.0.0.1 is already in use"), (bad, "no-such-host.invalid")):
        print(r.stderr)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0].startswith("hebictl: error:") and words in lines[0]
