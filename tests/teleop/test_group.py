"""Several teleop arms in one loop under one supervisor (hebictl/teleop/group.py).

First stepped by hand on a SimClock (deterministic, no broker): the rule across the arms, exact to
the cycle. Then ``hebictl teleop ARMS.multi.yaml`` as a real process against a real mosquitto, every
arm judged by its own published status from an independent MQTT reader; the waits there are for
events with a hang guard (:data:`HANG_S`), never a timing claim."""

from __future__ import annotations

import asyncio
import json
import signal

import numpy as np
import pytest

from hebictl.cli import main
from hebictl.control.arm import Arm
from hebictl.control.safety import ArmState
from hebictl.hardware.clock import SimClock
from hebictl.teleop.client import TeleopClient
from hebictl.teleop.group import GROUP_HOLD, RunnerGroup
from hebictl.teleop.runner import ArmRunner
from hebictl.teleop.schema import Envelope, EstopCommand, JointGoalCommand, ModeCommand, StopCommand
from hebictl.wiring.multi import arms_from_multi_config
from tests._support.paths import CONFIGS_DIR
from tests._support.teleop import HANG_S, HOME, StderrLines, run, spawn_teleop

MULTI = CONFIGS_DIR / "two-x-series-6dof.multi.yaml"
RATE = 200.0
DT = 1.0 / RATE

_seq = iter(range(1, 10**9))


def env() -> Envelope:
    return Envelope(next(_seq), 0.0, "op")


def goal(q, t=1.5) -> JointGoalCommand:
    """A one-waypoint goal; the mock starts at zeros, so HOME needs >= 1.25 s at rated speed."""
    return JointGoalCommand(env(), (t,), (np.asarray(q, dtype=float),), (None,))


def pair_rig(backend: str):
    """Both arms of the bundled two-arm config on ``backend`` and one SimClock, each with its runner
    (acks collected per arm), in one RunnerGroup; one cycle stepped (first feedback)."""
    clock = SimClock()
    multi = arms_from_multi_config(Arm, MULTI, backend, clock=clock)
    runners = {name: ArmRunner(arm, rate_hz=RATE) for name, arm in multi.arms.items()}
    acks: dict[str, list] = {name: [] for name in runners}
    for name, runner in runners.items():
        runner.on_result = acks[name].append
    group = RunnerGroup(runners, rate_hz=RATE, observe=multi.observe)
    cycles(group, clock, 1)
    return group, runners, acks, clock, multi


def cycles(group: RunnerGroup, clock: SimClock, n: int) -> None:
    for _ in range(n):
        deadline = clock.now() + DT
        group.step()
        clock.sleep_until(deadline)


@pytest.fixture
def pair():
    group, runners, acks, clock, multi = pair_rig("mock")
    yield group, runners, acks, clock
    multi.close()


def test_an_estop_of_one_arm_holds_both_in_its_cycle_and_each_status_names_it(pair):
    """Right's e-stop: both arms stopped in the cycle that takes it, one group event naming right; left
    idle with last error group_hold; both snapshots' ``group`` object names right. Left may not leave
    the hold while right holds for its own cause; once right is released and set, left resumes with its
    own command, and a goal to left moves left only."""
    group, runners, acks, clock = pair
    left, right = runners["left"], runners["right"]
    for r in runners.values():
        r.submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 1)
    right.engage_estop(EstopCommand(env(), True))
    cycles(group, clock, 1)
    assert left.arm.state is ArmState.STOPPED and right.arm.state is ArmState.STOPPED
    assert left.mode == "idle" and right.mode == "idle" and right.estop_latched and not left.estop_latched
    trips = [e for e in group.group.events if e.kind == "fault"]
    assert len(trips) == 1 and trips[0].arm == "right" and "e-stop engaged" in trips[0].detail
    for r in runners.values():
        assert r.snapshot.group is not None and r.snapshot.group["held"] and r.snapshot.group["by"] == "right"
        assert r.snapshot.state == "stopped"
    assert left.snapshot.last_error.reason == GROUP_HOLD and "arm right" in left.snapshot.last_error.detail

    left.submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 1)
    assert acks["left"][-1].reason == GROUP_HOLD and left.arm.state is ArmState.STOPPED
    right.submit("estop", EstopCommand(env(), False))
    right.submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 2)
    assert acks["right"][-1].accepted and right.arm.state is ArmState.RUNNING
    assert left.arm.state is ArmState.STOPPED, "nothing resumes by itself"
    assert not left.snapshot.group["held"] and group.group.events[-1].kind == "cleared"
    left.submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 1)
    assert acks["left"][-1].accepted and left.arm.state is ArmState.RUNNING
    right_before = right.arm.last_feedback.position.copy()
    left.submit("joint_goal", goal(HOME))
    cycles(group, clock, int(1.6 * RATE))
    assert acks["left"][-1].accepted and left.arm.at_goal
    np.testing.assert_allclose(left.arm.last_feedback.position, HOME, atol=1e-9)
    np.testing.assert_allclose(right.arm.last_feedback.position, right_before, atol=1e-12)


