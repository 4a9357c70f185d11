"""A real Mobile IO through hebi-py: lookup with retries, the config's layout sent, LEDs and text.

What HEBI's examples do (``hebi_util.create_mobile_io_from_config``), in hebictl's terms:

* the device is found by family and name (``user_data.mobile_io_family``/``mobile_io_name``, or
  ``--input mobileio:FAMILY/NAME``; hebi-py's default is ``HEBI/mobileIO``), retrying once a second
  (10 tries, as the examples) and then failing with a :class:`~hebictl.errors.HardwareError`;
* the UI is reset and the config's layout (``user_data.mobile_io_layout``, read and checked by
  :mod:`hebictl.inputs.layout`) is sent; a device that refuses it (hebi-py's imitation group always
  does) is a warning, not an error: the buttons and axes still work;
* the app's mode shows as the edge LED colour and a text line (``set_led_color``, ``add_text``),
  sent without waiting for an acknowledgement so the control loop never blocks on the phone.

Each ``poll`` is ``MobileIO.update(timeout_ms=0)``: a new feedback is one sample; none is None.
Buttons and axes are read from the feedback's ``io`` banks, so a hebi-py ``MobileIO`` on an
imitation group (which echoes the ``io`` integers of the commands sent to it) drives the same
layer as a phone.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

from hebictl.errors import HardwareError, HebictlWarning
from hebictl.inputs.sources import state_of_feedback
from hebictl.inputs.state import InputState

log = logging.getLogger(__name__)

#: hebi-py's defaults for a Mobile IO's family and name (``hebi.util.create_mobile_io``)
DEFAULT_FAMILY, DEFAULT_NAME = "HEBI", "mobileIO"
#: lookup tries and the wait between them [s] (HEBI's examples: 10 tries, 1 s apart)
LOOKUP_TRIES, LOOKUP_WAIT = 10, 1.0


def parse_spec(spec: str, user_data: dict[str, Any] | None = None) -> tuple[str, str]:
    """Family and name of ``mobileio[:FAMILY/NAME]``: the spec's, else the config's ``user_data``
    (``mobile_io_family``, ``mobile_io_name``), else hebi-py's ``HEBI/mobileIO``."""
    _, _, rest = spec.partition(":")
    if rest:
        family, sep, name = rest.partition("/")
        if not sep or not family or not name:
            raise HardwareError(f"--input {spec}: expected mobileio:FAMILY/NAME")
        return family, name
    data = user_data or {}
    family = data.get("mobile_io_family", DEFAULT_FAMILY)
    name = data.get("mobile_io_name", DEFAULT_NAME)
    return str(family), str(name)


def lookup_group(family: str, name: str, *, tries: int = LOOKUP_TRIES, wait: float = LOOKUP_WAIT,
                 lookup: Any = None, sleep: Callable[[float], None] = time.sleep) -> Any:
    """The one-module hebi-py group of the device, retrying ``tries`` times ``wait`` s apart."""
    import hebi

    lookup = lookup if lookup is not None else hebi.Lookup()
    for attempt in range(tries):
        group = lookup.get_group_from_names([family], [name])
        if group is not None:
            return group
        log.warning("Mobile IO %s/%s not found (try %d of %d); is the app running on this network?",
                    family, name, attempt + 1, tries)
        if attempt + 1 < tries:
            sleep(wait)
    raise HardwareError(f"Mobile IO {family}/{name} not found after {tries} tries, {wait:g} s apart")


class MobileIOSource:
    """An input source reading a hebi-py ``MobileIO`` (a phone, or one on an imitation group).

    ``layout``: the widgets to send (:func:`hebictl.inputs.layout.load_layout`), or None to keep the
    device's own."""

    def __init__(self, group: Any, *, layout: list[dict[str, Any]] | None = None, name: str = "mobileio") -> None:
        from hebi._internal.mobile_io import MobileIO

        self.name = name
        self.device = MobileIO(group)
        self._seq = 0
        self._t0: float | None = None
        self._shown: tuple[str | None, str | None] = (None, None)
        self.layout_sent = False
        self.device.resetUI()
        if layout is not None:
            self.layout_sent = bool(self.device.send_layout(layout=layout))
            if not self.layout_sent:
                warnings.warn(f"the Mobile IO did not acknowledge the layout ({len(layout)} widgets); "
                              "it keeps its current one", HebictlWarning, stacklevel=2)

    def poll(self, now: float) -> InputState | None:
        if not self.device.update(timeout_ms=0):
            return None
        self._seq += 1
        fbk = self.device.get_last_feedback()
        state = state_of_feedback(fbk, now, self._seq)
        return state

    def indicate(self, led: str | None, text: str | None) -> None:
        """LED colour and a text line, only when they change, without waiting for the phone."""
        if (led, text) == self._shown:
            return
        if led is not None and led != self._shown[0]:
            self.device.set_led_color(led, blocking=False)
        if text is not None and text != self._shown[1]:
            self.device.clear_text(blocking=False)
            self.device.add_text(text, blocking=False)
        self._shown = (led, text)

    def close(self) -> None:
        self.device.set_led_color("red", blocking=False)  # HEBI's examples end with a red LED
