"""``hebictl run MULTI.multi.yaml``: every arm of a multi-arm config in one process, one loop, one supervisor.

The arms are built by :func:`hebictl.wiring.multi.arms_from_multi_config` (on ``sim``: one MuJoCo
scene; each arm's collision world holds the other arms) and run under one
:class:`~hebictl.control.group.ArmGroup` at one rate: every cycle reads every arm, gives each arm's
collision world the others' measured joint positions, lets the group supervise (a fault, stop or
e-stop of any arm stops every arm, with one group event naming the arm and the cause; nothing
resumes by itself), moves each arm through its phases (its config's home, then its
``--arm-goal``, each admitted by that arm's own admission, the other arms included as obstacles,
when it starts; a refused goal leaves that arm holding, and is reported), and sends every command.
Ctrl-C or SIGTERM stops every arm with the hold behaviour, holds ``--stop-hold`` s (default
:data:`~hebictl.cli.run_cmd.TERM_HOLD_S`) and exits with the summary of every arm. A SIGTERM without
``--stop-hold`` parks every arm whose robot config has ``user_data.rest_position`` there, all at
once, each by a :class:`~hebictl.control.park.Park` as one arm parks (brake, a slow move through its
admission with the other arms as obstacles, bounded; docs/stopping.md); a park that closes in on
another arm, or a safety stop of any arm during the parks, ends the others' parks in the fall-back
hold, saying why; a second signal brakes every arm and exits once each is measured still.
The loop thread gets ``--rt-priority`` (:mod:`hebictl.control.realtime`), and every arm's feedback
read is timed as waiting (:class:`~hebictl.control.loop.WaitMeter`), as for one arm.

A config's mobile base (:class:`~hebictl.control.base.VelocityBase`) is read, supervised and sent
with the arms under the same group: it holds zero velocity, or drives ``--base-velocity`` (one
velocity per wheel) for ``--base-time`` s once it has feedback, renewing the command every cycle,
then holds zero again. A fault of the base holds every arm; any trip, Ctrl-C or SIGTERM stops the
base (it decelerates to zero at its max acceleration, then commands zero); it is in the status,
the summary and ``--record``'s file (``/NAME/wheels``, every cycle).
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hebictl.cli.output import arms_count, console, loop_line, tolerant
from hebictl.control.group import ClosingGuard
from hebictl.errors import CommandRejected, UsageError


@dataclass
class ArmPlan:
    """One arm's moves, in order: (phase name, target [rad]); the phase it is in; what was refused."""

    moves: list[tuple[str, np.ndarray]]
    phase: str = "start"
    refused: list[str] = field(default_factory=list)


@dataclass
class BasePlan:
    """The base's script: ``velocity`` [rad/s per wheel] for ``seconds`` (None: hold zero), its phase
    (``start``: waiting for feedback, ``drive``, ``hold``) and when the drive ends [s, clock]."""

    velocity: np.ndarray | None = None
    seconds: float = 0.0
    phase: str = "start"
    until: float = math.inf


def base_plan(args: argparse.Namespace, base: Any) -> BasePlan | None:
    """``--base-velocity RAD/S... --base-time S`` checked against the config's base (None: no base)."""
    velocity = getattr(args, "base_velocity", None)
    if base is None:
        if velocity is not None:
            raise UsageError("--base-velocity: the config has no base")
        return None
    if velocity is None:
        return BasePlan()
    v = np.array(velocity, dtype=float)
    seconds = float(getattr(args, "base_time", 1.0))
    if v.shape != (base.size,) or not np.isfinite(v).all() or np.any(np.abs(v) > base.limits.max_velocity):
        bound = " ".join(f"{x:g}" for x in base.limits.max_velocity)
        raise UsageError(f"--base-velocity needs {base.size} finite wheel velocities within max_velocity "
                         f"{bound} rad/s, got {' '.join(map(str, velocity))}")
    if not 0.0 < seconds < math.inf:
        raise UsageError(f"--base-time must be a positive number of seconds, got {seconds:g}")
    return BasePlan(v, seconds)


