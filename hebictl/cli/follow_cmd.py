"""``hebictl follow``: a leader arm and a follower arm in one process (hebictl.control.follow), with
the demonstrations optionally recorded as a LeRobot v3.0 dataset (hebictl.datasets).

One config gives both arms (two instances of it: on simulated backends); two give the leader and the
follower; a multi-arm config (docs/multi_arm.md) gives two named arms (``--leader NAME --follower
NAME``, by default the arms named ``leader`` and ``follower``), built as ``hebictl run`` builds them:
on ``sim`` in one MuJoCo scene at their base poses, and each arm's collision world holding the other
(updated every cycle from its measured joints), so the follower's alignment goal is refused and its
follow steps slow and stop short where they would run into the leader.

The leader idles in gravity compensation (a hand moves it) and feels the follower's contacts; the
follower aligns (GELLO's gate, then a minimum-jerk goal) and follows. Every period of following is
one episode of ``--record-dataset`` (its frames at ``--fps``, its health judged by ALOHA's rule); a
fault of either arm holds both, ends the episode and exits 1.

The operator says when to follow and what to keep with one-letter commands on stdin (``--keys``)
or with the buttons of an input device (``--input``: a real Mobile IO, the MQTT input topic, a
script or a replay, as ``hebictl app`` takes them; :data:`BUTTONS`): B1 follow / stop following,
B2 discard the episode, B3 re-record, B4 clear a fault, B8 quit, each on its press. The device's
LED shows the state (green following, red an arm faulted or lost, yellow otherwise).
"""

from __future__ import annotations

import argparse
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.errors import UsageError
from hebictl.hardware.registry import available_backends


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("follow", help="leader-follower: a follower arm takes a leader arm's joint positions")
    p.add_argument("leader", type=Path, help="the leader's robot config (alone: both arms from it), or a multi-arm "
                                             "config (ARMS.multi.yaml) naming both arms")
    p.add_argument("follower", type=Path, nargs="?", help="the follower's robot config (default: the leader's)")
    p.add_argument("--leader", dest="leader_arm", default=None, metavar="NAME",
                   help="with a multi-arm config: the leader arm's name (default: leader)")
    p.add_argument("--follower", dest="follower_arm", default=None, metavar="NAME",
                   help="with a multi-arm config: the follower arm's name (default: follower)")
    p.add_argument("--backend", default="mock", choices=available_backends(), help="backend of both arms")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--align-threshold", type=float, default=0.8,
                   help="[rad] refuse to follow while a joint is further than this from the leader")
    p.add_argument("--max-step", type=float, default=0.02,
                   help="[rad] the follower's command moves at most this far per cycle")
    p.add_argument("--haptic-gain", type=float, default=1.0,
                   help="leader effort per N·m of the follower's external-torque estimate (0: off)")
    p.add_argument("--joint-map", type=str, default=None, metavar="I,J,...",
                   help="leader joint of each follower joint (default: the same joint)")
    p.add_argument("--record-dataset", type=Path, default=None, metavar="DIR",
                   help="record each period of following as an episode of a LeRobot v3.0 dataset in DIR (new)")
    p.add_argument("--task", type=str, default=None, help="the demonstrated task (required with --record-dataset)")
    p.add_argument("--fps", type=int, default=50, help="dataset frames per second")
    p.add_argument("--keys", action="store_true",
                   help="read one-letter commands from stdin, one per line: "
                        + "; ".join(f"{k} {v}" for k, v in KEYS.items()))
    p.add_argument("--input", default=None, metavar="SPEC",
                   help="the same commands from an input device's buttons (B1 follow/stop, B2 discard, "
                        "B3 re-record, B4 clear, B8 quit): mobileio[:FAMILY/NAME] | mqtt://HOST:PORT[/ARM_ID] | "
                        "script:FILE.json | replay:RUN.mcap")
    p.set_defaults(func=cmd_follow)


