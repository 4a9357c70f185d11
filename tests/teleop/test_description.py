"""``state/description``: retained on connect, and enough to draw and command the arm remotely.

The URDF it carries is read back by pinocchio (an independent URDF reader) and must place every
link where the JSON tree does; tests/panel/test_kinematics.py ties the JSON tree to hebi-py's own
kinematics of the kit, so the description is checked against both references.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hebictl.panel.kinematics import DescribedArm
from hebictl.teleop.state_schema import validate
from hebictl.teleop.topics import Topics
from tests._support.paths import KIT6_CONFIG
from tests._support.teleop import ARM_ID, HANG_S, HOME, paced_servers, run


@pytest.fixture
def paced_server():
    """Teleop servers on paced-clock mock arms (tests/_support/teleop.py), stopped at the end."""
    with paced_servers() as make:
        yield make


async def _retained_description(url: str) -> dict[str, Any]:
    import aiomqtt

    async with aiomqtt.Client(hostname="127.0.0.1", port=int(url.rsplit(":", 1)[1]), identifier="desc-reader") as c:
        await c.subscribe(Topics(ARM_ID).state("description"), qos=1)
        async for msg in c.messages:
            assert msg.retain, "the description must be retained (a viewer that connects later needs it)"
            return json.loads(msg.payload)
    raise AssertionError("no description")


def test_description_is_retained_and_complete(broker: Any, paced_server: Any) -> None:
    server = paced_server(broker.url)
    d = run(_retained_description(broker.url), timeout=HANG_S)  # connects after the arm: only a retained one comes
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


def test_urdf_places_every_link_where_the_tree_does(broker: Any, paced_server: Any) -> None:
    pin = pytest.importorskip("pinocchio")
    paced_server(broker.url)
    d = run(_retained_description(broker.url), timeout=HANG_S)
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


def test_offline_arms_keep_their_description(broker: Any, paced_server: Any) -> None:
    """Stopping the arm leaves the description retained: a panel still knows what it was."""
    server = paced_server(broker.url)
    server.stop_background()
    d = run(_retained_description(broker.url), timeout=HANG_S)
    assert d["arm_id"] == ARM_ID


def test_description_is_republished_and_every_status_names_its_hash_and_session(broker: Any,
                                                                                paced_server: Any) -> None:
    """Issue 20 item 4: the description comes again every period (a spoofed retained copy is
    overwritten), every status carries the SHA-256 of the exact description bytes (hashed here
    with hashlib, not by the bridge's code) and a per-process session id; the offline status
    says ``state: offline`` and nothing that looks live. By order of messages: the viewer sees the
    spoof and then the genuine description twice more (republished byte for byte); how long after
    the spoof the first genuine copy came is printed, not bounded (the bridge sleeps its period on
    the event loop's clock, so a loaded machine stretches it)."""
    import hashlib

    import aiomqtt

    period = 0.2
    server = paced_server(broker.url, bridge_options={"backoff_initial": 0.05, "backoff_max": 0.5,
                                                      "description_period": period})
    topics = Topics(ARM_ID)
    port = int(broker.url.rsplit(":", 1)[1])
    spoof = b'{"arm_id": "t1", "home": [9, 9, 9, 9, 9, 9]}'

    async def watch() -> tuple[list[bytes], list[dict[str, Any]], float]:
        descriptions: list[bytes] = []
        statuses: list[dict[str, Any]] = []
        async with aiomqtt.Client("127.0.0.1", port, identifier="desc-watch", timeout=HANG_S) as c:
            await c.subscribe(topics.state("description"), qos=1)
            await c.subscribe(topics.state("status"), qos=1)
            async with aiomqtt.Client("127.0.0.1", port, identifier="spoofer", timeout=HANG_S) as bad:  # no accounts
                await bad.publish(topics.state("description"), spoof, qos=1, retain=True)
            t0 = asyncio.get_running_loop().time()
            restored = None
            async for m in c.messages:
                if not m.topic.matches(topics.state("description")):
                    statuses.append(json.loads(m.payload))
                    continue
                descriptions.append(bytes(m.payload))
                after = descriptions[descriptions.index(spoof) + 1:] if spoof in descriptions else []
                if after and restored is None:
                    restored = asyncio.get_running_loop().time() - t0
                if len(after) >= 2 and statuses:
                    assert restored is not None
                    return descriptions, statuses, restored
        raise AssertionError("the subscription ended")

    descriptions, statuses, restored = run(watch(), timeout=HANG_S)
    genuine = [d for d in descriptions if d != spoof]
    assert len(genuine) >= 2 and len(set(genuine)) == 1  # republished byte for byte
    assert all(d == genuine[0] for d in descriptions[descriptions.index(spoof) + 1:])  # the spoof overwritten
    digest = hashlib.sha256(genuine[0]).hexdigest()
    assert hashlib.sha256(spoof).hexdigest() != digest
    assert statuses and all(s["description_sha256"] == digest for s in statuses)
    print(f"\nspoofed description replaced after {restored * 1000:.0f} ms (period {period * 1000:.0f} ms)")
    session = statuses[0]["session"]
    assert len(session) == 16 and int(session, 16) >= 0 and all(s["session"] == session for s in statuses)

    server.stop_background()

    async def offline() -> dict[str, Any]:
        async with aiomqtt.Client("127.0.0.1", port, identifier="status-reader", timeout=HANG_S) as c:
            await c.subscribe(topics.state("status"), qos=1)
            async for m in c.messages:
                return json.loads(m.payload)
        raise AssertionError("no status")

    last = run(offline(), timeout=HANG_S)
    assert last["status"] == "offline" and last["state"] == "offline"
    assert "mode" not in last and "at_goal" not in last and last["session"] == session
    second = paced_server(broker.url)
    assert second.bridge.session != session  # a restarted process gets a new session


def _workspace_config(tmp: Path) -> Path:
    """The 6-DoF kit with a workspace of every object type (issue 19 item 7: the panel draws them)."""
    import yaml

    doc = yaml.safe_load(KIT6_CONFIG.read_text())
    doc["hrdf"] = str((KIT6_CONFIG.parent / doc["hrdf"]).resolve())
    doc["gains"] = {k: str((KIT6_CONFIG.parent / v).resolve()) for k, v in doc["gains"].items()}
    doc["user_data"]["workspace"] = WORKSPACE
    out = tmp / "kit6-workspace.cfg.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


WORKSPACE = {"table": {"height": -0.01, "clearance": 0.005, "physical": False},
             "objects": [{"type": "box", "name": "crate", "center": [-0.5, 0.3, 0.1], "size": [0.2, 0.3, 0.2]},
                         {"type": "cylinder", "name": "post", "center": [-0.5, -0.4, 0.3], "radius": 0.05,
                          "height": 0.6, "clearance": 0.02},
                         {"type": "wall", "name": "fence", "point": [-0.8, 0.0, 0.0], "normal": [2.0, 0.0, 0.0]},
                         {"type": "keep_out", "name": "camera", "center": [-0.4, 0.0, 0.8], "size": [0.1, 0.1, 0.1]}]}


def test_description_carries_the_checked_workspace_and_the_arms_collision_shapes(
        broker: Any, paced_server: Any, tmp_path: Path) -> None:
    """Issue 19 item 7: what a viewer needs to draw the workspace (and the arm's shapes), checked
    against the config's own numbers, and valid under the state schema the panel applies."""
    paced_server(broker.url, config=_workspace_config(tmp_path))
    d = run(_retained_description(broker.url), timeout=HANG_S)
    validate("description", json.dumps(d).encode())
    objects = {o["name"]: o for o in d["workspace"]["objects"]}
    assert set(objects) == {"table", "crate", "post", "fence", "camera"}
    assert d["workspace"]["table_height"] == pytest.approx(-0.01)
    table = objects["table"]
    assert (table["type"], table["kind"], table["size"], table["virtual"]) == ("table", "plane", [], True)
    assert table["clearance"] == pytest.approx(0.005)
    np.testing.assert_allclose(np.asarray(table["pose"])[:3, 3], [0.0, 0.0, -0.01], atol=1e-12)
    np.testing.assert_allclose(np.asarray(table["pose"])[:3, 2], [0.0, 0.0, 1.0], atol=1e-12)
    crate, post, fence, camera = (objects[n] for n in ("crate", "post", "fence", "camera"))
    assert (crate["kind"], crate["virtual"]) == ("box", False)
    np.testing.assert_allclose(crate["size"], [0.1, 0.15, 0.1])          # half extents of the config's size
    np.testing.assert_allclose(np.asarray(crate["pose"])[:3, 3], [-0.5, 0.3, 0.1])
    assert (post["kind"], post["virtual"]) == ("cylinder", False) and post["clearance"] == pytest.approx(0.02)
    np.testing.assert_allclose(post["size"], [0.05, 0.3])                # radius, half height
    assert (fence["kind"], fence["type"], fence["virtual"]) == ("plane", "wall", True)
    np.testing.assert_allclose(np.asarray(fence["pose"])[:3, 2], [1.0, 0.0, 0.0], atol=1e-12)  # the unit normal
    np.testing.assert_allclose(np.asarray(fence["pose"])[:3, 3], [-0.8, 0.0, 0.0])
    assert (camera["kind"], camera["type"], camera["virtual"]) == ("box", "keep_out", True)
    np.testing.assert_allclose(camera["size"], [0.05, 0.05, 0.05])
    # the arm's shapes hang on the tree's bodies: posed by the description's own kinematics at home,
    # every moving joint's origin lies inside (or within 2 cm of) one of them
    shapes = d["collision_shapes"]
    assert shapes and all(0 <= s["body"] < len(d["tree"]["bodies"]) for s in shapes)
    kin = DescribedArm(d["tree"])
    poses = kin.body_poses(HOME)
    centres = [(poses[s["body"]] @ np.asarray(s["pose"]))[:3, 3] for s in shapes]
    reach = [float(np.linalg.norm(s["size"])) for s in shapes]
    for p in kin.joint_points(poses):
        gap = min(float(np.linalg.norm(np.subtract(p, c))) - r for c, r in zip(centres, reach, strict=True))
        assert gap < 0.02, (p, gap)