def arm_goals(args: argparse.Namespace, names: list[str], dofs: dict[str, int]) -> dict[str, np.ndarray]:
    """``--arm-goal NAME RAD...`` (repeatable) checked against the arms' names and joint counts."""
    goals: dict[str, np.ndarray] = {}
    for entry in args.arm_goal or []:
        name, values = entry[0], entry[1:]
        if name not in dofs:
            raise UsageError(f"--arm-goal {name}: no such arm (the config's arms: {', '.join(names)})")
        try:
            target = np.array([float(v) for v in values])
        except ValueError:
            raise UsageError(f"--arm-goal {name}: positions must be numbers, got {' '.join(values)}") from None
        if target.shape != (dofs[name],) or not np.isfinite(target).all():
            raise UsageError(f"--arm-goal {name} needs {dofs[name]} finite positions [rad], got {len(values)}")
        goals[name] = target
    return goals


class MultiRun:
    """The cycle of a multi-arm run (module doc): ``step()`` returns False when the run is over."""

    def __init__(self, multi: Any, plans: dict[str, ArmPlan], clock: Any, hold: float, stop_hold: float, *,
                 guard: bool = True) -> None:
        from hebictl.control.group import ArmGroup

        self.multi, self.plans, self.clock = multi, plans, clock
        self.group = ArmGroup(multi.arms, getattr(multi, "base", None))
        #: the base's script (None: no base); ``hebictl run`` sets it from --base-velocity
        self.base_plan: BasePlan | None = BasePlan() if self.group.base is not None else None
        self.hold, self.stop_hold = hold, stop_hold
        self.idle_since: float | None = None
        self.exit_at: float | None = None
        self.signal: int | None = None
        #: holds a moving arm closing in on another (``guard`` False: tests of what it prevents)
        self.closing = ClosingGuard(self.group.arms, guard)
        #: --record RUN.mcap: the recorder (hebictl.recording.writer.McapRecorder, every arm), or None
        self.mcap: Any = None
        #: the loop's once-a-second statistics (hebictl.control.loop.LoopStats), for the status
        self.windows: list[Any] = []
        #: --plot: per arm, the feed to a writer thread filling its Recorder (hebictl.control.recorder)
        self.feeds: dict[str, Any] = {}
        #: the arms' user_data.rest_position (empty with --stop-hold): a SIGTERM parks these arms there
        self.rests: dict[str, np.ndarray] = {}
        #: the parks under way after a SIGTERM (hebictl.control.park.Park), and those that have ended
        self.parks: dict[str, Any] = {}
        self.parked: set[str] = set()
        self.again = False   # a second signal came
        self.quiet = False   # --quiet: no stop notice on stderr
        #: what the loop thread was granted (hebictl.control.realtime.RealtimeGrant), for the summary
        self.realtime: Any = None

    @property
    def guard(self) -> bool:
        """Hold a moving arm closing in on another (False: tests of what it prevents)."""
        return self.closing.enabled

    @guard.setter
    def guard(self, on: bool) -> None:
        self.closing.enabled = on

    def on_signal(self, signum: int, frame: Any) -> None:
        if self.signal is not None:
            self.again = True          # a second one: parks brake and end once still (in the cycle)
            self.exit_at = -math.inf   # every arm not parking: leave now
        self.signal = signum

    def step(self) -> bool:
        g, mcap = self.group, self.mcap
        if mcap is not None:
            mcap.cycle_start()
        g.update()
        self.multi.observe()   # every arm's collision world sees the others where they are now
        g.supervise()
        if self.signal is not None and self.exit_at is None and not self.parks:
            self._stop_all()
        if self.parks:
            self._parking()
        elif g.tripped is None and self.exit_at is None:
            for name in g.arms:
                self._guard(name)
                self._advance(name)
            self._drive_base()
        elif self.exit_at is None:
            self.exit_at = self.clock.now() + self.stop_hold
        g.send()
        if mcap is not None:   # every arm's cycle and the group's new events, handed to the writer thread
            mcap.sample()
            if g.base is not None:
                mcap.publish(f"/{g.base.name}/wheels", wheels_message(g.base))
        for name, feed in self.feeds.items():
            self._feed(g.arms[name], feed)
        return self._going_on()

    def _feed(self, arm: Any, feed: Any) -> None:
        fb, cmd = arm.last_feedback, arm.pending_command
        if np.isfinite(fb.position).all():
            feed.put(self.clock.now(), cmd.position, fb.position, cmd.velocity, fb.velocity, cmd.effort, fb.effort)

    def _going_on(self) -> bool:
        now = self.clock.now()
        if self.parks:   # until every park has ended, and the other arms' hold
            holding = len(self.parks) < len(self.group.arms) and now < (self.exit_at or math.inf)
            return len(self.parked) < len(self.parks) or holding
        if self.exit_at is not None:
            return now < self.exit_at
        driving = self.base_plan is not None and self.base_plan.phase in ("start", "drive") and \
            self.base_plan.velocity is not None
        if driving or any(p.moves or p.phase in ("start", "home", "goal") for p in self.plans.values()):
            self.idle_since = None
            return True
        self.idle_since = now if self.idle_since is None else self.idle_since
        return now - self.idle_since < self.hold

    def _drive_base(self) -> None:
        """The base's cycle while the group runs: ``--base-velocity`` renewed every cycle from its
        first feedback until ``--base-time`` has passed, then (and without a script) zero."""
        base, plan = self.group.base, self.base_plan
        if base is None or plan is None or base.latch is not None:
            return
        now = self.clock.now()
        if plan.phase == "start" and base.had_feedback:
            plan.phase = "drive" if plan.velocity is not None else "hold"
            plan.until = now + plan.seconds
        if plan.phase == "drive" and now < plan.until and plan.velocity is not None:
            base.command(plan.velocity)
            return
        if plan.phase == "drive":
            plan.phase = "hold"
        base.hold()

    def _stop_all(self) -> None:
        """Brake every arm (a latched ``hold`` stop); after a SIGTERM, park the arms with a rest pose."""
        from hebictl.control.park import Park
        from hebictl.control.safety import EventKind, StopBehaviour

        sigterm = self.signal == signal.SIGTERM
        parking = self.rests if sigterm else {}
        for name, arm in self.group.arms.items():
            then = "parking at user_data.rest_position" if name in parking else "holding"
            arm.stop(EventKind.TERMINATE if sigterm else EventKind.INTERRUPT,
                     f"{'SIGTERM' if sigterm else 'Ctrl-C'}: braking every arm, then {then}",
                     behaviour=StopBehaviour.HOLD)
        if self.group.base is not None:
            self.group.base.stop("terminate" if sigterm else "interrupt",
                                 f"{'SIGTERM' if sigterm else 'Ctrl-C'}: stopping the base")
        self.group.tripped = self.group.note("stop", "", "operator stop of every arm" +
                                             (f"; parking {', '.join(parking)}" if parking else ""), trip=True)
        self.exit_at = self.clock.now() + self.stop_hold
        self.parks = {name: Park(self.group.arms[name], rest, self.clock, "SIGTERM", self.stop_hold)
                      for name, rest in parking.items()}
        if parking and not self.quiet:
            from hebictl.cli.output import say
            from hebictl.control.park import PARK_BOUND_S

            say(f"SIGTERM: braking every arm, then parking {', '.join(parking)} at user_data.rest_position (at "
                f"most {PARK_BOUND_S:g} s, then exiting; a second Ctrl-C/SIGTERM brakes and exits at once)")

    def _parking(self) -> None:
        """One cycle of every park: a second signal ends the parks still braking or moving; a safety
        stop of an arm during its park move, or a park move closing in on another arm, ends the
        other parks (or that one) in the fall-back hold (:func:`~hebictl.control.park.watch_parks`);
        a park that has ended stays ended."""
        from hebictl.control.park import watch_parks

        if self.again:
            for park in self.parks.values():
                if park.phase in ("brake", "move"):
                    park.abort = True
        watch_parks(self.parks, self.group.note, lambda name: self.closing.closing(name, "park"))
        for name, park in self.parks.items():
            if name not in self.parked and (not park.step() or (self.again and park.phase in ("parked", "hold"))):
                self.parked.add(name)

    def _guard(self, name: str) -> None:
        """An arm following a goal that closes in on another arm (which may have moved since the
        goal was admitted) within the slow-down threshold is held (braked within its rated
        deceleration), its remaining moves dropped: a ``held`` group event, not a fault."""
        arm, plan = self.group.arms[name], self.plans[name]
        if plan.phase not in ("home", "goal") or arm.at_goal:
            self.closing.forget(name)
            return
        detail = self.closing.closing(name, plan.phase)
        if detail is None:
            return
        self.group.hold(name, detail)
        self.group.note("held", name, detail)
        plan.moves.clear()
        plan.phase = "held"

    def _advance(self, name: str) -> None:
        """Start ``name``'s next move once it has feedback and reached the last one."""
        from hebictl.control.goal import Goal

        arm, plan = self.group.arms[name], self.plans[name]
        if not self.group.fresh[name]:
            return
        if plan.phase == "held" or (plan.phase not in ("start", "hold") and not arm.at_goal):
            return
        if not plan.moves:
            plan.phase = "hold"
            return
        phase, target = plan.moves.pop(0)
        goal = Goal(arm.dof)
        goal.add_waypoint(position=target)
        try:
            arm.set_goal(goal)
            self.group.running(name)
            plan.phase = phase
        except CommandRejected as exc:   # this arm holds where it is; the others go on
            plan.refused.append(f"{phase}: {exc.reason}: {exc.detail}")
            self.group.note("refused", name, f"{phase} refused: {exc.reason}: {exc.detail}")
            plan.moves.clear()
            plan.phase = "hold"