def check_follow_flags(args: argparse.Namespace) -> list[int] | None:
    """Flag values, before any arm is opened; returns the joint map's sources."""
    if args.seconds is not None and not args.seconds > 0:
        raise UsageError(f"--seconds must be > 0, got {args.seconds}")
    if not 0 < args.align_threshold <= 3.2:
        raise UsageError(f"--align-threshold must be in (0, 3.2] rad, got {args.align_threshold}")
    if not 0 < args.max_step <= 0.2:
        raise UsageError(f"--max-step must be in (0, 0.2] rad, got {args.max_step}")
    if not 0 <= args.haptic_gain <= 10:
        raise UsageError(f"--haptic-gain must be in [0, 10], got {args.haptic_gain}")
    if args.record_dataset is not None and not (args.task or "").strip():
        raise UsageError("--record-dataset needs --task \"...\" (the demonstrated task)")
    if not 1 <= args.fps <= 1000:
        raise UsageError(f"--fps must be 1-1000, got {args.fps}")
    if args.joint_map is None:
        return None
    try:
        return [int(s) for s in args.joint_map.split(",")]
    except ValueError:
        raise UsageError(f"--joint-map: comma-separated joint indices, got {args.joint_map!r}") from None


class DemoRecorder:
    """Episodes from the leader-follower's FOLLOW periods: frames of the follower's feedback, the
    leader's mapped position as the action, and the safety flags."""

    def __init__(self, writer: Any, lf: Any) -> None:
        self.writer, self.lf = writer, lf
        self.recording = False
        self.saved: list[Any] = []

    def tick(self, now: float) -> None:
        from hebictl.control.follow import FollowState
        from hebictl.control.safety import ArmState
        from hebictl.datasets import Frame

        following = self.lf.state is FollowState.FOLLOW
        if following and not self.recording:
            self.writer.start_episode(now)
            self.recording = True
        elif not following and self.recording:
            self.stop()
        if not self.recording:
            return
        f = self.lf.follower
        fb = f.last_feedback
        contact = bool(f.monitors.contact.latched)   # from the contact event until the push is gone
        self.writer.offer(now, Frame(
            position=fb.position, velocity=np.nan_to_num(fb.velocity), effort=np.nan_to_num(fb.effort),
            action=self.lf.map.to_follower(self.lf.leader.last_feedback.position), contact=contact,
            hold=f.state is not ArmState.RUNNING,
            tracking_error=float(np.max(np.abs(f.pending_command.position - fb.position)))))

    def discard(self, now: float) -> None:
        """Drop the open episode; while following, a new one starts at once."""
        if self.recording:
            self.writer.discard_episode()
            self.writer.start_episode(now)

    def rerecord(self, now: float) -> None:
        """Drop the open episode, or else the last saved one, and record again (from now, if following)."""
        dropped = self.writer.rerecord(now)
        if dropped is not None:
            self.saved = [s for s in self.saved if s.episode_index != dropped]
        self.recording = True
        if self.lf.state.value != "follow":
            self.writer.discard_episode()
            self.recording = False

    def stop(self) -> None:
        if self.recording:
            saved = self.writer.stop_episode()
            if saved is not None:
                self.saved.append(saved)
            self.recording = False


class FollowArms:
    """The two arms ``hebictl follow`` runs, their robot configs, and (from a multi-arm config) the
    :class:`~hebictl.wiring.multi.MultiArms` they belong to."""

    def __init__(self, leader: Any, follower: Any, leader_cfg: Any, follower_cfg: Any, multi: Any = None) -> None:
        self.leader, self.follower, self.leader_cfg, self.follower_cfg = leader, follower, leader_cfg, follower_cfg
        self.multi = multi

    @property
    def observe(self) -> Any:
        """What :class:`~hebictl.control.follow.LeaderFollower` calls each cycle (None: one-arm configs)."""
        return self.multi.observe if self.multi is not None else None

    def close(self) -> None:
        if self.multi is not None:
            self.multi.close()
            return
        self.leader.close()
        self.follower.close()


def multi_arm_names(args: argparse.Namespace, names: list[str]) -> tuple[str, str]:
    """The leader's and the follower's names in a multi-arm config of ``names`` (``--leader``,
    ``--follower``; by default ``leader`` and ``follower``); a UsageError naming the config's arms."""
    leader, follower = args.leader_arm or "leader", args.follower_arm or "follower"
    listed = ", ".join(names)
    for flag, name in (("--leader", leader), ("--follower", follower)):
        if name not in names:
            raise UsageError(f"{flag} {name}: no such arm in {args.leader} (its arms: {listed}); name the "
                             "leader and the follower with --leader NAME --follower NAME")
    if leader == follower:
        raise UsageError(f"--leader and --follower are both {leader}: two different arms are needed")
    if len(names) != 2:
        raise UsageError(f"{args.leader} has {len(names)} arms ({listed}); hebictl follow runs a config of two")
    return leader, follower


