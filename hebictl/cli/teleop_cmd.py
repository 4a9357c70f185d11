"""``hebictl teleop`` (serve an arm over MQTT) and ``hebictl teleop-send`` (a small operator client).

``teleop`` runs the arm's fixed-rate loop in a thread and the MQTT bridge in a child process
(``--bridge process``, the default: :mod:`hebictl.teleop.bridge_process`, ``--app``'s ``cmd/input``
included; ``--bridge thread`` keeps it in the main thread's event loop, held to the same silence
rule: :mod:`hebictl.teleop.silence`); the arm thread runs at SCHED_FIFO where the
system grants it (``--rt-priority``, ``--cpu``). On Ctrl-C or SIGTERM the bridge disconnects
(``offline``) and the arm stops with the ``hold`` behaviour: it brakes within the rated
deceleration and holds under gravity compensation for ``--stop-hold`` seconds, by default until
a second Ctrl-C after Ctrl-C, and :data:`~hebictl.cli.run_cmd.TERM_HOLD_S` after SIGTERM (a
service manager's stop); it is never released. After the process exits, the modules keep the
hold for their command lifetime and then stop driving.
A config with ``user_data.has_gripper`` gets its gripper opened with the arm
(:mod:`hebictl.control.gripper`). ``teleop-send`` publishes one command (or streams a jog for a
while) and prints its ack as one JSON line (a jog: one line per rejection plus a summary line);
its exit code is 0 when the command was accepted, 1 when rejected, 2 on errors. See
docs/teleop.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import signal
import sys
from pathlib import Path
from typing import Any, cast

from hebictl.cli.output import arms_count, say
from hebictl.cli.run_cmd import TERM_HOLD_S, add_paced_clock_flag, add_realtime_flags, loop_clock, realtime_request
from hebictl.errors import ConfigError, TeleopError, UsageError
from hebictl.hardware.registry import available_backends
from hebictl.teleop.clock import SYSTEM_CLOCK
from hebictl.teleop.silence import REPORT_PERIOD_S, SILENCE_LIMIT_S

#: with no way to ask for a second Ctrl-C (stderr gone), an endless --stop-hold ends after this [s]
UNATTENDED_HOLD_S = 1.0

log = logging.getLogger("hebictl.teleop")


#: (flags, options) of the broker connection, shared by teleop and teleop-send
_BROKER_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--broker",), {"default": "mqtt://127.0.0.1:1883", "metavar": "URL",
                     "help": "mqtt://HOST:PORT or mqtts://HOST:PORT"}),
    (("--arm-id",), {"default": "arm", "help": "topic namespace hebictl/v1/<ARM_ID>/"}),
    (("--username",), {"help": "broker account (default: anonymous)"}),
    (("--password-file",), {"type": Path, "help": "file whose first line is the password"}),
    (("--tls-ca",), {"type": Path, "help": "CA certificate to verify the broker with (enables TLS)"}),
    (("--tls-cert",), {"type": Path, "help": "client certificate (mutual TLS; with --tls-key)"}),
    (("--tls-key",), {"type": Path, "help": "client certificate's private key"}),
    (("--keepalive",), {"type": int, "default": 5, "metavar": "S",
                        "help": "MQTT keepalive [s]: a silent broker is lost after ~1.5x"}),
)

#: teleop-send's own options, accepted before or after the ACTION
_SEND_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--client",), {"default": None, "help": "client name in the envelope (default: operator-<pid>)"}),
    (("--timeout",), {"type": float, "default": 3.0, "metavar": "S", "help": "seconds to wait for the ack"}),
    (("--station",), {"default": None, "metavar": "ID",
                      "help": "act as this fleet station: publish its lease heartbeat at 20 Hz while teleop-send "
                              "runs (and first wait, up to --timeout, for the arm's status to show the lease); "
                              "the id of fleet-estop (docs/fleet.md)"}),
)


def _add_options(p: argparse.ArgumentParser, options: tuple[tuple[tuple[str, ...], dict[str, Any]], ...], *,
                 again: bool = False) -> None:
    """Add ``options``; ``again``: on an ACTION's parser, where they may be repeated after the action.
    There they default to SUPPRESS, so the value given before the action stays unless repeated."""
    for flags, kw in options:
        kw = dict(kw)
        if again:
            if kw.get("default") is not None:
                kw["help"] = f"{kw['help']} (default: {kw['default']})"
            kw["default"] = argparse.SUPPRESS
        p.add_argument(*flags, **kw)


def _settings(args: argparse.Namespace) -> Any:
    """The broker settings; a bad value names its flag (``--broker: ...``), not a config file."""
    from hebictl.teleop.connection import parse_broker

    try:
        return parse_broker(args.broker, username=args.username, password_file=args.password_file,
                            tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key,
                            keepalive=args.keepalive)
    except ConfigError as exc:
        if exc.file is not None:  # a file named by a flag (password, certificate): keep its name
            raise UsageError(str(exc)) from exc
        flag = {"broker": "--broker", "tls": "--tls-cert/--tls-key", "password": "--password-file",
                "username": "--username", "keepalive": "--keepalive"}.get(exc.key or "", "")
        raise UsageError(f"{flag}: {exc.message}" if flag else exc.message) from exc


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


#: [s] --bridge-silence's range: above a few reports (one late report is no wedge), and short enough
#: that an e-stop the wedged bridge holds back is still noticed as a lost link within a minute
SILENCE_MIN_S, SILENCE_MAX_S = 5 * REPORT_PERIOD_S, 60.0


def _silence_limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}")
    if not SILENCE_MIN_S <= value <= SILENCE_MAX_S:
        raise argparse.ArgumentTypeError(f"{value:g} s is outside {SILENCE_MIN_S:g}-{SILENCE_MAX_S:g} s")
    return value


#: --account-tags: None lets the bridge find the broker plugin at its first connection
_ACCOUNT_TAGS: dict[str, bool | None] = {"auto": None, "on": True, "off": False}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("teleop", help="serve an arm over MQTT (goals, jog, e-stop; state at a fixed rate)")
    p.add_argument("config", type=Path, nargs="?",
                   help="robot config YAML (default: the bundled 6-DoF kit), or a multi-arm config ARMS.multi.yaml: "
                        "every arm served on its own topics, in one loop under one supervisor (docs/multi_arm.md)")
    _add_options(p, _BROKER_OPTIONS)
    # None: "arm", or with a multi-arm config each arm's name (--arm-id PREFIX: PREFIX-NAME)
    p.set_defaults(arm_id=None)
    p.add_argument("--backend", default="mock", choices=available_backends(),
                   help="mock: simulated in Python; sim: MuJoCo; hebi: real modules; hebi-imitation: hebi-py's")
    p.add_argument("--rate", type=float, default=None, metavar="HZ",
                   help="arm loop rate [Hz] (default: the config's feedback_frequency)")
    p.add_argument("--state-rate", type=float, default=50.0, metavar="HZ",
                   help="state/joints and state/ee_pose rate [Hz]")
    p.add_argument("--max-age", type=float, default=1.0, metavar="S",
                   help="oldest accepted command [s] by ts (sender's clock: keep clocks in sync)")
    add_paced_clock_flag(p)
    p.add_argument("--stop-hold", type=float, default=None, metavar="S",
                   help="after Ctrl-C/SIGTERM, hold the arm this many seconds before exiting (default: Ctrl-C "
                        f"until a second Ctrl-C; SIGTERM {TERM_HOLD_S:g} s, or, when the config has "
                        "user_data.rest_position, a slow park there and exit within 60 s: docs/stopping.md). "
                        "Given, it holds instead of parking")
    add_realtime_flags(p)
    p.add_argument("--record", type=Path, metavar="DIR",
                   help="record the session (arm, MQTT commands and acks; a multi-arm config: every arm and the "
                        "group's events) as MCAP into DIR: one file per session, rotated by size or time "
                        "(docs/recording.md)")
    p.add_argument("--record-rotate-mb", type=float, default=512.0, help="start the next file at this size [MB]")
    p.add_argument("--record-rotate-min", type=float, default=60.0, help="start the next file after [minutes]")
    p.add_argument("--record-mode", default="0600", metavar="MODE",
                   help="file mode of the recordings (default 0600, folders made 0700: yours only; 0640 shares "
                        "them with your group; docs/recording.md)")
    p.add_argument("--foxglove", action="store_true",
                   help="serve the same data live to Foxglove (ws://HOST:PORT, read-only; docs/recording.md)")
    p.add_argument("--foxglove-host", default="127.0.0.1", help="live view address (loopback unless allowed)")
    p.add_argument("--foxglove-port", type=int, default=8765, help="live view port (0: any free port)")
    p.add_argument("--foxglove-allow-remote", action="store_true",
                   help="let the live view bind a non-loopback address (it has no login: use a TLS proxy)")
    p.add_argument("--app", choices=("ar", "teach", "gravcomp", "jog"), default=None,
                   help="a Mobile IO app (docs/mobile_io.md) that mode 'app' runs from the cmd/input stream "
                        "(the panel's Mobile IO emulator, a phone bridge, any MQTT client)")
    p.add_argument("--bridge", choices=("process", "thread"), default="process",
                   help="where the MQTT bridge runs: a child process (default: a command flood's Python work "
                        "then never holds the arm thread's GIL; --app's cmd/input too) or a thread of this "
                        "process (docs/teleop.md)")
    p.add_argument("--bridge-silence", type=_silence_limit, default=SILENCE_LIMIT_S, metavar="S",
                   help=f"how long the MQTT bridge, once heard, may stay silent (it reports every "
                        f"{REPORT_PERIOD_S:g} s) before the arm brakes and holds for a lost link "
                        f"(default {SILENCE_LIMIT_S:g} s; "
                        f"{SILENCE_MIN_S:g}-{SILENCE_MAX_S:g}; docs/teleop.md)")
    p.add_argument("--account-tags", choices=("auto", "on", "off"), default="auto",
                   help="on: the broker runs the plugin of docs/teleop.md, refuse commands without its account tag; "
                        "auto (default): find out at the first connection")
    p.add_argument("--estop-supervisor", action="append", default=[], metavar="ACCOUNT",
                   help="a broker account whose e-stop release with \"override\": true releases an e-stop another "
                        "account engaged (logged; repeatable)")
    p.add_argument("--fleet-station", action="append", default=[], metavar="ID",
                   help="a station whose fleet lease lets this arm move (repeatable; replaces the config's "
                        "user_data.fleet.stations): without a fresh lease the arm refuses motion and holds "
                        "(docs/fleet.md)")
    p.add_argument("--lease-timeout", type=float, default=None, metavar="S",
                   help="fleet lease timeout [s] (default: user_data.fleet.lease_timeout, else 0.25)")
    p.add_argument("--foxglove-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser origin allowed to open the live view besides https://app.foxglove.dev "
                        "(scheme://host[:port]; repeatable)")
    p.add_argument("--foxglove-max-clients", type=int, default=4, metavar="N",
                   help="live view connections at once (more are refused)")
    p.set_defaults(func=cmd_teleop)

    s = sub.add_parser("teleop-send", help="send one teleop command over MQTT and print its ack")
    _add_options(s, _BROKER_OPTIONS + _SEND_OPTIONS)
    a = s.add_subparsers(dest="send_action", required=True, metavar="ACTION")
    jg = a.add_parser("joint-goal", help="move to joint positions")
    jg.add_argument("--positions", type=float, nargs="+", required=True, metavar="RAD", help="one per joint")
    jg.add_argument("--velocities", type=float, nargs="+", metavar="RAD_S",
                    help="velocities at the goal (default: at rest)")
    jg.add_argument("--duration", type=float, metavar="S", help="seconds (default: estimated from the limits)")
    cg = a.add_parser("cartesian-goal", help="move the end effector (IK on the arm)")
    cg.add_argument("--position", type=float, nargs=3, required=True, metavar=("X", "Y", "Z"),
                    help="end-effector position [m, world frame]")
    cg.add_argument("--orientation", type=float, nargs=4, metavar=("W", "X", "Y", "Z"),
                    help="quaternion (default: any orientation)")
    cg.add_argument("--duration", type=float, metavar="S", help="seconds (default: estimated from the limits)")
    jo = a.add_parser("jog", help="stream a jog velocity with the dead-man held, then let go")
    jo.add_argument("--space", choices=["joint", "cartesian"], default="joint",
                    help="joint: rad/s per joint; cartesian: vx vy vz [m/s] (+ wx wy wz [rad/s])")
    jo.add_argument("--velocity", type=float, nargs="+", required=True, help="the velocity to stream")
    jo.add_argument("--for", dest="seconds", type=float, default=1.0, metavar="S", help="seconds to stream")
    jo.add_argument("--rate", type=float, default=50.0, metavar="HZ", help="messages per second")
    jo.add_argument("--ttl", type=float, default=None, metavar="S",
                    help="how long each sample stays valid (default: the arm's)")
    bv = a.add_parser("velocity", help="a mobile base (--arm-id its id): stream wheel velocities with the dead-man "
                                       "held, then let go (mode velocity first)")
    bv.add_argument("--velocity", type=float, nargs="+", required=True, metavar="RAD_S", help="one per wheel")
    bv.add_argument("--for", dest="seconds", type=float, default=1.0, metavar="S", help="seconds to stream")
    bv.add_argument("--rate", type=float, default=50.0, metavar="HZ", help="messages per second")
    bv.add_argument("--ttl", type=float, default=None, metavar="S",
                    help="how long each sample stays valid (default: the base's, 0.2 s)")
    gr = a.add_parser("gripper", help="gripper opening (a config with user_data.has_gripper moves one)")
    g = gr.add_mutually_exclusive_group(required=True)
    g.add_argument("--position", type=float, help="0 closed .. 1 open")
    g.add_argument("--action", dest="gripper_action", choices=["open", "close"], help="fully open or closed")
    a.add_parser("stop", help="decelerate and hold")
    es = a.add_parser("estop", help="engage or release the e-stop")
    es.add_argument("--engaged", type=_bool, required=True, metavar="true|false", help="engage (true) or release")
    mo = a.add_parser("mode", help="idle | gravcomp | position | jog (a mobile base: idle | velocity)")
    mo.add_argument("mode", choices=["idle", "gravcomp", "position", "jog", "app", "velocity"])
    a.add_parser("status", help="print the arm's retained status")
    le = a.add_parser("lease", help="with --station: lease every arm that authorises the station (heartbeat at "
                                    "20 Hz) until Ctrl-C/SIGTERM or --for S")
    le.add_argument("--for", dest="seconds", type=float, default=math.inf, metavar="S",
                    help="seconds to heartbeat (default: until Ctrl-C or SIGTERM)")
    fe = a.add_parser("fleet-estop", help="with --station: the fleet e-stop (every arm holds, latched), or --clear")
    fe.add_argument("--clear", action="store_true",
                    help="clear it (an authorised station; each arm then needs a new lease and a command)")
    fe.add_argument("--reason", default="", help="a short reason the arms record (at most 200 characters)")
    for action in dict.fromkeys(a.choices.values()):  # options also after the action: mode position --timeout 3
        _add_options(action, _BROKER_OPTIONS + _SEND_OPTIONS, again=True)
    s.set_defaults(func=cmd_teleop_send)


# ---------------------------------------------------------------------- hebictl teleop
def cmd_teleop(args: argparse.Namespace) -> int:
    import aiomqtt  # noqa: F401  (the teleop extra: refuse before the arm is opened, not after)

    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.control.gripper import attach_gripper
    from hebictl.multi_config import is_multi_arm_config
    from hebictl.resources import bundled_config

    settings = _settings(args)
    if args.state_rate <= 0 or (args.rate is not None and args.rate <= 0):
        raise UsageError("--rate and --state-rate must be > 0 Hz")
    if args.stop_hold is not None and not args.stop_hold >= 0:
        raise UsageError("--stop-hold must be >= 0 s (inf: until a second Ctrl-C/SIGTERM)")
    if args.config is not None and is_multi_arm_config(args.config):
        return _teleop_multi(args, settings)
    args.arm_id = _arm_id(args.arm_id or "arm")
    realtime = realtime_request(args)
    cfg = load_config(args.config or bundled_config())
    clock = loop_clock(args)  # after the config: a PacedClock starts on the wall clock when made
    arm = Arm.from_config(cfg, backend=args.backend, clock=clock)
    recorder = None
    try:
        from hebictl.control.park import rest_position

        rest = rest_position(cfg, arm.dof)  # SIGTERM parks there (no --stop-hold): docs/stopping.md
        gripper = attach_gripper(arm, cfg, args.backend)
        app, mobile_io = _app(args, arm, cfg)
        server = _server(args, settings, arm, cfg, args.arm_id, rate_hz=args.rate or cfg.feedback_frequency,
                         gripper=gripper, app=app, mobile_io=mobile_io,
                         realtime={"realtime": realtime, "on_grant": lambda grant: _tell(grant.line())})
        recorder = _session_recorder(args, arm, cfg, inputs=app is not None)
        server.runner.recorder = recorder
        if recorder is not None and app is not None:
            app.record_to(recorder)  # the cmd/input samples the app takes in: replayable (--input replay:)
        _prepare_realtime(realtime)
        banner = (f"hebictl teleop: {cfg.path.name} on {args.backend} at {server.runner.rate_hz:g} Hz"
                  f"{' with its gripper' if gripper is not None else ''}; broker {settings.url}, "
                  f"topics {server.bridge.topics.root}/ (Ctrl-C to stop)")
        asyncio.run(_serve(server, args, {args.arm_id: rest}, banner))
    finally:
        arm.close()
        _close_recorder(recorder)
    return 0


def _close_recorder(recorder: Any) -> None:
    """Close the session's recorder (None: none) and say what it wrote."""
    if recorder is not None:
        done = recorder.close()
        _tell(f"recorded {done.written} of {done.cycles} cycles ({done.dropped} items dropped) to "
              + (", ".join(str(f) for f in done.files) or "the live view only"))


