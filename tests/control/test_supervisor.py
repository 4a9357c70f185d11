"""The supervisor's transition tables, row by row, and docs/supervisor.md checked against them."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from hebictl.control.jog_law import JogLaw, JogSample
from hebictl.control.modes import Braking, Follow, Holding, Jogging
from hebictl.control.motion import Brake
from hebictl.control.safety import ArmState, StopBehaviour
from hebictl.control.supervisor import (
    ALLOWED_MODES,
    LEVEL_TABLE,
    MODE_TABLE,
    IllegalTransition,
    Latch,
    Level,
    Mode,
    Supervisor,
    Trigger,
    markdown,
)
from hebictl.errors import HebictlError
from hebictl.teleop.jog import JogMailbox
from hebictl.trajectory import create_trajectory
from tests._support.arms import kit6_arm
from tests._support.paths import REPO_ROOT

#: the table written out by hand (an independent copy: a change to the code must be made here too)
EXPECTED = {
    (Mode.FOLLOW, Trigger.GOAL): Mode.FOLLOW, (Mode.FOLLOW, Trigger.BRAKE): Mode.BRAKE,
    (Mode.FOLLOW, Trigger.HOLD_AT): Mode.HOLD, (Mode.FOLLOW, Trigger.DAMP): Mode.DAMP,
    (Mode.FOLLOW, Trigger.GRAVCOMP): Mode.GRAVCOMP, (Mode.FOLLOW, Trigger.RELEASE): Mode.RELEASE,
    (Mode.FOLLOW, Trigger.JOG): Mode.JOG,
    (Mode.JOG, Trigger.GOAL): Mode.FOLLOW, (Mode.JOG, Trigger.BRAKE): Mode.BRAKE,
    (Mode.JOG, Trigger.HOLD_AT): Mode.HOLD, (Mode.JOG, Trigger.DAMP): Mode.DAMP,
    (Mode.JOG, Trigger.GRAVCOMP): Mode.GRAVCOMP, (Mode.JOG, Trigger.RELEASE): Mode.RELEASE,
    (Mode.BRAKE, Trigger.JOG): Mode.JOG, (Mode.HOLD, Trigger.JOG): Mode.JOG, (Mode.GRAVCOMP, Trigger.JOG): Mode.JOG,
    (Mode.BRAKE, Trigger.GOAL): Mode.FOLLOW, (Mode.BRAKE, Trigger.HOLD_AT): Mode.HOLD,
    (Mode.BRAKE, Trigger.STILL): Mode.HOLD,
    (Mode.HOLD, Trigger.GOAL): Mode.FOLLOW, (Mode.HOLD, Trigger.BRAKE): Mode.BRAKE,
    (Mode.HOLD, Trigger.HOLD_AT): Mode.HOLD, (Mode.HOLD, Trigger.DAMP): Mode.DAMP,
    (Mode.HOLD, Trigger.GRAVCOMP): Mode.GRAVCOMP, (Mode.HOLD, Trigger.RELEASE): Mode.RELEASE,
    (Mode.DAMP, Trigger.BRAKE): Mode.BRAKE, (Mode.DAMP, Trigger.HOLD_AT): Mode.HOLD,
    (Mode.DAMP, Trigger.DAMP): Mode.DAMP, (Mode.DAMP, Trigger.RELEASE): Mode.RELEASE,
    (Mode.GRAVCOMP, Trigger.GOAL): Mode.FOLLOW, (Mode.GRAVCOMP, Trigger.BRAKE): Mode.BRAKE,
    (Mode.GRAVCOMP, Trigger.HOLD_AT): Mode.HOLD, (Mode.GRAVCOMP, Trigger.DAMP): Mode.DAMP,
    (Mode.GRAVCOMP, Trigger.GRAVCOMP): Mode.GRAVCOMP, (Mode.GRAVCOMP, Trigger.RELEASE): Mode.RELEASE,
    (Mode.RELEASE, Trigger.BRAKE): Mode.BRAKE, (Mode.RELEASE, Trigger.HOLD_AT): Mode.HOLD,
    (Mode.RELEASE, Trigger.DAMP): Mode.DAMP, (Mode.RELEASE, Trigger.RELEASE): Mode.RELEASE,
}


@functools.cache
def jog_law() -> JogLaw:
    """A jog's law on the 6-DoF kit (a jog's value carries it; the supervisor never runs it)."""
    arm = kit6_arm()
    arm.close()
    return JogLaw(arm.model, arm.limits)


def value(mode: Mode):
    """A value of ``mode`` with its data (follow and brake cannot exist without theirs)."""
    if mode is Mode.FOLLOW:
        return Follow(create_trajectory([0.0, 1.0], np.array([[0.0, 1.0]])))
    if mode is Mode.BRAKE:
        one = np.ones(1)
        return Braking(Brake(0.0, np.zeros(1), one, one, one, -10 * one, 10 * one))
    if mode is Mode.JOG:
        law = jog_law()
        sample = JogSample(1, "joint", np.zeros(law.model.dof), True, 1.0, 0, "test")
        return Jogging.begin(law, JogMailbox(), sample, np.zeros(law.model.dof))
    return None  # the supervisor makes the others


def at(mode: Mode, level: ArmState = ArmState.RUNNING) -> Supervisor:
    sup = Supervisor(value(mode) or mode)
    sup.level = level
    return sup


@pytest.mark.parametrize(("mode", "trigger"), list(itertools.product(Mode, Trigger)),
                         ids=lambda x: x.value)
def test_every_mode_trigger_pair(mode, trigger):
    """Each (mode, trigger): the listed next mode, at some latch level that allows it; unlisted: raises."""
    expected = EXPECTED.get((mode, trigger))
    assert MODE_TABLE[mode].get(trigger) == expected
    if expected is None:
        for level in ArmState:
            with pytest.raises(IllegalTransition, match=trigger.value):
                at(mode, level).fire(trigger, value(mode))
        return
    for level in ArmState:
        sup = at(mode, level)
        if expected in ALLOWED_MODES[level]:
            new = value(expected)
            assert sup.fire(trigger, new) is expected and sup.mode is expected
            assert sup.motion is new or new is None
        else:  # e.g. no goal while stopped
            with pytest.raises(IllegalTransition):
                sup.fire(trigger, value(expected))
            assert sup.mode is mode


def test_a_mode_value_carries_its_data_and_follow_and_brake_need_theirs():
    """A mode is a value: firing replaces it (no data of the old mode survives); follow and brake
    cannot be entered without their trajectory or ramp, and a value of another mode is refused."""
    sup = at(Mode.HOLD)
    with pytest.raises(IllegalTransition, match="needs its own value"):
        sup.fire(Trigger.GOAL)
    with pytest.raises(IllegalTransition, match="needs its own value"):
        sup.fire(Trigger.BRAKE, value(Mode.FOLLOW))
    with pytest.raises(IllegalTransition, match="needs its own value"):
        sup.fire(Trigger.JOG)  # a jog cannot exist without its stream
    braking = value(Mode.BRAKE)
    sup.fire(Trigger.BRAKE, braking)
    assert sup.motion is braking and sup.mode is Mode.BRAKE
    again = value(Mode.BRAKE)
    sup.restart_brake(again)  # a brake's sub-state, not a transition
    assert sup.motion is again
    hold = Holding(np.ones(1), after=again.ramp)
    sup.fire(Trigger.STILL, hold)
    assert sup.motion is hold and hold.damps and sup.mode is Mode.HOLD
    with pytest.raises(IllegalTransition):
        sup.restart_brake(value(Mode.BRAKE))
    sup.fire(Trigger.HOLD_AT)
    assert isinstance(sup.motion, Holding) and sup.motion.target is None and not sup.motion.damps


def test_a_running_brake_takes_no_weaker_stop_and_is_not_restarted():
    """The rule 'a stop during a stop keeps the stricter one' is in the table: brake has no damp,
    release, gravcomp or brake entry."""
    for trigger in (Trigger.DAMP, Trigger.RELEASE, Trigger.GRAVCOMP, Trigger.BRAKE):
        assert trigger not in MODE_TABLE[Mode.BRAKE]
    sup = at(Mode.BRAKE, ArmState.STOPPED)
    sup.brake_then(Trigger.DAMP)
    assert sup.pending is Trigger.DAMP
    sup.fire(Trigger.STILL)
    assert sup.mode is Mode.HOLD and sup.pending is None
    with pytest.raises(IllegalTransition):  # pending is kept only by a running brake, and only damp/release
        sup.brake_then(Trigger.DAMP)
    with pytest.raises(IllegalTransition):
        at(Mode.BRAKE).brake_then(Trigger.GOAL)


@pytest.mark.parametrize(("level", "action"), list(itertools.product(ArmState, Level)), ids=lambda x: x.value)
def test_every_level_action_pair(level, action):
    expected = {ArmState.RUNNING: {Level.GOAL: ArmState.RUNNING, Level.HOLD: ArmState.HOLD,
                                   Level.STOP: ArmState.STOPPED, Level.CLEAR: ArmState.RUNNING},
                ArmState.HOLD: {Level.GOAL: ArmState.RUNNING, Level.HOLD: ArmState.HOLD,
                                Level.STOP: ArmState.STOPPED, Level.CLEAR: ArmState.RUNNING},
                ArmState.STOPPED: {Level.STOP: ArmState.STOPPED, Level.CLEAR: ArmState.RUNNING}}[level].get(action)
    sup = at(Mode.HOLD, level)
    latch = Latch("estop", "test", StopBehaviour.HOLD)
    if expected is None:
        with pytest.raises(IllegalTransition):
            sup.set_level(action, latch)
        assert sup.level is level
    else:
        assert sup.set_level(action, latch) is expected
        assert (sup.latch is latch) == (expected is ArmState.STOPPED)


def test_modes_allowed_per_level():
    assert ALLOWED_MODES[ArmState.STOPPED] == {Mode.BRAKE, Mode.HOLD, Mode.DAMP, Mode.RELEASE}
    assert ALLOWED_MODES[ArmState.HOLD] == {Mode.BRAKE, Mode.HOLD}
    assert ALLOWED_MODES[ArmState.RUNNING] == {Mode.FOLLOW, Mode.JOG, Mode.BRAKE, Mode.HOLD, Mode.GRAVCOMP}
    sup = at(Mode.FOLLOW)
    sup.set_level(Level.STOP, Latch("estop", "", StopBehaviour.HOLD))
    with pytest.raises(IllegalTransition, match="not allowed while stopped"):
        sup.check()
    assert issubclass(IllegalTransition, HebictlError)
    assert set(LEVEL_TABLE) == set(ArmState)


def test_docs_hold_the_generated_tables():
    """docs/supervisor.md carries the tables exactly as the code generates them."""
    text = (REPO_ROOT / "docs" / "supervisor.md").read_text()
    begin, end = "<!-- table:begin -->\n", "<!-- table:end -->"
    assert begin in text and end in text
    assert text.split(begin, 1)[1].split(end, 1)[0] == markdown()
