"""The input state as its own MCAP channel, and replay: a session recorded on the mock, replayed twice
on the mock, gives bit-identical command streams (and the input the replay delivers is the recorded one)."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.inputs.runner import make_app, run_app
from hebictl.inputs.sources import INPUT_TOPIC, TimedSource, recorded_samples
from tests._support.extras import extra_missing
from tests.inputs.rig import AR_KEYS, figure_eight, home_arm, script

pytest.importorskip("mcap", reason=extra_missing("mcap"))


def _commands(source):
    arm = home_arm("x-series-6dof", backend="mock", **AR_KEYS)
    app = make_app("ar", arm)
    stream = []
    run_app(arm, app, source, on_cycle=lambda a, f: stream.append(a.pending_command.position.tobytes()
                                                                  + a.pending_command.velocity.tobytes()),
            duration=6.0)
    return stream, app


def test_recorded_session_replays_bit_identically_twice(tmp_path):
    from hebictl.inputs.recording import INPUT
    from hebictl.recording.reader import read_run
    from hebictl.recording.writer import McapRecorder

    samples = script(5.0, {0.5: 3, 3.0: 6, 3.5: 3, 4.5: 8}, figure_eight)
    arm = home_arm("x-series-6dof", backend="mock", **AR_KEYS)
    app = make_app("ar", arm)
    out = tmp_path / "session.mcap"
    taken: list = []
    with McapRecorder(out, arm, extra_topics=(INPUT,)) as rec:
        run_app(arm, app, TimedSource(samples), recorder=rec, duration=6.0,
                on_cycle=lambda a, f: taken.append(f.state) if f.fresh else None)
    run = read_run(out)
    assert run.counts[INPUT_TOPIC] == len(taken) > 250  # every sample the app took in, until it quit
    replayed = recorded_samples(out)
    assert [s.buttons for s in replayed] == [s.buttons for s in taken]
    assert [s.position for s in replayed] == [s.position for s in taken]
    first, app1 = _commands(TimedSource(replayed))
    second, app2 = _commands(TimedSource(recorded_samples(out)))
    print(f"{len(first)} cycles, {app1.gate.accepted} AR targets; replays identical: {first == second}")
    assert len(first) == len(second) > 500 and first == second
    assert [h[1:] for h in app1.history] == [h[1:] for h in app2.history] == [h[1:] for h in app.history]
    assert app1.gate.accepted > 100
    assert len({c for c in first}) > 100  # the arm moved: not a stream of one repeated command
    positions = np.frombuffer(first[-1][:48])
    assert np.all(np.isfinite(positions))
