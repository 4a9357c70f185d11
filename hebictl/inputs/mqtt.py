"""The MQTT input topic as a source: a paho subscriber thread feeding a :class:`MailboxSource`.

``--input mqtt://HOST:PORT[/ARM_ID]`` subscribes ``hebictl/v1/<ARM_ID>/cmd/input`` (QoS 0: a late
sample is worth nothing, the next one replaces it). Every payload goes through the topic's one
validator (:func:`hebictl.inputs.schema.parse_input`); a bad one is dropped and counted by reason.
This subscriber is ``hebictl app``'s own connection; ``hebictl teleop --app`` serves the same topic
through its bridge (:mod:`hebictl.inputs.teleop_app`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlparse

from hebictl.errors import TeleopError, UsageError
from hebictl.inputs.schema import TOPIC_NAME
from hebictl.inputs.sources import MailboxSource

log = logging.getLogger(__name__)


def input_topic(arm_id: str) -> str:
    """``hebictl/v1/<arm_id>/cmd/input``: beside teleop's command topics."""
    return f"hebictl/v1/{arm_id}/cmd/{TOPIC_NAME}"


def parse_url(url: str) -> tuple[str, int, str]:
    """(host, port, arm id) of ``mqtt://HOST:PORT[/ARM_ID]`` (arm id ``arm`` by default)."""
    parsed = urlparse(url)
    if parsed.scheme != "mqtt" or not parsed.hostname:
        raise UsageError(f"--input {url}: expected mqtt://HOST:PORT[/ARM_ID]")
    try:
        port = parsed.port or 1883
    except ValueError:
        raise UsageError(f"--input {url}: the port is not a number") from None
    return parsed.hostname, port, parsed.path.strip("/") or "arm"


class MqttInputSource(MailboxSource):
    """Subscribes the input topic on ``url``; ``connected`` is set once the subscription is granted."""

    def __init__(self, url: str, clock: Any, *, client_id: str = "", timeout: float = 10.0) -> None:
        import paho.mqtt.client as mqtt

        super().__init__(clock, name="mqtt")
        host, port, arm_id = parse_url(url)
        self.topic = input_topic(arm_id)
        self.connected = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a: self.connected.set()
        self.client.on_message = self._on_message
        try:
            self.client.connect(host, port, keepalive=5)
        except OSError as exc:
            raise TeleopError(f"cannot reach the MQTT broker at {host}:{port}: {exc.strerror or exc}") from None
        self.client.loop_start()
        if not self.connected.wait(timeout):
            self.close()
            raise TeleopError(f"no subscription to {self.topic} on {host}:{port} within {timeout:g} s")

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any = None) -> None:
        client.subscribe(self.topic, qos=0)  # (re)subscribed after every reconnect

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        self.offer(msg.payload)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()
