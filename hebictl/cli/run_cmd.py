"""``hebictl run``, ``hebictl check-config`` and ``hebictl plot``.

``run`` is the main job: open the arm from a robot config, move to the config's home position
(``user_data.home_position``), follow an optional goal, hold under gravity compensation. Every
move is admitted (with its path check) before the loop starts; the loop thread only runs the
cycle, at SCHED_FIFO where the system grants it (``--rt-priority``, ``--cpu``;
:mod:`hebictl.control.realtime`).

Stopping. The arm stops with the ``hold`` behaviour (brake within the rated deceleration, then
hold under gravity compensation), then:

* Ctrl-C (SIGINT), an operator at a terminal: holds until a second Ctrl-C, or ``--stop-hold`` s;
* SIGTERM (systemd, ``docker stop``, ``timeout``): holds ``--stop-hold`` s, by default
  :data:`TERM_HOLD_S`, well inside systemd's 90 s stop timeout, then exits with the summary; when
  the config has ``user_data.rest_position`` and no ``--stop-hold`` is given it parks there instead
  (a slow move through the admission, then a short hold, bounded: :mod:`hebictl.control.park`);
* a safety stop or an error: as Ctrl-C when stdin is a terminal, else as SIGTERM (an unattended
  run never waits for a keystroke; it parks only after a stop that left the arm controllable,
  ``hebictl.control.park.PARK_AFTER``); a SIGTERM during that hold ends it within :data:`TERM_HOLD_S`.

After the process exits the modules' command lifetime ends and a brakeless arm goes limp (see
the README's Safety section). Progress and loop statistics are shown live with rich.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import math
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.cli.output import console, grant_notice, loop_line, say, tolerant
from hebictl.errors import CommandRejected, ConfigError, HardwareError, HebictlError, InstallationError, UsageError
from hebictl.hardware.registry import available_backends

log = logging.getLogger("hebictl.run")


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run an arm: home, follow a goal, hold (mock, sim or real modules)")
    run.add_argument("config", type=Path, nargs="?", help="robot config YAML (default: the bundled 6-DoF kit), or a "
                     "multi-arm config (*.multi.yaml: every arm in one loop under one supervisor; docs/multi_arm.md)")
    run.add_argument("--backend", default="mock", choices=available_backends(),
                     help="mock: simulated in Python; sim: MuJoCo; hebi: real modules; hebi-imitation: hebi-py's")
    run.add_argument("--goal", type=float, nargs="+", metavar="RAD", help="joint positions to move to after home")
    run.add_argument("--arm-goal", nargs="+", action="append", metavar="NAME RAD",
                     help="multi-arm config: joint positions arm NAME moves to after home (repeat per arm)")
    run.add_argument("--no-arm-obstacles", action="store_true",
                     help="multi-arm config: each arm checks only its own workspace, not the other arms "
                          "(a demonstration of what the check prevents; never on hardware)")
    run.add_argument("--base-velocity", type=float, nargs="+", metavar="RAD/S",
                     help="multi-arm config with a base: the wheels' velocity [rad/s, one per wheel] for "
                          "--base-time s once the base has feedback, then zero (default: the base holds zero)")
    run.add_argument("--base-time", type=float, default=1.0, metavar="S",
                     help="multi-arm config with a base: how long --base-velocity is driven (default 1 s)")
    run.add_argument("--goal-time", type=float, default=None, metavar="S",
                     help="seconds for the goal move; refused before moving if faster than the arm may go "
                          "(default: estimated from the limits)")
    run.add_argument("--hold", type=float, default=2.0, metavar="S",
                     help="seconds to hold at the end under gravity compensation (inf: until Ctrl-C)")
    run.add_argument("--rate", type=float, default=None, metavar="HZ",
                     help="control rate [Hz] (default: the config's feedback_frequency; the loop is then paced "
                          "by the feedback read)")
    run.add_argument("--plot", type=Path, metavar="PNG",
                     help="save a plot of commanded vs. measured position and effort (default: no plot)")
    run.add_argument("--record", type=Path, metavar="RUN.mcap|RUN.npz",
                     help="save the run as .mcap (Foxglove; see docs/recording.md) or .npz (plot either later "
                          "with hebictl plot) (default: not recorded)")
    run.add_argument("--record-mode", default="0600", metavar="MODE",
                     help="file mode of the recording (.mcap or .npz; default 0600: yours only; 0640 shares it "
                          "with your group; docs/recording.md)")
    run.add_argument("--no-home", action="store_true", help="skip the move to user_data.home_position")
    run.add_argument("--stop-hold", type=float, default=None, metavar="S",
                     help="after Ctrl-C/SIGTERM, an error or a safety stop, hold this many seconds before "
                          f"exiting (default: Ctrl-C until a second Ctrl-C; SIGTERM {TERM_HOLD_S:g} s, or, when "
                          "the config has user_data.rest_position, a slow park there and exit within 60 s; a "
                          f"safety stop as Ctrl-C on a terminal, else {TERM_HOLD_S:g} s or the park; "
                          "docs/stopping.md). Given, it holds instead of parking")
    add_realtime_flags(run)
    add_paced_clock_flag(run)
    run.add_argument("--quiet", action="store_true", help="no live display, no notice of a stop you asked for "
                     "(errors and safety stops are still said)")
    run.set_defaults(func=cmd_run)

    chk = sub.add_parser("check-config", help="build what run builds from a robot config (no hardware); "
                                         "exit 2 on any error")
    chk.add_argument("config", type=Path)
    chk.set_defaults(func=cmd_check_config)

    plot = sub.add_parser("plot", help="plot a recording saved with hebictl run --record (.npz or .mcap)")
    plot.add_argument("recording", type=Path)
    plot.add_argument("-o", "--output", type=Path, default=Path("hebictl-run.png"), help="image file to write")
    plot.add_argument("--layout", action="store_true",
                      help=".mcap only: draw the Foxglove layout's panels (3D frames, joints, mode, events)")
    plot.set_defaults(func=cmd_plot)


#: the environment variable that sets ``--rt-priority``'s default
PRIORITY_ENV = "HEBICTL_RT_PRIORITY"


def add_realtime_flags(p: argparse.ArgumentParser) -> None:
    """``--rt-priority`` and ``--cpu`` (run and teleop)."""
    from hebictl.control.realtime import DEFAULT_PRIORITY

    p.add_argument("--rt-priority", type=int, default=None, metavar="N",
                   help=f"SCHED_FIFO priority 1-99 of the control loop's thread, with memory locked, where the "
                        f"system permits (0: normal scheduling) (default: ${PRIORITY_ENV} if set, else "
                        f"{DEFAULT_PRIORITY})")
    p.add_argument("--cpu", type=int, default=None, metavar="N",
                   help="pin the control loop's thread to CPU N (default: any)")


#: backends whose modules (or hebi-py's imitation of them) keep real time: no --paced-clock
REAL_TIME_BACKENDS = frozenset({"hebi", "hebi-imitation"})


def add_paced_clock_flag(p: argparse.ArgumentParser) -> None:
    """``--paced-clock`` (run and teleop): see :func:`loop_clock`."""
    p.add_argument("--paced-clock", action="store_true",
                   help="simulated backends only: simulated time no faster than real time, stretched when the "
                        "process is late (measurements on a loaded machine); refused with real modules")


def loop_clock(args: argparse.Namespace) -> Any:
    """The control loop's clock: the wall clock (``MonotonicClock``), or with ``--paced-clock`` a
    :class:`~hebictl.hardware.clock.PacedClock`, whose simulated time a late process stretches
    instead of skipping, so a loaded machine cannot make a simulated arm miss its command
    lifetime (a ``control_gap`` stop a real arm would have had for a real reason). Refused with
    backends that keep real time themselves (:data:`REAL_TIME_BACKENDS`)."""
    from hebictl.hardware.clock import MonotonicClock, PacedClock

    if args.paced_clock and args.backend in REAL_TIME_BACKENDS:
        raise UsageError(f"--paced-clock is for simulated backends; {args.backend} runs in real time")
    return PacedClock() if args.paced_clock else MonotonicClock()


def default_rt_priority() -> int:
    """``--rt-priority``'s default: ``$HEBICTL_RT_PRIORITY`` where the environment sets it (a service
    unit, a test harness that runs the CLI in its own process), else the built-in default."""
    from hebictl.control.realtime import DEFAULT_PRIORITY

    text = os.environ.get(PRIORITY_ENV, "").strip()
    if not text:
        return DEFAULT_PRIORITY
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"${PRIORITY_ENV}={text!r} is not a priority (0 = off, 1-99)") from None
    if not 0 <= value <= 99:
        raise UsageError(f"${PRIORITY_ENV}={text} is out of range (0 = off, 1-99)")
    return value


def realtime_request(args: argparse.Namespace) -> Any:
    """The loop thread's :class:`~hebictl.control.realtime.RealtimeRequest` from the flags."""
    from hebictl.control.realtime import RealtimeRequest

    if args.rt_priority is None:
        args.rt_priority = default_rt_priority()
    if not 0 <= args.rt_priority <= 99:
        raise UsageError(f"--rt-priority {args.rt_priority} is out of range (0 = off, 1-99)")
    if args.cpu is not None and args.cpu < 0:
        raise UsageError(f"--cpu {args.cpu} is out of range (a CPU number, 0 or more)")
    return RealtimeRequest(priority=args.rt_priority, cpu=args.cpu)


