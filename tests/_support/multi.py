"""Multi-arm configs for tests: two arms of one bundled robot config side by side, and a run of them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tests._support.paths import BUNDLED_CONFIGS


def pair_config(folder: Path, config: Path, spacing: float = 0.6, clearance: float = 0.02) -> Path:
    """A multi-arm config in ``folder``: arms ``left`` (y = +spacing/2) and ``right`` (y = -spacing/2)
    of ``config``, both facing +x, families Left/Right."""
    path = folder / f"{config.name.split('.')[0]}-pair.multi.yaml"
    path.write_text(
        f"multi_arm: 1\narm_clearance: {clearance}\narms:\n"
        f"  - {{name: left, config: {config.as_posix()}, base: {{xyz: [0, {spacing / 2}, 0]}}, families: [Left]}}\n"
        f"  - {{name: right, config: {config.as_posix()}, base: {{xyz: [0, {-spacing / 2}, 0]}}, families: [Right]}}\n")
    return path


CONFIG_IDS = [p.name.split(".")[0] for p in BUNDLED_CONFIGS]


def run_args(**flags: Any) -> argparse.Namespace:
    """``hebictl run``'s flags as a multi-arm run reads them."""
    args = argparse.Namespace(no_home=False, arm_goal=None, hold=0.5, stop_hold=0.5, rate=None, goal=None,
                              record=None, plot=None, no_arm_obstacles=False, backend="sim")
    vars(args).update(flags)
    return args

