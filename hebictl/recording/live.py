"""Live view: the recorder's messages served to Foxglove over its WebSocket protocol (``foxglove-sdk``).

``hebictl teleop --foxglove`` opens Foxglove's live connection on ``ws://127.0.0.1:8765`` by default.
The rules are the panel's (docs/panel.md): loopback only unless ``--foxglove-allow-remote``; the
Foxglove WebSocket protocol has no login of its own, so a remote viewer belongs behind a reverse
proxy that terminates TLS and asks for one. The view is read-only: the server offers no services,
parameters or client publishing, so nothing a viewer sends reaches the arm.

The same encoded bytes as the MCAP file go out (same topics and schemas, so the shipped layout works
live too); the writer thread sends them, never the control thread.
"""

from __future__ import annotations

import ipaddress
import json
import logging

from hebictl.errors import ConfigError, InstallationError
from hebictl.recording import schemas
from hebictl.recording.schemas import Topic

log = logging.getLogger(__name__)


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind address unless the operator allowed it explicitly."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError as exc:
        raise ConfigError(f"--foxglove-host {host!r} is not an IP address") from exc
    if not loopback and not allow_remote:
        raise ConfigError(f"--foxglove-host {host} is not a loopback address: the Foxglove protocol has no login; "
                          "add --foxglove-allow-remote only behind a reverse proxy with TLS and a login "
                          "(docs/recording.md)")


class LiveView:
    """A Foxglove WebSocket server with one channel per recorded topic."""

    def __init__(self, topics: tuple[Topic, ...], *, host: str = "127.0.0.1", port: int = 8765,
                 allow_remote: bool = False, name: str = "hebictl") -> None:
        check_host(host, allow_remote)
        try:
            import foxglove
        except ImportError as exc:
            raise InstallationError("--foxglove needs foxglove-sdk: pip install 'hebictl[live]'") from exc
        self.context = foxglove.Context()
        self.channels = {}
        for t in topics:
            data = schemas.schema_bytes(t)
            encoding = "protobuf" if t.encoding == "protobuf" else "jsonschema"
            self.channels[t.name] = foxglove.Channel(t.name, message_encoding=t.encoding, context=self.context,
                                                     schema=foxglove.Schema(name=t.schema, encoding=encoding,
                                                                            data=data))
        try:
            self.server = foxglove.start_server(name=name, host=host, port=port, context=self.context,
                                                capabilities=[])
        except Exception as exc:  # the SDK raises its own error types for a port in use or a bad host
            raise ConfigError(f"cannot serve Foxglove on {host}:{port}: {exc}") from exc
        self.port = self.server.port
        self.url = f"ws://{host}:{self.port}"
        log.info("Foxglove live view on %s", self.url)

    def emit(self, topic: str, t_ns: int, data: bytes) -> None:
        channel = self.channels.get(topic)
        if channel is not None:
            channel.log(data, log_time=t_ns)

    def describe(self, t_ns: int, urdf: str) -> None:
        """(Re)send the URDF: a viewer that connects later gets it within a flush interval."""
        self.emit(schemas.ROBOT_DESCRIPTION.name, t_ns, json.dumps({"data": urdf}).encode())

    def close(self) -> None:
        self.server.stop()
