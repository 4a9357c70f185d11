"""The sim arm with the teleop jog attached, as the teleop runner sets it up, for the jog tests
(tests/teleop/test_jog_sim.py, tests/teleop/test_jog_speed_sim.py)."""

from __future__ import annotations

import numpy as np

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.hardware import SimClock
from hebictl.teleop.jog import JogMailbox, JogPlugin, JogSample, attach
from tests._support.paths import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")


def jog_arm(name, mass=0.0):
    cfg = load_config(REPO_ROOT / "configs" / f"{name}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], float)
    clock = SimClock()
    options = {"payload": {"mass": mass, "com": [0.0, 0.0, 0.03]}} if mass else {}
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home, **options)  # unknown payload
    mailbox = JogMailbox()
    jog = JogPlugin(mailbox, accel=8.0, speed_fraction=1.0)  # what the teleop runner asks for
    attach(arm, jog)
    for p in arm.plugins:
        p.enabled_ratio = 1.0 if p.enabled else 0.0
    return arm, clock, jog, mailbox, home


def start(arm, jog, mailbox, space, velocity, settle=0.2):
    """Hold for ``settle`` [s] (an unknown payload sags the arm meanwhile), then start jogging."""
    end = arm.clock.now() + settle
    while arm.clock.now() < end:
        arm.update()
        arm.send()
    sample = JogSample(1, space, np.asarray(velocity, float), True, 1e9, 0, "test")
    mailbox.latest = sample
    jog.start(arm.pending_command.position.copy(), sample)
