"""The live view: Foxglove's WebSocket protocol on loopback, spoken by a plain websockets client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import time

import pytest

from tests._support.extras import extra_missing

pytest.importorskip("foxglove_schemas_protobuf", reason=extra_missing("foxglove_schemas_protobuf"))  # hebictl.recording

from hebictl.control.arm import Arm
from hebictl.errors import ConfigError
from hebictl.hardware.clock import SimClock
from hebictl.recording import schemas
from hebictl.recording.live import LiveView, check_host
from hebictl.recording.writer import McapRecorder

pytest.importorskip("foxglove")
websockets = pytest.importorskip("websockets")

CONFIG = "configs/x-series-6dof.cfg.yaml"


def test_non_loopback_needs_allow_remote():
    with pytest.raises(ConfigError, match="no login"):
        check_host("0.0.0.0", allow_remote=False)
    check_host("0.0.0.0", allow_remote=True)
    check_host("::1", allow_remote=False)
    with pytest.raises(ConfigError, match="not an IP address"):
        check_host("example.org", allow_remote=False)


async def _watch(url: str, recorder: McapRecorder, arm: Arm,
                 timeout: float = 20.0) -> tuple[set[str], list[tuple[int, bytes]], int]:
    """(advertised topics, the first 5 /joint_states frames as (log time [ns], payload), samples taken).

    The server takes a subscription on its own thread and drops what was logged before it had; no
    fixed sleep says when that is, so the arm keeps cycling (5 samples at a time, 20 at least) until
    frames come."""
    # close_timeout: while the recorder runs, the foxglove SDK server did not answer this client's closing
    # handshake within websockets' default 10 s (measured: every run of this test took 10 s longer)
    async with websockets.connect(url, subprotocols=["foxglove.sdk.v1"], close_timeout=0.5) as ws:
        advertised: dict[str, int] = {}
        while schemas.JOINT_STATES.name not in advertised:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if msg.get("op") == "advertise":
                advertised.update({c["topic"]: c["id"] for c in msg["channels"]})
        await ws.send(json.dumps({"op": "subscribe",
                                  "subscriptions": [{"id": 7, "channelId": advertised[schemas.JOINT_STATES.name]}]}))
        got: list[tuple[int, bytes]] = []
        sampled = 0
        deadline = time.monotonic() + timeout
        while len(got) < 5 or sampled < 20:
            assert time.monotonic() < deadline, f"{len(got)} frames within {timeout} s, {sampled} samples taken"
            for _ in range(5):
                arm.update()
                arm.send()
                recorder.sample()
                sampled += 1
                arm.clock.sleep_until(arm.clock.now() + 0.01)
            with contextlib.suppress(TimeoutError):  # none yet: cycle on (recv may be cancelled safely)
                while len(got) < 5 and time.monotonic() < deadline:
                    frame = await asyncio.wait_for(ws.recv(), 0.1)
                    if isinstance(frame, bytes) and frame[0] == 1:
                        sub, t_ns = struct.unpack_from("<IQ", frame, 1)
                        assert sub == 7
                        got.append((t_ns, frame[13:]))
        print(f"{len(got)} frames after {sampled} samples, {time.monotonic() - deadline + timeout:.3f} s")
        return set(advertised), got, sampled


def test_live_view_serves_joint_states_on_loopback():
    from foxglove_schemas_protobuf.JointStates_pb2 import JointStates

    arm = Arm.from_config(CONFIG, backend="mock", clock=SimClock())
    live = LiveView(schemas.TOPICS, port=0)
    assert live.url.startswith("ws://127.0.0.1:")
    recorder = McapRecorder(None, arm, teleop=True, live=live, flush_interval=0.05)
    try:
        topics, got, sampled = asyncio.run(_watch(live.url, recorder, arm))
    finally:
        summary = recorder.close()
        arm.close()
    assert topics == {t.name for t in schemas.TOPICS}
    assert summary.files == () and summary.cycles == summary.written == sampled and summary.dropped == 0
    msg = JointStates.FromString(got[0][1])
    assert [j.name for j in msg.joints] == list(arm.model.joint_names)
    assert [t for t, _ in got] == sorted(t for t, _ in got)
