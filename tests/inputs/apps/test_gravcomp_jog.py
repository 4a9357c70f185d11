"""The gravity-compensation toggle and the joystick jog on the sim (a bundled config, scripted input)."""

from __future__ import annotations

import numpy as np

from hebictl.control.arm import Mode
from hebictl.inputs.apps.jog import LINEAR_SPEED
from hebictl.inputs.runner import make_app, run_app
from hebictl.inputs.sources import TimedSource
from hebictl.inputs.state import InputState
from tests.inputs.rig import home_arm, script


def test_b2_toggles_the_gravity_compensation_plugin_and_b1_quits():
    arm = home_arm("x-series-6dof")
    app = make_app("gravcomp", arm)
    plugin = arm.plugin("GravityCompensationEffort")
    assert app.state == "gravcomp_on" and plugin.enabled  # the bundled config has it on
    seen = []
    # B2 is a toggle on the phone: on from the start, off at 0.5 s, on again at 0.6 s; B1 quits at 1.5 s
    samples = [InputState(k / 60, (1 if 1.5 <= k / 60 < 1.6 else 0, 1 if (k / 60 < 0.5 or 0.6 <= k / 60 < 1.5) else 0,
                                   0, 0, 0, 0, 0, 0), (0.0,) * 8) for k in range(120)]
    run_app(arm, app, TimedSource(samples), duration=3.0,
            on_cycle=lambda a, f: seen.append((f.now, app.state, plugin.enabled, a.mode)))
    events = [(e, b) for _, e, _, b in app.history]
    print(events)
    assert events == [("off", "gravcomp_off"), ("on", "gravcomp_on"), ("quit", "exit")]
    assert any(not enabled for _, state, enabled, _ in seen if state == "gravcomp_off")
    # hand-guiding (no position command) from the start; with the plugin off the arm sags (the sim has no
    # brakes), and where it reaches a joint limit the arm's own limit check holds it (an event, not a fall)
    first_off = next(t for t, state, _, _ in seen if state == "gravcomp_off")
    assert all(mode is Mode.GRAVCOMP for t, _, _, mode in seen if t < first_off)
    print("arm events:", [(round(e.time, 3), e.kind.value) for e in arm.events.events])
    assert app.done and arm.mode in (Mode.BRAKE, Mode.HOLD)


def test_right_joystick_moves_the_end_effector_forward():
    arm = home_arm("x-series-6dof")
    app = make_app("jog", arm)
    # A8 full forward from 1.0 to 2.0 s: 0.25 m/s along x for one second (less what the admission refuses)
    samples = script(3.0, {2.8: 4}, None, axes=lambda t: (0.0,) * 7 + ((1.0,) if 1.0 <= t < 2.0 else (0.0,)))
    ee = []
    run_app(arm, app, TimedSource(samples), duration=3.5,
            on_cycle=lambda a, f: ee.append(a.model.end_effector(a.backend.true_state()[0])[:3, 3].copy()))
    moved = ee[-1] - ee[0]
    print(f"jog: end effector moved {np.round(moved * 1000, 1)} mm for 1 s at {LINEAR_SPEED} m/s along x; "
          f"targets admitted {app.gate.accepted}, refused {dict(app.gate.refused)}")
    assert app.done
    assert moved[0] > 0.1 and abs(moved[1]) < 0.02 and abs(moved[2]) < 0.02
