"""The arm's modes as values: each owns its data and computes its part of the command.

Why values: the Arm used to keep a mode's data (a trajectory, a brake ramp and whether it chases the
arm, a hold's anchor, ...) in fields beside the mode, and every fix in that area was about the two
disagreeing (a hold whose anchor was a leftover of an earlier hold, a brake flag of an older brake).
Here the :class:`~hebictl.control.supervisor.Supervisor` holds one value; switching the mode replaces
it, so stale data cannot outlive its mode. Which value may follow which is the supervisor's table.

* :class:`Follow`: a goal's trajectory;
* :class:`Braking`: a brake ramp, whether it chases the measured state (and overran the rated speed,
  and how often it braked again), and the ramp's own clock;
* :class:`Holding`: the hold target (None: anchored on the next sample) and whether it damps the
  ringing of the brake it came from;
* :class:`Jogging`: a streamed velocity's stream, sample, integrated command, learned sag
  (its law: :mod:`hebictl.control.jog_law`);
* :class:`Damp`, :class:`GravComp`, :class:`Release`: no data, effort only or nothing.

Each value's ``position_command(ctx, now, cmd, blind)`` is what the cycle asks it for (its position
and velocity this cycle, and the cycle's reference state); the laws behind it live beside the values
(``brake.py``: the ramp's start, construction, sample, braking again and end; ``jog.py``: the jog's
step). ``start.py`` enters a brake or a hold from the measured state, ``command.py`` holds the
cycle's questions to the mode (running, latched and blind), and ``context.py`` the
:class:`~hebictl.control.modes.context.ModeContext`, the narrow view of the arm the laws get instead
of the Arm (import them from their modules: this package exports the values only).
"""

from __future__ import annotations

from hebictl.control.modes.brake import LAG_MIN_RAD, REBRAKE_SPEED, REBRAKES, Braking
from hebictl.control.modes.effort import Damp, GravComp, Release
from hebictl.control.modes.follow import Follow
from hebictl.control.modes.hold import Holding
from hebictl.control.modes.jog import Jogging
from hebictl.control.modes.kinds import Mode

#: the value of any mode (what :attr:`Supervisor.motion <hebictl.control.supervisor.Supervisor.motion>` holds)
MotionMode = Follow | Jogging | Braking | Holding | Damp | GravComp | Release

__all__ = ["LAG_MIN_RAD", "REBRAKES", "REBRAKE_SPEED", "Braking", "Damp", "Follow", "GravComp", "Holding", "Jogging",
           "Mode", "MotionMode", "Release", "at_rest"]


def at_rest(kind: Mode) -> MotionMode | None:
    """The value of a mode that needs no data (hold anchored on the next sample, damp, gravcomp,
    release); None for follow, jog and brake, which cannot exist without their trajectory, stream or ramp."""
    if kind is Mode.HOLD:
        return Holding()
    if kind is Mode.DAMP:
        return Damp()
    if kind is Mode.GRAVCOMP:
        return GravComp()
    if kind is Mode.RELEASE:
        return Release()
    return None
