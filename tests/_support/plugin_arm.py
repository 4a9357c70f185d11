"""The plugins' view of an arm over plain buffers (the ArmView Protocol), and a hebi-py twin.

Plugins are tested in isolation: the same joint state goes to hebictl's plugin (through
:class:`FakeArm`) and to hebi-py's plugin of the same type (through :func:`hebi_arm`, a namespace
with exactly the attributes hebi-py's plugins read), and their efforts are compared.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from hebictl.hardware.base import Command, Feedback
from tests._support.paths import KIT6_HOME, KIT6_HRDF

KIT6 = KIT6_HRDF
HOME = np.array(KIT6_HOME)


class FakeArm:
    """Implements hebictl.control.plugins.ArmView over plain buffers."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.dof = model.dof
        self.last_feedback = Feedback.empty(self.dof)
        self.pending_command = Command.empty(self.dof)
        self.trajectory_state: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.opened: list[tuple[list[str], list[str], list[int], list[float]]] = []
        self.extra: Any = None

    def input_frames(self) -> np.ndarray:
        return self.model.forward_kinematics(self.last_feedback.position, "input")

    def open_extra_modules(self, names, families, *, joints=(), signs=()):
        from hebictl.hardware.registry import open_backend

        self.opened.append((list(names), list(families), list(joints), list(signs)))
        self.extra = open_backend("mock", names=list(names), families=list(families))
        return self.extra


def hebi_arm(hebi: Any, q_fb, v_fb, q_cmd, v_cmd, effort=None) -> SimpleNamespace:
    """The attributes hebi-py's arm plugins read, with hebi's own robot model of the same HRDF."""
    robot = hebi.robot_model.import_from_hrdf(str(KIT6))
    n = robot.dof_count
    cmd = SimpleNamespace(position=np.array(q_cmd, float), velocity=np.array(v_cmd, float),
                          effort=np.zeros(n) if effort is None else np.array(effort, float))
    fbk = SimpleNamespace(position=np.array(q_fb, float), velocity=np.array(v_fb, float),
                          position_command=np.full(n, np.nan))
    return SimpleNamespace(robot_model=robot, _robot_model=robot, size=n, pending_command=cmd,
                           last_feedback=fbk)


def set_state(arm: FakeArm, q_fb, v_fb, q_cmd, v_cmd, effort=None) -> None:
    arm.last_feedback.position[:] = q_fb
    arm.last_feedback.velocity[:] = v_fb
    arm.pending_command.position[:] = q_cmd
    arm.pending_command.velocity[:] = v_cmd
    arm.pending_command.effort[:] = 0.0 if effort is None else effort