def build_plans(multi: Any, args: argparse.Namespace, home_position: Any) -> dict[str, ArmPlan]:
    """Each arm's moves: its config's home (``home_position(cfg, dof)``, unless ``--no-home``), then
    its ``--arm-goal``."""
    names = list(multi.arms)
    goals = arm_goals(args, names, {n: a.dof for n, a in multi.arms.items()})
    plans = {}
    for entry in multi.config.arms:
        arm = multi.arms[entry.name]
        home = None if args.no_home else home_position(entry.config, arm.dof)
        moves = ([("home", home)] if home is not None else []) + \
            ([("goal", goals[entry.name])] if entry.name in goals else [])
        plans[entry.name] = ArmPlan(moves)
    return plans


def cmd_run_multi(args: argparse.Namespace, clock: Any, stop_hold: float, home_position: Any,
                  realtime: Any = None) -> int:
    """``hebictl run`` on a multi-arm config (module doc), on ``clock``; ``stop_hold`` [s] unless
    ``--stop-hold`` says; ``home_position(cfg, dof)`` reads an arm's home (``hebictl.cli.run_cmd``'s);
    ``realtime``: the loop thread's :class:`~hebictl.control.realtime.RealtimeRequest` (from
    ``--rt-priority``/``--cpu``: ``hebictl.cli.run_cmd.realtime_request``; None: none asked for)."""
    from hebictl.control.arm import Arm
    from hebictl.wiring.multi import arms_from_multi_config

    if args.goal is not None:
        raise UsageError("--goal is for one arm; give each arm's goal with --arm-goal NAME RAD...")
    if args.record is not None and args.record.suffix != ".mcap":
        raise UsageError(f"--record {args.record}: a multi-arm run records to .mcap (every arm in one file)")
    multi = arms_from_multi_config(Arm, args.config, args.backend, clock=clock,
                                   obstacles=not getattr(args, "no_arm_obstacles", False))
    t_start = clock.now()
    mcap: Any = None
    run: MultiRun | None = None
    loop: Any = None
    try:
        plans = build_plans(multi, args, home_position)
        rate = args.rate or max(e.config.feedback_frequency for e in multi.config.arms)
        if multi.base is not None:   # its ramp's dt bound and feedback timeout count the loop's cycles
            multi.base.period = 1.0 / rate
        run = MultiRun(multi, plans, clock, args.hold, args.stop_hold if args.stop_hold is not None else stop_hold)
        run.base_plan = base_plan(args, multi.base)
        run.rests = rest_poses(multi) if args.stop_hold is None else {}
        run.quiet = bool(getattr(args, "quiet", False))
        run.mcap = mcap = multi_recorder(args, multi, run.group, rate)  # before the loop: a bad file moved nothing
        run.feeds = plot_feeds(args, multi)
        loop = multi_loop(run, clock, rate, args, realtime)
        old = {s: signal.signal(s, run.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            run_with_status(loop, run, rate, args)
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            run.realtime = loop.grant
    finally:
        if loop is not None:
            loop.release()
        multi.close()
        if mcap is not None:   # the writer thread drains and closes the file
            done = mcap.close()
        for feed in run.feeds.values() if run is not None else ():
            feed.close()
    plots = plot_arms(args, run)
    with tolerant("stdout"):
        summary(run, rate, clock.now() - t_start, args.backend)
        for out in plots:
            print(f"plot: {out}")
        if mcap is not None:
            print(f"recording: {args.record} ({done.written} of {done.cycles} cycles, every arm; "
                  f"{done.dropped} dropped)")
    return exit_code(run)


def exit_code(run: MultiRun) -> int:
    """1 when an arm faulted (a group ``fault`` event: before or after a signal, during a park too) or
    a goal was refused, else 0 (a SIGTERM's park, parked or fallen back to the hold, is an operator's
    stop, as is the hold after Ctrl-C)."""
    faulted = any(e.kind == "fault" for e in run.group.events)
    return 1 if faulted or any(p.refused for p in run.plans.values()) else 0


def rest_poses(multi: Any) -> dict[str, np.ndarray]:
    """Each arm's ``user_data.rest_position`` (:func:`hebictl.control.park.rest_position`), for the
    arms whose robot config gives one."""
    from hebictl.control.park import rest_position

    poses = {e.name: rest_position(e.config, multi.arms[e.name].dof) for e in multi.config.arms}
    return {name: pose for name, pose in poses.items() if pose is not None}


def multi_loop(run: MultiRun, clock: Any, rate: float, args: argparse.Namespace, realtime: Any = None) -> Any:
    """The group's :class:`~hebictl.control.loop.FixedRateLoop`: ``realtime`` (a
    :class:`~hebictl.control.realtime.RealtimeRequest`, None: none) asked for its thread, the grant
    line said as for one arm (:func:`hebictl.cli.output.grant_notice`); every arm's feedback read
    timed as waiting by one :class:`~hebictl.control.loop.WaitMeter` (the cycle's wait is the sum over
    the arms and the base). Memory is locked and the heap frozen here (``prepare``); the caller ``release()``s it."""
    from hebictl.cli.output import grant_notice
    from hebictl.control.loop import FixedRateLoop, WaitMeter

    meter = WaitMeter(clock)
    for arm in run.group.arms.values():   # this one backend's read wrapped on purpose, as for one arm
        arm.backend.read = meter.wrap(arm.backend.read)  # type: ignore[method-assign]  # instance-level wrap
    if run.group.base is not None:   # the base's read is waiting too
        run.group.base.backend.read = meter.wrap(run.group.base.backend.read)  # type: ignore[method-assign]
    loop = FixedRateLoop(run.step, rate, clock, report=run.windows.append, wait=meter, realtime=realtime,
                         on_grant=grant_notice(args))
    loop.prepare()
    return loop


def shows_status(args: argparse.Namespace) -> bool:
    """A live status table: not with ``--quiet``, and only on a terminal (as for one arm)."""
    return not getattr(args, "quiet", False) and sys.stdout is not None and sys.stdout.isatty()


def run_with_status(loop: Any, run: MultiRun, rate: float, args: argparse.Namespace) -> None:
    """``loop.run()`` with, where :func:`shows_status`, the live table of every arm
    (:func:`status_table`) refreshed with the loop's statistics once a second; each second's
    statistics also go to the recording."""
    live = None
    if shows_status(args):
        from rich.live import Live

        live = Live(status_table(run, rate, args.backend), refresh_per_second=8, transient=False)
        live.start()
    shown, windows_append = live, run.windows.append

    def report(stats: Any) -> None:
        windows_append(stats)
        if run.mcap is not None:
            run.mcap.loop_stats(stats)
        if shown is not None:
            shown.update(status_table(run, rate, args.backend))

    loop.report = report
    try:
        loop.run()
    finally:
        if live is not None:
            with tolerant("stdout"):
                live.update(status_table(run, rate, args.backend))
                live.stop()


def position_error(arm: Any) -> float:
    """[rad] The largest |commanded - measured| position over the arm's joints (NaN when the arm
    commands no position: damping, release, or no feedback yet)."""
    err = np.abs(np.asarray(arm.pending_command.position, dtype=float) - arm.last_feedback.position)
    return float(err.max()) if err.size and np.isfinite(err).all() else math.nan


def status_table(run: MultiRun, rate: float, backend: str) -> Any:
    """The live status (rich): one row per arm (state, mode, phase (``park brake``, ``park move``, ...
    during a SIGTERM's park), goal progress, position error, its last event), then the loop's last
    second and the group's last event."""
    from rich.markup import escape
    from rich.table import Table

    g = run.group
    t = Table(title=f"hebictl run: {arms_count(len(g.arms))} on {backend}, one loop at {rate:.0f} Hz "
                    "under one arm group")
    for column in ("arm", "state", "mode", "phase", "goal", "position error \\[mrad]", "last event"):
        t.add_column(column)
    for name, arm in g.arms.items():
        err = position_error(arm)
        last = arm.events.last
        park = run.parks.get(name)
        t.add_row(name, arm.state.value, str(arm.mode.value), f"park {park.phase}" if park else run.plans[name].phase,
                  f"{100 * arm.goal_progress:5.1f} %", "-" if math.isnan(err) else f"{err * 1e3:.3f}",
                  escape(f"{last.kind}: {last.detail}") if last is not None else "")
    base = g.base
    if base is not None and run.base_plan is not None:
        last_b = base.events[-1] if base.events else None
        t.add_row(f"{base.name} (base)", base.state.value, "velocity", run.base_plan.phase, "-",
                  "-", escape(f"{last_b.kind}: {last_b.detail}") if last_b is not None else "")
    captions = []
    if run.windows:
        captions.append(f"loop {loop_line(run.windows[-1], rate)}")
    if g.events:
        e = g.events[-1]
        captions.append(escape(f"group: {e.kind} {e.arm or '-'}: {e.detail}"))
    t.caption = "\n".join(captions) or None
    return t


def plot_feeds(args: argparse.Namespace, multi: Any) -> dict[str, Any]:
    """``--plot OUT.png``: per arm a :class:`~hebictl.control.recorder.Recorder` filled off the loop
    thread through its :class:`~hebictl.control.recorder.RecorderFeed` (as for one arm)."""
    if getattr(args, "plot", None) is None:
        return {}
    from hebictl.control.recorder import Recorder, RecorderFeed

    return {name: RecorderFeed(Recorder(arm.dof, arm.model.joint_names)) for name, arm in multi.arms.items()}


def plot_path(out: Path, arm: str) -> Path:
    """Arm ``arm``'s figure of ``--plot OUT.png`` (and of ``hebictl plot RUN.mcap -o OUT.png``): OUT-arm.png."""
    return out.with_name(f"{out.stem}-{arm}{out.suffix or '.png'}")


def plot_arms(args: argparse.Namespace, run: MultiRun) -> list[Path]:
    """One figure per arm (the single-arm figure), the group's events marked on each."""
    if not run.feeds:
        return []
    from types import SimpleNamespace

    from hebictl.plot import plot_recording

    marks = [SimpleNamespace(time=e.time, text=f"group {e.kind} {e.arm or '-'}",
                             level="INFO" if e.kind in ("cleared", "stop") else "WARNING") for e in run.group.events]
    written = []
    for name, feed in run.feeds.items():
        if len(feed.recorder) == 0:
            continue
        written.append(plot_recording(feed.recorder, plot_path(args.plot, name),
                                      title=f"{args.config.name}: arm {name} on {args.backend}", events=marks))
    return written


def multi_recorder(args: argparse.Namespace, multi: Any, group: Any, rate: float) -> Any:
    """``--record RUN.mcap``: one MCAP recorder for every arm (:func:`multi_arm_recorder`); None
    without ``--record``."""
    if args.record is None:
        return None
    from hebictl.recording.mcapfile import parse_mode

    base = getattr(multi, "base", None)
    return multi_arm_recorder(args.record, multi, group, mode=parse_mode(getattr(args, "record_mode", "0600")),
                              metadata={"command": "run", "backend_name": args.backend, "rate_hz": f"{rate:g}"},
                              extra_topics=(wheels_topic(base.name),) if base is not None else ())


def wheels_topic(name: str) -> Any:
    """The base's channel of a ``--record`` file, ``/NAME/wheels`` (:func:`wheels_message` every cycle)."""
    from hebictl.recording.schemas import Topic

    numbers = {"type": "array", "items": {"type": ["number", "null"]}}
    return Topic(f"/{name}/wheels", "hebictl.BaseWheels", "json",
                 "the mobile base every cycle: state, wheel position [rad], measured and commanded velocity "
                 "[rad/s], the latched stop's kind",
                 {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "hebictl.BaseWheels",
                  "type": "object", "properties": {"state": {"type": "string"}, "position": numbers,
                                                   "velocity": numbers, "velocity_command": numbers,
                                                   "stop": {"type": ["string", "null"]}}})


def wheels_message(base: Any) -> dict[str, Any]:
    """One cycle of the base on :func:`wheels_topic` (NaN as null)."""
    def nums(a: Any) -> list[float | None]:
        return [float(x) if math.isfinite(x) else None for x in a]

    return {"state": base.state.value, "position": nums(base.feedback.position),
            "velocity": nums(base.feedback.velocity), "velocity_command": nums(base.velocity_command),
            "stop": base.latch.kind if base.latch is not None else None}


def multi_arm_recorder(path: Any, multi: Any, group: Any, *, names: dict[str, str] | None = None,
                       metadata: dict[str, str], **options: Any) -> Any:
    """One MCAP recorder for every arm of ``multi`` (each arm's topics under ``/NAME``, the group's
    events on ``/group/events``; docs/recording.md), the multi-arm config's text in the metadata and
    attached with each arm's robot config. ``names``: the name each arm is recorded under by its
    config name (``hebictl teleop --arm-id PREFIX``: its arm ids; default the config's names);
    ``options`` go to :class:`~hebictl.recording.writer.McapRecorder` (mode, rotation, ``teleop``)."""
    from hebictl.recording.writer import McapRecorder

    names = names or {name: name for name in multi.arms}
    text = multi.config.path.read_bytes()
    attachments = {"arms.multi.yaml": ("application/yaml", text)}
    for entry in multi.config.arms:
        attachments[f"{names[entry.name]}/robot.cfg.yaml"] = ("application/yaml", entry.config.path.read_bytes())
    return McapRecorder(path, None, arms={names[n]: arm for n, arm in multi.arms.items()}, group=group,
                        bases={names[n]: base for n, base in multi.bases.items()}, attachments=attachments,
                        metadata={**metadata, "config": str(multi.config.path),
                                  "multi_config": text.decode("utf-8", "replace")}, **options)


def summary(run: MultiRun, rate: float, elapsed: float, backend: str) -> None:
    """One block per arm (state, phase, final position, its events), then the group's events."""
    from rich.markup import escape

    c = console(soft_wrap=True)
    t0 = run.group.events[0].time if run.group.events else None
    c.print(f"[bold]done[/bold] after {elapsed:.2f} s: {arms_count(len(run.group.arms))} on {backend}, one loop at "
            f"{rate:.0f} Hz under one arm group")
    for name, arm in run.group.arms.items():
        plan = run.plans[name]
        c.print(f"arm {name} ({arm.model.name}): state={arm.state.value}, phase={plan.phase}, "
                f"final position \\[rad]: {' '.join(f'{x:+.4f}' for x in arm.last_feedback.position)}")
        for e in arm.events.events:
            c.print(f"  {name} event {e.kind} -> {e.state.value}: {escape(e.detail)}")
        if name in run.parks:
            c.print(escape(f"  {name} park ({run.parks[name].why}): {run.parks[name].outcome}"))
    base = run.group.base
    if base is not None:
        phase = run.base_plan.phase if run.base_plan is not None else "-"
        c.print(f"base {base.name} ({base.size} wheels): state={base.state.value}, phase={phase}, velocity "
                f"\\[rad/s] measured {' '.join(f'{x:+.4f}' for x in base.feedback.velocity)}, commanded "
                f"{' '.join(f'{x:+.4f}' for x in base.velocity_command)}")
        for ev in base.events:
            c.print(f"  {base.name} event {ev.kind} -> {ev.state.value}: {escape(ev.detail)}")
    ws = [w for w in run.windows if w.cycles]
    if ws:
        c.print(f"loop: waiting for feedback (every arm's read) p50 "
                f"{float(np.median([w.wait_p50 for w in ws])) * 1e3:.3f} ms, work worst p99 "
                f"{max(w.work_p99 for w in ws) * 1e3:.3f} ms")
    if run.realtime is not None:
        c.print(escape(run.realtime.line()))
    for g in run.group.events:
        when = f"t={g.time - t0:.3f} s " if t0 is not None else ""
        c.print(f"group event {when}{g.kind} {g.arm or '-'}: {escape(g.detail)}")


__all__ = ["ArmPlan", "BasePlan", "MultiRun", "arm_goals", "base_plan", "build_plans", "cmd_run_multi", "exit_code",
           "multi_arm_recorder", "multi_loop", "multi_recorder", "plot_arms", "plot_feeds", "plot_path",
           "position_error", "rest_poses", "run_with_status", "shows_status", "status_table", "summary",
           "wheels_message", "wheels_topic"]