def cmd_check_config(args: argparse.Namespace) -> int:
    """Everything ``run`` builds from the config, built once without hardware (on the mock backend).

    Model, every gains role, the cross-checks against the model, joint limits and safety settings,
    and the plugins (``assemble``, as ``run`` does); then the home position against the limits.
    Any error exits 2; warnings (ConfigWarning, format warnings) are printed and exit 0.
    """
    from hebictl.config import config_warning, gains_file, load_config
    from hebictl.gains import load_gains
    from hebictl.wiring.assembly import assemble

    cfg = load_config(args.config)
    if cfg.hrdf is None:
        raise ConfigError("no hrdf given", file=cfg.path, key="hrdf")
    gains = {k: load_gains(gains_file(cfg, k)) for k in cfg.gains}
    parts = assemble(cfg, "mock")
    try:
        model = parts.model
        for role, g in gains.items():
            if role != "default" and g.width not in (1, model.dof):
                raise ConfigError(f"gains file {g.path} has {g.width} values per gain, the model has "
                                  f"{model.dof} joints", file=cfg.path, key=f"gains.{role}")
        from hebictl.control.park import rest_position

        for key, pose, then in (("home_position", home_position(cfg, model.dof), "run will stop at the limit"),
                                ("rest_position", rest_position(cfg, model.dof), "a SIGTERM will hold, not park")):
            if pose is None:
                continue
            lo, hi = parts.limits.position_min, parts.limits.position_max
            outside = [i for i in range(model.dof) if not lo[i] <= pose[i] <= hi[i]]
            if outside:
                config_warning(cfg.path, f"user_data.{key}", "outside the joint limits at joint(s) "
                               + ", ".join(f"{i} ({pose[i]:g} not in [{lo[i]:g}, {hi[i]:g}])" for i in outside)
                               + f"; {then}")
    finally:
        parts.backend.close()
    if "sim" in cfg.user_data and importlib.util.find_spec("mujoco") is not None:
        assemble(cfg, "sim").backend.close()  # user_data.sim: the simulator's own options, checked by it
    print(f"ok: {cfg.path}: {len(cfg.names)} modules {', '.join(cfg.names)}; hrdf {cfg.hrdf.name} "
          f"({model.dof} DoF, {model.total_mass:.3f} kg); gains {', '.join(gains) or 'none'}; "
          f"plugins {', '.join(p.type for p in cfg.plugins) or 'none'}")
    lim = parts.limits
    print(f"joint limits (config user_data.joint_limits and the model); stop behaviour {parts.safety.stop_behaviour}:")
    for i, name in enumerate(model.joint_names):
        print(f"  {name:<16} [{lim.position_min[i]:+.3f}, {lim.position_max[i]:+.3f}] rad   "
              f"{lim.velocity_max[i]:.2f} rad/s   {lim.acceleration_max[i]:.1f} rad/s²   {lim.effort_max[i]:.1f} N·m")
    from hebictl.control.realtime import RealtimeRequest, probe

    grant = probe(RealtimeRequest(priority=default_rt_priority()))
    print(grant.line().replace("real-time:", "real-time (run/teleop's loop thread would get):", 1))
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from hebictl.control.recorder import Recorder
    from hebictl.plot import plot_recording

    if args.recording.suffix == ".mcap" and args.layout:
        from hebictl.recording.overview import render_layout

        out = render_layout(args.recording, args.output)
    elif args.recording.suffix == ".mcap":
        from hebictl.cli.run_multi import plot_path
        from hebictl.recording.reader import load_recorder, read_run, recorded_arms

        run = read_run(args.recording)
        arms = recorded_arms(run)
        if arms:  # a multi-arm recording: one figure per arm, OUT-<arm>.png
            for arm in arms:
                rec, events = load_recorder(args.recording, arm, run)
                out = plot_path(args.output, arm)
                plot_recording(rec, out, title=f"{args.recording}: arm {arm}", events=_marked(events))
                print(f"wrote {out}")
            return 0
        rec, events = load_recorder(args.recording, run=run)
        out = plot_recording(rec, args.output, title=str(args.recording), events=_marked(events))
    else:
        out = plot_recording(Recorder.load(args.recording), args.output, title=str(args.recording))
    print(f"wrote {out}")
    return 0


