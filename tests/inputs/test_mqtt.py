"""The MQTT input topic through a real mosquitto: valid samples reach the source, hostile ones are
dropped and counted by reason, and a phone's samples drive an app (in simulated time that waits for
them: no sample is late or missed on a loaded machine)."""

from __future__ import annotations

import json
import math
import threading
import time

import pytest

from hebictl.hardware import SimClock
from hebictl.inputs.mqtt import input_topic, parse_url
from tests._support.extras import extra_missing
from tests._support.teleop import HANG_S

pytest.importorskip("paho", reason=extra_missing("aiomqtt"))  # paho-mqtt comes with aiomqtt


def _wait(predicate, timeout=HANG_S, period=0.01):
    end = time.monotonic() + timeout  # hang guard only
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return False


class GatedClock(SimClock):
    """Simulated time that waits at a gate: ``sleep_until(t)`` blocks (really) until the test has
    opened the gate to ``t`` (:meth:`open_until`), then jumps there. The phone below opens one
    sample period at a time once its sample is in the source, so the arm's loop meets every sample
    in the period it belongs to, however late the broker delivers it; the wall clock only guards
    against a hang."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.gate = 0.0
        self.cond = threading.Condition()

    def open_until(self, t: float) -> None:
        with self.cond:
            self.gate = max(self.gate, t)
            self.cond.notify_all()

    def sleep_until(self, t: float) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: t <= self.gate, timeout=HANG_S):
                raise TimeoutError(f"simulated time {t} s was never let through (gate at {self.gate} s)")
        super().sleep_until(t)


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
    """The MQTT topic drives the teach app on the mock through the same guard as every source: stop
    and flow waypoints, playback, quit. The phone's 60 Hz samples go through mosquitto in lockstep with
    the arm's simulated time (:class:`GatedClock`): sample k is in the source before time passes
    k/60 s, and the next goes out once the app has read it, so the outcome is exact: every sample read
    once, none stale, the presses in order."""
    import paho.mqtt.client as mqtt

    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.inputs.mqtt import MqttInputSource
    from hebictl.inputs.runner import make_app, run_app
    from tests._support.paths import REPO_ROOT

    cfg = load_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")
    clock = GatedClock()
    arm = Arm.from_config(cfg, backend="mock", clock=clock, initial_position=cfg.user_data["home_position"])
    arm.user_data.update(base_travel_time=1.0, min_travel_time=0.5)
    app = make_app("teach", arm)
    source = MqttInputSource(broker.url + "/armB", arm.clock)
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
    pub.connect("127.0.0.1", broker.port)
    pub.loop_start()
    stop = threading.Event()
    presses = [(0.5, 1), (1.0, 2), (1.5, 1), (2.0, 3), (4.5, 8)]
    read: list[int] = []   # the seq of every fresh sample the app's loop read, in order
    failure: list[BaseException] = []

    def until(predicate) -> None:
        if not _wait(lambda: predicate() or stop.is_set(), period=0.0005):
            raise TimeoutError("the phone's sample was never delivered or read")

    def phone() -> None:  # 60 Hz of simulated time, each button held 0.1 s
        try:
            for k in range(6 * 60):
                if stop.is_set():
                    break
                t = k / 60
                b = [1 if any(button == i + 1 and p <= t < p + 0.1 for p, button in presses) else 0 for i in range(8)]
                pub.publish(input_topic("armB"), json.dumps({"seq": k + 1, "ts": time.time(), "client": "phone",
                                                             "buttons": b, "axes": [0.0] * 8}), qos=1)
                until(lambda n=k + 1: source.accepted >= n)           # in the source ...
                clock.open_until((k + 1) / 60)
                until(lambda n=k + 1: bool(read) and read[-1] >= n)   # ... and read by the app's loop
        except BaseException as exc:  # surfaced by the test
            failure.append(exc)
        finally:
            clock.open_until(math.inf)

    thread = threading.Thread(target=phone, daemon=True)
    thread.start()
    try:
        result = run_app(arm, app, source, duration=15.0,  # simulated s: the app quits at 4.5 s
                         on_cycle=lambda _arm, frame: read.append(frame.state.seq) if frame.fresh else None)
    finally:
        stop.set()
        clock.open_until(math.inf)
        thread.join(HANG_S)
        pub.loop_stop()
        source.close()
        arm.close()
    print(f"over MQTT: {[h[1] for h in app.history]}, waypoints {[w.kind for w in app.waypoints]}, "
          f"accepted {source.accepted}, dropped {dict(source.rejected)}, stale {result.stale}, "
          f"read {len(read)} samples in {result.cycles} cycles")
    assert not failure, failure
    assert [w.kind for w in app.waypoints] == ["stop", "flow", "stop"]
    assert [h[1] for h in app.history][-2:] == ["toggle", "quit"] and app.done
    assert sum(source.rejected.values()) == 0 and result.stale == 0
    assert read == list(range(1, len(read) + 1)) and read[-1] >= 4.5 * 60   # each sample once, in order, to the quit
