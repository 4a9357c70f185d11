"""Compiled per-cycle command and feedback checks: clamp, rate limit, limit approach, limit faults.

Why compiled: these run on every cycle of a 1 kHz loop on a handful of joints, where each numpy
call costs about a microsecond whatever the array size; written as numpy they took some thirty
calls (~40 µs) per cycle, as one pass over the joints they take about two. The arithmetic is the
numpy version's, operation for operation (``tests/control/test_cycle_kernels.py`` runs both
side by side), including how NaN (a joint not commanded) passes through.

They use the model kernels' start-up machinery (:mod:`hebictl.model.warmup`): numba is imported on
the first call, the compiled code comes from numba's cache, and while that is cold the kernels run
their own Python source and the background compile covers them too.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np

from hebictl.model import warmup as _warmup

njit = _warmup.lazy_njit
_CACHE = os.environ.get("HEBICTL_NUMBA_CACHE", "1") != "0"

#: what :func:`hebictl.model.warmup.install` wraps (compiled from the cache or interpreted while cold)
ENTRY_KERNELS = ("limit_command", "first_outside", "first_firmware_limit", "feedback_faults")


@njit(cache=_CACHE, inline="always")
def _minimum(a, b):
    """``np.minimum`` on scalars: NaN if either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a <= b else b


@njit(cache=_CACHE, inline="always")
def _maximum(a, b):
    """``np.maximum`` on scalars: NaN if either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a >= b else b


@njit(cache=_CACHE)
def limit_command(position, velocity, effort, last, measured, dt, clamp, bounded, lo, hi,
                  velocity_limit, effort_limit, rate_velocity, acceleration, approach, limited):
    """Limit one cycle's command in place; True if the rate limit moved any joint.

    Per joint, in this order (NaN entries are "not commanded" and stay NaN):

    1. ``clamp``: position into [lo, hi] (when ``bounded``), velocity into ±``velocity_limit``,
       effort into ±``effort_limit``;
    2. ``last`` (the previous cycle's command) missing: the measured position, else the command;
    3. ``dt <= 0``: the position stays at ``last`` (no time, no motion);
    4. ``bounded``: speed toward [lo, hi] at most ``sqrt(approach * a * gap)`` (arrive at rest; ``a``
       is ``acceleration``, 1e9 where that is not finite);
    5. a step over ``rate_velocity * dt`` is cut to it and the velocity set to the rated speed.

    ``last`` is updated; ``limited`` is written only when the result is True.
    """
    n = position.shape[0]
    any_limited = False
    for j in range(n):
        p = position[j]
        v = velocity[j]
        if clamp:
            if bounded:
                p = _maximum(_minimum(p, hi[j]), lo[j])
            v = _maximum(_minimum(v, velocity_limit[j]), -velocity_limit[j])
            effort[j] = _maximum(_minimum(effort[j], effort_limit[j]), -effort_limit[j])
        ref = last[j]
        if ref != ref:
            ref = measured[j]
            if ref != ref:
                ref = p  # no measurement either: accept the command as it is
        last[j] = ref
        if dt <= 0.0:
            if math.isfinite(p):
                p = ref
            position[j] = p
            velocity[j] = v
            continue
        if bounded:
            a = acceleration[j]
            two_a = approach * (a if math.isfinite(a) else 1e9)
            up = math.sqrt(_maximum(hi[j] - ref, 0.0) * two_a)
            down = math.sqrt(_maximum(ref - lo[j], 0.0) * two_a)
            if up != up:
                up = math.inf
            if down != down:
                down = math.inf
            p = _maximum(_minimum(p, up * dt + ref), ref - down * dt)
            v = _maximum(_minimum(v, up), -down)
        step = rate_velocity[j] * dt
        delta = p - ref
        if abs(delta) - step > 0.0:
            sign = 1.0 if delta > 0.0 else -1.0
            p = ref + sign * step
            v = sign * rate_velocity[j]
            if not any_limited:
                for k in range(n):
                    limited[k] = False
                any_limited = True
            limited[j] = True
        position[j] = p
        velocity[j] = v
        last[j] = p
    return any_limited


@njit(cache=_CACHE)
def _first_outside(position, lo, hi, tolerance):
    for j in range(position.shape[0]):
        if position[j] < lo[j] - tolerance or position[j] > hi[j] + tolerance:
            return j
    return -1


@njit(cache=_CACHE)
def _first_firmware_limit(state):
    for j in range(state.shape[0]):
        s = state[j]
        if s <= 1.0:
            return 2 * j
        if s == 3.0 or s == 4.0:
            return 2 * j + 1
    return -1


@njit(cache=_CACHE)
def first_outside(position, lo, hi, tolerance):
    """Index of the first joint below ``lo - tolerance`` or above ``hi + tolerance``, else -1 (NaN: inside)."""
    return _first_outside(position, lo, hi, tolerance)


@njit(cache=_CACHE)
def first_firmware_limit(state):
    """``2 j + side`` of the first module whose own position limit acts (side 0 lower, 1 upper), else -1.

    ``state`` holds hebi's ``position_limit_state`` values: 0 Below, 1 AtLower, 2 Inside,
    3 AtUpper, 4 Above, 5 Uninitialized, NaN unknown.
    """
    return _first_firmware_limit(state)


@njit(cache=_CACHE)
def feedback_faults(position, lo, hi, tolerance, bounded, mstop, limit_state):
    """What one feedback sample says, in one call: (a module's M-stop is pressed,
    :func:`first_firmware_limit` of ``limit_state``, :func:`first_outside` of the position when
    ``bounded`` else -1)."""
    pressed = False
    for j in range(mstop.shape[0]):
        if mstop[j] == 1.0:
            pressed = True
    outside = _first_outside(position, lo, hi, tolerance) if bounded else -1
    return pressed, _first_firmware_limit(limit_state), outside


def load(model: Any, dof: int) -> None:
    """Call every kernel of an arm's control cycle once, on scratch arrays: these and the model's
    gravity and inverse-dynamics kernels. Numba then loads them from its cache (or, on a cold
    cache, the background compile starts) while the arm is being built, not in its first control
    cycle, where loading them all takes about 0.4 s."""
    x, flags = np.zeros(dof), np.zeros(dof, dtype=np.bool_)
    limit_command(x.copy(), x.copy(), x.copy(), x.copy(), x, 0.001, True, True, x, x, x, x, x, x, 0.6, flags)
    first_outside(x, x, x, 0.0)
    first_firmware_limit(x)
    feedback_faults(x, x, x, 0.0, True, x, x)
    q, out, g = np.zeros(model.nq), np.zeros(model.nv), np.array([0.0, 0.0, -9.81])
    model.gravity_compensation_into(q, g, out)
    model.inverse_dynamics_into(q, out.copy(), out.copy(), g, out)
    # what a goal's admission and the monitors call (batched inverse dynamics, the collision world's
    # link poses, the end-effector Jacobian): the first set_goal must not wait for them to load
    # either, or it outlasts the modules' command lifetime
    Q, V = np.zeros((2, model.nq)), np.zeros((2, model.nv))
    model.inverse_dynamics(Q, V, V)
    model.inverse_dynamics_batch_into(Q, V, V, g, np.zeros((2, model.nv)))
    model.forward_kinematics_into(q, "link", np.empty((model.frame_count("link"), 4, 4)))
    if model.frame_count("end_effector"):
        model.jacobian_end_effector(q)


_warmup.install(sys.modules[__name__])
