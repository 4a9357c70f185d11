"""Mobile IO input (HEBI's phone app) and HEBI's example workflows on hebictl's arm.

One input state (:mod:`~hebictl.inputs.state`) from several sources (a real Mobile IO through
hebi-py :mod:`~hebictl.inputs.mobile_io`; the MQTT input topic :mod:`~hebictl.inputs.schema`; scripts
and replays :mod:`~hebictl.inputs.sources`), one safety path (:mod:`~hebictl.inputs.guard`), the apps
of HEBI's examples as explicit state machines (:mod:`hebictl.inputs.apps`), a saved-path format
(:mod:`~hebictl.inputs.path_file`) and the loop that runs them (:mod:`~hebictl.inputs.runner`).
See docs/mobile_io.md.
"""

from hebictl.inputs.guard import CartesianLimits, Frame, InputGuard, PoseGate
from hebictl.inputs.state import InputState

__all__ = ["CartesianLimits", "Frame", "InputGuard", "InputState", "PoseGate"]
