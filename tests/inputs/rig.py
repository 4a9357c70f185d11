"""Shared set-up of the input tests: an arm of a bundled config at its home pose on the sim or the
mock (SimClock: simulated time, the same every run), HEBI's AR keys, and scripted input streams."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.hardware import SimClock
from hebictl.inputs.state import InputState
from tests._support.paths import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")
#: HEBI's ex_AR_kit.cfg.yaml values
AR_KEYS = {"delay_time": 0.5, "xyz_scale": [1.0, 1.0, 2.0]}
RATE = 60.0  # [Hz] the phone's sample rate in the scripts


def home_arm(config: str = "x-series-6dof", backend: str = "sim", **user_data: object) -> Arm:
    """The config's arm at its home pose, plugins ramped in, with ``user_data`` added."""
    cfg = load_config(REPO_ROOT / "configs" / f"{config}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    arm = Arm.from_config(cfg, backend=backend, clock=SimClock(), initial_position=home)
    arm.user_data.update(user_data)
    for p in arm.plugins:
        p.enabled_ratio = 1.0 if p.enabled else 0.0
    return arm


def figure_eight(t: float, amplitude: float = 0.04) -> tuple[np.ndarray, np.ndarray]:
    """A phone pose: a figure eight in the horizontal plane with a vertical wobble, turning about a
    tilted axis, all from a baseline turned 30 degrees (so the baseline's rotation matters)."""
    w = 2 * math.pi * 0.25
    p = np.array([0.3 + amplitude * math.sin(w * t), -0.1 + amplitude * math.sin(2 * w * t) / 2,
                  1.2 + amplitude * 0.5 * math.sin(w * t)])
    rot = (Rotation.from_euler("z", 0.3 * math.sin(w * t)) * Rotation.from_euler("x", 0.2 * math.sin(2 * w * t))
           * Rotation.from_rotvec([0.0, math.radians(30), 0.0]))
    x, y, z, qw = rot.as_quat()
    return p, np.array([qw, x, y, z])


def script(duration: float, presses: dict[float, int], pose: Callable[[float], tuple[np.ndarray, np.ndarray]] | None,
           gaps: Iterable[tuple[float, float]] = (), axes: Callable[[float], tuple[float, ...]] | None = None,
           hold: float = 0.1) -> list[InputState]:
    """Samples at :data:`RATE` for ``duration`` s: button B held for ``hold`` s from each press time
    (``{t: B}``), the pose (or none), nothing inside the ``gaps`` (start, end)."""
    out = []
    for k in range(int(duration * RATE)):
        t = k / RATE
        if any(a <= t < b for a, b in gaps):
            continue
        buttons = tuple(1 if any(b == i + 1 and t0 <= t < t0 + hold for t0, b in presses.items()) else 0
                        for i in range(8))
        position = orientation = None
        if pose is not None:
            p, q = pose(t)
            position, orientation = tuple(float(x) for x in p), tuple(float(x) for x in q)
        out.append(InputState(t, buttons, axes(t) if axes is not None else (0.0,) * 8, position, orientation,
                              seq=k))
    return out
