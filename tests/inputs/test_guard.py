"""The input guard's link rules (stale, reconnect baseline, enable edge) on exact simulated times,
and the pose gate's Cartesian limits."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.errors import CommandRejected
from hebictl.inputs.guard import CartesianLimits, InputGuard, Link
from hebictl.inputs.state import InputState


def _s(t, pressed=()):
    return InputState(t, tuple(1 if i + 1 in pressed else 0 for i in range(8)), (0.0,) * 8)


def test_start_up_compares_with_every_button_up_and_is_armed():
    g = InputGuard(0.25, enable=3, quit=8)
    f = g.step(0.0, _s(0.0, pressed=(2,)))
    assert f.fresh and f.armed and f.came_back and f.edge(2) == 1  # hebi-py: a held toggle counts at start
    f = g.step(0.01, _s(0.01, pressed=(2,)))
    assert f.edge(2) == 0 and not f.came_back


def test_stale_exactly_after_the_lifetime_then_baseline_and_enable_edge():
    g = InputGuard(0.25, enable=3, quit=8)
    g.step(0.0, _s(0.0))
    assert g.step(0.25, None).link is Link.LIVE  # not more than the lifetime yet
    f = g.step(0.255, None)
    assert f.went_stale and f.link is Link.STALE and not f.armed
    assert not g.step(0.3, None).went_stale  # once per episode
    # reconnect with B1 held and B8 up: a baseline, no edges, not armed
    f = g.step(0.5, _s(0.5, pressed=(1,)))
    assert f.came_back and not f.armed and f.edges == (0,) * 8 and g.reconnects == 1
    # B1 released and pressed again: dropped while not armed; quit passes; enable arms
    g.step(0.51, _s(0.51))
    f = g.step(0.52, _s(0.52, pressed=(1, 8)))
    assert f.edge(1) == 0 and f.edge(8) == 1 and not f.armed
    f = g.step(0.53, _s(0.53, pressed=(1, 3, 8)))
    assert f.armed and f.edge(3) == 1
    f = g.step(0.54, _s(0.54))
    assert f.edge(1) == -1  # armed: every edge passes again


def test_lifetime_must_be_positive():
    with pytest.raises(ValueError):
        InputGuard(0.0, enable=3)


def test_cartesian_limits_name_the_bound():
    lim = CartesianLimits((-1.0, -1.0, 0.0), (1.0, 1.0, 1.0), reach=0.8)
    lim.check(np.array([0.3, 0.2, 0.1]))
    with pytest.raises(CommandRejected, match=r"target z = -0\.0100 m is outside") as info:
        lim.check(np.array([0.3, 0.2, -0.01]))
    assert info.value.reason == "outside_workspace"
    with pytest.raises(CommandRejected, match="beyond the arm's reach"):
        lim.check(np.array([0.7, 0.7, 0.1]))
    with pytest.raises(CommandRejected) as info:
        lim.check(np.array([np.nan, 0.0, 0.0]))
    assert info.value.reason == "not_finite"