def _marked(events: list[Any]) -> list[Any]:
    """The events a plot marks: all but the recorder's own start and close notes."""
    return [e for e in events if e.level != "INFO" or e.source != "hebictl.recording"]


def home_position(cfg: Any, dof: int) -> np.ndarray | None:
    """The config's ``user_data.home_position`` (None: none given), one value per joint."""
    home = cfg.user_data.get("home_position")
    if home is None:
        return None
    arr = np.asarray(home, dtype=float)
    if arr.shape != (dof,):
        raise ConfigError(f"home_position needs {dof} values, got {arr.size}", file=cfg.path,
                          key="user_data.home_position")
    return arr


def cmd_run(args: argparse.Namespace) -> int:
    """Open the arm, check everything the run will ask of it, then home, follow the goal and hold.

    The checks (flag values, output folders, the goal against the arm's own admission) run before
    the first command is sent: a refused run has not moved. An error during the run brakes and
    holds for ``--stop-hold`` seconds, then the recording and the summary are written and the
    exit code is non-zero. Nothing printed is needed for the arm to stop: a failed write (stdout or
    stderr closed) is ignored."""
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.loop import FixedRateLoop, LoopStats, WaitMeter
    from hebictl.control.recorder import Recorder
    from hebictl.resources import bundled_config

    check_run_flags(args)
    from hebictl.multi_config import is_multi_arm_config

    if args.config is not None and is_multi_arm_config(args.config):
        from hebictl.cli.run_multi import cmd_run_multi

        return cmd_run_multi(args, loop_clock(args), TERM_HOLD_S, home_position, realtime_request(args))
    clock = loop_clock(args)
    t_start = clock.now()  # event times and the summary count from here
    cfg = load_config(args.config or bundled_config())
    arm = Arm.from_config(cfg, backend=args.backend, clock=clock)
    mcap: Any = None
    mcap_done: Any = None
    run: RunSteps | None = None
    loop: Any = None
    try:
        if hasattr(arm.events, "start"):
            arm.events.start = t_start
        rate = args.rate or cfg.feedback_frequency
        windows: list[LoopStats] = []

        def report(stats: LoopStats) -> None:
            windows.append(stats)  # one per second: the summary covers the whole run
            if mcap is not None:
                mcap.loop_stats(stats)

        meter = WaitMeter(clock)
        # time waiting for feedback, apart from work: this one backend's read is wrapped on purpose
        arm.backend.read = meter.wrap(arm.backend.read)  # type: ignore[method-assign]  # instance-level wrap
        # a backend whose read blocks until the next sample paces the loop, as hebi.arm runs: sleeping
        # to a deadline and then waiting for feedback would make cycles late by the clocks' phase.
        # hebi's imitation group answers at once: paced by it, the loop would spin at ~16 kHz. A backend
        # written before the property (a plug-in's) keeps the old rule: its read is taken to wait.
        waits = getattr(arm.backend, "read_waits_for_feedback", True)
        paced = waits and rate >= arm.backend.feedback_frequency * (1 - 1e-9)
        loop = FixedRateLoop(lambda: False, rate, clock, paced_by_step=paced, wait=meter, report=report,
                             realtime=realtime_request(args), on_grant=grant_notice(args))
        # memory locked and the heap frozen now, before the moves are planned from the last feedback
        # read: that read is not followed by this set-up's 0.4 s or more before the first cycle
        # (the scheduling itself is granted when the loop starts, on its thread)
        loop.prepare()
        phases = plan_phases(arm, None if args.no_home else home_position(cfg, arm.dof), args)
        npz = args.record is not None and args.record.suffix != ".mcap"
        rec = Recorder(arm.dof, arm.model.joint_names) if (args.plot or npz) else None
        mcap = _mcap_recorder(args, arm, cfg, rate)  # opened before the loop: a file that fails has moved nothing
        from hebictl.control.park import rest_position

        run = RunSteps(arm, phases, clock, rec, args, rest_position(cfg, arm.dof))
        loop.step = run.step
        run.mcap = mcap
        run.npz_file = _npz_file(args) if npz else None  # made before the loop too, written at the end
        run.t_start = t_start
        _run_loop(loop, run, windows, rate, args)
        run.realtime = loop.grant
    finally:
        if loop is not None:
            loop.release()
        arm.close()
        if mcap is not None:  # the writer thread drains and closes the file
            mcap_done = mcap.close()
        if run is not None and run.feed is not None:  # the recorder's writer thread records what is left
            run.feed.close()
    assert run is not None  # set before the loop; an exception before it has propagated
    run.mcap_done = mcap_done
    _finish(arm, cfg, run, loop, windows, rate, clock.now() - t_start, rec, args, paced)
    return exit_code(arm, run)


