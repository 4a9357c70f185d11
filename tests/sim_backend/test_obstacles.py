"""The contact rig (sim_backend/obstacles.py) and the sim's delayed feedback, on their own.

Reference values come from MuJoCo (contact forces, geometry) and from the sim's true state, not
from hebictl's controller."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.errors import ConfigError
from hebictl.hardware import SimClock
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.registry import open_backend
from tests.conftest import REPO_ROOT

pytest.importorskip("mujoco")

from sim_backend.backend import HISTORY_SAMPLES
from sim_backend.obstacles import Box, add_contact_boxes, contact_force, tool_position

CONFIG = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
HOME = [0.0, 1.2, 1.8, 2.2, -1.57, 0.0]


def _sim():
    return open_backend("sim", config=CONFIG, clock=SimClock(), initial_position=HOME)


def test_tool_sphere_sits_at_the_end_effector_and_touches_only_the_boxes():
    be = _sim()
    with be:
        from hebictl.formats import load_model

        model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
        ee = model.end_effector(np.array(HOME))[:3, 3]
        far = Box((ee[0] + 1.0, ee[1], ee[2]), (0.05, 0.05, 0.05))
        add_contact_boxes(be, [far], tool_radius=0.03)
        np.testing.assert_allclose(tool_position(be), ee, atol=1e-9)
        assert contact_force(be) == 0.0
        with pytest.raises(ConfigError, match="at least one box"):
            add_contact_boxes(be, [])


def test_delay_longer_than_the_history_shows_the_oldest_sample_kept():
    be = _sim()
    with be:
        be.feedback_frequency = 1000.0
        fb = Feedback.empty(6)
        be.write(Command(position=np.array(HOME), velocity=np.zeros(6), effort=np.zeros(6)))
        for _ in range(HISTORY_SAMPLES + 50):
            be.read(fb)
        now = fb.time[0]
        be.faults.delay_feedback(1.0)  # far longer than the 0.256 s kept at 1 kHz
        be.read(fb)
        age = be.clock.now() - fb.time[0]
        print(f"\n1 s delay asked, {HISTORY_SAMPLES} samples kept at 1 kHz: sample {age * 1e3:.0f} ms old")
        assert age == pytest.approx((HISTORY_SAMPLES - 1) / 1000.0, abs=0.0015)
        assert fb.time[0] < now
