"""The gripper of HEBI's kits, as ``hebi.arm.Gripper`` drives it: one effort-controlled spool.

A robot config declares it in ``user_data`` (HEBI's kit configs, e.g. ``A-2085-06G.cfg.yaml``)::

    gains:    {default: ..., gripper: gains/A-2080-01.xml}
    user_data: {has_gripper: true, gripper_open_effort: 1, gripper_close_effort: -5}

and hebi-py's examples open it as a one-module group (family of the arm, name ``gripperSpool``),
send it the ``gripper`` gains and command it with :class:`hebi.arm.Gripper`, whose state ``s``
(0 open .. 1 closed) becomes the effort ``s · close_effort + (1 - s) · open_effort``. hebictl does
the same, with one convention change: everywhere in hebictl (``cmd/gripper``, the status, the
panel) a gripper position is the **opening**, 0 closed .. 1 open, so ``opening = 1 - s``. The
module name and family can be set with ``user_data.gripper_name`` / ``gripper_family``.

:func:`open_gripper` opens it on the arm's backend type: the hebi and hebi-imitation backends
open the real (or imitated) module; ``mock`` and ``sim`` get a
:class:`~hebictl.hardware.gripper.SimulatedGripper` (a spool with end stops, a spring and
damping) driven by the arm's clock. :func:`attach_gripper` adds it to an arm as a plugin, so the
arm's ``update``/``send`` read and command it every cycle and ``arm.close()`` releases it, as
``hebi.arm.Arm.set_end_effector`` does.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.control.plugins.base import ArmPlugin, ArmView
from hebictl.errors import ConfigError
from hebictl.hardware.base import Backend, Command, Feedback

if TYPE_CHECKING:
    from hebictl.config import RobotConfig
    from hebictl.hardware.clock import Clock

log = logging.getLogger(__name__)

#: hebi-py examples' module name of the kit gripper
DEFAULT_GRIPPER_NAME = "gripperSpool"
#: backends on which the gripper is simulated (no separate module exists there)
SIMULATED_BACKENDS = frozenset({"mock", "sim"})


def _effort(user_data: dict[str, Any], key: str, default: float) -> float:
    value = user_data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"user_data.{key} must be a finite number [N·m], got {value!r}", key=f"user_data.{key}")
    if abs(value) > 1000.0:
        raise ConfigError(f"user_data.{key} = {value} N·m is not a gripper effort", key=f"user_data.{key}")
    return float(value)


@dataclass(frozen=True)
class GripperSettings:
    """Where the gripper module is and which efforts open and close it [N·m]."""

    name: str = DEFAULT_GRIPPER_NAME
    family: str = "Arm"
    open_effort: float = 1.0
    close_effort: float = -5.0
    gains: Path | None = None

    @classmethod
    def from_config(cls, config: RobotConfig) -> GripperSettings | None:
        """The config's gripper, or None when ``user_data.has_gripper`` is not true."""
        ud = config.user_data
        if ud.get("has_gripper") is not True:
            return None
        name = ud.get("gripper_name", DEFAULT_GRIPPER_NAME)
        family = ud.get("gripper_family", config.families[0] if config.families else "Arm")
        for key, value in (("gripper_name", name), ("gripper_family", family)):
            if not isinstance(value, str) or not 1 <= len(value) <= 255:
                raise ConfigError(f"user_data.{key} must be a module name, got {value!r}", file=config.path,
                                  key=f"user_data.{key}")
        return cls(name=name, family=family, open_effort=_effort(ud, "gripper_open_effort", 1.0),
                   close_effort=_effort(ud, "gripper_close_effort", -5.0), gains=config.gains.get("gripper"))


@dataclass(frozen=True)
class GripperStatus:
    """A gripper's state: commanded ``opening`` (0 closed .. 1 open) and ``effort`` [N·m]; the
    spool's measured position [rad] and effort [N·m]; the measured opening where the backend
    knows the spool's travel (the simulated gripper), else NaN."""

    opening: float
    effort: float
    measured_position: float
    measured_effort: float
    measured_opening: float


