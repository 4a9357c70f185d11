"""The wire between the arm process and the bridge process of ``hebictl teleop --bridge process``.

Two Unix ``SOCK_SEQPACKET`` socket pairs, both ends non-blocking: one message is one datagram (never
split, never merged), sent whole or not at all. Every message is a small tuple whose first item
names its kind (:data:`TO_ARM` and :data:`TO_BRIDGE` list them), pickled; a message is never larger
than :data:`MAX_MESSAGE` bytes (a snapshot is a few kB).

* the **priority** pair carries e-stop engages, lost broker links and the fleet lease's messages
  (bridge -> arm only): the arm thread reads it first, every cycle;
* the **command** pair carries everything else: commands, jog samples, Mobile IO input samples (and
  the count of those dropped) and refusals the bridge made (bridge -> arm), and snapshots and acks
  (arm -> bridge).

A send never waits: a full socket drops the message and counts it (:attr:`Channel.dropped`); the arm
thread must never block on the bridge. A closed peer (the other process ended) shows as
:attr:`Channel.closed`. Both processes run the same code as the same user, so the pickles are trusted
(the bridge process only ever pickles validated commands, acks and plain values).
"""

from __future__ import annotations

import pickle
import socket
from typing import Any

#: [bytes] the largest message (the receive buffer); a snapshot of a 7-DoF arm is about 3 kB
MAX_MESSAGE = 256 * 1024
#: [bytes] each socket's send and receive buffer: room for a burst of acks or commands
SOCKET_BUFFER = 1024 * 1024

#: bridge -> arm, priority pair: ("estop", arrival, EstopCommand | None, detail),
#: ("link_lost", arrival, detail), ("fleet", topic, payload, retained, received | None)
#: bridge -> arm, command pair: ("submit", arrival, topic, command), ("jog", JogCommand, received | None),
#: ("note_error", reason, detail), ("record_ack", Ack), ("connected", bool, account_tags), ("bridge_stats", dict),
#: ("input", InputState, received), ("input_dropped", reason, detail) (``cmd/input`` for ``--app``)
TO_ARM = ("estop", "link_lost", "fleet", "submit", "jog", "note_error", "record_ack", "connected", "bridge_stats",
          "input", "input_dropped")
#: arm -> bridge, command pair: ("snapshot", ArmSnapshot, fleet status | None), ("ack", Ack)
TO_BRIDGE = ("snapshot", "ack")


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of message sockets (one end per process), with large buffers."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
    return a, b


def encode(message: tuple[Any, ...]) -> bytes:
    """One message as it goes on the wire."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


class Channel:
    """One end of a socket pair: :meth:`send` and :meth:`receive` never block."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.closed = False   # the peer closed its end (its process ended), or the socket failed
        self.sent = 0
        self.dropped = 0      # messages not sent: the socket was full (or closed)
        self._buffer = bytearray(MAX_MESSAGE)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: tuple[Any, ...]) -> bool:
        """Send one message now, or drop and count it (full socket, closed peer): never waits."""
        if self.try_send(encode(message)):
            return True
        self.dropped += 1
        return False

    def try_send(self, data: bytes) -> bool:
        """Send one encoded message now if the socket has room (True); False when it is full or the
        peer is gone (then :attr:`closed`); counts nothing: the caller keeps or drops it."""
        if self.closed:
            return False
        try:
            self.sock.send(data)
        except BlockingIOError:
            return False
        except OSError:  # broken pipe, connection reset: the peer is gone
            self.closed = True
            return False
        self.sent += 1
        return True

    def receive(self, limit: int) -> list[tuple[Any, ...]]:
        """Up to ``limit`` messages waiting now (possibly none); sets :attr:`closed` at the peer's end."""
        out: list[tuple[Any, ...]] = []
        view = memoryview(self._buffer)
        while len(out) < limit and not self.closed:
            try:
                n = self.sock.recv_into(self._buffer)
            except BlockingIOError:
                break
            except OSError:
                self.closed = True
                break
            if n == 0:  # end of file: the peer closed its end
                self.closed = True
                break
            out.append(pickle.loads(view[:n]))
        return out

    def close(self) -> None:
        self.closed = True
        self.sock.close()