def test_an_estop_of_one_arm_comes_before_the_other_arms_commands_of_its_cycle(pair):
    """Left's mode queued first, right's e-stop after it, taken in one cycle: every arm's e-stop comes
    before any arm's command, so left's mode is refused and nothing of it is applied."""
    group, runners, acks, clock = pair
    runners["left"].submit("mode", ModeCommand(env(), "position"))
    runners["right"].engage_estop(EstopCommand(env(), True))
    cycles(group, clock, 1)
    assert acks["left"][-1].reason == GROUP_HOLD and runners["left"].mode == "idle"
    assert all(r.arm.state is ArmState.STOPPED for r in runners.values())


def test_a_recorded_group_cycle_has_every_arm_and_each_phase_in_order(tmp_path):
    """A RunnerGroup recording to one multi-arm MCAP (``hebictl teleop ARMS.multi.yaml --record``), stepped
    on a SimClock: left's mode and right's e-stop taken in one cycle. The file, read back in file order,
    has each arm's commands and acks on its own ``/NAME/teleop/...``, one cycle per arm per step, and the
    phases of that cycle in the order they ran: right's e-stop (ack, then its event), then left's refused
    mode (group_hold), then the group's trip naming right, then left's stop by the group. The arms are
    recorded under their arm ids (``--arm-id cell``: ``cell-left``, ``cell-right``)."""
    pytest.importorskip("foxglove_schemas_protobuf", reason="recording needs the record extra")
    from hebictl.cli.run_multi import multi_arm_recorder
    from hebictl.recording.reader import iter_messages, read_run, recorded_arms

    clock = SimClock()
    multi = arms_from_multi_config(Arm, MULTI, "mock", clock=clock)
    try:
        ids = {name: f"cell-{name}" for name in multi.arms}
        runners = {ids[name]: ArmRunner(arm, rate_hz=RATE) for name, arm in multi.arms.items()}
        group = RunnerGroup(runners, rate_hz=RATE, observe=multi.observe)
        rec = multi_arm_recorder(tmp_path / "group.mcap", multi, group.group, names=ids, teleop=True,
                                 metadata={"command": "test"})
        group.record_to(rec)
        cycles(group, clock, 2)
        runners["cell-left"].submit("mode", ModeCommand(env(), "position"))
        runners["cell-right"].engage_estop(EstopCommand(env(), True))
        cycles(group, clock, 3)
    finally:
        multi.close()
    done = rec.close()
    assert done.cycles == 5 and done.written == 5 and done.dropped == 0, done
    run = read_run(done.files[0])
    assert run.complete and recorded_arms(run) == ["cell-left", "cell-right"]
    assert {"cell-left/robot.cfg.yaml", "cell-right/robot.urdf"} <= set(run.attachments)
    for name in ("cell-left", "cell-right"):
        assert run.counts[f"/{name}/joint_states"] == run.counts[f"/{name}/joint_commands"] == 5
    assert "/teleop/commands" not in run.counts and "/teleop/acks" not in run.counts
    order = list(iter_messages(done.files[0]))

    def first(topic: str, predicate) -> int:
        return next(i for i, (t, _, m) in enumerate(order) if t == topic and predicate(m))

    estop_cmd = first("/cell-right/teleop/commands", lambda m: m["topic"] == "estop")
    mode_cmd = first("/cell-left/teleop/commands", lambda m: m["topic"] == "mode")
    estop_ack = first("/cell-right/teleop/acks", lambda m: m["topic"] == "estop" and m["accepted"])
    estop_event = first("/cell-right/events", lambda m: "estop" in m.message)
    refused = first("/cell-left/teleop/acks", lambda m: m["topic"] == "mode" and m["reason"] == GROUP_HOLD)
    trip = first("/group/events", lambda m: m.message.startswith("fault cell-right"))
    held = first("/cell-left/events", lambda m: "cell-right" in m.message)
    cycle = next(i for i, (t, _, _m) in enumerate(order) if t == "/cell-left/joint_states" and i > held)
    print(f"\nfile order: commands {mode_cmd}, {estop_cmd}; e-stop ack {estop_ack}, event {estop_event}; "
          f"left refused {refused}; group trip {trip}; left held {held}; that cycle's /left/joint_states {cycle}")
    assert max(mode_cmd, estop_cmd) < estop_ack < estop_event < refused < trip < held < cycle
    times = [t for _, t, _m in order]
    assert times == sorted(times), "log times go back"


