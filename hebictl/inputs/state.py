"""One input state for every source: what a Mobile IO reports, in hebi-py's own numbering.

A Mobile IO (HEBI's phone app) joins the module network as a one-module group with 8 buttons
(``io.b``, 0/1), 8 axes (``io.a``: sliders and joysticks, -1..1) and the phone's AR pose
(``ar_position`` [m], ``ar_orientation`` w x y z, ``ar_quality``). The real device, the MQTT input
topic and a replayed recording all become an :class:`InputState`, so the apps and the safety path
(:mod:`hebictl.inputs.guard`) never know where a sample came from.

Buttons and axes are 1-indexed in HEBI's API (``get_button_state(1)`` is B1); here they are tuples,
so B1 is ``buttons[0]``; :meth:`InputState.button` and :meth:`InputState.axis` take HEBI's index.
Edges (:func:`button_diff`) are hebi-py's ``get_button_diff``: current minus previous state, so
+1 on a press, -1 on a release, 0 otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebictl._typing import FloatArray

#: buttons and axes of a Mobile IO (hebi-py's MobileIO: indices 1..8)
CHANNELS = 8
#: AR quality when a source reports a finite pose but no quality figure of its own
QUALITY_UNKNOWN = -1.0


@dataclass(frozen=True)
class InputState:
    """One sample of an input device.

    ``t`` [s, the arm's clock] is when the sample was taken into the controller (the freshness of
    every decision is measured on it); ``source_time`` [s] is the device's or sender's own stamp, kept
    for the recording. ``position``/``orientation`` are None when the source has no AR pose (hebi-py's
    imitation group, a phone without AR); ``quality`` is the AR tracking quality where the source
    reports one (hebi-py ``ar_quality``), else :data:`QUALITY_UNKNOWN`."""

    t: float
    buttons: tuple[int, ...]
    axes: tuple[float, ...]
    position: tuple[float, float, float] | None = None
    orientation: tuple[float, float, float, float] | None = None
    quality: float = QUALITY_UNKNOWN
    source_time: float = math.nan
    seq: int = 0

    def button(self, index: int) -> int:
        """Button ``index`` (1..8, HEBI's numbering): 1 pressed, 0 released."""
        return self.buttons[_index(index)]

    def axis(self, index: int) -> float:
        """Axis ``index`` (1..8, HEBI's numbering), NaN where the source has none."""
        return self.axes[_index(index)]

    @property
    def has_pose(self) -> bool:
        return self.position is not None and self.orientation is not None

    def position_array(self) -> FloatArray:
        if self.position is None:
            raise ValueError("this input sample has no AR pose")
        return np.array(self.position, dtype=np.float64)

    def rotation(self) -> FloatArray:
        """The phone's orientation as a 3x3 rotation matrix (from the unit quaternion w x y z)."""
        if self.orientation is None:
            raise ValueError("this input sample has no AR pose")
        return quaternion_matrix(np.array(self.orientation, dtype=np.float64))

    def to_json(self) -> dict[str, Any]:
        """The recording's form (JSON: NaN becomes null)."""
        return {"t": self.t, "seq": self.seq, "source_time": _num(self.source_time),
                "buttons": list(self.buttons), "axes": [_num(a) for a in self.axes],
                "position": None if self.position is None else list(self.position),
                "orientation": None if self.orientation is None else list(self.orientation),
                "quality": self.quality}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InputState:
        """Inverse of :meth:`to_json` (for recordings hebictl wrote; network input goes through
        :mod:`hebictl.inputs.schema`)."""
        pos, ori = data.get("position"), data.get("orientation")
        return cls(t=float(data["t"]), buttons=tuple(int(b) for b in data["buttons"]),
                   axes=tuple(math.nan if a is None else float(a) for a in data["axes"]),
                   position=None if pos is None else (float(pos[0]), float(pos[1]), float(pos[2])),
                   orientation=None if ori is None else (float(ori[0]), float(ori[1]), float(ori[2]), float(ori[3])),
                   quality=float(data.get("quality", QUALITY_UNKNOWN)),
                   source_time=math.nan if data.get("source_time") is None else float(data["source_time"]),
                   seq=int(data.get("seq", 0)))


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _index(index: int) -> int:
    if not 1 <= index <= CHANNELS:
        raise IndexError(f"Mobile IO channels are numbered 1..{CHANNELS}, got {index}")
    return index - 1


def released(t: float = 0.0) -> InputState:
    """Every button up, every axis at rest (0), no pose: what a device shows before any input."""
    return InputState(t=t, buttons=(0,) * CHANNELS, axes=(0.0,) * CHANNELS)


def button_diff(previous: InputState | None, current: InputState, index: int) -> int:
    """hebi-py's ``get_button_diff``: +1 pressed since ``previous``, -1 released, 0 unchanged (no
    previous sample: never an edge, so a button held while a device connects is not a press)."""
    if previous is None:
        return 0
    return current.button(index) - previous.button(index)


def quaternion_matrix(wxyz: FloatArray) -> FloatArray:
    """3x3 rotation of a quaternion w x y z (normalised first)."""
    w, x, y, z = wxyz / np.linalg.norm(wxyz)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
