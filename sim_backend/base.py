"""A simulated mobile base: a chassis on the floor driven by wheel modules commanded in velocity.

Simple but physical: MuJoCo simulates a box chassis (``chassis_mass`` [kg], a free body on a
floor plane) standing on ``n`` wheels (cylinders of ``wheel_radius`` [m], on hinge joints, in
contact with the floor with rubber's friction) placed evenly on a circle of ``base_radius`` [m], each
wheel's axis pointing out from the centre, as HEBI's omni base places its three (``A-2592-01.hrdf``:
wheels at 120 deg, 0.158 m out). Two wheels (a diff drive) get two frictionless caster spheres.
Plain wheels are not omni wheels: wheels commanded the same velocity turn the chassis in place,
different ones fight through the floor, which the wheels' torque limit bounds (what a velocity test
needs: wheel speeds, stop times, travel).

Each wheel module runs its velocity loop every physics step, as HEBI's firmware does: torque
``clip(k (v_cmd - v), +-rated_effort)``, ``k`` saturating the torque at 10 % of the rated speed's
error; a command older than ``command_lifetime`` switches the motor off (the wheel coasts), as
on HEBI's modules. Time, feedback and the command follow :class:`~sim_backend.backend.SimBackend`:
physics runs on a fixed grid of ``timestep`` s up to the injected clock, advanced by ``read``
(to the next feedback sample, on a grid of ``feedback_frequency`` Hz) and ``write`` (to now, then the
new command); with a :class:`~hebictl.hardware.clock.SimClock` a run is deterministic.
:attr:`SimBase.faults` drops feedback (the mock's :class:`~hebictl.hardware.faults.FaultSchedule`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np

from hebictl._typing import FloatArray
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Command, Feedback
from hebictl.hardware.clock import Clock, MonotonicClock
from hebictl.hardware.faults import FaultKind, FaultSchedule
from hebictl.hardware.group import FeedbackGrid, ModuleGroup, check_read, resolve_modules

__all__ = ["SimBase", "base_xml", "open_sim_base"]

#: the velocity loop's torque saturates at this fraction of the rated speed as error
SATURATING_ERROR = 0.1
#: [kg m^2] each wheel joint's armature: the geared motor's rotor inertia seen at the output
#: (rotor inertia x gear ratio squared; HEBI publishes neither, a T-series' ~1e-6 kg m^2 rotor behind a
#: gear of a few hundred gives this order). Without it a bare wheel's inertia (~1e-3 kg m^2) would
#: make the velocity loop, run once per physics step, unstable
ARMATURE = 0.02
#: the loop's gain x timestep / armature stays below this (a discrete loop's stability)
LOOP_RATIO = 0.5


def base_xml(n: int, wheel_radius: float, base_radius: float, chassis_mass: float, wheel_mass: float,
             timestep: float) -> str:
    """The MJCF of the base (module doc): floor, chassis, ``n`` wheels ``wheel0..``, casters for two."""
    z = wheel_radius
    wheels, casters = [], []
    for i in range(n):
        a = 2 * math.pi * i / n
        x, y = base_radius * math.cos(a), base_radius * math.sin(a)
        # the wheel's hinge axis points out from the centre; the cylinder's axis (local z) along it
        wheels.append(
            f'<body name="wheel{i}" pos="{x:.6f} {y:.6f} 0" zaxis="{math.cos(a):.6f} {math.sin(a):.6f} 0">'
            f'<joint name="wheel{i}" type="hinge" axis="0 0 1" damping="0.001" armature="{ARMATURE}"/>'
            f'<geom type="cylinder" size="{wheel_radius} 0.015" mass="{wheel_mass}" friction="1.0 0.005 0.0001"/>'
            f'</body>')
    if n == 2:
        for sx in (1, -1):
            casters.append(f'<geom type="sphere" size="{z / 2:.4f}" pos="{sx * base_radius:.4f} 0 {-z / 2:.4f}" '
                           f'condim="1" mass="0.05"/>')
    actuators = "".join(f'<motor name="wheel{i}" joint="wheel{i}" ctrllimited="false"/>' for i in range(n))
    return f"""<mujoco model="hebictl mobile base">
  <option timestep="{timestep}" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="20 20 0.1" friction="1.0 0.005 0.0001"/>
    <body name="chassis" pos="0 0 {z:.6f}">
      <freejoint name="chassis"/>
      <geom type="box" size="{base_radius * 0.8:.4f} {base_radius * 0.8:.4f} 0.03" pos="0 0 0.04"
            mass="{chassis_mass}" contype="0" conaffinity="0"/>
      {''.join(casters)}
      {''.join(wheels)}
    </body>
  </worldbody>
  <actuator>{actuators}</actuator>