def test_a_rotated_group_session_leaves_files_that_each_open_alone_with_every_arm(tmp_path):
    """A group session rotated at every commit (``--record-rotate-mb`` tiny; a new file's first cycle is
    committed at once, so here every file holds about one cycle): many files ``-001``, ``-002`` ..., each
    complete and opening alone with every arm's URDF and commands' channels (each after the first with
    every arm's mode); every cycle of every arm in exactly one of them."""
    pytest.importorskip("foxglove_schemas_protobuf", reason="recording needs the record extra")
    from hebictl.cli.run_multi import multi_arm_recorder
    from hebictl.recording.reader import read_run, recorded_arms
    from hebictl.recording.writer import session_path

    clock = SimClock()
    multi = arms_from_multi_config(Arm, MULTI, "mock", clock=clock)
    try:
        runners = {name: ArmRunner(arm, rate_hz=RATE) for name, arm in multi.arms.items()}
        group = RunnerGroup(runners, rate_hz=RATE, observe=multi.observe)
        rec = multi_arm_recorder(session_path(tmp_path, arm_id="left_right"), multi, group.group, teleop=True,
                                 rotate_bytes=1, rotate_seconds=3600.0, metadata={"command": "teleop"})
        group.record_to(rec)
        runners["left"].submit("mode", ModeCommand(env(), "position"))
        cycles(group, clock, int(0.6 * RATE))
    finally:
        multi.close()
    done = rec.close()
    assert len(done.files) >= 2 and [f.stem[-4:] for f in done.files[:2]] == ["-001", "-002"], done.files
    counts = {"left": 0, "right": 0}
    for k, f in enumerate(done.files):
        run = read_run(f)
        assert run.complete and recorded_arms(run) == ["left", "right"], f
        assert {"left/robot.urdf", "right/robot.urdf", "arms.multi.yaml"} <= set(run.attachments), f
        assert {"/left/teleop/commands", "/right/teleop/acks"} <= set(run.schema_of), f
        for name in counts:
            assert run.counts[f"/{name}/robot_description"] == 1, f
            # (the first file, cut after its first cycle here, ends before that cycle's mode was written)
            assert k == 0 or run.counts[f"/{name}/supervisor/mode"] >= 1, f
            counts[name] += run.counts[f"/{name}/joint_states"]
    assert counts == {"left": done.cycles, "right": done.cycles}, (counts, done)
    print(f"\n{done.cycles} cycles in {len(done.files)} files")


