"""``hebictl panel``: serve the browser operator station (docs/panel.md).

It is one more MQTT client under its own broker account: it can do exactly what that account's
ACL allows and nothing more. The web page binds to 127.0.0.1 unless told otherwise; any other
address is refused without ``--allow-remote``, and then only with advice on putting it behind
TLS and a login, because the page itself has neither (whoever reaches it can move the arm).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import sys
from pathlib import Path

from hebictl.errors import ConfigError

REMOTE_ADVICE = """\
The panel has no login and no TLS of its own: whoever reaches it can move the arms its broker
account may command. To reach it from other machines, keep it on 127.0.0.1 and put it behind a
reverse proxy that terminates TLS and asks for a login (WebSocket upgrade on /ws), e.g. Caddy:
    panel.lab.example { basic_auth { operator <bcrypt hash> }  reverse_proxy 127.0.0.1:{port} }
or nginx with `auth_basic` + `ssl_certificate` + `proxy_set_header Upgrade $http_upgrade`, or an
SSH tunnel: ssh -L {port}:127.0.0.1:{port} armhost. Give the panel a broker account whose ACL
grants only what its operators may do (docs/teleop.md, broker set-up)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("panel", help="browser operator station for the arms on an MQTT broker (3D, jog, e-stop)")
    p.add_argument("--broker", default="mqtt://127.0.0.1:1883", help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    p.add_argument("--username", help="broker account (its ACL decides what the panel may command)")
    p.add_argument("--password-file", type=Path, help="file whose first line is the password")
    p.add_argument("--tls-ca", type=Path, help="CA certificate to verify the broker with (enables TLS)")
    p.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS; with --tls-key)")
    p.add_argument("--tls-key", type=Path, help="client certificate's private key")
    p.add_argument("--host", default="127.0.0.1", help="address the web page binds to (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="web page port (default 8080; 0 = any free port)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other than loopback (put it behind TLS and a login: see the message)")
    p.add_argument("--name", help="client name in the commands' envelope (default panel-<host>-<pid>)")
    p.set_defaults(func=cmd_panel)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, port: int, allow_remote: bool) -> None:
    """Refuse a non-loopback bind without ``--allow-remote``; explain how to do it safely either way."""
    if is_loopback(host):
        return
    advice = REMOTE_ADVICE.replace("{port}", str(port))
    print(advice, file=sys.stderr)
    if not allow_remote:
        raise ConfigError(f"refusing to serve the panel on {host}: not a loopback address; "
                          "add --allow-remote once it is behind TLS and a login (see above)", key="host")


def cmd_panel(args: argparse.Namespace) -> int:
    from hebictl.panel.link import PanelLink
    from hebictl.panel.server import PanelServer
    from hebictl.teleop.connection import parse_broker

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}", key="port")
    check_bind(args.host, args.port, args.allow_remote)
    settings = parse_broker(args.broker, username=args.username, password_file=args.password_file,
                            tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key)

    async def main() -> None:
        link = PanelLink(settings, name=args.name)
        hosts = None
        if is_loopback(args.host):
            hosts = set()
        server = PanelServer(link, args.host, args.port, allowed_hosts=hosts)
        started = asyncio.Event()
        tasks = [asyncio.create_task(link.run()), asyncio.create_task(server.serve(started))]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        waiter = asyncio.create_task(stop.wait())
        first = asyncio.create_task(started.wait())
        await asyncio.wait({first, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if started.is_set():
            if hosts is not None:
                hosts.update({f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}",
                              f"{args.host}:{server.port}"})
            print(f"hebictl panel: http://{args.host}:{server.port}/ (broker {settings.url}"
                  f"{', account ' + settings.username if settings.username else ''}; Ctrl-C to stop)",
                  file=sys.stderr, flush=True)
        done, _ = await asyncio.wait({waiter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        link.stop()
        for t in tasks:
            t.cancel()
        for t in done:
            if t is not waiter and not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]

    asyncio.run(main())
    return 0
