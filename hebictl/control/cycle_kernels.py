"""Compiled per-cycle command and feedback checks: clamp, rate limit, limit approach, limit faults.

Why compiled: these run on every cycle of a 1 kHz loop on a handful of joints, where each numpy
call costs about a microsecond whatever the array size; written as numpy they took some thirty
calls (~40 µs) per cycle, as one pass over the joints they take about two. The arithmetic is the
numpy version's, operation for operation (``tests/control/test_cycle_kernels.py`` runs both
side by side), including how NaN (a joint not commanded) passes through.

They are registered with :mod:`hebictl.jit` like every kernel: numba is imported on the first call,
the compiled code comes from numba's cache, and while that is cold the kernels run their own Python
source and the background compile covers them too.

Results are tuples with named fields (documented on each kernel and unpacked by name by the
callers), never codes packed into one number.
"""

from __future__ import annotations

import math

from hebictl import jit
from hebictl.model import kernels as model_kernels

_VEC = "f8[::1]"


@jit.helper(cache=jit.CACHE, inline="always")
def _minimum(a, b):
    """``np.minimum`` on scalars: NaN if either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a <= b else b


@jit.helper(cache=jit.CACHE, inline="always")
def _maximum(a, b):
    """``np.maximum`` on scalars: NaN if either is NaN."""
    if a != a or b != b:
        return a + b
    return a if a >= b else b


@jit.helper(cache=jit.CACHE, inline="always")
def _within(x, limit):
    """``x`` into ±``limit`` (NaN stays NaN): the velocity and effort clamp."""
    return _maximum(_minimum(x, limit), -limit)


@jit.helper(cache=jit.CACHE, inline="always")
def _start_of_step(last, measured, commanded):
    """Where this cycle's step starts: the previous command; without one the measured position;
    without that either the command itself (accepted as it is)."""
    if last == last:
        return last
    if measured == measured:
        return measured
    return commanded


@jit.helper(cache=jit.CACHE, inline="always")
def _approach(p, v, ref, lo, hi, a, approach, dt):
    """The limit approach from ``ref``: speed toward [lo, hi] at most ``sqrt(approach * a * gap)``
    (``a`` 1e9 where not finite; a NaN bound imposes nothing), so a joint arrives at its limit at rest.
    Returns ``(p, v)``."""
    two_a = approach * (a if math.isfinite(a) else 1e9)
    up = math.sqrt(_maximum(hi - ref, 0.0) * two_a)
    down = math.sqrt(_maximum(ref - lo, 0.0) * two_a)
    if up != up:
        up = math.inf
    if down != down:
        down = math.inf
    return _maximum(_minimum(p, up * dt + ref), ref - down * dt), _maximum(_minimum(v, up), -down)


@jit.helper(cache=jit.CACHE, inline="always")
def _rate_limit(p, v, ref, rate, dt):
    """A step from ``ref`` over ``rate * dt`` cut to it, at the rated speed: ``(p, v, cut)``."""
    step = rate * dt
    delta = p - ref
    if abs(delta) - step > 0.0:
        sign = 1.0 if delta > 0.0 else -1.0
        return ref + sign * step, sign * rate, True
    return p, v, False


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, {_VEC}, {_VEC}, f8, b1, b1, {_VEC}, {_VEC}, {_VEC}, {_VEC}, {_VEC}, {_VEC}, "
            "f8, b1[::1]", cache=jit.CACHE)
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
    any_limited = False
    for j in range(position.shape[0]):
        p = position[j]
        v = velocity[j]
        if clamp:
            if bounded:
                p = _maximum(_minimum(p, hi[j]), lo[j])
            v = _within(v, velocity_limit[j])
            effort[j] = _within(effort[j], effort_limit[j])
        ref = _start_of_step(last[j], measured[j], p)
        last[j] = ref
        if dt <= 0.0:
            position[j] = ref if math.isfinite(p) else p
            velocity[j] = v
            continue
        if bounded:
            p, v = _approach(p, v, ref, lo[j], hi[j], acceleration[j], approach, dt)
        p, v, cut = _rate_limit(p, v, ref, rate_velocity[j], dt)
        if cut:
            if not any_limited:
                limited[:] = False
                any_limited = True
            limited[j] = True
        position[j] = p
        velocity[j] = v
        last[j] = p
    return any_limited


@jit.helper(cache=jit.CACHE)
def _first_outside(position, lo, hi, tolerance):
    for j in range(position.shape[0]):
        if position[j] < lo[j] - tolerance or position[j] > hi[j] + tolerance:
            return j
    return -1


@jit.helper(cache=jit.CACHE)
def _first_firmware_limit(state):
    for j in range(state.shape[0]):
        s = state[j]
        if s <= 1.0:
            return j, False
        if s == 3.0 or s == 4.0:
            return j, True
    return -1, False


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, f8", cache=jit.CACHE)
def first_outside(position, lo, hi, tolerance):
    """Index of the first joint below ``lo - tolerance`` or above ``hi + tolerance``, else -1 (NaN: inside)."""
    return _first_outside(position, lo, hi, tolerance)


@jit.kernel(_VEC, cache=jit.CACHE)
def first_firmware_limit(state):
    """``(joint, upper)`` of the first module whose own position limit acts: ``joint`` -1 if none,
    ``upper`` False for its lower limit, True for its upper one.

    ``state`` holds hebi's ``position_limit_state`` values: 0 Below, 1 AtLower, 2 Inside,
    3 AtUpper, 4 Above, 5 Uninitialized, NaN unknown.
    """
    return _first_firmware_limit(state)


@jit.kernel(f"{_VEC}, {_VEC}, {_VEC}, f8, b1, {_VEC}, {_VEC}", cache=jit.CACHE)
def feedback_faults(position, lo, hi, tolerance, bounded, mstop, limit_state):
    """What one feedback sample says, in one call: the tuple ``(mstop, limit_joint, limit_upper,
    outside)``:

    * ``mstop``: a module's M-stop is pressed;
    * ``limit_joint``, ``limit_upper``: :func:`first_firmware_limit` of ``limit_state``;
    * ``outside``: :func:`first_outside` of the position when ``bounded``, else -1.
    """
    pressed = False
    for j in range(mstop.shape[0]):
        if mstop[j] == 1.0:
            pressed = True
    outside = _first_outside(position, lo, hi, tolerance) if bounded else -1
    limit_joint, limit_upper = _first_firmware_limit(limit_state)
    return pressed, limit_joint, limit_upper, outside


def firmware_limit_side(joint: int, upper: bool) -> tuple[int, str] | None:
    """(joint, "lower" | "upper") of a firmware limit the kernels found, None when ``joint`` is -1."""
    return None if joint < 0 else (int(joint), "upper" if upper else "lower")


def load(model: object, dof: int) -> None:
    """Load every kernel of an arm's control cycle and the model's from numba's cache now (or, on a
    cold cache, start the background compile) while the arm is being built, not in its first
    control cycle, where loading them all takes about 0.4 s. That includes what a goal's admission
    calls (batched inverse dynamics, link poses, the end-effector Jacobian): the first set_goal must
    not wait for them to load either, or it outlasts the modules' command lifetime. ``model`` and
    ``dof`` are unused (the declared signatures say what to load); kept for the callers."""
    jit.preload(__name__, model_kernels.__name__)


#: the entry kernels, in declaration order (what hebictl.jit compiles and loads)
ENTRY_KERNELS = jit.entry_kernels(__name__)
