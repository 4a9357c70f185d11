"""Plugin capabilities: the Arm and the braking planner read what a plugin declares, never its type.

Each test uses a plugin class the core has never heard of, declaring one capability, and shows the
core treats it as it treats the built-in plugin with that role.
"""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.arm import Arm
from hebictl.control.braking import BrakePlanner
from hebictl.control.plugins import (
    ArmPlugin,
    DoubledJointMirror,
    DynamicsCompensationEffort,
    EffortOffset,
    EndEffectorWrench,
    GravityCompensationEffort,
    ImpedanceController,
)
from hebictl.hardware.clock import SimClock
from hebictl.wiring.assembly import assemble
from hebictl.wiring.plugin_table import PLUGIN_TYPES
from tests._support.paths import KIT6_CONFIG, KIT6_HOME

#: the capabilities each built-in plugin declares (True ones only), written out independently of the classes
DECLARED = {
    GravityCompensationEffort: {"gravity_source"},
    DynamicsCompensationEffort: {"feed_forward_effort"},
    DoubledJointMirror: {"runs_while_stopped"},
    EffortOffset: set(),
    ImpedanceController: set(),
    EndEffectorWrench: set(),
}
CAPABILITIES = ("runs_while_stopped", "gravity_source", "feed_forward_effort")


def test_builtin_plugins_declare_their_roles():
    assert set(DECLARED) == set(PLUGIN_TYPES.values())  # every implemented plugin is listed here
    assert not any(getattr(ArmPlugin, c) for c in CAPABILITIES)  # the base declares none
    for cls, caps in DECLARED.items():
        assert {c for c in CAPABILITIES if getattr(cls, c)} == caps, cls.__name__


class TiltedGravity(ArmPlugin):
    """A gravity source the core does not know by type: gravity tilted 30° about x."""

    type_name = "TiltedGravity"
    gravity_source = True

    def __init__(self) -> None:
        super().__init__("tilted")
        a = np.radians(30.0)
        self.g = 9.81 * np.array([0.0, np.sin(a), -np.cos(a)])
        self.updates = 0

    def gravity_vector(self) -> np.ndarray:
        return self.g

    def update(self, arm, dt) -> bool:
        self.updates += 1
        return super().update(arm, dt)


class Counter(ArmPlugin):
    """Counts its updates; ``runs_while_stopped`` as its subclass says."""

    type_name = "Counter"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.updates = 0

    def update(self, arm, dt) -> bool:
        self.updates += 1
        return super().update(arm, dt)


class StoppedCounter(Counter):
    type_name = "StoppedCounter"
    runs_while_stopped = True


@pytest.fixture
def arm():
    clock = SimClock()
    parts = assemble(KIT6_CONFIG, "mock", clock=clock, initial_position=list(KIT6_HOME))
    plugins = [Counter("plain"), TiltedGravity(), StoppedCounter("mirror-like")]
    a = Arm(parts.model, parts.backend, clock=clock, plugins=plugins, limits=parts.limits, safety=parts.safety)
    yield a
    a.close()


def _cycles(arm: Arm, n: int) -> None:
    for _ in range(n):
        arm.update()
        arm.send()


def test_stopped_arm_runs_only_plugins_that_run_while_stopped(arm):
    _cycles(arm, 5)
    plain, tilted, mirror = arm.plugins
    assert plain.updates == tilted.updates == mirror.updates == 5
    arm.stop(behaviour="damp")
    _cycles(arm, 20)
    print(f"updates while stopped: plain {plain.updates - 5}, runs_while_stopped {mirror.updates - 5}")
    assert plain.updates == 5 and tilted.updates == 5
    assert mirror.updates == 25


def test_stopped_arm_holds_against_the_gravity_sources_vector(arm):
    """Stopped in ``damp`` at rest, the Arm commands gravity compensation alone: computed with the
    gravity source's (tilted) vector, not the model's."""
    _cycles(arm, 5)
    arm.stop(behaviour="damp")
    _cycles(arm, 20)
    q, v = arm.last_feedback.position, arm.last_feedback.velocity
    assert np.max(np.abs(v)) < 1e-9  # at rest: the damping term is zero
    tilted = arm.model.gravity_compensation(q, arm.plugins[1].g)
    upright = arm.model.gravity_compensation(q, arm.model.gravity)
    effort = arm.pending_command.effort
    print(f"commanded vs tilted-gravity efforts: max diff {np.max(np.abs(effort - tilted)):.2e} N·m;"
          f" vs the model's gravity: {np.max(np.abs(effort - upright)):.3f} N·m")
    assert np.max(np.abs(tilted - upright)) > 0.5  # the two gravities give different efforts here
    np.testing.assert_allclose(arm.pending_command.effort, tilted, atol=1e-9)


class FeedForward(ArmPlugin):
    """A trajectory feed-forward the planner does not know by type."""

    type_name = "FeedForward"
    feed_forward_effort = True

    def __init__(self, efforts: np.ndarray) -> None:
        super().__init__("ff")
        self.efforts = efforts

    def feed_forward_efforts(self) -> np.ndarray:
        return self.efforts


def test_brake_feed_forward_leaves_out_declared_feed_forward(arm):
    planner = BrakePlanner(arm.model, arm.limits)
    q = np.array(KIT6_HOME)
    state = (q, np.full(arm.dof, 0.3), np.full(arm.dof, -2.0))
    full = planner.missing_effort(state, ())
    added = np.linspace(0.1, 0.6, arm.dof)
    undeclared = Counter("no-ff")
    undeclared.efforts = added  # the same attribute, but no declaration: not subtracted
    np.testing.assert_allclose(planner.missing_effort(state, [FeedForward(added)]), full - added, atol=1e-12)
    np.testing.assert_allclose(planner.missing_effort(state, [undeclared]), full, atol=1e-12)
    off = FeedForward(added)
    off.enabled_ratio = 0.0  # ramped out: it added nothing
    np.testing.assert_allclose(planner.missing_effort(state, [off]), full, atol=1e-12)