def open_follow_arms(args: argparse.Namespace, clock: Any) -> FollowArms:
    """The leader and the follower on ``args.backend``: from one or two robot configs, or from a
    multi-arm config (module doc: one scene on ``sim``, each arm an obstacle for the other)."""
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.multi_config import is_multi_arm_config, load_multi_arm_config

    if is_multi_arm_config(args.leader):
        from hebictl.wiring.multi import arms_from_multi_config

        if args.follower is not None:
            raise UsageError(f"{args.leader} is a multi-arm config: name its arms with --leader NAME --follower "
                             f"NAME, not a second config ({args.follower})")
        mcfg = load_multi_arm_config(args.leader)
        if mcfg.base is not None:   # its wheels would be opened and never commanded
            raise UsageError(f"{args.leader.name} names a mobile base ({mcfg.base.name}): follow does not run a "
                             "base; hebictl run holds or drives it (docs/multi_arm.md#a-mobile-base)")
        lead, follow = multi_arm_names(args, [a.name for a in mcfg.arms])
        multi = arms_from_multi_config(Arm, mcfg, args.backend, clock=clock)
        cfgs = {a.name: a.config for a in mcfg.arms}
        return FollowArms(multi.arms[lead], multi.arms[follow], cfgs[lead], cfgs[follow], multi)
    if args.leader_arm is not None or args.follower_arm is not None:
        raise UsageError("--leader/--follower name the arms of a multi-arm config; "
                         f"{args.leader} is a robot config")
    leader_cfg = load_config(args.leader)
    follower_cfg = load_config(args.follower) if args.follower is not None else leader_cfg
    leader = Arm.from_config(leader_cfg, backend=args.backend, clock=clock)
    try:
        follower = Arm.from_config(follower_cfg, backend=args.backend, clock=clock)
    except BaseException:
        leader.close()
        raise
    return FollowArms(leader, follower, leader_cfg, follower_cfg)


def cmd_follow(args: argparse.Namespace) -> int:
    from hebictl.control.follow import FollowSettings, FollowState, JointMap, LeaderFollower
    from hebictl.hardware.clock import MonotonicClock

    source = check_follow_flags(args)
    clock = MonotonicClock()
    arms = open_follow_arms(args, clock)
    leader, follower, follower_cfg = arms.leader, arms.follower, arms.follower_cfg
    recorder = None
    try:
        jmap = JointMap.build(leader.dof, follower.dof, source)
        writer = None
        if args.record_dataset is not None:
            from hebictl.datasets import LeRobotWriter

            writer = LeRobotWriter(args.record_dataset, fps=args.fps, joint_names=follower.model.joint_names,
                                   task=args.task, robot_type=f"hebi:{Path(follower_cfg.path).stem}")
        leader.set_idle("gravcomp")   # a hand moves the leader
        lf = LeaderFollower(leader, follower, joint_map=jmap, observe=arms.observe, settings=FollowSettings(
            align_threshold=args.align_threshold, max_relative_target=args.max_step, haptic_gain=args.haptic_gain))
        recorder = DemoRecorder(writer, lf) if writer is not None else None
        buttons = None
        if args.input is not None:
            from hebictl.cli.app_cmd import open_source

            buttons = ButtonCommands(open_source(args.input, follower, follower_cfg))
        keys: queue.Queue[str] | None = start_key_reader() if args.keys else None
        if keys is None and buttons is not None:
            keys = queue.Queue()   # the buttons' commands only
        try:
            follow_loop(lf, clock, recorder, args.seconds, keys, buttons)
        finally:
            if buttons is not None:
                buttons.source.close()
    finally:
        if recorder is not None:
            recorder.stop()
            recorder.writer.close()
        arms.close()
    for e in lf.events:
        print(f"{e.time - lf.events[0].time:8.3f} s  {e.kind:10s} {e.arm:9s} {e.detail}")
    if recorder is not None:
        for s in recorder.saved:
            verdict = "healthy" if s.health.healthy else "UNHEALTHY: " + "; ".join(s.health.reasons)
            print(f"episode {s.episode_index}: {s.length} frames, {s.health.mean_rate_hz:.1f} Hz, "
                  f"{s.health.deadline_misses} missed, {s.health.safety_events} safety events: {verdict}")
    return 1 if lf.state is FollowState.DISCONNECTED or any(e.kind == "fault" for e in lf.events) else 0


