"""The control loop of an app: arm update, input poll, the guard, the app, arm send, recording.

One cycle, in this order (the arm's clock paces it: ``update`` waits for the modules' feedback)::

    arm.update() -> source.poll(now) -> guard.step(now, sample) -> app.step(frame) -> arm.send()

so a sample taken in this cycle acts on this cycle's command, and a stale link holds in the first
cycle after the command lifetime ran out. The recorder (optional) gets the cycle and the input
sample (:mod:`hebictl.inputs.recording`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hebictl.errors import UsageError
from hebictl.inputs.apps.ar import ArApp
from hebictl.inputs.apps.base import DISCONNECT_AFTER, App
from hebictl.inputs.apps.gravcomp import GravcompApp
from hebictl.inputs.apps.jog import JogApp
from hebictl.inputs.apps.teach import RepeatApp, TeachApp
from hebictl.inputs.guard import CartesianLimits, Frame, InputGuard, PoseGate
from hebictl.inputs.path_file import load_path
from hebictl.inputs.sources import InputSource

if TYPE_CHECKING:
    from hebictl.control.arm import Arm

APPS = ("ar", "teach", "repeat", "gravcomp", "jog")
#: [s] an app that quit keeps cycling until its hold has braked the arm to rest, at most this long
SETTLE_LIMIT = 3.0


@dataclass
class RunResult:
    """What a run did: cycles, the app's final state and transitions, refusals, input link figures."""

    cycles: int
    state: str
    quit: bool
    refused: Counter[str] = field(default_factory=Counter)
    accepted: int = 0
    stale: int = 0
    reconnects: int = 0
    notes: list[str] = field(default_factory=list)


def lifetime_of(arm: Arm) -> float:
    """[s] the stale threshold: the modules' command lifetime (the config's), HEBI's 0.25 s without one."""
    value = float(getattr(arm.backend, "command_lifetime", 0.0) or 0.0)
    return value if value > 0.0 else 0.25


def make_app(name: str, arm: Arm, *, box: tuple[float, ...] | None = None, path_file: str | Path | None = None,
             loops: int = 1) -> App:
    """The app ``name`` (one of :data:`APPS`) on ``arm``, its pose gate within the arm's Cartesian limits."""
    gate = PoseGate(arm, CartesianLimits.of_arm(arm, box))
    ud = arm.user_data
    if name == "ar":
        return ArApp(arm, gate, ud)
    if name == "teach":
        return TeachApp(arm, gate, ud, path_file=path_file)
    if name == "repeat":
        if path_file is None:
            raise UsageError("hebictl app repeat needs --path FILE (a path saved by 'hebictl app teach --path')")
        return RepeatApp(arm, gate, ud, path=load_path(path_file, arm.model.joint_names), loops=loops)
    if name == "gravcomp":
        return GravcompApp(arm, gate, ud)
    if name == "jog":
        return JogApp(arm, gate, ud, lifetime=lifetime_of(arm))
    raise UsageError(f"unknown app {name!r}; choose from {', '.join(APPS)}")


def run_app(arm: Arm, app: App, source: InputSource, *, duration: float = math.inf, recorder: Any = None,
            on_cycle: Callable[[Arm, Frame], None] | None = None, end_after_input: bool = False,
            should_stop: Callable[[], bool] | None = None) -> RunResult:
    """Run ``app`` until it quits (then until the arm is still, at most :data:`SETTLE_LIMIT`), ``duration``
    [s, arm clock] passes, ``should_stop()`` is true, or (``end_after_input``) a finite source has
    delivered its last sample and :data:`~hebictl.inputs.apps.base.DISCONNECT_AFTER` more has passed."""
    guard = InputGuard(lifetime_of(arm), app.ENABLE, app.QUIT)
    clock = arm.clock
    arm.update()
    start = clock.now()
    app.start_time = start
    app.start()
    arm.send()
    cycles, settle_until, exhausted_at = 0, math.inf, math.inf
    while clock.now() - start < duration and clock.now() < settle_until:
        if should_stop is not None and should_stop():
            break
        arm.update()
        now = clock.now()
        sample = source.poll(now)
        frame = guard.step(now, sample)
        if sample is not None and recorder is not None:
            from hebictl.inputs.recording import INPUT, input_message

            recorder.publish(INPUT.name, input_message(sample, start))
        if not app.done:
            app.step(frame)
            if app.done:
                settle_until = now + SETTLE_LIMIT
        elif not arm.braking:
            settle_until = now
        arm.send()
        if recorder is not None:
            recorder.sample(teleop_mode=f"{app.name}:{app.state}")
        source.indicate(app.led, app.TEXT)
        if on_cycle is not None:
            on_cycle(arm, frame)
        cycles += 1
        if end_after_input and getattr(source, "exhausted", False):
            exhausted_at = min(exhausted_at, now)
            if now - exhausted_at > DISCONNECT_AFTER:
                break
    return RunResult(cycles, app.state, app.done, app.gate.refused, app.gate.accepted, guard.stale_count,
                     guard.reconnects, list(app.notes))
