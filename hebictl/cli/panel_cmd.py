"""``hebictl panel``: serve the browser operator station (docs/panel.md).

It is one more MQTT client under its own broker account: it can do exactly what that account's
ACL allows and nothing more. Each launch makes a secret and prints the link that carries it (as
Jupyter does); only a browser that opened that link, or a script that presents the secret, gets a
WebSocket. ``--open`` never puts that secret in the browser's arguments (every local user can
read ``/proc/<pid>/cmdline``): the browser is given a file (mode 0600, in a private directory) that
forwards it to a one-time nonce link (:func:`open_browser`). The page binds to 127.0.0.1 unless
told otherwise; any other address needs
``--allow-remote`` and an explicit ``--allowed-host`` list (the only ``Host``/``Origin`` names
accepted), and TLS (``--web-cert``/``--web-key``) or a loud warning.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import ipaddress
import os
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import threading
import webbrowser
from pathlib import Path

from hebictl.errors import ConfigError

REMOTE_ADVICE = """\
The panel checks a launch token but has no TLS unless given --web-cert/--web-key: on a network,
whoever can read the traffic can read the token and move the arms its broker account may command.
Prefer keeping it on 127.0.0.1 behind a reverse proxy that terminates TLS and asks for a login
(WebSocket upgrade on /ws), e.g. Caddy:
    panel.lab.example { basic_auth { operator <bcrypt hash> }  reverse_proxy 127.0.0.1:{port} }
or nginx with `auth_basic` + `ssl_certificate` + `proxy_set_header Upgrade $http_upgrade`, or an
SSH tunnel: ssh -L {port}:127.0.0.1:{port} armhost. Give the panel a broker account whose ACL
grants only what its operators may do (docs/teleop.md, broker set-up)."""
NO_TLS_WARNING = """\
##########################################################################################
# WARNING: the panel is served to the network WITHOUT TLS. Its launch token and every     #
# command travel in clear text: anyone on the network path can take over the arms.        #
# Use --web-cert/--web-key, or a TLS reverse proxy in front of a loopback-only panel.     #
##########################################################################################"""


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
    p.add_argument("--unix", type=Path, metavar="PATH",
                   help="serve on this Unix socket (mode 0600: this user only) instead of --host/--port, "
                        "e.g. behind a reverse proxy")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other than loopback (needs --allowed-host; use TLS: see the message)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="with --allow-remote: a host name browsers use to reach the panel (repeat for several); "
                        "Host and Origin headers naming anything else are refused")
    p.add_argument("--web-cert", type=Path, help="TLS certificate (PEM) for the web page (with --web-key)")
    p.add_argument("--web-key", type=Path, help="private key (PEM) of --web-cert")
    p.add_argument("--max-sessions", type=int, default=50, help="open browser sockets at most (default 50)")
    p.add_argument("--shared-estop-release", action="store_true",
                   help="let any operator release an e-stop another operator engaged (default: only them)")
    p.add_argument("--open", action="store_true",
                   help="open the panel in the default browser (through a private file and a one-time link: "
                        "the launch secret never goes into the browser's process arguments)")
    p.add_argument("--name", help="client name in the commands' envelope (default panel-<host>-<pid>)")
    p.set_defaults(func=cmd_panel)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, port: int, allow_remote: bool, allowed_hosts: list[str] | None = None,
               tls: bool = False) -> set[str]:
    """The host names the panel accepts in ``Host``/``Origin``; refuses a non-loopback bind
    without ``--allow-remote`` and an explicit ``--allowed-host`` list, and explains how to do
    it safely either way (a loud warning without TLS)."""
    if is_loopback(host):
        return {"127.0.0.1", "localhost", "::1", host.lower()} | {h.lower() for h in allowed_hosts or []}
    advice = REMOTE_ADVICE.replace("{port}", str(port))
    print(advice, file=sys.stderr)
    if not allow_remote:
        raise ConfigError(f"refusing to serve the panel on {host}: not a loopback address; "
                          "add --allow-remote and --allowed-host NAME once it is behind TLS (see above)", key="host")
    if not allowed_hosts:
        raise ConfigError("--allow-remote needs the host names browsers will use: --allowed-host NAME "
                          "(repeat for several); other Host and Origin headers are refused (DNS rebinding)",
                          key="allowed_host")
    if not tls:
        print(NO_TLS_WARNING, file=sys.stderr)
    return {h.lower() for h in allowed_hosts}


