"""Waiting by events and ordering instead of by the wall clock, for the broker tests of teleop.

Every test here runs beside every other test on a loaded machine: a wait is for an event (an
ack, a status published after a given moment, an arm event) with a timeout that only guards
against a hang, never a ``sleep`` followed by an assertion. :class:`PatientClient` is the real
:class:`~hebictl.teleop.client.TeleopClient` with that hang guard as its default timeout (the
product's 3 s default is what an operator console wants, not what a starved test worker needs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from hebictl.teleop.client import TeleopClient
from hebictl.teleop.messages import Ack

#: [s] the one hang guard of these tests: long enough for any load (at a load average of 67 on two
#: cores an ack through a flooded bridge once took more than 60 s), short enough to end a hang
HANG = 120.0


class PatientClient(TeleopClient):
    """A TeleopClient whose waits default to :data:`HANG` (only a hang guard)."""

    async def send(self, name: str, body: dict[str, Any] | None = None, *, timeout: float = HANG,
                   **kw: Any) -> Ack | None:
        return await super().send(name, body, timeout=timeout, **kw)

    async def wait_for(self, predicate: Callable[[str, dict[str, Any]], bool],
                       timeout: float = HANG) -> dict[str, Any]:
        return await super().wait_for(predicate, timeout)

    async def wait_ack(self, predicate: Callable[[Ack], bool], timeout: float = HANG) -> Ack:
        return await super().wait_ack(predicate, timeout)

    async def wait_status(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = HANG) -> dict[str, Any]:
        return await super().wait_status(predicate, timeout)

    async def status_after(self, t: float, predicate: Callable[[dict[str, Any]], bool] = lambda s: True
                           ) -> dict[str, Any]:
        """The first status published at or after wall time ``t`` (``time.time()``) for which
        ``predicate`` holds: what the arm said after something the test did, not a cached status."""
        return await self.wait_status(lambda s: s["ts"] >= t and predicate(s))

    async def joints_after(self, t: float) -> dict[str, Any]:
        """The first ``state/joints`` the arm sampled at or after wall time ``t``."""
        if self.joints is not None and self.joints["ts"] >= t:
            return self.joints
        return await self.wait_for(lambda n, b: n == "joints" and b["ts"] >= t)


async def until(predicate: Callable[[], bool], what: str, timeout: float = HANG, poll: float = 0.005) -> None:
    """Until ``predicate()`` holds (an event of the arm or the bridge seen from the test's thread);
    the timeout is a hang guard and fails the test with ``what``."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"hang guard: {what} did not happen within {timeout:.0f} s")
        await asyncio.sleep(poll)


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = HANG, poll: float = 0.01) -> None:
    """:func:`until` for a test's own (synchronous) thread."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"hang guard: {what} did not happen within {timeout:.0f} s")
        time.sleep(poll)