class Gripper:
    """One effort-controlled gripper module (``hebi.arm.Gripper`` with opening = 1 - hebi's state).

    ``set_opening(x)`` commands the effort blend; :meth:`update` reads the module without waiting
    and :meth:`send` writes the effort, once per arm cycle (the :class:`GripperPlugin` calls both)."""

    def __init__(self, backend: Backend, settings: GripperSettings) -> None:
        if backend.size != 1:
            raise ConfigError(f"a gripper is one module, the backend has {backend.size}", key="gripper")
        self.backend = backend
        self.settings = settings
        self._cmd = Command.empty(1)
        self._fbk = Feedback.empty(1)
        self._opening = 1.0
        self.set_opening(1.0)  # hebi.arm.Gripper starts at state 0: open

    @property
    def opening(self) -> float:
        """The commanded opening, 0 closed .. 1 open."""
        return self._opening

    def set_opening(self, opening: float) -> None:
        """Command an opening in [0, 1]: the effort ``opening · open + (1 - opening) · close``."""
        x = float(opening)
        if not (math.isfinite(x) and 0.0 <= x <= 1.0):
            raise ValueError(f"gripper opening must be in [0, 1], got {opening!r}")
        s = self.settings
        self._opening = x
        self._cmd.effort[0] = x * s.open_effort + (1.0 - x) * s.close_effort

    def open(self) -> None:
        self.set_opening(1.0)

    def close(self) -> None:
        """Close the jaws (not: release the module; that is :meth:`release`)."""
        self.set_opening(0.0)

    def update(self) -> bool:
        """Read the module's feedback if a sample is there (never waits)."""
        try:
            return self.backend.read(self._fbk, 0.0)
        except Exception as exc:  # a gripper fault must not stop the arm's loop
            log.warning("gripper feedback failed: %s", exc)
            return False

    def send(self) -> bool:
        try:
            return self.backend.write(self._cmd)
        except Exception as exc:
            log.warning("gripper command failed: %s", exc)
            return False

    def status(self) -> GripperStatus:
        fb = self._fbk
        travel = getattr(self.backend, "travel", None)
        measured_opening = 1.0 + float(fb.position[0]) / travel if travel else math.nan
        return GripperStatus(self._opening, float(self._cmd.effort[0]), float(fb.position[0]),
                             float(fb.effort[0]), measured_opening)

    def release(self) -> None:
        """Close the module's connection (the gripper stops being commanded)."""
        self.backend.close()


class GripperPlugin(ArmPlugin):
    """Drives a :class:`Gripper` from the arm's cycle: read in ``update``, command in ``send``."""

    type_name = "Gripper"

    def __init__(self, gripper: Gripper, name: str = "gripper") -> None:
        super().__init__(name, enabled=True)
        self.gripper = gripper

    def update(self, arm: ArmView, dt: float) -> bool:
        self.gripper.update()
        return True

    def send(self, arm: ArmView) -> bool:
        return self.gripper.send()

    def close(self) -> None:
        self.gripper.release()


def open_gripper(config: RobotConfig, backend: str, *, clock: Clock, **options: Any) -> Gripper | None:
    """The config's gripper on backend ``backend`` (simulated on mock and sim), gains sent; None
    when the config has none. ``options`` go to the backend factory (hebi: e.g. a lookup timeout)."""
    from hebictl.gains import load_gains
    from hebictl.hardware.gripper import SimulatedGripper
    from hebictl.hardware.registry import open_backend

    settings = GripperSettings.from_config(config)
    if settings is None:
        return None
    if backend in SIMULATED_BACKENDS:
        be: Backend = SimulatedGripper((settings.name,), (settings.family,), clock=clock,
                                       command_lifetime=config.command_lifetime)
    else:
        be = open_backend(backend, names=[settings.name], families=[settings.family], clock=clock, **options)
    try:
        if settings.gains is not None:
            be.set_gains(load_gains(settings.gains))
        return Gripper(be, settings)
    except Exception:
        be.close()
        raise


def attach_gripper(arm: Any, config: RobotConfig, backend: str, **options: Any) -> Gripper | None:
    """Open the config's gripper and add it to ``arm`` (a :class:`GripperPlugin`), unless the arm
    already has one; returns it (None without ``user_data.has_gripper``)."""
    existing = arm.plugin("Gripper")
    if isinstance(existing, GripperPlugin):
        return existing.gripper
    gripper = open_gripper(config, backend, clock=arm.clock, **options)
    if gripper is not None:
        arm.add_plugin(GripperPlugin(gripper))
    return gripper
