"""Cancelling asyncio tasks so that they really end, on Python 3.11 too.

Python 3.11's ``asyncio.wait_for`` (which aiomqtt's ``publish`` uses) can swallow a cancellation
when the awaited future completes in the same loop iteration (CPython gh-86296, fixed in 3.12).
A task looping on such publishes then carries on after ``cancel()``, and whoever gathers it
waits for ever: under load, ``hebictl teleop`` did not stop serving after Ctrl-C. Cancelling
again until the task has ended is the documented workaround.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], retry: float = 0.1) -> None:
    """Cancel ``tasks`` and wait until every one has ended, cancelling again every ``retry`` [s]
    while one is still running (its first cancellation may have been swallowed)."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=retry)
    for t in tasks:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved, so asyncio does not log "exception was never retrieved"
