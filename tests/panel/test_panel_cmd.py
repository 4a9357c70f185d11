"""``hebictl panel`` binds to loopback unless told otherwise, and explains how to expose it safely."""

from __future__ import annotations

import pytest

from hebictl.cli import main
from hebictl.cli.panel_cmd import check_bind, is_loopback
from hebictl.errors import ConfigError


def test_loopback_addresses() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("panel.lab")


def test_remote_bind_is_refused_without_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="allow-remote"):
        check_bind("0.0.0.0", 8080, allow_remote=False)
    err = capsys.readouterr().err
    assert "TLS" in err and "login" in err and "127.0.0.1:8080" in err
    check_bind("0.0.0.0", 8080, allow_remote=True)  # allowed, still with the advice
    assert "reverse proxy" in capsys.readouterr().err
    check_bind("127.0.0.1", 8080, allow_remote=False)
    assert capsys.readouterr().err == ""


def test_cli_exits_with_an_error_for_a_remote_bind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["panel", "--broker", "mqtt://127.0.0.1:1", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve the panel on 0.0.0.0" in capsys.readouterr().err
