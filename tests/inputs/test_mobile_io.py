"""A real hebi-py ``MobileIO`` on hebi-py's imitation group (which echoes the ``io`` integers of the
commands sent to it) drives the same input layer: MobileIOSource -> InputGuard -> the teach app."""

from __future__ import annotations

import time

import pytest

from hebictl.errors import HardwareError, HebictlWarning
from hebictl.inputs.guard import InputGuard
from hebictl.inputs.mobile_io import lookup_group, parse_spec
from tests.inputs.rig import home_arm

hebi = pytest.importorskip("hebi")


def _press(group, buttons):
    cmd = hebi.GroupCommand(1)
    for i in range(8):
        cmd.io.b.set_int(i + 1, 1 if i + 1 in buttons else 0)
    group.send_command(cmd)


def _next_sample(source, now, guard_s=5.0):
    end = time.monotonic() + guard_s  # hang guard only: the imitation group answers within a period
    while time.monotonic() < end:
        s = source.poll(now)
        if s is not None:
            return s
        time.sleep(0.002)
    raise AssertionError("no feedback from the imitation group")


def test_imitation_mobile_io_drives_teach_and_repeat():
    from hebictl.inputs.mobile_io import MobileIOSource
    from hebictl.inputs.runner import lifetime_of, make_app

    group = hebi.util.create_imitation_group(1)
    with pytest.warns(HebictlWarning, match="did not acknowledge the layout"):
        source = MobileIOSource(group, layout=[{"id": "b1", "channels": ["b1"], "type": "button"}])
    arm = home_arm("x-series-6dof", backend="mock", base_travel_time=1.0, min_travel_time=0.5)
    app = make_app("teach", arm)
    guard = InputGuard(lifetime_of(arm), app.ENABLE, app.QUIT)
    arm.update()
    app.start()
    arm.send()
    # B1 stop, B2 flow, B1 stop, B3 playback, B8 quit: each press, then release
    plan = [{1}, set(), {2}, set(), {1}, set(), {3}, set(), {8}, set()]
    for buttons in plan:
        _press(group, buttons)
        for _ in range(2):  # a cycle per sample
            arm.update()
            sample = _next_sample(source, arm.clock.now())
            app.step(guard.step(arm.clock.now(), sample))
            arm.send()
            source.indicate(app.led, app.TEXT)
    kinds = [w.kind for w in app.waypoints]
    events = [h[1] for h in app.history]
    print(f"imitation Mobile IO: waypoints {kinds}, events {events}, last LED {app.led}")
    assert kinds == ["stop", "flow", "stop"]
    assert events == ["stop_waypoint", "flow_waypoint", "stop_waypoint", "toggle", "quit"] and app.done
    source.close()


def test_lookup_retries_then_fails_clearly():
    class NoDevice:
        calls = 0

        def get_group_from_names(self, families, names):
            NoDevice.calls += 1
            return None

    waits = []
    with pytest.raises(HardwareError, match="Mobile IO Arm/mobileIO not found after 3 tries"):
        lookup_group("Arm", "mobileIO", tries=3, wait=1.0, lookup=NoDevice(), sleep=waits.append)
    assert NoDevice.calls == 3 and waits == [1.0, 1.0]


def test_spec_and_config_names():
    assert parse_spec("mobileio") == ("HEBI", "mobileIO")
    assert parse_spec("mobileio", {"mobile_io_family": "Arm", "mobile_io_name": "m"}) == ("Arm", "m")
    assert parse_spec("mobileio:Fam/Dev", {"mobile_io_family": "Arm"}) == ("Fam", "Dev")
    with pytest.raises(HardwareError):
        parse_spec("mobileio:nofamily")


def test_feedback_of_the_imitation_group_converts_without_a_pose():
    """What a .hebilog replay and the live source share: one hebi-py feedback -> InputState (the
    imitation group echoes io integers; its axes and AR pose are NaN: no pose, NaN axes)."""
    import math

    from hebictl.inputs.sources import state_of_feedback

    group = hebi.util.create_imitation_group(1)
    _press(group, {2, 7})
    fbk = None
    end = time.monotonic() + 5.0  # hang guard only
    while fbk is None and time.monotonic() < end:
        fbk = group.get_next_feedback(timeout_ms=100)
    assert fbk is not None
    s = state_of_feedback(fbk[0], 1.5, seq=3)
    assert s.buttons == (0, 1, 0, 0, 0, 0, 1, 0) and s.t == 1.5 and s.seq == 3
    assert s.position is None and s.orientation is None and all(math.isnan(a) for a in s.axes)

