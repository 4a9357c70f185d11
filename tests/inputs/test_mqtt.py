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


def test_an_app_driven_over_the_broker(broker):
    """The MQTT topic drives the teach app on the mock (paced simulated time): stop and flow waypoints,
    playback, quit, through the same guard as every source."""
    import threading

    import paho.mqtt.client as mqtt

    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import PacedClock
    from hebictl.inputs.mqtt import MqttInputSource
    from hebictl.inputs.runner import make_app, run_app
    from tests._support.paths import REPO_ROOT

    cfg = load_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")
    arm = Arm.from_config(cfg, backend="mock", clock=PacedClock(),
                          initial_position=cfg.user_data["home_position"])
    arm.user_data.update(base_travel_time=1.0, min_travel_time=0.5)
    app = make_app("teach", arm)
    source = MqttInputSource(broker.url + "/armB", arm.clock)
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    pub.connect("127.0.0.1", broker.port)
    pub.loop_start()
    stop = threading.Event()
    presses = [(0.5, 1), (1.0, 2), (1.5, 1), (2.0, 3), (4.5, 8)]

    def phone():  # 60 Hz, each button held 0.1 s
        t0, k = time.monotonic(), 0
        while not stop.is_set() and k < 6 * 60:
            t = k / 60
            b = [1 if any(button == i + 1 and p <= t < p + 0.1 for p, button in presses) else 0 for i in range(8)]
            pub.publish(input_topic("armB"), json.dumps({"seq": k + 1, "ts": time.time(), "client": "phone",
                                                         "buttons": b, "axes": [0.0] * 8}))
            k += 1
            time.sleep(max(0.0, t0 + k / 60 - time.monotonic()))

    thread = threading.Thread(target=phone, daemon=True)
    thread.start()
    try:
        result = run_app(arm, app, source, duration=15.0)  # a hang guard: the app quits at ~4.5 s
    finally:
        stop.set()
        thread.join(5.0)
        pub.loop_stop()
        source.close()
        arm.close()
    print(f"over MQTT: {[h[1] for h in app.history]}, waypoints {[w.kind for w in app.waypoints]}, "
          f"accepted {source.accepted}, dropped {dict(source.rejected)}, stale {result.stale}")
    assert [w.kind for w in app.waypoints] == ["stop", "flow", "stop"]
    assert [h[1] for h in app.history][-2:] == ["toggle", "quit"] and app.done
    assert sum(source.rejected.values()) == 0

