"""Assembly: a robot config turned into an Arm (model, gains, backend, plugins, limits, workspace).

The config is loaded once here. Every backend is opened the same way, through
:func:`hebictl.hardware.registry.open_backend` with a :class:`~hebictl.hardware.registry.BackendSpec`:
a backend receives the spec fields its factory names (the simulator names ``model`` and
``user_data``), so nothing here knows one backend from another. Then feedback rate, command
lifetime [s] and gains are set through the Backend protocol, the modules' own safety settings
(``user_data.module_safety``: firmware limits = the arm's joint limits plus a margin, limit and
M-stop strategies) are sent when ``send: true`` and only logged otherwise (dry run), and the plugins
are built from the config's entries (:mod:`hebictl.wiring.plugin_table`).

This is the wiring layer, above control, config, formats and hardware: it is the one place that
knows all of them, so none of them has to know another's neighbours. :meth:`Arm.from_config
<hebictl.control.arm.Arm.from_config>` forwards to :func:`arm_from_config` with a lazy import, the
single upward edge the layer table allows (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hebictl.collision.attach import attach_from_config
from hebictl.config import RobotConfig, gains_file, load_config
from hebictl.control.extra_modules import ExtraModules
from hebictl.control.plugins import ArmPlugin
from hebictl.control.safety import Limits
from hebictl.control.settings import SafetySettings, limits_from, safety_from
from hebictl.errors import ConfigError
from hebictl.formats import load_model
from hebictl.gains import load_gains
from hebictl.hardware.base import Backend
from hebictl.hardware.clock import MonotonicClock
from hebictl.hardware.firmware import ModuleSafety, safety_from_user_data
from hebictl.hardware.registry import BackendSpec, open_backend
from hebictl.wiring.plugin_table import plugin_from_config

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from hebictl.control.arm import Arm
    from hebictl.hardware.clock import Clock
    from hebictl.model.robot import RobotModel

ArmT = TypeVar("ArmT", bound="Arm")


@dataclass
class ArmParts:
    """Everything :class:`~hebictl.control.arm.Arm` is built from."""

    model: RobotModel
    backend: Backend
    plugins: list[ArmPlugin]
    limits: Limits
    safety: SafetySettings
    extra_modules: ExtraModules
    user_data: dict[str, Any]
    module_safety: ModuleSafety | None = None   # the modules' own settings (sent or dry run)
    module_safety_sent: bool = False


def assemble(config: RobotConfig | str | Path, backend: str = "mock", *, clock: Clock | None = None,
             model: RobotModel | None = None, gains: str | None = "default",
             **backend_options: Any) -> ArmParts:
    """Load ``config`` (once), its model and gains, open ``backend`` and build the plugins.

    ``gains`` is a role of the config's gains (``None``: send none); ``backend_options`` go to the
    backend's factory. The backend is closed again if anything after opening it fails.
    """
    cfg = load_config(config) if isinstance(config, str | Path) else config
    if model is None:
        if cfg.hrdf is None:
            raise ConfigError("the config names no hrdf; pass model=...", file=cfg.path, key="hrdf")
        model = load_model(cfg.hrdf)
    group_gains = None
    if gains and gains in cfg.gains:
        group_gains = load_gains(gains_file(cfg, gains))
        if group_gains.width == 1:
            group_gains = group_gains.broadcast_to(model.dof)
    cfg.check_against(model.dof, group_gains)
    attach_from_config(model, cfg.user_data, cfg.path)  # goals and jogs are checked against its workspace
    limits = limits_from(model, cfg.user_data, cfg.path)
    safety = safety_from(model, cfg.user_data, cfg.path, cfg.plugins)
    try:
        module_safety = safety_from_user_data(cfg.user_data, limits.position_min, limits.position_max)
    except ConfigError as exc:
        raise ConfigError(exc.message, file=cfg.path, key=exc.key) from exc
    spec = BackendSpec(cfg.names, cfg.families, model=model, gains=group_gains,
                       feedback_frequency=cfg.feedback_frequency, command_lifetime=cfg.command_lifetime,
                       user_data=cfg.user_data, config_path=cfg.path)
    be = open_backend(backend, spec, clock=clock, **backend_options)
    try:
        if "feedback_frequency" not in backend_options:  # an explicit option wins over the config
            be.feedback_frequency = cfg.feedback_frequency
        if "command_lifetime" not in backend_options:
            be.command_lifetime = cfg.command_lifetime
        if group_gains is not None:
            be.set_gains(group_gains)
        settings, sent = None, False
        if module_safety is not None:
            sent, settings = module_safety
            if sent:
                be.set_safety(settings)  # type: ignore[attr-defined]  # mock, sim, hebi have it; not in Backend
                log.info("module safety settings sent:\n%s", settings.describe(be.names))
            else:
                log.info("module safety settings (dry run: not sent; set user_data.module_safety.send: true "
                         "to send):\n%s", settings.describe(be.names))
        plugins = [p for p in (plugin_from_config(pc) for pc in cfg.plugins) if p is not None]
        extra = ExtraModules(backend, be, clock, dict(cfg.user_data), dict(backend_options))
        return ArmParts(model, be, plugins, limits, safety, extra, dict(cfg.user_data), settings, sent)
    except Exception:
        be.close()
        raise


def arm_from_config(arm_class: type[ArmT], config: RobotConfig | str | Path, backend: str = "mock", *,
                    clock: Clock | None = None, model: RobotModel | None = None,
                    gains: str | None = "default", **backend_options: Any) -> ArmT:
    """An ``arm_class`` (:class:`~hebictl.control.arm.Arm` or a subclass) built from :func:`assemble`'s
    parts, with the modules' own safety settings kept on it; the backend is closed if building fails.

    The class is passed in (``Arm.from_config`` passes ``cls``) so that this module never imports
    ``hebictl.control.arm``: the one edge between the two runs upward, from the Arm's forwarding
    classmethod to here.
    """
    clock = clock or MonotonicClock()
    parts = assemble(config, backend, clock=clock, model=model, gains=gains, **backend_options)
    try:
        arm = arm_class(parts.model, parts.backend, clock=clock, plugins=parts.plugins, limits=parts.limits,
                        safety=parts.safety, extra_modules=parts.extra_modules, user_data=parts.user_data)
        arm.module_safety = parts.module_safety
        return arm
    except Exception:
        parts.backend.close()
        raise


__all__ = ["ArmParts", "ExtraModules", "arm_from_config", "assemble"]
