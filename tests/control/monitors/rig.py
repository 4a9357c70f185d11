"""Shared set-up for the execution monitors' tests: an arm of each bundled config on the sim
(SimClock: deterministic, as fast as the CPU allows), run cycle by cycle with a trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.control.safety import EventKind
from hebictl.hardware import SimClock
from tests._support.paths import REPO_ROOT

CONFIGS = ("x-series-6dof", "x-series-5dof", "x-series-7dof-double-shoulder", "r-series-6dof")


def sim_arm(config: str, *, settle: int = 80, before_start: Callable[[Arm], None] | None = None,
            **options: object) -> tuple[Arm, SimClock, np.ndarray]:
    """The config's arm on the sim at its home pose, plugins ramped in, settled ``settle`` cycles
    (long enough for the model-mismatch monitor's first rest estimate, which arms contact)."""
    cfg = load_config(REPO_ROOT / "configs" / f"{config}.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    clock = SimClock()
    arm = Arm.from_config(cfg, backend="sim", clock=clock, initial_position=home, **options)
    if before_start is not None:
        before_start(arm)
    for p in arm.plugins:
        p.enabled_ratio = 1.0 if p.enabled else 0.0
    for _ in range(settle):
        arm.update()
        arm.send()
    return arm, clock, home


@dataclass
class Trace:
    """Per-cycle time, commanded and measured positions, end-effector position, extra figures."""

    t: list[float] = field(default_factory=list)
    cmd: list[np.ndarray] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    ee: list[np.ndarray] = field(default_factory=list)
    extra: list[float] = field(default_factory=list)

    def run(self, arm: Arm, clock: SimClock, seconds: float, probe: Callable[[], float] | None = None) -> None:
        end = clock.now() + seconds
        while clock.now() < end:
            arm.update()
            arm.send()
            self.t.append(clock.now())
            self.cmd.append(arm.pending_command.position.copy())
            q = arm.backend.true_state()[0]
            self.q.append(q)
            self.ee.append(arm.model.end_effector(q)[:3, 3].copy())
            self.extra.append(probe() if probe is not None else 0.0)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(np.array(x) for x in (self.t, self.cmd, self.q, self.ee, self.extra))


def first_event(arm: Arm, kind: EventKind) -> float | None:
    """Time [s, clock] of the first event of ``kind``, or None."""
    return next((e.time for e in arm.events.events if e.kind is kind), None)


def sphere_obstacle(arm: Arm, center: np.ndarray, radius: float, tool_radius: float = 0.03) -> None:
    """A fixed sphere of ``radius`` [m] at ``center`` [m, world] in the sim's scene, in contact
    with the tool sphere at the end effector only; not declared in the config (the controller's
    collision model does not know it). Built as :func:`sim_backend.obstacles.add_contact_boxes`'s
    box, turned into a sphere in the compiled MuJoCo model (type, size and bounding radius)."""
    import mujoco

    from sim_backend.obstacles import Box, add_contact_boxes

    c = tuple(float(x) for x in center)
    add_contact_boxes(arm.backend, [Box((c[0], c[1], c[2]), (radius, radius, radius), "sphere")],
                      tool_radius=tool_radius)
    m = arm.backend.mj_model
    g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "sphere_0")
    m.geom_type[g] = mujoco.mjtGeom.mjGEOM_SPHERE
    m.geom_size[g] = (radius, 0.0, 0.0)
    m.geom_rbound[g] = radius
    m.geom_aabb[g] = (0.0, 0.0, 0.0, radius, radius, radius)


def sphere_in_path(arm) -> None:
    """A 5 cm sphere 0.6 rad ahead of the tool along the base rotation."""
    q = arm.backend.true_state()[0]
    ee = arm.model.end_effector(q)[:3, 3]
    c, s = np.cos(0.6), np.sin(0.6)
    sphere_obstacle(arm, np.array([c * ee[0] - s * ee[1], s * ee[0] + c * ee[1], ee[2]]), 0.05)