def exit_code(arm: Any, run: RunSteps) -> int:
    """``hebictl run``'s exit status: 2 after an error, 1 after a safety stop (or any event not one
    an operator or a stop asked for: a park's clear and goal included as normal), else 0."""
    if run.error is not None:
        return 2
    normal = ("interrupt", "terminate", "release", "hold", "goal", "cleared")
    return 1 if run.failed or any(e.kind not in normal for e in arm.events.events) else 0


#: with no way to ask for a second Ctrl-C (stderr gone), an endless --stop-hold ends after this
UNATTENDED_HOLD_S = 1.0
#: [s] the hold after SIGTERM (and after a safety stop or an error with no terminal) when --stop-hold
#: is not given: long enough to see the brake end and the hold settle, well inside systemd's 90 s
#: TimeoutStopSec (and docker stop's 10 s) before the SIGKILL
TERM_HOLD_S = 5.0


def check_run_flags(args: argparse.Namespace) -> None:
    """Flag values and output paths, before the arm is opened."""
    for flag, value, ok in (("--goal-time", args.goal_time, args.goal_time is None or 0 < args.goal_time < math.inf),
                            ("--hold", args.hold, args.hold >= 0),
                            ("--stop-hold", args.stop_hold, args.stop_hold is None or args.stop_hold >= 0),
                            ("--rate", args.rate, args.rate is None or 0 < args.rate < math.inf)):
        if not ok:
            raise UsageError(f"{flag} {value:g} is out of range (seconds/Hz must be > 0; --hold and --stop-hold "
                             "may be 0 or inf)")
    if args.goal is not None and not all(math.isfinite(x) for x in args.goal):
        raise UsageError("--goal positions must be finite numbers")
    realtime_request(args)
    if args.plot is not None:
        _require_plotting()
    for flag, path in (("--plot", args.plot), ("--record", args.record)):
        if path is None:
            continue
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            raise UsageError(f"{flag} {path}: is a folder; give a file name")
        if not folder.is_dir():
            raise UsageError(f"{flag} {path}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise UsageError(f"{flag} {path}: not writable")


def plan_phases(arm: Any, home: np.ndarray | None, args: argparse.Namespace) -> list[Phase]:
    """The run's phases, each goal admitted by the arm's own admission from where it will start.

    Home starts from the measured position, the goal from home (or from the measured position
    with ``--no-home``), both at rest. A goal beyond the limits, or a ``--goal-time`` faster than
    the arm may move, is refused here, before anything moves. The admitted trajectories are kept:
    the cycle that starts a phase hands its trajectory to the arm (:mod:`hebictl.control.handover`)
    instead of checking the path again inside the cycle."""
    from hebictl.control.admission import plan
    from hebictl.control.goal import Goal

    phases: list[Phase] = []
    if args.goal is not None and len(args.goal) != arm.dof:
        raise UsageError(f"--goal needs {arm.dof} positions ({', '.join(arm.model.joint_names)}), "
                         f"got {len(args.goal)}")
    for _ in range(50):  # the first feedback: where the first move starts
        arm.update()
        if arm.last_feedback.sequence > 0 and np.isfinite(arm.last_feedback.position).all():
            break
    else:
        raise HardwareError(f"no usable feedback from the {args.backend} backend; nothing was moved")
    start = np.array(arm.last_feedback.position, dtype=float)
    rest = np.zeros(arm.dof)
    moves = ([("home", home, None, "user_data.home_position")] if home is not None else []) + \
        ([("goal", np.array(args.goal, dtype=float), args.goal_time, "--goal")] if args.goal is not None else [])
    for name, target, duration, source in moves:
        goal = Goal(arm.dof)
        goal.add_waypoint(t=duration, position=target)
        try:
            admitted = plan(goal, 0.0, (start, rest, rest), arm.limits, arm.model)
        except CommandRejected as exc:
            hint = " (or a longer --goal-time)" if exc.reason == "too_fast" and duration is not None else ""
            raise UsageError(f"{source} refused before moving: {exc.reason}: {exc.detail}{hint}") from exc
        phases.append(Phase(name, target, duration, admitted))
        start = target
    phases.append(Phase("hold", None, args.hold))
    return phases


@dataclass
class Phase:
    """One part of a run: move to ``target`` (None: hold) in ``duration`` s (None: estimated)."""

    name: str
    target: np.ndarray | None
    duration: float | None
    admitted: Any = None  # the trajectory admitted before the loop (hebictl.trajectory.Trajectory)


class RunSteps:
    """The run's cycle: phases in order, signals, and errors, each answered by a braked hold.

    The signal handler only sets a flag; the stop happens in the cycle, so it never depends on a
    write succeeding or on where the main thread was interrupted."""

    def __init__(self, arm: Any, phases: list[Phase], clock: Any, rec: Any, args: argparse.Namespace,
                 rest: np.ndarray | None = None) -> None:
        from hebictl.control.recorder import RecorderFeed

        self.arm, self.phases, self.clock, self.rec, self.args = arm, phases, clock, rec, args
        #: the config's user_data.rest_position (None: none; SIGTERM then holds): hebictl.control.park
        self.rest = rest
        self.park: Any = None              # the park under way (hebictl.control.park.Park)
        #: the loop hands each sample to a writer thread that records it into ``rec`` (close() it after the loop)
        self.feed = RecorderFeed(rec) if rec is not None else None
        self.phase = 0
        self.phase_start: float | None = None
        self.signal: int | None = None    # first SIGINT/SIGTERM
        self.exit_now = False              # second one
        self.exit_at: float | None = None  # end of the stop hold
        self.error: BaseException | None = None  # an exception during the run
        self.failed = False                # the arm stopped itself (a safety event)
        self.t_start = clock.now()         # event times in the summary count from here
        self.mcap: Any = None              # --record RUN.mcap: hebictl.recording.writer.McapRecorder
        self.npz_file: Any = None          # --record RUN.npz: hebictl.recording.mcapfile.ExclusiveFile
        self.mcap_done: Any = None         # its closing counts (written, cycles, dropped)
        self.realtime: Any = None          # what the loop thread was granted (hebictl.control.realtime)
        self.answered = False              # the first signal has been acted on in a cycle
        #: an operator at a terminal can be asked for Ctrl-C (else a safety stop's hold is bounded)
        self.attended = bool(sys.stdin is not None and sys.stdin.isatty())

    def on_signal(self, signum: int, frame: Any) -> None:
        park = self.park
        if park is not None and park.phase in ("brake", "move"):
            park.abort = True  # a second signal during the park: brake, then exit (hebictl.control.park)
            return
        if self.signal is not None:
            self.exit_now = True  # second signal: leave the loop (the last command stays a hold)
            return
        self.signal = signum

    def step(self) -> bool:
        from hebictl.control.safety import EventKind

        arm = self.arm
        mcap = self.mcap
        try:
            if mcap is not None:
                mcap.cycle_start()
            arm.update()
            arm.send()
            if mcap is not None:
                mcap.sample()
            self._record()
            return self._advance()
        except Exception as exc:  # brake and hold, then leave with the recording and summary written
            if self.error is None and self.exit_at is None:
                self.error = exc
                if not isinstance(exc, HebictlError):
                    log.error("run: unexpected error; braking and holding", exc_info=exc)
                self._hold_then_exit(EventKind.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}",
                                     f"hebictl: error: {exc}; braking and holding the arm")
                return True
            return self._still_holding()

    def _record(self) -> None:
        feed = self.feed
        if feed is not None and np.isfinite(self.arm.last_feedback.position).all():
            fb, cmd = self.arm.last_feedback, self.arm.pending_command
            feed.put(self.clock.now(), cmd.position, fb.position, cmd.velocity, fb.velocity, cmd.effort, fb.effort)

    def _advance(self) -> bool:
        from hebictl.control.safety import EventKind

        arm = self.arm
        if self.park is not None:
            return not self.exit_now and bool(self.park.step())
        if self.exit_at is not None:
            self._signal_while_holding()
            return self._still_holding()
        if self.signal is not None:
            self.answered = True
            sigterm = self.signal == signal.SIGTERM
            if sigterm and self._parks():
                self._start_park(EventKind.TERMINATE, "SIGTERM", "SIGTERM: braking, then parking")
                return True
            self._hold_then_exit(EventKind.TERMINATE if sigterm else EventKind.INTERRUPT,
                                 f"{'SIGTERM' if sigterm else 'Ctrl-C'}: braking, then holding under gravity "
                                 f"compensation ({self._hold_words(self.stop_hold())})",
                                 "stopping: holding the arm")
            return self._still_holding()
        if arm.state.value == "stopped":  # a safety event stopped the arm (its own stop behaviour)
            self.failed = True
            last = arm.events.last
            cause = f"{last.kind}: {last.detail}" if last is not None else "a safety event"
            if last is not None and last.kind in self._park_after() and not self.attended and self._parks():
                self._start_park(None, f"after the safety stop ({last.kind})",
                                 f"hebictl: the arm stopped ({cause}); braking, then parking")
                return True
            self.exit_at = self._hold_end(f"hebictl: the arm stopped ({cause}); holding it")
            return self._still_holding()
        if self.phase_start is None:
            if arm.last_feedback.sequence > 0:
                self._start_phase()
            return True
        if self._phase_done():
            if self.phase + 1 >= len(self.phases):
                return False
            self.phase += 1
            self._start_phase()
        return True

    def _phase_done(self) -> bool:
        p = self.phases[self.phase]
        if p.target is not None:
            return bool(self.arm.at_goal)
        return p.duration is not None and self.clock.now() - (self.phase_start or 0.0) >= p.duration

    def _start_phase(self) -> None:
        from hebictl.control.goal import Goal

        p = self.phases[self.phase]
        self.phase_start = self.clock.now()
        if p.target is not None:
            goal = Goal(self.arm.dof)
            goal.add_waypoint(t=p.duration, position=p.target)
            self.arm.set_goal(goal, admitted=p.admitted)

    def _parks(self) -> bool:
        """A stop parks at the rest pose (hebictl.control.park) when the config has one and no
        --stop-hold asks for a hold instead."""
        return self.rest is not None and self.args.stop_hold is None

    @staticmethod
    def _park_after() -> frozenset[str]:
        from hebictl.control.park import PARK_AFTER

        return PARK_AFTER

    def _start_park(self, kind: Any, why: str, notice: str) -> None:
        """Brake (a ``hold`` stop, unless the arm stopped itself already), then park (hebictl.control.park)."""
        from hebictl.control.park import PARK_BOUND_S, Park
        from hebictl.control.safety import StopBehaviour

        assert self.rest is not None  # _parks() said so
        if kind is not None:
            self.arm.stop(kind, f"{notice} at user_data.rest_position", behaviour=StopBehaviour.HOLD)
        self.park = Park(self.arm, self.rest, self.clock, why, TERM_HOLD_S)
        if not (self.args.quiet and kind is not None):
            say(f"{notice} at user_data.rest_position (at most {PARK_BOUND_S:g} s, then exiting; a second "
                "Ctrl-C/SIGTERM brakes and exits at once)")

    def _hold_then_exit(self, kind: Any, detail: str, notice: str) -> None:
        from hebictl.control.safety import StopBehaviour

        self.arm.stop(kind, detail, behaviour=StopBehaviour.HOLD)
        self.exit_at = self._hold_end(notice)

    def stop_hold(self) -> float:
        """[s] How long the stop hold lasts (inf: until Ctrl-C): ``--stop-hold`` when given, else
        until a second Ctrl-C after Ctrl-C, :data:`TERM_HOLD_S` after SIGTERM, and after a safety
        stop or an error until Ctrl-C only with an operator at a terminal (else TERM_HOLD_S)."""
        given = self.args.stop_hold
        if given is not None:
            return float(given)
        if self.signal == signal.SIGTERM:
            return TERM_HOLD_S
        if self.signal is not None or self.attended:
            return math.inf
        return TERM_HOLD_S

    def _signal_while_holding(self) -> None:
        """A signal that comes while the arm already holds after a safety stop or an error: Ctrl-C
        ends the hold (the notice asked for it), SIGTERM bounds it to TERM_HOLD_S from now."""
        if self.signal is None or self.answered:
            return
        self.answered = True
        if self.signal != signal.SIGTERM:
            self.exit_now = True
            return
        hold = self.args.stop_hold if self.args.stop_hold is not None else TERM_HOLD_S
        self.exit_at = min(self.exit_at or math.inf, self.clock.now() + hold)
        say(f"SIGTERM: exiting after holding the arm {self._hold_words(hold)}")

    @staticmethod
    def _hold_words(hold: float) -> str:
        return "until Ctrl-C" if hold == math.inf else f"for {hold:g} s"

    def _hold_end(self, notice: str) -> float:
        """When the stop hold ends; the notice says how to end it. If it cannot be shown, nobody can
        be asked for a second Ctrl-C: an endless hold then ends after UNATTENDED_HOLD_S."""
        hold = self.stop_hold()
        again = " again" if self.signal is not None else ""
        how = (f"Ctrl-C{again} to exit" if hold == math.inf else f"for {hold:g} s, then exiting") + \
            " (the arm goes limp once the modules' command lifetime ends unless it is supported)"
        # --quiet silences the notice of a stop the user asked for; an error or a safety stop that
        # holds the arm (possibly without end) is always said, or a quiet run would just hang
        asked = self.error is None and not self.failed
        shown = say(f"{notice}; {how}") if not (self.args.quiet and asked) else True
        if not shown:
            hold = min(hold, UNATTENDED_HOLD_S)
        return self.clock.now() + hold

    def _still_holding(self) -> bool:
        return not (self.exit_now or self.clock.now() >= (self.exit_at or math.inf))


