"""A real mosquitto on a free loopback port, for every folder whose tests talk MQTT.

Nothing is mocked: :class:`hebictl.teleop.broker.LocalBroker` runs the ``mosquitto`` binary. Where
the binary (or the teleop extra's aiomqtt) is missing the test skips with one reason (``tools/dev
test`` installs both), so a user's machine without them still runs the rest of the suite.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hebictl.teleop.broker import LocalBroker, find_mosquitto, find_mosquitto_passwd
from tests._support.extras import extra_missing

#: the one reason a broker test skips with
MOSQUITTO_MISSING = "mosquitto binary not found (apt-get install mosquitto; tools/dev test installs it)"
MOSQUITTO_PASSWD_MISSING = "mosquitto_passwd not found (apt-get install mosquitto)"
#: for tests that start mosquitto themselves (e.g. through a benchmark or a child process)
requires_mosquitto = pytest.mark.skipif(find_mosquitto() is None, reason=MOSQUITTO_MISSING)


def need_mosquitto(*, passwd: bool = False) -> None:
    """Skip the calling test where mosquitto (and, with ``passwd``, mosquitto_passwd) is missing, or
    aiomqtt (the teleop extra): every test with a broker talks to it through that client."""
    pytest.importorskip("aiomqtt", reason=extra_missing("aiomqtt"))
    if find_mosquitto() is None:
        pytest.skip(MOSQUITTO_MISSING)
    if passwd and find_mosquitto_passwd() is None:
        pytest.skip(MOSQUITTO_PASSWD_MISSING)


@contextlib.contextmanager
def local_broker(directory: Path, **options: Any) -> Iterator[LocalBroker]:
    """A started :class:`LocalBroker` with its files in ``directory``, stopped at the end.

    ``options`` go to LocalBroker (``users``, ``arms``, ``operators``, ``tls``, ``plugins`` ...);
    with ``users`` the test also needs mosquitto_passwd, and skips without it."""
    need_mosquitto(passwd=bool(options.get("users")))
    broker = LocalBroker(directory, **options)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
