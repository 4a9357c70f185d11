"""Broker URLs, credentials and TLS: parsed strictly, and TLS really verified against a private CA."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hebictl.errors import ConfigError
from hebictl.teleop.broker import LocalBroker
from hebictl.teleop.connection import parse_broker
from hebictl.teleop.server import TeleopServer
from tests._support.broker import need_mosquitto
from tests._support.ordering import HANG, PatientClient
from tests._support.paced import paced_servers
from tests._support.teleop import ARM_ID, run


@pytest.fixture
def make_server() -> Iterator[Callable[..., TeleopServer]]:
    """The arm on simulated time paced to real time (tests/_support/paced.py): a starved test worker
    stretches the arm's time instead of stopping it with a control gap mid-test."""
    with paced_servers() as make:
        yield make


@pytest.mark.parametrize(("url", "host", "port", "tls"), [
    ("mqtt://127.0.0.1:1884", "127.0.0.1", 1884, False),
    ("mqtt://broker.local", "broker.local", 1883, False),
    ("mqtts://broker.local", "broker.local", 8883, True),
    ("mqtts://[::1]:9000", "::1", 9000, True),
    ("localhost:1999", "localhost", 1999, False),
])
def test_broker_urls(url, host, port, tls):
    """Scheme picks TLS and the default port; the host and an explicit port are kept."""
    s = parse_broker(url)
    assert (s.host, s.port, s.tls, s.username, s.password) == (host, port, tls, None, None)


@pytest.mark.parametrize(("url", "kwargs", "key"), [
    ("http://h:1", {}, "broker"),
    ("mqtt://user:pw@h:1", {}, "broker"),
    ("mqtt://h:1/path", {}, "broker"),
    ("mqtt://h:99999", {}, "broker"),
    ("mqtt://:1883", {}, "broker"),
    ("mqtt://h", {"password": "x"}, "username"),
    ("mqtt://h", {"tls_cert": "c.pem"}, "tls"),
    ("mqtt://h", {"keepalive": 0}, "keepalive"),
])
def test_bad_broker_settings_name_their_key(url, kwargs, key):
    """Bad URLs and option combinations raise ConfigError naming the offending option."""
    with pytest.raises(ConfigError) as info:
        parse_broker(url, **kwargs)
    assert info.value.key == key


def test_password_file(tmp_path):
    """The first line of the password file is the password; an empty or missing file is an error."""
    f = tmp_path / "pw"
    f.write_text("s3cret\nignored\n")
    assert parse_broker("mqtt://h", username="u", password_file=f).password == "s3cret"
    f.write_text("")
    with pytest.raises(ConfigError, match="empty"):
        parse_broker("mqtt://h", username="u", password_file=f)
    with pytest.raises(ConfigError, match="cannot read"):
        parse_broker("mqtt://h", username="u", password_file=tmp_path / "missing")


def _make_ca(d: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60, cwd=d)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=hebictl test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    return d / "ca.crt", d / "server.crt", d / "server.key"


@pytest.mark.broker
def test_tls_broker_verified_with_ca(tmp_path, make_server):
    """Over mqtts:// with --tls-ca the arm and an operator talk; a client that does not trust the CA
    is refused during the handshake."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found")
    need_mosquitto()
    import aiomqtt  # the teleop extra (need_mosquitto skipped the test without it)

    certs = tmp_path / "certs"
    certs.mkdir()
    ca, cert, key = _make_ca(certs)
    broker = LocalBroker(tmp_path / "tls", tls=(ca, cert, key))
    broker.start()
    try:
        settings = parse_broker(broker.url, tls_ca=ca)
        assert settings.tls and settings.client_options()["tls_params"].ca_certs == str(ca)
        server = make_server(broker.url, tls_ca=ca)

        async def go():
            async with PatientClient(settings, ARM_ID, name="op") as c:
                assert (await c.mode("position")).accepted
            with pytest.raises(aiomqtt.MqttError):  # system CAs do not know ours
                async with PatientClient(parse_broker(broker.url), ARM_ID, name="op2"):
                    pass

        run(go(), timeout=4 * HANG)
        assert server.runner.mode == "position"
    finally:
        broker.stop()
