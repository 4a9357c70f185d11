"""What the arm publishes: acks and the ``state/*`` payloads, built from arm snapshots.

All payloads are JSON objects carrying ``ts`` (the arm's wall clock, s since epoch), passed in
by the caller (teleop's clock is injected: :mod:`hebictl.teleop.clock`). Numbers that are not
finite (a module without effort feedback, say) are sent as ``null``, because JSON has no NaN and
operators' parsers would choke on Python's ``NaN`` extension.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from hebictl.teleop.snapshot import ArmSnapshot


@dataclass(frozen=True)
class Ack:
    """Answer to one command: accepted, or rejected with a machine-readable ``reason``.

    ``seq``/``client`` are None when the payload was too broken to read them. Under a flood the
    bridge folds rejections of one client for one reason into one ack: ``coalesced`` is how many
    further rejections it stands for, ``last_seq`` the ``seq`` of the last of them."""

    seq: int | None
    client: str | None
    topic: str
    accepted: bool
    reason: str = ""
    detail: str = ""
    coalesced: int = 0
    last_seq: int | None = None

    def to_payload(self, ts: float) -> bytes:
        """JSON of the ack stamped with ``ts`` [s since epoch, the arm's wall clock]."""
        return dumps({**asdict(self), "ts": ts})

    @classmethod
    def from_payload(cls, payload: bytes) -> Ack:
        return cls.from_dict(json.loads(payload))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ack:
        coalesced = d.get("coalesced", 0)
        last_seq = d.get("last_seq")
        return cls(d.get("seq"), d.get("client"), str(d.get("topic", "")), bool(d.get("accepted")),
                   str(d.get("reason", "")), str(d.get("detail", "")),
                   coalesced if isinstance(coalesced, int) else 0, last_seq if isinstance(last_seq, int) else None)


def _plain(obj: Any) -> Any:
    """``obj`` with numpy scalars/arrays made plain Python and non-finite floats made None."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(body: dict[str, Any]) -> bytes:
    """Strict JSON (no NaN/Infinity literals) of a payload, whatever numeric types it holds: a
    payload builder must never be the reason the bridge stops publishing."""
    return json.dumps(_plain(body), allow_nan=False).encode()


def finite_list(values: NDArray[np.float64]) -> list[float | None]:
    """``values`` as a JSON-safe list (non-finite entries become None)."""
    return [float(x) if math.isfinite(x) else None for x in values.tolist()]


def joints_payload(snap: ArmSnapshot, names: tuple[str, ...]) -> bytes:
    return dumps({"ts": snap.wall_time, "names": list(names), "position": finite_list(snap.position),
                  "velocity": finite_list(snap.velocity), "effort": finite_list(snap.effort)})


def ee_pose_payload(snap: ArmSnapshot, pose: NDArray[np.float64]) -> bytes:
    """``position`` [m, world] and ``orientation`` (quaternion w x y z, world) of the end effector."""
    if np.all(np.isfinite(pose)):
        quat = Rotation.from_matrix(pose[:3, :3]).as_quat(scalar_first=True)
        body: dict[str, list[float | None] | None] = {"position": finite_list(pose[:3, 3]),
                                                      "orientation": finite_list(quat)}
    else:
        body = {"position": None, "orientation": None}
    return dumps({"ts": snap.wall_time, **body})


def status_payload(snap: ArmSnapshot | None, arm_id: str, *, online: bool, ts: float,
                   bridge: dict[str, Any] | None = None, session: str | None = None,
                   description_sha256: str | None = None, fleet: dict[str, Any] | None = None) -> bytes:
    """The retained ``state/status`` stamped ``ts`` [s since epoch]: ``status`` online/offline,
    arm state, mode, e-stop, M-stop, stop behaviour, goal progress, loop statistics, last error,
    gripper and bridge counters; ``session`` (random per teleop process: a viewer clears what it
    showed of an earlier process when it changes) and ``description_sha256`` (hex SHA-256 of the
    exact ``state/description`` bytes published, so a viewer can refuse a spoofed description);
    ``fleet``: the fleet lease's state (:meth:`hebictl.teleop.lease.LeaseGate.status`), online only.

    Offline (the last will, a clean shutdown) says ``state: "offline"`` and carries nothing that
    would make a dead arm look live (no mode, no motion fields): only the last event and error."""
    body: dict[str, Any] = {"ts": ts, "arm_id": arm_id, "status": "online" if online else "offline"}
    if session is not None:
        body["session"] = session
    if description_sha256 is not None:
        body["description_sha256"] = description_sha256
    if not online:
        body["state"] = "offline"
        if snap is not None:
            body.update({"last_error": None if snap.last_error is None else asdict(snap.last_error),
                         "last_event": _event(snap), "cycles": snap.cycle})
    elif snap is not None:
        body.update({
            "state": snap.state, "mode": snap.mode, "estop": snap.estop, "m_stopped": snap.m_stopped,
            "arm_mode": snap.arm_mode, "stop_behaviour": snap.stop_behaviour, "jogging": snap.jogging,
            "braking": snap.braking, "goal_progress": snap.goal_progress, "at_goal": snap.at_goal,
            "goal_status": snap.goal_status, "commands_delivered": snap.commands_delivered,
            "payload": None if snap.payload_mass_kg is None else {"mass_kg": snap.payload_mass_kg,
                                                                "extra_mass_kg": snap.payload_extra_kg},
            "loop": None if snap.loop is None else {k: (v if math.isfinite(v) else None)
                                                     for k, v in snap.loop.as_dict().items()},
            "realtime": None if snap.realtime is None else snap.realtime.as_status(),
            "last_error": None if snap.last_error is None else asdict(snap.last_error),
            "last_event": _event(snap),
            "gripper": None if snap.gripper is None else asdict(snap.gripper),
            "cycles": snap.cycle,
        })
        if snap.app is not None:
            body["app"] = snap.app
        if fleet is not None:
            body["fleet"] = fleet
        if snap.group is not None:
            body["group"] = snap.group
    if bridge is not None:
        body["bridge"] = bridge
    return dumps(body)


def _event(snap: ArmSnapshot) -> dict[str, Any] | None:
    ev = snap.last_event
    return None if ev is None else {"kind": ev.kind, "state": ev.state.value, "detail": ev.detail}