def _arm_id(arm_id: str) -> str:
    """``arm_id`` checked as one topic level (a bad one is a usage error naming --arm-id)."""
    from hebictl.teleop.topics import check_arm_id

    try:
        return check_arm_id(arm_id)
    except ConfigError as exc:
        raise UsageError(f"--arm-id: {exc.message}") from exc


def _server(args: argparse.Namespace, settings: Any, arm: Any, cfg: Any, arm_id: str, *, rate_hz: float,
            gripper: Any, app: Any = None, mobile_io: dict[str, Any] | None = None,
            realtime: dict[str, Any] | None = None, world_base: Any = None) -> Any:
    """One arm's :class:`~hebictl.teleop.server.TeleopServer` as the flags ask (alone, or one of a
    multi-arm config's, whose loop is the group's: ``realtime`` then None, and ``world_base`` the arm's
    base pose in the config's world frame, published in its description so a viewer can draw the
    group's arms in one scene)."""
    from hebictl.teleop.server import TeleopServer

    extra = dict(mobile_io or {})
    if world_base is not None:
        extra["world_base"] = [[float(v) for v in row] for row in world_base]

    return TeleopServer(arm, settings, arm_id, rate_hz=rate_hz, state_rate_hz=args.state_rate, max_age=args.max_age,
                        clock=SYSTEM_CLOCK, gripper=gripper,
                        runner_options={"shutdown_hold": _first_hold(args), **(realtime or {}), "app": app,
                                        "fleet": _fleet(args, cfg, arm_id)},
                        bridge_options={"description": {"config_name": cfg.path.name, "backend": args.backend,
                                                        "extra": extra or None},
                                        "account_tags": _ACCOUNT_TAGS[args.account_tags],
                                        "supervisors": frozenset(args.estop_supervisor)},
                        bridge=args.bridge, silence_limit=args.bridge_silence)


