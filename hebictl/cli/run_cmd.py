"""``hebictl run``, ``hebictl check-config`` and ``hebictl plot``.

``run`` is the main job: open the arm from a robot config, move to the config's home position
(``user_data.home_position``), follow an optional goal, hold under gravity compensation. On
Ctrl-C or SIGTERM the arm stops with the ``hold`` behaviour (brake within the rated deceleration,
then hold under gravity compensation) and keeps holding until a second Ctrl-C/SIGTERM, or for
``--stop-hold`` seconds; after the process exits the modules' command lifetime ends and a
brakeless arm goes limp (see the README's Safety section). Progress and loop statistics are
shown live with rich.
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.errors import ConfigError, InstallationError
from hebictl.hardware.registry import available_backends


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run an arm: home, follow a goal, hold (mock, sim or real modules)")
    run.add_argument("config", type=Path, nargs="?", help="robot config YAML (default: the bundled 6-DoF kit)")
    run.add_argument("--backend", default="mock", choices=available_backends())
    run.add_argument("--goal", type=float, nargs="+", metavar="RAD", help="joint positions to move to after home")
    run.add_argument("--goal-time", type=float, default=None, help="seconds for the goal move (default: estimated)")
    run.add_argument("--hold", type=float, default=2.0,
                     help="seconds to hold at the end under gravity compensation (inf: until Ctrl-C)")
    run.add_argument("--rate", type=float, default=None, help="control rate [Hz] (default: feedback_frequency)")
    run.add_argument("--plot", type=Path, help="save a plot of commanded vs. measured position and effort")
    run.add_argument("--record", type=Path, help="save the run as .mcap (Foxglove; see docs/recording.md) or .npz "
                                               "(plot either later with hebictl plot)")
    run.add_argument("--no-home", action="store_true", help="skip the move to user_data.home_position")
    run.add_argument("--stop-hold", type=float, default=float("inf"),
                     help="after Ctrl-C/SIGTERM, hold this many seconds before exiting (default: until a "
                          "second Ctrl-C/SIGTERM)")
    run.add_argument("--quiet", action="store_true", help="no live display")
    run.set_defaults(func=cmd_run)

    chk = sub.add_parser("check-config", help="build what run builds from a robot config (no hardware); "
                                         "exit 2 on any error")
    chk.add_argument("config", type=Path)
    chk.set_defaults(func=cmd_check_config)

    plot = sub.add_parser("plot", help="plot a recording saved with hebictl run --record (.npz or .mcap)")
    plot.add_argument("recording", type=Path)
    plot.add_argument("-o", "--output", type=Path, default=Path("hebictl-run.png"))
    plot.add_argument("--layout", action="store_true",
                      help=".mcap only: draw the Foxglove layout's panels (3D frames, joints, mode, events)")
    plot.set_defaults(func=cmd_plot)


def cmd_check_config(args: argparse.Namespace) -> int:
    """Everything ``run`` builds from the config, built once without hardware (on the mock backend).

    Model, every gains role, the cross-checks against the model, joint limits and safety settings,
    and the plugins (``assemble``, as ``run`` does); then the home position against the limits.
    Any error exits 2; warnings (ConfigWarning, format warnings) are printed and exit 0.
    """
    from hebictl.config import config_warning, gains_file, load_config
    from hebictl.control.assembly import assemble
    from hebictl.gains import load_gains

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
        home = _home(cfg, model.dof)
        if home is not None:
            lo, hi = parts.limits.position_min, parts.limits.position_max
            outside = [i for i in range(model.dof) if not lo[i] <= home[i] <= hi[i]]
            if outside:
                config_warning(cfg.path, "user_data.home_position", "outside the joint limits at joint(s) "
                               + ", ".join(f"{i} ({home[i]:g} not in [{lo[i]:g}, {hi[i]:g}])" for i in outside)
                               + "; run will stop at the limit")
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
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from hebictl.control.recorder import Recorder
    from hebictl.plot import plot_recording

    if args.recording.suffix == ".mcap" and args.layout:
        from hebictl.recording.overview import render_layout

        out = render_layout(args.recording, args.output)
    elif args.recording.suffix == ".mcap":
        from hebictl.recording.reader import load_recorder

        rec, events = load_recorder(args.recording)
        marked = [e for e in events if e.level != "INFO" or e.source != "hebictl.recording"]  # not start/close
        out = plot_recording(rec, args.output, title=str(args.recording), events=marked)
    else:
        out = plot_recording(Recorder.load(args.recording), args.output, title=str(args.recording))
    print(f"wrote {out}")
    return 0


def _home(cfg: Any, dof: int) -> np.ndarray | None:
    home = cfg.user_data.get("home_position")
    if home is None:
        return None
    arr = np.asarray(home, dtype=float)
    if arr.shape != (dof,):
        raise ConfigError(f"home_position needs {dof} values, got {arr.size}", file=cfg.path,
                          key="user_data.home_position")
    return arr


def cmd_run(args: argparse.Namespace) -> int:  # noqa: C901 (the run sequence: checks, home, goal, hold, summary)
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.goal import Goal
    from hebictl.control.loop import FixedRateLoop, LoopStats
    from hebictl.control.recorder import Recorder
    from hebictl.control.safety import EventKind, StopBehaviour
    from hebictl.hardware.clock import MonotonicClock
    from hebictl.resources import bundled_config

    if args.plot is not None:
        _require_plotting()
    clock = MonotonicClock()
    t_start = clock.now()  # event times and the summary count from here
    cfg = load_config(args.config or bundled_config())
    arm = Arm.from_config(cfg, backend=args.backend, clock=clock)
    if hasattr(arm.events, "start"):
        arm.events.start = t_start
    rate = args.rate or cfg.feedback_frequency
    npz = args.record is not None and args.record.suffix != ".mcap"
    rec = Recorder(arm.dof, arm.model.joint_names) if (args.plot or npz) else None
    try:
        mcap = _mcap_recorder(args, arm, cfg, rate)
    except BaseException:
        arm.close()  # a file that cannot be written: nothing ran, nothing stays open
        raise
    phases: list[tuple[str, np.ndarray | None, float | None]] = []
    home = None if args.no_home else _home(cfg, arm.dof)
    if home is not None:
        phases.append(("home", home, None))
    if args.goal is not None:
        if len(args.goal) != arm.dof:
            raise ConfigError(f"--goal needs {arm.dof} positions ({', '.join(arm.model.joint_names)}), "
                              f"got {len(args.goal)}")
        phases.append(("goal", np.array(args.goal), args.goal_time))
    phases.append(("hold", None, args.hold))

    state: dict[str, Any] = {"phase": 0, "phase_start": None, "stats": None, "interrupted": None,
                             "exit_at": None, "exit": False, "windows": [], "t_start": t_start}

    def on_signal(signum: int, frame: Any) -> None:
        if state["interrupted"] is not None:
            state["exit"] = True  # second signal: leave the loop (the last command stays a hold)
            return
        state["interrupted"] = signum

    def start_phase() -> None:
        _name, target, duration = phases[state["phase"]]
        state["phase_start"] = clock.now()
        if target is not None:
            goal = Goal(arm.dof)
            goal.add_waypoint(t=duration, position=target)
            arm.set_goal(goal)

    def step() -> bool:
        if mcap is not None:
            mcap.cycle_start()
        arm.update()
        arm.send()
        if mcap is not None:
            mcap.sample()
        if rec is not None and np.isfinite(arm.last_feedback.position).all():
            fb, cmd = arm.last_feedback, arm.pending_command
            rec.record(clock.now(), cmd.position, fb.position, cmd.velocity, fb.velocity, cmd.effort, fb.effort)
        now = clock.now()
        if state["interrupted"] is not None:
            if state["exit_at"] is None:
                sigterm = state["interrupted"] == signal.SIGTERM
                arm.stop(EventKind.TERMINATE if sigterm else EventKind.INTERRUPT,
                         f"{'SIGTERM' if sigterm else 'Ctrl-C'}: braking, then holding under gravity compensation",
                         behaviour=StopBehaviour.HOLD)
                state["exit_at"] = now + args.stop_hold
                if not args.quiet:
                    print("stopping: holding the arm; Ctrl-C again to exit (the arm goes limp once the "
                          "modules' command lifetime ends unless it is supported)", file=sys.stderr)
            return not (state["exit"] or now >= state["exit_at"])
        if state["phase_start"] is None:
            if arm.last_feedback.sequence > 0:
                start_phase()
            return True
        _name, target, duration = phases[state["phase"]]
        done = arm.at_goal if target is not None else (duration is not None and now - state["phase_start"] >= duration)
        if done:
            if state["phase"] + 1 >= len(phases):
                return False
            state["phase"] += 1
            start_phase()
        return True

    def report(stats: LoopStats) -> None:
        state["stats"] = stats
        if mcap is not None:
            mcap.loop_stats(stats)
        state["windows"].append(stats)  # one per second: the summary covers the whole run

    loop = FixedRateLoop(step, rate, clock, report=report)
    old = signal.signal(signal.SIGINT, on_signal)
    old_term = signal.signal(signal.SIGTERM, on_signal)
    live = None
    try:
        if not args.quiet and sys.stdout.isatty():
            from rich.live import Live

            live = Live(_panel(arm, phases, state, rate), refresh_per_second=8, transient=False)
            live.start()
            loop.report = lambda s: (report(s), live.update(_panel(arm, phases, state, rate)))
        loop.run()
    finally:
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)
        if live is not None:
            live.update(_panel(arm, phases, state, rate))
            live.stop()
        arm.close()
        if mcap is not None:
            done = mcap.close()
            print(f"recording: {args.record} ({done.written} of {done.cycles} cycles, {done.dropped} dropped)")
    _summary(arm, phases, state, loop, rate, clock.now() - t_start)
    if rec is not None:
        if npz:
            rec.save(args.record)
            print(f"recording: {args.record}")
        if args.plot:
            from hebictl.plot import plot_recording

            plot_recording(rec, args.plot, title=f"{cfg.path.name} on {args.backend}")
            print(f"plot: {args.plot}")
    normal = ("interrupt", "terminate", "release", "hold", "goal", "cleared")
    return 1 if any(e.kind not in normal for e in arm.events.events) else 0


def _panel(arm: Any, phases: list, state: dict, rate: float) -> Any:
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"hebictl run — {arm.model.name} on {arm.backend!r}"[:100], show_header=False)
    i = min(state["phase"], len(phases) - 1)
    t.add_row("phase", f"{phases[i][0]} ({i + 1}/{len(phases)})")
    t.add_row("state", arm.state.value)
    t.add_row("goal progress", f"{100 * arm.goal_progress:5.1f} %")
    pos = arm.last_feedback.position
    t.add_row("position \\[rad]", " ".join(f"{x:+.3f}" for x in pos))
    t.add_row("effort \\[N·m]", " ".join(f"{x:+.2f}" for x in arm.pending_command.effort))
    s = state.get("stats")
    if s is not None:
        t.add_row("loop", f"{rate:.0f} Hz target; period p50 {s.period_p50 * 1e3:.3f} ms, "
                          f"p99 {s.period_p99 * 1e3:.3f} ms, max {s.period_max * 1e3:.3f} ms; "
                          f"overruns {s.overruns}, missed {s.missed_cycles}")
    if arm.events.last is not None:
        e = arm.events.last
        t.add_row("last event", escape(f"{e.kind}: {e.detail}"))
    return t


def _mcap_recorder(args: argparse.Namespace, arm: Any, cfg: Any, rate: float) -> Any:
    """``--record RUN.mcap``: the MCAP recorder (hebictl.recording), opened before the loop starts."""
    if args.record is None or args.record.suffix != ".mcap":
        return None
    from hebictl.recording.writer import McapRecorder

    return McapRecorder(args.record, arm, config_path=cfg.path,
                        metadata={"command": "run", "backend_name": args.backend, "rate_hz": f"{rate:g}",
                                  "config": str(cfg.path)})


def _require_plotting() -> None:
    """Fail before the run, not after it, when --plot cannot be honoured."""
    if importlib.util.find_spec("matplotlib") is None:
        raise InstallationError("--plot needs matplotlib: pip install 'hebictl[plot]'")


def _summary(arm: Any, phases: list, state: dict, loop: Any, rate: float, elapsed: float) -> None:
    """Closing report over the whole run (every statistics window, not the last one)."""
    from rich.console import Console
    from rich.markup import escape

    c = Console()
    c.print(f"[bold]done[/bold] after {elapsed:.2f} s: state={arm.state.value}, "
            f"phases={', '.join(p[0] for p in phases)}, "
            f"final position \\[rad]: {np.array2string(arm.last_feedback.position, precision=4)}")
    windows = [w for w in state["windows"] if w.cycles]
    if windows:
        p50 = float(np.median([w.period_p50 for w in windows]))
        c.print(f"loop at {rate:.0f} Hz, whole run: {loop.cycles} cycles, overruns {loop.total.overruns}, missed "
                f"{loop.total.missed}; period p50 {p50 * 1e3:.3f} ms (median of the per-second medians), worst "
                f"per-second p99 {max(w.period_p99 for w in windows) * 1e3:.3f} ms, max "
                f"{max(w.period_max for w in windows) * 1e3:.3f} ms")
    for e in arm.events.events:
        c.print(f"  event t={e.time - state['t_start']:.3f} s {e.kind} -> {e.state.value}: {escape(e.detail)}")
