"""``state/description``: retained on connect, and enough to draw and command the arm remotely.

The URDF it carries is read back by pinocchio (an independent URDF reader) and must place every
link where the JSON tree does; tests/panel/test_kinematics.py ties the JSON tree to hebi-py's own
kinematics of the kit, so the description is checked against both references.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest

from hebictl.panel.kinematics import DescribedArm
from hebictl.teleop.topics import Topics
from tests._support.teleop import ARM_ID, HOME, run


async def _retained_description(url: str) -> dict[str, Any]:
    import aiomqtt

    async with aiomqtt.Client(hostname="127.0.0.1", port=int(url.rsplit(":", 1)[1]), identifier="desc-reader") as c:
        await c.subscribe(Topics(ARM_ID).state("description"), qos=1)
        async for msg in c.messages:
            assert msg.retain, "the description must be retained (a viewer that connects later needs it)"
            return json.loads(msg.payload)
    raise AssertionError("no description")


def test_description_is_retained_and_complete(broker: Any, make_server: Any) -> None:
    server = make_server(broker.url)
    d = run(_retained_description(broker.url))  # connects after the arm: only a retained message arrives
    arm = server.arm
    assert d["arm_id"] == ARM_ID and d["dof"] == arm.dof == 6
    assert d["joints"]["names"] == list(arm.model.joint_names)
    np.testing.assert_allclose(d["joints"]["position_min"], arm.limits.position_min)
    np.testing.assert_allclose(d["joints"]["position_max"], arm.limits.position_max)
    np.testing.assert_allclose(d["joints"]["velocity_max"], arm.limits.velocity_max)
    np.testing.assert_allclose(d["home"], HOME)
    assert d["backend"] == "mock"
    stops = d["stop_behaviours"]
    assert stops["estop"] == {"action": "stop", "behaviour": "hold", "latched": True, "event": "estop",
                              "resume": "release, then cmd/mode"}
    assert stops["jog_release"]["action"] == "hold" and stops["jog_release"]["latched"] is False
    assert stops["jog_release"]["default_ttl"] == pytest.approx(0.25)
    assert stops["arm_stop"] == stops["fault"]["behaviour"] == arm.default_stop_behaviour.value
    assert "decel" not in stops["stop"] and "max_time" not in stops["stop"]  # the old runner profile is gone
    # the Arm's braking deceleration at home, as the Arm computes it for a stop there: positive and
    # within the rated figure (on this kit at home every actuator can deliver the rated figure)
    brake = stops["braking_deceleration"]
    rated = np.asarray(stops["rated_deceleration"])
    np.testing.assert_allclose(rated, arm.limits.acceleration_max)
    assert brake["at"] == "home"
    a = np.asarray(brake["values"])
    assert np.all(a > 0) and np.all(a <= rated * (1 + 1e-12))
    np.testing.assert_allclose(a, arm.brake_planner.deceleration(np.asarray(HOME), arm.model.gravity), rtol=1e-9)
    assert len(d["tree"]["bodies"]) == len(arm.model.bodies) and d["tree"]["end_effector"]


def test_urdf_places_every_link_where_the_tree_does(broker: Any, make_server: Any) -> None:
    pin = pytest.importorskip("pinocchio")
    make_server(broker.url)
    d = run(_retained_description(broker.url))
    if d["urdf"] is None:
        pytest.fail("the description carries no URDF")
    model = pin.buildModelFromXML(d["urdf"])
    data = model.createData()
    tree = DescribedArm(d["tree"])
    names = d["joints"]["names"]
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, len(names))
        qp = pin.neutral(model)
        for jid in range(1, model.njoints):
            j = model.joints[jid]
            x = q[names.index(model.names[jid])]
            if j.nq == 2:  # continuous joint: (cos, sin)
                qp[j.idx_q:j.idx_q + 2] = (np.cos(x), np.sin(x))
            else:
                qp[j.idx_q] = x
        pin.framesForwardKinematics(model, data, qp)
        poses = tree.body_poses(q.tolist())
        checked = 0
        for i, b in enumerate(d["tree"]["bodies"]):
            if not model.existFrame(b["name"], pin.FrameType.BODY):
                continue
            T = data.oMf[model.getFrameId(b["name"], pin.FrameType.BODY)].homogeneous
            checked += 1
            np.testing.assert_allclose(T, poses[i], atol=1e-9, err_msg=b["name"])
        assert checked == len(d["tree"]["bodies"]), "every body is a URDF link"


def test_offline_arms_keep_their_description(broker: Any, make_server: Any) -> None:
    """Stopping the arm leaves the description retained: a panel still knows what it was."""
    server = make_server(broker.url)
    server.stop_background()
    d = asyncio.run(asyncio.wait_for(_retained_description(broker.url), 10))
    assert d["arm_id"] == ARM_ID


def test_description_is_republished_and_every_status_names_its_hash_and_session(broker: Any,
                                                                                make_server: Any) -> None:
    """Issue 20 item 4: the description comes again every period (a spoofed retained copy is
    overwritten), every status carries the SHA-256 of the exact description bytes (hashed here
    with hashlib, not by the bridge's code) and a per-process session id; the offline status
    says ``state: offline`` and nothing that looks live."""
    import hashlib

    import aiomqtt

    period = 0.4
    server = make_server(broker.url, bridge_options={"backoff_initial": 0.05, "backoff_max": 0.5,
                                                     "description_period": period})
    topics = Topics(ARM_ID)
    port = int(broker.url.rsplit(":", 1)[1])

    async def watch(seconds: float) -> tuple[list[bytes], list[dict[str, Any]], float | None]:
        descriptions: list[bytes] = []
        statuses: list[dict[str, Any]] = []
        restored = None
        async with aiomqtt.Client("127.0.0.1", port, identifier="desc-watch") as c:
            await c.subscribe(topics.state("description"), qos=1)
            await c.subscribe(topics.state("status"), qos=1)
            async with aiomqtt.Client("127.0.0.1", port, identifier="spoofer") as bad:  # no accounts here
                await bad.publish(topics.state("description"), b'{"arm_id": "t1", "home": [9, 9, 9, 9, 9, 9]}',
                                  qos=1, retain=True)
            t0 = asyncio.get_running_loop().time()
            try:
                async with asyncio.timeout(seconds):
                    async for m in c.messages:
                        if m.topic.matches(topics.state("description")):
                            descriptions.append(bytes(m.payload))
                            if b"[9, 9" not in bytes(m.payload) and restored is None and len(descriptions) > 1:
                                restored = asyncio.get_running_loop().time() - t0
                        else:
                            statuses.append(json.loads(m.payload))
            except TimeoutError:
                pass
        return descriptions, statuses, restored

    descriptions, statuses, restored = run(watch(3 * period + 0.3))
    genuine = [d for d in descriptions if b"[9, 9" not in d]
    assert len(genuine) >= 3, f"{len(genuine)} genuine descriptions in {3 * period + 0.3} s"
    assert len(set(genuine)) == 1  # republished byte for byte
    digest = hashlib.sha256(genuine[0]).hexdigest()
    assert statuses and all(s["description_sha256"] == digest for s in statuses)
    assert any(hashlib.sha256(d).hexdigest() != digest for d in descriptions), "the spoof reached the viewer"
    assert restored is not None and restored <= period + 0.2, restored
    print(f"\nspoofed description replaced after {restored * 1000:.0f} ms (period {period * 1000:.0f} ms)")
    session = statuses[0]["session"]
    assert len(session) == 16 and int(session, 16) >= 0 and all(s["session"] == session for s in statuses)

    server.stop_background()

    async def offline() -> dict[str, Any]:
        async with aiomqtt.Client("127.0.0.1", port, identifier="status-reader") as c:
            await c.subscribe(topics.state("status"), qos=1)
            async for m in c.messages:
                return json.loads(m.payload)
        raise AssertionError("no status")

    last = run(offline())
    assert last["status"] == "offline" and last["state"] == "offline"
    assert "mode" not in last and "at_goal" not in last and last["session"] == session
    second = make_server(broker.url)
    assert second.bridge.session != session  # a restarted process gets a new session