def _prepare_realtime(realtime: Any) -> None:
    """The slow part of the arm thread's real-time set-up (locking memory, freezing the heap) now,
    not between the arm's last feedback read and its first cycle (the thread takes the rest)."""
    from hebictl.control.realtime import CycleGc, lock_memory

    lock_memory(realtime)
    CycleGc.prefreeze()


#: flags of ``hebictl teleop`` a multi-arm config does not take yet (flag, given?)
_NOT_ON_MULTI = (("--app", lambda a: a.app is not None), ("--foxglove", lambda a: a.foxglove))


def _teleop_multi(args: argparse.Namespace, settings: Any) -> int:
    """``hebictl teleop ARMS.multi.yaml``: every arm of a multi-arm config (docs/multi_arm.md) built
    as ``hebictl run`` builds them (one clock; on ``sim`` one scene; each arm an obstacle in the
    others' collision worlds), each served on its own topics ``hebictl/v1/<NAME>/`` (``--arm-id
    PREFIX``: ``PREFIX-NAME``) by its own bridge, all stepped in one loop under one supervisor
    (:class:`~hebictl.teleop.server.GroupServer`, :mod:`hebictl.teleop.group`); a config's mobile base on
    its own topics ``hebictl/v1/<NAME>/`` (:func:`_base_bridge`), stepped in the same loop. ``--record
    DIR``: one session recording of every arm (:func:`_group_recorder`)."""
    from hebictl.cli.run_multi import wheels_message
    from hebictl.control.arm import Arm
    from hebictl.control.park import rest_position
    from hebictl.multi_config import load_multi_arm_config
    from hebictl.teleop.server import GroupServer
    from hebictl.wiring.multi import arms_from_multi_config

    refused = [flag for flag, given in _NOT_ON_MULTI if given(args)]
    if refused:
        raise UsageError(f"{', '.join(refused)}: not yet with a multi-arm config ({args.config.name}); serve its "
                         "arms without it, or one arm's robot config with it (docs/multi_arm.md)")
    record = _record_options(args) if args.record is not None else None   # a bad flag before any arm opens
    realtime = realtime_request(args)
    mcfg = load_multi_arm_config(args.config)
    ids = {e.name: _arm_id(f"{args.arm_id}-{e.name}" if args.arm_id else e.name) for e in mcfg.arms}
    base_id = None if mcfg.base is None else _arm_id(f"{args.arm_id}-{mcfg.base.name}" if args.arm_id
                                                      else mcfg.base.name)
    rate = args.rate or max(e.config.feedback_frequency for e in mcfg.arms)
    clock = loop_clock(args)  # after the config: a PacedClock starts on the wall clock when made
    multi = arms_from_multi_config(Arm, mcfg, args.backend, clock=clock)
    recorder = None
    try:
        servers, rests = {}, {}
        for entry in mcfg.arms:
            arm, arm_id = multi.arms[entry.name], ids[entry.name]
            rests[arm_id] = rest_position(entry.config, arm.dof)  # SIGTERM parks there, as hebictl run's arms
            servers[arm_id] = _server(args, settings, arm, entry.config, arm_id, rate_hz=rate,
                                      gripper=multi.grippers.get(entry.name), world_base=multi.bases[entry.name])
        base = None if base_id is None else _base_bridge(args, settings, multi.base, base_id, rate,
                                                         fleet=_base_fleet(args, mcfg, base_id))
        server = GroupServer(servers, rate_hz=rate, observe=multi.observe, realtime=realtime,
                             on_grant=lambda grant: _tell(grant.line()), base=base)
        if record is not None:
            recorder = _group_recorder(args, multi, server, ids, rate, record, base_id=base_id)
            server.group.record_to(recorder, base_wheels=None if base_id is None else
                                   (f"/{base_id}/wheels", wheels_message))
        _prepare_realtime(realtime)
        banner = (f"hebictl teleop: {mcfg.path.name}: {arms_count(len(servers))} on {args.backend}, "
                  f"one loop at {rate:g} Hz "
                  f"under one arm group; broker {settings.url}, topics "
                  + ", ".join(f"{s.bridge.topics.root}/" for s in servers.values())
                  + ("" if base is None else f"; base {base.topics.root}/ ({multi.base.size} wheels, cmd/velocity)")
                  + " (Ctrl-C to stop)")
        asyncio.run(_serve(server, args, rests, banner))
        for arm_id, runner in server.runners.items():   # what each arm was left doing, then the group's events
            park = runner.park
            _tell(f"arm {arm_id}: {runner.arm.state.value}" + (f", park: {park.outcome}" if park is not None else
                                                               f", holding ({runner.arm.mode.value})"))
        if base is not None:
            b = multi.base
            _tell(f"base {base_id}: {b.state.value}, commanding {' '.join(f'{v:+.2f}' for v in b.velocity_command)} "
                  f"rad/s; counts {base.base_runner.counts}")
        for event in server.group.group.events:
            _tell(f"group event {event.kind} {event.arm or '-'}: {event.detail}")
    finally:
        multi.close()
        _close_recorder(recorder)
    return 0


