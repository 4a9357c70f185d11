"""A private mosquitto broker on a loopback port, for tests, benchmarks and local trials.

:class:`LocalBroker` writes a mosquitto 2.x config into a directory of its own, starts the
``mosquitto`` binary on ``127.0.0.1:PORT``, and can be killed and restarted on the same port
(to test what the arm does when its broker dies). With ``users`` it runs the secured set-up of
``docs/teleop.md``: a password file made with ``mosquitto_passwd`` and an ACL where operators
may write ``cmd/#`` and read ``state/#`` and the arm the reverse (:func:`acl_text`).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from hebictl.errors import InstallationError, TeleopError
from hebictl.teleop.topics import PREFIX, check_arm_id


def find_mosquitto() -> str | None:
    """Path of the ``mosquitto`` binary (Debian installs it in /usr/sbin), or None."""
    return shutil.which("mosquitto") or next((p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
                                              if os.access(p, os.X_OK)), None)


def find_mosquitto_passwd() -> str | None:
    return shutil.which("mosquitto_passwd") or next((p for p in ("/usr/bin/mosquitto_passwd",
                                                                 "/usr/sbin/mosquitto_passwd")
                                                     if os.access(p, os.X_OK)), None)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_password_file(path: Path, users: Mapping[str, str]) -> Path:
    """A mosquitto password file with hashed passwords for ``users`` (name -> password)."""
    tool = find_mosquitto_passwd()
    if tool is None:
        raise InstallationError("mosquitto_passwd not found (apt-get install mosquitto)")
    path.write_text("")
    path.chmod(0o600)
    for user, password in users.items():
        subprocess.run([tool, "-b", str(path), user, password], check=True, capture_output=True, timeout=30)
    return path


def acl_text(arms: Mapping[str, str], operators: Sequence[str], viewers: Sequence[str] = (),
             stations: Sequence[str] = ()) -> str:
    """mosquitto ACL: each arm account (user -> arm id) reads its ``cmd/#`` and the fleet topics
    and writes its ``state/#``; each operator writes every arm's ``cmd/#`` and the fleet e-stop,
    and reads every ``state/#``; each fleet station (docs/fleet.md) writes the fleet lease and
    e-stop and reads every ``state/#``; each viewer only reads ``state/#``. Anything not granted is
    denied (mosquitto's default once an ACL file is set), so only stations can lease an arm."""
    lines = ["# hebictl teleop ACL: operators command, stations lease, arms report; nothing else is allowed", ""]
    for user, arm_id in arms.items():
        check_arm_id(arm_id)
        lines += [f"user {user}", f"topic read {PREFIX}/{arm_id}/cmd/#", f"topic read {PREFIX}/fleet/#",
                  f"topic write {PREFIX}/{arm_id}/state/#", ""]
    for user in operators:
        lines += [f"user {user}", f"topic write {PREFIX}/+/cmd/#", f"topic write {PREFIX}/fleet/estop",
                  f"topic read {PREFIX}/+/state/#", ""]
    for user in stations:
        lines += [f"user {user}", f"topic write {PREFIX}/fleet/#", f"topic read {PREFIX}/+/state/#", ""]
    for user in viewers:
        lines += [f"user {user}", f"topic read {PREFIX}/+/state/#", ""]
    return "\n".join(lines)


class LocalBroker:
    """mosquitto on ``127.0.0.1:port`` (a free port by default) with its files in ``directory``.

    ``users`` (name -> password) plus ``arms`` (user -> arm id) and ``operators`` switch on
    authentication and the ACL; without them any client may connect and publish anywhere."""

    def __init__(self, directory: str | Path, *, port: int | None = None, users: Mapping[str, str] | None = None,
                 arms: Mapping[str, str] | None = None, operators: Sequence[str] = (), viewers: Sequence[str] = (),
                 tls: tuple[str | Path, str | Path, str | Path] | None = None, binary: str | None = None,
                 plugins: Sequence[str | Path] = (), stations: Sequence[str] = ()) -> None:
        """``stations``: accounts of fleet stations (:func:`acl_text`). ``tls`` = (CA certificate,
        server certificate, server key) files switches the listener
        to TLS (clients then connect with ``mqtts://`` and ``--tls-ca``); ``plugins`` are mosquitto
        plugin libraries to load (e.g. the one of docs/teleop.md that refuses retained commands)."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        found = binary or find_mosquitto()
        if found is None:
            raise InstallationError("mosquitto not found (apt-get install mosquitto)")
        self.binary: str = found
        self.users = dict(users or {})
        self.arms = dict(arms or {})
        self.operators = list(operators)
        self.viewers = list(viewers)
        self.stations = list(stations)
        self.tls = tuple(Path(p) for p in tls) if tls is not None else None
        self.plugins = [Path(p) for p in plugins]
        self.process: subprocess.Popen[bytes] | None = None
        self.config_path = self._write_config()

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        d = self.directory
        lines = [f"listener {self.port} 127.0.0.1", "set_tcp_nodelay true", "persistence false", "log_dest stderr",
                 "log_type error", "log_type warning", "log_type notice"]
        if self.tls is not None:
            ca, cert, key = self.tls
            lines += [f"cafile {ca}", f"certfile {cert}", f"keyfile {key}", "tls_version tlsv1.2"]
        if os.geteuid() == 0:
            lines.append(f"user {getpass.getuser()}")  # keep root so it can read its 0600 files here
        if self.users:
            pw = write_password_file(d / "passwords", self.users)
            acl = d / "acl"
            acl.write_text(acl_text(self.arms, self.operators, self.viewers, self.stations))
            acl.chmod(0o600)
            lines += ["allow_anonymous false", f"password_file {pw}", f"acl_file {acl}"]
        else:
            lines.append("allow_anonymous true")
        lines += [f"plugin {p}" for p in self.plugins]
        path = d / "mosquitto.conf"
        path.write_text("\n".join(lines) + "\n")
        return path

    def start(self, timeout: float = 10.0) -> None:
        """Start mosquitto and wait until it accepts connections."""
        if self.process is not None and self.process.poll() is None:
            return
        log = (self.directory / "mosquitto.log").open("ab")
        self.process = subprocess.Popen([self.binary, "-c", str(self.config_path)], stdout=log, stderr=log,
                                        stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise TeleopError(f"mosquitto exited with code {self.process.returncode}: {self.log_tail()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return
            time.sleep(0.02)
        self.stop()
        raise TeleopError(f"mosquitto did not listen on port {self.port} within {timeout} s: {self.log_tail()}")

    def stop(self, *, kill: bool = True, timeout: float = 5.0) -> None:
        """Kill (SIGKILL: a crash, no goodbye to clients) or terminate (SIGTERM) the broker."""
        p = self.process
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout)
        self.process = None

    def restart(self, timeout: float = 10.0) -> None:
        self.stop()
        self.start(timeout)

    def log_tail(self, n: int = 2000) -> str:
        p = self.directory / "mosquitto.log"
        return p.read_text(errors="replace")[-n:] if p.exists() else ""

    def __enter__(self) -> LocalBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
