"""Issue 11's safety matrix as tests: every stop and fault scenario on the physics sim (and the mock)
meets its target: no joint faster than 1.05x rated, every |v| < 0.05 rad/s within 0.5 s of the
stop, the end effector within 5 mm between 0.5 s and 2 s after it.

The scenarios and their measurements live in ``benchmarks/safety.py`` (which prints the same rows
as a table); they measure the simulated joints themselves, not the feedback the controller sees.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

pytest.importorskip("mujoco")

from benchmarks import safety
from benchmarks.safety_rig import REPO, sc_faults
from hebictl.config import load_config
from tests._support.broker import requires_mosquitto

BACKENDS = ["sim", "mock"]
IN_PROCESS = [f for f in safety.IN_PROCESS if f is not safety.sc_faults]
FAULTS = ["feedback dropped mid-move", "feedback frozen mid-move", "feedback NaN (elbow) mid-move",
          "module J1_base disappears mid-move", "module J3_elbow disappears mid-move"]
KITS = sorted((REPO / "configs").glob("*.cfg.yaml"))


def _check(row: safety.Row) -> None:
    out = f"{row.scenario} [{row.backend}]: peak {row.peak:.3f}x rated, still after {row.still:.3f} s, " \
          f"EE {row.ee_mm:.2f} mm, state {row.state}, event {row.event}, {row.note}; target {row.target}"
    assert row.ok, out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", IN_PROCESS, ids=lambda f: f.__name__[3:])
def test_in_process_scenario(scenario, backend):
    _check(scenario(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_faults_mid_move(backend):
    rows = safety.sc_faults(backend)
    assert [r.scenario for r in rows] == FAULTS
    for r in rows:  # the measured figures, in the test output
        print(f"{r.scenario} [{backend}]: peak {r.peak:.3f}x rated, still after {r.still:.3f} s, EE {r.ee_mm:.2f} mm")
    failed = [r for r in rows if not r.ok]
    assert not failed, "; ".join(f"{r.scenario}: peak {r.peak:.2f}, still {r.still:.2f} s, EE {r.ee_mm:.1f} mm"
                                 for r in failed)


@pytest.mark.parametrize("config", KITS, ids=lambda p: p.name.removesuffix(".cfg.yaml"))
def test_faults_mid_move_on_every_bundled_kit(config):
    """Issue 18: the five fault rows on the sim for each bundled config, from its own home. r6 (heavier,
    its base trails its command by 40 mrad near rated speed) stepped 1.21x rated on the first stop cycle
    and rang 1.5 s after a blind brake before the brake started from the measured state. x7 with its
    feedback frozen was still only after 0.52 s (a known-late row until 2026-12-02): its double
    shoulder's mirror module kept the last command before the freeze through the blind brake (see
    ``Arm._mirror_command``); 0.200 s since."""
    home = np.array(load_config(config).user_data["home_position"], dtype=float)
    rows = sc_faults("sim", config=config, home=home)
    assert [r.scenario for r in rows] == FAULTS
    for r in rows:  # the measured figures, in the test output
        print(f"{r.scenario} [{config.name}]: peak {r.peak:.3f}x rated, still after {r.still:.3f} s, "
              f"EE {r.ee_mm:.2f} mm, event {r.event}")
    failed = [r for r in rows if not r.ok]
    assert not failed, "; ".join(f"{r.scenario}: peak {r.peak:.3f}, still {r.still:.3f} s, EE {r.ee_mm:.2f} mm, "
                                 f"{r.note}" for r in failed)


@requires_mosquitto
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("action", ["estop", "deadman", "broker"])
def test_teleop_through_a_broker(action, backend):
    name = {"estop": "teleop e-stop while jogging", "deadman": "dead-man release while jogging",
            "broker": "broker loss during a jog"}[action]
    _check(safety.teleop_row(backend, name, action))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_hebictl_run_holds_the_arm(sig):
    _check(safety.run_signal_row("sim", sig))


@requires_mosquitto
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_hebictl_teleop_holds_the_arm(sig):
    _check(safety.teleop_signal_row("sim", sig))


def test_metrics_measure_what_they_claim():
    """The measurement itself, on a made-up trace: a joint at 2 rad/s (rated 4) braking to rest
    within 0.3 s of the stop, then its end effector creeping 2 mm/s from 0.5 s after the stop."""
    import numpy as np

    class Model:
        def forward_kinematics(self, q, frame):  # EE x = joint 0 (1 m per rad)
            T = np.eye(4)
            T[0, 3] = q[0]
            return T

    tr = safety.Trace()
    t_stop = 1.0
    for k in range(301):
        t = k * 0.01
        v = 2.0 if t < t_stop else (max(2.0 - (t - t_stop) / 0.3 * 2.0, 0.0) if t < 1.5 else 0.0)
        q = 2.0 * min(t, t_stop) + (0.002 * (t - 1.5) if t >= 1.5 else 0.0)
        tr.sample(t, np.array([q]), np.array([v]))
        tr.command(t, np.array([q]), np.array([v]))
    tr.t_stop = t_stop
    peak, still, ee = safety.metrics(tr, Model(), np.array([4.0]))
    assert peak == pytest.approx(0.5, abs=1e-9)
    assert still == pytest.approx(0.29, abs=0.011)
    assert ee == pytest.approx(3.0, abs=0.05)  # 2 mm/s over the 1.5 s window [mm]
