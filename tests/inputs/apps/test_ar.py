"""AR teleop against HEBI's formula: a figure eight at 60 Hz with scripted B1/B3/B6/B8 presses on the
sim gives the targets a direct evaluation of ex_AR_kit.py's formula gives (scipy rotations, computed
here from the samples the app took in), to 1e-9; and the state machine's path through it."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from hebictl.control.arm import Mode
from hebictl.inputs.runner import make_app, run_app
from hebictl.inputs.sources import TimedSource
from tests.inputs.rig import AR_KEYS, figure_eight, home_arm, script


def test_figure_eight_targets_match_hebis_formula():
    arm = home_arm("x-series-6dof", **AR_KEYS)
    app = make_app("ar", arm)
    presses = {0.5: 6, 1.0: 6, 1.5: 3, 5.5: 1, 6.5: 3, 9.0: 6, 9.5: 8}
    source = TimedSource(script(10.0, presses, figure_eight))
    seen = []  # (time, sample, state, arm mode) of each cycle with a fresh sample

    def on_cycle(a, frame):
        if frame.fresh:
            seen.append((frame.now, frame.state, app.state, a.mode))

    run_app(arm, app, source, on_cycle=on_cycle, duration=12.0)
    events = [(e, a, b) for _, e, a, b in app.history]
    assert events == [("at_home", "softstart", "waiting"), ("gravcomp", "waiting", "gravcomp"),
                      ("gravcomp", "gravcomp", "waiting"), ("ar", "waiting", "ar"), ("home", "ar", "waiting"),
                      ("ar", "waiting", "ar"), ("gravcomp", "ar", "gravcomp"), ("quit", "gravcomp", "exit")]
    assert any(mode is Mode.GRAVCOMP for _, _, state, mode in seen if state == "gravcomp")
    # the reference: HEBI's formula from this test's own rotations of the samples the app took in
    home = np.asarray(arm.user_data["home_position"], dtype=float)
    frame = arm.model.forward_kinematics(home, frame="end_effector")[-1]
    xyz_home, rot_home = frame[:3, 3], frame[:3, :3]
    scale = np.array(AR_KEYS["xyz_scale"])
    by_time = {t: s for t, s, _, _ in seen}
    baseline = None
    checked = worst_xyz = worst_rot = 0.0
    ar_starts = [t for t, e, _, b in app.history if e == "ar"]
    for t, xyz, rot, _ in app.targets:
        s = by_time[t]
        start = max(a for a in ar_starts if a <= t)
        b = by_time[start]
        baseline = (np.array(b.position), Rotation.from_quat([*b.orientation[1:], b.orientation[0]]).as_matrix())
        p, r_phone = np.array(s.position), Rotation.from_quat([*s.orientation[1:], s.orientation[0]]).as_matrix()
        ref_xyz = xyz_home + baseline[1].T @ (scale * (p - baseline[0]))
        ref_rot = baseline[1].T @ r_phone @ rot_home
        worst_xyz = max(worst_xyz, float(np.max(np.abs(xyz - ref_xyz))))
        worst_rot = max(worst_rot, float(np.max(np.abs(rot - ref_rot))))
        checked += 1
    print(f"{checked:.0f} AR targets; worst difference from HEBI's formula: xyz {worst_xyz:.2e} m, "
          f"rotation {worst_rot:.2e}; admitted {app.gate.accepted}, refused {dict(app.gate.refused)}")
    assert checked > 300
    assert worst_xyz <= 1e-9 and worst_rot <= 1e-9
    # B1 homed: the goal set at the home press ends at home_position
    assert app.gate.accepted > 0.9 * checked


def test_more_than_a_second_without_input_is_disconnected_and_b3_resumes():
    arm = home_arm("x-series-6dof", **AR_KEYS)
    app = make_app("ar", arm)
    samples = script(5.0, {0.3: 3, 3.0: 1, 3.5: 3}, figure_eight, gaps=[(1.0, 2.5)])
    source = TimedSource(samples)
    accepted_at = []
    fresh = []

    def on_cycle(a, f):
        accepted_at.append((f.now, app.gate.accepted, app.state))
        if f.fresh:
            fresh.append(f.now)

    run_app(arm, app, source, on_cycle=on_cycle, duration=5.0)
    events = [(round(t, 3), e, b) for t, e, _, b in app.history]
    print(events)
    kinds = [(e, b) for _, e, b in events]
    assert kinds[:6] == [("at_home", "waiting"), ("ar", "ar"), ("stale", "waiting"), ("timeout", "disconnected"),
                         ("reconnect", "waiting"), ("ar", "ar")]
    stale_t = next(t for t, e, _, _ in app.history if e == "stale")
    timeout_t = next(t for t, e, _, _ in app.history if e == "timeout")
    last = max(t for t in fresh if t < stale_t)  # the last sample the guard took in before the gap
    assert stale_t - last <= 0.25 + arm.nominal_period + 1e-9  # the lifetime plus one cycle
    assert 1.0 < timeout_t - last <= 1.0 + arm.nominal_period + 1e-9
    # B1 at 3.0 s came after the reconnect and before B3: not armed, nothing moved
    home_event = [e for _, e, _ in events if e == "home"]
    assert home_event == []
    n_before = [n for t, n, s in accepted_at if 2.5 <= t < 3.5]
    assert n_before and min(n_before) == max(n_before)
