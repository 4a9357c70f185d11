"""A goal admitted ahead of the cycle that starts it, handed over without checking it again there.

A goal's admission (:func:`hebictl.control.admission.plan`) checks the whole path against the
arm's body and its workspace: 654 samples, 54-88 ms on the bundled configs, ten or more cycles
at 200 Hz. Run inside a cycle, it makes that cycle an overrun and leaves the arm on its last
command meanwhile. ``hebictl run`` therefore admits each of its moves before the loop starts,
from the state the move will start from (the measured start, or the previous move's target, at
rest), and the cycle that starts the move only checks that the arm is still there
(:func:`retime`) and shifts the admitted trajectory to start now: microseconds, not a path check.
"""

from __future__ import annotations

import numpy as np

from hebictl._typing import FloatArray
from hebictl.trajectory import Trajectory

#: [rad] how far the arm may be from an admitted trajectory's start for it to be used as admitted:
#: the first command then steps at most this far (about one cycle of a slow move at 200 Hz)
START_TOLERANCE = 2e-3
#: [rad/s or m/s] a start velocity below this is rest: the commanded state at the end of a trajectory
#: carries rounding noise (3e-15 rad/s measured at the end of a homing goal), not motion
REST_VELOCITY = 1e-9


def retime(admitted: Trajectory, start: tuple[FloatArray, FloatArray, FloatArray], now: float,
           tolerance: float = START_TOLERANCE) -> Trajectory | None:
    """``admitted`` shifted to start at ``now`` [s], if ``start`` (position, velocity,
    acceleration: :meth:`~hebictl.control.arm.Arm.current_state`) is at rest within ``tolerance``
    of where it starts; else None: the arm moved since, and the goal must be admitted again."""
    position, velocity, _acceleration = start
    first = admitted.positions[:, 0]
    if position.shape != first.shape or np.any(np.abs(position - first) > tolerance):
        return None
    if np.any(np.abs(velocity) > REST_VELOCITY) or np.any(np.abs(admitted.velocities[:, 0]) > REST_VELOCITY):
        return None  # admitted at rest: a moving arm starts from its own velocity
    return admitted.shifted(now - admitted.start_time)
