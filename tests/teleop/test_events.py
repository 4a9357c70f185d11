"""The runner's decisions as a pure function (hebictl/teleop/events.py): no arm, thread or broker."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hebictl.teleop.events import (
    EVENT_TYPES,
    TABLE,
    Answer,
    ArmFacts,
    ArmFault,
    Brake,
    CommandArrived,
    EnterIdle,
    EstopEngaged,
    InternalError,
    JogLetGo,
    JogSampleReady,
    LinkLost,
    OperatorMode,
    Phase,
    Recover,
    RunnerState,
    SafetyStop,
    SetArmMode,
    SetGripper,
    ShutdownBegun,
    StartGoal,
    StartJog,
    decide,
    table_markdown,
)
from hebictl.teleop.schema import (
    Envelope,
    EstopCommand,
    GripperCommand,
    JointGoalCommand,
    ModeCommand,
    StopCommand,
)
from tests._support.paths import REPO_ROOT as REPO

_seq = iter(range(1, 10**9))


def env() -> Envelope:
    return Envelope(next(_seq), 0.0, "op")


def cmd(topic: str, command, arrival: int, **facts) -> CommandArrived:
    return CommandArrived(topic, command, arrival, ArmFacts(**facts))


GOAL = JointGoalCommand(Envelope(1, 0.0, "op"), (1.0,), (np.zeros(6),), (None,))


def answers(actions) -> list[tuple[bool, str]]:
    return [(a.accepted, a.reason) for a in actions if isinstance(a, Answer)]


def test_the_table_covers_every_phase_and_event_and_is_the_documented_one():
    assert set(TABLE) == {(p, e) for p in Phase for e in EVENT_TYPES}
    docs = (REPO / "docs" / "teleop.md").read_text(encoding="utf-8")
    assert table_markdown() in docs, "docs/teleop.md: paste hebictl.teleop.events.table_markdown() again"


def test_estop_engage_stops_first_latches_and_refuses_everything_else():
    s, actions = decide(RunnerState(mode=OperatorMode.POSITION), EstopEngaged(EstopCommand(env(), True), "", 5, 7))
    assert s.phase is Phase.ESTOPPED and s.estop and s.mode is OperatorMode.IDLE and s.jog_floor == 7
    assert isinstance(actions[0], SafetyStop) and actions[0].kind == "estop"
    assert answers(actions) == [(True, "")]
    for command in (ModeCommand(env(), "position"), GOAL, StopCommand(env()), GripperCommand(env(), 1.0, None)):
        s2, acts = decide(s, cmd("x", command, 9))
        assert s2 == s and answers(acts) == [(False, "estop_engaged")] and len(acts) == 1


def test_a_release_that_arrived_before_the_engage_is_refused():
    """The engage jumps the queue (arrival 6); a release queued at arrival 5 must not undo it."""
    s, _ = decide(RunnerState(), EstopEngaged(EstopCommand(env(), True), "", 6))
    s, acts = decide(s, cmd("estop", EstopCommand(env(), False), 5))
    assert s.estop and answers(acts) == [(False, "estop_engaged")]
    s, acts = decide(s, cmd("estop", EstopCommand(env(), False), 7))
    assert not s.estop and s.phase is Phase.SERVING and s.mode is OperatorMode.IDLE and answers(acts) == [(True, "")]
    s, acts = decide(s, cmd("joint_goal", GOAL, 8))  # released alone: still idle
    assert answers(acts) == [(False, "wrong_mode")]


def test_link_loss_refuses_what_was_queued_before_it():
    s = RunnerState(mode=OperatorMode.POSITION)
    s, acts = decide(s, LinkLost("broker gone", 10, 3))
    assert s.mode is OperatorMode.IDLE and isinstance(acts[0], SafetyStop) and acts[0].kind == "teleop_link_lost"
    s, acts = decide(s, cmd("mode", ModeCommand(env(), "position"), 9))
    assert answers(acts) == [(False, "stopped")] and s.mode is OperatorMode.IDLE
    s, acts = decide(s, cmd("mode", ModeCommand(env(), "position"), 11))
    assert s.mode is OperatorMode.POSITION and any(isinstance(a, SetArmMode) for a in acts)


def test_shutdown_stops_once_and_refuses_every_command():
    s, acts = decide(RunnerState(mode=OperatorMode.JOG), ShutdownBegun("interrupt"))
    assert s.phase is Phase.SHUTTING_DOWN and acts == (SafetyStop("interrupt", acts[0].detail),)
    assert decide(s, ShutdownBegun("terminate")) == (s, ())
    for command in (ModeCommand(env(), "jog"), EstopCommand(env(), False), GOAL):
        _, acts = decide(s, cmd("x", command, 1))
        assert answers(acts) == [(False, "shutting_down")] and len(acts) == 1
    assert decide(s, JogSampleReady(99, "")) == (s, ())


def test_gravcomp_refused_while_moving_or_braking():
    s = RunnerState(mode=OperatorMode.POSITION)
    for facts in ({"moving": True}, {"braking": True}):
        s2, acts = decide(s, cmd("mode", ModeCommand(env(), "gravcomp"), 1, **facts))
        assert s2 == s and answers(acts) == [(False, "moving")]
    s2, acts = decide(s, cmd("mode", ModeCommand(env(), "gravcomp"), 1))
    assert s2.mode is OperatorMode.GRAVCOMP
    assert acts[0] == SetArmMode(OperatorMode.GRAVCOMP, OperatorMode.POSITION, acts[0].who)


def test_jog_starts_only_in_jog_mode_from_a_sample_newer_than_the_last_stop():
    s = RunnerState(mode=OperatorMode.JOG)
    assert decide(s, JogSampleReady(1, "d"))[1] == (StartJog("d"),)
    s, acts = decide(s, cmd("stop", StopCommand(env()), 1, jog_index=4))
    assert isinstance(acts[0], Brake) and acts[0].kind == "teleop_stop" and s.jog_floor == 4
    assert decide(s, JogSampleReady(4, "d"))[1] == ()        # the sample before the stop
    assert decide(s, JogSampleReady(5, "d"))[1] == (StartJog("d"),)
    s, acts = decide(s, JogLetGo("teleop_jog_released", "let go", 6))
    assert s.jog_floor == 6 and acts == (Brake("teleop_jog_released", "let go"),)
    assert decide(RunnerState(mode=OperatorMode.POSITION), JogSampleReady(9, "d"))[1] == ()


def test_faults_and_internal_errors_drop_to_idle():
    s, acts = decide(RunnerState(mode=OperatorMode.JOG), ArmFault("position_limit", "joint 2"))
    assert s.mode is OperatorMode.IDLE and isinstance(acts[0], EnterIdle)
    s, acts = decide(RunnerState(mode=OperatorMode.POSITION), InternalError("boom"))
    assert s.mode is OperatorMode.IDLE and isinstance(acts[-1], Recover)


@pytest.mark.parametrize("seed", range(20))
def test_random_sequences_keep_the_latches(seed):
    """Random mixes of every event: nothing moves while the e-stop is latched or after shutdown,
    every queued command is answered exactly once (goals and gripper by the arm), and a mode is
    needed after an e-stop before anything moves again."""
    rng = random.Random(seed)
    s = RunnerState()
    need_mode = False
    for arrival in range(1, 401):
        k = rng.randrange(10)
        if k == 0:
            ev = EstopEngaged(EstopCommand(env(), True) if rng.random() < 0.5 else None, "", arrival)
        elif k == 1:
            ev = LinkLost("gone", arrival)
        elif k == 2 and rng.random() < 0.05:
            ev = ShutdownBegun("teleop_shutdown")
        elif k == 3:
            ev = ArmFault("watchdog", "late")
        elif k == 4:
            ev = JogSampleReady(arrival, "d")
        else:
            late = arrival - rng.randrange(3)  # queued commands may have arrived before a priority event
            command = rng.choice([ModeCommand(env(), rng.choice(list(OperatorMode)).value), GOAL, StopCommand(env()),
                                  EstopCommand(env(), rng.random() < 0.3), GripperCommand(env(), 0.5, None)])
            ev = cmd("x", command, late, moving=rng.random() < 0.3)
        before = s
        s, acts = decide(s, ev)
        moves = [a for a in acts if isinstance(a, StartGoal | StartJog | SetArmMode)]
        if before.phase is not Phase.SERVING:
            assert not moves, (before, ev, acts)
        if isinstance(ev, EstopEngaged | LinkLost | ArmFault | InternalError) or s.phase is Phase.ESTOPPED:
            need_mode = True
        if any(isinstance(a, SetArmMode) for a in acts):
            need_mode = False
        if need_mode:
            assert s.mode is OperatorMode.IDLE or s.phase is Phase.SHUTTING_DOWN
        if isinstance(ev, CommandArrived):
            answered = len(answers(acts)) + sum(isinstance(a, StartGoal | SetGripper) for a in acts)
            assert answered == 1, (before, ev, acts)
        if any(isinstance(a, SafetyStop) for a in acts):
            assert isinstance(acts[0], SafetyStop)  # the stop comes before anything else
    assert s.phase in Phase