def _base_bridge(args: argparse.Namespace, settings: Any, base: Any, base_id: str, rate: float, *,
                 fleet: Any = None) -> Any:
    """The mobile base's runner and bridge (:mod:`hebictl.teleop.base`, :mod:`hebictl.teleop.base_bridge`) on
    ``hebictl/v1/<base_id>/``, in a process of its own or a task of this event loop as ``--bridge`` says,
    with the arms' admission (``--max-age``), accounts and supervisors; ``fleet``: its lease gate
    (:func:`_base_fleet`), None without a fleet."""
    from hebictl.teleop.admission import Admission
    from hebictl.teleop.base import BaseRunner
    from hebictl.teleop.base_bridge import BaseBridge
    from hebictl.teleop.bridge_process import BaseBridgeProcess
    from hebictl.teleop.schema import BaseSchema
    from hebictl.teleop.silence import ThreadWatch

    base.period = 1.0 / rate   # its ramp's dt bound and feedback timeout count the loop's cycles
    runner = BaseRunner(base, clock=SYSTEM_CLOCK, fleet=fleet)
    schema = BaseSchema(base.limits.max_velocity, base.limits.command_ttl)
    options: dict[str, Any] = {"account_tags": _ACCOUNT_TAGS[args.account_tags],
                               "supervisors": frozenset(args.estop_supervisor)}
    if args.bridge == "process":
        return BaseBridgeProcess(runner, settings, base_id, schema=schema, max_age=args.max_age, bridge_options=options,
                                 silence_limit=args.bridge_silence)
    admission = Admission(max_age=args.max_age, wall_clock=SYSTEM_CLOCK.wall, monotonic=SYSTEM_CLOCK.monotonic)
    bridge = BaseBridge(runner, settings, base_id, schema=schema, admission=admission, clock=SYSTEM_CLOCK, **options)
    # the silence rule of the bridge thread, as an arm's (hebictl.teleop.silence)
    bridge.watch = runner.port = ThreadWatch(cast(Any, runner), limit=args.bridge_silence)
    return bridge