def _run_loop(loop: Any, run: RunSteps, windows: list, rate: float, args: argparse.Namespace) -> None:
    """The loop with the signal handlers installed and, on a terminal, a live panel."""
    old = signal.signal(signal.SIGINT, run.on_signal)
    old_term = signal.signal(signal.SIGTERM, run.on_signal)
    live = None
    try:
        if not args.quiet and sys.stdout is not None and sys.stdout.isatty():
            from rich.live import Live

            live = Live(live_panel(run, windows, rate), refresh_per_second=8, transient=False)
            live.start()
            report = loop.report
            shown = live

            def report_and_refresh(stats: Any) -> None:
                report(stats)
                shown.update(live_panel(run, windows, rate))

            loop.report = report_and_refresh
        loop.run()
    finally:
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)
        if live is not None:
            with tolerant("stdout"):
                live.update(live_panel(run, windows, rate))
                live.stop()


def _finish(arm: Any, cfg: Any, run: RunSteps, loop: Any, windows: list, rate: float, elapsed: float,
            rec: Any, args: argparse.Namespace, paced: bool) -> None:
    """Recording and plot first (they matter more than the text), then the summary."""
    written = []
    done = run.mcap_done
    if done is not None:
        written.append(f"recording: {args.record} ({done.written} of {done.cycles} cycles, {done.dropped} dropped)")
    if rec is not None:
        if run.npz_file is not None:
            import io

            from hebictl.recording.mcapfile import write_new

            data = io.BytesIO()
            rec.save(data)
            write_new(run.npz_file, data.getvalue())
            written.append(f"recording: {args.record}")
        if args.plot:
            from hebictl.plot import plot_recording

            plot_recording(rec, args.plot, title=f"{cfg.path.name} on {args.backend}")
            written.append(f"plot: {args.plot}")
    with tolerant("stdout"):
        _summary(arm, run, loop, windows, rate, elapsed, paced)
        for line in written:
            print(line)


