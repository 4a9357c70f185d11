"""``hebictl teleop`` (serve an arm over MQTT) and ``hebictl teleop-send`` (a small operator client).

``teleop`` runs the arm's fixed-rate loop in a thread and the MQTT bridge in the main thread's
event loop until Ctrl-C or SIGTERM, then holds the arm briefly and releases it. ``teleop-send``
publishes one command (or streams a jog for a while) and prints the ack as JSON; its exit code is
0 when the command was accepted, 1 when rejected, 2 on errors. See docs/teleop.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from hebictl.errors import ConfigError, TeleopError
from hebictl.hardware.registry import available_backends


def _broker_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--broker", default="mqtt://127.0.0.1:1883", help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    p.add_argument("--arm-id", default="arm", help="topic namespace hebictl/v1/<ARM_ID>/ (default: arm)")
    p.add_argument("--username", help="broker account")
    p.add_argument("--password-file", type=Path, help="file whose first line is the password")
    p.add_argument("--tls-ca", type=Path, help="CA certificate to verify the broker with (enables TLS)")
    p.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS; with --tls-key)")
    p.add_argument("--tls-key", type=Path, help="client certificate's private key")
    p.add_argument("--keepalive", type=int, default=5, help="MQTT keepalive [s]: a silent broker is lost after ~1.5x")


def _settings(args: argparse.Namespace) -> Any:
    from hebictl.teleop.connection import parse_broker

    return parse_broker(args.broker, username=args.username, password_file=args.password_file,
                        tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key, keepalive=args.keepalive)


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("teleop", help="serve an arm over MQTT (goals, jog, e-stop; state at a fixed rate)")
    p.add_argument("config", type=Path, nargs="?", help="robot config YAML (default: the bundled 6-DoF kit)")
    _broker_args(p)
    p.add_argument("--backend", default="mock", choices=available_backends())
    p.add_argument("--rate", type=float, default=None, help="arm loop rate [Hz] (default: feedback_frequency)")
    p.add_argument("--state-rate", type=float, default=50.0, help="state/joints and state/ee_pose rate [Hz]")
    p.add_argument("--max-age", type=float, default=1.0,
                   help="oldest accepted command [s] by ts (sender's clock: keep clocks in sync)")
    p.set_defaults(func=cmd_teleop)

    s = sub.add_parser("teleop-send", help="send one teleop command over MQTT and print its ack")
    _broker_args(s)
    s.add_argument("--client", default=None, help="client name in the envelope (default operator-<pid>)")
    s.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the ack")
    a = s.add_subparsers(dest="send_action", required=True, metavar="ACTION")
    jg = a.add_parser("joint-goal", help="move to joint positions")
    jg.add_argument("--positions", type=float, nargs="+", required=True, metavar="RAD")
    jg.add_argument("--velocities", type=float, nargs="+", metavar="RAD_S")
    jg.add_argument("--duration", type=float, help="seconds (default: estimated from the limits)")
    cg = a.add_parser("cartesian-goal", help="move the end effector (IK on the arm)")
    cg.add_argument("--position", type=float, nargs=3, required=True, metavar=("X", "Y", "Z"))
    cg.add_argument("--orientation", type=float, nargs=4, metavar=("W", "X", "Y", "Z"))
    cg.add_argument("--duration", type=float)
    jo = a.add_parser("jog", help="stream a jog velocity with the dead-man held, then let go")
    jo.add_argument("--space", choices=["joint", "cartesian"], default="joint")
    jo.add_argument("--velocity", type=float, nargs="+", required=True)
    jo.add_argument("--for", dest="seconds", type=float, default=1.0, help="seconds to stream (default 1)")
    jo.add_argument("--rate", type=float, default=50.0, help="messages per second (default 50)")
    jo.add_argument("--ttl", type=float, default=None)
    gr = a.add_parser("gripper", help="gripper opening (recorded only: no gripper hardware)")
    g = gr.add_mutually_exclusive_group(required=True)
    g.add_argument("--position", type=float, help="0 closed .. 1 open")
    g.add_argument("--action", dest="gripper_action", choices=["open", "close"])
    a.add_parser("stop", help="decelerate and hold")
    es = a.add_parser("estop", help="engage or release the e-stop")
    es.add_argument("--engaged", type=_bool, required=True, metavar="true|false")
    mo = a.add_parser("mode", help="idle | gravcomp | position | jog")
    mo.add_argument("mode", choices=["idle", "gravcomp", "position", "jog"])
    a.add_parser("status", help="print the arm's retained status")
    s.set_defaults(func=cmd_teleop_send)


# ---------------------------------------------------------------------- hebictl teleop
def cmd_teleop(args: argparse.Namespace) -> int:
    from hebictl.config import load_config
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import MonotonicClock
    from hebictl.resources import bundled_config
    from hebictl.teleop.server import TeleopServer
    from hebictl.teleop.topics import check_arm_id

    check_arm_id(args.arm_id)
    settings = _settings(args)
    if args.state_rate <= 0 or (args.rate is not None and args.rate <= 0):
        raise ConfigError("--rate and --state-rate must be > 0 Hz")
    cfg = load_config(args.config or bundled_config())
    arm = Arm.from_config(cfg, backend=args.backend, clock=MonotonicClock())
    try:
        server = TeleopServer(arm, settings, args.arm_id, rate_hz=args.rate or cfg.feedback_frequency,
                              state_rate_hz=args.state_rate, max_age=args.max_age,
                              bridge_options={"description": {"config_name": cfg.path.name, "backend": args.backend}})

        async def main() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, server.stop)
            print(f"hebictl teleop: {cfg.path.name} on {args.backend} at {server.runner.rate_hz:g} Hz; "
                  f"broker {settings.url}, topics {server.bridge.topics.root}/ (Ctrl-C to stop)", file=sys.stderr)
            await server.run()

        asyncio.run(main())
    finally:
        arm.close()
    return 0


# ---------------------------------------------------------------------- hebictl teleop-send
def cmd_teleop_send(args: argparse.Namespace) -> int:
    return asyncio.run(_send(args))


async def _send(args: argparse.Namespace) -> int:
    import aiomqtt

    from hebictl.teleop.client import TeleopClient

    settings = _settings(args)
    try:
        async with TeleopClient(settings, args.arm_id, name=args.client) as client:
            ack = await _dispatch(client, args)
    except aiomqtt.MqttError as exc:
        raise TeleopError(f"broker {settings.url}: {exc}") from exc
    except TimeoutError as exc:
        raise TeleopError(f"no answer from arm {args.arm_id!r} within {args.timeout} s "
                          "(is hebictl teleop running with the same --arm-id?)") from exc
    if ack is None:
        return 0
    if isinstance(ack, dict):
        print(json.dumps(ack, indent=2))
        return 0
    print(json.dumps({"seq": ack.seq, "client": ack.client, "topic": ack.topic, "accepted": ack.accepted,
                      "reason": ack.reason, "detail": ack.detail}))
    return 0 if ack.accepted else 1


async def _dispatch(client: Any, args: argparse.Namespace) -> Any:
    t = args.timeout
    if args.send_action == "joint-goal":
        return await client.joint_goal(args.positions, velocities=args.velocities, duration=args.duration, timeout=t)
    if args.send_action == "cartesian-goal":
        return await client.cartesian_goal(args.position, orientation=args.orientation, duration=args.duration,
                                           timeout=t)
    if args.send_action == "jog":
        if args.rate <= 0 or args.seconds < 0:
            raise ConfigError("jog --rate must be > 0 and --for >= 0")
        period = 1.0 / args.rate
        end = time.monotonic() + args.seconds
        next_t = time.monotonic()
        while time.monotonic() < end:
            await client.jog(args.velocity, space=args.space, deadman=True, ttl=args.ttl)
            next_t += period
            await asyncio.sleep(max(0.0, next_t - time.monotonic()))
        await client.jog([0.0] * len(args.velocity), space=args.space, deadman=False, ttl=args.ttl)
        rejected = [a for a in client.acks if a.client == client.name and not a.accepted]
        return rejected[0] if rejected else None
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
    raise ConfigError(f"unknown action {args.send_action}")
