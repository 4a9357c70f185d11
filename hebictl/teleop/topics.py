"""MQTT topic names of the teleop protocol, in one place so arm, bridge, client and ACL agree.

Everything lives under ``hebictl/v1/<arm_id>/``: operators publish on ``cmd/<name>``, the arm
publishes on ``state/<name>``. The version segment lets a future, incompatible protocol run on
the same broker side by side; ``arm_id`` lets one broker serve several arms (and the ACL give
each arm's account only its own subtree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hebictl.errors import ConfigError

PREFIX = "hebictl/v1"

#: command names and the QoS operators should publish them with (jog is streamed: QoS 0)
COMMAND_QOS: dict[str, int] = {
    "joint_goal": 1,
    "cartesian_goal": 1,
    "jog": 0,
    "gripper": 1,
    "stop": 1,
    "estop": 1,
    "mode": 1,
    "velocity": 0,  # a mobile base's wheel velocity stream (hebictl.teleop.base): as jog
    "input": 0,  # a Mobile IO sample stream (hebictl.inputs.schema): the next sample replaces a lost one
}

#: state topics the arm publishes: (QoS, retained)
STATE_QOS: dict[str, tuple[int, bool]] = {
    "joints": (0, False),
    "ee_pose": (0, False),
    "status": (1, True),
    "ack": (1, False),
    "description": (1, True),
}

#: the broker plugin tags a command topic with ``/@<account>`` of its publisher
ACCOUNT_TAG = "/@"

_ARM_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def check_arm_id(arm_id: str) -> str:
    """``arm_id`` if it is a safe single topic level (letters, digits, ``_ . -``), else ConfigError."""
    if not isinstance(arm_id, str) or not _ARM_ID.match(arm_id):
        raise ConfigError(f"arm id must be 1-64 characters of A-Z a-z 0-9 _ . - (no '/', '+', '#'), "
                          f"got {arm_id!r}", key="arm_id")
    return arm_id


@dataclass(frozen=True)
class Topics:
    """Topic names of one arm."""

    arm_id: str

    def __post_init__(self) -> None:
        check_arm_id(self.arm_id)

    @property
    def root(self) -> str:
        return f"{PREFIX}/{self.arm_id}"

    def cmd(self, name: str) -> str:
        return f"{self.root}/cmd/{name}"

    def state(self, name: str) -> str:
        return f"{self.root}/state/{name}"

    @property
    def all_commands(self) -> str:
        """Wildcard the arm subscribes to."""
        return f"{self.root}/cmd/#"

    @property
    def all_states(self) -> str:
        """Wildcard operators subscribe to."""
        return f"{self.root}/state/#"

    def command_name(self, topic: str) -> str | None:
        """``joint_goal`` for ``<root>/cmd/joint_goal`` (also when the broker tagged it with the
        sender's account, ``<root>/cmd/joint_goal/@operator``); None for a topic outside this
        arm's commands."""
        parsed = self.command_and_account(topic)
        return None if parsed is None else parsed[0]

    def command_and_account(self, topic: str) -> tuple[str, str | None] | None:
        """(command name, broker account or None) of a command topic; None outside this arm's
        commands. The account is the last level ``@<account>`` that the broker plugin of
        docs/teleop.md appends to every command an authenticated client publishes (and that no
        client may publish itself); without the plugin it is None (the broker says nothing)."""
        head = f"{self.root}/cmd/"
        if not topic.startswith(head):
            return None
        rest = topic[len(head):]
        name, sep, account = rest.partition(ACCOUNT_TAG)
        return (name, account) if sep else (rest, None)

    def state_name(self, topic: str) -> str | None:
        head = f"{self.root}/state/"
        return topic[len(head):] if topic.startswith(head) else None
