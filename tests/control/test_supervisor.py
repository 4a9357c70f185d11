"""The supervisor's transition tables, row by row, and docs/supervisor.md checked against them."""

from __future__ import annotations

import itertools

import pytest

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
from tests.conftest import REPO_ROOT

#: the table written out by hand (an independent copy: a change to the code must be made here too)
EXPECTED = {
    (Mode.FOLLOW, Trigger.GOAL): Mode.FOLLOW, (Mode.FOLLOW, Trigger.BRAKE): Mode.BRAKE,
    (Mode.FOLLOW, Trigger.HOLD_AT): Mode.HOLD, (Mode.FOLLOW, Trigger.DAMP): Mode.DAMP,
    (Mode.FOLLOW, Trigger.GRAVCOMP): Mode.GRAVCOMP, (Mode.FOLLOW, Trigger.RELEASE): Mode.RELEASE,
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


def at(mode: Mode, level: ArmState = ArmState.RUNNING) -> Supervisor:
    sup = Supervisor(mode)
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
                at(mode, level).fire(trigger)
        return
    for level in ArmState:
        sup = at(mode, level)
        if expected in ALLOWED_MODES[level]:
            assert sup.fire(trigger) is expected and sup.mode is expected
        else:  # e.g. no goal while stopped
            with pytest.raises(IllegalTransition):
                sup.fire(trigger)
            assert sup.mode is mode


def test_a_running_brake_takes_no_weaker_stop_and_is_not_restarted():
    """The rule 'a stop during a stop keeps the stricter one' is in the table: brake has no damp,
    release, gravcomp or brake entry."""
    for trigger in (Trigger.DAMP, Trigger.RELEASE, Trigger.GRAVCOMP, Trigger.BRAKE):
        assert trigger not in MODE_TABLE[Mode.BRAKE]
    sup = at(Mode.BRAKE, ArmState.STOPPED)
    sup.pending = Trigger.DAMP
    sup.fire(Trigger.STILL)
    assert sup.mode is Mode.HOLD and sup.pending is None


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
    assert ALLOWED_MODES[ArmState.RUNNING] == {Mode.FOLLOW, Mode.BRAKE, Mode.HOLD, Mode.GRAVCOMP}
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
