"""Late feedback: the sim honours ``faults.delay_feedback`` (samples show the arm as it was
``latency`` ago, their ``time`` says so), the age is measured and a ``feedback_late`` event
recorded beyond `max_age` (set to 15 ms here). Reference: the sim's true joint state recorded each cycle."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.goal import Goal
from hebictl.control.safety import EventKind
from tests.control.monitors.rig import sim_arm

pytest.importorskip("mujoco")


@pytest.mark.parametrize("latency", [0.02, 0.05])
def test_sim_delays_feedback_and_the_age_is_measured(latency):
    arm, clock, home = sim_arm("x-series-6dof")
    with arm:
        arm.set_goal(Goal(arm.dof).add_waypoint(position=home + np.eye(arm.dof)[0] * 1.0))
        arm.monitors.latency.limit = 0.015  # three periods at 200 Hz (the default, 100 ms, allows for a slow loop)
        arm.backend.faults.delay_feedback(latency)
        truth: dict[float, np.ndarray] = {}
        for _ in range(120):
            arm.update()
            arm.send()
            truth[round(clock.now(), 6)] = arm.backend.true_state()[0]
        fb = arm.last_feedback
        sample_t = round(float(fb.time[0]), 6)
        age = arm.monitors.feedback_age
        print(f"\ndelay {latency * 1e3:.0f} ms: measured age {age * 1e3:.1f} ms, "
              f"|q_fb - q_true(t - delay)| = {np.abs(fb.position - truth[sample_t]).max():.2e} rad")
        assert age == pytest.approx(latency, abs=0.006)
        np.testing.assert_allclose(fb.position, truth[sample_t], atol=1e-9)
        assert np.abs(fb.position - arm.backend.true_state()[0]).max() > 1e-3  # the arm moved meanwhile
        ev = [e for e in arm.events.events if e.kind is EventKind.FEEDBACK_LATE]
        assert len(ev) == 1 and "ms old" in ev[0].detail
        assert EventKind.COMMAND_LOST not in arm.events.kinds()  # a delayed echo is not a lost command


def test_on_time_feedback_has_no_event():
    arm, clock, home = sim_arm("x-series-6dof")
    with arm:
        assert arm.monitors.feedback_age < 0.001
        assert EventKind.FEEDBACK_LATE not in arm.events.kinds()
