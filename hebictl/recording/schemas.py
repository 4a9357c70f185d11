"""The topics of a hebictl recording and the schema of each: one table, read by writer and reader.

Foxglove's own schemas (``foxglove.JointStates``, ``foxglove.FrameTransforms``, ``foxglove.Log``,
protobuf-encoded from the ``foxglove-schemas-protobuf`` package) are used wherever one fits, so
Foxglove's plot, 3D and log panels understand the data without a converter. What has no standard
schema (plugin efforts, loop timing, the supervisor's mode, teleop commands and acks) is JSON
with a JSON Schema, which Foxglove plots field by field as well.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from foxglove_schemas_protobuf.Log_pb2 import Log
from mcap.writer import Writer
from mcap_protobuf.schema import build_file_descriptor_set

#: MCAP profile: none of the ROS ones (the messages are protobuf and JSON)
PROFILE = ""

_NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}


@dataclass(frozen=True)
class Topic:
    """One channel: its topic, the schema name, encoding and (JSON) schema, and why it is there."""

    name: str
    schema: str
    encoding: str            # "protobuf" or "json"
    doc: str
    json_schema: dict[str, Any] | None = None
    teleop_only: bool = False


def _json(title: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, "type": "object",
            "properties": properties}


JOINT_STATES = Topic("/joint_states", "foxglove.JointStates", "protobuf",
                     "measured position [rad], velocity [rad/s], effort [N·m] of every joint, every cycle")
JOINT_COMMANDS = Topic("/joint_commands", "foxglove.JointStates", "protobuf",
                       "commanded position, velocity and effort sent to the modules, every cycle")
REFERENCE = Topic("/trajectory/reference", "foxglove.JointStates", "protobuf",
                  "the trajectory's reference (position, velocity, acceleration) on cycles that have one")
PLUGIN_EFFORTS = Topic("/plugins/efforts", "hebictl.PluginEfforts", "json",
                       "each effort plugin's contribution [N·m] (gravity, dynamics, ...), every cycle",
                       _json("hebictl.PluginEfforts", {"timestamp": {"type": "number"},
                                                        "plugins": {"type": "object",
                                                                    "additionalProperties": _NUMBERS}}))
LOOP = Topic("/loop/timing", "hebictl.LoopTiming", "json",
             "per cycle, wall time [s]: period since the last cycle started, work in the cycle, wait before it",
             _json("hebictl.LoopTiming", {"cycle": {"type": "integer"}, "period": {"type": ["number", "null"]},
                                          "work": {"type": ["number", "null"]}, "wait": {"type": ["number", "null"]},
                                          "dropped": {"type": "integer"}}))
LOOP_STATS = Topic("/loop/stats", "hebictl.LoopStats", "json",
                   "the control loop's own once-a-second statistics (period p50/p99/max, overruns, missed)",
                   _json("hebictl.LoopStats", {"cycles": {"type": "number"}, "period_p50": {"type": "number"},
                                               "period_p99": {"type": "number"}, "period_max": {"type": "number"},
                                               "work_p50": {"type": "number"}, "work_p99": {"type": "number"},
                                               "overruns": {"type": "number"}, "missed_cycles": {"type": "number"},
                                               "window": {"type": "number"}}))
MODE = Topic("/supervisor/mode", "hebictl.Mode", "json",
             "the supervisor's mode and the arm's state (and teleop's mode), written when one changes",
             _json("hebictl.Mode", {"mode": {"type": "string"}, "state": {"type": "string"},
                                    "teleop_mode": {"type": ["string", "null"]}}))
EVENTS = Topic("/events", "foxglove.Log", "protobuf",
               "every safety event of the arm (kind, state entered, detail) as a log line; also recorder notes")
TF = Topic("/tf", "foxglove.FrameTransforms", "protobuf",
           "every URDF link's pose in its parent link from forward kinematics of the measured position "
           "(at transform_rate), so the 3D panel moves the attached URDF")
COMMANDS = Topic("/teleop/commands", "hebictl.TeleopCommand", "json",
                 "every MQTT command the arm thread was handed (topic, sender, sequence, body)",
                 _json("hebictl.TeleopCommand", {"topic": {"type": "string"}, "client": {"type": ["string", "null"]},
                                                 "seq": {"type": ["integer", "null"]}, "body": {"type": "object"}}),
                 teleop_only=True)
ACKS = Topic("/teleop/acks", "hebictl.TeleopAck", "json",
             "every ack the arm thread sent back (accepted or the reason of a refusal)",
             _json("hebictl.TeleopAck", {"topic": {"type": "string"}, "client": {"type": ["string", "null"]},
                                         "seq": {"type": ["integer", "null"]}, "accepted": {"type": "boolean"},
                                         "reason": {"type": "string"}, "detail": {"type": "string"}}),
             teleop_only=True)

ROBOT_DESCRIPTION = Topic("/robot_description", "hebictl.RobotDescription", "json",
                          "the URDF hebictl exports for the arm (``data``), once at the start of each file, for a "
                          "3D panel URDF layer that reads it from a topic (also an attachment, robot.urdf)",
                          _json("hebictl.RobotDescription", {"data": {"type": "string"}}))

TOPICS: tuple[Topic, ...] = (JOINT_STATES, JOINT_COMMANDS, REFERENCE, PLUGIN_EFFORTS, LOOP, LOOP_STATS, MODE,
                             EVENTS, TF, ROBOT_DESCRIPTION, COMMANDS, ACKS)

_PROTOBUF = {"foxglove.JointStates": JointStates, "foxglove.FrameTransforms": FrameTransforms,
             "foxglove.Log": Log}

#: attachment names and media types
URDF_ATTACHMENT = "robot.urdf"
CONFIG_ATTACHMENT = "robot.cfg.yaml"
#: metadata record names
RUN_METADATA = "hebictl.run"
FINAL_METADATA = "hebictl.summary"


def schema_bytes(topic: Topic) -> bytes:
    """The schema record's data: a protobuf FileDescriptorSet, or the JSON Schema text."""
    if topic.encoding == "protobuf":
        return build_file_descriptor_set(_PROTOBUF[topic.schema]).SerializeToString()
    return json.dumps(topic.json_schema).encode()


def register(writer: Writer, topic: Topic) -> int:
    """Register ``topic``'s schema and channel on ``writer``; returns the channel id."""
    encoding = "protobuf" if topic.encoding == "protobuf" else "jsonschema"
    schema_id = writer.register_schema(topic.schema, encoding, schema_bytes(topic))
    return writer.register_channel(topic.name, topic.encoding, schema_id)
