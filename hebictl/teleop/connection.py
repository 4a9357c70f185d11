"""Where the broker is and how to authenticate: parsed once from the command line into a value.

``mqtt://host:port`` is plain TCP (default port 1883), ``mqtts://host:port`` is TLS (default
port 8883). Credentials never appear in the URL (it ends up in shell history and process
lists): the password is read from a file. TLS settings are passed to aiomqtt unchanged
(:class:`aiomqtt.TLSParameters`); a CA file makes the client verify the broker against that CA
instead of the system store, and a client certificate/key pair enables mutual TLS.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hebictl.errors import ConfigError


@dataclass(frozen=True)
class BrokerSettings:
    """Broker address, credentials and TLS files."""

    host: str
    port: int
    tls: bool = False
    username: str | None = None
    password: str | None = None
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    keepalive: int = 5  # s; a silent broker is declared lost after ~1.5 keepalive periods

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for :class:`aiomqtt.Client` (besides identifier and will)."""
        import aiomqtt

        # TCP_NODELAY: paho leaves Nagle's algorithm on, which holds small packets (a jog sample,
        # an ack) back until the previous one is acknowledged: tens of ms of added latency
        opts: dict[str, Any] = {"hostname": self.host, "port": self.port, "keepalive": self.keepalive,
                                "socket_options": [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]}
        if self.username is not None:
            opts["username"] = self.username
            opts["password"] = self.password
        if self.tls:
            opts["tls_params"] = aiomqtt.TLSParameters(
                ca_certs=str(self.tls_ca) if self.tls_ca else None,
                certfile=str(self.tls_cert) if self.tls_cert else None,
                keyfile=str(self.tls_key) if self.tls_key else None)
        return opts


def read_password_file(path: str | Path) -> str:
    """The password stored in ``path`` (first line, trailing newline stripped)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read password file: {exc.strerror}", file=p) from exc
    lines = text.splitlines()
    if not lines or not lines[0]:
        raise ConfigError("password file is empty", file=p)
    return lines[0]


def parse_broker(url: str, *, username: str | None = None, password: str | None = None,
                 password_file: str | Path | None = None, tls_ca: str | Path | None = None,
                 tls_cert: str | Path | None = None, tls_key: str | Path | None = None,
                 keepalive: int = 5) -> BrokerSettings:
    """Settings from ``mqtt[s]://HOST[:PORT]`` and the credential/TLS options of the CLI."""
    parts = urlsplit(url if "://" in url else f"mqtt://{url}")
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
        raise ConfigError(f"broker URL scheme must be mqtt:// or mqtts://, got {url!r}", key="broker")
    if parts.username or parts.password:
        raise ConfigError("put no credentials in the broker URL; use --username and --password-file",
                          key="broker")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"broker URL must be mqtt[s]://HOST[:PORT] only, got {url!r}", key="broker")
    host = parts.hostname
    if not host:
        raise ConfigError(f"broker URL has no host: {url!r}", key="broker")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"bad port in broker URL {url!r}", key="broker") from exc
    tls = parts.scheme in ("mqtts", "ssl") or any(x is not None for x in (tls_ca, tls_cert, tls_key))
    if port is None:
        port = 8883 if tls else 1883
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError("give both --tls-cert and --tls-key (client certificate and its key)", key="tls")
    for what, f in (("tls-ca", tls_ca), ("tls-cert", tls_cert), ("tls-key", tls_key)):
        if f is not None and not Path(f).is_file():
            raise ConfigError(f"--{what} file not found", file=f)
    if password_file is not None:
        if password is not None:
            raise ConfigError("give --password-file or a password, not both", key="password")
        password = read_password_file(password_file)
    if password is not None and username is None:
        raise ConfigError("a password needs --username", key="username")
    if keepalive < 1:
        raise ConfigError(f"keepalive must be >= 1 s, got {keepalive}", key="keepalive")
    return BrokerSettings(host=host, port=port, tls=tls, username=username, password=password,
                          tls_ca=Path(tls_ca) if tls_ca else None, tls_cert=Path(tls_cert) if tls_cert else None,
                          tls_key=Path(tls_key) if tls_key else None, keepalive=int(keepalive))
