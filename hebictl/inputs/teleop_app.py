"""A Mobile IO app inside ``hebictl teleop``: mode ``app``, driven by the ``cmd/input`` topic.

``hebictl teleop --app NAME`` builds one :class:`TeleopApp` and hands it to the arm thread
(:class:`hebictl.teleop.runner.ArmRunner`, as its ``AppDriver``). The bridge passes every
``cmd/input`` payload that passed its command checks (topic, account, envelope, freshness, order,
rate) to :meth:`TeleopApp.offer`, i.e. to a :class:`~hebictl.inputs.sources.MailboxSource`, which
validates it against the topic's one schema and drops and counts what fails. With the bridge in a
process of its own (``--bridge process``, the default) the same checks run there
(:meth:`TeleopApp.input_check`, a :class:`~hebictl.inputs.sources.InputCheck` sent to the child),
and what they accepted or dropped comes over the link to :meth:`TeleopApp.take` and
:meth:`TeleopApp.refuse`, read by the arm thread: the app's source ends up the same. The arm thread calls
:meth:`TeleopApp.cycle` between the feedback read and the send while the mode is ``app``: the same
poll, guard and app step as :func:`hebictl.inputs.runner.run_app`, so the safety path (stale input
holds, nothing moves after a reconnect until the enable button, every pose through the arm's
admission) is the one every other source gets.

Each time mode ``app`` is entered the app starts afresh (a new app and guard: no sample, button
edge or taught path of an earlier run carries over). Leaving it, whatever the reason (another
mode, the e-stop, a fault, the broker lost, shutdown), :meth:`TeleopApp.end` gives the arm back
its gravity compensation if the app had switched it off (the ``gravcomp`` app's off state); the
runner's own stop then acts on the arm.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.inputs.apps.base import App
from hebictl.inputs.guard import InputGuard
from hebictl.inputs.runner import lifetime_of, make_app
from hebictl.inputs.sources import InputCheck, MailboxSource
from hebictl.inputs.state import InputState

if TYPE_CHECKING:
    from hebictl.control.arm import Arm

#: the apps mode ``app`` can run (``repeat`` needs no input stream: it is ``hebictl app repeat``)
TELEOP_APPS = ("ar", "teach", "gravcomp", "jog")


class TeleopApp:
    """The ``AppDriver`` of :class:`hebictl.teleop.runner.ArmRunner` for the app ``name``."""

    def __init__(self, arm: Arm, name: str, *, box: tuple[float, ...] | None = None,
                 path_file: str | Path | None = None) -> None:
        self.arm = arm
        self.name = name
        self.box = box
        self.path_file = path_file
        self.source = MailboxSource(arm.clock, name="cmd/input")
        make_app(name, arm, box=box, path_file=path_file)  # a config the app cannot run fails at start-up
        self.app: App | None = None
        self.guard: InputGuard | None = None
        self.runs = 0
        #: a recorder with the input channel (:meth:`record_to`), or None
        self.recorder: Any = None
        self._input_topic = ""
        self._input_message: Any = None
        self._gravcomp_was: bool | None = None
        self._state = "not started"

    # ------------------------------------------------------------------ the bridge's side (any thread)
    def offer(self, payload: bytes | bytearray | str) -> tuple[bool, str, str]:
        """Validate and keep one ``cmd/input`` payload: (accepted, reason, detail)."""
        sample, reason, detail = self.source.admit(payload)
        return sample is not None, reason, detail

    def input_check(self) -> InputCheck:
        """:meth:`offer`'s checks for the bridge process (picklable), which hands the result over the
        link to :meth:`take` or :meth:`refuse`."""
        return InputCheck()

    def record_to(self, recorder: Any) -> None:
        """Record every sample an app run takes in on ``recorder``'s input channel
        (:mod:`hebictl.inputs.recording`; the recorder was made with it among its ``extra_topics``), as
        ``hebictl app --record`` does, so ``--input replay:RUN.mcap`` replays a teleop session's input.
        Called before the arm thread starts: nothing is imported inside the cycle."""
        from hebictl.inputs.recording import INPUT, input_message

        self._input_topic, self._input_message = INPUT.name, input_message
        self.recorder = recorder

    # ------------------------------------------------------------------ the arm thread's side
    def take(self, sample: InputState, received: float) -> None:
        """A sample the bridge process's :meth:`input_check` accepted, taken in at ``received`` [s,
        the arm's clock]: kept as the newest, as :meth:`offer` keeps one."""
        if sample.t != received:
            sample = dataclasses.replace(sample, t=received)
        self.source.keep(sample)

    def refuse(self, reason: str, detail: str) -> None:
        """A sample the bridge process's :meth:`input_check` dropped: counted by ``reason``."""
        self.source.drop(reason, detail)

    def begin(self) -> None:
        now = self.arm.clock.now()
        self.source.clear()  # a sample that waited from before this run is not part of it
        plugin = self.arm.plugin("GravityCompensationEffort")
        self._gravcomp_was = None if plugin is None else bool(plugin.enabled)
        app = make_app(self.name, self.arm, box=self.box, path_file=self.path_file)
        self.guard = InputGuard(lifetime_of(self.arm), app.ENABLE, app.QUIT)
        app.start_time = now
        app.start()
        self.app = app
        self.runs += 1

    def cycle(self, now: float) -> None:
        app, guard = self.app, self.guard
        if app is None or guard is None:
            return
        sample = self.source.poll(now)
        frame = guard.step(now, sample)
        if sample is not None and self.recorder is not None:
            self.recorder.publish(self._input_topic, self._input_message(sample, app.start_time))
        if not app.done:
            app.step(frame)

    def end(self) -> None:
        if self.app is not None:
            self._state = self.app.state
        plugin = self.arm.plugin("GravityCompensationEffort")
        if plugin is not None and self._gravcomp_was is not None:
            plugin.enabled = self._gravcomp_was
        self._gravcomp_was = None
        self.app = None
        self.guard = None

    def status(self) -> dict[str, Any]:
        """Name, state (``not started`` / the app's / the last one's after it ended), LED colour
        (HEBI's names), whether motion is armed, the input link, and the input counts."""
        app, guard = self.app, self.guard
        accepted, dropped = self.source.counts()
        return {"name": self.name, "state": app.state if app is not None else self._state,
                "led": app.led if app is not None else None,
                "armed": bool(guard is not None and guard.armed),
                "link": guard.link.value if guard is not None else "none",
                "input_accepted": accepted, "input_dropped": dropped}


def describe(app: TeleopApp, layout: list[dict[str, Any]] | None) -> dict[str, Any]:
    """``state/description``'s ``mobile_io``: the app, its instructions text and enable button, and
    the config's layout (HEBI's widget list, :func:`hebictl.inputs.layout.load_layout`) or None
    (the panel's emulator then draws HEBI's default: B1-B8 and A1-A8)."""
    cls = type(make_app(app.name, app.arm, box=app.box, path_file=app.path_file))
    return {"app": app.name, "text": cls.TEXT, "enable": cls.ENABLE, "layout": layout}
