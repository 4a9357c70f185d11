"""Extra modules on the arm's backend type: a double shoulder's mirror module, opened by its plugin.

The Arm keeps one :class:`ExtraModules` (built by :mod:`hebictl.wiring.assembly`, or by the Arm
itself when it is built directly from a model and a backend), so a plugin asks the arm for more
modules through :class:`~hebictl.control.plugins.ArmView` without knowing the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hebictl.hardware.base import Backend
from hebictl.hardware.registry import BackendSpec, open_backend

if TYPE_CHECKING:
    from hebictl.hardware.clock import Clock


@dataclass
class ExtraModules:
    """Opens more modules on the arm's backend type (a double shoulder's mirror module).

    A backend that can drive extra modules on the same physical joints (the simulator) offers
    ``open_extra_modules(names, families, joints=, signs=)``; otherwise a new group of the same
    backend type is opened through the registry.
    """

    backend_name: str
    primary: Backend
    clock: Clock | None
    user_data: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def open(self, names: Sequence[str], families: Sequence[str], joints: Sequence[int] = (),
             signs: Sequence[float] = ()) -> Backend:
        opener = getattr(self.primary, "open_extra_modules", None)
        if opener is not None:
            return opener(list(names), list(families), joints=list(joints), signs=list(signs))
        spec = BackendSpec(tuple(names), tuple(families), feedback_frequency=self.primary.feedback_frequency,
                           command_lifetime=self.primary.command_lifetime, user_data=self.user_data)
        return open_backend(self.backend_name, spec, clock=self.clock, **self.options)


__all__ = ["ExtraModules"]