def test_a_plain_stop_holds_only_that_arm_and_a_second_estop_trips_again(pair):
    """``cmd/stop`` (the operator's plain hold) is not a fault: the other arm goes on. An e-stop after
    the group was cleared trips it again, naming the new arm."""
    group, runners, acks, clock = pair
    left, right = runners["left"], runners["right"]
    for r in runners.values():
        r.submit("mode", ModeCommand(env(), "position"))
        r.submit("joint_goal", goal(HOME))
    cycles(group, clock, 40)
    left.submit("stop", StopCommand(env()))
    cycles(group, clock, 40)
    assert acks["left"][-1].accepted and left.arm.state is not ArmState.STOPPED
    assert right.arm.state is ArmState.RUNNING and not right.arm.at_goal and group.group.tripped is None
    left.engage_estop(EstopCommand(env(), True))
    cycles(group, clock, 1)
    assert right.arm.state is ArmState.STOPPED and right.snapshot.group["by"] == "left"
    left.submit("estop", EstopCommand(env(), False))
    left.submit("mode", ModeCommand(env(), "position"))
    right.submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 2)
    assert all(r.arm.state is ArmState.RUNNING for r in runners.values()) and group.group.tripped is None
    right.engage_estop(EstopCommand(env(), True))
    cycles(group, clock, 1)
    trips = [e for e in group.group.events if e.kind == "fault"]
    assert [e.arm for e in trips] == ["left", "right"] and left.arm.state is ArmState.STOPPED


def test_a_shutdown_stops_every_arm_as_one_operator_stop(pair):
    """The group's shutdown (Ctrl-C, SIGTERM) brakes every arm in one cycle and records one ``stop``
    event, no fault of the first arm to stop."""
    group, runners, _, clock = pair
    group.begin_shutdown("terminate")
    cycles(group, clock, 1)
    assert all(r.arm.state is ArmState.STOPPED for r in runners.values())
    assert [e.kind for e in group.group.events] == ["stop"]


def test_a_sigterm_parks_every_arm_at_its_rest_pose_and_after_an_estop_none(pair):
    """SIGTERM with no arm holding for a cause of its own: both arms park at their rest pose (each
    through its own admission, the other arm an obstacle) and the loop ends. After an e-stop that
    still holds every arm no arm may park."""
    from hebictl.control.park import rest_position
    from hebictl.multi_config import load_multi_arm_config

    group, runners, acks, clock = pair
    for r in runners.values():
        r.submit("mode", ModeCommand(env(), "position"))
        r.submit("joint_goal", goal(HOME))
    cycles(group, clock, int(1.6 * RATE))
    assert all(r.arm.at_goal for r in runners.values()) and group.parkable() == {"left", "right"}
    runners["right"].engage_estop(EstopCommand(env(), True))
    cycles(group, clock, 1)
    assert group.parkable() == set()
    runners["right"].submit("estop", EstopCommand(env(), False))
    runners["right"].submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 1)
    assert group.parkable() == {"right"}, "left is still held by the group: it waits for its own command"
    runners["left"].submit("mode", ModeCommand(env(), "position"))
    cycles(group, clock, 1)
    assert group.parkable() == {"left", "right"}
    for entry in load_multi_arm_config(MULTI).arms:
        runners[entry.name].park_rest = rest_position(entry.config, runners[entry.name].arm.dof)
    group.begin_shutdown("terminate")
    for r in runners.values():
        r.request_close("terminate", 60.0)
    steps = 0
    while group.step() and steps < int(70 * RATE):   # a bound on simulated cycles, not a wait
        clock.sleep_until(clock.now() + DT)
        steps += 1
    for r in runners.values():
        assert r.park is not None and r.park.phase == "parked", r.park.outcome
        np.testing.assert_allclose(r.arm.last_feedback.position, r.park_rest, atol=1e-3)
    print(f"\ntwo arms on the mock: SIGTERM at home, both parked; loop ended {steps / RATE:.2f} s (simulated) later")