def live_panel(run: RunSteps, windows: list, rate: float) -> Any:
    """The live status table (rich): phase, state, positions and efforts as plain numbers, the last
    second's loop figures and the last event."""
    from rich.markup import escape
    from rich.table import Table

    arm, phases = run.arm, run.phases
    t = Table(title=f"hebictl run: {arm.model.name} on {run.args.backend}", show_header=False)
    i = min(run.phase, len(phases) - 1)
    t.add_row("phase", f"{phases[i].name} ({i + 1}/{len(phases)})")
    t.add_row("state", arm.state.value)
    t.add_row("goal progress", f"{100 * arm.goal_progress:5.1f} %")
    t.add_row("position \\[rad]", _numbers(arm.last_feedback.position, 3))
    t.add_row("effort \\[N·m]", _numbers(arm.pending_command.effort, 2))
    if windows:
        t.add_row("loop", loop_line(windows[-1], rate))
    if arm.events.last is not None:
        e = arm.events.last
        t.add_row("last event", escape(f"{e.kind}: {e.detail}"))
    return t


def _numbers(values: Any, digits: int) -> str:
    """``+0.123 -1.200 ...`` on one line (numpy's repr wraps and brackets)."""
    return " ".join(f"{x:+.{digits}f}" for x in np.asarray(values, dtype=float))


