"""The compiled per-cycle checks (hebictl.control.cycle_kernels) against the numpy they replaced.

The references are the numpy implementations the arm ran before the kernels: the clamp is still
:meth:`Limits.clamp_command` (numpy); the limit approach, rate limit, position-limit and
firmware-limit checks are kept below verbatim as the independent side of the comparison. Inputs
are random and hostile: NaN (not commanded) entries, infinite limits, commands far outside the
limits, zero and negative ``dt``, a missing previous command, recovery bounds. Results must agree
bit for bit, compiled and interpreted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl import jit
from hebictl.control import cycle_kernels
from hebictl.control.braking import firmware_limit_acting
from hebictl.control.motion import APPROACH_FRACTION, RateLimiter
from hebictl.control.safety import Limits

_FMAX = np.fmax.reduce


def _reference_apply(state: dict, lim: Limits | None, position, velocity, dt, measured, bounds=None) -> bool:
    """The numpy RateLimiter.apply (with its limit approach) the kernel replaced."""
    last, vmax = state["last"], state["vmax"]
    if math.isnan(last.sum()):
        fresh = np.isnan(last)
        last[fresh] = measured[fresh]
        still = np.isnan(last)
        last[still] = position[still]
    if dt <= 0.0:
        np.copyto(position, last, where=np.isfinite(position))
        return False
    if lim is not None and lim.bounded:
        lo, hi = bounds or (lim.position_min, lim.position_max)
        a = np.where(np.isfinite(lim.acceleration_max), lim.acceleration_max, 1e9)
        two_a = 2.0 * APPROACH_FRACTION * a
        up = np.sqrt(np.maximum(hi - last, 0.0) * two_a)
        down = np.sqrt(np.maximum(last - lo, 0.0) * two_a)
        up[np.isnan(up)] = np.inf
        down[np.isnan(down)] = np.inf
        np.minimum(position, up * dt + last, out=position)
        np.maximum(position, last - down * dt, out=position)
        np.minimum(velocity, up, out=velocity)
        np.maximum(velocity, -down, out=velocity)
    step = vmax * max(dt, 0.0)
    delta = position - last
    mag = np.abs(delta) - step
    if not _FMAX(mag) > 0.0:
        np.copyto(last, position)
        return False
    limited = mag > 0.0
    state["limited"] = limited
    sign = np.sign(delta[limited])
    position[limited] = last[limited] + sign * step[limited]
    velocity[limited] = sign * vmax[limited]
    np.copyto(last, position)
    return True


def _reference_outside(lim: Limits, position, bounds=None) -> int:
    lo, hi = bounds if bounds is not None else (lim.position_min, lim.position_max)
    if bounds is None and not lim.bounded:
        return -1
    tol = lim.position_tolerance
    bad = (position < lo - tol) | (position > hi + tol)
    return int(np.argmax(bad)) if bad.any() else -1


def _reference_firmware(state) -> tuple[int, str] | None:
    acting = (state <= 1.0) | (state == 3.0) | (state == 4.0)
    if not acting.any():
        return None
    j = int(np.argmax(acting))
    return j, ("lower" if state[j] <= 1.0 else "upper")


def _sprinkle(rng: np.random.Generator, x: np.ndarray, p_nan: float = 0.15, p_inf: float = 0.0) -> np.ndarray:
    x = x.copy()
    x[rng.random(x.shape) < p_nan] = np.nan
    if p_inf:
        x[rng.random(x.shape) < p_inf] = np.inf
    return x


def _random_limits(rng: np.random.Generator, n: int) -> Limits:
    lo = rng.uniform(-3.0, 0.0, n)
    hi = lo + rng.uniform(0.1, 4.0, n)
    unbounded = rng.random(n) < 0.2
    lo[unbounded], hi[unbounded] = -np.inf, np.inf
    if rng.random() < 0.15:  # a fully unlimited arm
        lo[:], hi[:] = -np.inf, np.inf
    vmax = _sprinkle(rng, rng.uniform(0.5, 5.0, n), p_nan=0.0, p_inf=0.15)
    emax = _sprinkle(rng, rng.uniform(1.0, 40.0, n), p_nan=0.0, p_inf=0.15)
    amax = _sprinkle(rng, rng.uniform(1.0, 50.0, n), p_nan=0.0, p_inf=0.2)
    return Limits(lo, hi, vmax, emax, position_tolerance=float(rng.uniform(0.0, 0.05)), acceleration_max=amax)


def _assert_same(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a, b)  # NaN == NaN here; values bit for bit


@pytest.fixture(params=["compiled", "interpreted"])
def kernels(request, monkeypatch):
    """The kernels as numba compiles them, and their own Python source (the cold-cache path)."""
    if request.param == "interpreted":
        namespace = jit.interpreted_namespace(cycle_kernels.__name__)
        for name in cycle_kernels.ENTRY_KERNELS:
            monkeypatch.setattr(cycle_kernels, name, namespace[name])
    else:
        for name in cycle_kernels.ENTRY_KERNELS:
            monkeypatch.setattr(cycle_kernels, name, jit.dispatcher_of(cycle_kernels.__name__, name))
    return request.param


@pytest.mark.parametrize("seed", range(40))
def test_clamp_and_rate_limit_agree_with_numpy_over_a_run(kernels, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    lim = _random_limits(rng, n)
    ours = RateLimiter(lim.velocity_max, lim)
    ref = {"last": np.full(n, np.nan), "vmax": ours.velocity_max.copy(), "limited": None}
    recovery = None
    if lim.bounded and rng.random() < 0.3:  # joints switched on outside their limits
        recovery = (lim.position_min - rng.uniform(0, 0.5, n), lim.position_max + rng.uniform(0, 0.5, n))
    q = rng.uniform(-2.0, 2.0, n)
    for cycle in range(60):
        dt = float(rng.choice([0.001, 0.004, 0.02, 0.0, -0.001])) if cycle % 7 else 0.001
        target = q + rng.normal(0.0, 0.5 if cycle % 11 else 20.0, n)  # now and then far outside
        p0 = _sprinkle(rng, target, p_nan=0.1 if cycle % 5 else 0.6)
        v0 = _sprinkle(rng, rng.normal(0.0, 4.0, n), p_nan=0.1)
        e0 = _sprinkle(rng, rng.normal(0.0, 30.0, n), p_nan=0.1)
        measured = _sprinkle(rng, q + rng.normal(0.0, 0.01, n), p_nan=0.05)
        if rng.random() < 0.1:
            ours.reset()
            ref["last"].fill(np.nan)
        p1, v1, e1 = p0.copy(), v0.copy(), e0.copy()
        got = ours.clamp_and_apply(p1, v1, e1, dt, measured, recovery)
        p2, v2, e2 = p0.copy(), v0.copy(), e0.copy()
        lim.clamp_command(p2, v2, e2, recovery)  # numpy, as the arm clamped before the kernel
        want = _reference_apply(ref, lim, p2, v2, dt, measured, recovery)
        assert got == want, (cycle, dt)
        for a, b in ((p1, p2), (v1, v2), (e1, e2), (ours.last, ref["last"])):
            _assert_same(a, b)
        if want:
            _assert_same(ours.limited, ref["limited"])
        q = np.where(np.isfinite(ref["last"]), ref["last"], q)


@pytest.mark.parametrize("seed", range(10))
def test_rate_limit_without_limits_agrees_with_numpy(kernels, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 7))
    vmax = _sprinkle(rng, rng.uniform(0.5, 3.0, n), p_nan=0.1, p_inf=0.1)
    ours = RateLimiter(vmax)
    ref = {"last": np.full(n, np.nan), "vmax": ours.velocity_max.copy(), "limited": None}
    for _ in range(40):
        dt = float(rng.choice([0.001, 0.01, 0.0]))
        p0 = _sprinkle(rng, rng.normal(0.0, 1.0, n))
        v0 = _sprinkle(rng, rng.normal(0.0, 1.0, n))
        measured = _sprinkle(rng, rng.normal(0.0, 0.1, n))
        p1, v1 = p0.copy(), v0.copy()
        got = ours.apply(p1, v1, dt, measured)
        p2, v2 = p0.copy(), v0.copy()
        want = _reference_apply(ref, None, p2, v2, dt, measured)
        assert got == want
        _assert_same(p1, p2)
        _assert_same(v1, v2)
        _assert_same(ours.last, ref["last"])


@pytest.mark.parametrize("seed", range(20))
def test_limit_and_firmware_checks_agree_with_numpy(kernels, seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(1, 9))
    lim = _random_limits(rng, n)
    for _ in range(30):
        q = _sprinkle(rng, rng.uniform(-4.0, 4.0, n), p_nan=0.1, p_inf=0.05)
        assert lim.position_violation(q) == _reference_outside(lim, q)
        bounds = (lim.position_min - 0.3, lim.position_max + 0.3)
        assert lim.position_violation(q, bounds) == _reference_outside(lim, q, bounds)
        state = _sprinkle(rng, rng.choice([0.0, 1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0], n).astype(float), p_nan=0.1)
        assert firmware_limit_acting(state, n) == _reference_firmware(state)
        mstop = _sprinkle(rng, (rng.random(n) < 0.1).astype(float), p_nan=0.1)
        pressed, limit_joint, limit_upper, outside = cycle_kernels.feedback_faults(
            q, lim.position_min, lim.position_max, lim.position_tolerance, lim.bounded, mstop, state)
        assert pressed == bool(np.any(mstop == 1.0))
        assert cycle_kernels.firmware_limit_side(limit_joint, limit_upper) == _reference_firmware(state)
        assert outside == _reference_outside(lim, q)

