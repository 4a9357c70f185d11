"""The optional dependencies (pyproject.toml's extras) tests import, and the reason they skip with.

A user who installed only some extras still runs the rest of the suite: a test that needs one
imports it through ``pytest.importorskip(package, reason=extra_missing(package))``, inside the
test or fixture, or at the top of a module whose every test needs it (tests/test_hygiene.py
checks this, and collects the suite with the extras made unimportable).
"""

from __future__ import annotations

#: import name of a package -> the extra of pyproject.toml that installs it (the ``test`` extra's
#: reference libraries included: a user may run the suite with only some of them)
EXTRA_OF_PACKAGE = {
    "mujoco": "sim", "aiomqtt": "teleop", "websockets": "panel", "matplotlib": "plot", "mcap": "record",
    "mcap_protobuf": "record", "pyarrow": "dataset", "foxglove_schemas_protobuf": "record", "foxglove": "live",
    "playwright": "test", "pinocchio": "test", "xacro": "test", "pydrake": "test",
}


def extra_missing(package: str) -> str:
    """The skip reason for a missing ``package``: which extra installs it, and how."""
    extra = EXTRA_OF_PACKAGE[package.split(".")[0]]
    return f"{package} not installed (the {extra} extra: pip install 'hebictl[{extra}]')"