#: one-letter commands read from stdin (one per line) while running
KEYS = {"f": "follow / stop following", "d": "discard the episode", "r": "re-record (drop the open or last episode)",
        "c": "clear a fault (then follow again: it re-aligns)", "q": "quit"}


def start_key_reader() -> queue.Queue[str]:
    """Lines of stdin as commands, read on a daemon thread (nothing is read when stdin is closed)."""
    keys: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            key = line.strip().lower()[:1]
            if key in KEYS:
                keys.put(key)

    threading.Thread(target=read, name="follow-keys", daemon=True).start()
    return keys


def apply_key(key: str, lf: Any, recorder: DemoRecorder | None, now: float) -> bool:
    """Do what ``key`` asks; False for quit."""
    if key == "q":
        return False
    if key == "f":
        if lf.state.value in ("follow", "aligning"):
            lf.request_stop()
        else:
            lf.request_follow()
    elif key == "c":
        lf.clear()
    elif recorder is not None and key == "d":
        recorder.discard(now)
    elif recorder is not None and key == "r":
        recorder.rerecord(now)
    return True


#: an input device's buttons (HEBI's numbering, 1-8) as follow's one-letter commands, on each press
BUTTONS = {1: "f", 2: "d", 3: "r", 4: "c", 8: "q"}
#: the device's LED per follow state (HEBI's colour names)
LEDS = {"follow": "green", "disconnected": "red", "exit": "transparent"}   # the others (waiting): yellow
BUTTON_TEXT = "B1 follow/stop  B2 discard  B3 re-record  B4 clear  B8 quit"


class ButtonCommands:
    """Presses on an input source (hebictl.inputs: Mobile IO, MQTT, script, replay) as the
    one-letter commands of :data:`KEYS`: a command per button going down (a held button is one
    press; the first sample's held buttons are not presses, so nothing fires from a button that was
    down before the run), and the follow state on the device's LED when it changes."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.last: tuple[int, ...] | None = None
        self.shown: str | None = None

    def poll(self, now: float, state: str) -> list[str]:
        """The commands pressed since the last poll; shows ``state`` (a follow state's value)."""
        if state != self.shown:
            self.source.indicate(LEDS.get(state, "yellow"), f"{state}\n{BUTTON_TEXT}")
            self.shown = state
        sample = self.source.poll(now)
        if sample is None:
            return []
        buttons = tuple(sample.buttons)
        before, self.last = self.last, buttons
        if before is None:
            return []
        return [BUTTONS[i + 1] for i, (b, p) in enumerate(zip(buttons, before, strict=False))
                if b and not p and i + 1 in BUTTONS]


#: [s] how often IDLE asks to follow again (the gate refuses while the leader is too far)
RETRY_S = 1.0


def follow_loop(lf: Any, clock: Any, recorder: DemoRecorder | None, seconds: float | None,
          keys: queue.Queue[str] | None = None, buttons: ButtonCommands | None = None) -> None:
    """Step until ``seconds`` pass or a signal; then hold both arms for a moment and return. With
    ``keys`` (stdin, and ``buttons`` pressed on an input device) the operator says when to follow."""
    from hebictl.control.follow import FollowState

    stop = {"now": False}

    def on_signal(signum: int, frame: Any) -> None:
        stop["now"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        end = None if seconds is None else clock.now() + seconds
        asked = -RETRY_S
        auto = keys is None   # without keys: follow whenever idle; with them, the operator says when
        if not auto:
            lf.request_follow()
        while not stop["now"] and (end is None or clock.now() < end) and (keys is not None or
                                                                          lf.state is not FollowState.DISCONNECTED):
            lf.step()
            if buttons is not None and keys is not None:
                for key in buttons.poll(clock.now(), lf.state.value):
                    keys.put(key)
            while keys is not None and not keys.empty():
                if not apply_key(keys.get_nowait(), lf, recorder, clock.now()):
                    stop["now"] = True
            if auto and lf.state is FollowState.IDLE and clock.now() - asked >= RETRY_S:
                lf.request_follow()   # the gate may refuse: asked again while the operator brings the leader closer
                asked = clock.now()
            if recorder is not None:
                recorder.tick(clock.now())
        if recorder is not None:
            recorder.stop()
        lf.request_exit()
        for _ in range(20):   # brake to the hold (both arms keep their last command after exit)
            lf.step()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