def _group_recorder(args: argparse.Namespace, multi: Any, server: Any, ids: dict[str, str], rate: float,
                    options: dict[str, Any], *, base_id: str | None = None) -> Any:
    """``--record DIR`` on a multi-arm config: one session recording of every arm, in ``hebictl run``'s
    multi-arm layout (:func:`~hebictl.cli.run_multi.multi_arm_recorder`: each arm's topics, its MQTT
    commands and acks among them, under ``/ARM_ID``; the group's events on ``/group/events``), named,
    made and rotated as one arm's session (``DIR/teleop-<arm ids>-<time>-001.mcap``; ``options``:
    :func:`_record_options`). A mobile base (``base_id``): its wheels every cycle on ``/<base_id>/wheels``,
    as ``hebictl run --record`` records them."""
    from hebictl.cli.run_multi import multi_arm_recorder, wheels_topic
    from hebictl.recording.writer import session_path

    path = session_path(args.record, arm_id="_".join(ids.values()))
    extra = (wheels_topic(base_id),) if base_id is not None else ()
    return multi_arm_recorder(path, multi, server.group.group, names=ids, teleop=True, extra_topics=extra, **options,
                              metadata={"command": "teleop", "backend_name": args.backend, "rate_hz": f"{rate:g}",
                                        "arm_ids": json.dumps(list(ids.values()))})


def _record_options(args: argparse.Namespace) -> dict[str, Any]:
    """The recorder's file mode and rotation from ``--record-mode``, ``--record-rotate-mb`` and
    ``--record-rotate-min`` (checked)."""
    if not (args.record_rotate_mb > 0 and args.record_rotate_min > 0):
        raise ConfigError("--record-rotate-mb and --record-rotate-min must be > 0")
    from hebictl.recording.mcapfile import parse_mode

    return {"mode": parse_mode(args.record_mode), "rotate_bytes": int(args.record_rotate_mb * 1e6),
            "rotate_seconds": args.record_rotate_min * 60.0}


