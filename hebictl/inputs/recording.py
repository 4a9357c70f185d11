"""The input state as its own channel of a hebictl MCAP recording (``/input/mobile_io``).

Each sample an app took in is one JSON message: :meth:`hebictl.inputs.state.InputState.to_json`
plus ``t_run`` [s since the app's first cycle], which a replay (``--input replay:RUN.mcap``,
:func:`hebictl.inputs.sources.recorded_samples`) uses to deliver it at the same point of the run.
"""

from __future__ import annotations

from typing import Any

from hebictl.inputs.sources import INPUT_TOPIC
from hebictl.inputs.state import InputState
from hebictl.recording.schemas import Topic

_NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}

INPUT = Topic(INPUT_TOPIC, "hebictl.MobileInput", "json",
              "every input sample an app took in (Mobile IO buttons, axes, AR pose and quality), with t_run "
              "[s since the app started] for replay",
              {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "hebictl.MobileInput",
               "type": "object",
               "properties": {"t": {"type": "number"}, "t_run": {"type": "number"}, "seq": {"type": "integer"},
                              "source_time": {"type": ["number", "null"]},
                              "buttons": {"type": "array", "items": {"type": "integer"}}, "axes": _NUMBERS,
                              "position": {"type": ["array", "null"]}, "orientation": {"type": ["array", "null"]},
                              "quality": {"type": "number"}}})


def input_message(state: InputState, start: float) -> dict[str, Any]:
    """The channel's message for ``state`` in an app started at ``start`` [s, arm clock]."""
    return {"t_run": state.t - start, **state.to_json()}
