"""``hebictl app NAME CONFIG``: HEBI's Mobile IO examples (AR teleop, teach and repeat, the
gravity-compensation toggle, joystick jog) on any backend, from the examples' own config files.

The input is a real Mobile IO (``--input mobileio[:FAMILY/NAME]``), the MQTT input topic
(``mqtt://HOST:PORT[/ARM_ID]``), a script (``script:FILE.json``) or a replay of a recorded session
(``replay:RUN.mcap`` or ``replay:LOG.hebilog``). With a script or a replay on the mock or the sim the
run uses simulated time (as fast as the CPU allows, the same every time); otherwise the wall clock.
Ctrl-C holds the arm and ends the run. See docs/mobile_io.md.
"""

from __future__ import annotations

import argparse
import math
import signal
from pathlib import Path
from typing import Any

from hebictl.cli.output import say
from hebictl.errors import UsageError
from hebictl.hardware.registry import available_backends

APP_NAMES = ("ar", "teach", "repeat", "gravcomp", "jog")


def register(sub: argparse._SubParsersAction) -> None:
    app = sub.add_parser("app", help="HEBI's Mobile IO examples: ar, teach, repeat, gravcomp, jog")
    app.add_argument("name", choices=APP_NAMES, help="which example to run")
    app.add_argument("config", type=Path, nargs="?", help="robot config YAML (HEBI's example configs work unchanged)")
    app.add_argument("--config", dest="config_flag", type=Path, metavar="CONFIG", help="the config, as a flag")
    app.add_argument("--backend", default="mock", choices=available_backends(), help="hardware backend")
    app.add_argument("--input", default="mobileio", metavar="SPEC",
                     help="mobileio[:FAMILY/NAME] | mqtt://HOST:PORT[/ARM_ID] | script:FILE.json | "
                          "replay:RUN.mcap|LOG.hebilog")
    app.add_argument("--path", type=Path, metavar="FILE.json",
                     help="teach: where the taught path is saved; repeat: the path to play")
    app.add_argument("--loops", type=int, default=1, help="repeat: how many times the path is played")
    app.add_argument("--record", type=Path, metavar="RUN.mcap", help="record the run, the input state included")
    app.add_argument("--duration", type=float, default=math.inf, metavar="S",
                     help="end the run after S seconds (default: until the app quits or the input ends)")
    app.add_argument("--workspace-box", type=float, nargs=6, metavar=("X0", "Y0", "Z0", "X1", "Y1", "Z1"),
                     help="Cartesian limits of pose targets [m, world] (default: the arm's reach and table)")
    app.set_defaults(func=cmd_app)


def _clock(args: argparse.Namespace) -> Any:
    from hebictl.hardware.clock import MonotonicClock, SimClock

    offline = args.input.startswith(("script:", "replay:"))
    return SimClock() if offline and args.backend in ("mock", "sim") else MonotonicClock()


def open_source(spec: str, arm: Any, cfg: Any) -> Any:
    """The input source of ``--input SPEC`` (see the module docstring)."""
    from hebictl.inputs import sources

    if spec.startswith("script:"):
        return sources.TimedSource(sources.script_samples(spec[7:]), name="script")
    if spec.startswith("replay:"):
        path = spec[7:]
        samples = sources.hebilog_samples(path) if path.endswith(".hebilog") else sources.recorded_samples(path)
        return sources.TimedSource(samples, name="replay")
    if spec.startswith("mqtt://"):
        from hebictl.inputs.mqtt import MqttInputSource

        return MqttInputSource(spec, arm.clock)
    if spec == "mobileio" or spec.startswith("mobileio:"):
        from hebictl.inputs.layout import layout_path, load_layout
        from hebictl.inputs.mobile_io import MobileIOSource, lookup_group, parse_spec

        family, name = parse_spec(spec, cfg.user_data)
        layout_file = layout_path(cfg.user_data, Path(cfg.path).parent) if cfg.path else None
        layout = load_layout(layout_file) if layout_file is not None and layout_file.is_file() else None
        if layout_file is not None and layout is None:
            say(f"hebictl: warning: the layout {layout_file} is missing; the Mobile IO keeps its current one")
        say(f"waiting for Mobile IO {family}/{name} ...")
        return MobileIOSource(lookup_group(family, name), layout=layout)
    raise UsageError(f"--input {spec}: expected mobileio[:FAMILY/NAME], mqtt://..., script:FILE or replay:FILE")


def _start_at_home(backend: str, cfg: Any) -> dict[str, Any]:
    """On the mock and the sim the arm starts at ``user_data.home_position`` (where HEBI's examples
    home it first); a real arm starts where it is."""
    home = (cfg.user_data or {}).get("home_position")
    if backend in ("mock", "sim") and isinstance(home, list) and len(home) == len(cfg.names):
        return {"initial_position": [float(x) for x in home]}
    return {}


def cmd_app(args: argparse.Namespace) -> int:
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.inputs.runner import make_app, run_app

    config = args.config_flag or args.config
    if config is None:
        raise UsageError("give the robot config: hebictl app NAME CONFIG (or --config CONFIG)")
    if args.loops < 1:
        raise UsageError("--loops must be at least 1")
    cfg = load_config(config)
    clock = _clock(args)
    arm = Arm.from_config(cfg, backend=args.backend, clock=clock, **_start_at_home(args.backend, cfg))
    source = recorder = None
    stop = {"asked": False}

    def on_signal(signum: int, frame: Any) -> None:
        stop["asked"] = True

    previous = signal.signal(signal.SIGINT, on_signal)
    try:
        app = make_app(args.name, arm, box=tuple(args.workspace_box) if args.workspace_box else None,
                       path_file=args.path, loops=args.loops)
        source = open_source(args.input, arm, cfg)
        if args.record is not None:
            from hebictl.inputs.recording import INPUT
            from hebictl.recording.writer import McapRecorder

            recorder = McapRecorder(args.record, arm, config_path=cfg.path, extra_topics=(INPUT,),
                                    metadata={"command": f"app {args.name}", "input": args.input,
                                              "backend_name": args.backend})
        result = run_app(arm, app, source, duration=args.duration, recorder=recorder,
                         end_after_input=hasattr(source, "exhausted"), should_stop=lambda: stop["asked"])
        if stop["asked"]:
            arm.hold(detail="Ctrl-C: app ended")
            for _ in range(200):
                arm.update()
                arm.send()
    finally:
        signal.signal(signal.SIGINT, previous)
        if source is not None:
            source.close()
        if recorder is not None:
            recorder.close()
        arm.close()
    refused = ", ".join(f"{k} {v}" for k, v in sorted(result.refused.items())) or "none"
    say(f"app {args.name}: {result.cycles} cycles, final state {result.state}, {result.accepted} targets admitted, "
        f"refused: {refused}; input stale {result.stale}x, reconnects {result.reconnects}")
    for text in result.notes[-5:]:
        say(f"  {text}")
    return 0
