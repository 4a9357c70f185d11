"""docs/monitors.md's table against the code: every monitor, its event kind, default reaction
and every threshold with its default, as MONITOR_DEFAULTS and the EventKind enum have them."""

from __future__ import annotations

import re

from hebictl.control.safety import EventKind
from hebictl.control.settings import MONITOR_DEFAULTS, PER_JOINT_KEYS, REACTIONS
from tests._support.paths import REPO_ROOT


def _rows() -> dict[str, tuple[str, dict[str, float], str]]:
    text = (REPO_ROOT / "docs" / "monitors.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `(\w+)` \| `(\w+)` \| (.*?) \| .* \|$", line)
        if not m:
            continue
        keys = {k: float(v) for k, v in re.findall(r"`(\w+)` = ([-+0-9.e]+)", m.group(3))}
        rows[m.group(1)] = (m.group(2), keys, m.group(3))
    return rows


def test_table_matches_monitor_defaults():
    rows = _rows()
    assert set(rows) == set(MONITOR_DEFAULTS)
    for name, defaults in MONITOR_DEFAULTS.items():
        reaction, keys, _ = rows[name]
        assert EventKind(name).value == name
        assert reaction == defaults["reaction"] and reaction in REACTIONS
        numeric = {k: v for k, v in defaults.items() if k != "reaction" and v is not None}
        assert keys == numeric, name
        for k in (k for k, v in defaults.items() if v is None):  # per-joint keys without a default value
            assert (name, k) in PER_JOINT_KEYS and f"`{k}`" in rows[name][2], (name, k)
