"""MuJoCo simulation of any hebictl arm behind hebictl's hardware interface (backend ``"sim"``).

``open_backend("sim", ...)`` and ``Arm.from_config(cfg, backend="sim")`` call :func:`open_sim`.
The simulated robot is the config's HRDF exported with hebictl's MJCF writer, plus an optional
payload; each joint is a simulated HEBI module (PID loops per the gains file, motor with effort
and speed saturation). See ``docs/sim.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from hebictl.errors import ConfigError
from hebictl.hardware.clock import Clock, MonotonicClock
from hebictl.hardware.group import resolve_modules
from sim_backend.actuator import ActuatorGroup
from sim_backend.backend import SimBackend
from sim_backend.mjlog import route_mujoco_messages
from sim_backend.payload import Payload, strip_payload, with_payload
from sim_backend.scene import Scene, build_scene

__all__ = ["DEFAULT_MOTOR_TIME_CONSTANT", "SIM_OPTIONS", "ActuatorGroup", "Payload", "Scene", "SimBackend",
           "build_scene", "open_sim", "reflected_inertia", "strip_payload", "with_payload"]

# MuJoCo's warnings go to logging, never to a MUJOCO_LOG.TXT in the user's directory (see mjlog)
route_mujoco_messages()

#: keys accepted under ``user_data: {sim: {...}}`` of a robot config (keyword arguments override them)
SIM_OPTIONS = ("payload", "friction", "damping", "armature", "motor_time_constant", "initial_position", "timestep",
               "max_effort", "max_speed", "viewer", "gas_spring")
_DEFAULT_TIMESTEP = 0.001  # [s]
#: [s] mechanical time constant of a module's motor, which sets its reflected rotor inertia (see docs/sim.md)
DEFAULT_MOTOR_TIME_CONSTANT = 0.01


def _config_options(user_data: Mapping[str, Any] | None, path: Path | None) -> dict[str, Any]:
    sim = user_data.get("sim") if user_data is not None else None
    if sim is None:
        return {}
    if not isinstance(sim, Mapping):
        raise ConfigError(f"must be a mapping of simulator options, got {sim!r}", file=path, key="user_data.sim")
    unknown = sorted(str(k) for k in sim if k not in SIM_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown simulator option(s) {', '.join(unknown)}; valid: {', '.join(SIM_OPTIONS)}",
                          file=path, key=f"user_data.sim.{unknown[0]}")
    return dict(sim)


def _limits(model: Any, given: ArrayLike | None, attr: str) -> np.ndarray:
    values = np.asarray(getattr(model, attr) if given is None else given, dtype=np.float64)
    values = np.array(np.broadcast_to(values, (model.dof,)))
    bad = [name for name, v in zip(model.joint_names, values, strict=True) if not (np.isfinite(v) and v > 0)]
    if bad:
        what = "max_effort [N·m]" if attr == "max_efforts" else "max_speed [rad/s]"
        raise ConfigError(f"joint(s) {', '.join(bad)} have no finite {what} in the model; the simulated motor "
                          f"needs one: give {what.split()[0]}=... (or user_data.sim.{what.split()[0]})",
                          key=what.split()[0])
    return values


def reflected_inertia(max_effort: ArrayLike, max_speed: ArrayLike, time_constant: ArrayLike) -> np.ndarray:
    """Rotor inertia seen at the output [kg·m²] of a geared DC motor with mechanical ``time_constant`` [s].

    A DC motor's mechanical time constant is ``J R / (k_t k_e)``, and ``k_t k_e / R`` referred to
    the output is the slope of its torque-speed line, ``stall torque / free speed``; so
    ``J_out = time_constant * max_effort / max_speed`` (HEBI's rated effort standing in for the
    stall torque).
    """
    tm = np.asarray(time_constant, dtype=np.float64)
    if not np.all(np.isfinite(tm) & (tm >= 0.0)):
        raise ConfigError(f"motor_time_constant must be finite and >= 0 s, got {time_constant!r}",
                          key="motor_time_constant")
    return np.asarray(max_effort, dtype=np.float64) / np.asarray(max_speed, dtype=np.float64) * tm


def open_sim(*, names: Sequence[str] | None = None, families: str | Sequence[str] | None = None,  # noqa: C901 (one branch per sim option of the config)
             dof: int | None = None, clock: Clock | None = None, model: Any = None, config: Any = None,
             payload: Payload | Mapping[str, Any] | None = None, friction: ArrayLike | None = None,
             damping: ArrayLike | None = None, armature: ArrayLike | None = None,
             motor_time_constant: ArrayLike | None = None, initial_position: ArrayLike | None = None,
             timestep: float | None = None,
             feedback_frequency: float | None = None, command_lifetime: float | None = None,
             gains: Any = None, max_effort: ArrayLike | None = None, max_speed: ArrayLike | None = None,
             viewer: bool | None = None, user_data: Mapping[str, Any] | None = None,
             config_path: Path | None = None, gas_spring: ArrayLike | None = None) -> SimBackend:
    """Factory registered as backend ``"sim"``: a simulated arm of ``model`` (a RobotModel or a path).

    ``config`` (a RobotConfig or a path) supplies what is not given: the model (its ``hrdf``),
    module names and families, feedback frequency, command lifetime, the ``default`` gains, and
    the simulator options under ``user_data.sim`` (:data:`SIM_OPTIONS`). Keyword arguments win
    over the config. Options: ``payload`` ({mass [kg], com [m, end-effector frame], inertia,
    index} or a :class:`Payload`; payload bodies already in ``model`` — from :func:`with_payload`,
    i.e. what the *controller* believes — are replaced by it), ``friction`` [N·m], ``damping``
    [N·m·s/rad] per joint, ``armature`` [kg·m²] per joint (the modules' reflected rotor inertia;
    default from ``motor_time_constant`` [s], default 10 ms, see :func:`reflected_inertia`),
    ``initial_position`` [rad], ``timestep`` [s]
    (physics and simulated firmware rate; default 1 ms), ``max_effort`` [N·m] and ``max_speed``
    [rad/s] (motor ratings; default the model's), ``viewer`` (MuJoCo's passive viewer when a
    display is there), ``gas_spring`` [N·m] (constant torque per joint of a shoulder gas spring,
    e.g. ``[0, 7, 0, 0, 0, 0]`` where the config's ``EffortOffset`` cancels it with -7 N·m).
    ``clock`` defaults to wall time (real-time simulation).
    ``user_data``/``config_path`` (what :func:`~hebictl.hardware.registry.open_backend` passes from
    the assembled arm's :class:`~hebictl.hardware.registry.BackendSpec`) supply ``user_data.sim``
    when no ``config`` is given.
    """
    from hebictl.collision.workspace import workspace_from
    from hebictl.config import RobotConfig, load_config
    from hebictl.formats import load_model
    from hebictl.gains import GroupGains, load_gains
    from hebictl.model.robot import RobotModel

    cfg = load_config(config) if isinstance(config, str | Path) else config
    if cfg is not None and not isinstance(cfg, RobotConfig):
        raise ConfigError(f"config must be a RobotConfig or a path, got {type(cfg).__name__}", key="config")
    if model is None:
        if cfg is None or cfg.hrdf is None:
            raise ConfigError("the sim backend needs a model: give model=... or a config with an hrdf",
                              file=None if cfg is None else cfg.path, key="hrdf")
        model = load_model(cfg.hrdf)
    elif isinstance(model, str | Path):
        model = load_model(model)
    if not isinstance(model, RobotModel):
        raise ConfigError(f"model must be a RobotModel or a path, got {type(model).__name__}", key="model")

    if cfg is not None:
        user_data, config_path = cfg.user_data, cfg.path
    from_cfg = _config_options(user_data, config_path)
    given = {"payload": payload, "friction": friction, "damping": damping, "armature": armature,
             "motor_time_constant": motor_time_constant, "initial_position": initial_position, "timestep": timestep,
             "max_effort": max_effort, "max_speed": max_speed, "viewer": viewer, "gas_spring": gas_spring}
    # each option's type is checked where it is used (Payload.from_mapping, _limits, build_scene, ...)
    opts: dict[str, Any] = {k: (v if v is not None else from_cfg.get(k)) for k, v in given.items()}

    def build() -> tuple[Scene, ActuatorGroup, Any]:
        p = None if opts["payload"] is None else Payload.from_mapping(opts["payload"])
        effort = _limits(model, opts["max_effort"], "max_efforts")
        speed = _limits(model, opts["max_speed"], "max_speeds")
        armature = opts["armature"]
        if armature is None:
            tm = DEFAULT_MOTOR_TIME_CONSTANT if opts["motor_time_constant"] is None else opts["motor_time_constant"]
            armature = reflected_inertia(effort, speed, tm)
        elif opts["motor_time_constant"] is not None:
            raise ConfigError("give armature or motor_time_constant, not both", key="armature")
        timestep = _DEFAULT_TIMESTEP if opts["timestep"] is None else opts["timestep"]
        scene = build_scene(model, payload=p, timestep=timestep,
                            friction=opts["friction"], damping=opts["damping"], armature=armature,
                            workspace=(workspace_from(user_data, config_path)  # the config's table, boxes
                                       if user_data is not None and "workspace" in user_data else None))
        return scene, ActuatorGroup.create(effort, speed), armature

    try:
        scene, acts, rotor = build()
    except ConfigError as exc:
        root = (exc.key or "").split(".")[0]
        if root in from_cfg and given.get(root) is None:
            raise ConfigError(exc.message, file=config_path, key=f"user_data.sim.{exc.key}") from exc
        raise

    if names is None and cfg is not None:
        names = cfg.names
        if families is None:
            families = cfg.families
    if names is None and dof is None:
        names = model.joint_names
    names_t, families_t = resolve_modules(names, families, dof, default_family="Sim")
    if len(names_t) != model.dof:
        raise ConfigError(f"{len(names_t)} module names, but the model has {model.dof} joints", key="names")

    if gains is None and cfg is not None and "default" in cfg.gains:
        gains = cfg.gains["default"]
    if isinstance(gains, str | Path):
        gains = load_gains(gains)
    if gains is not None:
        if not isinstance(gains, GroupGains):
            raise ConfigError(f"gains must be a GroupGains or a gains XML path, got {type(gains).__name__}",
                              key="gains")
        acts.set_gains(gains)

    fb = feedback_frequency if feedback_frequency is not None else (cfg.feedback_frequency if cfg else 100.0)
    life = command_lifetime if command_lifetime is not None else (cfg.command_lifetime if cfg else 0.25)
    try:
        return SimBackend(names_t, families_t, scene, acts, clock=clock if clock is not None else MonotonicClock(),
                          initial_position=opts["initial_position"], feedback_frequency=fb,
                          command_lifetime=life, viewer=bool(opts["viewer"]), gas_spring=opts["gas_spring"],
                          rotor_inertia=rotor)
    except ConfigError as exc:
        if exc.key in from_cfg and given.get(exc.key) is None:
            raise ConfigError(exc.message, file=config_path, key=f"user_data.sim.{exc.key}") from exc
        raise
