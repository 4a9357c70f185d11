"""Validation of teleop command payloads: one validator per command topic.

Nothing an operator sends reaches the arm without passing through here. A payload is a UTF-8
JSON object; anything else, a missing or unknown field, a wrong type or length, a NaN/inf (JSON
``NaN``/``Infinity`` literals and overflowing numbers like ``1e999`` alike) or a target outside
the arm's limits raises :class:`~hebictl.errors.CommandRejected` with a machine-readable
``reason`` that the bridge returns in the ack. Validators return frozen command values with
numpy arrays, so the arm thread does no parsing.

Every command carries an envelope: ``seq`` (integer, increasing per client), ``ts`` (sender's
wall time, s since the Unix epoch) and ``client`` (the sender's name). Freshness and ordering of
the envelope are checked by :mod:`hebictl.teleop.admission`, not here.

Unknown fields are rejected rather than ignored: a typo such as ``position`` for ``positions``
must not turn into "no target given, use a default"; a field given twice is rejected too.

Hostile numbers never get through as numbers: JSON ``NaN``/``Infinity`` literals are refused by the
decoder, integers too long to convert (more than Python's 4300 digits) and nesting deeper than the
recursion limit are ``malformed_json``, integers and floats that overflow a float are
``not_finite``, and every number is range-checked by its validator. Each of these is one
rejection (an ack and a counter in ``state/status``): nothing is closed or restarted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from hebictl._typing import FloatArray
from hebictl.control.safety import Limits
from hebictl.errors import CommandRejected

MAX_PAYLOAD_BYTES = 65536
MODES = ("idle", "gravcomp", "position", "jog", "app")
GRIPPER_ACTIONS = {"open": 1.0, "close": 0.0}
ENVELOPE_FIELDS = ("seq", "ts", "client")


# ---------------------------------------------------------------------- command values
@dataclass(frozen=True)
class Envelope:
    """Who sent a command, when (sender's wall clock [s since epoch]) and in which order."""

    seq: int
    ts: float
    client: str


@dataclass(frozen=True)
class JointGoalCommand:
    """Waypoints in joint space. ``times`` [s after the goal starts] are all None (the arm picks
    segment times from its limits) or all given; ``velocities`` [rad/s] None means zero at the
    waypoint."""

    envelope: Envelope
    times: tuple[float | None, ...]
    positions: tuple[FloatArray, ...]
    velocities: tuple[FloatArray | None, ...]


@dataclass(frozen=True)
class CartesianGoalCommand:
    """End-effector target: ``position`` [m, world], optional ``orientation`` (unit quaternion
    w x y z, world), ``duration`` [s] (None: estimated)."""

    envelope: Envelope
    position: FloatArray
    orientation: FloatArray | None
    duration: float | None


@dataclass(frozen=True)
class JogCommand:
    """Streamed velocity: joint space [rad/s per joint] or Cartesian [vx vy vz m/s, wx wy wz
    rad/s, world frame]. Valid for ``ttl`` [s] after receipt, and only while ``deadman``."""

    envelope: Envelope
    space: str
    velocity: FloatArray
    deadman: bool
    ttl: float


@dataclass(frozen=True)
class GripperCommand:
    """Gripper opening 0 (closed) .. 1 (open); ``action`` is the verb it came from, if any."""

    envelope: Envelope
    position: float
    action: str | None


@dataclass(frozen=True)
class StopCommand:
    """Decelerate and hold."""

    envelope: Envelope


@dataclass(frozen=True)
class EstopCommand:
    """Engage (latched) or release the emergency stop."""

    envelope: Envelope
    engaged: bool


@dataclass(frozen=True)
class EstopOverride(EstopCommand):
    """A release with ``"override": true``: a supervisor account releasing an e-stop another
    account engaged (the bridge allows it only for its supervisor accounts, and logs it)."""

    override: bool = True


@dataclass(frozen=True)
class ModeCommand:
    """Switch mode: idle, gravcomp (hand-guiding), position (goals), jog or app (``--app``'s Mobile IO app)."""

    envelope: Envelope
    mode: str


@dataclass(frozen=True)
class BaseVelocityCommand:
    """A mobile base's streamed wheel velocity [rad/s per wheel]: valid for ``ttl`` [s] after
    receipt and only while ``deadman`` (a release, ``deadman`` false, stops the base at once)."""

    envelope: Envelope
    velocity: FloatArray
    deadman: bool
    ttl: float


TeleopCommand = (JointGoalCommand | CartesianGoalCommand | JogCommand | GripperCommand | StopCommand
                 | EstopCommand | ModeCommand)
#: what a mobile base takes (:class:`BaseSchema`)
BaseCommand = BaseVelocityCommand | StopCommand | EstopCommand | ModeCommand


# ---------------------------------------------------------------------- primitive checks
def _reject_constant(name: str) -> float:
    raise CommandRejected("not_finite", f"JSON {name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object without repeated keys: ``{"mode": "idle", "mode": "jog"}`` means one thing to
    a parser that keeps the first and another to one that keeps the last (the panel's page and
    this bridge must never read one message two ways)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise CommandRejected("duplicate_field", f"field {key[:40]!r} appears more than once")
            seen.add(key)
    return obj


def decode(payload: bytes | bytearray | str) -> dict[str, Any]:
    """The JSON object in ``payload``; rejects oversize, non-UTF-8, non-JSON and non-objects."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise CommandRejected("too_large", f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except CommandRejected:
        raise
    except UnicodeDecodeError as exc:
        raise CommandRejected("malformed_json", f"payload is not UTF-8: {exc.reason}") from None
    except (ValueError, RecursionError) as exc:
        raise CommandRejected("malformed_json", f"payload is not JSON: {exc}"[:200]) from None
    if not isinstance(obj, dict):
        raise CommandRejected("not_an_object", f"payload must be a JSON object, got {type(obj).__name__}")
    return obj


# The overloads tell the checker what the code does: a required number, or one with a default, is a float.
@overload
def _number(obj: Mapping[str, Any], key: str, *, required: Literal[True] = True, default: None = None,
            low: float = -math.inf, high: float = math.inf, low_open: bool = False) -> float: ...


@overload
def _number(obj: Mapping[str, Any], key: str, *, required: bool = True, default: float,
            low: float = -math.inf, high: float = math.inf, low_open: bool = False) -> float: ...


@overload
def _number(obj: Mapping[str, Any], key: str, *, required: bool = True, default: float | None = None,
            low: float = -math.inf, high: float = math.inf, low_open: bool = False) -> float | None: ...


def _number(obj: Mapping[str, Any], key: str, *, required: bool = True, default: float | None = None,
            low: float = -math.inf, high: float = math.inf, low_open: bool = False) -> float | None:
    if key not in obj or obj[key] is None:
        if required:
            raise CommandRejected("missing_field", f"'{key}' is required")
        return default
    return as_number(obj[key], key, low, high, low_open)


def as_number(value: Any, what: str, low: float = -math.inf, high: float = math.inf,
              low_open: bool = False) -> float:
    """``value`` as a finite float in [low, high] (``low_open``: (low, high]), else CommandRejected
    (wrong_type, not_finite, out_of_range) naming ``what``: the one number check of every command
    schema (teleop's and the Mobile IO input's)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CommandRejected("wrong_type", f"'{what}' must be a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise CommandRejected("not_finite", f"'{what}' overflows a float") from None
    if not math.isfinite(x):
        raise CommandRejected("not_finite", f"'{what}' must be finite")
    if x < low or x > high or (low_open and x == low):
        lo = f"({low}" if low_open else f"[{low}"
        raise CommandRejected("out_of_range", f"'{what}' = {x} outside {lo}, {high}]")
    return x


def _vector(obj: Mapping[str, Any], key: str, n: int, *, required: bool = True) -> FloatArray | None:
    if key not in obj or obj[key] is None:
        if required:
            raise CommandRejected("missing_field", f"'{key}' is required")
        return None
    value = obj[key]
    if not isinstance(value, list):
        raise CommandRejected("wrong_type", f"'{key}' must be a list of {n} numbers, got {type(value).__name__}")
    if len(value) != n:
        raise CommandRejected("wrong_length", f"'{key}' needs {n} values, got {len(value)}")
    return np.array([as_number(v, f"{key}[{i}]") for i, v in enumerate(value)], dtype=np.float64)


def _bool(obj: Mapping[str, Any], key: str, *, required: bool = True, default: bool = False) -> bool:
    if key not in obj:
        if required:
            raise CommandRejected("missing_field", f"'{key}' is required")
        return default
    value = obj[key]
    if not isinstance(value, bool):
        raise CommandRejected("wrong_type", f"'{key}' must be true or false, got {type(value).__name__}")
    return value


def _choice(obj: Mapping[str, Any], key: str, choices: tuple[str, ...] | Mapping[str, Any]) -> str:
    if key not in obj:
        raise CommandRejected("missing_field", f"'{key}' is required")
    value = obj[key]
    if not isinstance(value, str):
        raise CommandRejected("wrong_type", f"'{key}' must be a string, got {type(value).__name__}")
    if value not in choices:
        raise CommandRejected("out_of_range", f"'{key}' must be one of {', '.join(choices)}, got {value[:40]!r}")
    return value


def _only(obj: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = [k for k in obj if k not in allowed and k not in ENVELOPE_FIELDS]
    if unknown:
        raise CommandRejected("unknown_field", f"unknown field(s): {', '.join(repr(k[:40]) for k in unknown[:5])}")


def envelope(obj: Mapping[str, Any]) -> Envelope:
    """The ``seq``/``ts``/``client`` envelope of a decoded command."""
    seq = obj.get("seq")
    if "seq" not in obj:
        raise CommandRejected("missing_field", "'seq' is required")
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise CommandRejected("wrong_type", f"'seq' must be an integer, got {type(seq).__name__}")
    if not 0 <= seq < 2**63:
        raise CommandRejected("out_of_range", "'seq' must be in [0, 2^63)")
    ts = _number(obj, "ts", low=0.0)
    client = obj.get("client")
    if "client" not in obj:
        raise CommandRejected("missing_field", "'client' is required")
    if not isinstance(client, str) or not 1 <= len(client) <= 128:
        raise CommandRejected("wrong_type", "'client' must be a string of 1-128 characters")
    return Envelope(seq=seq, ts=float(ts), client=client)


def salvage_ids(payload: bytes | bytearray | str) -> tuple[int | None, str | None]:
    """``seq``/``client`` of a payload that :func:`decode` refused only for its NaN/Infinity
    literals, so that even that rejection reaches its sender; (None, None) otherwise."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        return None, None
    try:
        return loose_ids(json.loads(payload, parse_constant=lambda _: None))
    except (ValueError, TypeError, RecursionError):
        return None, None


def loose_ids(obj: object) -> tuple[int | None, str | None]:
    """``seq`` and ``client`` of a payload as far as they are usable, for addressing a rejection ack."""
    if not isinstance(obj, dict):
        return None, None
    seq, client = obj.get("seq"), obj.get("client")
    seq = seq if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**63 else None
    client = client if isinstance(client, str) and len(client) <= 128 else None
    return seq, client


#: [s] the longest a jog sample may stay valid: a client that goes silent stops the arm within this
#: (plus one cycle). One bound for the schema and the arm's jog (:mod:`hebictl.teleop.jog`).
MAX_JOG_TTL = 0.5


# ---------------------------------------------------------------------- the validators
class CommandSchema:
    """Validators for one arm: ``dof`` joints within ``limits``.

    ``max_linear_speed`` [m/s] and ``max_angular_speed`` [rad/s] bound Cartesian jogs,
    ``max_ttl`` [s] a jog's validity (at most :data:`MAX_JOG_TTL`: a longer one is refused
    ``ttl_too_long``, not clipped, so the client learns to stream faster), ``max_duration`` [s] a
    goal's length, ``max_reach`` [m] the distance of a Cartesian target from the base (beyond it the
    target is out of limits without even trying IK).
    """

    def __init__(self, dof: int, limits: Limits, *, max_linear_speed: float = 0.5,
                 max_angular_speed: float = 2.0, default_ttl: float = 0.25, max_ttl: float = MAX_JOG_TTL,
                 max_duration: float = 600.0, max_waypoints: int = 100, max_reach: float = 10.0) -> None:
        self.dof = dof
        self.limits = limits
        self.max_linear_speed = max_linear_speed
        self.max_angular_speed = max_angular_speed
        self.default_ttl = default_ttl
        self.max_ttl = min(max_ttl, MAX_JOG_TTL)
        self.max_duration = max_duration
        self.max_waypoints = max_waypoints
        self.max_reach = max_reach
        self.validators: dict[str, Callable[[Mapping[str, Any], Envelope], TeleopCommand]] = {
            "joint_goal": self.joint_goal,
            "cartesian_goal": self.cartesian_goal,
            "jog": self.jog,
            "gripper": self.gripper,
            "stop": self.stop,
            "estop": self.estop,
            "mode": self.mode,
        }

    def parse(self, name: str, payload: bytes | bytearray | str) -> TeleopCommand:
        """Decode and validate a payload received on ``cmd/<name>``."""
        obj = decode(payload)
        return self.validate(name, obj, envelope(obj))

    def validate(self, name: str, obj: Mapping[str, Any], env: Envelope) -> TeleopCommand:
        """Validate the body of a decoded command whose envelope is ``env``."""
        validator = self.validators.get(name)
        if validator is None:
            raise CommandRejected("unknown_topic", f"no command 'cmd/{name[:60]}'")
        return validator(obj, env)

    # -- helpers with the arm's limits
    def _positions(self, obj: Mapping[str, Any], key: str) -> FloatArray:
        q = _vector(obj, key, self.dof)
        assert q is not None
        lo, hi = self.limits.position_min, self.limits.position_max
        bad = np.flatnonzero((q < lo) | (q > hi))
        if bad.size:
            i = int(bad[0])
            raise CommandRejected("out_of_limits", f"'{key}[{i}]' = {q[i]:.4f} outside [{lo[i]:.4f}, {hi[i]:.4f}]")
        return q

    def _velocities(self, obj: Mapping[str, Any], key: str, *, required: bool = False) -> FloatArray | None:
        v = _vector(obj, key, self.dof, required=required)
        if v is None:
            return None
        vmax = self.limits.velocity_max
        bad = np.flatnonzero(np.abs(v) > vmax)
        if bad.size:
            i = int(bad[0])
            raise CommandRejected("out_of_limits", f"'{key}[{i}]' = {v[i]:.4f} exceeds ±{vmax[i]:.4f}")
        return v

    # -- one validator per topic
    def joint_goal(self, obj: Mapping[str, Any], env: Envelope) -> JointGoalCommand:
        _only(obj, ("positions", "velocities", "duration", "waypoints"))
        if ("waypoints" in obj) == ("positions" in obj):
            raise CommandRejected("missing_field" if "positions" not in obj else "conflicting_fields",
                                  "give either 'positions' (with optional 'velocities', 'duration') or 'waypoints'")
        if "positions" in obj:
            duration = _number(obj, "duration", required=False, low=0.0, high=self.max_duration, low_open=True)
            return JointGoalCommand(env, (duration,), (self._positions(obj, "positions"),),
                                    (self._velocities(obj, "velocities"),))
        if "duration" in obj or "velocities" in obj:
            raise CommandRejected("unknown_field", "with 'waypoints', times and velocities go inside each waypoint")
        wps = obj["waypoints"]
        if not isinstance(wps, list):
            raise CommandRejected("wrong_type", f"'waypoints' must be a list, got {type(wps).__name__}")
        if not 1 <= len(wps) <= self.max_waypoints:
            raise CommandRejected("wrong_length", f"'waypoints' needs 1..{self.max_waypoints} entries, got {len(wps)}")
        times: list[float] = []
        positions: list[FloatArray] = []
        velocities: list[FloatArray | None] = []
        for i, wp in enumerate(wps):
            if not isinstance(wp, dict):
                raise CommandRejected("wrong_type", f"waypoint {i} must be an object")
            unknown = [k for k in wp if k not in ("t", "positions", "velocities")]
            if unknown:
                raise CommandRejected("unknown_field",
                                      f"waypoint {i}: unknown field(s) {', '.join(map(repr, unknown[:5]))}")
            try:
                t = _number(wp, "t", low=0.0, high=self.max_duration, low_open=True)
                positions.append(self._positions(wp, "positions"))
                velocities.append(self._velocities(wp, "velocities"))
            except CommandRejected as exc:
                raise CommandRejected(exc.reason, f"waypoint {i}: {exc.detail}") from None
            if times and t <= times[-1]:
                raise CommandRejected("bad_time", f"waypoint {i}: t = {t} must be after {times[-1]}")
            times.append(t)
        return JointGoalCommand(env, tuple(times), tuple(positions), tuple(velocities))

    def cartesian_goal(self, obj: Mapping[str, Any], env: Envelope) -> CartesianGoalCommand:
        _only(obj, ("position", "orientation", "duration"))
        pos = _vector(obj, "position", 3)
        assert pos is not None
        if float(np.linalg.norm(pos)) > self.max_reach:
            raise CommandRejected("out_of_limits", f"'position' is {np.linalg.norm(pos):.3f} m from the base "
                                                   f"(> {self.max_reach} m)")
        quat = _vector(obj, "orientation", 4, required=False)
        if quat is not None:
            norm = float(np.linalg.norm(quat))
            if abs(norm - 1.0) > 1e-2:
                raise CommandRejected("out_of_range",
                                      f"'orientation' must be a unit quaternion w x y z (norm {norm:.4f})")
            quat = quat / norm
        duration = _number(obj, "duration", required=False, low=0.0, high=self.max_duration, low_open=True)
        return CartesianGoalCommand(env, pos, quat, duration)

    def jog(self, obj: Mapping[str, Any], env: Envelope) -> JogCommand:
        _only(obj, ("space", "velocity", "deadman", "ttl"))
        space = _choice(obj, "space", ("joint", "cartesian"))
        deadman = _bool(obj, "deadman")
        ttl = _number(obj, "ttl", required=False, default=self.default_ttl, low=0.0, low_open=True)
        if ttl > self.max_ttl:
            raise CommandRejected("ttl_too_long", f"a jog sample may be valid for at most {self.max_ttl:g} s, this one "
                                                  f"asks {ttl:g} s; stream samples more often")
        if space == "joint":
            vel = self._velocities(obj, "velocity", required=True)
        else:
            vel = _vector(obj, "velocity", 6)
            assert vel is not None
            lin, ang = float(np.linalg.norm(vel[:3])), float(np.linalg.norm(vel[3:]))
            if lin > self.max_linear_speed:
                raise CommandRejected("out_of_limits", f"linear speed {lin:.3f} m/s exceeds {self.max_linear_speed}")
            if ang > self.max_angular_speed:
                raise CommandRejected("out_of_limits",
                                      f"angular speed {ang:.3f} rad/s exceeds {self.max_angular_speed}")
        assert vel is not None and ttl is not None
        return JogCommand(env, space, vel, deadman, ttl)

    def gripper(self, obj: Mapping[str, Any], env: Envelope) -> GripperCommand:
        _only(obj, ("position", "action"))
        if ("position" in obj) == ("action" in obj):
            raise CommandRejected("missing_field" if "action" not in obj else "conflicting_fields",
                                  "give either 'position' (0..1) or 'action' (open/close)")
        if "action" in obj:
            action = _choice(obj, "action", GRIPPER_ACTIONS)
            return GripperCommand(env, GRIPPER_ACTIONS[action], action)
        pos = _number(obj, "position", low=0.0, high=1.0)
        return GripperCommand(env, float(pos), None)

    def stop(self, obj: Mapping[str, Any], env: Envelope) -> StopCommand:
        _only(obj, ())
        return StopCommand(env)

    def estop(self, obj: Mapping[str, Any], env: Envelope) -> EstopCommand:
        return estop_command(obj, env)

    def mode(self, obj: Mapping[str, Any], env: Envelope) -> ModeCommand:
        _only(obj, ("mode",))
        return ModeCommand(env, _choice(obj, "mode", MODES))


def estop_command(obj: Mapping[str, Any], env: Envelope) -> EstopCommand:
    """``cmd/estop``'s body, the same for an arm and a base: engage, release, or a supervisor's override."""
    _only(obj, ("engaged", "override"))
    engaged = _bool(obj, "engaged")
    if _bool(obj, "override", required=False):
        if engaged:
            raise CommandRejected("out_of_range", "'override' is for a release (engaged false)")
        return EstopOverride(env, engaged)
    return EstopCommand(env, engaged)


#: a mobile base's modes: ``idle`` (holding zero velocity, no velocity command taken) and ``velocity``
BASE_MODES = ("idle", "velocity")


class BaseSchema:
    """Validators for a mobile base (:mod:`hebictl.teleop.base`): ``cmd/velocity`` (one velocity per
    wheel within ``max_velocity`` [rad/s], a ``deadman`` and a ``ttl`` bounded as a jog's: at most
    :data:`MAX_JOG_TTL` and the base's ``command_ttl``, refused ``ttl_too_long`` beyond), ``cmd/stop``,
    ``cmd/estop`` (as an arm's) and ``cmd/mode`` (:data:`BASE_MODES`). The envelope and the number
    checks are the arm's: one schema for every command topic."""

    def __init__(self, max_velocity: Any, command_ttl: float, *, default_ttl: float = 0.2) -> None:
        self.max_velocity = np.asarray(max_velocity, dtype=np.float64)
        self.size = len(self.max_velocity)
        self.max_ttl = min(MAX_JOG_TTL, float(command_ttl))
        self.default_ttl = min(default_ttl, self.max_ttl)
        self.validators: dict[str, Callable[[Mapping[str, Any], Envelope], BaseCommand]] = {
            "velocity": self.velocity, "stop": self.stop, "estop": estop_command, "mode": self.mode}

    def parse(self, name: str, payload: bytes | bytearray | str) -> BaseCommand:
        obj = decode(payload)
        return self.validate(name, obj, envelope(obj))

    def validate(self, name: str, obj: Mapping[str, Any], env: Envelope) -> BaseCommand:
        validator = self.validators.get(name)
        if validator is None:
            raise CommandRejected("unknown_topic", f"no base command 'cmd/{name[:60]}'")
        return validator(obj, env)

    def velocity(self, obj: Mapping[str, Any], env: Envelope) -> BaseVelocityCommand:
        _only(obj, ("velocity", "deadman", "ttl"))
        deadman = _bool(obj, "deadman")
        ttl = _number(obj, "ttl", required=False, default=self.default_ttl, low=0.0, low_open=True)
        if ttl > self.max_ttl:
            raise CommandRejected("ttl_too_long", f"a base velocity may be valid for at most {self.max_ttl:g} s, "
                                                  f"this one asks {ttl:g} s; stream samples more often")
        vel = _vector(obj, "velocity", self.size)
        assert vel is not None
        over = np.abs(vel) > self.max_velocity
        if over.any():
            i = int(np.argmax(over))
            raise CommandRejected("out_of_limits", f"wheel {i} asks {vel[i]:+.3f} rad/s, max_velocity is "
                                                   f"{self.max_velocity[i]:.3f} rad/s")
        return BaseVelocityCommand(env, vel, deadman, ttl)

    def stop(self, obj: Mapping[str, Any], env: Envelope) -> StopCommand:
        _only(obj, ())
        return StopCommand(env)

    def mode(self, obj: Mapping[str, Any], env: Envelope) -> ModeCommand:
        _only(obj, ("mode",))
        return ModeCommand(env, _choice(obj, "mode", BASE_MODES))
