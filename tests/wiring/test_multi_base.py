"""hebictl.wiring.multi.open_base: a multi-arm config's mobile base on each backend (mock, hebi-py's
imitation group, sim), its gains sent, the modules' own command lifetime its ttl; on hebi's
imitation group (whose feedback echoes the command) it ramps at max_acceleration and stops to zero."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.base import BaseState
from hebictl.hardware import SimClock
from hebictl.multi_config import load_multi_arm_config
from hebictl.wiring.multi import open_base
from tests._support.paths import CONFIGS_DIR

CONFIG = CONFIGS_DIR / "x-series-6dof-omni-base.multi.yaml"
PERIOD = 1.0 / 200.0


def entry():
    base = load_multi_arm_config(CONFIG).base
    assert base is not None
    return base


@pytest.mark.parametrize("backend", ["mock", "hebi-imitation", "sim"])
def test_the_base_opens_on_every_backend_with_its_modules_and_ttl(backend):
    if backend == "sim":
        pytest.importorskip("mujoco")
    if backend == "hebi-imitation":
        pytest.importorskip("hebi")
    base = open_base(entry(), backend, SimClock(), 200.0)
    try:
        assert base.name == "base" and base.size == 3 and base.period == pytest.approx(PERIOD)
        assert base.backend.names == ("W1", "W2", "W3") and base.backend.families == ("Rosie",) * 3
        assert base.backend.command_lifetime == pytest.approx(0.25)
    finally:
        base.close()


def test_gains_are_sent_to_the_mock_wheels(tmp_path):
    from dataclasses import replace

    from hebictl.gains import load_gains

    (tmp_path / "g.xml").write_text("<group_gains><control_strategy>4</control_strategy></group_gains>")
    base = open_base(replace(entry(), gains=load_gains(tmp_path / "g.xml")), "mock", SimClock(), 200.0)
    try:
        assert base.backend.gains.control_strategy == (4, 4, 4)   # type: ignore[attr-defined]
    finally:
        base.close()


def test_on_hebis_imitation_group_it_ramps_and_stops_at_max_acceleration():
    pytest.importorskip("hebi")
    clock = SimClock()
    base = open_base(entry(), "hebi-imitation", clock, 200.0)
    try:
        vmax, amax = base.limits.max_velocity, base.limits.max_acceleration
        n = 0
        while not np.allclose(base.velocity_command, vmax):
            clock.advance(PERIOD)
            base.update()
            base.command(vmax)
            base.send()
            n += 1
        clock.advance(PERIOD)
        base.update()
        base.stop("stop", "test")
        base.send()
        m = 1
        while base.state is not BaseState.STOPPED:
            clock.advance(PERIOD)
            base.update()
            base.send()
            m += 1
        print(f"\n[hebi-imitation] 0 -> {vmax[0]:g} rad/s in {n} cycles, back to zero in {m} cycles "
              f"(v/a = {vmax[0] / amax[0] / PERIOD:.0f} cycles)")
        assert n == m == round(vmax[0] / amax[0] / PERIOD)
        assert not base.velocity_command.any()
    finally:
        base.close()
