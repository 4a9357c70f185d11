"""The Arm: one robot model, one hardware backend, a trajectory and plugins, stepped by update/send.

API mirrors ``hebi.arm.Arm`` (``update``, ``send``, ``set_goal``, ``cancel_goal``, ``at_goal``,
``goal_progress``, ``pending_command``, ``last_feedback``) so HEBI users feel at home; on top of
it the arm owns its safety state (:mod:`hebictl.control.safety`): faults in the loop end in a
hold or a stop within the same cycle instead of an exception.

Per cycle: ``update()`` reads feedback, checks it, samples the trajectory, runs the plugins
and clamps the command to the limits; ``send()`` writes it (and plugins' extra modules).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl._typing import FloatArray
from hebictl.control.goal import Goal
from hebictl.control.plugins import ArmPlugin, GravityCompensationEffort, plugin_from_config
from hebictl.control.safety import ArmState, EventLog, Limits
from hebictl.errors import CommandRejected, ConfigError, HardwareError
from hebictl.hardware.base import Backend, Command, Feedback

if TYPE_CHECKING:
    from hebictl.config import RobotConfig
    from hebictl.hardware.clock import Clock
    from hebictl.model.robot import RobotModel
    from hebictl.trajectory import Trajectory

log = logging.getLogger(__name__)
# Enum member lookups go through a descriptor on every access; the hot path compares against these.
_RUNNING, _HOLD, _STOPPED = ArmState.RUNNING, ArmState.HOLD, ArmState.STOPPED


class Arm:
    """A controlled arm. Build with :meth:`from_config` or directly from a model and a backend."""

    def __init__(self, model: RobotModel, backend: Backend, *, clock: Clock,
                 plugins: Sequence[ArmPlugin] = (), limits: Limits | None = None,
                 watchdog_timeout: float = 0.25, feedback_timeout: float | None = None,
                 missed_feedback_limit: int = 2, idle: str = "hold",
                 backend_name: str = "mock", backend_options: dict[str, Any] | None = None,
                 user_data: dict[str, Any] | None = None) -> None:
        """``watchdog_timeout`` [s]: no fresh feedback for this long stops the arm.
        ``feedback_timeout`` [s]: how long ``update`` waits for feedback (default 2 periods).
        ``missed_feedback_limit``: consecutive cycles without fresh feedback tolerated (the last
        command is repeated) before the arm holds.
        ``idle``: what the arm commands with no goal: ``"hold"`` the last position (default), or
        ``"gravcomp"``: no position/velocity, only plugin efforts (hand-guiding, like hebi.arm)."""
        if model.nq != model.nv:
            raise ConfigError("the Arm controls 1-DoF joints only (the model has ball or free joints)")
        if backend.size != model.dof:
            raise ConfigError(f"backend has {backend.size} modules, the model {model.dof} joints", key="names")
        self.model = model
        self.backend = backend
        self.clock = clock
        self.dof = model.dof
        self.user_data = dict(user_data or {})
        self._backend_name = backend_name
        self._backend_options = dict(backend_options or {})
        lo, hi = model.position_limits
        self.limits = limits or Limits(lo.copy(), hi.copy(), model.max_speeds.copy(), model.max_efforts.copy())
        self.watchdog_timeout = float(watchdog_timeout)
        self.missed_feedback_limit = int(missed_feedback_limit)
        self._missed = 0
        hz = backend.feedback_frequency
        self.feedback_timeout = float(feedback_timeout if feedback_timeout is not None
                                      else (2.0 / hz if hz > 0 else 0.1))
        self.events = EventLog()
        self.state = ArmState.RUNNING
        self.pending_command = Command.empty(self.dof)
        self.last_feedback = Feedback.empty(self.dof)
        self._fbk = Feedback.empty(self.dof)
        self._have_feedback = False
        self._last_seq = -1
        self._last_fresh_time = clock.now()
        self._last_time = clock.now()
        self._dt = 0.0
        self._trajectory: Trajectory | None = None
        self.trajectory_state: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._hold_position: FloatArray | None = None
        self._input_frames = np.empty((model.frame_count("input"), 4, 4))
        self._input_frames_valid = False
        self._extra_backends: list[Backend] = []
        self.idle = "hold"
        self.set_idle(idle)
        self.plugins: list[ArmPlugin] = []
        for p in plugins:
            self.add_plugin(p)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, config: RobotConfig | str | Path, backend: str = "mock", *,
                    clock: Clock | None = None, model: RobotModel | None = None,
                    gains: str | None = "default", **backend_options: Any) -> Arm:
        """Build the arm a robot-config YAML describes, on backend ``mock``, ``hebi``,
        ``hebi-imitation`` or ``sim``; gains ``gains`` (a key of the config's gains) are sent."""
        from hebictl.config import load_config
        from hebictl.formats import load_model
        from hebictl.gains import load_gains
        from hebictl.hardware.clock import MonotonicClock
        from hebictl.hardware.registry import open_backend

        cfg = config if not isinstance(config, str | Path) else load_config(config)
        if model is None:
            if cfg.hrdf is None:
                raise ConfigError("the config names no hrdf; pass model=...", file=cfg.path, key="hrdf")
            model = load_model(cfg.hrdf)
        group_gains = None
        if gains and gains in cfg.gains:
            group_gains = load_gains(cfg.gains[gains])
        cfg.check_against(model.dof, group_gains)
        clock = clock or MonotonicClock()
        if backend == "sim":
            backend_options.setdefault("model", model)
            backend_options.setdefault("config", cfg)
        be = open_backend(backend, names=cfg.names, families=cfg.families, dof=model.dof, clock=clock,
                          **backend_options)
        try:
            be.feedback_frequency = cfg.feedback_frequency
            be.command_lifetime = cfg.command_lifetime / 1000.0
            if group_gains is not None:
                be.set_gains(group_gains.broadcast_to(model.dof) if group_gains.width == 1 else group_gains)
            plugins = [p for p in (plugin_from_config(pc) for pc in cfg.plugins) if p is not None]
            return cls(model, be, clock=clock, plugins=plugins, backend_name=backend,
                       backend_options={k: v for k, v in backend_options.items() if k not in ("model", "config")},
                       user_data=cfg.user_data)
        except Exception:
            be.close()
            raise

    def add_plugin(self, plugin: ArmPlugin) -> None:
        plugin.on_associated(self)
        self.plugins.append(plugin)

    def plugin(self, name_or_type: str) -> ArmPlugin | None:
        """The plugin with this name, else the first of this type name."""
        for p in self.plugins:
            if p.name == name_or_type:
                return p
        return next((p for p in self.plugins if p.type_name == name_or_type), None)

    def open_extra_modules(self, names: Sequence[str], families: Sequence[str]) -> Backend:
        """Open more modules on this arm's backend type (e.g. a double shoulder's mirror)."""
        from hebictl.hardware.registry import open_backend

        if self._backend_name == "sim":
            raise HardwareError("extra modules (DoubledJointMirror) are not simulated; disable the plugin")
        be = open_backend(self._backend_name, names=list(names), families=list(families), dof=len(names),
                          clock=self.clock, **self._backend_options)
        self._extra_backends.append(be)
        return be

    def close(self) -> None:
        for p in self.plugins:
            p.close()
        self.backend.close()

    def __enter__(self) -> Arm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ goals
    @property
    def trajectory(self) -> Trajectory | None:
        return self._trajectory

    def current_state(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Where a new goal starts: the trajectory's state now, else the last command/feedback."""
        if self._trajectory is not None:
            return self._trajectory.get_state(self._last_time)
        fb = self.last_feedback
        pos = fb.position_command if np.all(np.isfinite(fb.position_command)) else fb.position
        if self._hold_position is not None:
            pos = self._hold_position
        vel = fb.velocity_command if np.all(np.isfinite(fb.velocity_command)) else fb.velocity
        if self.state is not ArmState.RUNNING or not np.all(np.isfinite(vel)):
            vel = np.zeros(self.dof)
        return pos.copy(), vel.copy(), np.zeros(self.dof)

    def set_goal(self, goal: Goal) -> None:
        """Follow ``goal`` from the current state. Rejected while stopped, or without feedback."""
        if self.state is ArmState.STOPPED:
            raise CommandRejected("stopped", "the arm is stopped; clear_fault() first")
        if not self._have_feedback:
            raise CommandRejected("no_feedback", "no feedback received yet; call update() first")
        if goal.dof != self.dof:
            raise CommandRejected("wrong_length", f"goal has {goal.dof} joints, the arm {self.dof}")
        lo, hi = self.limits.position_min, self.limits.position_max
        for i, p in enumerate(goal.positions):
            if np.any(p < lo) or np.any(p > hi):
                raise CommandRejected("out_of_limits", f"waypoint {i} is outside the joint limits")
        start = self.current_state()
        vmax = np.where(np.isfinite(self.limits.velocity_max), self.limits.velocity_max, 1.0)
        self._trajectory = goal.build_trajectory(self._last_time, *start, max_velocity=vmax * 0.5,
                                                 max_acceleration=vmax)
        self._hold_position = None
        if self.state is ArmState.HOLD:
            self._enter(ArmState.RUNNING, "goal", "new goal accepted; leaving hold")

    def cancel_goal(self) -> None:
        """Drop the goal and hold where the trajectory is now (hebi-py drops to no command;
        holding is the safer default for a controller that may be carrying a load)."""
        if self._trajectory is not None and self.idle == "hold":
            self._hold_position = self._trajectory.get_state(self._last_time)[0].copy()
        self._trajectory = None

    @property
    def goal_progress(self) -> float:
        traj = self._trajectory
        if traj is None:
            return 0.0
        if traj.duration <= 0.0:
            return 1.0
        return min(max(self._last_time - traj.start_time, 0.0), traj.duration) / traj.duration

    @property
    def at_goal(self) -> bool:
        return self.goal_progress >= 1.0

    # ------------------------------------------------------------------ safety actions
    def _enter(self, state: ArmState, kind: str, detail: str) -> None:
        self.state = state
        self.events.record(self.clock.now(), kind, state, detail)

    def hold(self, position: ArrayLike | None = None, *, reason: str = "hold", detail: str = "operator hold") -> None:
        """Hold ``position`` (default: where the arm is commanded/measured now)."""
        if position is None:
            if self._trajectory is not None:
                position = self._trajectory.get_state(self._last_time)[0]
            elif self._hold_position is not None:
                position = self._hold_position
            else:
                position = self.last_feedback.position
        self._hold_position = np.array(position, dtype=np.float64)
        self._trajectory = None
        if self.state is not ArmState.STOPPED:
            self._enter(ArmState.HOLD, reason, detail)

    def stop(self, reason: str = "estop", detail: str = "stop requested") -> None:
        """Command nothing from now on (latched until :meth:`clear_fault`)."""
        self._trajectory = None
        self._enter(ArmState.STOPPED, reason, detail)

    def set_joint_limits(self, minimum: ArrayLike, maximum: ArrayLike) -> None:
        """Position limits [rad or m] for goals, commands and feedback checks (like hebi.arm)."""
        lo = np.broadcast_to(np.asarray(minimum, dtype=np.float64), (self.dof,)).copy()
        hi = np.broadcast_to(np.asarray(maximum, dtype=np.float64), (self.dof,)).copy()
        if np.any(lo > hi):
            raise ConfigError("joint limits: a minimum is above its maximum", key="joint_limits")
        self.limits.position_min, self.limits.position_max = lo, hi
        self.limits.refresh()

    def set_idle(self, idle: str) -> None:
        """Choose what to command without a goal: ``"hold"`` or ``"gravcomp"`` (hand-guiding)."""
        if idle not in ("hold", "gravcomp"):
            raise ConfigError(f"idle must be 'hold' or 'gravcomp', got {idle!r}", key="idle")
        self.idle = idle
        if idle == "gravcomp":
            self._hold_position = None
        elif self._have_feedback and self._trajectory is None and self._hold_position is None:
            self._hold_position = self.last_feedback.position.copy()

    def clear_fault(self) -> None:
        """Leave HOLD/STOPPED: hold the current feedback position in RUNNING state."""
        if self.state is ArmState.RUNNING:
            return
        self._hold_position = self.last_feedback.position.copy() if self._have_feedback else None
        self._trajectory = None
        self._enter(ArmState.RUNNING, "cleared", "fault cleared; holding current position")

    # ------------------------------------------------------------------ loop
    @property
    def dt(self) -> float:
        return self._dt

    def input_frames(self) -> FloatArray:
        """FK 'input' frames at the current feedback (computed once per cycle, on demand)."""
        if not self._input_frames_valid:
            self.model.forward_kinematics_into(self.last_feedback.position, "input", self._input_frames)
            self._input_frames_valid = True
        return self._input_frames

    def _hold_command(self) -> None:
        cmd = self.pending_command
        hold = self._hold_position if self._hold_position is not None else self.last_feedback.position
        cmd.position[:] = hold
        cmd.velocity[:] = 0.0
        grav = next((p for p in self.plugins if isinstance(p, GravityCompensationEffort)), None)
        g = grav.gravity if grav is not None else self.model.gravity
        cmd.effort[:] = self.model.gravity_compensation(hold, g) if np.all(np.isfinite(hold)) else np.nan

    def update(self) -> bool:
        """Read feedback and compute the pending command. False when no usable feedback came."""
        fb = self._fbk
        try:
            fresh = self.backend.read(fb, self.feedback_timeout)
        except HardwareError as exc:
            fresh = False
            if self.state is not _STOPPED:
                self._last_time = self.clock.now()
                self.stop("hardware_error", str(exc))
        now = self.clock.now()
        if fresh and fb.sequence == self._last_seq:
            fresh = False
        if not fresh:
            return self._on_missing_feedback(now)
        self._last_seq = fb.sequence
        self._missed = 0
        # position is what every plugin and the hold need; velocity may legitimately be NaN
        # (hebi's imitation group echoes an uncommanded velocity as NaN)
        if not math.isfinite(fb.position.sum()):
            self._last_time = now
            bad = int(np.argmax(~np.isfinite(fb.position)))
            if self.state is _RUNNING:
                self.hold(self._last_good_position(), reason="feedback_nan",
                          detail=f"NaN/inf feedback from module {bad} ({self.backend.names[bad]})")
            if self.state is _HOLD:
                self._hold_command()
            else:
                self.pending_command.clear()
            return False
        # swap buffers instead of copying: the next read refills the older one
        self._fbk, self.last_feedback = self.last_feedback, fb
        if not self._have_feedback and self.idle == "hold" and self._hold_position is None:
            self._hold_position = fb.position.copy()  # first feedback: hold where the arm is
        self._have_feedback = True
        self._last_fresh_time = now
        self._input_frames_valid = False
        self._dt = max(now - self._last_time, 0.0)
        self._last_time = now

        if self.state is _STOPPED:
            self.pending_command.clear()
            return True
        joint = self.limits.position_violation(fb.position)
        if joint >= 0 and self.state is _RUNNING:
            clamped = np.clip(fb.position, self.limits.position_min, self.limits.position_max)
            self.hold(clamped, reason="position_limit",
                      detail=f"joint {joint} ({self.model.joint_names[joint]}) at {fb.position[joint]:.4f} "
                             f"beyond [{self.limits.position_min[joint]:.4f}, {self.limits.position_max[joint]:.4f}]")

        cmd = self.pending_command
        if self.state is _HOLD or (self._trajectory is None and self._hold_position is not None):
            self.trajectory_state = None
            cmd.position[:] = self._hold_position if self._hold_position is not None else fb.position
            cmd.velocity[:] = 0.0
        elif self._trajectory is not None:
            p, v, a = self._trajectory.get_state(now)
            self.trajectory_state = (p, v, a)
            cmd.position[:] = p
            cmd.velocity[:] = v
        else:
            self.trajectory_state = None
            cmd.position.fill(math.nan)
            cmd.velocity.fill(math.nan)
        cmd.effort.fill(0.0)
        ok = True
        for plugin in self.plugins:
            ok = plugin.update(self, self._dt) and ok
        self.limits.clamp_command(cmd.position, cmd.velocity, cmd.effort)
        return ok

    def _last_good_position(self) -> FloatArray:
        if self._hold_position is not None:
            return self._hold_position
        if self._trajectory is not None:
            return self._trajectory.get_state(self._last_time)[0]
        return self.last_feedback.position.copy() if self._have_feedback else np.zeros(self.dof)

    def _on_missing_feedback(self, now: float) -> bool:
        self._last_time = now
        if self.state is _STOPPED:
            self.pending_command.clear()
            return False
        if now - self._last_fresh_time > self.watchdog_timeout:
            self.stop("watchdog", f"no fresh feedback for {now - self._last_fresh_time:.3f} s "
                                  f"(> {self.watchdog_timeout:.3f} s)")
            self.pending_command.clear()
            return False
        self._missed += 1
        if self._missed <= self.missed_feedback_limit and self.state is _RUNNING:
            return False  # repeat the last command: one late sample is not a fault
        if self.state is _RUNNING and self._have_feedback:
            self.hold(self._last_good_position(), reason="feedback_lost",
                      detail=f"no fresh feedback for {self._missed} cycles")
        if self._have_feedback or self._hold_position is not None:
            self._hold_command()
        return False

    def send(self) -> bool:
        """Write the pending command to the modules (and plugins' extra modules)."""
        try:
            ok = self.backend.write(self.pending_command)
        except HardwareError as exc:
            self.stop("hardware_error", str(exc))
            return False
        for plugin in self.plugins:
            ok = plugin.send(self) and ok
        return ok
