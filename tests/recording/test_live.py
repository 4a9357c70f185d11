"""The live view: Foxglove's WebSocket protocol on loopback, spoken by a plain websockets client.

Issue 33: a launch token in the URL, an Origin check (scheme, host and port), a connection cap,
and readers that cannot make the recorder's writer wait."""

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
    assert live.url.startswith("ws://127.0.0.1:") and live.token not in live.url
    recorder = McapRecorder(None, arm, teleop=True, live=live, flush_interval=0.05)
    try:
        topics, got, sampled = asyncio.run(_watch(live.secret_url, recorder, arm))
    finally:
        summary = recorder.close()
        arm.close()
    assert topics == {t.name for t in schemas.TOPICS}
    assert summary.files == () and summary.cycles == summary.written == sampled and summary.dropped == 0
    msg = JointStates.FromString(got[0][1])
    assert [j.name for j in msg.joints] == list(arm.model.joint_names)
    assert [t for t, _ in got] == sorted(t for t, _ in got)


async def _handshake(url: str, **kw) -> int:
    """The HTTP status a WebSocket handshake gets: 101 when it is upgraded."""
    try:
        async with websockets.connect(url, subprotocols=["foxglove.websocket.v1"], open_timeout=10,
                                      close_timeout=0.5, **kw) as ws:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert msg["op"] == "serverInfo"
            return 101
    except websockets.exceptions.InvalidStatus as exc:
        return exc.response.status_code


def test_live_view_needs_the_token_and_an_allowed_origin():
    """No token, a wrong token, a page on another origin (also another port of the allowed host) are
    refused before the upgrade; the token with no Origin (desktop app, script), with Foxglove's web
    app origin or with an origin the operator allowed is served."""
    live = LiveView(schemas.TOPICS, port=0, origins=["http://127.0.0.1:8080"])
    try:
        async def go() -> dict[str, int]:
            return {
                "no token": await _handshake(live.url + "/"),
                "wrong token": await _handshake(live.url + "/?token=" + "x" * len(live.token)),
                "cross-site page": await _handshake(live.secret_url, origin="https://evil.example"),
                "another port": await _handshake(live.secret_url, origin="http://127.0.0.1:18091"),
                "token, no Origin": await _handshake(live.secret_url),
                "Foxglove app": await _handshake(live.secret_url, origin="https://app.foxglove.dev"),
                "allowed origin": await _handshake(live.secret_url, origin="http://127.0.0.1:8080"),
            }
        got = asyncio.run(go())
    finally:
        live.close()
    print(got, live.stats)
    assert got == {"no token": 401, "wrong token": 401, "cross-site page": 403, "another port": 403,
                   "token, no Origin": 101, "Foxglove app": 101, "allowed origin": 101}
    assert live.stats["refused_token"] == 2 and live.stats["refused_origin"] == 2


def test_live_view_caps_connections():
    """``max_clients`` viewers are served; one more is refused (503) while they stay; after one
    leaves, a newcomer is served again."""
    live = LiveView(schemas.TOPICS, port=0, max_clients=2)
    try:
        async def go() -> list[int]:
            kw = {"subprotocols": ["foxglove.sdk.v1"], "close_timeout": 0.5}
            async with websockets.connect(live.secret_url, **kw) as a, websockets.connect(live.secret_url, **kw):
                await a.recv()
                third = await _handshake(live.secret_url)
            await asyncio.sleep(0)
            for _ in range(100):  # the server notices the two closes on its own thread
                if not live.readers:
                    break
                await asyncio.sleep(0.05)
            return [third, await _handshake(live.secret_url)]
        got = asyncio.run(go())
    finally:
        live.close()
    assert got == [503, 101] and live.stats["refused_cap"] == 1


def test_a_stalled_viewer_loses_frames_and_never_holds_the_writer():
    """A viewer that subscribes and then never reads: the writer's ``emit`` goes on (it returns for
    every one of 20,000 frames of 10 kB, 200 MB, far more than socket buffers hold), the viewer's
    queue stays at its bound and the oldest frames are dropped, counted."""
    live = LiveView(schemas.TOPICS, port=0, backlog=64)
    payload = b"\0" * 10_000
    try:
        async def go() -> int:
            async with websockets.connect(live.secret_url, subprotocols=["foxglove.sdk.v1"], close_timeout=0.5,
                                          max_queue=1) as ws:
                advertised = {}
                while schemas.JOINT_STATES.name not in advertised:
                    msg = json.loads(await ws.recv())
                    if msg.get("op") == "advertise":
                        advertised = {c["topic"]: c["id"] for c in msg["channels"]}
                await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                    {"id": 3, "channelId": advertised[schemas.JOINT_STATES.name]}]}))
                for _ in range(100):
                    if live.readers and live.readers[0].subscriptions:
                        break
                    await asyncio.sleep(0.05)
                reader = live.readers[0]

                def write() -> int:
                    for i in range(20_000):
                        live.emit(schemas.JOINT_STATES.name, i, payload)
                    return len(reader.frames)
                return await asyncio.to_thread(write)  # this client reads nothing meanwhile
        waiting = asyncio.run(go())
    finally:
        live.close()
    print(f"after 20,000 frames to a stalled viewer: {waiting} waiting, {live.stats['frames_dropped']} dropped")
    assert waiting <= 64
    assert live.stats["frames_dropped"] > 10_000
