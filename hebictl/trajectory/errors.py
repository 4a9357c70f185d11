"""The error raised for unusable trajectory input.

Kept here until it moves into :mod:`hebictl.errors`; import it from :mod:`hebictl.trajectory`.
"""

from __future__ import annotations

from hebictl.errors import HebictlError


class TrajectoryError(HebictlError):
    """Waypoints, times or limits cannot define a trajectory (bad shape, order, value or too few
    constraints); the message names the offending argument, joint and waypoint."""