def test_an_m_stop_during_the_parks_ends_the_other_park_in_the_hold(pair):
    """As ``hebictl run``'s parks: right's M-stop 1.0 s after the SIGTERM (both arms on their park
    move) ends left's park in the fall-back hold naming right, with one group fault event."""
    from hebictl.control.park import rest_position
    from hebictl.multi_config import load_multi_arm_config

    group, runners, _, clock = pair
    for r in runners.values():
        r.submit("mode", ModeCommand(env(), "position"))
        r.submit("joint_goal", goal(HOME))
    cycles(group, clock, int(1.6 * RATE))
    for entry in load_multi_arm_config(MULTI).arms:
        runners[entry.name].park_rest = rest_position(entry.config, runners[entry.name].arm.dof)
    group.begin_shutdown("terminate")
    for r in runners.values():
        r.request_close("terminate", 60.0)
    cycles(group, clock, int(1.0 * RATE))
    phases = {n: r.park.phase for n, r in runners.items()}
    runners["right"].arm.backend.press_mstop()
    steps = 0
    while group.step() and steps < int(70 * RATE):   # a bound on simulated cycles, not a wait
        clock.sleep_until(clock.now() + DT)
        steps += 1
    left, right = runners["left"].park, runners["right"].park
    faults = [e for e in group.group.events if e.kind == "fault"]
    print(f"\nmock: right's M-stop 1.0 s after the SIGTERM (parks {phases}); left: {left.outcome}; right: "
          f"{right.outcome}; loop ended {steps / RATE:.2f} s (simulated) after the M-stop")
    assert phases == {"left": "move", "right": "move"}
    assert len(faults) == 1 and faults[0].arm == "right" and "during its park" in faults[0].detail
    assert left.phase == "hold" and "arm right stopped during its park" in left.outcome
    assert all(r.arm.state is ArmState.STOPPED for r in runners.values())


def test_on_the_sim_an_estop_mid_goal_brakes_both_arms_from_the_same_cycle():
    """Both arms on the sim (one MuJoCo scene) moving home; right's e-stop 0.5 s in: both arms take the
    latched hold stop in that cycle and come to rest. Simulated time; the figures are printed."""
    pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    group, runners, acks, clock, multi = pair_rig("sim")
    try:
        for r in runners.values():
            r.submit("mode", ModeCommand(env(), "position"))
            r.submit("joint_goal", goal(HOME, 2.0))
        cycles(group, clock, int(0.5 * RATE))
        assert all(a[-1].accepted for a in acks.values()), acks
        speed = {n: float(np.abs(r.arm.last_feedback.velocity).max()) for n, r in runners.items()}
        runners["right"].engage_estop(EstopCommand(env(), True))
        pressed = clock.now()
        cycles(group, clock, 1)
        assert all(r.arm.state is ArmState.STOPPED for r in runners.values())
        still: dict[str, float] = {}
        start = {n: r.arm.last_feedback.position.copy() for n, r in runners.items()}
        while len(still) < 2 and clock.now() - pressed < 3.0:   # a bound on simulated time, not a wait
            cycles(group, clock, 1)
            for n, r in runners.items():
                if n not in still and np.abs(r.arm.last_feedback.velocity).max() < 0.01:
                    still[n] = clock.now() - pressed
        travel = {n: float(np.abs(r.arm.last_feedback.position - start[n]).max()) for n, r in runners.items()}
        print("\nsim, two arms moving home, right's e-stop 0.5 s in: both stopped in the cycle that took it; "
              + "; ".join(f"{n}: {speed[n]:.2f} rad/s at the e-stop, still after {still.get(n, float('nan')):.3f} s, "
                          f"{travel[n] * 1e3:.1f} mrad further" for n in runners))
        assert set(still) == {"left", "right"}
        assert all(r.arm.state is ArmState.STOPPED for r in runners.values())
    finally:
        multi.close()


# ---------------------------------------------------------------- hebictl teleop ARMS.multi.yaml, a real process
def _statuses(url: str, arm_ids: tuple[str, ...], predicate, timeout: float = HANG_S) -> dict[str, dict]:
    """Each arm's status, read by a client of its own, once ``predicate(status)`` holds for it."""

    async def one(arm_id: str) -> dict:
        async with TeleopClient(url, arm_id, name=f"reader-{arm_id}") as c:
            return await c.wait_status(predicate, timeout=timeout)

    async def every() -> list[dict]:
        return await asyncio.gather(*(one(a) for a in arm_ids))

    return dict(zip(arm_ids, run(every(), timeout=timeout + 5), strict=True))


