"""One arm's fleet lease settings: the robot config's ``user_data.fleet`` section and the teleop flags.

A fleet is configured per arm (docs/fleet.md)::

    user_data:
      fleet:
        stations: [control-room, panel-2]   # the station ids whose heartbeat leases this arm
        lease_timeout: 0.25                 # [s] a lease older than this does not let the arm move

``hebictl teleop --fleet-station ID`` (repeatable) and ``--lease-timeout S`` give or override the
same; with neither (no section, no flag) the arm has no fleet lease and teleop behaves as before.
The result builds the arm's :class:`~hebictl.teleop.lease.LeaseGate`. Bad values raise
:class:`~hebictl.errors.ConfigError` with the key (``user_data.fleet.stations``, or the flag:
``--fleet-station``); the caller adds the config file and line (this layer does not read YAML).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hebictl.errors import ConfigError
from hebictl.teleop.lease import LEASE_TIMEOUT, FleetLease, LeaseGate, valid_id

SECTION = "user_data.fleet"
KEYS = frozenset({"stations", "lease_timeout"})
#: at most this many authorised stations per arm (the status lists them)
MAX_STATIONS = 64
#: [s] bounds of lease_timeout: shorter than a few heartbeats is a stop on every lost packet; longer
#: than this is no lease
TIMEOUT_RANGE = (0.05, 10.0)


@dataclass(frozen=True)
class FleetSettings:
    """The authorised ``stations`` and the ``lease_timeout`` [s] of one arm."""

    stations: tuple[str, ...]
    lease_timeout: float = LEASE_TIMEOUT

    def gate(self, arm_id: str) -> LeaseGate:
        """A fresh :class:`LeaseGate` for the arm ``arm_id`` (it starts in ``no_lease``)."""
        return LeaseGate(FleetLease(arm_id, self.stations, lease_timeout=self.lease_timeout))


def _fail(message: str, key: str = "") -> ConfigError:
    """A ConfigError whose ``key`` is the section's (``user_data.fleet.stations``) or a flag's
    (``--fleet-station``: it starts with ``--``)."""
    return ConfigError(message, key=key if key.startswith("--") else f"{SECTION}.{key}" if key else SECTION)


def _stations(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _fail("a list of station ids", key)
    out = tuple(dict.fromkeys(value))
    if not 1 <= len(out) <= MAX_STATIONS:
        raise _fail(f"1 to {MAX_STATIONS} station ids, got {len(out)}", key)
    for s in out:
        if not isinstance(s, str) or not valid_id(s):
            raise _fail(f"station id {s!r}: 1-64 characters of A-Z a-z 0-9 _ . -", key)
    return out


def _timeout(value: Any, key: str) -> float:
    low, high = TIMEOUT_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise _fail(f"a number of seconds in [{low:g}, {high:g}], got {value!r}", key)
    return float(value)


def fleet_settings(user_data: Mapping[str, Any] | None, *, stations: Iterable[str] = (),
                   lease_timeout: float | None = None) -> FleetSettings | None:
    """The arm's fleet settings from ``user_data.fleet``, overridden by the flags (``stations``:
    ``--fleet-station``, replaces the section's list; ``lease_timeout``: ``--lease-timeout``), or
    None when neither names a station (no fleet: teleop as without one)."""
    section = (user_data or {}).get("fleet")
    if section is not None and not isinstance(section, Mapping):
        raise _fail("must be a mapping with stations (and lease_timeout)")
    section = section or {}
    unknown = sorted(str(k) for k in section if k not in KEYS)
    if unknown:
        raise _fail(f"unknown key(s) {', '.join(unknown)}: only {', '.join(sorted(KEYS))}", unknown[0])
    flag_stations = tuple(stations)
    if flag_stations:
        ids = _stations(flag_stations, "--fleet-station")
    elif "stations" in section:
        ids = _stations(section["stations"], "stations")
    else:
        if lease_timeout is not None:
            raise _fail("a lease timeout without stations: name the authorised stations with --fleet-station "
                        "(or user_data.fleet.stations)", "--lease-timeout")
        if "lease_timeout" in section:
            raise _fail("a lease timeout without stations: name the authorised stations", "stations")
        return None
    if lease_timeout is not None:
        timeout = _timeout(lease_timeout, "--lease-timeout")
    else:
        timeout = _timeout(section.get("lease_timeout", LEASE_TIMEOUT), "lease_timeout")
    return FleetSettings(ids, timeout)