async def _serve(server: Any, args: argparse.Namespace, rests: dict[str, Any], banner: str) -> None:
    """Run ``server`` (a :class:`~hebictl.teleop.server.TeleopServer` or, every arm of a multi-arm
    config, a :class:`~hebictl.teleop.server.GroupServer`) until Ctrl-C/SIGTERM: the first signal
    brakes every arm (then each holds, or parks at its ``rests[arm_id]`` after a SIGTERM without
    ``--stop-hold``), the second ends the hold."""
    from hebictl.control.safety import EventKind

    loop = asyncio.get_running_loop()
    runners, lead = server.runners, server.loop_runner
    signals = {signal.SIGINT: (EventKind.INTERRUPT, "Ctrl-C"), signal.SIGTERM: (EventKind.TERMINATE, "SIGTERM")}
    the_arm = "the arm" if len(runners) == 1 else "every arm"
    stopping: list[asyncio.Task[None]] = []

    async def stop_bridge_once_braking(kind: EventKind) -> None:
        """The offline status shows the stop: the bridge is stopped once the arm thread has
        applied it (at most 0.5 s later; it brakes in its next cycle either way)."""
        deadline = loop.time() + 0.5
        while any(r.snapshot.state != "stopped" for r in runners.values()) and loop.time() < deadline:
            await asyncio.sleep(0.005)
        server.stop(kind)

    def on_signal(sig: signal.Signals) -> None:
        # the arm first: a failed write (stderr closed) must never keep it from stopping
        kind, name = signals[sig]
        if stopping:  # second signal: end the hold and exit
            lead.end_hold()
            _tell(f"{name} again: exiting; the modules keep the hold for their command lifetime")
            return
        lead.begin_shutdown(kind)  # before any write or task: every arm brakes in its next cycle
        stopping.append(loop.create_task(stop_bridge_once_braking(kind)))
        hold = _signal_hold(args, sig)
        for runner in runners.values():
            runner.shutdown_hold = hold
        may_park = server.parkable() if sig == signal.SIGTERM and args.stop_hold is None else set()
        parking = {arm_id: rest for arm_id, rest in rests.items() if rest is not None and arm_id in may_park}
        for arm_id, rest in parking.items():
            _park(runners[arm_id], rest)
        if parking:
            parks = "parks" if len(runners) == 1 else f"{', '.join(parking)} park"
            bound = max(runners[arm_id].shutdown_hold for arm_id in parking)
            _tell(f"{name}: stopping teleop; {the_arm} brakes, then {parks} at user_data.rest_position (at "
                  f"most {bound:g} s, then exits; SIGTERM/Ctrl-C again: brake and exit)")
            return
        endless = hold == math.inf
        shown = _tell(f"{name}: stopping teleop; {the_arm} brakes and holds under gravity compensation ("
                      + ("Ctrl-C again to exit" if endless else f"for {hold:g} s, then exits")
                      + "; once the process has exited a brakeless arm sinks when the modules' command "
                        "lifetime ends)")
        if not shown and endless:  # nobody can be asked for a second Ctrl-C: a bounded hold
            for runner in runners.values():
                runner.shutdown_hold = UNATTENDED_HOLD_S

    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal, sig)
    say(banner)
    await server.run()


def _park(runner: Any, rest: Any) -> None:
    """The shutdown parks at ``rest`` (:mod:`hebictl.control.park`): the runner's close waits up to
    the park's bound, and falls back to TERM_HOLD_S where the park is refused."""
    from hebictl.control.park import PARK_BOUND_S

    runner.park_rest = rest
    runner.park_fallback_hold = TERM_HOLD_S
    runner.shutdown_hold = PARK_BOUND_S


def _signal_hold(args: argparse.Namespace, sig: int) -> float:
    """[s] The hold after ``sig``: ``--stop-hold`` when given, else until a second Ctrl-C after
    Ctrl-C, and TERM_HOLD_S after SIGTERM (what systemd, docker stop and timeout send)."""
    if args.stop_hold is not None:
        return float(args.stop_hold)
    return TERM_HOLD_S if sig == signal.SIGTERM else math.inf


def _first_hold(args: argparse.Namespace) -> float:
    """[s] The hold when the server stops for another reason than a signal (the bridge failed):
    until Ctrl-C with an operator at a terminal, else TERM_HOLD_S (an unattended service exits)."""
    if args.stop_hold is not None:
        return float(args.stop_hold)
    return math.inf if sys.stdin is not None and sys.stdin.isatty() else TERM_HOLD_S


def _app(args: argparse.Namespace, arm: Any, cfg: Any) -> tuple[Any, dict[str, Any] | None]:
    """``--app NAME``: the Mobile IO app of mode ``app`` and the description's ``mobile_io`` (with the
    config's layout, ``user_data.mobile_io_layout``; a missing file is a warning), or (None, None)."""
    if args.app is None:
        return None, None
    from hebictl.inputs.layout import layout_path, load_layout
    from hebictl.inputs.teleop_app import TeleopApp, describe

    app = TeleopApp(arm, args.app)
    layout_file = layout_path(cfg.user_data, Path(cfg.path).parent) if cfg.path else None
    layout = load_layout(layout_file) if layout_file is not None and layout_file.is_file() else None
    if layout_file is not None and layout is None:
        say(f"hebictl: warning: the Mobile IO layout {layout_file} is missing; the panel shows HEBI's default")
    return app, {"mobile_io": describe(app, layout)}


def _fleet(args: argparse.Namespace, cfg: Any, arm_id: str) -> Any:
    """The arm's fleet :class:`~hebictl.teleop.lease.LeaseGate` (``user_data.fleet`` and the flags), or
    None without a fleet; a bad value names its flag, or the config's file, key and line."""
    from hebictl.config import yaml_key_line
    from hebictl.teleop.fleet import fleet_settings

    try:
        settings = fleet_settings(cfg.user_data, stations=args.fleet_station, lease_timeout=args.lease_timeout)
    except ConfigError as exc:
        if exc.key and exc.key.startswith("--"):
            raise UsageError(f"{exc.key}: {exc.message}") from exc
        raise ConfigError(exc.message, file=cfg.path, key=exc.key,
                          line=yaml_key_line(cfg.path, exc.key) if cfg.path else None) from exc
    if settings is None:
        return None
    _tell(f"fleet lease: the arm moves only while a station of {', '.join(settings.stations)} leases it "
          f"(timeout {settings.lease_timeout:g} s; docs/fleet.md)")
    return settings.gate(arm_id)