async def _position(client: TeleopClient) -> np.ndarray:
    msg = await client.wait_for(lambda name, m: name == "joints", timeout=HANG_S)
    return np.asarray(msg["position"], dtype=float)


#: [rad] how far the arm not sent a goal may move meanwhile: nothing on the mock; on the sim it holds
#: under physics (gravity, the other arm's motion through the shared table) with its position loop
STILL_ATOL = {"mock": 1e-9, "sim": 1e-4}


@pytest.mark.broker
@pytest.mark.parametrize(("bridge", "backend"), [("process", "mock"), ("thread", "mock"), ("process", "sim")])
def test_teleop_on_a_multi_arm_config_serves_each_arm_and_one_estop_holds_both(broker, spawned, bridge, backend):
    """``hebictl teleop configs/two-x-series-6dof.multi.yaml --arm-id cell``: arms ``cell-left`` and
    ``cell-right`` on their own topics. A goal to left moves left only; right's e-stop holds both (each
    status, read by an independent client, says stopped, held by cell-right); left's mode is refused
    while right holds; SIGTERM ends the process (exit 0) with both arms stopped and offline, neither
    parked (right's e-stop still holds every arm)."""
    if backend == "sim":
        pytest.importorskip("mujoco", reason="the sim backend needs mujoco (pip install 'hebictl[sim]')")
    ids = ("cell-left", "cell-right")
    proc = spawn_teleop(broker.url, str(MULTI), "--arm-id", "cell", "--bridge", bridge, "--backend", backend)
    spawned.append(proc)
    err = StderrLines(proc)
    online = _statuses(broker.url, ids, lambda s: s["status"] == "online" and s.get("cycles", 0) > 0)
    assert all(s["group"]["arms"] == list(ids) and not s["group"]["held"] for s in online.values()), online

    async def drive() -> tuple[np.ndarray, ...]:
        async with TeleopClient(broker.url, "cell-left", name="op-l") as left, \
                TeleopClient(broker.url, "cell-right", name="op-r") as right:
            assert (await left.mode("position", timeout=HANG_S)).accepted
            assert (await right.mode("position", timeout=HANG_S)).accepted
            left_before, right_before = await _position(left), await _position(right)
            assert (await left.joint_goal(HOME, duration=1.5, timeout=HANG_S)).accepted
            await left.wait_status(lambda s: s["at_goal"], timeout=HANG_S)
            left_after, right_after = await _position(left), await _position(right)
            assert (await right.estop(True, timeout=HANG_S)).accepted
            return left_before, right_before, left_after, right_after

    left_before, right_before, left_after, right_after = run(drive(), timeout=HANG_S)
    np.testing.assert_allclose(left_after, HOME, atol=1e-3 if backend == "mock" else 2e-2)
    print(f"\n{backend}, bridge {bridge}: right moved {np.abs(right_after - right_before).max():.2e} rad while left "
          f"went home (up to {np.abs(left_after - left_before).max():.2f} rad)")
    np.testing.assert_allclose(right_after, right_before, atol=STILL_ATOL[backend])
    held = _statuses(broker.url, ids, lambda s: s.get("state") == "stopped" and (s.get("group") or {}).get("held"))
    for s in held.values():
        assert s["group"]["by"] == "cell-right" and "e-stop" in s["group"]["cause"], s
    assert held["cell-right"]["estop"] and not held["cell-left"]["estop"]
    assert held["cell-left"]["last_error"]["reason"] == GROUP_HOLD and "cell-right" in held["cell-left"]["last_error"][
        "detail"]

    async def refused() -> None:
        async with TeleopClient(broker.url, "cell-left", name="op-l2") as left:
            ack = await left.mode("position", timeout=HANG_S)
            assert not ack.accepted and ack.reason == GROUP_HOLD and "cell-right" in ack.detail

    run(refused(), timeout=HANG_S)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(HANG_S) == 0, err.text()[-3000:]
    gone = _statuses(broker.url, ids, lambda s: s["status"] == "offline")
    for s in gone.values():
        assert s["last_event"]["state"] == "stopped", s
    text = err.text()
    assert "SIGTERM: stopping teleop; every arm brakes" in text, text[-3000:]
    assert "park" not in text.split("SIGTERM")[1], text[-3000:]
    for arm_id in ids:
        assert f"arm {arm_id}: stopped, holding" in text, text[-3000:]


