"""Who may open the panel: the launch secret, operator identities, and the Host/Origin checks.

Reaching the panel's port is not enough to command an arm: every launch makes a fresh secret
(:attr:`Gate.token`, 256 bits) that ``hebictl panel`` prints once as a link, as Jupyter does. The
browser that opens ``/?token=...`` is given an operator identity in a cookie (``HttpOnly``,
``SameSite=Strict``, ``Secure`` over TLS) and redirected to ``/`` so the secret leaves the
address bar; every WebSocket must present that cookie (or, for scripts, the token itself) in its
upgrade request, before a single message is read. Another local user can connect to the port
but cannot read the secret (it is in the operator's terminal, not in the process arguments).

Identities are what the arm sees: each operator's commands carry ``<panel name>/<operator id>``
as their client name, and the e-stop one operator engaged can only be released by that operator
(unless the panel runs with ``--shared-estop-release``).

The DNS-rebinding and cross-site checks: the ``Host`` header's host name must be one of
:attr:`Gate.hosts` (loopback names on loopback; the ``--allowed-host`` list with
``--allow-remote``), and so must the ``Origin`` of a WebSocket upgrade when a browser sends one.
"""

from __future__ import annotations

import collections
import hmac
import secrets
import time
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Operator:
    """One authenticated browser (all its tabs) or script: ``id`` goes into the commands' client name."""

    id: str
    since: float
    browser: bool = True   # opened the launch link (cookie); False: a script presenting the token


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), lower case."""
    try:
        name = urlsplit(f"//{value}").hostname
    except ValueError:
        return None
    return name.lower() if name else None


class Gate:
    """The launch secret, the operators it admitted, and the accepted host names.

    ``max_operators`` bounds the identities kept (the oldest is forgotten first)."""

    def __init__(self, hosts: set[str], *, port_hint: int = 0, secure: bool = False,
                 token: str | None = None, max_operators: int = 256) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.hosts = {h.lower() for h in hosts}
        self.secure = secure
        self.cookie_name = f"hebictl-panel-{port_hint}"  # cookies ignore ports: one name per panel port
        self.max_operators = max_operators
        self._operators: collections.OrderedDict[str, Operator] = collections.OrderedDict()
        self.refused = 0   # requests refused for want of the secret

    # ------------------------------------------------------------------ host names
    def host_ok(self, host_header: str | None) -> bool:
        name = host_name(host_header or "")
        return name is not None and name in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        """A browser's ``Origin`` (``scheme://host[:port]``) names an accepted host."""
        if origin is None:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        want = "https" if self.secure else "http"
        return parts.scheme == want and (parts.hostname or "").lower() in self.hosts

    # ------------------------------------------------------------------ the secret
    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())

    def query_token(self, path: str) -> str | None:
        values = parse_qs(urlsplit(path).query).get("token")
        return values[0] if values else None

    def admit(self) -> tuple[Operator, str]:
        """A new operator identity and the ``Set-Cookie`` value that carries it."""
        cookie = secrets.token_urlsafe(32)
        op = Operator(id=secrets.token_hex(4), since=time.time())
        self._operators[cookie] = op
        while len(self._operators) > self.max_operators:
            self._operators.popitem(last=False)
        flags = "; Secure" if self.secure else ""
        return op, f"{self.cookie_name}={cookie}; Path=/; HttpOnly; SameSite=Strict{flags}"

    def operator(self, headers: Any, path: str) -> Operator | None:
        """The operator a request authenticates as (its cookie, or the launch token for a
        script, which then gets an identity of its own), else None."""
        raw = headers.get("Cookie")
        if raw:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(raw)
            except CookieError:
                jar = SimpleCookie()
            morsel = jar.get(self.cookie_name)
            if morsel is not None:
                for cookie, op in self._operators.items():
                    if hmac.compare_digest(cookie.encode(), morsel.value.encode()):
                        return op
        auth = headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else self.query_token(path)
        if self.token_ok(token):
            return Operator(id=secrets.token_hex(4), since=time.time(), browser=False)
        self.refused += 1
        return None
