"""The joystick jog app (hebictl/inputs/apps/jog.py) when its input starts late, in simulated time.

The panel's Mobile IO emulator starts streaming only once the page sees the arm in mode ``app``, so on
a loaded machine the app may run for more than HEBI's 1 s without a single sample. That is what the
browser test (tests/panel/test_panel_mobile_io_e2e.py) once saw as a "homing stall": the app goes
DISCONNECTED and holds, mid-way home, and stays there whatever samples follow until B1 (home) re-arms
it, as in HEBI's ``joystick_control_sm``. Exact here, on the SimClock: the timeout comes in the first
cycle after DISCONNECT_AFTER, the arm holds short of home, samples without B1 change nothing, B1 homes
and the app reaches teleop.
"""

from __future__ import annotations

import numpy as np

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.hardware import SimClock
from hebictl.inputs.apps.base import DISCONNECT_AFTER
from hebictl.inputs.runner import make_app, run_app
from hebictl.inputs.sources import TimedSource
from hebictl.inputs.state import InputState
from tests._support.paths import REPO_ROOT

LATE = 1.5      # [s] the first sample, after the app started
PRESS = 2.5     # [s] B1 (home) pressed, for 0.1 s
RATE = 20.0     # [Hz] the panel emulator's sample rate (panel.js MIO_PERIOD 50 ms)


def _away_from_home() -> Arm:
    """The 6-DoF kit on the sim, its base joint 1.5 rad from home: the homing goal takes longer than 1 s."""
    cfg = load_config(REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml")
    home = np.array(cfg.user_data["home_position"], dtype=float)
    start = home.copy()
    start[0] += 1.5
    arm = Arm.from_config(cfg, backend="sim", clock=SimClock(), initial_position=start)
    for p in arm.plugins:
        p.enabled_ratio = 1.0 if p.enabled else 0.0
    return arm


def test_no_input_for_a_second_at_start_holds_mid_homing_until_b1_homes_again() -> None:
    arm = _away_from_home()
    app = make_app("jog", arm)
    home = np.asarray(arm.user_data["home_position"], dtype=float)
    samples = [InputState(k / RATE, tuple(1 if i == 0 and PRESS <= k / RATE < PRESS + 0.1 else 0 for i in range(8)),
                          (0.0,) * 8, seq=k) for k in range(int(LATE * RATE), int(5.0 * RATE))]
    seen: list[tuple[float, str, float]] = []
    run_app(arm, app, TimedSource(samples), duration=8.0,
            on_cycle=lambda a, f: seen.append((f.now, app.state, float(np.abs(a.last_feedback.position - home).max()))))
    start = app.start_time
    events = [(round(t - start, 6), e, a, b) for t, e, a, b in app.history]
    print(f"\njog app, first sample {LATE} s after start, B1 at {PRESS} s: {events}")
    kinds = [(e, b) for _, e, _, b in events]
    assert kinds[:3] == [("timeout", "disconnected"), ("home", "homing"), ("at_home", "teleop")], kinds
    t_timeout, t_home = events[0][0], events[1][0]
    # the first cycle after DISCONNECT_AFTER without a sample (the loop runs at the config's feedback rate)
    assert DISCONNECT_AFTER < t_timeout <= DISCONNECT_AFTER + arm.nominal_period + 1e-9
    # held short of home from the timeout until B1: the samples from LATE on (no B1) changed nothing
    held = [(t - start, d) for t, state, d in seen if state == "disconnected" and t - start < t_home]
    assert held and all(d > 0.3 for _, d in held), held[-1]
    assert PRESS <= t_home <= PRESS + 0.1
    away = [d for t, d in held if t >= LATE]
    print(f"held {np.degrees(min(away)):.0f}-{np.degrees(max(away)):.0f} deg from home while disconnected; "
          f"teleop at {events[2][0]:.3f} s")
    assert np.ptp(away) < 0.01   # holding, not homing
    at_teleop = next(d for t, state, d in seen if state == "teleop")
    assert at_teleop < 0.01   # home reached (the script's samples end at 5 s: the app then holds again)
