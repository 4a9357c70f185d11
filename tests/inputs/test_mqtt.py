"""The MQTT input topic through a real mosquitto: valid samples reach the source, hostile ones are
dropped and counted by reason."""

from __future__ import annotations

import json
import time

import pytest

from hebictl.hardware import SimClock
from hebictl.inputs.mqtt import input_topic, parse_url
from tests._support.extras import extra_missing

pytest.importorskip("paho", reason=extra_missing("aiomqtt"))  # paho-mqtt comes with aiomqtt


def _wait(predicate, timeout=10.0):
    end = time.monotonic() + timeout  # hang guard only
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_input_topic_through_a_broker(broker):
    import paho.mqtt.client as mqtt

    from hebictl.inputs.mqtt import MqttInputSource

    url = broker.url + "/armA"
    source = MqttInputSource(url, SimClock())
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    host, port, arm_id = parse_url(url)
    pub.connect(host, port)
    pub.loop_start()
    try:
        topic = input_topic(arm_id)
        assert topic == "hebictl/v1/armA/cmd/input"
        good = {"seq": 1, "ts": 1.0, "client": "phone", "buttons": [0, 0, 1, 0, 0, 0, 0, 0], "axes": [0.0] * 8,
                "pose": {"position": [0.0, 0.1, 0.2], "orientation": [1.0, 0.0, 0.0, 0.0]}}
        bad = [b"not json", json.dumps({**good, "seq": 2, "buttons": [3] * 8}),
               json.dumps({**good, "seq": 3, "axes": [0.0] * 7}), json.dumps({**good, "seq": 4, "x": 1})]
        for payload in bad:
            pub.publish(topic, payload, qos=1)
        pub.publish(topic, json.dumps(good), qos=1)
        assert _wait(lambda: source.accepted == 1 and sum(source.rejected.values()) == len(bad)), source.rejected
        sample = source.poll(0.0)
        assert sample is not None and sample.button(3) == 1 and sample.position == (0.0, 0.1, 0.2)
        print(f"accepted {source.accepted}, dropped {dict(source.rejected)}")
        assert dict(source.rejected) == {"malformed_json": 1, "out_of_range": 1, "wrong_length": 1, "unknown_field": 1}
    finally:
        pub.loop_stop()
        pub.disconnect()
        source.close()