def _mcap_recorder(args: argparse.Namespace, arm: Any, cfg: Any, rate: float) -> Any:
    """``--record RUN.mcap``: the MCAP recorder (hebictl.recording), opened before the loop starts."""
    if args.record is None or args.record.suffix != ".mcap":
        return None
    from hebictl.recording.mcapfile import parse_mode
    from hebictl.recording.writer import McapRecorder

    return McapRecorder(args.record, arm, config_path=cfg.path, mode=parse_mode(args.record_mode),
                        metadata={"command": "run", "backend_name": args.backend, "rate_hz": f"{rate:g}",
                                  "config": str(cfg.path)})


def _npz_file(args: argparse.Namespace) -> Any:
    """``--record RUN.npz``: the file, made before the loop starts (exclusive, never a symlink's
    target, ``--record-mode``) and written when the run ends."""
    from hebictl.recording.mcapfile import ExclusiveFile, parse_mode

    return ExclusiveFile(args.record, parse_mode(args.record_mode))


def _require_plotting() -> None:
    """Fail before the run, not after it, when --plot cannot be honoured."""
    if importlib.util.find_spec("matplotlib") is None:
        raise InstallationError("--plot needs matplotlib: pip install 'hebictl[plot]'")


def _summary(arm: Any, run: RunSteps, loop: Any, windows: list, rate: float, elapsed: float,
             paced: bool) -> None:
    """Closing report over the whole run (every statistics window, not the last one), one fact a line."""
    from rich.markup import escape

    c = console(soft_wrap=True)  # long lines stay whole (no wrapping mid-number when piped)
    c.print(f"[bold]done[/bold] after {elapsed:.2f} s: state={arm.state.value}, "
            f"phases={', '.join(p.name for p in run.phases)}")
    c.print(f"final position \\[rad]: {_numbers(arm.last_feedback.position, 4)}")
    ws = [w for w in windows if w.cycles]
    if ws:
        total = loop.total
        pacing = "paced by the feedback read" if paced else "paced by its deadlines"
        c.print(f"loop at {rate:.0f} Hz ({pacing}), whole run: {loop.cycles} cycles; "
                f"deadline misses {total.late}, overruns {total.overruns} (cycles whose own work took longer "
                f"than a period), missed cycles {total.missed}")
        c.print(f"  period p50 {float(np.median([w.period_p50 for w in ws])) * 1e3:.3f} ms, worst per-second p99 "
                f"{max(w.period_p99 for w in ws) * 1e3:.3f} ms, max {max(w.period_max for w in ws) * 1e3:.3f} ms; "
                f"work p50 {float(np.median([w.work_p50 for w in ws])) * 1e3:.3f} ms, worst p99 "
                f"{max(w.work_p99 for w in ws) * 1e3:.3f} ms; waiting for feedback p50 "
                f"{float(np.median([w.wait_p50 for w in ws])) * 1e3:.3f} ms")
    if run.park is not None:
        c.print(escape(f"park ({run.park.why}): {run.park.outcome}"))
    if run.realtime is not None:
        c.print(escape(run.realtime.line()))
    feed = run.feed
    if feed is not None and feed.dropped:
        c.print(f"recording: {feed.dropped} samples dropped (the writer thread fell behind)")
    for e in arm.events.events:
        c.print(f"  event t={e.time - run.t_start:.3f} s "
                f"{e.kind} -> {e.state.value}: {escape(e.detail)}")
