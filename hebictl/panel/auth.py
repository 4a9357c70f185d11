"""Who may open the panel: the launch secret, operator identities, and the Host/Origin checks.

Reaching the panel's port is not enough to command an arm: every launch makes a fresh secret
(:attr:`Gate.token`, 256 bits) that ``hebictl panel`` prints once as a link, as Jupyter does
(``--open`` hands the browser a one-time :meth:`Gate.nonce` instead, never the secret: process
arguments are readable by every local user). The browser that opens ``/?token=...`` (or
``/?nonce=...``) is given an operator identity in two halves:

* a cookie (``HttpOnly``, ``SameSite=Strict``, ``Secure`` over TLS) whose *name* carries a
  random launch id, and
* a key, handed over in the redirect's URL fragment (``/#k=...``, never sent to any server),
  which the page keeps in its origin's ``localStorage`` and sends as the WebSocket's first
  message (``{"t": "auth", "k": ...}``).

Cookies ignore ports: a page another local user serves on ``127.0.0.1:<other port>`` receives the
panel's cookie with every request the operator's browser makes to it. ``localStorage`` is per
origin (scheme, host *and* port), so that page, or a process holding the stolen cookie, still has
no key, and a socket without it is closed before a single command is read. Scripts present the
launch token itself in the upgrade request (``Authorization: Bearer`` or ``?token=``).

Identities are what the arm sees: each operator's commands carry ``<panel name>/<operator id>``
as their client name, and the e-stop one operator engaged can only be released by that operator
(unless the panel runs with ``--shared-estop-release``).

The DNS-rebinding and cross-site checks: the ``Host`` header's host name must be one of
:attr:`Gate.hosts` (loopback names on loopback; the ``--allowed-host`` list with
``--allow-remote``), and the ``Origin`` of a WebSocket upgrade, when a browser sends one, must be
exactly the origin the request is addressed to: the expected scheme, the ``Host`` header's name
and its port (a page on another port of the same host is another origin).
"""

from __future__ import annotations

import collections
import hashlib
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

    ``max_operators`` bounds the identities kept (the oldest is forgotten first); credentials
    are looked up by their SHA-256 (one dictionary lookup, whatever a guesser sends), never
    compared one by one."""

    def __init__(self, hosts: set[str], *, port_hint: int = 0, secure: bool = False,
                 token: str | None = None, max_operators: int = 256) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.hosts = {h.lower() for h in hosts}
        self.secure = secure
        self.launch_id = secrets.token_hex(6)
        # cookies ignore ports, and one of another launch (or another panel) must never be taken for ours
        self.cookie_name = f"hebictl-panel-{port_hint}-{self.launch_id}"
        self.max_operators = max_operators
        self._operators: collections.OrderedDict[bytes, tuple[Operator, bytes]] = collections.OrderedDict()
        self._nonces: dict[bytes, float] = {}   # sha256 of a one-time nonce -> monotonic expiry
        self.refused = 0   # requests refused for want of the secret

    # ------------------------------------------------------------------ host names
    def host_ok(self, host_header: str | None) -> bool:
        name = host_name(host_header or "")
        return name is not None and name in self.hosts

    def origin_ok(self, origin: str | None, host_header: str | None) -> bool:
        """A browser's ``Origin`` (``scheme://host[:port]``) is the very origin the request is
        addressed to: the expected scheme, an accepted host name, and the ``Host`` header's name
        and port (default ports made explicit). No ``Origin``: not a browser, accepted here."""
        if origin is None:
            return True
        want = "https" if self.secure else "http"
        default = 443 if self.secure else 80
        try:
            o = urlsplit(origin)
            h = urlsplit(f"//{host_header or ''}")
            o_port, h_port = o.port or default, h.port or default
        except ValueError:
            return False
        name = (o.hostname or "").lower()
        return (o.scheme == want and name in self.hosts and name == (h.hostname or "").lower()
                and o_port == h_port and not o.path and not o.query)

    # ------------------------------------------------------------------ the secret
    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())

    def query_token(self, path: str) -> str | None:
        return self.query(path, "token")

    @staticmethod
    def query(path: str, name: str) -> str | None:
        values = parse_qs(urlsplit(path).query).get(name)
        return values[0] if values else None

    def nonce(self, ttl: float = 120.0) -> str:
        """A one-time stand-in for the launch secret (``/?nonce=...``), valid ``ttl`` s: what
        ``--open`` gives the browser, so the secret never appears in a process's arguments."""
        now = time.monotonic()
        for k in [k for k, exp in self._nonces.items() if exp < now]:
            del self._nonces[k]
        value = secrets.token_urlsafe(32)
        self._nonces[_digest(value)] = now + ttl
        return value

    def redeem(self, nonce: str | None) -> bool:
        """Use up ``nonce``: True once, if it was issued and has not expired."""
        if not nonce:
            return False
        expiry = self._nonces.pop(_digest(nonce), None)
        return expiry is not None and time.monotonic() <= expiry

    def admit(self) -> tuple[Operator, str, str]:
        """A new operator identity, the ``Set-Cookie`` value that carries one half of it, and the
        key, the other half (for the page's first WebSocket message)."""
        cookie, key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        op = Operator(id=secrets.token_hex(4), since=time.time())
        self._operators[_digest(cookie)] = (op, _digest(key))
        while len(self._operators) > self.max_operators:
            self._operators.popitem(last=False)
        flags = "; Secure" if self.secure else ""
        return op, f"{self.cookie_name}={cookie}; Path=/; HttpOnly; SameSite=Strict{flags}", key

    def key_ok(self, op: Operator, key: Any) -> bool:
        """Whether ``key`` is the other half of browser operator ``op``'s identity."""
        if not isinstance(key, str) or len(key) > 256:
            return False
        want = next((k for o, k in self._operators.values() if o is op), None)
        return want is not None and hmac.compare_digest(want, _digest(key))

    def operator(self, headers: Any, path: str) -> Operator | None:
        """The operator a request authenticates as (its cookie: a browser, which must still show
        its key; or the launch token for a script, which then gets an identity of its own), else None."""
        raw = headers.get("Cookie")
        if raw:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(raw)
            except CookieError:
                jar = SimpleCookie()
            morsel = jar.get(self.cookie_name)
            if morsel is not None:
                entry = self._operators.get(_digest(morsel.value))
                if entry is not None:
                    return entry[0]
        auth = headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else self.query_token(path)
        if self.token_ok(token):
            return Operator(id=secrets.token_hex(4), since=time.time(), browser=False)
        self.refused += 1
        return None


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()