</mujoco>"""


class SimBase(ModuleGroup):
    """The simulated base behind the :class:`~hebictl.hardware.base.Backend` interface (module doc)."""

    measures_effort = True

    def __init__(self, names: Sequence[str], families: Sequence[str], *, clock: Clock, rated_speed: float,
                 rated_effort: float, feedback_frequency: float = 100.0, command_lifetime: float = 0.25,
                 wheel_radius: float = 0.0762, base_radius: float = 0.158, chassis_mass: float = 12.0,
                 wheel_mass: float = 0.3, timestep: float = 0.001) -> None:
        super().__init__(names, families)
        n = self._n
        if not (rated_speed > 0 and rated_effort > 0 and math.isfinite(rated_speed * rated_effort)):
            raise ConfigError(f"rated speed and effort must be positive, got {rated_speed}, {rated_effort}",
                              key="rated_speed")
        self._clock = clock
        self.model = mujoco.MjModel.from_xml_string(base_xml(n, wheel_radius, base_radius, chassis_mass,
                                                             wheel_mass, timestep))
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self.timestep = timestep
        self.qadr = np.array([self.model.jnt_qposadr[self.model.joint(f"wheel{i}").id] for i in range(n)])
        self.dadr = np.array([self.model.jnt_dofadr[self.model.joint(f"wheel{i}").id] for i in range(n)])
        self.effort_max = float(rated_effort)
        # [N m s/rad]: saturating at SATURATING_ERROR, stable per physics step
        self.gain = min(rated_effort / (SATURATING_ERROR * rated_speed), LOOP_RATIO * ARMATURE / timestep)
        self.vcmd = np.full(n, np.nan)
        self.expiry = -math.inf
        now = clock.now()
        self.origin = now
        self.steps = 0
        self.grid = FeedbackGrid(now)
        self.grid.restart(feedback_frequency, now, delivered=False)
        self.seq = 0
        self.closed = False
        self.command_lifetime = command_lifetime
        #: scheduled faults; this base honours dropped feedback (reads time out) only
        self.faults = FaultSchedule(clock, self._names)

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def feedback_frequency(self) -> float:
        return self.grid.hz

    @feedback_frequency.setter
    def feedback_frequency(self, hz: float) -> None:
        self.grid.restart(hz, self.origin + self.steps * self.timestep, delivered=self.seq > 0)

    @property
    def sim_time(self) -> float:
        """[s] of the clock, where physics is."""
        return self.origin + self.steps * self.timestep

    def advance(self, t: float) -> None:
        """Step physics (the wheels' velocity loops every step) up to clock time ``t``."""
        target = math.floor((t - self.origin) / self.timestep + 1e-9)
        m, d = self.model, self.data
        while self.steps < target:
            live = self.sim_time < self.expiry and np.isfinite(self.vcmd)
            v = d.qvel[self.dadr]
            d.ctrl[:] = np.where(live, np.clip(self.gain * (np.nan_to_num(self.vcmd) - v), -self.effort_max,
                                               self.effort_max), 0.0)
            mujoco.mj_step(m, d)
            self.steps += 1

    def read(self, into: Feedback, timeout_s: float = 0.1) -> bool:
        check_read("sim-base", self.closed, into, timeout_s, self._n)
        now = self._clock.now()
        k = self.grid.next_index(now)
        t_k = self.grid.time(k)
        if t_k > now + timeout_s or (self.faults and self.faults.first_active(FaultKind.DROPPED, t_k)):
            self.advance(now + timeout_s)
            self._clock.sleep_until(now + timeout_s)
            return False
        self.advance(t_k)
        self._clock.sleep_until(t_k)
        self.grid.k = k
        d = self.data
        into.time.fill(self.sim_time)
        into.position[:] = d.qpos[self.qadr]
        into.velocity[:] = d.qvel[self.dadr]
        into.effort[:] = d.ctrl
        into.orientation[:] = np.nan
        into.position_command.fill(np.nan)
        into.velocity_command[:] = np.where(self.sim_time < self.expiry, self.vcmd, np.nan)
        into.effort_command.fill(np.nan)
        into.mstop.fill(0.0)
        into.position_limit_state.fill(np.nan)
        self.seq += 1
        into.sequence = self.seq
        into.rx_time = self._clock.now()
        return True

    def write(self, command: Command) -> bool:
        """Step physics to now under the old command, then take the velocity (position and effort
        commands are refused: a base is a velocity group)."""
        if self.closed:
            raise HardwareError("sim base is closed")
        if command.velocity.shape != (self._n,):
            raise CommandRejected("size_mismatch", f"command for {command.velocity.shape[0]} wheels, the base has "
                                                   f"{self._n}")
        if np.isfinite(command.position).any() or np.isfinite(command.effort).any():
            raise CommandRejected("not_velocity", "the sim base takes velocity commands only")
        now = self._clock.now()
        self.advance(now)
        self.vcmd[:] = command.velocity
        life = self._lifetime
        self.expiry = now + life if life > 0.0 else math.inf
        return True

    def true_state(self) -> tuple[FloatArray, FloatArray]:
        """The wheels' position and velocity now (for tests)."""
        self.advance(self._clock.now())
        return self.data.qpos[self.qadr].copy(), self.data.qvel[self.dadr].copy()

    def chassis(self) -> tuple[FloatArray, float]:
        """The chassis's position [m] in the world and its yaw [rad] (for tests)."""
        q = self.data.qpos[:7]
        w, x, y, z = q[3:7]
        return q[:3].copy(), math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))

    def set_gains(self, gains: object) -> None:
        """Gains are taken and ignored: the simulated loop is fixed (module doc)."""

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"SimBase({len(self._names)} wheels at t={self.sim_time:.3f} s)"


def open_sim_base(*, names: Sequence[str] | None = None, families: str | Sequence[str] | None = None,
                  dof: int | None = None, clock: Clock | None = None, rated_speed: float, rated_effort: float,
                  feedback_frequency: float = 100.0, command_lifetime: float = 0.25, **options: float) -> SimBase:
    """The factory :mod:`hebictl.wiring.multi` opens a multi-arm config's base with on ``sim``."""
    names_t, families_t = resolve_modules(names, families, dof, default_family="Sim")
    return SimBase(names_t, families_t, clock=clock if clock is not None else MonotonicClock(),
                   rated_speed=rated_speed, rated_effort=rated_effort, feedback_frequency=feedback_frequency,
                   command_lifetime=command_lifetime, **options)