def _base_fleet(args: argparse.Namespace, mcfg: Any, base_id: str) -> Any:
    """The mobile base's fleet :class:`~hebictl.teleop.lease.LeaseGate`: a teleop process with a fleet
    leases its base exactly as its arms. The flags (``--fleet-station``, ``--lease-timeout``), else the
    arms' ``user_data.fleet`` (every arm that has one must name the same stations and timeout: the
    base takes that; a config whose arms differ is refused); None when no arm has a fleet."""
    from hebictl.teleop.fleet import fleet_settings

    found: dict[Any, str] = {}
    for entry in mcfg.arms:
        try:
            settings = fleet_settings(entry.config.user_data, stations=args.fleet_station,
                                      lease_timeout=args.lease_timeout)
        except ConfigError:
            continue   # the arm's own _fleet reports it, with its file and line
        if settings is not None:
            found.setdefault(settings, entry.name)
    if not found:
        return None
    if len(found) > 1:
        raise ConfigError(f"the arms' user_data.fleet differ ({', '.join(found.values())}): the mobile base "
                          f"{base_id} takes the fleet lease of the arms, so they must name the same stations "
                          "and lease_timeout (or give --fleet-station)", file=mcfg.path, key="user_data.fleet")
    settings = next(iter(found))
    _tell(f"fleet lease: the base {base_id} moves only while a station of {', '.join(settings.stations)} leases it "
          f"(timeout {settings.lease_timeout:g} s; docs/fleet.md)")
    return settings.gate(base_id)


def _session_recorder(args: argparse.Namespace, arm: Any, cfg: Any, *, inputs: bool = False) -> Any:
    """``--record DIR`` and/or ``--foxglove``: the session's recorder (hebictl.recording), or None;
    ``inputs``: with the Mobile IO input channel (``--app``)."""
    if args.record is None and not args.foxglove:
        return None
    options = _record_options(args)
    from hebictl.recording.writer import McapRecorder, session_path

    live = None
    if args.foxglove:
        from hebictl.recording.live import LiveView
        from hebictl.recording.schemas import TOPICS

        live = LiveView(TOPICS, host=args.foxglove_host, port=args.foxglove_port,
                        allow_remote=args.foxglove_allow_remote, name=f"hebictl teleop {args.arm_id}",
                        origins=args.foxglove_origin, max_clients=args.foxglove_max_clients)
        _tell(f"Foxglove live view on {live.url} (read-only; its token is printed below, never logged)")
        print(f"Foxglove: open {live.secret_url}", file=sys.stderr, flush=True)  # the token: terminal only
    path = session_path(args.record, arm_id=args.arm_id) if args.record is not None else None
    extra_topics: tuple[Any, ...] = ()
    if inputs:
        from hebictl.inputs.recording import INPUT

        extra_topics = (INPUT,)
    return McapRecorder(path, arm, config_path=cfg.path, teleop=True, live=live, extra_topics=extra_topics, **options,
                        metadata={"command": "teleop", "backend_name": args.backend, "arm_id": args.arm_id,
                                  "config": str(cfg.path)})


def _tell(message: str) -> bool:
    """A normal operator action: logged at INFO and shown on stderr (the user pressed the key).
    False when stderr is gone; never raises."""
    log.info("%s", message)
    return say(f"hebictl teleop: {message}")


# ---------------------------------------------------------------------- hebictl teleop-send
def cmd_teleop_send(args: argparse.Namespace) -> int:
    return asyncio.run(_send(args))


async def _send(args: argparse.Namespace) -> int:
    import aiomqtt

    from hebictl.teleop.client import TeleopClient

    settings = _settings(args)
    station = _station(args)
    try:
        async with TeleopClient(settings, args.arm_id, name=args.client) as client:
            if station is not None and args.send_action != "fleet-estop":
                ack = await _as_station(client, station, args)
            else:
                ack = await _dispatch(client, args)
    except aiomqtt.MqttError as exc:
        raise TeleopError(f"broker {settings.url}: {exc}") from exc
    except TimeoutError as exc:
        raise TeleopError(f"no answer from arm {args.arm_id!r} within {args.timeout} s "
                          "(is hebictl teleop running with the same --arm-id?)") from exc
    if isinstance(ack, dict):  # status or the jog summary: one JSON line like an ack
        print(json.dumps(ack))
        return 0 if ack.get("accepted", True) else 1
    print(json.dumps(_ack_dict(ack)))
    return 0 if ack.accepted else 1


def _station(args: argparse.Namespace) -> str | None:
    """``--station``, checked; the fleet actions need it."""
    from hebictl.teleop.lease import valid_id

    if args.station is None:
        if args.send_action in ("lease", "fleet-estop"):
            raise UsageError(f"{args.send_action} needs --station ID (the station's id: docs/fleet.md)")
        return None
    if not valid_id(args.station):
        raise UsageError(f"--station: 1-64 characters of A-Z a-z 0-9 _ . -, got {args.station!r}")
    return str(args.station)


async def _as_station(client: Any, station: str, args: argparse.Namespace) -> Any:
    """Heartbeat as ``station`` while the action runs (a new epoch per run). Before any other action,
    wait (up to --timeout) until the arm's status shows the lease, so the command does not race it."""
    from hebictl.teleop.lease import Heartbeat

    stop = asyncio.Event()
    heartbeat = Heartbeat(station)
    beating = asyncio.create_task(client.lease(heartbeat, stop))
    try:
        if args.send_action == "lease":
            return await _lease(heartbeat, stop, args)
        with contextlib.suppress(TimeoutError):  # an arm without this station still answers (no_lease)
            await client.wait_status(lambda s: (s.get("fleet") or {}).get("state") != "no_lease",
                                     timeout=args.timeout)
        return await _dispatch(client, args)
    finally:
        stop.set()
        await beating