def _tls_context(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError("--web-cert and --web-key go together", key="web_cert")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the web page's TLS certificate: {exc}", file=cert) from None
    return ctx


def _resolve(host: str, port: int) -> None:
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot serve the panel on --host {host!r}: {exc.strerror or exc}", key="host") from None


def open_browser(url: str) -> Path:
    """Open ``url`` (which carries a one-time nonce) in the default browser without putting it in
    the browser's process arguments: they get the path of an HTML file that forwards to ``url``,
    in a fresh directory only this user may enter (0700), the file 0600, as Jupyter does. Started
    from a thread of its own: ``webbrowser`` waits for some browsers (``$BROWSER``) to exit.
    Returns the directory, which the caller removes when the panel stops."""
    folder = Path(tempfile.mkdtemp(prefix="hebictl-panel-", dir=os.environ.get("XDG_RUNTIME_DIR") or None))
    page = folder / "open.html"
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
                f'<title>hebictl panel</title><p><a href="{url}">Open the hebictl panel</a></p>\n')

    def start() -> None:
        with contextlib.suppress(Exception):
            webbrowser.open(page.as_uri())

    threading.Thread(target=start, name="hebictl-panel-open", daemon=True).start()
    return folder


def cmd_panel(args: argparse.Namespace) -> int:
    from hebictl.panel.auth import Gate
    from hebictl.panel.link import PanelLink
    from hebictl.panel.server import PanelServer
    from hebictl.teleop.connection import parse_broker

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}", key="port")
    if args.max_sessions < 1:
        raise ConfigError(f"--max-sessions must be at least 1, got {args.max_sessions}", key="max_sessions")
    _resolve(args.host, args.port)
    tls = _tls_context(args.web_cert, args.web_key)
    hosts = check_bind(args.host, args.port, args.allow_remote, args.allowed_host, tls is not None)
    settings = parse_broker(args.broker, username=args.username, password_file=args.password_file,
                            tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key)

    async def main() -> None:
        link = PanelLink(settings, name=args.name)
        gate = Gate(hosts, port_hint=args.port, secure=tls is not None)
        server = PanelServer(link, args.host, args.port, gate=gate, max_sessions=args.max_sessions,
                             shared_estop_release=args.shared_estop_release, ssl=tls,
                             unix_path=None if args.unix is None else str(args.unix))
        started = asyncio.Event()
        tasks = [asyncio.create_task(server.serve(started))]  # the port first: a busy one is the only message
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        waiter = asyncio.create_task(stop.wait())
        first = asyncio.create_task(started.wait())
        opened: Path | None = None
        await asyncio.wait({first, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if started.is_set():
            # everything loaded so far lives as long as the process: out of the collector's sight, so a
            # full collection does not walk it (modules, numpy, the schemas) while an e-stop waits in the loop
            gc.freeze()
            tasks.append(asyncio.create_task(link.run()))
            name = args.host if is_loopback(args.host) else sorted(hosts)[0]
            name = f"[{name}]" if ":" in name else name
            url = f"{'https' if tls else 'http'}://{name}:{server.port}/?token={gate.token}"
            if args.unix is not None:
                url = f"/?token={gate.token} on unix:{args.unix} (Host: localhost)"
            print(f"hebictl panel: open {url}\n  (broker {settings.url}"
                  f"{', account ' + settings.username if settings.username else ''}; the link holds this launch's "
                  "secret: do not share it; Ctrl-C to stop)", file=sys.stderr, flush=True)
            if args.open and args.unix is None:
                opened = open_browser(url.replace(f"?token={gate.token}", f"?nonce={gate.nonce()}"))
        try:
            done, _ = await asyncio.wait({waiter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if opened is not None:
                shutil.rmtree(opened, ignore_errors=True)
        link.stop()
        for t in tasks:
            t.cancel()
        first.cancel()
        for finished in done:
            failure = finished.exception() if finished is not waiter and not finished.cancelled() else None
            if failure is not None:
                raise failure

    asyncio.run(main())
    return 0
