"""The arm-plugin base class and :class:`ArmView`, the part of an Arm a plugin may use.

Plugins see the arm only through :class:`ArmView` (a Protocol), so ``hebictl.control.plugins``
never imports ``hebictl.control.arm``: the Arm depends on its plugins, not the other way round.
Semantics follow hebi-py's ``hebi.arm`` plugins (same names, parameters and ramping), so a
robot-config YAML written for hebi-py behaves the same here. Plugins run in the 1 kHz hot path:
they keep preallocated buffers and return a bool instead of raising.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from hebictl._typing import FloatArray
from hebictl.plugin_schema import KNOWN_PLUGINS

if TYPE_CHECKING:
    from hebictl.hardware.base import Backend, Command, Feedback
    from hebictl.model.robot import RobotModel


class ArmView(Protocol):
    """What a plugin reads from, and writes to, the arm it is attached to."""

    @property
    def model(self) -> RobotModel:
        """The arm's kinematic and dynamic model."""
        ...

    @property
    def dof(self) -> int:
        """Number of joints."""
        ...

    @property
    def last_feedback(self) -> Feedback:
        """This cycle's feedback (read only)."""
        ...

    @property
    def pending_command(self) -> Command:
        """The command being built this cycle; plugins add to it in place."""
        ...

    @property
    def trajectory_state(self) -> tuple[FloatArray, FloatArray, FloatArray] | None:
        """Commanded (position, velocity, acceleration) this cycle, None without a trajectory."""
        ...

    def input_frames(self) -> FloatArray:
        """FK 'input' frames at this cycle's feedback, shape (n, 4, 4)."""
        ...

    def open_extra_modules(self, names: Sequence[str], families: Sequence[str], *,
                           joints: Sequence[int] = (), signs: Sequence[float] = ()) -> Backend:
        """Open more modules on the arm's backend type (a double shoulder's mirror module) that
        drive arm joints ``joints`` (sign -1: mounted mirrored)."""
        ...


def default_name(type_name: str) -> str:
    """hebi-py's default instance name for a plugin type (from the one plugin table)."""
    return KNOWN_PLUGINS[type_name].default_name


class ArmPlugin:
    """Base: ``enabled`` ramps the plugin's contribution in or out over ``ramp_time`` [s].

    The Arm never asks a plugin what type it is: it reads the plugin's declared capabilities,
    class attributes a subclass sets to True (all False here), so a new plugin with the same role
    is treated the same without a change to the core:

    ``runs_while_stopped``
        :meth:`update` runs while the arm is stopped too (a plugin that only mirrors the arm's own
        command to other modules; every other plugin is skipped while stopped).
    ``gravity_source``
        :meth:`gravity_vector` gives the gravity the plugin measures (e.g. from an IMU); the Arm's
        own efforts (hold, brake, declared payload) use the first such plugin's, else the model's.
    ``forwards_command``
        the plugin passes the arm's finished command on to other modules (a double shoulder's
        mirror): the mode's command must be complete before it runs (the jog's law runs just ahead
        of the first such plugin).
    ``feed_forward_effort``
        the plugin feeds the commanded trajectory's dynamics forward: :meth:`feed_forward_efforts`
        is what it added this cycle, which a brake ramp's own feed-forward leaves out.
    """

    type_name: ClassVar[str] = ""
    runs_while_stopped: ClassVar[bool] = False
    gravity_source: ClassVar[bool] = False
    forwards_command: ClassVar[bool] = False
    feed_forward_effort: ClassVar[bool] = False

    def __init__(self, name: str, enabled: bool = True, ramp_time: float = 0.0) -> None:
        self.name = name
        self.enabled = bool(enabled)
        self.ramp_time = float(ramp_time)
        self.enabled_ratio = 1.0 if self.enabled else 0.0

    def on_associated(self, arm: ArmView) -> None:
        """Called once when added to an arm: allocate buffers sized for it."""

    def _ramp(self, dt: float) -> None:
        if self.enabled and self.enabled_ratio < 1.0:
            self.enabled_ratio = 1.0 if self.ramp_time <= 0.0 else min(1.0, self.enabled_ratio + dt / self.ramp_time)
        elif not self.enabled and self.enabled_ratio > 0.0:
            self.enabled_ratio = 0.0 if self.ramp_time <= 0.0 else max(0.0, self.enabled_ratio - dt / self.ramp_time)

    def update(self, arm: ArmView, dt: float) -> bool:
        """Add this plugin's contribution to ``arm.pending_command``; False on failure."""
        self._ramp(dt)
        return True

    def gravity_vector(self) -> FloatArray | None:
        """[m/s², world frame] the gravity this plugin uses now (``gravity_source`` plugins), else None."""
        return None

    def feed_forward_efforts(self) -> FloatArray | None:
        """[N·m] the trajectory feed-forward this plugin added this cycle (``feed_forward_effort``
        plugins), else None."""
        return None

    def send(self, arm: ArmView) -> bool:
        """Plugins that drive extra modules send their own commands here."""
        return True

    def close(self) -> None:
        """Release anything the plugin opened."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, enabled={self.enabled}, ratio={self.enabled_ratio:.2f})"