async def _lease(heartbeat: Any, stop: asyncio.Event, args: argparse.Namespace) -> dict[str, Any]:
    """``lease``: until SIGINT/SIGTERM or ``--for``; a summary in the shape of an ack."""
    if not args.seconds >= 0:
        raise UsageError("lease --for must be >= 0 s")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    say(f"hebictl teleop-send: station {heartbeat.station} leasing (epoch {heartbeat.epoch}); Ctrl-C to stop")
    start = loop.time()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), None if math.isinf(args.seconds) else args.seconds)
    stop.set()
    return {"topic": "fleet/lease", "accepted": True, "station": heartbeat.station, "epoch": heartbeat.epoch,
            "heartbeats": heartbeat.seq, "seconds": round(loop.time() - start, 3)}


def _ack_dict(ack: Any) -> dict[str, Any]:
    d = {"seq": ack.seq, "client": ack.client, "topic": ack.topic, "accepted": ack.accepted,
         "reason": ack.reason, "detail": ack.detail}
    if ack.coalesced:
        d.update(coalesced=ack.coalesced, last_seq=ack.last_seq)
    return d


async def _dispatch(client: Any, args: argparse.Namespace) -> Any:
    t = args.timeout
    if args.send_action == "joint-goal":
        return await client.joint_goal(args.positions, velocities=args.velocities, duration=args.duration, timeout=t)
    if args.send_action == "cartesian-goal":
        return await client.cartesian_goal(args.position, orientation=args.orientation, duration=args.duration,
                                           timeout=t)
    if args.send_action in ("jog", "velocity"):
        return await _jog(client, args)
    if args.send_action == "gripper":
        return await client.gripper(position=args.position, action=args.gripper_action, timeout=t)
    if args.send_action == "stop":
        return await client.stop(timeout=t)
    if args.send_action == "estop":
        return await client.estop(args.engaged, timeout=t)
    if args.send_action == "mode":
        return await client.mode(args.mode, timeout=t)
    if args.send_action == "status":
        return await client.wait_status(lambda s: True, timeout=t)
    if args.send_action == "fleet-estop":
        if len(args.reason) > 200:
            raise UsageError("fleet-estop --reason: at most 200 characters")
        await client.fleet_estop(args.station, clear=args.clear, reason=args.reason)
        return {"topic": "fleet/estop", "accepted": True, "station": args.station, "clear": args.clear,
                "detail": "published (QoS 1): " + ("cleared; each arm needs a new lease and a command" if args.clear
                                                   else "every arm in the fleet holds, latched")}
    raise UsageError(f"unknown action {args.send_action}")


#: the bridge acks rejected jog samples at most every 0.2 s per client and reason (docs/teleop.md);
#: with no new rejection ack for this long after the dead-man release, every sample is answered
JOG_ACK_QUIET_S = 0.5


async def _jog(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Stream the jog, let go of the dead-man, wait until every sample is answered, print each
    rejection ack as one line and return a summary in the shape of an ack.

    Accepted jog samples are not acked one by one (a stream); rejected ones are, coalesced per
    reason. "Every sample answered" therefore means: the rejection acks cover all samples, or no
    further rejection ack came for JOG_ACK_QUIET_S after the release (the rest were accepted)."""
    action = args.send_action
    if args.rate <= 0 or args.seconds < 0:
        raise UsageError(f"{action} --rate must be > 0 and --for >= 0")

    async def sample(velocity: list[float], *, deadman: bool, seq: int) -> None:
        if action == "velocity":   # a mobile base's wheels
            await client.base_velocity(velocity, deadman=deadman, ttl=args.ttl, seq=seq)
        else:
            await client.jog(velocity, space=args.space, deadman=deadman, ttl=args.ttl, seq=seq)

    monotonic = SYSTEM_CLOCK.monotonic
    period = 1.0 / args.rate
    end = monotonic() + args.seconds
    next_t = monotonic()
    first_seq: int | None = None
    sent = 0
    while monotonic() < end:
        seq = client.next_seq()
        first_seq = seq if first_seq is None else first_seq
        await sample(args.velocity, deadman=True, seq=seq)
        sent += 1
        next_t += period
        await asyncio.sleep(max(0.0, next_t - monotonic()))
    release_seq = client.next_seq()
    first_seq = release_seq if first_seq is None else first_seq
    await sample([0.0] * len(args.velocity), deadman=False, seq=release_seq)
    samples = sent + 1

    def rejections() -> list[Any]:
        return [a for a in client.acks if a.client == client.name and not a.accepted and a.seq is not None
                and first_seq <= a.seq <= release_seq]

    released = last_change = monotonic()
    seen = 0
    while True:
        acks = rejections()
        answered = sum(1 + a.coalesced for a in acks)
        if len(acks) != seen:
            seen, last_change = len(acks), monotonic()
        now = monotonic()
        if answered >= samples or now - last_change >= JOG_ACK_QUIET_S or now - released >= args.timeout:
            break
        await asyncio.sleep(0.02)
    for a in acks:
        print(json.dumps(_ack_dict(a)))
    first = acks[0] if acks else None
    return {"seq": release_seq, "client": client.name, "topic": action, "accepted": not acks,
            "reason": "" if first is None else first.reason,
            "detail": f"{samples} samples: {sent} streamed at {args.rate:g}/s, then the dead-man release; "
                      f"{answered} rejected (in {len(acks)} acks), {samples - answered} accepted (accepted {action} "
                      f"samples are not acked one by one)" + ("" if first is None else f"; {first.detail}"),
            "samples": samples, "rejected": answered}