# ---------------------------------------------------------------- hebictl teleop ARMS.multi.yaml --record DIR
async def _group_session(url: str) -> None:
    """Both arms set to position and sent a goal each; right's e-stop holds both (each status says so);
    left's mode is then refused (group_hold)."""
    async with TeleopClient(url, "left", name="op-l") as left, TeleopClient(url, "right", name="op-r") as right:
        for c in (left, right):
            await c.wait_status(lambda s: s["status"] == "online", timeout=HANG_S)
            assert (await c.mode("position", timeout=HANG_S)).accepted
        assert (await left.joint_goal(list(np.add(HOME, 0.1)), timeout=HANG_S)).accepted
        assert (await right.joint_goal(list(np.add(HOME, -0.1)), timeout=HANG_S)).accepted
        assert (await right.estop(True, timeout=HANG_S)).accepted
        for c in (left, right):
            await c.wait_status(lambda s: (s.get("group") or {}).get("held") and s["state"] == "stopped",
                                timeout=HANG_S)
        ack = await left.mode("position", timeout=HANG_S)
        assert not ack.accepted and ack.reason == "group_hold", ack


@pytest.mark.broker
def test_teleop_on_a_multi_arm_config_records_every_arm_in_one_session_file(broker, spawned, tmp_path, capsys):
    """``hebictl teleop configs/two-x-series-6dof.multi.yaml --record DIR`` as a real process (mock, paced
    clock): commands to both arms, right's e-stop holding both, left's refused mode, then SIGTERM. One
    session file ``teleop-left_right-*-001.mcap`` (0600 in a 0700 folder), read back with the ``mcap``
    package's reader and hebictl's: every arm's cycles (as many as the recorder counted), each arm's
    commands and acks on its own ``/NAME/teleop/...``, right's e-stop, the group's trip naming right and
    left's stop by it, in that order, then the SIGTERM's stop of every arm; ``hebictl log info`` lists
    both arms, ``hebictl plot`` draws one figure per arm."""
    import argparse
    import stat
    from importlib.util import find_spec

    pytest.importorskip("foxglove_schemas_protobuf", reason="recording needs the record extra")
    from hebictl.cli.log_cmd import cmd_info
    from hebictl.recording import schemas
    from hebictl.recording.reader import iter_messages, load_recorder, read_run, recorded_arms
    from tests.recording.helpers import Readback

    folder = tmp_path / "sessions"
    proc = spawn_teleop(broker.url, str(MULTI), "--record", str(folder), "--stop-hold", "0.2")
    spawned.append(proc)
    err = StderrLines(proc)
    asyncio.run(asyncio.wait_for(_group_session(broker.url), 4 * HANG_S))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(HANG_S) == 0, err.text()[-3000:]
    text = err.text()
    files = sorted(folder.glob("*.mcap"))
    assert [f.name.rsplit("-", 3)[0] for f in files] == ["teleop-left_right"] and files[0].stem.endswith("-001"), files
    assert "recorded" in text and str(files[0]) in text, text[-3000:]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(files[0].stat().st_mode) == 0o600

    back = Readback(files[0])   # the mcap package's reader, through the file's index
    summary = back.metadata[schemas.FINAL_METADATA]
    cycles = int(summary["written"])
    assert summary["dropped"] == "0" and cycles == int(summary["cycles"]) > 0, summary
    meta = back.metadata[schemas.RUN_METADATA]
    assert meta["command"] == "teleop" and meta["arms"] == '["left", "right"]', meta
    attached = {"arms.multi.yaml", "left/robot.cfg.yaml", "right/robot.cfg.yaml", "left/robot.urdf"}
    assert attached <= set(back.attachments), sorted(back.attachments)
    for name in ("left", "right"):
        assert len(back.messages[f"/{name}/joint_states"]) == len(back.messages[f"/{name}/joint_commands"]) == cycles
        sent = [m["topic"] for _, m in back.messages[f"/{name}/teleop/commands"]]
        assert sent[:2] == ["mode", "joint_goal"], sent
    assert not back.messages["/teleop/commands"] and "/teleop/acks" not in back.declared
    right_sent = [m["topic"] for _, m in back.messages["/right/teleop/commands"]]
    assert right_sent == ["mode", "joint_goal", "estop"], right_sent
    left_acks = [(m["topic"], m["accepted"], m["reason"]) for _, m in back.messages["/left/teleop/acks"]]
    assert left_acks == [("mode", True, ""), ("joint_goal", True, ""), ("mode", False, "group_hold")], left_acks
    assert [m["topic"] for _, m in back.messages["/right/teleop/acks"]] == ["mode", "joint_goal", "estop"]

    run = read_run(files[0])   # hebictl's reader, in file order
    assert run.complete and recorded_arms(run) == ["left", "right"]
    order = list(iter_messages(files[0]))

    def first(topic: str, predicate) -> int:
        return next(i for i, (t, _, m) in enumerate(order) if t == topic and predicate(m))

    estop = first("/right/events", lambda m: m.message.startswith("estop"))
    trip = first("/group/events", lambda m: m.message.startswith("fault right"))
    held = first("/left/events", lambda m: "arm group: right stopped" in m.message)
    refused = first("/left/teleop/acks", lambda m: m["reason"] == "group_hold")
    stop = first("/group/events", lambda m: m.message.startswith("stop -: terminate"))
    assert first("/right/teleop/acks", lambda m: m["topic"] == "estop") < estop < trip < held < refused < stop
    times = [t for _, t, _m in order]
    assert times == sorted(times), "log times go back"
    with capsys.disabled():
        print(f"\n{cycles} cycles of each arm recorded; file order: e-stop {estop}, group trip {trip}, left held "
              f"{held}, left refused {refused}, SIGTERM's stop {stop} of {len(order)} messages")

    assert cmd_info(argparse.Namespace(recording=files[0], urdf=None, json=False)) == 0
    info = capsys.readouterr().out
    assert "recorded by teleop" in info and "arms: left, right" in info and "complete" in info, info
    for topic in ("/left/teleop/acks", "/right/teleop/commands", "/group/events"):
        assert f"  {topic} " in info, info
    if find_spec("matplotlib") is not None:
        from hebictl.cli.run_cmd import cmd_plot

        assert cmd_plot(argparse.Namespace(recording=files[0], output=tmp_path / "s.png", layout=False)) == 0
        for name in ("left", "right"):
            assert (tmp_path / f"s-{name}.png").stat().st_size > 10_000
            assert len(load_recorder(files[0], name)[0]) == cycles


@pytest.mark.parametrize("flag", [["--app", "jog"], ["--foxglove"]])
def test_flags_a_multi_arm_config_does_not_take_yet_are_refused_before_any_arm_opens(flag, capsys):
    assert main(["teleop", str(MULTI), *flag]) == 2
    err = capsys.readouterr().err
    assert flag[0] in err and "multi-arm config" in err, err


@pytest.mark.parametrize(("flag", "value"), [("--record-rotate-mb", "0"), ("--record-mode", "0777")])
def test_a_bad_recording_flag_on_a_multi_arm_config_is_refused_before_any_arm_opens(flag, value, tmp_path, capsys):
    assert main(["teleop", str(MULTI), "--record", str(tmp_path / "rec"), flag, value]) == 2
    err = capsys.readouterr().err
    assert flag in err, err
    assert not (tmp_path / "rec").exists()


def test_a_status_with_the_group_object_passes_the_status_schema():
    from hebictl.teleop.state_schema import validate

    body = {"status": "online", "group": {"arms": ["left", "right"], "held": True, "by": "right",
                                          "cause": "estop: e-stop engaged", "time": 1.0}}
    assert validate("status", json.dumps(body))["group"]["by"] == "right"
