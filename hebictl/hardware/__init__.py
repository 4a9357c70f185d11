"""Hardware interface: one ``Backend`` protocol, backends chosen by name with ``open_backend``.

Importing this package loads neither hebi-py nor MuJoCo; a backend's dependencies are imported
when it is opened.
"""

from hebictl.hardware.base import Backend, Command, Feedback
from hebictl.hardware.clock import Clock, MonotonicClock, SimClock
from hebictl.hardware.faults import Fault, FaultKind, FaultSchedule
from hebictl.hardware.firmware import LimitState, LimitStrategy, ModuleSafety, MstopStrategy
from hebictl.hardware.registry import available_backends, open_backend, register_backend, unregister_backend

__all__ = ["Backend", "Clock", "Command", "Fault", "FaultKind", "FaultSchedule", "Feedback", "LimitState",
           "LimitStrategy", "ModuleSafety", "MonotonicClock", "MstopStrategy", "SimClock", "available_backends",
           "open_backend", "register_backend", "unregister_backend"]
